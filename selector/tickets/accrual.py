"""Points accrual for tickets: what every game costs on the floor's ingest path.

Bins whose earning intervals share a start (every "until the draw" bin of one period,
e.g. all car draws from 27 Sep, or one month's Queen Thursdays) form a group that keeps
one running total per card, so a point costs the same however many draws it counts for.
The timeline is cut at every interval bound once; within one segment the set of
intervals an event counts for is fixed.

A call per game would cost a fifth of the floor's event budget, so `feed` sets the
card's cell (selector.floor.PointsCell, which the floor's player is): the segment
[lo, hi) and the room left before the card's next possible ticket boundary in any
group.  The floor subtracts points from the room inline and calls again only past the
boundary or the segment; `feed` first takes in what the floor kept back.  An event
outside every interval gets (almost) unbounded room.  The tier is asked for only at
boundaries, where the bins are settled: boundaries are multiples of the gcd of the
group's divisors, so no tier's ticket is ever skipped.

Totals are never copied when time passes the end of an interval: the group appends a
layer, and a card missing from the newest layer has the total of its newest earlier
one.  Events that arrive after their interval ended (a late table rating) still count.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping
from itertools import pairwise
from math import gcd, inf
from typing import Any, cast

from selector.events import Tier
from selector.floor import PointsCell
from selector.tickets.program import TicketBin

# (bin_id, card, tickets due from points in total, event id, epoch)
SettleFn = Callable[[str, str, int, str, float], None]
TierOf = Callable[[str], Tier | None]
# room where no interval counts; below 2**30 so it stays a one-digit int, which
# CPython's specialized int compare and subtract need (a 1 << 62 here costs 20% of ingest)
_BIG = (1 << 30) - 1


class _Rate:
    """A bin as accrual sees it: its id and milli-points per ticket by tier."""

    __slots__ = ("bin_id", "divisors")

    def __init__(self, bin_id: str, divisors: Mapping[Tier, int]) -> None:
        self.bin_id = bin_id
        self.divisors = divisors


class _Group:
    """Intervals [start, ends[i]) sharing a start, with layered per-card totals.

    Layer i holds the totals of the cards that earned while interval i was the newest
    (`lo`); for i < lo it is frozen but for late events.
    """

    __slots__ = ("bins", "ends", "layers", "lo", "open_bins", "start", "step")

    def __init__(self, start: float, ends: tuple[float, ...], bins: tuple[tuple[_Rate, ...], ...]):
        self.start = start
        self.ends = ends
        self.bins = bins  # per interval: the bins whose interval it is
        self.open_bins = tuple(tuple(r for rs in bins[i:] for r in rs) for i in range(len(ends)))
        self.step = gcd(*(d for rs in bins for r in rs for d in r.divisors.values()))
        self.lo = 0
        self.layers: list[dict[str, int]] = [{}]

    def total(self, card: str, i: int) -> int:
        """The card's milli-points in interval i (0 before any)."""
        j = min(i, self.lo)
        while j >= 0:
            v = self.layers[j].get(card)
            if v is not None:
                return v
            j -= 1
        return 0

    def advance(self, i: int) -> None:
        while len(self.layers) <= i:
            self.layers.append({})
        self.lo = i


Entries = tuple[tuple[_Group, int], ...]  # a segment's groups, each with its first interval


class PointsAccrual:
    """Per-card points in every bin's earning interval; calls `settle` at boundaries."""

    __slots__ = (
        "_bounds", "_entries", "_first", "_hi", "_lo", "_segments", "_settle", "cells",
        "groups", "tier_of", "where",
    )  # fmt: skip

    def __init__(self, bins: Iterable[TicketBin], settle: SettleFn, tier_of: TierOf | None) -> None:
        self._settle = settle
        self.tier_of = tier_of
        by_start: dict[float, dict[float, list[_Rate]]] = {}
        for b in sorted(bins, key=lambda b: b.bin_id):
            if b.divisors:  # bins of programs without rates earn nothing from points
                rate = _Rate(b.bin_id, b.divisors)
                by_start.setdefault(b.start, {}).setdefault(b.end, []).append(rate)
        self.groups: list[_Group] = []
        self.where: dict[str, tuple[_Group, int]] = {}
        for start, per_end in sorted(by_start.items()):
            ends = tuple(sorted(per_end))
            g = _Group(start, ends, tuple(tuple(per_end[e]) for e in ends))
            self.groups.append(g)
            for i, rates in enumerate(g.bins):
                for r in rates:
                    self.where[r.bin_id] = (g, i)
        bounds = sorted({g.start for g in self.groups} | {e for g in self.groups for e in g.ends})
        self._bounds = bounds
        # per segment [bounds[k], bounds[k+1]): (group, first interval ending after it)
        self._segments = [
            tuple(
                (g, bisect_right(g.ends, lo))
                for g in self.groups
                if g.start <= lo and g.ends[-1] >= hi
            )
            for lo, hi in pairwise(bounds)
        ]
        self._lo, self._hi = 0.0, -1.0  # nothing cached: the first event loads its segment
        self._entries: Entries = ()
        self._first = _BIG  # room of a card new to every group: the segment's least step
        self.cells: dict[str, PointsCell] = {}  # the cell each card was last fed through

    def feed(
        self, cell: PointsCell, epoch: float, milli: int, event_id: str, tier: Tier | None = None
    ) -> None:
        """Credit milli-points the cell's card earned at epoch; tier None: ask `tier_of`
        when it matters.  Sets the cell's segment and room to its next possible boundary."""
        card = cell.card
        known = self.cells.get(card)
        if known is None:  # a card never fed has no totals: its first points stay in its cell
            self.cells[card] = cell
            if not (self._lo <= epoch < self._hi):
                self._load(epoch)
            if milli < self._first:
                cell.lo, cell.hi, cell.scope = self._lo, self._hi, self._entries
                cell.granted = self._first
                cell.room = self._first - milli
                return
        elif known is not cell:  # another cell for the card (a new floor): take both in
            self._take_kept(known, epoch, event_id, tier)
            known.hi = -inf  # retired: whoever holds it calls at its next point
            if cell.granted != cell.room:
                self._take_kept(cell, epoch, event_id, tier)
            self.cells[card] = cell
        elif cell.granted != cell.room:
            if cell.scope is self._entries and self._lo <= epoch < self._hi:
                milli += cell.granted - cell.room  # the same segment: one addition for both
                cell.granted = cell.room
            else:
                self._take_kept(cell, epoch, event_id, tier)
        if not (self._lo <= epoch < self._hi):
            self._load(epoch)
        room = _BIG
        for g, i0 in self._entries:
            left = self._add(g, i0, card, milli, epoch, event_id, tier)
            if left < room:
                room = left
        cell.lo, cell.hi, cell.scope = self._lo, self._hi, self._entries
        cell.room = cell.granted = room

    def _take_kept(self, cell: PointsCell, epoch: float, event_id: str, tier: Tier | None) -> None:
        """Add what the floor kept back in the cell (below every boundary by construction)."""
        kept = cell.granted - cell.room
        cell.granted = cell.room
        for g, i0 in cast(Entries, cell.scope or ()):
            self._add(g, i0, cell.card, kept, epoch, event_id, tier)

    def _load(self, epoch: float) -> None:
        bounds = self._bounds
        k = bisect_right(bounds, epoch) - 1
        entries: Entries = ()
        if 0 <= k < len(bounds) - 1:
            self._lo, self._hi = bounds[k], bounds[k + 1]
            entries = self._segments[k]
        elif k >= 0:
            self._lo, self._hi = bounds[-1], inf
        else:
            self._lo, self._hi = -inf, bounds[0] if bounds else inf
        for g, i0 in entries:
            if i0 > g.lo:
                g.advance(i0)  # time passed an interval's end: a new layer
        self._entries = entries
        # a new card has zero in every layer, late ones included: below every step it
        # reaches no boundary anywhere
        self._first = min((g.step for g, _ in entries), default=_BIG)

    def _add(
        self, g: _Group, i0: int, card: str, milli: int, epoch: float, event_id: str,
        tier: Tier | None,
    ) -> int:  # fmt: skip
        """Add points of segment (g, i0) to the running total and, for a late event, to
        the intervals that ended already; returns the room to the next boundary."""
        lo = g.lo
        late = [(j, g.total(card, j)) for j in range(i0, lo)] if i0 < lo else ()
        current = g.layers[lo]
        before = current.get(card)
        if before is None:
            before = g.total(card, lo - 1) if lo else 0
        total = current[card] = before + milli
        step = g.step
        for j, prior in late:  # read before any write: layer j+1 falls back to layer j
            g.layers[j][card] = prior + milli
            if (prior + milli) // step > prior // step:  # bins settle in interval order
                self._settle_all(g.bins[j], card, prior + milli, epoch, event_id, tier)
        if total // step > before // step:  # a multiple of step: maybe a ticket boundary
            self._settle_all(g.open_bins[lo], card, total, epoch, event_id, tier)
        return step - total % step if i0 == lo else 0  # late points are taken one by one

    def _settle_all(
        self, rates: tuple[_Rate, ...], card: str, total: int, epoch: float, event_id: str,
        tier: Tier | None,
    ) -> None:  # fmt: skip
        if tier is None:
            tier = self.tier_of(card) if self.tier_of is not None else None
            if tier is None:
                return  # unknown card: its points stay, tickets come at its next boundary
        for r in rates:
            d = r.divisors.get(tier)
            if d is not None and total >= d:
                self._settle(r.bin_id, card, total // d, event_id, epoch)

    def _kept(self, card: str, g: _Group, i: int) -> int:
        """Milli-points the floor holds in the card's cell that count in interval i of g."""
        cell = self.cells.get(card)
        if cell is None or cell.granted == cell.room:
            return 0
        hit = any(e is g and i0 <= i for e, i0 in cast(Entries, cell.scope))
        return cell.granted - cell.room if hit else 0

    def points(self, bin_id: str, card: str) -> int:
        """The card's milli-points in the bin's earning interval (0 for bins without rates)."""
        found = self.where.get(bin_id)
        if found is None:
            return 0
        g, i = found
        return g.total(card, i) + self._kept(card, g, i)

    def settle_open(self, epoch: float, ref: str) -> None:
        """Credit every card what its totals earn in the bins whose intervals are open at
        `epoch` (after a restore into new bins: a bin added or moved on the calendar page
        counts the points already earned in its interval; settling again adds nothing)."""
        for g in self.groups:
            cards = set().union(*g.layers)
            if not cards or epoch < g.start or epoch >= g.ends[-1]:
                continue  # a fresh accrual (a start, before its restore) stays fresh
            g.advance(max(bisect_right(g.ends, epoch), g.lo))
            for card in sorted(cards):
                self._settle_all(g.open_bins[g.lo], card, g.total(card, g.lo), epoch, ref, None)

    # ------------------------------------------------------------ snapshots

    def snapshot(self, now: float) -> dict[str, Any]:
        """Per-card totals, what cells keep back included, JSON-ready; `now` is the
        floor's time (floor.now)."""
        layers = {id(g): [dict(layer) for layer in g.layers] for g in self.groups}
        for card, cell in self.cells.items():
            kept = cell.granted - cell.room
            for g, i0 in cast(Entries, cell.scope) if kept else ():
                for j in range(i0, g.lo + 1):
                    layers[id(g)][j][card] = g.total(card, j) + kept
        return {
            "version": 1,
            "now": now,
            "groups": [
                {"start": g.start, "ends": list(g.ends), "layers": layers[id(g)]}
                for g in self.groups
            ],
        }

    def restore(self, snap: Mapping[str, Any]) -> None:
        """Load a snapshot into this fresh accrual, matching groups by their start.

        An interval still open at the snapshot's `now` gets the newest totals; one that had
        ended gets the totals of the snapshot's interval with the same end, or, when the
        draws changed since, of the latest one ending before it (a lower bound).
        """
        if snap.get("version") != 1:
            raise ValueError(
                f"unsupported tickets accrual snapshot version {snap.get('version')!r}"
            )
        if self.cells or any(g.lo or g.layers[0] for g in self.groups):
            raise ValueError("restore needs a fresh ledger")
        now = float(snap["now"])
        old = {float(o["start"]): o for o in snap["groups"]}
        for g in self.groups:
            o = old.get(g.start)
            if o is not None:
                _restore_group(g, [float(e) for e in o["ends"]], o["layers"], now)
        for g in self.groups:  # cards with totals are not new: placeholder cells say so
            for layer in g.layers:
                for card in layer:
                    if card not in self.cells:
                        self.cells[card] = PointsCell(card)


def _restore_group(
    g: _Group, old_ends: list[float], layers: list[dict[str, int]], now: float
) -> None:
    def value(card: str, upto: int) -> int:
        for j in range(min(upto, len(layers) - 1), -1, -1):
            if card in layers[j]:
                return int(layers[j][card])
        return 0

    g.advance(min(bisect_right(g.ends, now), len(g.ends) - 1))
    cards = set().union(*layers)
    for i in range(g.lo + 1):
        end = g.ends[i]
        upto = len(layers) if i == g.lo and now < end else bisect_right(old_ends, end) - 1
        for card in cards:
            v = value(card, upto)
            if v != (g.total(card, i - 1) if i else 0):  # layers stay sparse
                g.layers[i][card] = v

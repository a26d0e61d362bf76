"""Floor state, points and eligible pools, all updated incrementally per event.

One `Floor` knows who is where (a card at one place at most), who is actively
playing, how many qualifying points each player earned today, and for every
promotion which players are eligible right now.  Each event touches one player,
so each event costs O(1) dictionary work plus O(log n) when a pool changes; the
floor is never rescanned.  Time only moves through event timestamps and
`advance(now)`: the core never reads a clock.

Long on purpose: the ingest hot path is inlined into `Floor.apply_many` (a call per game
would cost a fifth of the event budget), and the handlers share that state directly.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter, OrderedDict
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from fractions import Fraction
from typing import Any

from sortedcontainers import SortedList

from selector.events import (
    AnyFloorEvent,
    CardInserted,
    CardRemoved,
    Exclusion,
    GamePlayed,
    MachineStatus,
    MachineStatusChanged,
    PlayerUpserted,
    PointsEarned,
    PoolKind,
    TableRatingClosed,
    TableRatingOpened,
    TableRatingUpdated,
    Tier,
    span_in_range,
)
from selector.layout import FloorLayout, Location, Machine, Table
from selector.pooltree import PoolTree
from selector.promotion import EarnRules, Promotion
from selector.snapshot import Pool, PoolSnapshot, PoolSnapshotter
from selector.windows import DayClock

SLOTS = PoolKind.SLOTS.value
TABLES = PoolKind.TABLES.value
ELIGIBLE = "eligible"
# a game's or points' span_start more than MAX_SPAN_SECONDS before ts, or before 1970
SPAN_OUT_OF_RANGE = "span_out_of_range"
_MILLI = 1000  # the points sink's unit (the ticket ledger counts milli-points)
# Qualifying points are integers of 1/unit point, unit = lcm(10**6, every earn rate): a
# slot game's wager / rate is then exact, and so is any points figure of up to 6 decimals
# (CMS points, table minutes); finer remainders are dropped, never rounded up.
_MICRO = 1_000_000
_UNKNOWN = math.inf  # a rating's last figure time when its open was never seen
_SEAT_SLACK = 60.0  # seconds: minutes figures are often whole minutes
_EXCLUSION_ORDER = tuple(Exclusion)
_OUT_OF_SERVICE = MachineStatus.OUT_OF_SERVICE  # a module constant: enum lookups are slow
_NO_EXCLUSIONS: frozenset[Exclusion] = frozenset()
_IDLE_TIMER = 0  # the player's last game is older than the idle limit
_RECHECK_TIMER = 1  # the player may have reached the minimum active time


class PointsCell:
    """What the floor shares with a points sink per card; the floor's players are cells.

    The floor only reads lo, hi and room: while an event's epoch lies in [lo, hi) and its
    milli-points stay below room, it subtracts them from room instead of calling the sink
    (a call per game would cost a fifth of the event budget).  The sink sets lo, hi and
    room (lowering hi retires a cell: its holder calls at the next point), and keeps its
    own bookkeeping in granted and scope, which the floor never touches.
    """

    __slots__ = ("card", "granted", "hi", "lo", "room", "scope")

    def __init__(self, card: str) -> None:
        self.card = card
        self.lo = 0.0
        self.hi = -1.0  # empty: the first point calls the sink
        self.room = 0
        self.granted = 0  # the sink's: room when it last set it
        self.scope: object = None  # the sink's: where the points kept back belong


# (the card's cell, epoch, milli-points, event id); the sink may set the cell's room
PointsSink = Callable[[PointsCell, float, int, str], None]


def decimal_ratio(x: float) -> tuple[int, int]:
    """The number as its payload wrote it, (numerator, denominator): 49.9996 from JSON is
    499996/10000, not the binary float beside it, so thresholds compare what was sent."""
    n = int(x)
    if n == x:
        return n, 1
    return Decimal(repr(x)).as_integer_ratio()


@dataclass(frozen=True, slots=True)
class PlayerProfile:
    """What the player directory says of a card."""

    tier: Tier
    display_name: str
    age_verified: bool
    exclusions: frozenset[Exclusion]
    block_reason: str | None
    photo_url: str | None = None  # for the ID check only (docs/pages.md, directory fields)


class _Player(PointsCell):
    __slots__ = (
        "active",
        "active_since",
        "carry",
        "idle_due",
        "kind",
        "last_game",
        "machine",
        "points",
        "profile",
        "seat",
        "seen",
        "since",
        "table",
    )

    def __init__(self, card: str, n_windows: int) -> None:
        super().__init__(card)
        self.profile: PlayerProfile | None = None
        self.kind: str | None = None  # SLOTS, TABLES or None when not on the floor
        self.machine: _MachineState | None = None
        self.table: str | None = None
        self.seat = 0
        self.active = False
        self.active_since = 0.0
        self.last_game = 0.0
        self.idle_due = 0.0  # due time of the outstanding idle timer
        # when the current place began (card-in, rating open): an older place's messages
        # record points but never move the player back there
        self.since = 0.0
        self.seen = 0.0  # floor time of the last event about the card (pruning unknowns)
        # per qualifying window: [local day ordinal, points units earned in it] pairs, flat
        self.points = [0, 0] * n_windows
        # spans of slot games and points events cut by a window edge: the fractions of a
        # unit left over, per (window, day), as a rating keeps them (_credit_span)
        self.carry: dict[tuple[int, int], Fraction] | None = None


class _MachineState:
    __slots__ = ("info", "last_game", "player", "rate", "status", "units")

    def __init__(self, info: Machine, rate: int, unit: int) -> None:
        self.info = info
        self.rate = rate
        self.units = unit // rate  # points units per minor unit wagered (exact)
        self.player: _Player | None = None  # whose card is in
        self.status = MachineStatus.ONLINE
        self.last_game = 0.0


class _Rating:
    __slots__ = ("at", "card", "carry", "closed", "credited", "minutes", "rate")

    def __init__(self, card: str, rate: int, at: float = _UNKNOWN) -> None:
        self.card = card
        self.rate = rate
        self.credited = 0  # points units of the rating's figures already accounted for
        self.minutes = 0.0  # the highest minutes figure seen
        self.at = at  # time of the open or of the latest figure
        self.closed = False  # closed (else ended because the player went elsewhere)
        # per (window, day): the fraction of a unit left over from spans cut by the window
        # edge, so that the in-window part is exact however the span was reported
        self.carry: dict[tuple[int, int], Fraction] | None = None


class _PromotionState:
    """Per promotion: status of every located player, pools and counters."""

    __slots__ = (
        "counts", "min_active", "pools", "promo", "snapshotters", "status", "threshold",
        "trees", "window",
    )  # fmt: skip

    def __init__(self, promo: Promotion, window: int, unit: int) -> None:
        self.promo = promo
        self.window = window
        n, d = decimal_ratio(promo.threshold_points)
        self.threshold = -(-n * unit // d)  # units >= this <=> points >= threshold, exactly
        self.min_active = promo.min_active_seconds
        # card -> (kind, area, tier, reason); reason ELIGIBLE means in the pool
        self.status: dict[str, tuple[str, str, str, str]] = {}
        self.counts: Counter[tuple[str, str, str, str]] = Counter()
        # each notes the cards that came or went, so its snapshotter rehashes only those
        self.pools: dict[str, Pool] = {k.value: Pool() for k in PoolKind}
        # shared by every session drawing from the pool, so each reuses the last one's work
        self.snapshotters = {k.value: PoolSnapshotter() for k in PoolKind}
        # derivation v3: each pool's digest kept up to date as cards come and go
        self.trees = {k: PoolTree(pool) for k, pool in self.pools.items()}


class Floor:
    """The live floor of one site, for a set of promotions."""

    def __init__(
        self,
        layout: FloorLayout,
        promotions: Iterable[Promotion],
        earn: EarnRules | None = None,
        idle_seconds: float = 120.0,
        points_sink: PointsSink | None = None,
        prune_unknown_after_seconds: float | None = 3600.0,
    ) -> None:
        """`points_sink(cell, epoch, milli, event_id)` sees every point credited, inside a
        qualifying window or not (the ticket ledger's feed), but for what the player's
        PointsCell lets the floor keep back, and 0 points at a directory update (so that a
        card's cell is ready before its first game); None costs nothing.

        `prune_unknown_after_seconds`: a card the directory never knew, off the floor and
        without points today, is forgotten that long after it was last seen (None: never);
        each one counts `unknown_card_pruned`."""
        if idle_seconds <= 0:
            raise ValueError("idle_seconds must be positive")
        if prune_unknown_after_seconds is not None and prune_unknown_after_seconds <= 0:
            raise ValueError("prune_unknown_after_seconds must be positive (or None)")
        self.layout = layout
        self.earn = earn or EarnRules()
        self.idle_seconds = float(idle_seconds)
        self.prune_unknown_after = prune_unknown_after_seconds
        slot_rates = {mid: self.earn.slot_rate(m) for mid, m in layout.machines.items()}
        self._table_rates = {tid: self.earn.table_rate(t) for tid, t in layout.tables.items()}
        self._unit = math.lcm(_MICRO, *slot_rates.values(), *self._table_rates.values())
        self._per_milli = self._unit // _MILLI
        self._computed = self.earn.points_source == "computed"
        self._points_sink = points_sink
        windows: list[DayClock] = []
        self._promos: dict[str, _PromotionState] = {}
        for promo in promotions:
            if promo.promotion_id in self._promos:
                raise ValueError(f"promotion {promo.promotion_id!r} is defined twice")
            index = next((i for i, c in enumerate(windows) if c.window == promo.window), None)
            if index is None:
                windows.append(DayClock(promo.window))
                index = len(windows) - 1
            self._promos[promo.promotion_id] = _PromotionState(promo, index, self._unit)
        self._clocks = windows
        # for each window, its clock and the thresholds of the promotions counting in it
        self._windows: list[tuple[DayClock, tuple[int, ...]]] = [
            (clock, tuple(s.threshold for s in self._promos.values() if s.window == i))
            for i, clock in enumerate(windows)
        ]
        self._machines = {
            mid: _MachineState(m, slot_rates[mid], self._unit) for mid, m in layout.machines.items()
        }
        self._tables: dict[str, Table] = dict(layout.tables)
        self._seats: dict[tuple[str, int], _Rating] = {}
        # ratings that ended (closed, or left for another place), by (table, seat, card):
        # their late figures count once and never seat anybody; dropped after a day
        self._closed: dict[tuple[str, int, str], _Rating] = {}
        # unknown cards that may be pruned, with the floor time they were noted (oldest first)
        self._unknown: OrderedDict[str, float] = OrderedDict()  # O(1) from the front
        self._statuses: dict[tuple[str, str, str, str], tuple[str, str, str, str]] = {}
        self._players: dict[str, _Player] = {}
        self._timers: list[tuple[float, str, int]] = []
        self.now = 0.0
        self._pools_moved = False  # a pool changed since its tree last caught up
        self._days: list[int] = []  # local day per window at the last roll-over check
        self.anomalies: Counter[str] = Counter()
        self.rejections: Counter[str] = Counter()
        self.uncarded_games = 0
        self.ignored_points_events = 0
        self.last_rejection: str | None = None  # reason of the latest rejected event
        self._dispatch: dict[type, Callable[[Any], str | None]] = {
            CardInserted: self._on_card_in,
            CardRemoved: self._on_card_out,
            MachineStatusChanged: self._on_machine_status,
            TableRatingOpened: self._on_rating_open,
            TableRatingUpdated: self._on_rating_update,
            TableRatingClosed: self._on_rating_close,
            PointsEarned: self._on_points,
            PlayerUpserted: self._on_player,
        }

    # ------------------------------------------------------------------ ingest

    def apply(self, event: AnyFloorEvent) -> str | None:
        """Apply one event; returns None when applied, else the rejection reason."""
        if self.apply_many((event,)):
            return self.last_rejection
        return None

    def advance(self, now: datetime) -> None:
        """Move the floor's clock: idle players leave pools, waiting timers fire."""
        epoch = now.timestamp()
        if epoch > self.now:
            self.now = epoch
        self._roll_over_days()
        timers = self._timers
        while timers and timers[0][0] <= epoch:
            due, card, what = heapq.heappop(timers)
            p = self._players.get(card)
            if p is None or p.kind is None:
                continue
            if what == _IDLE_TIMER:
                if due != p.idle_due or not p.active or p.kind != SLOTS:
                    continue  # superseded: a later activation, or the player left
                real_due = p.last_game + self.idle_seconds
                if real_due > epoch:
                    p.idle_due = real_due
                    heapq.heappush(timers, (real_due, card, _IDLE_TIMER))
                    continue
                p.active = False
            self._evaluate(p)
        if self._unknown:
            self._prune_unknown()
        if self._pools_moved:
            self.settle_pools()

    def _note_unknown(self, p: _Player) -> None:
        """A card without a directory entry left the floor (or appeared off it): it may be
        pruned later.  Re-noting moves it to the end, so the oldest stay first."""
        unknown = self._unknown
        unknown[p.card] = self.now
        unknown.move_to_end(p.card)

    def _prune_unknown(self) -> None:
        """Forget unknown cards off the floor with no points today, long enough unseen.

        Amortized O(1): only cards noted at least `prune_unknown_after` ago are looked at,
        oldest first; one that came back is dropped from the list (noted again when it
        leaves), one with points today or seen since is noted again for later.
        """
        after = self.prune_unknown_after
        if after is None:
            return
        horizon = self.now - after
        unknown = self._unknown
        players = self._players
        while unknown:
            card, noted = unknown.popitem(last=False)
            if noted > horizon:
                unknown[card] = noted
                unknown.move_to_end(card, last=False)
                return
            p = players.get(card)
            if p is None or p.profile is not None or p.kind is not None:
                continue
            if p.seen > horizon or self._has_points_today(p):
                unknown[card] = self.now
                continue
            del players[card]
            self.anomalies["unknown_card_pruned"] += 1

    def _has_points_today(self, p: _Player) -> bool:
        pts = p.points
        for i, clock in enumerate(self._clocks):
            if pts[2 * i + 1] and pts[2 * i] == clock.day_of(self.now):
                return True
        return False

    def _roll_over_days(self) -> None:
        """At local midnight everyone's qualifying points restart: re-check the located.

        This is the one scan the floor does, once per day per window, over the
        players who are on the floor now; events never trigger it.
        """
        days = [clock.day_of(self.now) for clock in self._clocks]
        if days == self._days:
            return
        self._days = days
        if self._closed:  # ended ratings a day old send no more figures worth keeping
            horizon = self.now - 86_400.0
            self._closed = {k: r for k, r in self._closed.items() if r.at >= horizon}
        for st in self._promos.values():
            for card in list(st.status):
                self._evaluate(self._players[card])

    def _reject(self, reason: str) -> str:
        self.rejections[reason] += 1
        return reason

    def _player(self, card: str) -> _Player:
        p = self._players.get(card)
        if p is None:
            p = self._players[card] = _Player(card, len(self._clocks))
            p.seen = self.now
            self._note_unknown(p)  # no directory entry yet; checked again when due
        return p

    def apply_many(
        self,
        events: Iterable[AnyFloorEvent],
        rejected_hook: Callable[[int, str], None] | None = None,
    ) -> int:
        """Apply a batch in order; returns how many were rejected (reasons are counted).

        rejected_hook, when given, is called with (index in events, reason) for each
        rejected event, as it is rejected.  An event the floor fails on (an exception)
        ends the call there: what came before it is applied, the clock kept and the pools
        settled (try/finally), so the caller may go on with the rest of the batch.

        Games, most of the floor's traffic, are applied inline with the floor's tables
        bound to locals (a call per game would cost a fifth of the event budget).  The
        points loop is `_credit` inlined for the same reason.
        """
        rejected = 0
        dispatch = self._dispatch
        machines = self._machines
        windows = self._windows
        timers = self._timers
        idle = self.idle_seconds
        computed = self._computed
        sink = self._points_sink
        evaluate = self._evaluate
        push = heapq.heappush
        now = self.now
        try:
            for i, ev in enumerate(events):
                if type(ev) is not GamePlayed:
                    self.now = now
                    handler = dispatch.get(type(ev))
                    reason = self._reject("unknown_event_type") if handler is None else handler(ev)
                    now = self.now
                    if reason is not None:
                        self.last_rejection = reason
                        rejected += 1
                        if rejected_hook is not None:
                            rejected_hook(i, reason)
                    continue
                m = machines.get(ev.machine)
                if m is None:
                    self.last_rejection = self._reject("unknown_machine")
                    rejected += 1
                    if rejected_hook is not None:
                        rejected_hook(i, "unknown_machine")
                    continue
                epoch = ev.epoch
                span = ev.span_start
                if span is not None and not span_in_range(span.timestamp(), epoch):
                    self.last_rejection = self._reject(SPAN_OUT_OF_RANGE)  # before any change
                    rejected += 1
                    if rejected_hook is not None:
                        rejected_hook(i, SPAN_OUT_OF_RANGE)
                    continue
                if epoch > now:
                    now = epoch
                if epoch > m.last_game:
                    m.last_game = epoch
                p = m.player
                if p is None:
                    self.uncarded_games += 1
                    continue
                changed = False
                if epoch > p.last_game:
                    p.last_game = epoch
                if not p.active and m.status is not _OUT_OF_SERVICE and now - epoch < idle:
                    p.active = True
                    p.active_since = epoch
                    p.idle_due = epoch + idle
                    push(timers, (p.idle_due, p.card, _IDLE_TIMER))
                    changed = True
                wager = ev.wager
                if wager and computed:
                    if sink is not None:  # _sink_points inlined
                        milli = wager * _MILLI // m.rate
                        room = p.room - milli
                        if room > 0 and p.lo <= epoch and epoch < p.hi:
                            p.room = room
                        else:
                            sink(p, epoch, milli, ev.event_id)
                    units = wager * m.units
                    if span is not None:  # rebuilt from meters: played over a span
                        if self._credit_span(p, span.timestamp(), epoch, units, p):
                            changed = True
                    else:
                        pts = p.points
                        j = 0
                        for clock, thresholds in windows:
                            if clock.win_start <= epoch < clock.win_end:
                                day = clock.day
                            else:
                                day, inside = clock.classify(epoch)
                                if not inside:
                                    j += 2
                                    continue
                            if day != pts[j]:
                                if day < pts[j]:
                                    j += 2
                                    continue
                                pts[j], pts[j + 1] = day, 0
                            before = pts[j + 1]
                            after = pts[j + 1] = before + units
                            for threshold in thresholds:
                                if before < threshold <= after:
                                    changed = True
                            j += 2
                if changed:
                    self.now = now
                    evaluate(p)
        finally:
            if now > self.now:
                self.now = now
            if self._pools_moved:
                self.settle_pools()
        return rejected

    def settle_pools(self) -> None:
        """Hash what changed in the pools' trees (derivation v3): at the end of every batch,
        so that a pick pays only for its own bars."""
        self._pools_moved = False
        for st in self._promos.values():
            for tree in st.trees.values():
                tree.settle()

    def _credit(self, p: _Player, epoch: float, units: int) -> bool:
        """Add points units earned at epoch; True when a promotion threshold was crossed."""
        crossed = False
        pts = p.points
        j = 0
        for clock, thresholds in self._windows:
            if clock.win_start <= epoch < clock.win_end:
                day = clock.day  # inside today's window: the cached day is right
            else:
                day, inside = clock.classify(epoch)
                if not inside:
                    j += 2
                    continue
            if day != pts[j]:
                if day < pts[j]:  # a late event of an earlier day: today is untouched
                    j += 2
                    continue
                pts[j], pts[j + 1] = day, 0
            before = pts[j + 1]
            after = pts[j + 1] = before + units
            for threshold in thresholds:
                if before < threshold <= after:
                    crossed = True
            j += 2
        return crossed

    def _credit_span(
        self, p: _Player, start: float, end: float, units: int, rating: _Rating | _Player
    ) -> bool:
        """Add units earned evenly over [start, end]: each window gets its part inside.

        A rating opened at 07:00 and first updated at 08:05 with 65 minutes earns 5/65 of
        its points for the 08:00 window (seed 003); so do a slot game rebuilt from meters
        read at 07:00 and 08:05, and points reported for that span.  The common span,
        inside one window, costs two comparisons; a span cut by a window edge keeps its
        fraction of a unit in the rating's (or, for games and points, the player's)
        carry, so the credited total is the floor of the exact in-window share however
        the figures split the span.
        """
        if end <= start:
            return self._credit(p, end, units)
        crossed = False
        pts = p.points
        span = Fraction(end - start)  # float differences here are exact (Sterbenz)
        j = 0
        for clock, thresholds in self._windows:
            if clock.win_start <= start and end <= clock.win_end:
                parts = [(clock.day, units)]
            else:
                parts = []
                carry = rating.carry
                if carry is None:
                    carry = rating.carry = {}
                for day, seconds in clock.pieces(start, end):
                    exact = carry.get((j, day), 0) + units * Fraction(seconds) / span
                    whole = math.floor(exact)
                    carry[(j, day)] = exact - whole
                    parts.append((day, whole))
            for day, share in parts:
                if day != pts[j]:
                    if day < pts[j]:  # an earlier day's part: today is untouched
                        continue
                    pts[j], pts[j + 1] = day, 0
                before = pts[j + 1]
                after = pts[j + 1] = before + share
                for threshold in thresholds:
                    if before < threshold <= after:
                        crossed = True
            j += 2
        return crossed

    def _sink_points(self, p: _Player, epoch: float, milli: int, event_id: str) -> None:
        """Hand points to the sink, or take them from the player's cell while it has room."""
        sink = self._points_sink
        if sink is None:
            return
        room = p.room - milli  # one attribute load less than a chained compare and -=
        if room > 0 and p.lo <= epoch and epoch < p.hi:
            p.room = room
        else:
            sink(p, epoch, milli, event_id)

    def _leave(self, p: _Player, anomaly: str | None) -> None:
        """End the player's current place on the floor."""
        if anomaly:
            self.anomalies[anomaly] += 1
        if p.kind == SLOTS and p.machine is not None:
            p.machine.player = None
        elif p.kind == TABLES and p.table is not None:
            rating = self._seats.pop((p.table, p.seat), None)
            if rating is not None and rating.card == p.card:
                # its late figures still count, and never seat the player there again
                self._closed[(p.table, p.seat, p.card)] = rating
        p.kind = None
        p.machine = None
        p.table = None
        p.seat = 0
        p.active = False
        p.idle_due = 0.0
        p.seen = self.now
        if p.profile is None:
            self._note_unknown(p)
        self._evaluate(p)

    def _on_card_in(self, ev: CardInserted) -> str | None:
        m = self._machines.get(ev.machine)
        if m is None:
            return self._reject("unknown_machine")
        epoch = ev.epoch
        if epoch > self.now:
            self.now = epoch
        if m.player is not None and m.player.card == ev.card:
            return None  # repeated card-in at the same machine changes nothing
        p = self._player(ev.card)
        if p.kind is not None and epoch < p.since:
            # from before the player's current place (a buffered message): they left it
            self.anomalies["stale_card_in"] += 1
            return None
        if m.player is not None:
            self._leave(m.player, "card_replaced_at_machine")
        if p.kind is not None:
            self._leave(p, "card_in_elsewhere")
        p.kind = SLOTS
        p.machine = m
        p.active = False
        p.since = epoch
        m.player = p
        self._evaluate(p)
        return None

    def _on_card_out(self, ev: CardRemoved) -> str | None:
        m = self._machines.get(ev.machine)
        if m is None:
            return self._reject("unknown_machine")
        if m.player is None or m.player.card != ev.card:
            self.anomalies["card_out_without_card_in"] += 1
            return None
        self._leave(m.player, None)
        return None

    def _on_machine_status(self, ev: MachineStatusChanged) -> str | None:
        m = self._machines.get(ev.machine)
        if m is None:
            return self._reject("unknown_machine")
        m.status = ev.status
        p = m.player
        if ev.status == MachineStatus.OUT_OF_SERVICE and p is not None and p.active:
            p.active = False
            self._evaluate(p)
        return None

    def _seat(self, table: str, seat: int) -> str | None:
        t = self._tables.get(table)
        if t is None:
            return self._reject("unknown_table")
        if not 1 <= seat <= t.seats:
            return self._reject("unknown_seat")
        return None

    def _open_rating(self, table: str, seat: int, card: str, epoch: float) -> _Rating:
        key = (table, seat)
        current = self._seats.get(key)
        if current is not None:
            self._leave(self._players[current.card], "seat_rating_replaced")
        p = self._player(card)
        if p.kind is not None:
            self._leave(p, "card_in_elsewhere")
        rating = self._seats[key] = _Rating(card, self._table_rates[table], epoch)
        p.kind = TABLES
        p.table = table
        p.seat = seat
        p.active = True
        p.active_since = epoch
        p.since = epoch
        self._evaluate(p)
        return rating

    def _rating_points(
        self, rating: _Rating, p: _Player, ev: TableRatingUpdated | TableRatingClosed
    ) -> None:
        """Credit what the rating's cumulative figures earned since its last figure, spread
        over the time since that figure, so only its part inside a qualifying window counts.

        The first minutes reported reach back at least that far, before the open if need
        be (a late or lost open); later figures' spans follow each other without overlap.
        """
        epoch = ev.epoch
        minutes = ev.minutes
        n, d = decimal_ratio(minutes)
        total = ev.average_bet * n * self._unit // (d * rating.rate)
        start = rating.at
        if not rating.minutes:
            start = min(start, epoch - minutes * 60.0)
        if start > epoch:  # a late figure, older than the last one: an instant
            start = epoch
        if rating.at == _UNKNOWN or epoch > rating.at:
            rating.at = epoch
        if minutes > rating.minutes:
            rating.minutes = minutes
        delta = total - rating.credited
        if delta > 0:
            per_milli = self._per_milli
            milli = total // per_milli - rating.credited // per_milli
            rating.credited = total
            if not self._computed:
                return
            p.seen = self.now
            self._sink_points(p, epoch, milli, ev.event_id)
            if self._credit_span(p, start, epoch, delta, rating):
                self._evaluate(p)

    def _on_rating_open(self, ev: TableRatingOpened) -> str | None:
        bad = self._seat(ev.table, ev.seat)
        if bad:
            return bad
        epoch = ev.epoch
        if epoch > self.now:
            self.now = epoch
        current = self._seats.get((ev.table, ev.seat))
        if current is not None and current.card == ev.card:
            return None  # the same rating opened twice
        p = self._players.get(ev.card)
        if p is not None and p.kind is not None and epoch < p.since:
            # an open from before the player's current place: its figures will count,
            # but the player is not taken back to a seat they have left
            self.anomalies["stale_rating_open"] += 1
            rating = _Rating(ev.card, self._table_rates[ev.table], epoch)
            self._closed[(ev.table, ev.seat, ev.card)] = rating
            return None
        self._open_rating(ev.table, ev.seat, ev.card, epoch)
        return None

    def _past_rating(self, ev: TableRatingUpdated | TableRatingClosed) -> _Rating | None:
        """The ended rating this message belongs to: the card's last rating at the seat,
        unless the figures say a new rating began after it ended."""
        past = self._closed.get((ev.table, ev.seat, ev.card))
        if past is not None and ev.epoch - ev.minutes * 60.0 <= past.at + _SEAT_SLACK:
            return past
        return None

    def _on_rating_update(self, ev: TableRatingUpdated) -> str | None:
        bad = self._seat(ev.table, ev.seat)
        if bad:
            return bad
        epoch = ev.epoch
        if epoch > self.now:
            self.now = epoch
        rating = self._seats.get((ev.table, ev.seat))
        if rating is not None and rating.card == ev.card:
            self._rating_points(rating, self._players[ev.card], ev)
            return None
        past = self._past_rating(ev)
        if past is not None:
            # a late figure of a rating that ended: its play counts once, nobody sits down
            late = "rating_update_after_close" if past.closed else "rating_update_after_leave"
            self.anomalies[late] += 1
            self._rating_points(past, self._player(ev.card), ev)
            return None
        p = self._player(ev.card)
        began = epoch - ev.minutes * 60.0
        if p.kind is not None and began < p.since:
            # a rating older than the player's current place (a stale terminal, a late
            # message): its points count, the player stays where they are now
            self.anomalies["stale_rating_update"] += 1
            past = self._closed[(ev.table, ev.seat, ev.card)] = _Rating(
                ev.card, self._table_rates[ev.table]
            )
            self._rating_points(past, p, ev)
            return None
        # an update without its open (lost message): open it now rather than lose the play
        self.anomalies["rating_without_open"] += 1
        rating = self._open_rating(ev.table, ev.seat, ev.card, epoch)
        rating.at = _UNKNOWN  # the open's time is unknown: the minutes give the span
        p.since = began
        self._rating_points(rating, p, ev)
        return None

    def _on_rating_close(self, ev: TableRatingClosed) -> str | None:
        bad = self._seat(ev.table, ev.seat)
        if bad:
            return bad
        epoch = ev.epoch
        if epoch > self.now:
            self.now = epoch
        key = (ev.table, ev.seat)
        p = self._players.get(ev.card)
        rating = self._seats.get(key)
        if rating is None or rating.card != ev.card or p is None:
            # a close never moves anybody: it credits the figures of its rating
            rating = self._past_rating(ev)
            if rating is not None:
                late = "rating_closed_twice" if rating.closed else "rating_closed_after_leave"
                self.anomalies[late] += 1  # credited only beyond what was credited
            else:
                # closing a rating we never saw: credit its points, leave nobody seated
                self.anomalies["rating_close_without_open"] += 1
                rating = _Rating(ev.card, self._table_rates[ev.table])
                self._closed[(ev.table, ev.seat, ev.card)] = rating
            rating.closed = True
            self._rating_points(rating, self._player(ev.card), ev)
            return None
        self._rating_points(rating, p, ev)
        rating.closed = True
        self._leave(p, None)  # keeps the rating for late figures
        return None

    def _on_points(self, ev: PointsEarned) -> str | None:
        if self._computed:
            self.ignored_points_events += 1
            return None
        if ev.points < 0:
            return self._reject("negative_points")
        epoch = ev.epoch
        span = ev.span_start
        if span is not None and not span_in_range(span.timestamp(), epoch):
            return self._reject(SPAN_OUT_OF_RANGE)  # before any change
        if epoch > self.now:
            self.now = epoch
        p = self._player(ev.card)
        p.seen = self.now
        n, d = decimal_ratio(ev.points)
        # milli-points for the ticket ledger, rounded down like every other credit:
        # 49.9996 points are 49999 milli-points, never the 50,000 that earn a ticket
        self._sink_points(p, epoch, n * _MILLI // d, ev.event_id)
        units = n * self._unit // d  # exact, never rounded up
        if (
            self._credit(p, epoch, units)
            if span is None
            else self._credit_span(p, span.timestamp(), epoch, units, p)
        ):
            self._evaluate(p)
        return None

    def _on_player(self, ev: PlayerUpserted) -> str | None:
        p = self._players.get(ev.card)
        if p is None:  # known from now on: never a pruning candidate
            p = self._players[ev.card] = _Player(ev.card, len(self._clocks))
        p.profile = PlayerProfile(
            tier=ev.tier,
            display_name=ev.display_name,
            age_verified=ev.age_verified,
            exclusions=ev.exclusions or _NO_EXCLUSIONS,  # one shared empty set: memory
            block_reason=ev.block_reason,
            photo_url=ev.photo_url,
        )
        self._sink_points(p, ev.epoch, 0, ev.event_id)  # the cell is readied off the game path
        self._evaluate(p)
        return None

    # ------------------------------------------------------------- eligibility

    def _area(self, p: _Player) -> str:
        if p.machine is not None:
            return p.machine.info.area
        return self._tables[p.table].area if p.table is not None else ""

    def _points_units(self, p: _Player, window: int, day: int) -> int:
        j = 2 * window
        return p.points[j + 1] if p.points[j] == day else 0

    def _reason(self, p: _Player, st: _PromotionState, area: str) -> str:
        """The first rule that keeps a located player out of the pool, or ELIGIBLE."""
        prof = p.profile
        if prof is None:
            return "unknown_player"
        if not prof.age_verified:
            return "age_not_verified"
        if prof.exclusions:
            for ex in _EXCLUSION_ORDER:
                if ex in prof.exclusions:
                    return ex.value
        promo = st.promo
        if prof.tier not in promo.tiers:
            return "tier_not_included"
        if not promo.area_allowed(area):
            return "area_not_included"
        if not p.active:
            return "idle"
        day = self._clocks[st.window].day_of(self.now)
        if self._points_units(p, st.window, day) < st.threshold:  # exact: no rounding
            return "below_threshold"
        if st.min_active and self.now - p.active_since < st.min_active:
            due = p.active_since + st.min_active
            heapq.heappush(self._timers, (due, p.card, _RECHECK_TIMER))
            return "below_min_active_time"
        return ELIGIBLE

    def _evaluate(self, p: _Player) -> None:
        """Recompute the player's status in every promotion and move pool membership."""
        card = p.card
        kind = p.kind
        area = self._area(p) if kind is not None else ""
        tier = p.profile.tier.value if p.profile is not None else ""
        for st in self._promos.values():
            new: tuple[str, str, str, str] | None = None
            if kind is not None and kind in st.promo.pool_kinds:
                status = (kind, area, tier, self._reason(p, st, area))
                # few distinct statuses exist: share one tuple each (memory per player)
                new = self._statuses.setdefault(status, status)
            old = st.status.get(card)
            if new == old:
                continue
            if old is not None:
                st.counts[old] -= 1
                if not st.counts[old]:
                    del st.counts[old]
                if old[3] == ELIGIBLE:
                    st.pools[old[0]].remove(card)
                    self._pools_moved = True
            if new is None:
                del st.status[card]
                continue
            st.status[card] = new
            st.counts[new] += 1
            if new[3] == ELIGIBLE:
                st.pools[new[0]].add(card)
                self._pools_moved = True

    def set_points_sink(self, points_sink: PointsSink | None) -> None:
        """Another sink from now on (the ticket plan changed while running); the old one
        retired every cell it set, so each card's next point goes to the new one."""
        self._points_sink = points_sink

    def set_promotions(self, promotions: Iterable[Promotion]) -> None:
        """Who qualifies changed while running (a definition approved on the calendar
        page): the promotions are these from now on, and every pool is recomputed from
        the players as they stand.  A play window no promotion had before counts points
        from now on; a promotion whose rules did not change keeps its pools as they are.
        O(players), once per change."""
        states: dict[str, _PromotionState] = {}
        for promo in promotions:
            if promo.promotion_id in states:
                raise ValueError(f"promotion {promo.promotion_id!r} is defined twice")
            index = next((i for i, c in enumerate(self._clocks) if c.window == promo.window), None)
            if index is None:
                self._clocks.append(DayClock(promo.window))
                index = len(self._clocks) - 1
                for p in self._players.values():
                    p.points += [0, 0]
            old = self._promos.get(promo.promotion_id)
            if old is not None and old.promo == promo and old.window == index:
                states[promo.promotion_id] = old
            else:
                states[promo.promotion_id] = _PromotionState(promo, index, self._unit)
        self._promos = states
        self._windows = [
            (clock, tuple(s.threshold for s in states.values() if s.window == i))
            for i, clock in enumerate(self._clocks)
        ]
        self._days = []
        for p in self._players.values():
            if p.kind is not None:
                self._evaluate(p)

    # ----------------------------------------------------------------- queries

    def promotion(self, promotion_id: str) -> Promotion:
        return self._state(promotion_id).promo

    def _state(self, promotion_id: str) -> _PromotionState:
        st = self._promos.get(promotion_id)
        if st is None:
            raise KeyError(f"unknown promotion {promotion_id!r}")
        return st

    def pool(self, promotion_id: str, kind: PoolKind | str) -> SortedList:
        """The eligible cards of a pool in canonical (sorted) order; do not mutate."""
        return self._state(promotion_id).pools[PoolKind(kind).value]

    def pool_snapshot(
        self, promotion_id: str, kind: PoolKind | str, barred: Collection[str]
    ) -> tuple[PoolSnapshot, str]:
        """A pool minus the barred cards, in canonical order, and its digest (exactly
        fairness.pool_digest); each snapshot reuses what the last one of the pool hashed."""
        st = self._state(promotion_id)
        k = PoolKind(kind).value
        return st.snapshotters[k].take(st.pools[k], barred)

    def pool_tree_snapshot(
        self, promotion_id: str, kind: PoolKind | str, barred: Collection[str]
    ) -> tuple[PoolSnapshot, str]:
        """Derivation v3: a pool minus the barred cards, in canonical order, and its digest
        (a bin of weight 1 per card, selector.bindigest); costs the session's bars, the
        floor's changes having been hashed as they came (selector.pooltree)."""
        if self._pools_moved:
            self.settle_pools()
        return self._state(promotion_id).trees[PoolKind(kind).value].snapshot(barred)

    def pool_checkpoint(self, promotion_id: str, kind: PoolKind | str) -> tuple[PoolSnapshot, str]:
        """The whole pool and its v3 digest, as the base of the next snapshot's delta (the
        daemon stores it in full after a start, off the pick path)."""
        if self._pools_moved:
            self.settle_pools()
        return self._state(promotion_id).trees[PoolKind(kind).value].checkpoint()

    def eligible_counts(self, promotion_id: str) -> dict[tuple[str, str, str], int]:
        """Eligible players by (pool kind, area, tier)."""
        st = self._state(promotion_id)
        return {(k, a, t): n for (k, a, t, r), n in st.counts.items() if r == ELIGIBLE}

    def left_out_counts(self, promotion_id: str, kind: PoolKind | str) -> dict[str, int]:
        """Players on the floor at this pool's kind of place but not in it, by reason."""
        st = self._state(promotion_id)
        kind = PoolKind(kind).value
        out: Counter[str] = Counter()
        for (k, _a, _t, r), n in st.counts.items():
            if k == kind and r != ELIGIBLE:
                out[r] += n
        return dict(out)

    def check(self, promotion_id: str, card: str) -> str:
        """Fresh, uncached evaluation of one card: ELIGIBLE or the reason it is not."""
        st = self._state(promotion_id)
        p = self._players.get(card)
        if p is None:
            return "unknown_player"
        if p.kind is None:
            return "not_on_floor"
        if p.kind not in st.promo.pool_kinds:
            return "pool_kind_not_included"
        if p.kind == SLOTS and p.active and self.now - p.last_game >= self.idle_seconds:
            return "idle"
        return self._reason(p, st, self._area(p))

    def location(self, card: str) -> Location | None:
        p = self._players.get(card)
        if p is None or p.kind is None:
            return None
        if p.machine is not None:
            m = p.machine.info
            return Location(SLOTS, m.area, machine=m.machine, bank=m.bank, number=m.number)
        assert p.table is not None
        return Location(TABLES, self._area(p), table=p.table, seat=p.seat)

    def profile(self, card: str) -> PlayerProfile | None:
        p = self._players.get(card)
        return p.profile if p is not None else None

    def tier_of(self, card: str) -> Tier | None:
        """The card's tier in the directory (the ticket ledger's tier_of)."""
        p = self._players.get(card)
        return p.profile.tier if p is not None and p.profile is not None else None

    def playing(self, card: str) -> bool:
        """Actively playing right now: seated in a rating at a table, or carded in at a slot
        with a game inside the idle limit (the app's ticket entry needs it, 000 rule 7)."""
        p = self._players.get(card)
        if p is None or p.kind is None:
            return False
        if p.kind == TABLES:
            return True
        return p.active and self.now - p.last_game < self.idle_seconds

    def points(self, promotion_id: str, card: str, on: datetime) -> float:
        """Qualifying points of a card on the local day of `on`, for display: the nearest
        float (49.9996 stays 49.9996; eligibility compares the exact units)."""
        st = self._state(promotion_id)
        p = self._players.get(card)
        if p is None:
            return 0.0
        day = self._clocks[st.window].day_of(on.timestamp())
        return self._points_units(p, st.window, day) / self._unit

    def exact_points(self, promotion_id: str, card: str, on: datetime) -> Fraction:
        """The same points exactly, for what must round one way (a player told how many
        points are still needed must never be told none while one is missing)."""
        st = self._state(promotion_id)
        p = self._players.get(card)
        if p is None:
            return Fraction(0)
        day = self._clocks[st.window].day_of(on.timestamp())
        return Fraction(self._points_units(p, st.window, day), self._unit)

    @property
    def tracked_players(self) -> int:
        return len(self._players)

    def counters(self) -> Mapping[str, Mapping[str, int]]:
        return {"anomalies": dict(self.anomalies), "rejections": dict(self.rejections)}

    # ---------------------------------------------------------------- snapshots

    def snapshot(self) -> dict[str, Any]:
        """The floor's state as JSON-ready data; `restore` rebuilds pools from it.

        Enum members go in as they are (StrEnum: they are their values, for any JSON
        encoder): reading `.value` 100,000 times was half the capture time at 50,000
        players, and the capture holds the event loop.

        Pools, statuses and counters are derived data and are not stored: they are
        recomputed from the players, so a snapshot cannot disagree with itself.

        Version 2 (points in units of 1/points_unit point, each player's place start,
        ratings' last figures and ended ratings); `restore` still reads version 1
        (milli-points), as the previous daemon wrote it.
        """
        windows = [[c.window.tz, c.window.start.isoformat(), c.window.end.isoformat()]
                   for c in self._clocks]  # fmt: skip
        players = []
        for p in self._players.values():
            prof = p.profile
            players.append([
                p.card,
                None if prof is None else [prof.tier, prof.display_name, prof.age_verified,
                                           sorted(prof.exclusions) if prof.exclusions else [],
                                           prof.block_reason,
                                           # a photo only when there is one (older snapshots: five)
                                           *([prof.photo_url] if prof.photo_url else [])],
                p.kind, p.machine.info.machine if p.machine is not None else None,
                p.table, p.seat, p.active, p.active_since, p.last_game, list(p.points),
                p.since,
            ])  # fmt: skip
        return {
            "version": 2,
            "points_unit": self._unit,
            "now": self.now,
            "windows": windows,
            "players": players,
            "machines": [
                [mid, m.status, m.last_game]
                for mid, m in self._machines.items()
                if m.last_game or m.status != MachineStatus.ONLINE
            ],
            "seats": [
                [t, s, r.card, r.credited, r.minutes, _time_out(r.at)]
                for (t, s), r in self._seats.items()
            ],
            "ended_ratings": [
                [t, s, c, r.credited, r.minutes, _time_out(r.at), r.closed]
                for (t, s, c), r in self._closed.items()
            ],
            "anomalies": dict(self.anomalies),
            "rejections": dict(self.rejections),
            "uncarded_games": self.uncarded_games,
            "ignored_points_events": self.ignored_points_events,
        }

    def restore(self, snap: Mapping[str, Any]) -> None:
        """Load a snapshot into this (fresh) floor; layout and promotions come from config.

        Machines, tables and qualifying windows that no longer exist in the config are
        dropped; points of a window that is new since the snapshot start at zero.
        """
        version = snap.get("version")
        if version not in (1, 2):
            raise ValueError(f"unsupported floor snapshot version {version!r}")
        if self._players:
            raise ValueError("restore needs a fresh floor")
        # version 1 kept milli-points; a changed earn rate changes the unit (rounded down)
        old_unit = int(snap["points_unit"]) if version == 2 else _MILLI
        unit = self._unit

        def units(x: int) -> int:
            return x * unit // old_unit

        keys = [(c.window.tz, c.window.start.isoformat(), c.window.end.isoformat())
                for c in self._clocks]  # fmt: skip
        old_index = {tuple(w): i for i, w in enumerate(snap["windows"])}
        self.now = float(snap["now"])
        # the players are evaluated below as of `now`: the first advance re-checks them all
        # only if its day differs (a start must not cost the first pick a floor scan)
        self._days = [clock.day_of(self.now) for clock in self._clocks]
        for mid, status, last_game in snap["machines"]:
            m = self._machines.get(mid)
            if m is not None:
                m.status = MachineStatus(status)
                m.last_game = last_game
        for card, prof, kind, machine, table, seat, active, since, last, points, *v2 in snap[
            "players"
        ]:
            p = self._players[card] = _Player(card, len(self._clocks))
            p.since = float(v2[0]) if v2 else 0.0
            if prof is not None:
                tier, name, age, exclusions, reason, *photo = prof
                excl = frozenset(Exclusion(e) for e in exclusions)
                p.profile = PlayerProfile(Tier(tier), name, age, excl, reason,
                                          photo[0] if photo else None)  # fmt: skip
            for i, key in enumerate(keys):
                j = old_index.get(key)
                if j is not None:
                    p.points[2 * i : 2 * i + 2] = [points[2 * j], units(points[2 * j + 1])]
            p.last_game, p.active_since = last, since
            m = self._machines.get(machine) if kind == SLOTS else None
            if m is not None:
                p.kind, p.machine, m.player = SLOTS, m, p
                p.active = active
                if active:
                    p.idle_due = last + self.idle_seconds
                    heapq.heappush(self._timers, (p.idle_due, card, _IDLE_TIMER))
            elif kind == TABLES and table in self._tables:
                p.kind, p.table, p.seat, p.active = TABLES, table, seat, True
        for table, seat, card, credited, *figures in snap["seats"]:
            seated = self._players.get(card)
            if table in self._tables and seated is not None and seated.table == table:
                rating = self._seats[(table, seat)] = _Rating(card, self._table_rates[table])
                rating.credited = units(credited)
                if figures:  # version 1 knew no figures: the next one's minutes give its span
                    rating.minutes, rating.at = figures[0], _time_in(figures[1])
        for table, seat, card, credited, minutes, at, closed in snap.get("ended_ratings", ()):
            if table in self._tables:
                rating = _Rating(card, self._table_rates[table], _time_in(at))
                rating.credited, rating.minutes, rating.closed = units(credited), minutes, closed
                self._closed[(table, seat, card)] = rating
        self.anomalies.update(snap.get("anomalies", {}))
        self.rejections.update(snap.get("rejections", {}))
        self.uncarded_games = int(snap.get("uncarded_games", 0))
        self.ignored_points_events = int(snap.get("ignored_points_events", 0))
        for p in self._players.values():
            p.seen = self.now
            if p.kind is not None:
                self._evaluate(p)
            elif p.profile is None:
                self._note_unknown(p)
        self.settle_pools()  # the pools' trees are built now, not at the first pick


def _time_out(at: float) -> float | None:
    """A rating's time for JSON: None when unknown (JSON has no infinity)."""
    return None if at == _UNKNOWN else at


def _time_in(at: float | None) -> float:
    return _UNKNOWN if at is None else float(at)

"""From register blocks to FloorEvents: the read plan and per-machine change detection.

Nothing here does I/O or reads a clock (timestamps come in), so the rules can be
tested without a gateway.  `adapters/modbus/source.py` runs the reads.

- `plan_reads`: the machines' blocks grouped into as few read-holding-registers
  requests as go (at most 125 registers each, reading through gaps of at most
  `max_gap` unused registers; a block is never split over two requests, so one
  machine's meters always come from one consistent read).
- `MachineTracker.update(reading, ts)`: what changed since the last read of one
  machine.  A games-played delta of N with a coin-in delta C gives N `GamePlayed`
  (C spread over them, the last one getting the last-wager register when that
  fits), ids `mb-{machine}-g{games meter of that game}` so a replay dedupes;
  status bits give `MachineStatusChanged`; a new card number gives
  `CardRemoved(old)` and/or `CardInserted(new)`.  A meter that goes backwards or
  jumps implausibly is an anomaly: that read is held back, and only when the
  next reads agree (a RAM clear, not a bad read) do the meters start a new
  baseline.  Games found on the first read after a gap (start with saved meters,
  link or machine back online) are "reconciled".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from adapters.modbus.profile import MAX_READ, Reading, RegisterMap, StatusFlags, status_flags
from selector.events import (
    AnyFloorEvent,
    CardInserted,
    CardRemoved,
    GamePlayed,
    MachineStatus,
    MachineStatusChanged,
)

CONFIRM_READS = 3  # suspicious reads in a row before the meters start a new baseline

Note = Callable[..., None]  # note(kind, n, **context): count an anomaly or reconciled games


@dataclass(frozen=True, slots=True)
class MachineSpec:
    machine: str
    unit: int  # Modbus device id
    start: int  # protocol address of the block's first register
    denomination: int  # minor units per credit


@dataclass(frozen=True, slots=True)
class ReadRequest:
    """One read holding registers request and the blocks in it (offset in the reply, spec)."""

    unit: int
    address: int
    count: int
    blocks: tuple[tuple[int, MachineSpec], ...]


@dataclass(frozen=True, slots=True)
class Limits:
    max_games_jump: int = 5000
    max_wager: int = 1_000_000  # minor units per game, on average over one read
    # games read this long (or more) after the last good read carry that read's time as
    # their span_start: the floor apportions them over the gap (an outage across 08:00);
    # a read on the usual poll cadence is an instant
    span_after_seconds: float = 5.0


def plan_reads(
    specs: Sequence[MachineSpec], span: int, max_gap: int = 16, max_read: int = MAX_READ
) -> list[ReadRequest]:
    """Group blocks of `span` registers into requests: per device id, by address."""
    if span > max_read:
        raise ValueError(f"a block of {span} registers does not fit in one read of {max_read}")
    out: list[ReadRequest] = []
    ordered = sorted(specs, key=lambda s: (s.unit, s.start))
    cur: list[MachineSpec] = []

    def close() -> None:
        if cur:
            first = cur[0].start
            count = cur[-1].start + span - first
            blocks = tuple((s.start - first, s) for s in cur)
            out.append(ReadRequest(cur[0].unit, first, count, blocks))
            cur.clear()

    for s in ordered:
        if cur:
            last = cur[-1]
            fits = s.start + span - cur[0].start <= max_read
            near = s.start - (last.start + span) <= max_gap
            if s.unit != last.unit or not fits or not near:
                close()
        cur.append(s)
    close()
    return out


def spread(total: int, n: int) -> list[int]:
    """`total` over `n` parts as evenly as integers go; the first parts take the remainder."""
    if n <= 0:
        return []
    base, extra = divmod(max(total, 0), n)
    return [base + 1 if i < extra else base for i in range(n)]


def meter_delta(new: int, old: int, modulus: int) -> tuple[int, bool]:
    """(new - old, rolled over): across one roll-over to 0; negative means it went back."""
    d = new - old
    if d < 0 and old - new > modulus // 2:
        return d + modulus, True
    return d, False


def machine_status(flags: StatusFlags) -> MachineStatus:
    """offline > out_of_service > door_open > online (as for SAS)."""
    if not flags.online:
        return MachineStatus.OFFLINE
    if flags.out_of_service:
        return MachineStatus.OUT_OF_SERVICE
    if flags.door_open:
        return MachineStatus.DOOR_OPEN
    return MachineStatus.ONLINE


class MachineTracker:
    """One machine's last known status, card and accounted meters."""

    def __init__(
        self,
        spec: MachineSpec,
        rmap: RegisterMap,
        source: str,
        *,
        limits: Limits | None = None,
        saved: dict[str, Any] | None = None,
        note: Note | None = None,
    ) -> None:
        self.spec = spec
        self.rmap = rmap
        self.source = source
        self.limits = limits or Limits()
        self._note = note
        self.unit_value = spec.denomination if rmap.meter_units == "credits" else 1
        self.games_mod = rmap.games_played.modulus
        self.coin_mod = rmap.coin_in.modulus
        self.win_mod = rmap.win.modulus
        self.status: MachineStatus | None = None
        self.flags: StatusFlags | None = None
        self.card: str | None = None  # None: unknown (start without state), "": no card
        self.games: int | None = None
        self.coin: int | None = None
        self.win: int | None = None
        self.era = 0
        self.suspect = 0
        self.catching_up = False
        self.dirty = False
        self.read_at: datetime | None = None  # the last good meter read
        if saved:
            self.games = int(saved["games"])
            self.coin = int(saved["coin_in"])
            self.win = None if saved.get("win") is None else int(saved["win"])
            self.era = int(saved.get("era", 0))
            at = saved.get("at")
            self.read_at = datetime.fromisoformat(at) if isinstance(at, str) else None
            card = saved.get("card")
            self.card = card if isinstance(card, str) else None
            self.catching_up = True

    # ------------------------------------------------------------------ public

    def saved(self) -> dict[str, Any] | None:
        """What a restart needs to produce the games played while it was down."""
        if self.games is None or self.coin is None:
            return None
        return {
            "games": self.games,
            "coin_in": self.coin,
            "win": self.win,
            "era": self.era,
            "card": self.card,
            "at": None if self.read_at is None else self.read_at.isoformat(),
        }

    def lost(self, ts: datetime) -> list[AnyFloorEvent]:
        """The gateway stopped answering for this machine: offline, reconcile on return."""
        if self.games is not None:
            self.catching_up = True
        self.flags = None
        return self._set_status(MachineStatus.OFFLINE, ts)

    def update(self, r: Reading, ts: datetime) -> list[AnyFloorEvent]:
        """Events for what changed since the last read (fields that are None are skipped)."""
        flags = status_flags(self.rmap, r.status) if self._has_status(r) else None
        out: list[AnyFloorEvent] = []
        if flags is not None:
            self._edges(flags)
            self.flags = flags
            out += self._set_status(machine_status(flags), ts)
            if not flags.online:  # the gateway lost the machine: its registers are stale
                if self.games is not None:
                    self.catching_up = True
                return out
        elif self.status is None or self.status == MachineStatus.OFFLINE:
            out += self._set_status(MachineStatus.ONLINE, ts)
        pre, post = self._card(r.card, ts)
        out += pre
        out += self._meters(r, ts)
        out += post
        return out

    # --------------------------------------------------------------- status

    def _has_status(self, r: Reading) -> bool:
        return "status" not in self.rmap.absent and r.status is not None

    def _edges(self, flags: StatusFlags) -> None:
        old = self.flags
        for kind in ("tilt", "handpay"):
            if getattr(flags, kind) and not (old is not None and getattr(old, kind)):
                self._count(kind, 1)

    def _set_status(self, st: MachineStatus, ts: datetime) -> list[AnyFloorEvent]:
        if st == self.status:
            return []
        self.status = st
        m = self.spec.machine
        eid = f"mb-{m}-{st.value}-{int(ts.timestamp() * 1000)}"
        return [MachineStatusChanged(event_id=eid, source=self.source, ts=ts, machine=m, status=st)]

    # ----------------------------------------------------------------- card

    def _card(
        self, card: str | None, ts: datetime
    ) -> tuple[list[AnyFloorEvent], list[AnyFloorEvent]]:
        """(events before this read's games, events after them)."""
        if card is None or card == (self.card or ""):
            if card is not None:
                self.card = card
            return [], []
        old = self.card or ""
        self.card = card
        self.dirty = True
        m = self.spec.machine
        ms = int(ts.timestamp() * 1000)

        def removed() -> CardRemoved:
            return CardRemoved(
                event_id=f"mb-{m}-out-{old}-{ms}", source=self.source, ts=ts, machine=m, card=old
            )

        def inserted() -> CardInserted:
            return CardInserted(
                event_id=f"mb-{m}-in-{card}-{ms}", source=self.source, ts=ts, machine=m, card=card
            )

        if old and card:  # swapped between two reads: the games go to the new card
            return [removed(), inserted()], []
        if card:  # games read with a card-in were played by that card
            return [inserted()], []
        return [], [removed()]  # games read with a card-out were played before it

    # --------------------------------------------------------------- meters

    def _meters(self, r: Reading, ts: datetime) -> list[AnyFloorEvent]:
        g, c = r.games_played, r.coin_in
        if g is None or c is None:
            return []
        w = r.win if "win" not in self.rmap.absent else None
        if self.games is None or self.coin is None:
            self._baseline(g, c, w)
            self.read_at = ts
            return []
        dg, g_wrapped = meter_delta(g, self.games, self.games_mod)
        dc, c_wrapped = meter_delta(c, self.coin, self.coin_mod)
        if dg < 0 or dc < 0:
            return self._suspicious(g, c, w, "meters_went_back", games=g, coin_in=c)
        if dg > 0 and (
            dg > self.limits.max_games_jump or dc * self.unit_value > dg * self.limits.max_wager
        ):
            return self._suspicious(g, c, w, "meters_implausible", games=g, coin_in=c)
        self.suspect = 0
        since = self._span_start(ts)
        self.read_at = ts
        if dg == 0:
            return []  # coin-in without a game yet (or nothing): counted with the next game
        if g_wrapped or c_wrapped:
            self._count("meter_rollover", 1, games=g, coin_in=c)
        wagers = self._wagers(dc, dg, r.last_wager)
        wins = self._wins(w, dg)
        reconciled = self.catching_up
        first = self.games + 1
        m = self.spec.machine
        era = f"e{self.era}-" if self.era else ""
        source = f"{self.source}:reconciled" if reconciled else self.source
        out: list[AnyFloorEvent] = []
        for i in range(dg):
            n = (first + i) % self.games_mod
            out.append(
                GamePlayed(
                    event_id=f"mb-{m}-{era}g{n}",
                    source=source,
                    ts=ts,
                    machine=m,
                    wager=wagers[i] * self.unit_value,
                    win=wins[i] * self.unit_value,
                    span_start=since,
                )
            )
        if reconciled:
            self._count("reconciled_games", dg, games_meter=g)
        self.games, self.coin = g, c
        if w is not None:
            self.win = w
        self.catching_up = False
        self.dirty = True
        return out

    def _span_start(self, ts: datetime) -> datetime | None:
        """The last good read, when this read's games may have been played long before
        it (an outage, a restart, a missed poll); None: they count at this read."""
        at = self.read_at
        if at is None or at >= ts:
            return None
        return at if (ts - at).total_seconds() >= self.limits.span_after_seconds else None

    def _wagers(self, dc: int, dg: int, last: int | None) -> list[int]:
        """Coin-in over the games; the last game gets the last-wager register when it fits."""
        if dg == 1:
            return [dc]
        if last is not None and "last_wager" not in self.rmap.absent and 0 <= last <= dc:
            return [*spread(dc - last, dg - 1), last]
        return spread(dc, dg)

    def _wins(self, w: int | None, dg: int) -> list[int]:
        if w is None or self.win is None:
            return [0] * dg
        dw, _ = meter_delta(w, self.win, self.win_mod)
        if dw < 0:
            self._count("meters_went_back", 1, win=w)
            return [0] * dg
        return spread(dw, dg)

    def _baseline(self, g: int, c: int, w: int | None) -> None:
        self.games, self.coin, self.win = g, c, w
        self.suspect = 0
        self.catching_up = False
        self.dirty = True

    def _suspicious(
        self, g: int, c: int, w: int | None, kind: str, **context: Any
    ) -> list[AnyFloorEvent]:
        """Hold a bad-looking read back; a run of them is a RAM clear: start a new baseline."""
        self.suspect += 1
        if self.suspect == 1:
            self._count(kind, 1, **context)
        if self.suspect >= CONFIRM_READS:
            self.era += 1  # the games meter may count the same numbers again: new ids
            self._baseline(g, c, w)
            self._count("meters_rebaselined", 1, **context)
        return []

    def _count(self, kind: str, n: int, **context: Any) -> None:
        if self._note is not None:
            self._note(kind, n, machine=self.spec.machine, **context)

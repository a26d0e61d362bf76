"""The ticket ledger: every credit and entry is a record, and the state is their fold.

Points come in on the floor's ingest path (`points_sink`, or `credit_points` with the
tier); complimentary, app-bonus, RAPS-winner and external credits and entries come in
as calls.  Each change is made by one record, applied to `Balances` and queued for the
journal (`take_records`), so `replay(records)` rebuilds credits and entries exactly.
Points below the next ticket are not records: `snapshot`/`restore` carry them across
a restart, taken with the floor's snapshot.  Nothing here reads a clock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, TypeVar
from zoneinfo import ZoneInfo

from selector.events import Tier
from selector.floor import PointsCell, PointsSink
from selector.tickets.accrual import PointsAccrual, TierOf
from selector.tickets.balances import Balances
from selector.tickets.entry import PlayerStanding, Refusal, RefusalReason
from selector.tickets.program import TicketBin, TicketPlan
from selector.tickets.records import (
    Cause,
    Channel,
    TicketRecord,
    TicketsCredited,
    TicketsEntered,
    raps_ref,
    receipt_number,
)
from selector.tickets.status import DrawStatus, draw_status, points_to_next

R = TypeVar("R", TicketsCredited, TicketsEntered)


def _aware(at: datetime) -> None:
    """Entry windows are compared in epoch seconds: a naive time would be the host's zone."""
    if at.tzinfo is None or at.utcoffset() is None:
        raise ValueError("tickets: times must be timezone-aware")


class TicketLedger:
    """Tickets of every card in every bin of a plan."""

    def __init__(self, plan: TicketPlan, tier_of: TierOf | None = None) -> None:
        """`tier_of(card)` is asked for a card's tier only when its points may have earned
        a ticket (every few dozen games), e.g. Floor.tier_of; without it only
        `credit_points`, which takes the tier, credits points tickets."""
        self.plan = plan
        self._zone = ZoneInfo(plan.tz)
        self._books = Balances(plan)
        self._outbox: list[TicketRecord] = []
        self.refusals: Counter[str] = Counter()
        self._accrual = PointsAccrual(plan.bins.values(), self._settle_points, tier_of)
        # the floor's points_sink: a bound method, no wrapper between floor and accrual
        self.points_sink: PointsSink = self._accrual.feed

    # ----------------------------------------------------------------- earning

    def credit_points(
        self, card: str, tier: Tier | None, epoch: float, milli: int, event_id: str
    ) -> None:
        """Points earned at epoch (integer milli-points) by a card of that tier."""
        if milli < 0:
            raise ValueError(f"event {event_id!r}: milli-points must be >= 0")
        cell = self._accrual.cells.get(card) or PointsCell(card)
        self._accrual.feed(cell, epoch, milli, event_id, tier)

    def _settle_points(self, bin_id: str, card: str, due: int, event_id: str, epoch: float) -> None:
        have = self._books.from_points.get(bin_id, {}).get(card, 0)
        if due > have:
            at = datetime.fromtimestamp(epoch, self._zone)
            self._commit(TicketsCredited(
                card=card, bin_id=bin_id, tickets=due - have, cause=Cause.POINTS, ref=event_id,
                at=at,
            ))  # fmt: skip

    def grant_bonuses(
        self, card: str, bin_id: str, tier: Tier, at: datetime, app_registered: bool = False
    ) -> list[TicketsCredited]:
        """Complimentary tickets and, for app-registered members, app-bonus tickets, once per
        card and bin (granting again adds nothing).  `enter` grants them itself."""
        b = self._bin(bin_id)
        program = b.program
        out: list[TicketsCredited] = []
        if tier not in program.tiers:
            return out
        rules = [(Cause.COMPLIMENTARY, program.complimentary)]
        if app_registered:
            rules.append((Cause.APP_BONUS, program.app_bonus))
        for cause, table in rules:
            n = table.get(tier, 0)
            if n and not self._books.granted(b.bin_id, card, cause):
                rec = TicketsCredited(
                    card=card, bin_id=b.bin_id, tickets=n, cause=cause,
                    ref=f"{cause.value}:{tier.value}", at=at,
                )  # fmt: skip
                out.append(self._commit(rec))
        return out

    def credit_raps_winner(
        self, card: str, tier: Tier, session_id: str, pick_no: int, at: datetime
    ) -> list[TicketsCredited]:
        """Bonus tickets for an awarded RAPS pick, per program to its next draw whose entry
        is still to close; once per (session, pick) and program."""
        _aware(at)
        ref = raps_ref(session_id, pick_no)
        out: list[TicketsCredited] = []
        for program in self.plan.programs:
            n = program.raps_winner_bonus.get(tier, 0)
            if not n or self._books.raps_credited(ref, program.program_id):
                continue
            b = self.plan.next_bin(program.program_id, at.timestamp())
            if b is not None:
                rec = TicketsCredited(
                    card=card, bin_id=b.bin_id, tickets=n, cause=Cause.RAPS_WINNER, ref=ref, at=at
                )
                out.append(self._commit(rec))
        return out

    def credit_external(
        self, card: str, bin_id: str, tickets: int, event_id: str, at: datetime
    ) -> TicketsCredited | Refusal:
        """A credit from the casino system's own ticket feed; a repeated event id returns
        the first credit and adds nothing."""
        prior = self._books.externals.get(event_id)
        if prior is not None:
            return prior
        b = self.plan.resolve(bin_id)
        if b is None:
            return self._refuse(RefusalReason.UNKNOWN_DRAW, f"no draw or bin {bin_id!r}")
        try:
            rec = TicketsCredited(
                card=card, bin_id=b.bin_id, tickets=tickets, cause=Cause.EXTERNAL, ref=event_id,
                at=at,
            )  # fmt: skip
        except ValueError as exc:
            return self._refuse(RefusalReason.INVALID_CREDIT, str(exc))
        return self._commit(rec)

    # ------------------------------------------------------------------- entry

    def available(self, card: str, bin_id: str) -> int:
        """Tickets credited to the card in the bin and not yet entered (cap applied)."""
        return self._books.free(self._bin(bin_id).bin_id, card)

    def enter(
        self, card: str, bin_id: str, channel: Channel | str, request_id: str, at: datetime,
        player: PlayerStanding,
    ) -> TicketsEntered | Refusal:  # fmt: skip
        """Activate everything the card has available in the bin (named by its id or by one
        of its draws); tickets earned later can be entered later, on another receipt.

        A retry with the same request id returns the first entry and records nothing; the
        same id with another card, bin or channel is refused.
        """
        channel = Channel(channel)
        if not request_id:
            raise ValueError("request_id must not be empty")
        _aware(at)
        b = self.plan.resolve(bin_id)
        prior = self._books.requests.get(request_id)
        if prior is not None:
            asked = (card, b.bin_id if b is not None else bin_id, channel)
            if (prior.card, prior.bin_id, prior.channel) == asked:
                return prior
            return self._refuse(
                RefusalReason.REQUEST_ID_REUSED,
                f"request id {request_id!r} was used for another entry",
            )
        if b is None:
            return self._refuse(RefusalReason.UNKNOWN_DRAW, f"no draw or bin {bin_id!r}")
        barred = player.barred()
        if barred is not None:
            return self._refuse(barred.reason, barred.detail)
        tier = player.tier
        assert tier is not None  # barred() refuses unknown players
        if tier not in b.program.tiers:
            return self._refuse(
                RefusalReason.TIER_NOT_IN_PROGRAM,
                f"tier {tier.value} does not take part in {b.program.program_id!r}",
            )
        if not b.entry_open(at.timestamp()):
            return self._refuse(
                RefusalReason.OUTSIDE_ENTRY_WINDOW,
                f"entries for {b.bin_id!r} are taken {self._windows(b)}; not at {at.isoformat()}",
            )
        if channel is Channel.APP and not player.playing_now:
            return self._refuse(
                RefusalReason.NOT_PLAYING,
                "app entries need the player playing a slot or a table now",
            )
        self.grant_bonuses(card, b.bin_id, tier, at, player.app_registered)
        n = self._books.free(b.bin_id, card)
        if n == 0:
            return self._refuse(
                RefusalReason.NOTHING_TO_ENTER, f"no tickets to enter in {b.bin_id!r}"
            )
        rec = TicketsEntered(
            card=card, bin_id=b.bin_id, tickets=n, channel=channel, request_id=request_id,
            receipt_no=receipt_number(b.bin_id, self._books.seq[b.bin_id] + 1), at=at,
        )  # fmt: skip
        return self._commit(rec)

    def entered_by_card(self, bin_id: str) -> dict[str, int]:
        """The bin as card -> tickets entered (every count > 0), unsorted: a draw's open
        sorts it once."""
        entered = self._books.entered.get(self._bin(bin_id).bin_id, {})
        return {card: n for card, n in entered.items() if n > 0}

    def entries(self, bin_id: str) -> list[tuple[str, int]]:
        """The bin: (card, tickets entered) in canonical (card) order, every count > 0."""
        entered = self._books.entered.get(self._bin(bin_id).bin_id, {})
        return [(card, entered[card]) for card in sorted(entered) if entered[card] > 0]

    # ----------------------------------------------------------------- queries

    def credited(self, card: str, bin_id: str) -> int:
        return self._books.credited.get(self._bin(bin_id).bin_id, {}).get(card, 0)

    def entered(self, card: str, bin_id: str) -> int:
        return self._books.entered.get(self._bin(bin_id).bin_id, {}).get(card, 0)

    def credited_from_points(self, card: str, bin_id: str) -> int:
        return self._books.from_points.get(self._bin(bin_id).bin_id, {}).get(card, 0)

    def bonus_due(self, card: str, bin_id: str, tier: Tier | None, app_registered: bool) -> int:
        """Complimentary and app-bonus tickets an entry would grant now."""
        b = self._bin(bin_id)
        if tier is None or tier not in b.program.tiers:
            return 0
        rules = [(Cause.COMPLIMENTARY, b.program.complimentary)]
        if app_registered:
            rules.append((Cause.APP_BONUS, b.program.app_bonus))
        return sum(t.get(tier, 0) for c, t in rules if not self._books.granted(b.bin_id, card, c))

    def points_milli(self, card: str, bin_id: str) -> int:
        """Milli-points the card earned in the bin's earning interval so far."""
        return self._accrual.points(self._bin(bin_id).bin_id, card)

    def tier_of(self, card: str) -> Tier | None:
        return self._accrual.tier_of(card) if self._accrual.tier_of is not None else None

    def points_to_next_ticket(
        self, card: str, draw_id: str, at: datetime, tier: Tier | None = None
    ) -> float | None:
        """Points still needed for the card's next ticket of that draw (or bin); None when
        its tier earns no tickets from points there or the earning period is over at `at`."""
        return points_to_next(self, card, self._bin(draw_id).bin_id, at, tier)

    def status(
        self, card: str, at: datetime, tier: Tier | None = None, app_registered: bool = False
    ) -> list[DrawStatus]:
        """ "Am I qualified": every draw not yet held whose earning period has begun."""
        return draw_status(self, card, at, tier, app_registered)

    # ----------------------------------------------------------------- records

    def take_records(self) -> list[TicketRecord]:
        """The records made since the last call, in order: journal them in this order,
        before answering an entry (an entry relies on the credits queued before it)."""
        out, self._outbox = self._outbox, []
        return out

    def apply(self, record: TicketRecord) -> None:
        """Fold one journaled record in (restart); ValueError if it cannot follow the others."""
        reason = self._books.check(record)
        if reason is not None:
            raise ValueError(f"tickets record cannot be applied: {reason}")
        self._books.add(record)

    def replay(self, records: Iterable[TicketRecord]) -> None:
        for i, rec in enumerate(records, start=1):
            try:
                self.apply(rec)
            except ValueError as exc:
                raise ValueError(f"record {i}: {exc}") from None

    def snapshot(self, now: float) -> dict[str, Any]:
        """Points toward tickets (not in any record), JSON-ready: take it with the floor's."""
        return self._accrual.snapshot(now)

    def restore(self, snap: Mapping[str, Any]) -> None:
        self._accrual.restore(snap)

    def replan(self, plan: TicketPlan, now: float) -> None:
        """Go on under another plan (draws added, moved or dropped on the calendar page):
        credits and entries stay as recorded, points toward tickets are carried into the
        new bins' earning intervals (matched by their start, as at a restart), and every
        card's cell is retired, so its next point comes to the new accrual (the floor
        gets `points_sink` anew)."""
        old = self._accrual
        fresh = not old.cells and not any(layer for g in old.groups for layer in g.layers)
        snap = old.snapshot(now)
        for cell in old.cells.values():
            cell.hi, cell.room, cell.granted, cell.scope = -1.0, 0, 0, None
        self.plan = plan
        self._books.plan = plan
        self._accrual = PointsAccrual(plan.bins.values(), self._settle_points, old.tier_of)
        if not fresh:  # (a fresh one, at start, stays fresh for the snapshot's restore)
            self._accrual.restore(snap)
            self._accrual.settle_open(now, f"calendar:{now:.0f}")  # points earned so far
        self.points_sink = self._accrual.feed

    # --------------------------------------------------------------- internals

    def _commit(self, rec: R) -> R:
        self.apply(rec)
        self._outbox.append(rec)
        return rec

    def _refuse(self, reason: RefusalReason, detail: str) -> Refusal:
        self.refusals[reason.value] += 1
        return Refusal(reason, detail)

    def _bin(self, bin_id: str) -> TicketBin:
        b = self.plan.resolve(bin_id)
        if b is None:
            raise KeyError(f"unknown draw or bin {bin_id!r}")
        return b

    def _windows(self, b: TicketBin) -> str:
        def hm(t: float) -> str:
            return datetime.fromtimestamp(t, self._zone).strftime("%Y-%m-%d %H:%M")

        return ", ".join(f"{hm(o)}-{hm(c)}" for o, c in b.windows)

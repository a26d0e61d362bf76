"""The ticket desk: the core's ticket ledger, made durable before anyone is told.

Every credit and every entry the ledger makes is a record; the desk chains them into
the site's journal, one stream per bin (`session_id` "tickets:<bin>"), and answers a
kiosk or the app only once its entry's record is committed.  Points credits cite the
floor event that earned them, so a write that holds one flushes the floor log first: a
journaled credit never names an event a crash could take back.

Concurrent entries share commits: each caller takes the journal lock and writes
whatever is pending, so under load many receipts ride on one commit.  A failed commit
keeps its records pending (the ledger in memory already holds them) and the next
write retries them first; a caller whose record is not durable gets JournalUnavailable,
and its retry with the same request id returns the same entry once it is.

After a restart the ledger comes back from its points snapshot (taken with the floor's),
then its journaled records, then the floor log's tail as the floor replays it; RAPS
awards whose winner bonus did not reach the journal are credited again (idempotent by
session and pick).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from raps.chain import Entry, Head
from raps.logs import get_logger
from raps.metrics import Metrics
from raps.storage_health import Outage, StorageUnavailable
from raps.store.journal import JournalStore
from selector.events import TicketsGranted, Tier
from selector.floor import Floor, PointsSink
from selector.records import Actor, Record
from selector.session import DrawSession
from selector.tickets import (
    Cause,
    Channel,
    DrawStatus,
    PlayerStanding,
    Refusal,
    TicketLedger,
    TicketPlan,
    TicketRecord,
    TicketsCredited,
    TicketsEntered,
    record_from_dict,
    verification_code,
)

STREAM_PREFIX = "tickets:"
LEDGER_ACTOR = Actor.system("tickets")


def stream_of(bin_id: str) -> str:
    """The journal stream (its `session_id` column) of one bin's records."""
    return STREAM_PREFIX + bin_id


def _cites_floor_events(rec: TicketRecord) -> bool:
    """A points credit names the floor event that earned it: the floor log goes first."""
    return isinstance(rec, TicketsCredited) and rec.cause is Cause.POINTS


class TicketRefused(Exception):
    """The rules refuse an entry; nothing was recorded."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(f"{refusal.reason.value}: {refusal.detail}")
        self.reason = refusal.reason.value
        self.detail = refusal.detail


class TicketsUnavailable(StorageUnavailable):
    """The journal could not commit the entry yet; retry with the same request id."""


@dataclass(frozen=True, slots=True)
class EntryResult:
    """An entry made durable: what the receipt prints, and the journal head after it."""

    entry: TicketsEntered
    code: str  # verification code from the hash of the journal entry holding the record
    seq: int  # that journal entry
    head: Head | None


class TicketDesk:
    """One site's tickets: the ledger, its journal streams and its counters."""

    def __init__(
        self,
        plan: TicketPlan,
        journal: JournalStore,
        lock: asyncio.Lock,
        metrics: Metrics,
        flush_floor_log: Callable[[], Awaitable[None]],
        journal_health: Outage,
    ) -> None:
        self.plan = plan
        self.journal_health = journal_health  # the journal's outage: logged once a change
        self.journal = journal
        self.metrics = metrics
        self.floor: Floor | None = None  # attach(): the floor feeds the ledger its points
        self.ledger = TicketLedger(plan, tier_of=self._tier_of)
        self._lock = lock
        self._flush_floor_log = flush_floor_log
        self._promotion = {b.bin_id: b.program.promotion_id for b in plan.bins.values()}
        self._zone = ZoneInfo(plan.tz)
        # records taken from the ledger, not yet committed, with their local sequence
        self._pending: list[tuple[int, TicketRecord, Actor]] = []
        self._taken = 0
        self._durable = 0
        # an entry's journal entry, by request id: receipts print its code
        self._written: dict[str, Entry] = {}
        self._receipts: dict[str, TicketsEntered] = {}
        self._tally: dict[str, dict[str, list[int]]] | None = None  # see _tallies
        self._entrants: dict[str, set[str]] = {}
        self.skipped: Counter[str] = Counter()  # journaled records that would not restore, by bin
        # told of every committed entry, after its commit (the stage: late entries)
        self.entry_listeners: list[Callable[[TicketsEntered], None]] = []
        self.log = get_logger(component="tickets")

    @property
    def active(self) -> bool:
        """Whether any ticket draw is configured (else the floor needs no points sink)."""
        return bool(self.plan.bins)

    def points_sink(self) -> PointsSink | None:
        """The floor's points sink, or None when no ticket draw is configured."""
        return self.ledger.points_sink if self.active else None

    def attach(self, floor: Floor) -> None:
        self.floor = floor

    def _floor(self) -> Floor:
        if self.floor is None:
            raise RuntimeError("the ticket desk has no floor attached")
        return self.floor

    def _tier_of(self, card: str) -> Tier | None:
        return self._floor().tier_of(card)

    def replan(self, plan: TicketPlan, now: float) -> None:
        """The ticket calendars changed on the calendar page: go on under `plan` (the
        ledger keeps every credit and entry; raps.ticket_calendar_desk has refused any
        change that would move or drop a draw with entries)."""
        self.plan = plan
        self.ledger.replan(plan, now)
        self._promotion = {b.bin_id: b.program.promotion_id for b in plan.bins.values()}
        self._tally = None  # counted again from the ledger when next asked
        self._floor().set_points_sink(self.points_sink())
        self.metrics.start_at_zero(sorted(plan.bins))

    # ------------------------------------------------------------------ restore

    def snapshot(self, now: float) -> dict[str, Any]:
        return self.ledger.snapshot(now)

    def restore_points(self, snap: Mapping[str, Any] | None) -> None:
        """The points toward tickets saved with the floor snapshot (before the tail)."""
        if snap:
            self.ledger.restore(snap)

    async def restore_records(self) -> int:
        """Fold every journaled record of the plan's bins in; returns how many."""
        n = 0
        for bin_id in self.plan.bins:
            for e in await self.journal.session_entries(stream_of(bin_id)):
                record = e.record
                try:
                    rec = record_from_dict(record["data"])
                    self.ledger.apply(rec)
                except (KeyError, ValueError) as exc:
                    self.skipped[bin_id] += 1
                    self.log.error("tickets record not restored", seq=e.seq, error=str(exc))
                    continue
                if isinstance(rec, TicketsEntered):
                    self._written[rec.request_id] = e
                    self._receipts[rec.receipt_no] = rec
                n += 1
        return n

    def reconcile_awards(self, sessions: Iterable[DrawSession]) -> int:
        """Credit the winner bonus of every RAPS award once: after a restart, those whose
        credit did not reach the journal before the crash."""
        return sum(len(self.raps_awards(s.records)) for s in sessions)

    # ------------------------------------------------------------------ credits

    def raps_awards(self, records: Iterable[Record]) -> list[TicketsCredited]:
        """RAPS picks were awarded: their winners' bonus tickets, once per session and pick
        (journaled at the next sync).  A rehearsal's awards earn nothing: training never
        touches a live bin (every record of a rehearsal says so)."""
        out: list[TicketsCredited] = []
        for r in records:
            if r.type != "pick.awarded" or r.data.get("rehearsal"):
                continue
            card = r.data["card"]
            tier = self._floor().tier_of(card)
            if tier is not None:
                out += self.ledger.credit_raps_winner(
                    card, tier, r.session_id, r.data["pick"], r.at
                )
        return out

    def external(self, ev: TicketsGranted) -> str | None:
        """A credit from the casino's own ticket feed; None, or the refusal reason."""
        got = self.ledger.credit_external(ev.card, ev.bin_id, ev.tickets, ev.event_id, ev.ts)
        if isinstance(got, Refusal):
            self.metrics.ticket_refusals.labels(got.reason.value).inc()
            return got.reason.value
        return None

    # -------------------------------------------------------------------- entry

    def standing(self, card: str, app_registered: bool = False) -> PlayerStanding:
        return PlayerStanding.from_profile(
            self._floor().profile(card),
            app_registered=app_registered,
            playing_now=self._floor().playing(card),
        )

    async def enter(
        self,
        card: str,
        draw: str,
        channel: Channel,
        request_id: str,
        actor: Actor,
        at: datetime,
        app_registered: bool = False,
    ) -> EntryResult:
        """Activate the card's available tickets into the draw's bin, durably.

        Raises TicketRefused (nothing recorded) or TicketsUnavailable (retry: the same
        request id gives the same entry once it is committed).
        """
        at = at.astimezone(self._zone)  # records and receipts read in site time
        got = self.ledger.enter(
            card, draw, channel, request_id, at, self.standing(card, app_registered)
        )
        if isinstance(got, Refusal):
            self.metrics.ticket_refusals.labels(got.reason.value).inc()
            raise TicketRefused(got)
        upto = self._take(actor)
        await self.sync(upto)
        written = self._written.get(got.request_id)
        if written is None:  # pragma: no cover - sync() raised instead
            raise TicketsUnavailable("the entry is not committed yet")
        return EntryResult(got, verification_code(written.hash), written.seq, self.journal.head)

    def has_request(self, request_id: str) -> bool:
        """Whether an entry with this request id is already committed (a retry)."""
        return request_id in self._written

    def receipt(self, receipt_no: str) -> EntryResult | None:
        """A committed entry by its receipt number, with its verification code."""
        rec = self._receipts.get(receipt_no)
        if rec is None:
            return None
        written = self._written[rec.request_id]
        return EntryResult(rec, verification_code(written.hash), written.seq, self.journal.head)

    def status(self, card: str, at: datetime, app_registered: bool = False) -> list[DrawStatus]:
        return self.ledger.status(card, at, app_registered=app_registered)

    # ---------------------------------------------------------------- journaling

    def _take(self, actor: Actor = LEDGER_ACTOR) -> int:
        """Move the ledger's new records to the pending list; the last local sequence."""
        for rec in self.ledger.take_records():
            self._taken += 1
            who = actor if isinstance(rec, TicketsEntered) else LEDGER_ACTOR
            self._pending.append((self._taken, rec, who))
        return self._taken

    async def sync(self, upto: int | None = None) -> None:
        """Commit every pending record (up to `upto` at least) in one journal append.

        Points credits cite floor events, which must be durable first: the floor log is
        flushed before the journal lock is taken, so entries queued behind the lock do
        not wait for it too; under the lock only credits made since need another flush.
        """
        upto = self._take() if upto is None else max(upto, self._take())
        if self._durable >= upto:
            return
        covered = 0  # credits up to this local sequence cite events already flushed
        mark = self._taken
        if any(_cites_floor_events(r) for _, r, _ in self._pending):
            try:
                await self._flush_floor_log()
                covered = mark
            except Exception:
                covered = 0  # flushed again (and the failure reported) under the lock
        async with self._lock:
            if self._durable >= upto:
                return  # another caller's commit carried these records
            self._take()
            batch = list(self._pending)
            if any(_cites_floor_events(r) for seq, r, _ in batch if seq > covered):
                try:  # the floor log's outage is logged by the service
                    await self._flush_floor_log()
                except Exception as e:
                    raise TicketsUnavailable("the floor log could not be written; retry") from e
            try:
                entries = await self.journal.append(
                    [self._journal_record(r, a) for _, r, a in batch]
                )
            except Exception as e:
                self.metrics.journal_failures.inc()
                self.journal_health.failed(e, records=len(batch))  # kept for the retry
                raise TicketsUnavailable("the journal could not be written; retry") from e
            self.journal_health.ok()
            del self._pending[: len(batch)]
            self._durable = batch[-1][0]
            self._recorded(batch, entries)

    def _journal_record(self, rec: TicketRecord, actor: Actor) -> dict[str, Any]:
        data = rec.to_dict()
        data["promotion_id"] = self._promotion.get(rec.bin_id, "")
        return Record(
            type=data["type"], session_id=stream_of(rec.bin_id), at=rec.at, actor=actor, data=data
        ).to_dict()

    def _recorded(self, batch: list[tuple[int, TicketRecord, Actor]], entries: list[Entry]) -> None:
        m = self.metrics
        for (_, rec, _), entry in zip(batch, entries, strict=True):
            if isinstance(rec, TicketsEntered):
                self._written[rec.request_id] = entry
                self._receipts[rec.receipt_no] = rec
                self._count_entry(rec)
                for listener in self.entry_listeners:
                    listener(rec)
                m.tickets_entered.labels(rec.bin_id, rec.channel.value).inc(rec.tickets)
                m.ticket_entries.labels(rec.bin_id, rec.channel.value).inc()
            else:
                m.tickets_credited.labels(rec.bin_id, rec.cause.value).inc(rec.tickets)
        if entries:
            m.journal_head.set(entries[-1].seq)

    # -------------------------------------------------------------------- gauges

    def _tallies(self) -> dict[str, dict[str, list[int]]]:
        """Players and tickets entered per bin and tier ([players, tickets]): counted once
        from the ledger after a start, then kept up to date by every committed entry, so
        gauges and the handheld's polls cost nothing as bins grow."""
        if self._tally is None:
            self._tally = {b: {} for b in self.plan.bins}
            self._entrants = {b: set() for b in self.plan.bins}
            for bin_id in self.plan.bins:
                for card, n in self.ledger.entries(bin_id):
                    row = self._tally[bin_id].setdefault(self._tier_name(card), [0, 0])
                    row[0] += 1
                    row[1] += n
                    self._entrants[bin_id].add(card)
        return self._tally

    def _tier_name(self, card: str) -> str:
        tier = self._floor().tier_of(card)
        return tier.value if tier is not None else "unknown"

    def _count_entry(self, rec: TicketsEntered) -> None:
        if self._tally is None:
            return  # counted from the ledger when first asked
        row = self._tally[rec.bin_id].setdefault(self._tier_name(rec.card), [0, 0])
        entrants = self._entrants[rec.bin_id]
        if rec.card not in entrants:  # the card's first entry in the bin
            entrants.add(rec.card)
            row[0] += 1
        row[1] += rec.tickets

    def update_gauges(self) -> None:
        """Tickets and players per bin and tier, for the dashboards."""
        tickets = self.metrics.ticket_bin_tickets
        players = self.metrics.ticket_bin_players
        for bin_id, rows in self._tallies().items():
            for name, (heads, n) in rows.items():
                tickets.labels(bin_id, name).set(n)
                players.labels(bin_id, name).set(heads)

    def bin_summary(self, bin_id: str) -> dict[str, Any]:
        """Entries and tickets per tier in a bin (the handheld's draw view)."""
        b = self.plan.resolve(bin_id)
        if b is None:
            raise KeyError(bin_id)
        by_tier = {
            name: {"players": heads, "tickets": n}
            for name, (heads, n) in sorted(self._tallies()[b.bin_id].items())
        }
        return {
            "bin_id": b.bin_id,
            "program_id": b.program.program_id,
            "draws": [
                {
                    "draw_id": d.draw_id,
                    "name": d.name or d.draw_id,
                    "at": d.at.isoformat(),
                    "opens": d.opens.isoformat(),
                    "closes": d.closes.isoformat(),
                    "winners": d.winners,
                }
                for d in b.draws
            ],
            "players": sum(r["players"] for r in by_tier.values()),
            "tickets": sum(r["tickets"] for r in by_tier.values()),
            "by_tier": by_tier,
        }

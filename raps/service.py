"""The floor service: the core, its durable journal and its floor log, wired together.

It owns the one `Floor` and the configured draw sessions.  Commands run one at a
time (an asyncio lock): the core decides, the journal commits, and only then is the
outcome returned or published, so nothing is shown that a crash could take back.
On start it restores the floor (snapshot + replay) and every session from the journal
(the closed ones after it is ready: raps.session_restore), unsealing open sessions' seeds
with the credential key; a journal that went back behind its own last commit is refused
whole, and the service then restores and writes nothing (raps.store.headmark).
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from raps.chain import Head
from raps.claim_commands import ClaimCommands
from raps.conditions import Conditions
from raps.config import Config
from raps.draw_publish import Publisher, publish_draw
from raps.games.desk import GameDesk
from raps.gcpolicy import collector_paused
from raps.heads import HeadFeed, HeadSigner
from raps.ingest_batch import INTERNAL_ERROR, apply_batch
from raps.live import Listeners
from raps.logs import get_logger
from raps.metrics import Metrics
from raps.schedule_desk import ScheduleDesk
from raps.seal import SeedSealer
from raps.session_loader import ClosedSession, SessionLoader, SessionRefused
from raps.session_restore import SessionRestore
from raps.session_views import log_fields, session_summary
from raps.signing import SigningKey
from raps.storage_health import (
    FloorLogUnavailable,
    JournalUnavailable,
    StorageHealth,
    StorageUnavailable,
)
from raps.store.database import migrate
from raps.store.floorlog import FloorLog
from raps.store.headmark import HeadMark
from raps.store.journal import JournalRewound, JournalStore
from raps.ticket_calendar_desk import TicketCalendarDesk
from raps.tickets.desk import TicketDesk
from raps.tickets.stage import StageDesk
from raps.witness_client import WitnessClient, registered, signed
from selector.events import AnyFloorEvent, PoolKind, TicketsGranted
from selector.fairness import SEED_BYTES, commitment
from selector.floor import Floor
from selector.records import Actor, Record
from selector.session import (
    Command,
    DrawSession,
    Outcome,
    Prize,
    PrizeKind,
    SessionError,
    SessionState,
)

DEDUPE_WINDOW = 200_000  # event ids remembered for duplicate suppression


class UnknownSession(KeyError):
    pass


@dataclass(frozen=True, slots=True)
class CommandResult:
    outcome: Outcome
    head: Head | None


class Service(ClaimCommands[CommandResult]):
    def __init__(
        self,
        cfg: Config,
        engine: AsyncEngine,
        sealer: SeedSealer,
        metrics: Metrics,
        clock: Callable[[], datetime],
        publisher: Publisher | None = None,
        head_key: SigningKey | None = None,
    ) -> None:
        self.cfg, self.engine, self.sealer = cfg, engine, sealer
        self.metrics, self.clock, self.publisher = metrics, clock, publisher
        self.log = get_logger(site=cfg.site.id)
        mark = HeadMark.for_database(cfg.storage.url, cfg.storage.head_mark_file)
        self.journal = JournalStore(engine, mark, self._journal_refused)
        self.heads = HeadSigner(head_key, cfg.site.id, clock)  # signed heads (raps.heads)
        if publisher is not None:
            topic = f"{cfg.mqtt.topic_prefix}/{cfg.site.id}/journal/head"
            self.journal.committed = HeadFeed(self.heads, publisher, topic).note
        self.floorlog = FloorLog(engine)
        self._lock = asyncio.Lock()
        self._floorlog_lock = asyncio.Lock()
        self._health = StorageHealth(metrics, self.log, clock)  # logged once per change
        self.tickets = TicketDesk(cfg.ticket_plan(), self.journal, self._lock, metrics,
                                  self._flush_floor_log, self._health.journal)  # fmt: skip
        self.floor = Floor(
            cfg.layout(),
            cfg.promotions(),
            cfg.earn_rules(),
            cfg.floor.idle_seconds,
            self.tickets.points_sink(),
            prune_unknown_after_seconds=cfg.floor.prune_unknown_after_seconds,
        )
        self.tickets.attach(self.floor)
        # the independent witness of every draw's request (None: draws open unwitnessed)
        policy = lambda promo: self.floor.promotion(promo).witness_fallback  # noqa: E731
        self.witness = (
            WitnessClient(cfg.witness, cfg.site.id, policy=policy) if cfg.witness else None
        )
        self.stage = StageDesk(cfg, self.tickets, self.journal, self._lock, sealer, metrics,
                               clock, self._health.journal, self.witness)  # fmt: skip
        self.games = GameDesk(cfg.stage_plan(), self.stage, metrics)  # the games after draws
        # whether a draw's condition holds: the digit safe's, from the games' ledger
        self.conditions = self.stage.conditions = Conditions(self.games.safe_cracked)
        self.sessions: dict[str, DrawSession] = {}
        self.deferred: dict[str, ClosedSession] = {}  # closed, restored after the start
        self.planner = ScheduleDesk(
            cfg,
            self.journal,
            self._lock,
            self.floor,
            self.sessions,
            clock,
            metrics,
            self._session_changed,
            self.deferred,
        )
        self.loader = SessionLoader(self.journal, self.planner, sealer)
        self.ticket_calendars = TicketCalendarDesk(cfg, self.planner, self.tickets, self.stage,
                                                   self.games, clock)  # fmt: skip
        self.sources: dict[str, bool] = {}
        self.storage_ok = False
        self._event_seq = 0
        self._unflushed: list[tuple[int, float, AnyFloorEvent]] = []
        self._seen: set[str] = set()
        self._seen_order: deque[str] = deque()
        self._rejection_burst: dict[tuple[str, str], float] = {}
        self.live = Listeners()  # the screens' event streams
        self.subscribe, self.unsubscribe = self.live.subscribe, self.live.unsubscribe
        self.restore = SessionRestore(self.loader, self.journal, self.sessions,
                                      self.deferred, self.tickets, metrics, self.live.notify,
                                      self.log)  # fmt: skip
        self.refused = self.restore.refused  # sessions kept out at restore, and why
        self.ensure = self.restore.ensure  # a deferred session restored before it is used
        # sessions whose last commit failed: the journal, not memory, decides their state
        self._needs_resync: set[str] = set()
        metrics.start_at_zero(sorted(self.tickets.plan.bins))

    # ------------------------------------------------------------------ startup

    async def start(self) -> None:
        await migrate(self.engine)
        try:
            head = await self.journal.load_head()
        except JournalRewound:
            return  # refused, logged: nothing restored, nothing written (raps.daemon)
        with collector_paused():  # what a start builds lives as long as the daemon
            await self.planner.prepare()  # the promotions as the schedule defines them, first
            await self.ticket_calendars.apply(load=False)  # and the ticket draws' calendars
            replayed = await self._restore_floor()
            seeded = await self.planner.load()
            await self._restore_sessions()
            self.loader.store_pools(self.floor, self.sessions.values())
            self.tickets.reconcile_awards(self.sessions.values())
            await self.tickets.sync()
            await self.stage.restore()
            await self.games.restore()
        self.storage_ok = True
        if replayed:
            # a daemon that keeps dying young must not replay an ever longer log
            await self.snapshot_floor()
        self.metrics.journal_head.set(head.seq if head else 0)
        self.log.info("service started", journal_head=str(head) if head else None,
                      floor_events_replayed=replayed, sessions=len(self.sessions),
                      closed_sessions_deferred=len(self.deferred),
                      schedule_records_seeded=seeded)  # fmt: skip
        self.restore.begin()  # last: nothing of the start waits for the closed sessions

    async def _restore_floor(self) -> int:
        snap = await self.floorlog.latest_snapshot()
        # credits and entries are journaled; the tail's points credit only what is not
        await self.tickets.restore_records()
        if snap is not None:
            self._event_seq, body, seen = snap
            self.tickets.restore_points(body.get("tickets"))  # before the floor's cells
            self.floor.restore(body)
            for event_id in seen:  # a publisher replaying old messages is still deduped
                self._remember(event_id)
        replayed = 0
        # a logged event today's checks refuse is counted, logged and skipped, never fatal
        refused = partial(self.reject, "floor-log", "refused_at_replay")
        async for chunk in self.floorlog.events_after(self._event_seq, refused=refused):
            events = [ev for _, ev in chunk]
            for ev in events:
                self._remember(ev.event_id)
                if type(ev) is TicketsGranted:
                    self.tickets.external(ev)
            self.floor.apply_many(ev for ev in events if type(ev) is not TicketsGranted)
            replayed += len(events)
        self._event_seq = await self.floorlog.last_seq()
        return replayed

    async def _restore_sessions(self) -> None:
        """The sessions not closed; the closed ones deferred (raps.session_restore)."""
        await self.restore.load_start(self.planner.live())

    def _journal_refused(self, reason: str) -> None:
        self.metrics.journal_rewound.set(1)
        self.log.error("journal refused", reason=reason)

    # ------------------------------------------------------------------- ingest

    def _remember(self, event_id: str) -> bool:
        """False when the id was seen recently (a duplicate delivery)."""
        if event_id in self._seen:
            return False
        self._seen.add(event_id)
        self._seen_order.append(event_id)
        if len(self._seen_order) > DEDUPE_WINDOW:
            self._seen.discard(self._seen_order.popleft())
        return True

    def ingest(self, events: Sequence[AnyFloorEvent], source: str) -> int:
        """Apply events from one source; returns how many were applied."""
        return sum(1 for reason in self.ingest_detailed(events, source) if reason is None)

    def ingest_detailed(self, events: Sequence[AnyFloorEvent], source: str) -> list[str | None]:
        """Apply events; per event None (applied) or the reason it was rejected.

        One call into the core per batch (raps.ingest_batch); an event the core fails on
        is refused alone. A rejection is counted and logged here; adapters that must keep
        rejected input (a dead-letter topic) use the reasons to forward it.
        """
        now = self.clock().timestamp()

        def fault(ev: AnyFloorEvent, e: Exception) -> None:
            self.reject(source, INTERNAL_ERROR, event_id=ev.event_id, error=type(e).__name__)

        reasons = apply_batch(self.floor, events, self.ingest_room(), self._remember,
                              self._seen.discard, self.tickets.external, fault)  # fmt: skip
        newest = 0.0
        applied = 0
        for ev, reason in zip(events, reasons, strict=True):
            if reason is not None:
                if reason != INTERNAL_ERROR:  # counted by fault, with the error
                    self.reject(source, reason, event_id=ev.event_id)
                continue
            self._event_seq += 1
            self._unflushed.append((self._event_seq, now, ev))
            applied += 1
            if ev.epoch > newest:
                newest = ev.epoch
        if applied:
            self.metrics.events_ingested.labels(source).inc(applied)
            self.metrics.ingest_lag.labels(source).set(max(0.0, now - newest))
            self.metrics.source_last_event.labels(source).set(newest)
        return reasons

    def reject(self, source: str, reason: str, **context: Any) -> None:
        """Count a rejection; log the first of each burst (one line per 10 s per reason)."""
        self.metrics.events_rejected.labels(source, reason).inc()
        key = (source, reason)
        now = time.monotonic()
        if now - self._rejection_burst.get(key, -1e9) >= 10:
            self._rejection_burst[key] = now
            self.log.warning("event rejected", source=source, reason=reason, **context)

    async def flush_events(self) -> None:
        """Write the floor log, then the ticket credits its events earned.  Once it returns
        every event applied so far is durable: the MQTT ingest acknowledges after it."""
        await self._flush_floor_log()
        await self.tickets.sync()

    def ingest_room(self) -> int:
        """Events the service takes before its unwritten backlog reaches its bound."""
        return self.cfg.storage.max_unflushed_events - len(self._unflushed)

    async def _flush_floor_log(self) -> None:
        """Write the events ingested so far. Flushes run one at a time, in order (a later
        batch must never be durable before an earlier one), under their own lock: not the
        journal's, so commands and ticket entries keep committing meanwhile."""
        async with self._floorlog_lock:
            batch, self._unflushed = self._unflushed, []
            try:
                await self.floorlog.append(batch)
            except Exception as e:
                self._unflushed[:0] = batch  # keep them for the next try
                self.storage_ok = False
                self._health.floor_log_written(len(self._unflushed), e)  # logged once a change
                raise FloorLogUnavailable(type(e).__name__) from e
            self.storage_ok = True
            self._health.floor_log_written(len(self._unflushed))

    async def snapshot_floor(self) -> None:
        await self.flush_events()
        snap = self.floor.snapshot()  # no await between here and the seq: they agree
        snap["tickets"] = self.tickets.snapshot(self.clock().timestamp())
        last = self._event_seq
        seen = list(self._seen_order)
        # the snapshot holds points whose ticket credits are not journaled yet, and a
        # restart replays only what follows it: journal those credits before saving it
        await self.tickets.sync()
        try:
            await self.floorlog.save_snapshot(self.clock().timestamp(), last, snap, seen)
        except Exception as e:
            self._health.snapshot.failed(e)  # logged once a change; the next one retries
            raise StorageUnavailable("the floor snapshot could not be written") from e
        self._health.snapshot.ok()

    async def probe_storage(self, timeout: float = 2.0) -> bool:
        """Ask the database directly: a quiet floor writes nothing that would notice."""
        try:
            async with asyncio.timeout(timeout), self.engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
        except Exception as e:
            self._health.database.failed(e)
            self.storage_ok = False
        else:
            self._health.database.ok()
            self.storage_ok = True
        return self.storage_ok

    async def check_ready(self) -> tuple[bool, list[str]]:
        """Readiness with a fresh look at storage (for /readyz)."""
        await self.probe_storage()
        return self.ready()

    def ready(self) -> tuple[bool, list[str]]:
        """Ready when storage and every source work; what is down (floor_log: see docs)."""
        down = [name for name, up in self.sources.items() if not up]
        if self._health.floor_log.down or self.ingest_room() <= 0:
            down.append("floor_log")
        if self.journal.refused is not None:
            down.append("journal")
        return self.storage_ok and not down, down

    def update_pool_gauges(self) -> None:
        self.metrics.ready.set(1 if self.ready()[0] else 0)
        self.metrics.count_floor(self.floor, [p.promotion_id for p in self.planner.promotions()])
        self.tickets.update_gauges()

    def _session_changed(self, session_id: str) -> None:
        """The schedule added, rescheduled or cancelled a session: gauges, screens."""
        self.restore.count()
        self.live.notify(session_id)

    # ----------------------------------------------------------------- commands

    def session(self, session_id: str) -> DrawSession:
        if self.journal.refused is not None:
            raise JournalUnavailable(f"the journal is refused: {self.journal.refused}")
        s = self.sessions.get(session_id)
        if s is None:
            if session_id in self.deferred:  # `ensure` first; a caller that did not
                raise SessionError(f"session {session_id} is closed; its records are being "
                                   "restored after the start: ask again in a moment")  # fmt: skip
            if session_id in self.refused:
                raise SessionError(
                    f"session {session_id} is refused: {self.refused[session_id]}"
                    "; run raps verify and ask the inspector"
                )
            raise UnknownSession(session_id)
        return s

    async def tick(self) -> None:
        """Clock tick: idle players leave pools; winners overdue, excluded or unreached resolve."""
        now = self.clock()
        self.floor.advance(now)
        if self.journal.refused is not None:
            return  # a refused journal takes no timer's record either (raps.store.headmark)
        for sid, s in list(self.sessions.items()):
            if s.timer_due(now):
                async with self._lock:
                    if sid in self._needs_resync:  # a failed commit may have landed
                        await self._resync(sid)
                    s = self.sessions[sid]
                    await self._journaled(s, partial(s.expire, now), None)
        await self.stage.tick()

    async def open(
        self, session_id: str, actor: Actor, command_id: str, override: str | None = None
    ) -> CommandResult:
        self.planner.may_override(actor, override)
        seed = secrets.token_bytes(SEED_BYTES)

        def action(s: DrawSession, cmd: Command, witness: Any) -> tuple[Outcome, Any]:
            if s.answered(command_id) or s.state != SessionState.SCHEDULED:
                return s.open(cmd, bytes(SEED_BYTES)), None  # a retry: replayed, or refused
            self.planner.may_open(session_id)
            outcome = s.open(cmd, seed, override, witness=witness)  # refused outside the window
            nonce, ciphertext = self.sealer.seal(session_id, seed)
            return outcome, (session_id, commitment(seed), nonce, ciphertext)

        return await self._command(
            session_id, actor, command_id, action,
            before=lambda s: registered(self.witness, s, command_id, commitment(seed)),
        )  # fmt: skip

    async def draw(
        self,
        session_id: str,
        actor: Actor,
        command_id: str,
        kind: PoolKind | str,
        override: str | None = None,
    ) -> CommandResult:
        self.planner.may_override(actor, override)
        started = time.perf_counter()
        # two commits: the pool (pick.requested), signed by the witness once durable, then
        # the winner drawn from it: a write refused then cannot get a new pool on the retry
        result = await self._command(
            session_id,
            actor,
            command_id,
            lambda s, cmd, _: (s.request(cmd, kind, override), None),
            then=lambda s, cmd, reply: (s.complete(cmd, kind, reply), None),
            before=lambda s: signed(self.witness, s),
        )
        if not result.outcome.replayed:
            self.metrics.pick_latency.observe(time.perf_counter() - started)
            picked = "no_eligible" if result.outcome.no_eligible else "picked"
            self.metrics.draws.labels(PoolKind(kind).value, picked).inc()
        return result

    async def award(
        self,
        session_id: str,
        actor: Actor,
        command_id: str,
        pick: int,
        amount: int,
        kind: str,
        envelope: str,
    ) -> CommandResult:
        prize = Prize(amount, PrizeKind(kind), envelope)
        return await self._command(
            session_id, actor, command_id, lambda s, cmd, _: (s.award(cmd, pick, prize), None)
        )

    async def void(
        self, session_id: str, actor: Actor, command_id: str, pick: int, reason: str
    ) -> CommandResult:
        return await self._command(
            session_id, actor, command_id, lambda s, cmd, _: (s.void(cmd, pick, reason), None)
        )

    async def close(
        self, session_id: str, actor: Actor, command_id: str, force: bool = False
    ) -> CommandResult:
        return await self._command(
            session_id, actor, command_id, lambda s, cmd, _: (s.close(cmd, force), None)
        )

    async def _command(
        self,
        session_id: str,
        actor: Actor,
        command_id: str,
        action: Callable[[DrawSession, Command, Any], tuple[Outcome, Any]],
        then: Callable[[DrawSession, Command, Any], tuple[Outcome, Any]] | None = None,
        before: Callable[[DrawSession], Awaitable[Any]] | None = None,
    ) -> CommandResult:
        """Steps committed one by one; `before` (awaited) gives the last one its argument."""
        await self.ensure(session_id)
        async with self._lock:
            self.session(session_id)
            if session_id in self._needs_resync:
                await self._resync(session_id)
            s = self.session(session_id)
            cmd = Command(command_id, actor, self.clock())
            holder: dict[str, Any] = {}
            extra = await before(s) if before is not None and then is None else None

            def run() -> list[Record]:
                start = len(s.records)
                try:
                    holder["outcome"], holder["sealed"] = action(s, cmd, extra)
                except SessionError as e:
                    # refused, but what the claim timer did first stands: journal it
                    holder["refused"] = e
                return s.records[start:]

            await self._journaled(s, run, holder)
            if "refused" in holder:
                raise holder["refused"]
            if then is not None and not holder["outcome"].replayed:
                extra = await before(s) if before is not None else None
                action, holder = then, {}
                await self._journaled(s, run, holder)  # run() calls the new action
                if "refused" in holder:
                    raise holder["refused"]
            outcome: Outcome = holder["outcome"]
            return CommandResult(outcome, self.journal.head)

    async def _journaled(
        self, s: DrawSession, run: Callable[[], list[Record]], holder: dict[str, Any] | None
    ) -> None:
        """Run a core step and commit its records; on a failed commit, undo it all."""
        keep = len(s.records)
        new = run()
        if not new:
            return
        sealed = holder.get("sealed") if holder else None
        started = time.perf_counter()
        try:
            entries = await self.journal.append([r.to_dict(plain=False) for r in new], sealed)
        except Exception as e:
            self.metrics.journal_failures.inc()
            self.storage_ok = False
            self._health.journal.failed(e, session=s.session_id)  # logged once a change
            self.sessions[s.session_id] = s.rolled_back(keep)
            self._needs_resync.add(s.session_id)
            raise JournalUnavailable("the journal could not be written; nothing was done") from e
        self.storage_ok = True
        self._health.journal.ok()
        self.metrics.journal_write.observe(time.perf_counter() - started)
        if new[-1].type == "pick.requested" and entries:  # what the witness will sign
            s.note_request_entry(entries[-1].seq, entries[-1].hash)
        head = self.journal.head
        self.metrics.journal_head.set(head.seq if head else 0)
        # the answer waits for the commit only: counting, logging and waking the screens
        # follow on the event loop's next turn, in commit order (about 0.1 ms a pick)
        asyncio.get_running_loop().call_soon(self._recorded, s, new)
        await self._publish(s, new)

    def _recorded(self, s: DrawSession, new: Sequence[Record]) -> None:
        """After a commit: outcome counters, session gauges, log lines, live screens."""
        try:
            self.tickets.raps_awards(new)  # the winners' bonus tickets, if any
            self.metrics.count_outcomes(s, new)
            self.restore.count()
            for rec in new:
                self.log.info(rec.type, **log_fields(rec))
        except Exception:  # bookkeeping must never take the service down
            self.log.exception("bookkeeping after a commit failed", session=s.session_id)
        self.live.notify(s.session_id)

    async def _resync(self, session_id: str) -> None:
        """After a storage failure the journal is the truth: reload the session from it
        (a commit that failed late may still have landed)."""
        try:
            await self._reload(session_id)
        except SessionRefused as e:  # its records fail the restore checks: as at start
            self.restore.refuse(session_id, str(e))
            raise
        except Exception as e:
            self._health.journal.failed(e, session=session_id)
            why = self.journal.refused and f"the journal is refused: {self.journal.refused}"
            raise JournalUnavailable(why or "the journal cannot be read; try again shortly") from e
        self._needs_resync.discard(session_id)
        self.storage_ok = True

    async def _reload(self, session_id: str) -> None:
        await self.journal.load_head()
        self.sessions[session_id] = await self.loader.load_checked(session_id)

    async def _publish(self, s: DrawSession, records: Sequence[Record]) -> None:
        if self.publisher is None:
            return
        prefix = f"{self.cfg.mqtt.topic_prefix}/{self.cfg.site.id}/draws"
        try:
            await publish_draw(self.publisher, prefix, s, records, self.journal.head, self.heads)
        except Exception:  # the journal is the record; a broker outage must not stop draws
            self.log.exception("publish failed", session=s.session_id)

    # ------------------------------------------------------------------ reading

    def summary(self, session_id: str) -> dict[str, Any]:
        return session_summary(self.session(session_id), self.journal.head)

    async def stop(self) -> None:
        """Graceful stop: wait for a command in flight, flush events, snapshot the floor."""
        await self.restore.stop()
        async with self._lock:
            try:
                if self.journal.refused is None:  # a refused start restored no floor to save
                    await self.snapshot_floor()
            except Exception:
                self.log.exception("final floor snapshot failed")
            await self.journal.settle()
            await self.engine.dispose()
            if self.witness is not None:
                await self.witness.aclose()

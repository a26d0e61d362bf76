"""The schedule in the running daemon: loaded from the journal stream "schedule", seeded
from the config where it lacks something, and changed by marketing and admins from the
calendar page without a restart.

A change commits its records (who, when, why) before the service follows it: a new or
rescheduled session is a fresh scheduled `DrawSession` with the new rules, a cancelled
one leaves the handheld, and an approved definition (who qualifies for a promotion)
goes to the floor, whose pools are recomputed at once.  Changes share the journal lock
with draws, so a session cannot be rescheduled between its open and the commit of that
open.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any

from raps.chain import Head
from raps.config import Config
from raps.config.schedule import drifted
from raps.logs import get_logger
from raps.metrics import Metrics
from raps.store.journal import JournalStore
from selector.floor import Floor
from selector.promotion import Promotion
from selector.records import Actor, Record
from selector.schedule import (
    STREAM,
    PromotionPlan,
    ScheduleError,
    SessionPlan,
    Status,
)
from selector.session import Command, DrawSession, SessionError, SessionState

DEFINED = frozenset({"schedule.promotion_added", "schedule.promotion_changed"})


class ScheduleUnavailable(RuntimeError):
    """The journal could not commit a schedule change; nothing changed."""


class ScheduleDesk:
    """The schedule and the service's sessions it governs (`sessions`, shared with the
    service); `changed(session_id)` tells the service a session was added or replaced.
    `deferred`: the closed sessions a start has not restored yet (shared too), started
    all the same: no change reaches them."""

    def __init__(
        self,
        cfg: Config,
        journal: JournalStore,
        lock: asyncio.Lock,
        floor: Floor,
        sessions: dict[str, DrawSession],
        clock: Callable[[], datetime],
        metrics: Metrics,
        changed: Callable[[str], None],
        deferred: Mapping[str, object] | None = None,
    ) -> None:
        self.cfg, self.journal, self.lock, self.floor = cfg, journal, lock, floor
        self.sessions, self.clock, self.metrics, self.changed = sessions, clock, metrics, changed
        self.deferred: Mapping[str, object] = {} if deferred is None else deferred
        self.schedule = cfg.new_schedule()
        self._promotions = cfg.promotions()
        self._dirty = False
        self._replayed_at: Head | None = None  # the journal's head the last replay read
        self.log = get_logger(site=cfg.site.id)
        # told after every commit of its records (None: the schedule was replayed)
        self.followers: list[Callable[[list[Record] | None], Awaitable[None]]] = []

    # ------------------------------------------------------------------ loading

    async def prepare(self) -> None:
        """Replay the schedule's records and give the floor its promotions as they define
        them: before the floor's snapshot is restored, so its windows are theirs."""
        await self._replay()

    async def load(self) -> int:
        """Replay the schedule's records (unless `prepare` did and the journal has not
        grown since), then add what the config has and they lack (one commit); returns how
        many records the seeding wrote."""
        if self._replayed_at is None or self._replayed_at != self.journal.head:
            await self._replay()
        # every id the journal holds is a pass over its index: only when a plan needs it
        taken: frozenset[str] = frozenset()
        if self.cfg.seeds_a_plan(self.schedule):
            taken = frozenset(await self.journal.session_ids())
        seeded = self.cfg.seed_schedule(self.schedule, self.clock(), taken)
        if seeded:
            await self.journal.append([r.to_dict() for r in seeded])
            self._refloor()
        tz = self.cfg.site.timezone
        for pid in drifted(self.schedule, self.cfg.promotion_entries, tz):
            self.log.warning("the config's promotion differs from the schedule's, which holds: "
                             "change it on the calendar page", promotion=pid)  # fmt: skip
        return len(seeded)

    async def _replay(self) -> None:
        _, records = await self.journal.session_records(STREAM)
        self.schedule = self.cfg.new_schedule([Record.from_dict(r) for r in records])
        self._replayed_at = self.journal.head
        self._refloor()

    def promotions(self) -> list[Promotion]:
        """Every promotion as it stands: the config's, as the schedule defines them, and
        those defined on the calendar page."""
        return list(self._promotions)

    def _refloor(self) -> None:
        """The floor follows the schedule's definitions (a no-op when none changed)."""
        given = {p.promotion_id: p for p in self.cfg.promotions()}
        for pid in self.schedule.definitions:
            defined = self.schedule.definition(pid)
            if defined is not None:
                given[pid] = defined
        promotions = list(given.values())
        if promotions != self._promotions:
            self.floor.set_promotions(promotions)
            self._promotions = promotions

    def live(self) -> list[SessionPlan]:
        """The sessions the service holds: every one not cancelled."""
        return [p for p in self.schedule.sessions.values() if p.status != Status.CANCELLED]

    def plan(self, session_id: str) -> SessionPlan:
        return self.schedule.plan(session_id)

    @staticmethod
    def may_override(actor: Actor, override: str | None) -> None:
        """Only an admin opens or draws a live session outside its window (003 rule 20)."""
        if override is not None and actor.role != "admin":
            raise SessionError("only an admin may override a session's window")

    def may_open(self, session_id: str) -> None:
        """A proposed session waits for an admin's approval before it opens; a live one
        without a window (an older database's) is given one on the calendar page first."""
        plan = self.schedule.sessions.get(session_id)
        if plan is not None and plan.status == Status.PROPOSED:
            raise SessionError(
                f"session {session_id} is proposed and not approved yet: an admin approves "
                "it on the calendar page"
            )
        if plan is not None and plan.ends is None and not plan.rehearsal:
            raise SessionError(
                f"session {session_id} has no window: set the end of its window on the "
                "calendar page (every live session has one)"
            )

    # ----------------------------------------------------------------- commands

    async def create(self, actor: Actor, command_id: str, plan: SessionPlan,
                     reason: str) -> list[Record]:  # fmt: skip
        async def run(cmd: Command) -> list[Record]:
            taken = frozenset(await self.journal.session_ids())
            return self.schedule.add(cmd, plan, reason, taken=taken)

        return await self._change(actor, command_id, run)

    async def change(self, actor: Actor, command_id: str, session_id: str,
                     changes: Mapping[str, Any], reason: str) -> list[Record]:  # fmt: skip
        async def run(cmd: Command) -> list[Record]:
            return self.schedule.change(cmd, session_id, changes, reason,
                                        started=self._started(session_id))  # fmt: skip

        return await self._change(actor, command_id, run)

    async def approve(self, actor: Actor, command_id: str, session_id: str,
                      reason: str) -> list[Record]:  # fmt: skip
        async def run(cmd: Command) -> list[Record]:
            return self.schedule.approve(cmd, session_id, reason)

        return await self._change(actor, command_id, run)

    async def cancel(self, actor: Actor, command_id: str, session_id: str,
                     reason: str) -> list[Record]:  # fmt: skip
        async def run(cmd: Command) -> list[Record]:
            return self.schedule.cancel(cmd, session_id, reason,
                                        started=self._started(session_id))  # fmt: skip

        return await self._change(actor, command_id, run)

    async def set_promotion(self, actor: Actor, command_id: str, plan: PromotionPlan,
                            reason: str) -> list[Record]:  # fmt: skip
        async def run(cmd: Command) -> list[Record]:
            taken = frozenset(await self.journal.session_ids())
            started = self._all_started()
            return self.schedule.set_promotion(cmd, plan, reason, started=started, taken=taken)

        return await self._change(actor, command_id, run)

    async def define(self, actor: Actor, command_id: str, promotion_id: str,
                     doc: Mapping[str, Any], reason: str) -> list[Record]:  # fmt: skip
        async def run(cmd: Command) -> list[Record]:
            self._none_open(promotion_id)
            started = self._all_started()
            return self.schedule.define(cmd, promotion_id, doc, reason, started=started)

        return await self._change(actor, command_id, run)

    async def decide(self, actor: Actor, command_id: str, promotion_id: str, approve: bool,
                     reason: str) -> list[Record]:  # fmt: skip
        """An admin approves (or rejects) what waits for a promotion."""

        async def run(cmd: Command) -> list[Record]:
            if not approve:
                return self.schedule.reject_promotion(cmd, promotion_id, reason)
            waiting = self.schedule.proposals.get(promotion_id)
            if waiting is not None and waiting.definition is not None:
                self._none_open(promotion_id)
            taken = frozenset(await self.journal.session_ids())
            started = self._all_started()
            return self.schedule.approve_promotion(
                cmd, promotion_id, reason, started=started, taken=taken
            )

        return await self._change(actor, command_id, run)

    def _none_open(self, promotion_id: str) -> None:
        """Who qualifies does not change under an open live session's draws."""
        for s in self.sessions.values():
            if s.promotion_id == promotion_id and s.state == SessionState.OPEN and not s.rehearsal:
                raise ScheduleError(
                    "promotion_id",
                    f"session {s.session_id} of it is open: change who qualifies after it closes",
                )

    def _all_started(self) -> frozenset[str]:
        return frozenset(s for s in self.sessions if self._started(s)) | frozenset(self.deferred)

    def _started(self, session_id: str) -> bool:
        if session_id in self.deferred:  # closed, its records not restored yet
            return True
        s = self.sessions.get(session_id)
        return s is not None and (s.state != SessionState.SCHEDULED or bool(s.records))

    async def _change(self, actor: Actor, command_id: str,
                      run: Callable[[Command], Any]) -> list[Record]:  # fmt: skip
        """Run a schedule command under the journal lock; commit, then follow it."""
        async with self.lock:
            if self._dirty:
                await self._resync()
            done = self.schedule.answered(command_id)
            if done is not None:
                return done
            keep = len(self.schedule.records)
            new: list[Record] = await run(Command(command_id, actor, self.clock()))
            try:
                await self.journal.append([r.to_dict() for r in new])
            except Exception as e:
                self.metrics.journal_failures.inc()
                self.log.error("schedule write failed; the change is undone",
                               error=type(e).__name__)  # fmt: skip
                self.schedule = self.cfg.new_schedule(self.schedule.records[:keep])
                self._dirty = True
                raise ScheduleUnavailable(
                    "the journal could not be written; the schedule is unchanged"
                ) from e
            head = self.journal.head
            self.metrics.journal_head.set(head.seq if head else 0)
            self._follow(new)
            for follower in self.followers:
                await follower(new)
            for rec in new:
                self.log.info(rec.type, user=actor.user, role=actor.role,
                              reason=rec.data.get("reason"),
                              session=rec.data.get("session_id") or
                              (rec.data.get("session") or {}).get("session_id"))  # fmt: skip
            return new

    async def _resync(self) -> None:
        """After a failed commit the journal decides (a late failure may have landed)."""
        try:
            await self.journal.load_head()
            await self._replay()
        except Exception as e:
            raise ScheduleUnavailable("the journal cannot be read; try again shortly") from e
        self._dirty = False
        for plan in self.schedule.sessions.values():
            self._follow_plan(plan)
        for follower in self.followers:
            await follower(None)

    async def run(self, actor: Actor, command_id: str,
                  command: Callable[[Command], Any]) -> list[Record]:  # fmt: skip
        """Another desk's schedule command (raps.ticket_calendar_desk), as these are run."""
        return await self._change(actor, command_id, command)

    def _follow(self, records: list[Record]) -> None:
        if any(r.type in DEFINED for r in records):
            self._refloor()
        for rec in records:
            sid = rec.data.get("session_id") or (rec.data.get("session") or {}).get("session_id")
            if sid is not None:
                self._follow_plan(self.schedule.sessions[sid])

    def _follow_plan(self, plan: SessionPlan) -> None:
        """The service's session as the plan now says (only ever an unopened one)."""
        if self._started(plan.session_id):
            return
        if plan.status == Status.CANCELLED:
            self.sessions.pop(plan.session_id, None)
        else:
            self.sessions[plan.session_id] = self.scheduled(plan)
        self.changed(plan.session_id)

    def scheduled(self, plan: SessionPlan, records: list[Record] | None = None,
                  seed: bytes | None = None) -> DrawSession:  # fmt: skip
        """The plan's draw session, from its journal records (none: not opened yet)."""
        return DrawSession.restore(
            plan.session_id, plan.promotion_id, self.floor, plan.rules(), records or [],
            seed, rehearsal=plan.rehearsal,
        )  # fmt: skip

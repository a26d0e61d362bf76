"""The schedule: which RAPS sessions exist, when and under what rules; each promotion's
definition (who qualifies), period and calendar; and the changes waiting for an admin.

Marketing proposes and reschedules, an admin approves; a rehearsal needs no approval
and may be held at any time.  A live session is held inside a window, on its
promotion's calendar: one off the calendar needs the reason for it (an exception the
inspector is shown).  Marketing's (and an import's) changes to a promotion's definition,
period or calendar are proposals: nothing of them applies until an admin approves.
Every change is a command whose record (who, when, why) goes to the journal stream
"schedule", so the schedule a restart sees, and the one an inspector reads, is the one
the records make: `Schedule.replay` is the only loader.  A session that has opened is
out of the schedule's hands: its journal is its own.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from selector.calendar import Calendar
from selector.calendar_spec import SpecError
from selector.promotion import Promotion
from selector.promotion_spec import read_definition, write_definition
from selector.records import Actor, Record
from selector.schedule_plans import (
    APPLIES,
    APPROVERS,
    EDITABLE,
    PLANNERS,
    RAPS_WINDOW,
    SYSTEM_ROLES,
    PromotionFacts,
    PromotionPlan,
    Proposal,
    ScheduleError,
    SessionPlan,
    Status,
    in_period,
    nearest,
    occurrence_of,
    on_calendar,
    plan_calendar,
    planner,
    template,
    wall_time,
    why,
)
from selector.schedule_records import APPLY, check_fields
from selector.session import Command
from selector.ticket_calendars import TicketProposal

__all__ = [
    "APPLIES",
    "APPROVERS",
    "EDITABLE",
    "PLANNERS",
    "STREAM",
    "SYSTEM_ROLES",
    "PromotionFacts",
    "PromotionPlan",
    "Proposal",
    "Schedule",
    "ScheduleError",
    "SessionPlan",
    "Status",
    "wall_time",
]

STREAM = "schedule"
_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")

_UNSET: Any = object()
Steps = list[tuple[str, dict[str, Any]]]


@dataclass
class Schedule:
    facts: dict[str, PromotionFacts]
    sessions: dict[str, SessionPlan] = field(default_factory=dict)
    promotions: dict[str, PromotionPlan] = field(default_factory=dict)
    calendars: dict[str, Calendar] = field(default_factory=dict)
    definitions: dict[str, dict[str, Any]] = field(default_factory=dict)  # who qualifies
    proposals: dict[str, Proposal] = field(default_factory=dict)  # waiting for an admin
    # ticket programs' draw calendars, and their changes waiting (selector.ticket_calendars)
    ticket_calendars: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    ticket_proposals: dict[str, TicketProposal] = field(default_factory=dict)
    records: list[Record] = field(default_factory=list)
    tz: str = "UTC"  # the site's: a promotion defined on the page lives in it
    areas: frozenset[str] | None = None  # the floor's, to check a definition's areas by
    _answered: dict[str, list[Record]] = field(default_factory=dict)
    _base: dict[str, PromotionFacts] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.facts = dict(self.facts)
        self._base = dict(self.facts)

    @classmethod
    def replay(
        cls,
        facts: Mapping[str, PromotionFacts],
        records: Sequence[Record],
        *,
        tz: str = "UTC",
        areas: frozenset[str] | None = None,
    ) -> Schedule:
        s = cls(dict(facts), tz=tz, areas=areas)
        for rec in records:
            s._apply(rec)
        return s

    def answered(self, command_id: str) -> list[Record] | None:
        return self._answered.get(command_id)

    def plan(self, session_id: str) -> SessionPlan:
        try:
            return self.sessions[session_id]
        except KeyError:
            raise ScheduleError("session_id", f"no session {session_id!r}") from None

    def definition(self, promotion_id: str) -> Promotion | None:
        """The promotion as the schedule defines it (None: as the config has it)."""
        doc = self.definitions.get(promotion_id)
        facts = self.facts.get(promotion_id)
        if doc is None or facts is None:
            return None
        return read_definition(promotion_id, doc, facts.tz)

    # ---------------------------------------------------------------- sessions

    def add(
        self, cmd: Command, plan: SessionPlan, reason: str, *, taken: frozenset[str] = frozenset()
    ) -> list[Record]:
        """A new session: an admin's (or the config's) is approved, marketing's (or an
        import's) proposed, a rehearsal approved at once (it touches no live record).
        `taken`: ids the journal already holds, which no new session may reuse."""
        if (done := self.answered(cmd.command_id)) is not None:
            return done
        planner(cmd.actor)
        if plan.session_id in self.sessions or plan.session_id in taken:
            raise ScheduleError("session_id", f"a session {plan.session_id!r} already exists")
        approved = plan.rehearsal or cmd.actor.role in APPLIES
        plan = self._placed(replace(plan, status=Status.APPROVED if approved else Status.PROPOSED))
        self._check(plan)
        return self._commit(
            cmd, [("schedule.session_added", {"session": plan.to_data()})], reason or "created"
        )

    def change(
        self,
        cmd: Command,
        session_id: str,
        changes: Mapping[str, Any],
        reason: str,
        *,
        started: bool,
    ) -> list[Record]:
        """Reschedule or re-rule a session that has not opened; marketing's change to an
        approved live session sends it back for approval."""
        if (done := self.answered(cmd.command_id)) is not None:
            return done
        planner(cmd.actor)
        old = self._changeable(session_id, started)
        unknown = sorted(set(changes) - set(EDITABLE))
        if unknown:
            raise ScheduleError(
                unknown[0], f"cannot be changed (changeable: {', '.join(EDITABLE)})"
            )
        new = self._placed(replace(old, **changes))
        if new == old:
            raise ScheduleError("", "nothing changes")
        if not new.rehearsal and cmd.actor.role not in APPLIES and old.status == Status.APPROVED:
            new = replace(new, status=Status.PROPOSED)
        self._check(new)
        data = {
            "session_id": session_id,
            "session": new.to_data(),
            "changed": sorted(k for k in EDITABLE if getattr(new, k) != getattr(old, k)),
        }
        return self._commit(cmd, [("schedule.session_changed", data)], why(reason))

    def approve(self, cmd: Command, session_id: str, reason: str) -> list[Record]:
        if (done := self.answered(cmd.command_id)) is not None:
            return done
        if cmd.actor.role not in APPROVERS:
            raise ScheduleError("", "only an admin approves a session")
        plan = self.plan(session_id)
        if plan.status != Status.PROPOSED:
            raise ScheduleError(
                "session_id", f"session {session_id!r} is {plan.status}, not proposed"
            )
        self._check(plan)  # the period or the calendar may have changed since
        return self._commit(
            cmd, [("schedule.session_approved", {"session_id": session_id})], reason or "approved"
        )

    def cancel(self, cmd: Command, session_id: str, reason: str, *, started: bool) -> list[Record]:
        if (done := self.answered(cmd.command_id)) is not None:
            return done
        planner(cmd.actor)
        self._changeable(session_id, started)
        return self._commit(
            cmd, [("schedule.session_cancelled", {"session_id": session_id})], why(reason)
        )

    # -------------------------------------------------------------- promotions

    def set_promotion(
        self,
        cmd: Command,
        plan: PromotionPlan,
        reason: str,
        *,
        started: frozenset[str] = frozenset(),
        taken: frozenset[str] = frozenset(),
    ) -> list[Record]:
        """A promotion's period and calendar; with a session template, a session for each
        occurrence that has none (and the unopened ones of occurrences gone, cancelled).
        An admin's (or the config's) applies at once; anyone else's is a proposal."""
        if (done := self.answered(cmd.command_id)) is not None:
            return done
        planner(cmd.actor)
        steps = self._plan_steps(cmd.actor, plan, started, taken)  # checked either way
        if cmd.actor.role in APPLIES:
            return self._commit(cmd, steps, why(reason))
        return self._propose(cmd, plan.promotion_id, None, plan, reason)

    def define(
        self,
        cmd: Command,
        promotion_id: str,
        doc: Mapping[str, Any],
        reason: str,
        *,
        started: frozenset[str] = frozenset(),
    ) -> list[Record]:
        """Who qualifies for a promotion (a new one, or a change): name, threshold, play
        window, tiers, areas, pools.  An admin's (or the config's) applies at once;
        anyone else's is a proposal."""
        if (done := self.answered(cmd.command_id)) is not None:
            return done
        planner(cmd.actor)
        definition, tz = self._definition(promotion_id, doc, started)
        if cmd.actor.role in APPLIES:
            return self._commit(cmd, [self._define_step(promotion_id, definition, tz)], why(reason))
        return self._propose(cmd, promotion_id, definition, None, reason)

    def approve_promotion(
        self,
        cmd: Command,
        promotion_id: str,
        reason: str,
        *,
        started: frozenset[str] = frozenset(),
        taken: frozenset[str] = frozenset(),
    ) -> list[Record]:
        """An admin applies what waits for a promotion, checked again as it stands now,
        all of it or nothing."""
        if (done := self.answered(cmd.command_id)) is not None:
            return done
        waiting = self._waiting(cmd, promotion_id, "approves")
        keep = len(self.records)
        try:
            by = {"user": waiting.actor.user, "role": waiting.actor.role}
            out = self._commit(
                cmd,
                [
                    (
                        "schedule.promotion_approved",
                        {"promotion_id": promotion_id, "proposed_by": by},
                    )
                ],
                why(reason),
            )
            if waiting.definition is not None:
                definition, tz = self._definition(promotion_id, waiting.definition, started)
                out += self._commit(cmd, [self._define_step(promotion_id, definition, tz)], reason)
            if waiting.plan is not None:
                out += self._commit(
                    cmd, self._plan_steps(cmd.actor, waiting.plan, started, taken), reason
                )
        except ScheduleError:
            self._rewind(keep)
            raise
        return out

    def reject_promotion(self, cmd: Command, promotion_id: str, reason: str) -> list[Record]:
        if (done := self.answered(cmd.command_id)) is not None:
            return done
        self._waiting(cmd, promotion_id, "rejects")
        return self._commit(
            cmd, [("schedule.promotion_rejected", {"promotion_id": promotion_id})], why(reason)
        )

    # ---------------------------------------------------------------- helpers

    def _propose(
        self,
        cmd: Command,
        promotion_id: str,
        definition: Mapping[str, Any] | None,
        plan: PromotionPlan | None,
        reason: str,
    ) -> list[Record]:
        data = {
            "promotion_id": promotion_id,
            "definition": None if definition is None else dict(definition),
            "plan": None if plan is None else plan.to_data(),
            "tz": self._tz_of(promotion_id),
        }
        return self._commit(cmd, [("schedule.promotion_proposed", data)], why(reason))

    def _waiting(self, cmd: Command, promotion_id: str, verb: str) -> Proposal:
        if cmd.actor.role not in APPROVERS:
            raise ScheduleError("", f"only an admin {verb} a promotion's changes")
        waiting = self.proposals.get(promotion_id)
        if waiting is None:
            raise ScheduleError("promotion_id", f"no change of {promotion_id!r} waits for approval")
        return waiting

    def _definition(
        self, promotion_id: str, doc: Mapping[str, Any], started: frozenset[str]
    ) -> tuple[dict[str, Any], str]:
        """The canonical definition a document gives, checked; and its promotion's zone.
        Its pools must still serve the sessions to come (not those that have opened)."""
        if not _ID.fullmatch(promotion_id):
            raise ScheduleError("promotion_id", "1-64 letters, digits, '.', '_' and '-'")
        tz = self._tz_of(promotion_id)
        try:
            promo = read_definition(promotion_id, doc, tz, self.areas)
        except SpecError as e:
            raise ScheduleError(e.key or "definition", e.reason) from None
        definition = write_definition(promo)
        if definition == self.definitions.get(promotion_id):
            raise ScheduleError("", "nothing changes")
        kinds = {k.value for k in promo.pool_kinds}
        for s in self.sessions.values():
            if (
                s.promotion_id != promotion_id
                or s.status == Status.CANCELLED
                or s.session_id in started
            ):
                continue
            for kind in ("slots", "tables"):
                if getattr(s, kind) and kind not in kinds:
                    raise ScheduleError(
                        "pool_kinds", f"session {s.session_id!r} draws {kind} winners: keep {kind}"
                    )
        return definition, tz

    def _define_step(
        self, promotion_id: str, definition: dict[str, Any], tz: str
    ) -> tuple[str, dict[str, Any]]:
        kind = "changed" if promotion_id in self.definitions else "added"
        data = {"promotion_id": promotion_id, "definition": definition, "tz": tz}
        return f"schedule.promotion_{kind}", data

    def _tz_of(self, promotion_id: str) -> str:
        facts = self.facts.get(promotion_id)
        return facts.tz if facts is not None else self.tz

    def _plan_steps(
        self, actor: Actor, plan: PromotionPlan, started: frozenset[str], taken: frozenset[str]
    ) -> Steps:
        """The records a promotion plan makes, every rule checked (nothing applied).  A
        promotion proposed new is checked as its proposed definition says."""
        waiting = self.proposals.get(plan.promotion_id)
        if plan.promotion_id not in self.facts and waiting and waiting.definition:
            tz = self._tz_of(plan.promotion_id)
            proposed = read_definition(plan.promotion_id, waiting.definition, tz)
            facts = PromotionFacts.of(proposed, tz)
        else:
            facts = self._facts(plan.promotion_id)
        calendar = plan_calendar(plan, facts.tz)
        for s in self.sessions.values():
            if (
                s.promotion_id != plan.promotion_id
                or s.status == Status.CANCELLED
                or s.rehearsal
                or s.session_id in started
            ):
                continue
            if not in_period(s.starts, plan.period, facts.tz):
                raise ScheduleError(
                    "period", f"session {s.session_id!r} ({s.starts:%Y-%m-%d}) would be outside it"
                )
            generated = s.occurrence is not None and plan.sessions is not None
            if (
                calendar is not None
                and not generated
                and not s.off_calendar
                and on_calendar(calendar, plan.window(), s) is None
            ):
                raise ScheduleError(
                    "calendar",
                    f"session {s.session_id!r} ({s.starts:%a %d %b %Y %H:%M}) would not be on "
                    "it: cancel or move it first (or an admin holds it off the calendar, "
                    "with the reason)",
                )
        steps: Steps = [("schedule.promotion_set", {**plan.to_data(), "tz": facts.tz})]
        if calendar is not None and plan.sessions is not None and plan.promotion_id in self.facts:
            steps += self._generated(actor, plan, calendar, started, taken)  # else at approval
        return steps

    def _generated(
        self,
        actor: Actor,
        plan: PromotionPlan,
        calendar: Calendar,
        started: frozenset[str],
        taken: frozenset[str],
    ) -> Steps:
        made = template(plan.sessions or {})
        window = made.pop("window")
        mine = {
            s.occurrence: s
            for s in self.sessions.values()
            if s.promotion_id == plan.promotion_id
            and s.occurrence is not None
            and s.status != Status.CANCELLED
        }
        # a session made by hand inside an occurrence's window is that occurrence's
        covered = set(mine)
        for s in self.sessions.values():
            if (
                s.promotion_id == plan.promotion_id
                and s.occurrence is None
                and s.status != Status.CANCELLED
                and not s.rehearsal
                and (occ := on_calendar(calendar, window, s)) is not None
            ):
                covered.add(f"{occ.wall:%Y-%m-%d %H:%M}")
        steps: Steps = []
        wanted = set()
        approved = actor.role in APPLIES
        for occ in calendar.occurrences():
            if occ.condition is not None:
                continue  # decided on the day: a planner adds it then
            key = f"{occ.wall:%Y-%m-%d %H:%M}"
            wanted.add(key)
            if key in covered:
                continue
            start, end = occ.window(window)
            sid = f"{plan.promotion_id}-{occ.wall:%Y%m%d-%H%M}"
            if sid in self.sessions or sid in taken:
                raise ScheduleError("calendar_sessions", f"a session {sid!r} already exists")
            new = SessionPlan(
                sid,
                plan.promotion_id,
                start,
                end,
                occurrence=key,
                status=Status.APPROVED if approved else Status.PROPOSED,
                name=f"{self._facts(plan.promotion_id).name} {occ.wall:%a %d %b %H:%M}",
                **made,
            )
            self._check(
                new,
                period=plan.period,
                calendar=(calendar, window),
                ignore={s.session_id for s in mine.values()},
            )
            steps.append(("schedule.session_added", {"session": new.to_data()}))
        for key, s in mine.items():
            if key not in wanted and s.session_id not in started:
                steps.append(("schedule.session_cancelled", {"session_id": s.session_id}))
        return steps

    def _changeable(self, session_id: str, started: bool) -> SessionPlan:
        plan = self.plan(session_id)
        if started:
            raise ScheduleError(
                "session_id", f"session {session_id!r} has opened; its journal is its own"
            )
        if plan.status == Status.CANCELLED:
            raise ScheduleError("session_id", f"session {session_id!r} is cancelled")
        return plan

    def _facts(self, promotion_id: str) -> PromotionFacts:
        try:
            return self.facts[promotion_id]
        except KeyError:
            known = ", ".join(repr(k) for k in self.facts)
            raise ScheduleError(
                "promotion_id", f"no promotion {promotion_id!r} ({known})"
            ) from None

    def _window(self, promotion_id: str) -> str:
        promo = self.promotions.get(promotion_id)
        return promo.window() if promo is not None else RAPS_WINDOW

    def _placed(self, plan: SessionPlan) -> SessionPlan:
        """A live session on its promotion's calendar: its window from the occurrence when
        it gives none, and no reason to be off the calendar when it is on it."""
        calendar = self.calendars.get(plan.promotion_id)
        if plan.rehearsal or calendar is None:
            return plan
        window = self._window(plan.promotion_id)
        if plan.ends is None:
            occ = occurrence_of(calendar, window, plan.starts)
            if occ is not None and window in occ.windows:
                plan = replace(plan, ends=occ.window(window)[1])
        if plan.off_calendar and on_calendar(calendar, window, plan) is not None:
            plan = replace(plan, off_calendar="")
        return plan

    def _check(
        self,
        plan: SessionPlan,
        *,
        period: Any = _UNSET,
        calendar: tuple[Calendar, str] | None = _UNSET,
        ignore: Collection[str] = frozenset(),
    ) -> None:
        """Everything a session must be, each problem under its own field."""
        if not _ID.fullmatch(plan.session_id):
            raise ScheduleError("session_id", "1-64 letters, digits, '.', '_' and '-'")
        facts = self._facts(plan.promotion_id)
        check_fields(plan, facts)
        if plan.rehearsal:
            return  # any time, any overlap, no window: training touches nothing live
        if plan.ends is None:
            raise ScheduleError(
                "ends", "a live session needs the end of its window (or a calendar occurrence)"
            )
        promo = self.promotions.get(plan.promotion_id)
        bounds = (promo.period if promo else None) if period is _UNSET else period
        if not in_period(plan.starts, bounds, facts.tz):
            first, last = bounds or (None, None)
            raise ScheduleError("starts", f"outside the promotion's period {first} to {last}")
        self._on_calendar(plan, calendar)
        for other in self.sessions.values():
            if (
                other.session_id == plan.session_id
                or other.session_id in ignore
                or other.promotion_id != plan.promotion_id
                or other.rehearsal
                or other.status == Status.CANCELLED
                or other.ends is None
            ):
                continue
            if other.starts < plan.ends and plan.starts < other.ends:
                raise ScheduleError(
                    "starts",
                    f"overlaps session {other.session_id!r} "
                    f"({other.starts:%Y-%m-%d %H:%M}-{other.ends:%H:%M})",
                )

    def _on_calendar(self, plan: SessionPlan, given: tuple[Calendar, str] | None) -> None:
        """A live session lies in a window of its promotion's calendar, or says why not."""
        if given is _UNSET:
            calendar = self.calendars.get(plan.promotion_id)
            given = None if calendar is None else (calendar, self._window(plan.promotion_id))
        if given is None or plan.off_calendar.strip():
            return
        calendar, window = given
        if on_calendar(calendar, window, plan) is None:
            raise ScheduleError(
                "starts",
                f"{plan.starts:%a %d %b %Y %H:%M}-{plan.ends:%H:%M} is not in a {window!r} window "
                f"of the calendar of promotion {plan.promotion_id!r} (nearest: "
                f"{nearest(calendar, plan.starts)}); a session off the calendar needs the "
                "reason for it (off_calendar), and an admin's approval",
            )

    def _commit(self, cmd: Command, steps: Sequence[tuple[str, dict[str, Any]]],
                reason: str) -> list[Record]:  # fmt: skip
        if not reason.strip() or len(reason) > 500 or not reason.isprintable():
            raise ScheduleError("reason", "say why, in at most 500 printable characters")
        out = [
            Record(kind, STREAM, cmd.at, cmd.actor,
                   {**data, "command_id": cmd.command_id, "reason": reason})
            for kind, data in steps
        ]  # fmt: skip
        for rec in out:
            self._apply(rec)
        return out

    def _rewind(self, keep: int) -> None:
        """Back to the schedule the first `keep` records make (a command refused halfway)."""
        again = Schedule.replay(self._base, self.records[:keep], tz=self.tz, areas=self.areas)
        for name in ("facts", "sessions", "promotions", "calendars", "definitions", "proposals",
                     "ticket_calendars", "ticket_proposals", "records", "_answered"):  # fmt: skip
            setattr(self, name, getattr(again, name))

    def _apply(self, rec: Record) -> None:
        """A record's effect (a command's, or a replayed one's)."""
        d = rec.data
        handler = APPLY.get(rec.type)
        if handler is None:
            raise ScheduleError("", f"not a schedule record: {rec.type!r}")
        handler(self, rec, d)
        self.records.append(rec)
        self._answered.setdefault(str(d.get("command_id")), []).append(rec)

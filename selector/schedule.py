"""The schedule: which RAPS sessions exist, when and under what rules, and each
promotion's period and calendar.

Marketing proposes and reschedules, an admin approves; a rehearsal needs no approval
and may be held at any time.  Every change is a command whose record (who, when, why)
goes to the journal stream "schedule", so the schedule a restart sees, and the one an
inspector reads, is the one the records make: `Schedule.replay` is the only loader.
A session that has opened is out of the schedule's hands: its journal is its own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import date, datetime
from enum import StrEnum
from typing import Any
from zoneinfo import ZoneInfo

from selector.calendar import Calendar, CalendarError, aware
from selector.calendar_spec import SpecError, plain, read_calendar, read_period, write_period
from selector.claims import ClaimStart
from selector.events import PoolKind
from selector.promotion import SessionRules
from selector.records import Actor, Record
from selector.session import Command

STREAM = "schedule"
PLANNERS = frozenset({"marketing", "admin"})  # may create, reschedule and cancel
APPROVERS = frozenset({"admin"})
SYSTEM_ROLES = frozenset({"config", "import"})  # seeded from the config or a TOML import
EDITABLE = (
    "name",
    "starts",
    "ends",
    "slots",
    "tables",
    "claim_seconds",
    "exclude_no_shows",
    "exclude_voided",
    "claim_starts",
    "max_en_route_seconds",
)
TEMPLATE_KEYS = frozenset(
    {
        "window",
        "slots",
        "tables",
        "claim_seconds",
        "exclude_no_shows",
        "exclude_voided",
        "claim_starts",
        "max_en_route_seconds",
    }
)
_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
_MAX_CLAIM = 3600.0


class ScheduleError(ValueError):
    """A schedule change refused; `key` names the field at fault (or "")."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}" if key else message)
        self.key = key
        self.reason = message


class Status(StrEnum):
    PROPOSED = "proposed"  # marketing's, waiting for an admin
    APPROVED = "approved"
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class PromotionFacts:
    """What the schedule must know of a configured promotion."""

    promotion_id: str
    name: str
    pool_kinds: frozenset[str]
    tz: str


@dataclass(frozen=True, slots=True)
class SessionPlan:
    session_id: str
    promotion_id: str
    starts: datetime  # aware
    ends: datetime | None = None  # the end of its window; None: no window
    slots: int = 6
    tables: int = 4
    claim_seconds: float = 90.0
    exclude_no_shows: bool = False
    exclude_voided: bool = True
    rehearsal: bool = False
    name: str = ""
    status: Status = Status.APPROVED
    occurrence: str | None = None  # the calendar occurrence it was made for ("%Y-%m-%d %H:%M")
    # the claim countdown starts at the "draw" or when the winner is found "absent"; a
    # winner not reached within max_en_route_seconds escalates (None: never)
    claim_starts: str = ClaimStart.DRAW.value
    max_en_route_seconds: float | None = 120.0

    def rules(self) -> SessionRules:
        return SessionRules(
            quotas={PoolKind.SLOTS: self.slots, PoolKind.TABLES: self.tables},
            claim_seconds=self.claim_seconds,
            exclude_no_shows=self.exclude_no_shows,
            exclude_voided=self.exclude_voided,
            window=None if self.ends is None else (self.starts, self.ends),
            claim_starts=ClaimStart(self.claim_starts),
            max_en_route_seconds=self.max_en_route_seconds,
        )

    def to_data(self) -> dict[str, Any]:
        d = asdict(self)
        d["starts"] = self.starts.isoformat()
        d["ends"] = None if self.ends is None else self.ends.isoformat()
        d["status"] = self.status.value
        return d

    @classmethod
    def from_data(cls, d: Mapping[str, Any]) -> SessionPlan:
        ends = d.get("ends")
        return cls(
            **{
                **d,
                "starts": datetime.fromisoformat(d["starts"]),
                "ends": None if ends is None else datetime.fromisoformat(ends),
                "status": Status(d["status"]),
            }
        )


@dataclass(frozen=True, slots=True)
class PromotionPlan:
    """A promotion's period, calendar and the RAPS sessions its calendar makes."""

    promotion_id: str
    period: tuple[date, date] | None = None
    calendar: Mapping[str, Any] | None = None  # the plain document (selector.calendar_spec)
    sessions: Mapping[str, Any] | None = None  # a session per occurrence: window, quotas...

    def to_data(self) -> dict[str, Any]:
        return {
            "promotion_id": self.promotion_id,
            "period": write_period(self.period),
            "calendar": None if self.calendar is None else plain(self.calendar),
            "sessions": None if self.sessions is None else dict(self.sessions),
        }


@dataclass
class Schedule:
    facts: Mapping[str, PromotionFacts]
    sessions: dict[str, SessionPlan] = field(default_factory=dict)
    promotions: dict[str, PromotionPlan] = field(default_factory=dict)
    calendars: dict[str, Calendar] = field(default_factory=dict)
    records: list[Record] = field(default_factory=list)
    _answered: dict[str, list[Record]] = field(default_factory=dict)

    @classmethod
    def replay(cls, facts: Mapping[str, PromotionFacts], records: Sequence[Record]) -> Schedule:
        s = cls(facts)
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

    # ---------------------------------------------------------------- commands

    def add(
        self,
        cmd: Command,
        plan: SessionPlan,
        reason: str,
        *,
        require_window: bool = True,
        taken: frozenset[str] = frozenset(),
    ) -> list[Record]:
        """A new session: an admin's (or the config's) is approved, marketing's proposed,
        a rehearsal approved at once (it touches no live record). `taken`: ids the journal
        already holds, which no new session may reuse."""
        if (done := self.answered(cmd.command_id)) is not None:
            return done
        _planner(cmd.actor)
        if plan.session_id in self.sessions or plan.session_id in taken:
            raise ScheduleError("session_id", f"a session {plan.session_id!r} already exists")
        approved = plan.rehearsal or cmd.actor.role in APPROVERS | SYSTEM_ROLES
        plan = replace(plan, status=Status.APPROVED if approved else Status.PROPOSED)
        self._check(plan, require_window=require_window and not plan.rehearsal)
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
        _planner(cmd.actor)
        old = self._changeable(session_id, started)
        unknown = sorted(set(changes) - set(EDITABLE))
        if unknown:
            raise ScheduleError(
                unknown[0], f"cannot be changed (changeable: {', '.join(EDITABLE)})"
            )
        new = replace(old, **changes)
        if new == old:
            raise ScheduleError("", "nothing changes")
        approves = cmd.actor.role in APPROVERS | SYSTEM_ROLES
        if not new.rehearsal and not approves and old.status == Status.APPROVED:
            new = replace(new, status=Status.PROPOSED)
        self._check(new, require_window=old.ends is not None and not new.rehearsal)
        data = {
            "session_id": session_id,
            "session": new.to_data(),
            "changed": sorted(k for k in EDITABLE if getattr(new, k) != getattr(old, k)),
        }
        return self._commit(cmd, [("schedule.session_changed", data)], _why(reason))

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
        self._check(plan, require_window=False)  # the period may have changed since
        return self._commit(
            cmd, [("schedule.session_approved", {"session_id": session_id})], reason or "approved"
        )

    def cancel(self, cmd: Command, session_id: str, reason: str, *, started: bool) -> list[Record]:
        if (done := self.answered(cmd.command_id)) is not None:
            return done
        _planner(cmd.actor)
        self._changeable(session_id, started)
        return self._commit(
            cmd, [("schedule.session_cancelled", {"session_id": session_id})], _why(reason)
        )

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
        occurrence that has none (and the unopened ones of occurrences gone, cancelled)."""
        if (done := self.answered(cmd.command_id)) is not None:
            return done
        _planner(cmd.actor)
        facts = self._facts(plan.promotion_id)
        calendar = self._calendar(plan, facts.tz)
        for s in self.sessions.values():
            if (
                s.promotion_id == plan.promotion_id
                and s.status != Status.CANCELLED
                and not s.rehearsal
                and s.session_id not in started
                and not _in_period(s.starts, plan.period, facts.tz)
            ):
                raise ScheduleError(
                    "period", f"session {s.session_id!r} ({s.starts:%Y-%m-%d}) would be outside it"
                )
        steps: list[tuple[str, dict[str, Any]]] = [
            ("schedule.promotion_set", {**plan.to_data(), "tz": facts.tz})
        ]
        if calendar is not None and plan.sessions is not None:
            steps += self._generated(cmd, plan, calendar, started, taken)
        return self._commit(cmd, steps, _why(reason))

    # ---------------------------------------------------------------- helpers

    def _generated(
        self,
        cmd: Command,
        plan: PromotionPlan,
        calendar: Calendar,
        started: frozenset[str],
        taken: frozenset[str],
    ) -> list[tuple[str, dict[str, Any]]]:
        template = _template(plan.sessions or {})
        window = template.pop("window")
        mine = {
            s.occurrence: s
            for s in self.sessions.values()
            if s.promotion_id == plan.promotion_id
            and s.occurrence is not None
            and s.status != Status.CANCELLED
        }
        steps: list[tuple[str, dict[str, Any]]] = []
        wanted = set()
        approved = cmd.actor.role in APPROVERS | SYSTEM_ROLES
        for occ in calendar.occurrences():
            if occ.condition is not None:
                continue  # decided on the day: a planner adds it then
            key = f"{occ.wall:%Y-%m-%d %H:%M}"
            wanted.add(key)
            if key in mine:
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
                name=f"{self.facts[plan.promotion_id].name} {occ.wall:%a %d %b %H:%M}",
                **template,
            )
            self._check(
                new,
                require_window=True,
                period=plan.period,
                ignore={s.session_id for s in mine.values()},
            )
            steps.append(("schedule.session_added", {"session": new.to_data()}))
        for key, s in mine.items():
            if key not in wanted and s.session_id not in started:
                steps.append(("schedule.session_cancelled", {"session_id": s.session_id}))
        return steps

    def _calendar(self, plan: PromotionPlan, tz: str) -> Calendar | None:
        if plan.sessions is not None and plan.calendar is None:
            raise ScheduleError("calendar_sessions", "sessions come from a calendar: give one")
        if plan.calendar is None:
            return None
        try:
            read_period(write_period(plan.period))
            calendar = read_calendar(plan.calendar, tz, plan.period)
        except SpecError as e:
            raise ScheduleError(f"calendar.{e.key}" if e.key else "calendar", e.reason) from None
        if plan.sessions is not None:
            window = _template(plan.sessions)["window"]
            clash = (
                calendar.overlap(window) if window in {w.name for w in calendar.windows} else None
            )
            if clash is not None:
                raise ScheduleError(f"calendar.windows.{window}", clash)
            if window not in {w.name for w in calendar.windows}:
                raise ScheduleError(
                    "calendar_sessions.window", f"the calendar has no window {window!r}"
                )
        return calendar

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

    def _check(
        self,
        plan: SessionPlan,
        *,
        require_window: bool,
        period: tuple[date, date] | bool | None = False,
        ignore: frozenset[str] | set[str] = frozenset(),
    ) -> None:
        """Everything a session must be, each problem under its own field."""
        if not _ID.fullmatch(plan.session_id):
            raise ScheduleError("session_id", "1-64 letters, digits, '.', '_' and '-'")
        facts = self._facts(plan.promotion_id)
        if len(plan.name) > 80 or not plan.name.isprintable():
            raise ScheduleError("name", "at most 80 printable characters")
        for kind in ("slots", "tables"):
            n = getattr(plan, kind)
            if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= 100:
                raise ScheduleError(kind, "a whole number of winners from 0 to 100")
            if n and kind not in facts.pool_kinds:
                raise ScheduleError(kind, f"promotion {facts.promotion_id!r} has no {kind} pool")
        if not plan.slots and not plan.tables:
            raise ScheduleError("slots", "at least one of slots, tables must be above 0")
        c = plan.claim_seconds
        if not isinstance(c, int | float) or isinstance(c, bool) or not 0 < c <= _MAX_CLAIM:
            raise ScheduleError("claim_seconds", f"above 0 and at most {_MAX_CLAIM:.0f}")
        for flag in ("exclude_no_shows", "exclude_voided", "rehearsal"):
            if not isinstance(getattr(plan, flag), bool):
                raise ScheduleError(flag, "true or false")
        if plan.claim_starts not in tuple(ClaimStart):
            raise ScheduleError("claim_starts", f"one of {', '.join(ClaimStart)}")
        m = plan.max_en_route_seconds
        if m is not None and (
            not isinstance(m, int | float) or isinstance(m, bool) or not 0 < m <= _MAX_CLAIM
        ):
            raise ScheduleError("max_en_route_seconds", f"above 0 and at most {_MAX_CLAIM:.0f}")
        if plan.starts.tzinfo is None or (plan.ends is not None and plan.ends.tzinfo is None):
            raise ScheduleError("starts", "a time with its zone")
        if plan.ends is None and require_window:
            raise ScheduleError("ends", "a live session needs the end of its window")
        if plan.ends is not None and plan.ends <= plan.starts:
            raise ScheduleError("ends", f"must be after starts ({plan.starts:%Y-%m-%d %H:%M})")
        if plan.rehearsal:
            return  # any time, any overlap: training touches nothing live
        promo = self.promotions.get(plan.promotion_id)
        bounds = (promo.period if promo else None) if period is False else period
        if not _in_period(plan.starts, bounds, facts.tz):  # type: ignore[arg-type]
            first, last = bounds  # type: ignore[misc]
            raise ScheduleError("starts", f"outside the promotion's period {first} to {last}")
        for other in self.sessions.values():
            if (
                other.session_id == plan.session_id
                or other.session_id in ignore
                or other.promotion_id != plan.promotion_id
                or other.rehearsal
                or other.status == Status.CANCELLED
                or other.ends is None
                or plan.ends is None
            ):
                continue
            if other.starts < plan.ends and plan.starts < other.ends:
                raise ScheduleError(
                    "starts",
                    f"overlaps session {other.session_id!r} "
                    f"({other.starts:%Y-%m-%d %H:%M}-{other.ends:%H:%M})",
                )

    def _commit(
        self, cmd: Command, steps: Sequence[tuple[str, dict[str, Any]]], reason: str
    ) -> list[Record]:
        if not reason.strip() or len(reason) > 500 or not reason.isprintable():
            raise ScheduleError("reason", "say why, in at most 500 printable characters")
        out = [
            Record(
                kind,
                STREAM,
                cmd.at,
                cmd.actor,
                {**data, "command_id": cmd.command_id, "reason": reason},
            )
            for kind, data in steps
        ]
        for rec in out:
            self._apply(rec)
        return out

    def _apply(self, rec: Record) -> None:
        """A record's effect (a command's, or a replayed one's)."""
        d = rec.data
        if rec.type in ("schedule.session_added", "schedule.session_changed"):
            plan = SessionPlan.from_data(d["session"])
            self.sessions[plan.session_id] = plan
        elif rec.type == "schedule.session_approved":
            self.sessions[d["session_id"]] = replace(
                self.sessions[d["session_id"]], status=Status.APPROVED
            )
        elif rec.type == "schedule.session_cancelled":
            self.sessions[d["session_id"]] = replace(
                self.sessions[d["session_id"]], status=Status.CANCELLED
            )
        elif rec.type == "schedule.promotion_set":
            p = PromotionPlan(
                d["promotion_id"],
                read_period(d.get("period")),
                d.get("calendar"),
                d.get("sessions"),
            )
            self.promotions[p.promotion_id] = p
            known = self.facts.get(p.promotion_id)
            tz = str(d.get("tz") or (known.tz if known else "UTC"))
            if p.calendar is not None:
                self.calendars[p.promotion_id] = read_calendar(p.calendar, tz, p.period)
            else:
                self.calendars.pop(p.promotion_id, None)
        else:
            raise ScheduleError("", f"not a schedule record: {rec.type!r}")
        self.records.append(rec)
        self._answered.setdefault(str(d.get("command_id")), []).append(rec)


def wall_time(text: Any, tz: str, key: str) -> datetime:
    """A date and time typed in the site's wall time (or with an offset), aware; a time
    the clocks skip (a DST gap) is refused, naming the field."""
    if isinstance(text, datetime):
        value = text
    elif isinstance(text, str):
        try:
            value = datetime.fromisoformat(text)
        except ValueError:
            raise ScheduleError(key, f'a date and time "YYYY-MM-DD HH:MM", not {text!r}') from None
    else:
        raise ScheduleError(key, 'a date and time "YYYY-MM-DD HH:MM"')
    if value.tzinfo is not None:
        return value.astimezone(ZoneInfo(tz))
    try:
        return aware(value, ZoneInfo(tz), key)
    except CalendarError as e:
        raise ScheduleError(key, str(e).partition(": ")[2]) from None


def _template(spec: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(spec) - TEMPLATE_KEYS)
    if unknown:
        raise ScheduleError(
            f"calendar_sessions.{unknown[0]}", f"unknown key ({', '.join(sorted(TEMPLATE_KEYS))})"
        )
    out = {"window": "raps", **spec}
    if out.get("max_en_route_seconds") == 0:  # TOML has no null: 0 is no limit
        out["max_en_route_seconds"] = None
    return out


def _in_period(at: datetime, period: tuple[date, date] | None, tz: str) -> bool:
    return period is None or period[0] <= at.astimezone(ZoneInfo(tz)).date() <= period[1]


def _planner(actor: Actor) -> None:
    if actor.role not in PLANNERS | SYSTEM_ROLES:
        raise ScheduleError("", "only marketing or an admin changes the schedule")


def _why(reason: str) -> str:
    if not reason.strip():
        raise ScheduleError("reason", "say why (it is journaled with your name)")
    return reason

"""What the schedule holds: session plans, promotions' plans and definitions, proposals
waiting for an admin, and the small rules they share (selector.schedule changes them).

Every value here is plain and serialisable: records carry `to_data()` and replay reads
it back with `from_data`, so what a restart or an inspector sees is what was journaled.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import date, datetime, timedelta
from enum import StrEnum
from typing import Any
from zoneinfo import ZoneInfo

from selector.calendar import Calendar, CalendarError, Occurrence, aware
from selector.calendar_spec import (
    MAX_SPAN_DAYS,
    SpecError,
    plain,
    read_calendar,
    read_period,
    write_period,
)
from selector.claims import ClaimStart
from selector.events import PoolKind
from selector.promotion import Promotion, SessionRules
from selector.records import Actor

PLANNERS = frozenset({"marketing", "admin"})  # may create, reschedule and cancel
APPROVERS = frozenset({"admin"})
# "config": seeded from the config file at a first start, applied as it stands (the file
# is its record of why). "import": `raps schedule import`, whose changes are proposals an
# admin approves on the calendar page, like marketing's.
SYSTEM_ROLES = frozenset({"config", "import"})
APPLIES = APPROVERS | {"config"}  # whose changes take effect without an approval
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
    "off_calendar",
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
MAX_CLAIM = 3600.0  # seconds to present, at most
RAPS_WINDOW = "raps"  # the calendar window a RAPS session is held in, unless the template says


class ScheduleError(ValueError):
    """A schedule change refused; `key` names the field at fault (or "")."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}" if key else message)
        self.key = key
        self.reason = message


class Status(StrEnum):
    PROPOSED = "proposed"  # marketing's (or an import's), waiting for an admin
    APPROVED = "approved"
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class PromotionFacts:
    """What the schedule must know of a promotion (configured, or defined on the page)."""

    promotion_id: str
    name: str
    pool_kinds: frozenset[str]
    tz: str

    @classmethod
    def of(cls, p: Promotion, tz: str) -> PromotionFacts:
        return cls(p.promotion_id, p.name or p.promotion_id, frozenset(p.pool_kinds), tz)


@dataclass(frozen=True, slots=True)
class SessionPlan:
    session_id: str
    promotion_id: str
    starts: datetime  # aware
    ends: datetime | None = None  # the end of its window (None: an old database's, or a rehearsal)
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
    # why a live session is held off its promotion's calendar (an exception `raps verify`
    # shows with who proposed and who approved it); empty: on the calendar
    off_calendar: str = ""

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
        if not self.off_calendar:
            del d["off_calendar"]  # records of sessions on the calendar read as before
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

    @classmethod
    def from_data(cls, d: Mapping[str, Any]) -> PromotionPlan:
        return cls(d["promotion_id"], read_period(d.get("period")), d.get("calendar"),
                   d.get("sessions"))  # fmt: skip

    def window(self) -> str:
        """The calendar window its RAPS sessions are held in."""
        return str((self.sessions or {}).get("window", RAPS_WINDOW))


@dataclass(frozen=True, slots=True)
class Proposal:
    """Changes to a promotion waiting for an admin: its definition (who qualifies) and/or
    its plan (period, calendar, sessions).  Nothing of it applies until approved."""

    promotion_id: str
    actor: Actor
    at: datetime
    reason: str
    definition: Mapping[str, Any] | None = None
    plan: PromotionPlan | None = None

    def to_data(self) -> dict[str, Any]:
        return {
            "promotion_id": self.promotion_id,
            "definition": None if self.definition is None else dict(self.definition),
            "plan": None if self.plan is None else self.plan.to_data(),
        }


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


def template(spec: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(spec) - TEMPLATE_KEYS)
    if unknown:
        raise ScheduleError(
            f"calendar_sessions.{unknown[0]}", f"unknown key ({', '.join(sorted(TEMPLATE_KEYS))})"
        )
    out = {"window": RAPS_WINDOW, **spec}
    if out.get("max_en_route_seconds") == 0:  # TOML has no null: 0 is no limit
        out["max_en_route_seconds"] = None
    return out


def in_period(at: datetime, period: tuple[date, date] | None, tz: str) -> bool:
    return period is None or period[0] <= at.astimezone(ZoneInfo(tz)).date() <= period[1]


def occurrence_of(calendar: Calendar, window: str, starts: datetime) -> Occurrence | None:
    """The occurrence a session starting at `starts` belongs to: the one whose `window`
    holds it, or (a calendar without that window) the one at that very time."""
    if window in {w.name for w in calendar.windows}:
        return calendar.in_window(window, starts)
    at = calendar.between(starts, starts + timedelta(seconds=1))
    return at[0] if at else None


def on_calendar(calendar: Calendar, window: str, plan: SessionPlan) -> Occurrence | None:
    """The occurrence whose window holds the whole of the session's, if any."""
    occ = occurrence_of(calendar, window, plan.starts)
    if occ is None:
        return None
    if window in occ.windows and plan.ends is not None and plan.ends > occ.window(window)[1]:
        return None
    return occ


def nearest(calendar: Calendar, at: datetime) -> str:
    """The occurrences either side of `at`, for a refusal to point at."""
    before = calendar.between(at - timedelta(days=MAX_SPAN_DAYS), at)[-1:]
    after = calendar.upcoming(at, 1)
    shown = [f"{o.wall:%a %d %b %Y %H:%M}" for o in [*before, *after]]
    return " or ".join(shown) if shown else "none"


def plan_calendar(plan: PromotionPlan, tz: str) -> Calendar | None:
    """A plan's calendar, read and checked with its period and session template."""
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
        window = template(plan.sessions)["window"]
        if window not in {w.name for w in calendar.windows}:
            raise ScheduleError(
                "calendar_sessions.window", f"the calendar has no window {window!r}"
            )
        clash = calendar.overlap(window)
        if clash is not None:
            raise ScheduleError(f"calendar.windows.{window}", clash)
    return calendar


def planner(actor: Actor) -> None:
    if actor.role not in PLANNERS | SYSTEM_ROLES:
        raise ScheduleError("", "only marketing or an admin changes the schedule")


def why(reason: str) -> str:
    if not reason.strip():
        raise ScheduleError("reason", "say why (it is journaled with your name)")
    return reason

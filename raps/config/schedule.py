"""The config's share of the schedule: what `[[promotions]]` (period, calendar,
calendar_sessions) and `[[sessions]]` put in it at first start, and the check that they
can be put there at all.

Once running, the schedule in the journal is the truth: a restart adds what the config
has and the schedule lacks (a new session, a promotion's first calendar) and leaves
what the schedule already holds as it is, so a change made on the calendar page is not
undone by an old config file. `raps schedule import` replaces on purpose.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from adapters.wire.settings import StrictModel
from raps.config.promotions import PromotionConfig, SessionConfig, promotion_plan, session_plan
from selector.records import Actor, Record
from selector.schedule import (
    EDITABLE,
    PromotionFacts,
    PromotionPlan,
    Schedule,
    ScheduleError,
    Status,
)
from selector.session import Command

SEEDER = Actor("config", "config")
_SESSION_KEYS = {
    "slots": "quotas.slots",
    "tables": "quotas.tables",
    "session_id": "id",
    "promotion_id": "promotion",
}


def facts(promotions: Sequence[PromotionConfig], tz: str) -> dict[str, PromotionFacts]:
    return {
        p.id: PromotionFacts(p.id, p.name or p.id, frozenset(p.pool_kinds), tz) for p in promotions
    }


def seed(
    schedule: Schedule,
    promotions: Sequence[PromotionConfig],
    sessions: Sequence[SessionConfig],
    tz: str,
    command: Callable[[str], Command],
    *,
    source: str,
    taken: Collection[str] = (),
) -> list[Record]:
    """Add to `schedule` what the config has and it lacks; its records, in order. A
    refusal is a ScheduleError whose key is the config's (``promotions[0].calendar...``)."""
    out: list[Record] = []
    reason = f"seeded from {source}"
    blocked = frozenset(taken)
    for i, p in enumerate(promotions):
        plan = promotion_plan(p)
        if plan is None or p.id in schedule.promotions:
            continue
        try:
            out += schedule.set_promotion(
                command(f"seed:promotion:{p.id}"), plan, reason, taken=blocked
            )
        except ScheduleError as e:
            raise ScheduleError(
                f"promotions[{i}].{e.key}" if e.key else f"promotions[{i}]", e.reason
            ) from None
    for j, s in enumerate(sessions):
        if s.id in schedule.sessions:
            continue
        try:
            # no `taken`: a session of an older database has its journal already
            out += schedule.add(
                command(f"seed:session:{s.id}"), session_plan(s, tz), reason, require_window=False
            )
        except ScheduleError as e:
            key = _SESSION_KEYS.get(e.key, e.key)
            raise ScheduleError(
                f"sessions[{j}].{key}" if key else f"sessions[{j}]", e.reason
            ) from None
    return out


def seeding_command(at: datetime) -> Callable[[str], Command]:
    return lambda command_id: Command(command_id, SEEDER, at)


# ------------------------------------------------------------- TOML import and export


class PromotionSchedule(StrictModel):
    """A promotion's schedule keys, as `[[promotions]]` has them (the rest is config)."""

    id: str
    name: str = ""
    period: dict[str, Any] | None = None
    calendar: dict[str, Any] | None = None
    calendar_sessions: dict[str, Any] | None = None


class ScheduleDocument(StrictModel):
    """What `raps schedule export` writes and `raps schedule import` reads."""

    promotions: tuple[PromotionSchedule, ...] = ()
    sessions: tuple[SessionConfig, ...] = ()


def export_document(schedule: Schedule, tz: str) -> dict[str, Any]:
    """The schedule as TOML-ready data: every promotion's period and calendar, every
    session not cancelled (times in the site's wall time)."""
    zone = ZoneInfo(tz)
    promotions = []
    for pid, facts_ in schedule.facts.items():
        plan = schedule.promotions.get(pid)
        entry: dict[str, Any] = {"id": pid, "name": facts_.name}
        if plan is not None:
            data = plan.to_data()
            entry.update({k: data[k] for k in ("period", "calendar", "sessions") if data[k]})
            if "sessions" in entry:
                entry["calendar_sessions"] = entry.pop("sessions")
        promotions.append(entry)
    sessions = []
    for s in schedule.sessions.values():
        if s.status == Status.CANCELLED:
            continue
        row: dict[str, Any] = {"id": s.session_id, "promotion": s.promotion_id}
        if s.name:
            row["name"] = s.name
        row["starts"] = _wall(s.starts, zone)
        if s.ends is not None:
            row["ends"] = _wall(s.ends, zone)
        row.update(
            quotas={"slots": s.slots, "tables": s.tables},
            claim_seconds=s.claim_seconds,
            exclude_no_shows=s.exclude_no_shows,
            exclude_voided=s.exclude_voided,
            rehearsal=s.rehearsal,
            claim_starts=s.claim_starts,
            max_en_route_seconds=s.max_en_route_seconds or 0,
        )
        sessions.append(row)
    return {"promotions": promotions, "sessions": sessions}


def _wall(at: datetime, zone: ZoneInfo) -> str:
    """Wall time where it is unambiguous; with its offset where the clocks pass it twice."""
    local = at.astimezone(zone)
    naive = local.replace(tzinfo=None)
    again = naive.replace(tzinfo=zone, fold=1 - local.fold)
    if again.utcoffset() != local.utcoffset():
        return local.isoformat(timespec="minutes")
    return f"{naive:%Y-%m-%d %H:%M}"


def import_document(
    schedule: Schedule,
    doc: ScheduleDocument,
    tz: str,
    command: Callable[[str], Command],
    *,
    reason: str,
    started: Collection[str],
    taken: Collection[str],
) -> list[Record]:
    """Apply a document: promotions' schedules set where they differ, sessions added or
    changed where they differ (an opened session is left as it is and reported). Sessions
    the document lacks stay: cancelling is a decision made on the calendar page."""
    out: list[Record] = []
    started_, taken_ = frozenset(started), frozenset(taken)
    for i, p in enumerate(doc.promotions):
        plan = promotion_plan(
            PromotionConfig(
                id=p.id, period=p.period, calendar=p.calendar, calendar_sessions=p.calendar_sessions
            )
        )
        if plan is None:
            plan = PromotionPlan(p.id)
        current = schedule.promotions.get(p.id, PromotionPlan(p.id))
        if current.to_data() == plan.to_data():
            continue
        try:
            out += schedule.set_promotion(
                command(f"import:promotion:{p.id}"), plan, reason, started=started_, taken=taken_
            )
        except ScheduleError as e:
            raise ScheduleError(f"promotions[{i}].{e.key}".rstrip("."), e.reason) from None
    for j, s in enumerate(doc.sessions):
        new = session_plan(s, tz)
        try:
            old = schedule.sessions.get(s.id)
            if old is None:
                out += schedule.add(command(f"import:add:{s.id}"), new, reason, taken=taken_)
                continue
            changes = {k: getattr(new, k) for k in EDITABLE if getattr(new, k) != getattr(old, k)}
            fixed = [k for k in ("promotion_id", "rehearsal") if getattr(new, k) != getattr(old, k)]
            if fixed:
                raise ScheduleError(fixed[0], "cannot be changed: cancel the session, add another")
            if changes:
                out += schedule.change(
                    command(f"import:change:{s.id}"),
                    s.id,
                    changes,
                    reason,
                    started=s.id in started_,
                )
        except ScheduleError as e:
            key = _SESSION_KEYS.get(e.key, e.key)
            raise ScheduleError(f"sessions[{j}].{key}".rstrip("."), e.reason) from None
    return out

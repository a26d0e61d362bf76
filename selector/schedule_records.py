"""The schedule's records and what each does to it (`Schedule.replay` applies them in
order, a command applies the ones it makes), and the checks of a session's own fields.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from selector.calendar_spec import read_calendar
from selector.claims import ClaimStart
from selector.promotion_spec import read_definition
from selector.records import Record
from selector.schedule_plans import (
    MAX_CLAIM,
    PromotionFacts,
    PromotionPlan,
    Proposal,
    ScheduleError,
    SessionPlan,
    Status,
)
from selector.ticket_calendars import APPLY as TICKET_CALENDARS

if TYPE_CHECKING:
    from selector.schedule import Schedule


def check_fields(plan: SessionPlan, facts: PromotionFacts) -> None:
    """A session's own fields, each problem under its own key."""
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
    if not isinstance(c, int | float) or isinstance(c, bool) or not 0 < c <= MAX_CLAIM:
        raise ScheduleError("claim_seconds", f"above 0 and at most {MAX_CLAIM:.0f}")
    for flag in ("exclude_no_shows", "exclude_voided", "rehearsal"):
        if not isinstance(getattr(plan, flag), bool):
            raise ScheduleError(flag, "true or false")
    if plan.claim_starts not in tuple(ClaimStart):
        raise ScheduleError("claim_starts", f"one of {', '.join(ClaimStart)}")
    m = plan.max_en_route_seconds
    if m is not None and (
        not isinstance(m, int | float) or isinstance(m, bool) or not 0 < m <= MAX_CLAIM
    ):
        raise ScheduleError("max_en_route_seconds", f"above 0 and at most {MAX_CLAIM:.0f}")
    off = plan.off_calendar
    if not isinstance(off, str) or len(off) > 500 or not off.isprintable():
        raise ScheduleError("off_calendar", "at most 500 printable characters")
    if plan.starts.tzinfo is None or (plan.ends is not None and plan.ends.tzinfo is None):
        raise ScheduleError("starts", "a time with its zone")
    if plan.ends is not None and plan.ends <= plan.starts:
        raise ScheduleError("ends", f"must be after starts ({plan.starts:%Y-%m-%d %H:%M})")


def _session_set(s: Schedule, rec: Record, d: Mapping[str, Any]) -> None:
    plan = SessionPlan.from_data(d["session"])
    s.sessions[plan.session_id] = plan


def _session_status(status: Status) -> Callable[[Schedule, Record, Mapping[str, Any]], None]:
    def apply(s: Schedule, rec: Record, d: Mapping[str, Any]) -> None:
        s.sessions[d["session_id"]] = replace(s.sessions[d["session_id"]], status=status)

    return apply


def _promotion_set(s: Schedule, rec: Record, d: Mapping[str, Any]) -> None:
    p = PromotionPlan.from_data(d)
    s.promotions[p.promotion_id] = p
    tz = str(d.get("tz") or s._tz_of(p.promotion_id))
    if p.calendar is not None:
        s.calendars[p.promotion_id] = read_calendar(p.calendar, tz, p.period)
    else:
        s.calendars.pop(p.promotion_id, None)


def _definition_set(s: Schedule, rec: Record, d: Mapping[str, Any]) -> None:
    pid, tz = d["promotion_id"], str(d.get("tz") or s.tz)
    s.definitions[pid] = dict(d["definition"])
    s.facts[pid] = PromotionFacts.of(read_definition(pid, d["definition"], tz), tz)


def _proposed(s: Schedule, rec: Record, d: Mapping[str, Any]) -> None:
    """A proposal adds to what waits for the promotion: a later one replaces the parts
    (definition, plan) it gives, and keeps the others."""
    pid = d["promotion_id"]
    old = s.proposals.get(pid)
    plan = None if d.get("plan") is None else PromotionPlan.from_data(d["plan"])
    s.proposals[pid] = Proposal(
        pid,
        rec.actor,
        rec.at,
        str(d.get("reason", "")),
        d.get("definition") or (old.definition if old else None),
        plan or (old.plan if old else None),
    )


def _decided(s: Schedule, rec: Record, d: Mapping[str, Any]) -> None:
    s.proposals.pop(d["promotion_id"], None)


APPLY: dict[str, Callable[[Schedule, Record, Mapping[str, Any]], None]] = {
    "schedule.session_added": _session_set,
    "schedule.session_changed": _session_set,
    "schedule.session_approved": _session_status(Status.APPROVED),
    "schedule.session_cancelled": _session_status(Status.CANCELLED),
    "schedule.promotion_set": _promotion_set,
    "schedule.promotion_added": _definition_set,
    "schedule.promotion_changed": _definition_set,
    "schedule.promotion_proposed": _proposed,
    "schedule.promotion_approved": _decided,
    "schedule.promotion_rejected": _decided,
    **TICKET_CALENDARS,  # the ticket programs' draw calendars
}

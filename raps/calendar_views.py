"""What the calendar page shows: a month of every promotion's sessions, ticket draws and
calendar occurrences; what is open now and what is next; eligible players and entered
tickets.  Plain dicts, built from the service's state (no I/O)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from selector.calendar import Calendar, Occurrence
from selector.calendar_spec import write_period
from selector.records import Record
from selector.schedule import Proposal, SessionPlan, Status
from selector.session import SessionState

if TYPE_CHECKING:
    from raps.service import Service

NEXT_ITEMS = 6


def session_row(service: Service, plan: SessionPlan) -> dict[str, Any]:
    s = service.sessions.get(plan.session_id)
    deferred = service.deferred.get(plan.session_id)  # closed, not restored yet
    started = deferred is not None or (s is not None and s.state != SessionState.SCHEDULED)
    held = deferred or s
    state = (
        "cancelled"
        if plan.status == Status.CANCELLED
        else (held.state.value if held is not None else "scheduled")
    )
    facts = service.planner.schedule.facts.get(plan.promotion_id)
    return {
        "kind": "session",
        "id": plan.session_id,
        "promotion_id": plan.promotion_id,
        "promotion": facts.name if facts else plan.promotion_id,
        "name": plan.name or plan.session_id,
        "at": plan.starts.isoformat(),
        "ends": None if plan.ends is None else plan.ends.isoformat(),
        "slots": plan.slots,
        "tables": plan.tables,
        "claim_seconds": plan.claim_seconds,
        "exclude_no_shows": plan.exclude_no_shows,
        "exclude_voided": plan.exclude_voided,
        "claim_starts": plan.claim_starts,
        "max_en_route_seconds": plan.max_en_route_seconds,
        # once opened, the flag its session.opened record carries, whatever a plan says
        "rehearsal": s.rehearsal if started and s is not None else plan.rehearsal,
        "status": plan.status.value,
        "state": state,
        "picks": len(s.picks) if s else None if deferred else 0,
        "occurrence": plan.occurrence,
        "off_calendar": plan.off_calendar,
        "changeable": not started and plan.status != Status.CANCELLED,
    }


def history(service: Service, session_id: str) -> list[dict[str, Any]]:
    """Every schedule change of one session: who, when, what and why."""
    out = []
    for rec in service.planner.schedule.records:
        if _subject(rec) == session_id:
            out.append(
                {
                    "type": rec.type.removeprefix("schedule."),
                    "at": rec.at.isoformat(),
                    "user": rec.actor.user,
                    "role": rec.actor.role,
                    "reason": rec.data.get("reason"),
                    "changed": rec.data.get("changed", []),
                }
            )
    return out


def _subject(rec: Record) -> str | None:
    d = rec.data
    sid = d.get("session_id") or (d.get("session") or {}).get("session_id")
    return str(sid) if sid is not None else None


def month_view(service: Service, month: date) -> dict[str, Any]:
    tz = ZoneInfo(service.cfg.site.timezone)
    start = datetime(month.year, month.month, 1, tzinfo=tz)
    end = (start + timedelta(days=32)).replace(day=1)
    now = service.clock()
    rows = _sorted(_sessions_and_draws(service))
    items = [i for i in rows if start <= datetime.fromisoformat(i["at"]) < end]
    items += _occurrences(service, lambda cal: cal.between(start, end))
    upcoming = [
        i for i in rows if datetime.fromisoformat(i["at"]) > now and i.get("state") != "cancelled"
    ][:NEXT_ITEMS]
    upcoming += _occurrences(service, lambda cal: cal.upcoming(now, NEXT_ITEMS))
    return {
        "month": f"{month:%Y-%m}",
        "timezone": service.cfg.site.timezone,
        "now": now.isoformat(),
        "items": _sorted(items),
        "open_now": _open_now(service, now),
        "next": _sorted(upcoming)[:NEXT_ITEMS],
        "promotions": _promotions(service),
        "ticket_calendars": _ticket_calendars(service),
        "ticket_programs": [p.id for p in service.cfg.ticket_programs],
        "areas": sorted(service.floor.layout.areas()),  # for the promotion form
    }


def _sorted(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(items, key=lambda i: (i["at"], i["kind"], i["id"]))


def _sessions_and_draws(service: Service) -> list[dict[str, Any]]:
    schedule = service.planner.schedule
    return [session_row(service, p) for p in schedule.sessions.values()] + _ticket_draws(service)


def _occurrences(
    service: Service, pick: Callable[[Calendar], list[Occurrence]]
) -> list[dict[str, Any]]:
    """The calendars' occurrences `pick` chooses (a month, the next few), but for those a
    session was made for: only those are expanded, never a whole calendar."""
    schedule = service.planner.schedule
    made = {
        (p.promotion_id, p.occurrence)
        for p in schedule.sessions.values()
        if p.occurrence is not None and p.status != Status.CANCELLED
    }
    items = []
    for pid, cal in schedule.calendars.items():
        name = schedule.facts[pid].name if pid in schedule.facts else pid
        for occ in pick(cal):
            if (pid, f"{occ.wall:%Y-%m-%d %H:%M}") in made:
                continue
            items.append(
                {
                    "kind": "occurrence",
                    "id": f"{pid}@{occ.wall:%Y-%m-%d %H:%M}",
                    "promotion_id": pid,
                    "promotion": name,
                    "name": f"{name} {occ.wall:%a %d %b %H:%M}",
                    "at": occ.at.isoformat(),
                    "condition": occ.condition,
                    "holds": None if occ.condition is None else service.conditions(occ.condition),
                    "moved_from": None
                    if occ.moved_from is None
                    else f"{occ.moved_from:%Y-%m-%d %H:%M}",
                    "reason": occ.reason,
                    "windows": {
                        k: [a.isoformat(), b.isoformat()] for k, (a, b) in occ.windows.items()
                    },
                }
            )
    return items


def _ticket_draws(service: Service) -> list[dict[str, Any]]:
    plan = service.tickets.plan
    programs = {p.program_id: p for p in plan.programs}
    made = service.ticket_calendars.made_by
    facts = service.planner.schedule.facts
    stage = service.stage
    totals: dict[str, dict[str, Any]] = {}
    out = []
    for d in plan.draws:
        bin_id = d.bin_id or d.draw_id
        if bin_id not in totals:
            totals[bin_id] = service.tickets.bin_summary(bin_id)
        promo = programs[d.program_id].promotion_id
        staged = stage.sessions.get(d.draw_id)
        condition = stage.draws[d.draw_id].condition if d.draw_id in stage.draws else None
        out.append(
            {
                "kind": "ticket_draw",
                "id": d.draw_id,
                "name": d.name or d.draw_id,
                "promotion_id": promo,
                "promotion": facts[promo].name if promo in facts else promo,
                "program": programs[d.program_id].name,
                "at": d.at.isoformat(),
                "opens": d.opens.isoformat(),
                "closes": d.closes.isoformat(),
                "winners": d.winners,
                "tickets": totals[bin_id]["tickets"],
                "players": totals[bin_id]["players"],
                "state": staged.state.value if staged is not None else "scheduled",
                "condition": condition,
                "holds": None if condition is None else service.conditions(condition),
                # the ticket calendar that made it ([program, index]), if one did
                "calendar": made.get(d.draw_id),
            }
        )
    return out


def _ticket_calendars(service: Service) -> list[dict[str, Any]]:
    """Every ticket program's draw calendars as the schedule holds them, and what waits
    for an admin (a calendar proposed new is listed after the program's own)."""
    schedule = service.planner.schedule
    out = []
    for p in service.cfg.ticket_programs:
        have = schedule.ticket_calendars.get(p.id, [])
        waiting = {w.index: w for w in schedule.ticket_proposals.values() if w.program_id == p.id}
        for k in range(max(len(have), max(waiting, default=-1) + 1)):
            w = waiting.get(k)
            entry = have[k] if k < len(have) else None
            row = {"program_id": p.id, "program": p.name or p.id, "promotion_id": p.promotion,
                   "index": k, "entry": entry, "waiting": None}  # fmt: skip
            if w is not None:
                row["waiting"] = {"by": w.actor.user, "role": w.actor.role, "at": w.at.isoformat(),
                                  "reason": w.reason, "entry": w.entry}  # fmt: skip
            out.append(row)
    return out


def _open_now(service: Service, now: datetime) -> list[dict[str, Any]]:
    """Sessions open or in their window, draws open on stage or taking entries."""
    out = []
    for plan in service.planner.live():
        row = session_row(service, plan)
        in_window = plan.ends is not None and plan.starts <= now < plan.ends
        if row["state"] == "open" or (in_window and row["state"] == "scheduled"):
            out.append({**row, "why": "open" if row["state"] == "open" else "in its window"})
    for d in _ticket_draws(service):
        if d["state"] == "open":
            out.append({**d, "why": "open on stage"})
        elif datetime.fromisoformat(d["opens"]) <= now < datetime.fromisoformat(d["closes"]):
            out.append({**d, "why": "taking entries"})
    return out


def _promotions(service: Service) -> list[dict[str, Any]]:
    """Every promotion: who qualifies, its period and calendar, eligible players now, and
    what waits for an admin's approval (a promotion proposed new is listed too)."""
    schedule = service.planner.schedule
    out = []
    for pid in [*schedule.facts, *(p for p in schedule.proposals if p not in schedule.facts)]:
        facts = schedule.facts.get(pid)
        counts: Counter[str] = Counter()
        if facts is not None:
            for (kind, _area, _tier), n in service.floor.eligible_counts(pid).items():
                counts[str(kind)] += n
        plan = schedule.promotions.get(pid)
        data = plan.to_data() if plan is not None else {}
        waiting = schedule.proposals.get(pid)
        definition = schedule.definitions.get(pid)
        proposed = (waiting.definition if waiting else None) or {}
        out.append(
            {
                "id": pid,
                "name": facts.name if facts else proposed.get("name", pid),
                "exists": facts is not None,
                "pool_kinds": sorted(facts.pool_kinds) if facts else [],
                "eligible": dict(counts),
                "eligible_total": sum(counts.values()),
                "definition": definition,
                "period": data.get("period") or write_period(None),
                "calendar": data.get("calendar"),
                "calendar_sessions": data.get("sessions"),
                "waiting": None if waiting is None else _waiting(waiting),
            }
        )
    return out


def _waiting(p: Proposal) -> dict[str, Any]:
    plan = p.plan.to_data() if p.plan is not None else None
    return {
        "by": p.actor.user,
        "role": p.actor.role,
        "at": p.at.isoformat(),
        "reason": p.reason,
        "definition": p.definition,
        "period": plan["period"] if plan else None,
        "calendar": plan["calendar"] if plan else None,
        "calendar_sessions": plan["sessions"] if plan else None,
        "changes_plan": plan is not None,
    }

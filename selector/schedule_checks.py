"""What `raps verify` checks between the schedule and the sessions and bins it governs.

- Every live session's opens and draws lie inside the window the schedule gave it, or
  follow the admin's override that let them (`session.override`, same command): one
  outside it without an override is a problem (the daemon refuses it, so a journal
  that shows one was not written by it alone).
- A live session held off its promotion's calendar is an exception the inspector is
  shown: when, why, who proposed and who approved it.
- No ticket credit cites a rehearsal: a RAPS-winner credit whose session is a
  rehearsal put training into a live bin.

Records come in as the plain dicts of the journal; nothing here reads anything else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from selector.schedule import Schedule, Status

# the records a window governs, and the override action that allows each
GOVERNED = {"session.opened": "opened", "pick.requested": "drawn"}


def window_findings(
    schedule: Schedule, by_session: Mapping[str, Sequence[Mapping[str, Any]]]
) -> tuple[list[str], list[str]]:
    """(problems, exceptions): steps outside their scheduled window with no override,
    and live sessions held off the calendar (records that cannot be read: a problem)."""
    try:
        return _outside(schedule, by_session), _off_calendar(schedule)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        return [f"windows cannot be checked: {e!r}"], []


def _outside(
    schedule: Schedule, by_session: Mapping[str, Sequence[Mapping[str, Any]]]
) -> list[str]:
    problems: list[str] = []
    for sid, plan in schedule.sessions.items():
        if plan.rehearsal or plan.ends is None:
            continue
        records = by_session.get(sid, ())
        allowed = {
            (r.get("data", {}).get("command_id"), r.get("data", {}).get("action"))
            for r in records
            if r.get("type") == "session.override"
        }
        for r in _governed(records):
            at = datetime.fromisoformat(str(r.get("at")))
            if plan.starts <= at < plan.ends:
                continue
            action = GOVERNED.get(str(r.get("type")), "drawn")
            if (r.get("data", {}).get("command_id"), action) in allowed:
                continue
            problems.append(
                f"session {sid}: {r.get('type')} at {at.isoformat()} is outside its scheduled "
                f"window {plan.starts.isoformat()} - {plan.ends.isoformat()}, with no override"
            )
    return problems


def _governed(records: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Opens and draws; a draw by its request (the step the window is checked at), or by
    the pick itself in a journal older than requests."""
    requested = any(r.get("type") == "pick.requested" for r in records)
    wanted = {"session.opened", "pick.requested" if requested else "pick.drawn"}
    return [r for r in records if r.get("type") in wanted]


def _off_calendar(schedule: Schedule) -> list[str]:
    out = []
    for sid, plan in schedule.sessions.items():
        if plan.rehearsal or not plan.off_calendar or plan.status != Status.APPROVED:
            continue
        proposed = approved = None
        for rec in schedule.records:
            d = rec.data
            if (d.get("session") or {}).get("session_id") == sid and rec.type in (
                "schedule.session_added",
                "schedule.session_changed",
            ):
                proposed = rec.actor
                approved = rec.actor if d["session"]["status"] == Status.APPROVED else None
            elif rec.type == "schedule.session_approved" and d.get("session_id") == sid:
                approved = rec.actor
        ends = "" if plan.ends is None else f" - {plan.ends.isoformat()}"
        by = f"{proposed.user} ({proposed.role})" if proposed else "?"
        ok = f"{approved.user} ({approved.role})" if approved else "?"
        out.append(
            f"session {sid} held off the calendar, {plan.starts.isoformat()}{ends}: "
            f"{plan.off_calendar!r}; proposed by {by}, approved by {ok}"
        )
    return out


def rehearsal_credits(
    records: Sequence[Mapping[str, Any]], by_session: Mapping[str, Sequence[Mapping[str, Any]]]
) -> list[str]:
    """A bin's RAPS-winner credits that cite a rehearsal session's pick."""
    out = []
    for i, r in enumerate(records, start=1):
        d = r.get("data", {})
        if r.get("type") != "tickets.credited" or d.get("cause") != "raps_winner":
            continue
        session = str(d.get("ref", "")).rpartition("#")[0]
        if any((x.get("data") or {}).get("rehearsal") for x in by_session.get(session, ())):
            out.append(
                f"record {i}: {d.get('tickets')} ticket(s) credited to a live bin for pick "
                f"{d.get('ref')} of rehearsal session {session}"
            )
    return out

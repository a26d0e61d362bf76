"""Ticket-program calendars in the schedule: the `[[ticket_programs.calendars]]` entries
(a draw calendar of one program and the templates of the draws it makes), changed like
the rest of the schedule.

Each entry is addressed by its program and its place in the program's list
(``wed-cash[1]``).  Setting one replaces it (a draw added, moved or cancelled, a rule
changed: all are edits of its calendar document) or, at the end of the list, adds it.
An admin's (or the config's) change applies at once; marketing's (or an import's) is a
proposal that waits for an admin, who approves or rejects it.  What the calendar makes
of the ticket plan (bins, entry windows, draws already opened or entered) is the
daemon's to judge: every command takes a `check` that refuses, naming the field, before
anything is recorded, and an approval is checked again as the plan then stands.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from selector.calendar_spec import plain
from selector.records import Actor, Record
from selector.schedule_plans import APPLIES, APPROVERS, ScheduleError, planner, why
from selector.session import Command

if TYPE_CHECKING:
    from selector.schedule import Schedule

ENTRY_KEYS = frozenset({"id", "name", "bin", "winners", "prizes", "calendar"})
SET = "schedule.ticket_calendar_set"
PROPOSED = "schedule.ticket_calendar_proposed"
APPROVED = "schedule.ticket_calendar_approved"
REJECTED = "schedule.ticket_calendar_rejected"
# refuses a program's calendar entry as the plan would then stand (ScheduleError, by field)
Check = Callable[[str, int, Mapping[str, Any]], None]


@dataclass(frozen=True, slots=True)
class TicketProposal:
    """A change of one ticket calendar waiting for an admin."""

    program_id: str
    index: int
    actor: Actor
    at: datetime
    reason: str
    entry: Mapping[str, Any]
    adds: bool = False  # a calendar new at the end of the list, not a change of one


def label(program_id: str, index: int) -> str:
    return f"{program_id}[{index}]"


def entry_of(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A calendar entry as the journal holds it: its known keys, TOML's dates as text."""
    if not isinstance(doc, Mapping):
        raise ScheduleError("calendar", "a table of id, name, bin, winners, prizes, calendar")
    unknown = sorted(set(doc) - ENTRY_KEYS)
    if unknown:
        raise ScheduleError(unknown[0], f"unknown key (keys: {', '.join(sorted(ENTRY_KEYS))})")
    for key in ("id", "calendar"):
        if key not in doc:
            raise ScheduleError(key, "missing")
    return {k: v for k, v in plain(doc).items() if v is not None}


def set_calendar(
    s: Schedule,
    cmd: Command,
    program_id: str,
    index: int,
    doc: Mapping[str, Any],
    reason: str,
    check: Check,
) -> list[Record]:
    """Replace (or, at the end of the list, add) a program's calendar entry: at once for
    an admin or the config, else proposed for an admin's approval."""
    if (done := s.answered(cmd.command_id)) is not None:
        return done
    planner(cmd.actor)
    entry = entry_of(doc)
    have = s.ticket_calendars.get(program_id, [])
    if not 0 <= index <= len(have):
        raise ScheduleError(
            "index", f"program {program_id!r} has {len(have)} calendar(s): 0 to {len(have)}"
        )
    if index < len(have) and have[index] == entry:
        raise ScheduleError("", "nothing changes")
    check(program_id, index, entry)
    data = {"program_id": program_id, "index": index, "ticket_calendar": label(program_id, index),
            "entry": entry}  # fmt: skip
    if cmd.actor.role in APPLIES:
        return s._commit(cmd, [(SET, data)], why(reason))
    return s._commit(cmd, [(PROPOSED, {**data, "adds": index == len(have)})], why(reason))


def decide(
    s: Schedule,
    cmd: Command,
    program_id: str,
    index: int,
    approve: bool,
    reason: str,
    check: Check,
) -> list[Record]:
    """An admin applies (checked again, as the plan stands now) or drops what waits."""
    if (done := s.answered(cmd.command_id)) is not None:
        return done
    verb = "approves" if approve else "rejects"
    if cmd.actor.role not in APPROVERS:
        raise ScheduleError("", f"only an admin {verb} a ticket calendar's change")
    key = label(program_id, index)
    waiting = s.ticket_proposals.get(key)
    if waiting is None:
        raise ScheduleError("ticket_calendar", f"no change of {key} waits for approval")
    data = {"program_id": program_id, "index": index, "ticket_calendar": key}
    if not approve:
        return s._commit(cmd, [(REJECTED, data)], why(reason))
    have = s.ticket_calendars.get(program_id, [])
    if index > len(have) or (waiting.adds and index != len(have)):
        raise ScheduleError(
            "index", f"program {program_id!r} has {len(have)} calendar(s) now: propose it again"
        )
    check(program_id, index, waiting.entry)
    by = {"user": waiting.actor.user, "role": waiting.actor.role}
    steps = [(APPROVED, {**data, "proposed_by": by}), (SET, {**data, "entry": dict(waiting.entry)})]
    return s._commit(cmd, steps, why(reason))


# ------------------------------------------------------------------ replay


def _set(s: Schedule, rec: Record, d: Mapping[str, Any]) -> None:
    have = s.ticket_calendars.setdefault(str(d["program_id"]), [])
    index, entry = int(d["index"]), dict(d["entry"])
    if index == len(have):
        have.append(entry)
    else:
        have[index] = entry


def _proposed(s: Schedule, rec: Record, d: Mapping[str, Any]) -> None:
    pid, index = str(d["program_id"]), int(d["index"])
    s.ticket_proposals[label(pid, index)] = TicketProposal(
        pid, index, rec.actor, rec.at, str(d.get("reason", "")), dict(d["entry"]),
        bool(d.get("adds", False)),
    )  # fmt: skip


def _decided(s: Schedule, rec: Record, d: Mapping[str, Any]) -> None:
    s.ticket_proposals.pop(label(str(d["program_id"]), int(d["index"])), None)


APPLY: dict[str, Callable[[Schedule, Record, Mapping[str, Any]], None]] = {
    SET: _set,
    PROPOSED: _proposed,
    APPROVED: _decided,
    REJECTED: _decided,
}

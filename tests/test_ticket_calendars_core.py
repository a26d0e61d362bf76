"""The ticket programs' draw calendars in the pure schedule (selector.ticket_calendars):
marketing's change waits and a later one replaces it, an admin's applies at once, a
refused check records nothing, approval checks again, and replay gives the same."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from selector.records import Actor, Record
from selector.schedule import Schedule, ScheduleError
from selector.session import Command
from selector.ticket_calendars import decide, set_calendar
from tests.builders import NOON

ANN, ADA = Actor("ann", "marketing"), Actor("ada", "admin")
ENTRY = {
    "id": "teeds-{at:%Y-%m-%d-%H%M}",
    "winners": 5,
    "calendar": {
        "dated": [{"dates": [datetime(2026, 4, 25).date()], "times": ["20:00"]}],
        "windows": {"entry": {"start": "08:00", "end": "-5m"}},
    },
}


def cmd(n: int, actor: Actor) -> Command:
    return Command(f"c{n}", actor, NOON)


def ok(_program: str, _index: int, _entry: Any) -> None:
    return None


def test_proposed_approved_replayed_and_a_refusal_records_nothing() -> None:
    s = Schedule({})
    first = set_calendar(s, cmd(1, ADA), "teeds", 0, ENTRY, "seeded", ok)
    assert [r.type for r in first] == ["schedule.ticket_calendar_set"]
    assert s.ticket_calendars["teeds"][0]["calendar"]["dated"][0]["dates"] == ["2026-04-25"]
    assert set_calendar(s, cmd(1, ADA), "teeds", 0, ENTRY, "again", ok) == first  # a retry

    moved = {**ENTRY, "winners": 6}
    set_calendar(s, cmd(2, ANN), "teeds", 0, moved, "six winners", ok)
    later = {**ENTRY, "winners": 7}
    set_calendar(s, cmd(3, ANN), "teeds", 0, later, "no, seven", ok)
    assert s.ticket_calendars["teeds"][0]["winners"] == 5  # waiting, not applied
    assert s.ticket_proposals["teeds[0]"].entry["winners"] == 7  # the later one

    def refuse(_p: str, _i: int, _e: Any) -> None:
        raise ScheduleError("calendar", "a draw with entries cannot move")

    kept = len(s.records)
    with pytest.raises(ScheduleError, match="a draw with entries"):
        decide(s, cmd(4, ADA), "teeds", 0, True, "ok", refuse)
    with pytest.raises(ScheduleError) as bad:
        set_calendar(s, cmd(5, ADA), "teeds", 2, ENTRY, "a gap", ok)
    assert bad.value.key == "index"
    with pytest.raises(ScheduleError) as bad:
        set_calendar(s, cmd(6, ADA), "teeds", 1, {**ENTRY, "colour": "red"}, "x", ok)
    assert bad.value.key == "colour"
    with pytest.raises(ScheduleError, match="only an admin approves"):
        decide(s, cmd(7, ANN), "teeds", 0, True, "mine", ok)
    assert len(s.records) == kept and "teeds[0]" in s.ticket_proposals

    done = decide(s, cmd(8, ADA), "teeds", 0, True, "agreed", ok)
    assert [r.type for r in done] == [
        "schedule.ticket_calendar_approved",
        "schedule.ticket_calendar_set",
    ]
    assert done[0].data["proposed_by"] == {"user": "ann", "role": "marketing"}
    assert s.ticket_calendars["teeds"][0]["winners"] == 7 and not s.ticket_proposals
    set_calendar(s, cmd(9, ADA), "teeds", 1, ENTRY, "a second calendar", ok)
    again = Schedule.replay({}, [Record.from_dict(r.to_dict()) for r in s.records])
    assert again.ticket_calendars == s.ticket_calendars
    assert again.ticket_proposals == s.ticket_proposals

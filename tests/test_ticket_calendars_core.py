"""The ticket programs' draw calendars in the pure schedule (selector.ticket_calendars):
marketing's change waits and a later one replaces it, an admin's applies at once, a
refused check records nothing, approval checks again, and replay gives the same."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from selector.events import Tier
from selector.records import Actor, Record
from selector.schedule import Schedule, ScheduleError
from selector.session import Command
from selector.ticket_calendars import decide, set_calendar
from selector.tickets import PeriodRule, TicketDraw, TicketLedger, TicketPlan, TicketProgram
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
    # marketing's new calendar waits; an admin adds another first: the proposal's place
    # is taken, and its approval is refused (it would replace the admin's)
    set_calendar(s, cmd(9, ANN), "teeds", 1, {**ENTRY, "winners": 2}, "a second", ok)
    set_calendar(s, cmd(10, ADA), "teeds", 1, ENTRY, "a second calendar", ok)
    with pytest.raises(ScheduleError, match="has 2 calendar"):
        decide(s, cmd(11, ADA), "teeds", 1, True, "ok", ok)
    assert s.ticket_calendars["teeds"][1]["winners"] == 5
    again = Schedule.replay({}, [Record.from_dict(r.to_dict()) for r in s.records])
    assert again.ticket_calendars == s.ticket_calendars
    assert again.ticket_proposals == s.ticket_proposals


def test_a_replanned_ledger_credits_the_points_already_earned_in_a_moved_bin() -> None:
    """000's car draws earn from 27 September until each draw: a draw moved after the
    first one is held gets the points its card earned so far, credited at the change;
    a fresh ledger replanned at start still takes its snapshot."""
    tz = "Africa/Johannesburg"
    zone = ZoneInfo(tz)

    def at(month: int, day: int, hour: int, minute: int = 0) -> datetime:
        return datetime(2025, month, day, hour, minute, tzinfo=zone)

    program = TicketProgram(
        program_id="car", promotion_id="heat", rates={Tier.JACK: 100},
        period=PeriodRule.fixed_start_to_draw(datetime(2025, 9, 27, 8), tz=tz),
    )  # fmt: skip

    def draw(draw_id: str, month: int, day: int, hour: int) -> TicketDraw:
        return TicketDraw(draw_id=draw_id, program_id="car", at=at(month, day, hour),
                          opens=at(month, day, 8), closes=at(month, day, hour - 1))  # fmt: skip

    before = TicketPlan([program], [draw("oct", 10, 25, 15), draw("nov", 11, 29, 15)], tz)
    after = TicketPlan([program], [draw("oct", 10, 25, 15), draw("nov-late", 11, 29, 19)], tz)
    ledger = TicketLedger(before, tier_of=lambda _card: Tier.JACK)
    ledger.credit_points("c1", Tier.JACK, at(10, 1, 12).timestamp(), 250_000, "e1")
    assert [ledger.credited_from_points("c1", b) for b in ("oct", "nov")] == [2, 2]
    ledger.take_records()
    now = at(11, 1, 12).timestamp()  # after the October draw
    snap = ledger.snapshot(now)
    ledger.replan(after, now)
    assert ledger.credited_from_points("c1", "nov-late") == 2
    [credit] = ledger.take_records()
    assert (credit.bin_id, credit.ref) == ("nov-late", f"calendar:{now:.0f}")
    ledger.replan(after, now)  # settling again adds nothing
    assert ledger.take_records() == []

    fresh = TicketLedger(before, tier_of=lambda _card: Tier.JACK)
    fresh.replan(after, now)  # at start: the schedule's plan, before the restore
    fresh.restore(snap)
    assert fresh.points_milli("c1", "nov-late") == 250_000

"""Promotion calendars against the dates in the seeds, their exceptions, and DST."""

from __future__ import annotations

import json
from datetime import date, datetime, time, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from selector.calendar import (
    Calendar,
    CalendarError,
    Cancelled,
    Conditional,
    Dated,
    Edge,
    Moved,
    Weekly,
    Window,
)

SAST = "Africa/Johannesburg"
LONDON = "Europe/London"
SEEDS = Path(__file__).resolve().parent.parent / "config" / "seeds"
WED, THU, SAT = 2, 3, 5
H = timedelta(hours=1)


# the 000 seed's draws as config/seeds/gold-reef-city.toml listed them one by one,
# before its programs' calendars made them (tests/test_config_tickets.py compares)
LISTED = Path(__file__).resolve().parent / "data" / "gold-reef-city-draws.json"


def seed_draws(program: str) -> list[datetime]:
    """The draw times of a program, as the seed's list had them."""
    rows = json.loads(LISTED.read_text(encoding="utf-8"))
    return sorted(datetime.fromisoformat(d["at"]) for d in rows if d["program"] == program)


def walls(cal: Calendar, **conditions: bool) -> list[datetime]:
    return [o.wall for o in cal.occurrences(conditions or None)]


def test_000_wednesdays_at_13_and_20_with_22_october_moved_to_tuesday() -> None:
    """000 rules 4-46: every Wednesday of Oct-Dec 2025 at 13:00 and 20:00; the draws of
    22 October move to Tuesday 21 October (rule text, 13:00 and 20:00 sections)."""
    cal = Calendar(
        SAST,
        [Weekly((WED,), (time(13), time(20)), date(2025, 10, 1), date(2025, 12, 31))],
        moved=[
            Moved(datetime(2025, 10, 22, 13), datetime(2025, 10, 21, 13), "rule text"),
            Moved(datetime(2025, 10, 22, 20), datetime(2025, 10, 21, 20), "rule text"),
        ],
    )
    assert walls(cal) == seed_draws("wed-cash")
    assert len(walls(cal)) == 28
    moved = [o for o in cal.occurrences() if o.moved_from is not None]
    assert [o.moved_from for o in moved] == [datetime(2025, 10, 22, 13), datetime(2025, 10, 22, 20)]


def test_000_queen_thursdays_with_23_october_moved_to_sunday_13_00() -> None:
    """000 rule 48: every Thursday at 20:00, except 23 October: Sunday 26 October 13:00."""
    cal = Calendar(
        SAST,
        [Weekly((THU,), (time(20),), date(2025, 10, 1), date(2025, 12, 31))],
        moved=[Moved(datetime(2025, 10, 23, 20), datetime(2025, 10, 26, 13), "rule 48")],
    )
    assert walls(cal) == seed_draws("queen-thu")
    sunday = next(o for o in cal.occurrences() if o.moved_from is not None)
    assert sunday.wall.weekday() == 6 and sunday.at.tzinfo is not None


def test_000_selected_saturdays_and_the_conditional_vault_share_draw() -> None:
    """000 rules 99-150: the cash Saturdays at 15:00, 19:00 and 21:00, and 20 December
    21:30 only if the safe was not cracked during the promotion (rule 135)."""
    saturdays = (date(2025, 10, 4), date(2025, 11, 1), date(2025, 12, 20))
    cal = Calendar(
        SAST,
        [Dated(saturdays, (time(15), time(19), time(21)))],
        conditional=[Conditional(datetime(2025, 12, 20, 21, 30), "safe_not_cracked")],
    )
    assert walls(cal) == seed_draws("sat-cash")  # undecided: listed, marked
    assert walls(cal, safe_not_cracked=False) == seed_draws("sat-cash")[:-1]
    last = cal.occurrences()[-1]
    assert last.condition == "safe_not_cracked" and last.wall == datetime(2025, 12, 20, 21, 30)


def test_003_raps_sessions_18_to_19_on_four_saturdays() -> None:
    """003: RAPS sessions only 18:00-19:00 on 25 Apr, 2 May, 30 May and 27 Jun 2026, within
    the promotion's period: a session is open and drawn only inside its window."""
    days = (date(2026, 4, 25), date(2026, 5, 2), date(2026, 5, 30), date(2026, 6, 27))
    cal = Calendar(
        SAST,
        [Dated(days, (time(18),))],
        windows=[Window("raps", Edge(offset=timedelta(0)), Edge(at_time=time(19)))],
        period=(date(2026, 4, 18), date(2026, 6, 27)),
    )
    tz = ZoneInfo(SAST)
    assert [o.wall.date() for o in cal.occurrences()] == list(days)
    assert cal.in_window("raps", datetime(2026, 4, 25, 18, 0, tzinfo=tz)) is not None
    assert cal.in_window("raps", datetime(2026, 4, 25, 18, 59, 59, tzinfo=tz)) is not None
    assert cal.in_window("raps", datetime(2026, 4, 25, 19, 0, tzinfo=tz)) is None
    assert cal.in_window("raps", datetime(2026, 4, 29, 10, 0, tzinfo=tz)) is None  # a Wednesday
    nxt = cal.next_after(datetime(2026, 5, 3, tzinfo=tz))
    assert nxt is not None and nxt.wall == datetime(2026, 5, 30, 18)


def test_windows_tied_to_each_occurrence_entry_and_proxy_deadline() -> None:
    """000: entries from 08:00 until 12:55 for the 13:00 draw; proxy forms until 15
    minutes before the draw."""
    cal = Calendar(
        SAST,
        [Dated((date(2025, 10, 1),), (time(13),))],
        windows=[
            Window("entry", Edge(at_time=time(8)), Edge(offset=-timedelta(minutes=5))),
            Window("proxy", Edge(at_time=time(8)), Edge(offset=-timedelta(minutes=15))),
        ],
    )
    occ = cal.occurrences()[0]
    tz = ZoneInfo(SAST)
    assert occ.window("entry") == (
        datetime(2025, 10, 1, 8, tzinfo=tz),
        datetime(2025, 10, 1, 12, 55, tzinfo=tz),
    )
    assert occ.window("proxy")[1] == datetime(2025, 10, 1, 12, 45, tzinfo=tz)


def test_wall_times_hold_across_dst_and_a_skipped_time_is_refused() -> None:
    """Europe/London: 13:00 stays 13:00 on both sides of the October change; 01:30 on 29
    March 2026 does not exist there; 01:30 on 25 October 2026 is its first passing."""
    cal = Calendar(LONDON, [Weekly((6,), (time(13),), date(2026, 10, 18), date(2026, 11, 1))])
    offsets = [o.at.utcoffset() for o in cal.occurrences()]
    assert [o.wall.hour for o in cal.occurrences()] == [13, 13, 13]
    assert offsets == [H, timedelta(0), timedelta(0)]
    with pytest.raises(CalendarError, match=r"rules\[0\]: 2026-03-29 01:30 does not exist"):
        Calendar(LONDON, [Dated((date(2026, 3, 29),), (time(1, 30),))])
    twice = Calendar(LONDON, [Dated((date(2026, 10, 25),), (time(1, 30),))]).occurrences()[0]
    assert twice.at.utcoffset() == H  # the first 01:30 (BST)
    # an offset is elapsed time: an hour after 00:30 GMT on the night the clocks go
    # forward is 02:30 BST; a time-of-day edge the clocks skip is refused
    window = Window("raps", Edge(offset=timedelta(0)), Edge(offset=H))
    night = Calendar(LONDON, [Dated((date(2026, 3, 29),), (time(0, 30),))], windows=[window])
    end = night.occurrences()[0].window("raps")[1]
    assert (end.hour, end.minute, end.utcoffset()) == (2, 30, H)
    skipped = Window("raps", Edge(offset=timedelta(0)), Edge(at_time=time(1, 30)))
    with pytest.raises(CalendarError, match=r"window 'raps' end: 2026-03-29 01:30 does not"):
        Calendar(LONDON, [Dated((date(2026, 3, 29),), (time(0, 30),))], windows=[skipped])


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: Calendar(
                SAST,
                [
                    Weekly((WED,), (time(13),), date(2025, 10, 1), date(2025, 10, 31)),
                    Dated((date(2025, 10, 8),), (time(13),)),
                ],
            ),
            r"rules\[1\]: Wed 08 Oct 2025 13:00 is already given by rules\[0\]",
        ),
        (
            lambda: Calendar(
                SAST, [Weekly((WED,), (time(13),), date(2025, 12, 1), date(2025, 10, 1))]
            ),
            r"weekly rule: last 2025-10-01 is before first 2025-12-01",
        ),
        (
            lambda: Calendar(
                SAST,
                [Dated((date(2025, 10, 1),), (time(13),))],
                moved=[Moved(datetime(2025, 10, 2, 13), datetime(2025, 10, 3, 13), "x")],
            ),
            r"moved\[0\]: no rule gives 2025-10-02 13:00",
        ),
        (
            lambda: Calendar(
                SAST,
                [Dated((date(2025, 10, 1),), (time(13),))],
                windows=[Window("raps", Edge(at_time=time(18)), Edge(at_time=time(17)))],
            ),
            r"rules\[0\]: window 'raps' ends \(17:00\) before it starts \(18:00\)",
        ),
        (
            lambda: Calendar(
                SAST,
                [Dated((date(2026, 7, 4),), (time(18),))],
                period=(date(2026, 4, 18), date(2026, 6, 27)),
            ),
            r"2026-07-04 18:00 is outside the promotion's period",
        ),
        (
            lambda: Calendar(
                SAST,
                [Dated((date(2025, 10, 1),), (time(13),))],
                moved=[Moved(datetime(2025, 10, 1, 13), datetime(2025, 10, 1, 13, 0), "same")],
                conditional=[Conditional(datetime(2025, 10, 1, 13), "x")],
            ),
            r"conditional\[0\]: Wed 01 Oct 2025 13:00 already has an occurrence",
        ),
        (
            lambda: Calendar(
                SAST,
                [Dated((date(2025, 10, 1),), (time(13),))],
                cancelled=[Cancelled(datetime(2025, 10, 1, 20), "no")],
            ),
            r"cancelled\[0\]: no rule gives 2025-10-01 20:00",
        ),
    ],
    ids=[
        "overlap",
        "ends first",
        "moved unknown",
        "window backwards",
        "outside period",
        "clash",
        "cancel unknown",
    ],
)
def test_impossible_calendars_are_refused_naming_the_entry(build: object, message: str) -> None:
    with pytest.raises(CalendarError, match=message):
        build()  # type: ignore[operator]


def test_a_calendar_spans_at_most_three_years_and_5000_occurrences_naming_the_rule() -> None:
    """A 100-year weekly rule is refused from its size, before a date is made (it took a
    second and 84 MB under the journal lock); so is a calendar too long or too dense."""
    from selector.calendar_spec import SpecError, read_calendar

    def weekly(first: str, last: str, times: list[str]) -> dict[str, object]:
        return {"weekly": [{"weekdays": ["mon", "wed", "sat"], "times": times,
                            "first": first, "last": last}]}  # fmt: skip

    with pytest.raises(SpecError) as e:
        read_calendar(weekly("2025-01-01", "2124-12-31", ["13:00"]), SAST)
    assert (
        e.value.key == "weekly[0].last"
        and "spans 36524 days; a calendar spans at most 1098 days" in e.value.reason
    )
    hourly = [f"{h:02d}:00" for h in range(24)]
    with pytest.raises(SpecError) as e:
        read_calendar(weekly("2025-01-01", "2026-06-30", hourly), SAST)
    assert e.value.key == "weekly[0]" and "over 5,000 occurrences" in e.value.reason
    far = {"dated": [{"dates": ["2025-01-04", "2028-06-03"], "times": ["18:00"]}]}
    with pytest.raises(SpecError, match="runs from 2025-01-04 to 2028-06-03"):
        read_calendar(far, SAST)
    year = read_calendar(weekly("2025-10-01", "2026-09-30", ["13:00", "20:00"]), SAST)
    tz = ZoneInfo(SAST)
    october = year.between(datetime(2025, 10, 1, tzinfo=tz), datetime(2025, 11, 1, tzinfo=tz))
    assert len(october) == 26 and october == [
        o for o in year.occurrences() if o.wall.month == 10 and o.wall.year == 2025
    ]
    assert [o.wall for o in year.upcoming(datetime(2025, 10, 1, 13, tzinfo=tz), 2)] == [
        datetime(2025, 10, 1, 20),
        datetime(2025, 10, 4, 13),
    ]

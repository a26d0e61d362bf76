"""Ticket programs, earning periods and plans: the seeds' calendars as configuration.

The two seed plans built here are test fixtures (imported by the other test_tickets_*
files); nothing of them is hard-coded in selector/tickets.  Where a seed's table is
missing (003's period table, app-bonus and RAPS-winner tables; 000's Wednesday and
Saturday points tables) the values are made up and say so.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from selector.events import Tier
from selector.tickets import PeriodRule, TicketDraw, TicketPlan, TicketProgram

SAST = ZoneInfo("Africa/Johannesburg")
LONDON = ZoneInfo("Europe/London")
COMPLIMENTARY_000 = {Tier.ACE: 50, Tier.KING: 40, Tier.QUEEN: 30, Tier.JACK: 20, Tier.TEN: 10}
TEEDS_GROUPS = {  # 003: program id -> (tiers with points per ticket, draw hour)
    "teeds-tj": ({Tier.TEN: 50, Tier.JACK: 50}, 20),
    "teeds-q": ({Tier.QUEEN: 100}, 21),
    "teeds-ka": ({Tier.KING: 200, Tier.ACE: 200}, 22),
}
TEEDS_DAYS = (date(2026, 4, 25), date(2026, 5, 2), date(2026, 5, 30), date(2026, 6, 27))
APP_BONUS_003 = {Tier.TEN: 1, Tier.JACK: 2, Tier.QUEEN: 3, Tier.KING: 4, Tier.ACE: 5}  # made up
RAPS_BONUS_003 = {Tier.TEN: 5, Tier.JACK: 5, Tier.QUEEN: 10, Tier.KING: 20, Tier.ACE: 20}  # made up


def at(d: date, hour: int, minute: int = 0, second: int = 0, tz: ZoneInfo = SAST) -> datetime:
    return datetime(d.year, d.month, d.day, hour, minute, second, tzinfo=tz)


def draw(
    draw_id: str, program_id: str, when: datetime, opens: time, closes: time, **kw: Any
) -> TicketDraw:
    day = when.date()
    return TicketDraw(
        draw_id=draw_id,
        program_id=program_id,
        at=when,
        opens=datetime.combine(day, opens, when.tzinfo),
        closes=datetime.combine(day, closes, when.tzinfo),
        **kw,
    )


def golden_horse_plan(
    use: str = "previous", anchor: datetime = datetime(2026, 4, 18)
) -> TicketPlan:
    """003 TEEDS: three tier-group programs over 7-day windows (the period table is missing:
    windows from Saturday 18 Apr 00:00, a draw uses the `use` window); draws on the four
    Saturdays at 20:00 / 21:00 / 22:00, entries 08:00 until 5 minutes before (made up)."""
    period = PeriodRule.fixed_windows(anchor, 7, last_end=datetime(2026, 6, 28), use=use)
    programs, draws = [], []
    for pid, (rates, hour) in TEEDS_GROUPS.items():
        tiers = frozenset(rates)
        programs.append(
            TicketProgram(
                program_id=pid,
                promotion_id="golden-horse",
                period=period,
                rates=rates,
                tiers=tiers,
                app_bonus={t: APP_BONUS_003[t] for t in tiers},
                raps_winner_bonus={t: RAPS_BONUS_003[t] for t in tiers},
            )
        )
        for day in TEEDS_DAYS:
            draws.append(draw(f"{pid}-{day:%m%d}", pid, at(day, hour), time(8), time(hour - 1, 55)))
    return TicketPlan(programs, draws)


def wednesdays_2025() -> list[date]:
    d, out = date(2025, 10, 1), []
    while d.year == 2025:
        out.append(d)
        d += timedelta(days=7)
    return out


def gold_reef_plan() -> TicketPlan:
    """000 "Turn up the heat", Oct-Dec 2025: Wednesday cash (13:00, 20:00; 22 Oct moved to
    Tue 21 Oct; 50 points a ticket per day: made up), Queen Thursdays (month to draw, 23 Oct
    moved to Sun 26 Oct 13:00), car draws (from 27 Sep 08:00) and Saturday cash draws
    (4 Oct, 1 Nov, 20 Dec picked; per day: made up) sharing one bin per day, with the
    21:30 vault draw on 20 Dec."""
    programs = [
        TicketProgram(
            program_id="wed-cash",
            promotion_id="gold-reef",
            period=PeriodRule.day_to_draw(time(8)),
            rates={t: 50 for t in Tier},
        ),
        TicketProgram(
            program_id="queen-thu",
            promotion_id="gold-reef",
            period=PeriodRule.month_to_draw(time(8)),
            rates={Tier.QUEEN: 100},
            complimentary={Tier.QUEEN: 10},
            tiers=frozenset({Tier.QUEEN}),
        ),
        TicketProgram(
            program_id="car",
            promotion_id="gold-reef",
            period=PeriodRule.fixed_start_to_draw(datetime(2025, 9, 27, 8)),
            rates={t: 100 for t in Tier},
            complimentary=COMPLIMENTARY_000,
        ),
        TicketProgram(
            program_id="sat-cash",
            promotion_id="gold-reef",
            period=PeriodRule.day_to_draw(time(8)),
            rates={t: 50 for t in Tier},
            complimentary=COMPLIMENTARY_000,
        ),
    ]
    draws: list[TicketDraw] = []
    for wed in wednesdays_2025():
        day = date(2025, 10, 21) if wed == date(2025, 10, 22) else wed
        draws.append(draw(f"wed-{day}-1300", "wed-cash", at(day, 13), time(8), time(12, 55)))
        draws.append(draw(f"wed-{day}-2000", "wed-cash", at(day, 20), time(13), time(19, 55)))
        thu = wed + timedelta(days=1)
        if thu == date(2025, 10, 23):
            sun = date(2025, 10, 26)
            draws.append(draw(f"queen-{sun}", "queen-thu", at(sun, 13), time(8), time(12, 55)))
        else:
            draws.append(draw(f"queen-{thu}", "queen-thu", at(thu, 20), time(8), time(19, 55)))
    saturday_draws = [(15, time(14, 55)), (19, time(18, 55)), (21, time(20, 55))]
    for prog, days in (("car", (25, 29, 27)), ("sat-cash", (4, 1, 20))):
        for month, dom in zip((10, 11, 12), days, strict=True):
            day = date(2025, month, dom)
            hours = saturday_draws + ([(21.5, time(20, 55))] if day == date(2025, 12, 20) else [])
            for hour, closes in hours:
                when = at(day, int(hour), 30 if hour % 1 else 0)
                draws.append(
                    draw(
                        f"{prog}-{day}-{when:%H%M}",
                        prog,
                        when,
                        time(8),
                        closes,
                        bin_id=f"{prog}-{day}",
                    )
                )
    return TicketPlan(programs, draws)


def spans(plan: TicketPlan, bin_id: str) -> tuple[datetime, datetime]:
    b = plan.bins[bin_id]
    return datetime.fromtimestamp(b.start, SAST), datetime.fromtimestamp(b.end, SAST)


# ------------------------------------------------------------------ the seeds' periods


def test_003_windows_are_seven_days_from_the_anchor_and_a_draw_uses_the_previous_one() -> None:
    plan = golden_horse_plan("previous")
    assert spans(plan, "teeds-tj-0425") == (at(date(2026, 4, 18), 0), at(date(2026, 4, 25), 0))
    assert spans(plan, "teeds-ka-0502") == (at(date(2026, 4, 25), 0), at(date(2026, 5, 2), 0))
    assert spans(plan, "teeds-q-0530") == (at(date(2026, 5, 23), 0), at(date(2026, 5, 30), 0))


def test_003_a_containing_window_is_cut_at_the_draw() -> None:
    plan = golden_horse_plan("containing")
    assert spans(plan, "teeds-tj-0425") == (at(date(2026, 4, 25), 0), at(date(2026, 4, 25), 20))
    assert spans(plan, "teeds-ka-0425") == (at(date(2026, 4, 25), 0), at(date(2026, 4, 25), 22))


def test_003_earning_stops_at_the_last_end() -> None:
    period = PeriodRule.fixed_windows(
        datetime(2026, 4, 18), 7, last_end=datetime(2026, 6, 24), use="previous"
    )
    start, end = period.interval(at(date(2026, 6, 27), 20))
    assert end == at(date(2026, 6, 24), 0).timestamp()
    assert start == at(date(2026, 6, 20), 0).timestamp()


def test_000_queen_months_start_at_0800_on_the_first_and_end_at_each_draw() -> None:
    plan = gold_reef_plan()
    assert spans(plan, "queen-2025-10-02") == (at(date(2025, 10, 1), 8), at(date(2025, 10, 2), 20))
    assert spans(plan, "queen-2025-10-26") == (at(date(2025, 10, 1), 8), at(date(2025, 10, 26), 13))
    assert spans(plan, "queen-2025-11-06") == (at(date(2025, 11, 1), 8), at(date(2025, 11, 6), 20))
    assert spans(plan, "queen-2025-12-25") == (at(date(2025, 12, 1), 8), at(date(2025, 12, 25), 20))


def test_000_queen_thursday_23_october_moves_to_sunday_26_october_1300() -> None:
    plan = gold_reef_plan()
    assert "queen-2025-10-23" not in plan.bins
    assert plan.draw("queen-2025-10-26").at == at(date(2025, 10, 26), 13)
    assert "wed-2025-10-22-1300" not in plan.bins and "wed-2025-10-21-2000" in plan.bins


def test_000_car_draws_earn_from_0800_on_27_september_until_the_days_last_draw() -> None:
    plan = gold_reef_plan()
    start = at(date(2025, 9, 27), 8)
    assert spans(plan, "car-2025-10-25") == (start, at(date(2025, 10, 25), 21))
    assert spans(plan, "car-2025-12-27") == (start, at(date(2025, 12, 27), 21))
    assert [d.draw_id for d in plan.bins["car-2025-11-29"].draws] == [
        "car-2025-11-29-1500",
        "car-2025-11-29-1900",
        "car-2025-11-29-2100",
    ]


def test_000_vault_share_draw_at_2130_shares_the_days_bin() -> None:
    plan = gold_reef_plan()
    vault = plan.draw("sat-cash-2025-12-20-2130")
    assert vault.bin_id == "sat-cash-2025-12-20" == plan.draw("sat-cash-2025-12-20-2100").bin_id
    assert plan.resolve("sat-cash-2025-12-20-2130") is plan.bins["sat-cash-2025-12-20"]
    assert spans(plan, "sat-cash-2025-12-20")[1] == at(date(2025, 12, 20), 21, 30)


# ------------------------------------------------------------------ DST


def test_fixed_windows_keep_their_local_start_across_both_dst_changes() -> None:
    """Europe/London: BST starts 29 Mar 2026 and ends 25 Oct 2026; windows start 08:00."""
    period = PeriodRule.fixed_windows(
        datetime(2026, 3, 21, 8), 7, use="containing", tz="Europe/London"
    )
    start, _ = period.interval(at(date(2026, 4, 2), 20, tz=LONDON))
    assert datetime.fromtimestamp(start, LONDON) == at(date(2026, 3, 28), 8, tz=LONDON)
    prev = PeriodRule.fixed_windows(datetime(2026, 3, 21, 8), 7, use="previous", tz="Europe/London")
    s, e = prev.interval(at(date(2026, 4, 4), 20, tz=LONDON))  # the window with the change
    assert (e - s) / 3600 == 7 * 24 - 1
    assert datetime.fromtimestamp(e, LONDON).hour == 8
    s, e = prev.interval(at(date(2026, 10, 31), 20, tz=LONDON))
    assert (e - s) / 3600 == 7 * 24 + 1  # 24 Oct 08:00 BST to 31 Oct 08:00 GMT
    assert datetime.fromtimestamp(s, LONDON).hour == datetime.fromtimestamp(e, LONDON).hour == 8


def test_month_and_day_periods_are_dst_safe() -> None:
    month = PeriodRule.month_to_draw(time(8), tz="Europe/London")
    s, _ = month.interval(at(date(2025, 10, 30), 20, tz=LONDON))  # BST on the 1st, GMT now
    assert datetime.fromtimestamp(s, LONDON) == at(date(2025, 10, 1), 8, tz=LONDON)
    day = PeriodRule.day_to_draw(time(8), tz="Europe/London")
    s, e = day.interval(at(date(2026, 3, 29), 13, tz=LONDON))  # the day the clocks go forward
    assert datetime.fromtimestamp(s, LONDON) == at(date(2026, 3, 29), 8, tz=LONDON)
    assert (e - s) / 3600 == 5
    # a draw given in another zone is placed by the site's wall time
    s, _ = day.interval(datetime(2026, 3, 29, 23, 30, tzinfo=ZoneInfo("Asia/Tokyo")))
    assert datetime.fromtimestamp(s, LONDON) == at(date(2026, 3, 29), 8, tz=LONDON)


# ------------------------------------------------------------------ validation


def program(pid: str = "p", **kw: Any) -> TicketProgram:
    kw.setdefault("period", PeriodRule.day_to_draw())
    return TicketProgram(program_id=pid, promotion_id="promo", **kw)


SAT = date(2025, 10, 4)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: TicketPlan([program(), program()], []),
            "programs[1].program_id: 'p' is defined twice",
        ),
        (
            lambda: TicketPlan(
                [program()],
                [
                    draw("d", "p", at(SAT, 13), time(8), time(12)),
                    draw("d", "p", at(SAT, 20), time(8), time(12)),
                ],
            ),
            "draw_id 'd' is defined twice",
        ),
        (
            lambda: TicketPlan([program()], [draw("d", "nope", at(SAT, 13), time(8), time(12))]),
            "draw 'd': program_id: unknown program 'nope'",
        ),
        (lambda: draw("d", "p", at(SAT, 13), time(12), time(8)), "closes"),
        (lambda: draw("d", "p", at(SAT, 13), time(8), time(13, 5)), "must not be after the draw"),
        (
            lambda: TicketPlan(
                [program("a"), program("b")],
                [
                    draw("x", "a", at(SAT, 13), time(8), time(12), bin_id="shared"),
                    draw("y", "b", at(SAT, 20), time(8), time(12), bin_id="shared"),
                ],
            ),
            "bin_id 'shared' is shared by draws of programs ['a', 'b']",
        ),
        (
            lambda: TicketPlan(
                [program()],
                [
                    draw("x", "p", at(SAT, 13), time(8), time(12), bin_id="b"),
                    draw("y", "p", at(SAT, 20), time(8), time(12), bin_id="x"),
                ],
            ),
            "draw 'x': draw_id is also the bin_id of other draws",
        ),
        (
            lambda: TicketPlan(
                [program()],
                [
                    draw("x", "p", at(SAT, 13), time(8), time(12), bin_id="b"),
                    draw("y", "p", at(SAT + timedelta(days=1), 20), time(8), time(12), bin_id="b"),
                ],
            ),
            "earn from different period starts",
        ),
    ],
)
def test_plan_refuses_inconsistent_config(build: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        build()


def test_a_fixed_windows_program_with_overlapping_periods_is_refused() -> None:
    """Two bins of one program earning from the same week would count its points twice."""
    period = PeriodRule.fixed_windows(datetime(2026, 4, 18), 7, use="containing")
    p = program("teeds", period=period, rates={Tier.JACK: 50})
    day = date(2026, 4, 25)
    draws = [
        draw("early", "teeds", at(day, 20), time(8), time(19)),
        draw("late", "teeds", at(day, 22), time(8), time(21)),
    ]
    with pytest.raises(ValueError, match=r"program 'teeds': period: bins 'early' .* overlap"):
        TicketPlan([p], draws)
    TicketPlan(
        [p], [draws[0], draw("late", "teeds", at(day, 22), time(8), time(21), bin_id="early")]
    )  # one bin: fine


def test_cumulative_periods_may_overlap() -> None:
    """000 car draws: the same points earn tickets for every car draw until it is held."""
    plan = gold_reef_plan()
    oct_, nov = plan.bins["car-2025-10-25"], plan.bins["car-2025-11-29"]
    assert oct_.start == nov.start and oct_.end < nov.end


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: PeriodRule.fixed_windows(datetime(2026, 4, 18), 0), "period.days must be >= 1"),
        (lambda: PeriodRule.fixed_windows(datetime(2026, 4, 18), use="next"), "period.use"),
        (
            lambda: PeriodRule.fixed_windows(datetime(2026, 4, 18), last_end=datetime(2026, 4, 1)),
            "period.last_end must be after period.start",
        ),
        (
            lambda: PeriodRule(kind="month_to_draw", start=datetime(2026, 4, 1)),  # type: ignore[arg-type]
            "period.start does not apply",
        ),
        (lambda: PeriodRule(kind="fixed_start_to_draw"), "period.start is required"),  # type: ignore[arg-type]
        (lambda: PeriodRule.day_to_draw(tz="Mars/Olympus"), "period.tz: unknown time zone"),
        (lambda: program(rates={Tier.JACK: 0}), r"rates\[jack\] must be an integer >= 1"),
        (lambda: program(rates={"joker": 5}), "rates: unknown tier 'joker'"),
        (lambda: program(complimentary={Tier.ACE: -1}), "complimentary"),
        (
            lambda: program(tiers=frozenset({Tier.QUEEN}), rates={Tier.JACK: 100}),
            r"rates names tiers not in tiers: \['jack'\]",
        ),
        (lambda: program(cap=0), "cap must be None"),
        (lambda: program(tiers=frozenset()), "tiers must not be empty"),
        (
            lambda: TicketDraw(
                draw_id="d",
                program_id="p",
                at=datetime(2026, 4, 25, 20),
                opens=at(SAT, 8),
                closes=at(SAT, 9),
            ),
            "at must be timezone-aware",
        ),
    ],
)
def test_programs_and_periods_refuse_bad_values(build: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build()


def test_a_draw_outside_its_period_is_refused_naming_the_draw() -> None:
    period = PeriodRule.fixed_windows(datetime(2026, 4, 18), 7, use="previous")
    p = program("teeds", period=period, rates={Tier.JACK: 50})
    first_week = draw("d1", "teeds", at(date(2026, 4, 20), 20), time(8), time(19))
    with pytest.raises(ValueError, match=r"draw 'd1': program 'teeds': .* no previous window"):
        TicketPlan([p], [first_week])
    before = draw("d0", "teeds", at(date(2026, 4, 1), 20), time(8), time(19))
    with pytest.raises(ValueError, match="before the anchor"):
        TicketPlan([p], [before])
    with pytest.raises(ValueError, match="empty earning period"):
        PeriodRule.day_to_draw(time(8)).interval(at(SAT, 7))


def test_the_seed_plans_build() -> None:
    assert len(golden_horse_plan().bins) == 12
    plan = gold_reef_plan()
    assert len([d for d in plan.draws if d.program_id == "wed-cash"]) == 2 * 14
    assert len(plan.bins["sat-cash-2025-12-20"].draws) == 4
    assert (
        plan.next_bin("car", at(date(2025, 10, 25), 20, 56).timestamp())
        is plan.bins["car-2025-11-29"]
    )

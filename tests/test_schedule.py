"""The schedule (selector.schedule): who may propose, approve, reschedule and cancel a
session; what a session and a calendar must be, each refusal naming its field and
changing nothing; and the records, which alone make the schedule a restart sees."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raps.config import load_config
from selector.calendar_spec import SpecError, read_calendar
from selector.records import Actor
from selector.schedule import (
    PromotionFacts,
    PromotionPlan,
    Schedule,
    ScheduleError,
    SessionPlan,
    Status,
    wall_time,
)
from selector.session import Command
from tests.test_calendar import SEEDS

SAST = "Africa/Johannesburg"
TZ = ZoneInfo(SAST)
MARKETING = Actor("mia", "marketing")
ADMIN = Actor("ada", "admin")
SECURITY = Actor("sam", "security")
PERIOD = (date(2026, 4, 18), date(2026, 6, 27))
RAPS_CALENDAR: dict[str, Any] = {
    "dated": [{"dates": ["2026-04-25", "2026-05-02"], "times": ["18:00"]}],
    "windows": {"raps": {"start": "at", "end": "19:00"}},
}


def facts(tz: str = SAST) -> dict[str, PromotionFacts]:
    return {
        "raps": PromotionFacts("raps", "RAPS", frozenset({"slots", "tables"}), tz),
        "slots-only": PromotionFacts("slots-only", "Slots", frozenset({"slots"}), tz),
    }


class Desk:
    """A schedule and fresh command ids, as the daemon gives them."""

    def __init__(self, tz: str = SAST) -> None:
        self.s = Schedule(facts(tz))
        self.n = 0
        self.at = datetime(2026, 4, 20, 10, tzinfo=TZ)

    def cmd(self, actor: Actor = MARKETING, command_id: str | None = None) -> Command:
        self.n += 1
        return Command(command_id or f"c-{self.n}", actor, self.at)


def plan(sid: str = "s1", day: int = 25, hour: int = 18, **kw: Any) -> SessionPlan:
    starts = datetime(2026, 4, day, hour, tzinfo=TZ)
    return SessionPlan(
        sid, kw.pop("promotion_id", "raps"), starts, starts + timedelta(hours=1), **kw
    )


def refused(run: Any) -> ScheduleError:
    with pytest.raises(ScheduleError) as e:
        run()
    return e.value


def test_marketing_proposes_an_admin_approves_and_marketing_s_change_asks_again() -> None:
    d = Desk()
    d.s.add(d.cmd(), plan(), "Saturday session")
    assert d.s.plan("s1").status == Status.PROPOSED
    assert "only an admin" in str(refused(lambda: d.s.approve(d.cmd(), "s1", "ok")))
    d.s.approve(d.cmd(ADMIN), "s1", "checked against the rules")
    assert d.s.plan("s1").status == Status.APPROVED
    d.s.change(d.cmd(), "s1", {"slots": 5}, "fewer slot prizes", started=False)
    assert d.s.plan("s1").status == Status.PROPOSED and d.s.plan("s1").slots == 5
    d.s.approve(d.cmd(ADMIN), "s1", "ok")
    d.s.change(d.cmd(ADMIN), "s1", {"tables": 3}, "admin's own change", started=False)
    assert d.s.plan("s1").status == Status.APPROVED
    assert "only marketing or an admin" in str(
        refused(lambda: d.s.add(d.cmd(SECURITY), plan("s2", day=26), "x"))
    )
    kinds = [r.type for r in d.s.records]
    assert kinds == [
        "schedule.session_added",
        "schedule.session_approved",
        "schedule.session_changed",
        "schedule.session_approved",
        "schedule.session_changed",
    ]
    assert d.s.records[2].data["changed"] == ["slots"]
    assert (
        d.s.records[2].actor == MARKETING and d.s.records[2].data["reason"] == "fewer slot prizes"
    )


def test_a_rehearsal_needs_no_approval_no_window_and_no_period() -> None:
    d = Desk()
    d.s.set_promotion(d.cmd(ADMIN), PromotionPlan("raps", PERIOD), "003 period")
    training = replace_ends(plan("t1", day=1, rehearsal=True), None)  # 1 April: before it
    d.s.add(d.cmd(), training, "training for new hosts")
    assert d.s.plan("t1").status == Status.APPROVED
    live = replace_ends(plan("l1"), None)
    assert refused(lambda: d.s.add(d.cmd(), live, "x")).key == "ends"


def replace_ends(p: SessionPlan, ends: datetime | None) -> SessionPlan:
    from dataclasses import replace

    return replace(p, ends=ends)


@pytest.mark.parametrize(
    ("bad", "key", "words"),
    [
        (dict(sid="has space"), "session_id", "letters, digits"),
        (dict(promotion_id="nope"), "promotion_id", "no promotion 'nope'"),
        (dict(promotion_id="slots-only", tables=2), "tables", "has no tables pool"),
        (dict(slots=0, tables=0), "slots", "at least one"),
        (dict(claim_seconds=0), "claim_seconds", "above 0"),
        (dict(day=1), "starts", "outside the promotion's period 2026-04-18 to 2026-06-27"),
        (dict(hour=18, sid="s-overlap"), "starts", "overlaps session 'first'"),
        (dict(name="x" * 81), "name", "80 printable"),
        (dict(claim_starts="arrival"), "claim_starts", "one of draw, absent"),
        (dict(max_en_route_seconds=0), "max_en_route_seconds", "above 0"),
    ],
)
def test_a_bad_session_is_refused_naming_its_field_and_nothing_changes(
    bad: dict[str, Any], key: str, words: str
) -> None:
    d = Desk()
    d.s.set_promotion(d.cmd(ADMIN), PromotionPlan("raps", PERIOD), "003 period")
    d.s.add(d.cmd(ADMIN), plan("first", hour=18), "the first")
    before = (len(d.s.records), dict(d.s.sessions))
    e = refused(lambda: d.s.add(d.cmd(), plan(**{"sid": "s2", "hour": 20, **bad}), "why"))
    assert e.key == key and words in e.reason, e
    assert (len(d.s.records), dict(d.s.sessions)) == before


def test_a_window_that_ends_before_it_starts_and_a_missing_reason_are_refused() -> None:
    d = Desk()
    backwards = replace_ends(plan(), datetime(2026, 4, 25, 17, tzinfo=TZ))
    e = refused(lambda: d.s.add(d.cmd(), backwards, "x"))
    assert e.key == "ends" and "must be after starts (2026-04-25 18:00)" in e.reason
    d.s.add(d.cmd(), plan(), "first")
    assert refused(lambda: d.s.change(d.cmd(), "s1", {"slots": 2}, " ", started=False)).key == (
        "reason"
    )
    assert refused(
        lambda: d.s.change(d.cmd(), "s1", {"rehearsal": True}, "x", started=False)
    ).key == ("rehearsal")


def test_a_time_the_clocks_skip_is_refused_naming_the_field() -> None:
    """Europe/London skips 01:00-02:00 on 29 March 2026."""
    e = refused(lambda: wall_time("2026-03-29 01:30", "Europe/London", "starts"))
    assert e.key == "starts" and "does not exist in Europe/London" in e.reason
    assert wall_time("2026-03-29 02:30", "Europe/London", "starts").utcoffset() == timedelta(
        hours=1
    )
    assert wall_time("2026-10-25 01:30", "Europe/London", "ends").utcoffset() == timedelta(hours=1)


def test_an_opened_session_is_out_of_the_schedule_s_hands_and_a_cancelled_one_stays_so() -> None:
    d = Desk()
    d.s.add(d.cmd(ADMIN), plan(), "first")
    e = refused(lambda: d.s.change(d.cmd(), "s1", {"slots": 1}, "x", started=True))
    assert "has opened" in e.reason
    assert "has opened" in refused(lambda: d.s.cancel(d.cmd(), "s1", "x", started=True)).reason
    d.s.cancel(d.cmd(), "s1", "the GM moved it", started=False)
    assert d.s.plan("s1").status == Status.CANCELLED
    assert (
        "cancelled"
        in refused(lambda: d.s.change(d.cmd(), "s1", {"slots": 1}, "x", started=False)).reason
    )
    assert "already exists" in refused(lambda: d.s.add(d.cmd(), plan(), "again")).reason
    assert (
        "already exists"
        in refused(
            lambda: d.s.add(d.cmd(), plan("s9", day=26), "x", taken=frozenset({"s9"}))
        ).reason
    )


def test_a_retried_command_returns_its_first_records_and_adds_none() -> None:
    d = Desk()
    first = d.s.add(d.cmd(command_id="retry-me"), plan(), "first")
    again = d.s.add(d.cmd(command_id="retry-me"), plan(), "first")
    assert again == first and len(d.s.records) == 1


def test_a_calendar_makes_a_session_per_occurrence_and_a_move_follows_it() -> None:
    d = Desk()
    template = {"window": "raps", "slots": 6, "tables": 4}
    d.s.set_promotion(d.cmd(), PromotionPlan("raps", PERIOD, RAPS_CALENDAR, template), "003")
    # marketing's calendar is a proposal: nothing of it applies before an admin approves
    assert (d.s.sessions, d.s.promotions, list(d.s.proposals)) == ({}, {}, ["raps"])
    d.s.approve_promotion(d.cmd(ADMIN), "raps", "as 003 says")
    assert d.s.proposals == {}
    made = {s.session_id: s for s in d.s.sessions.values()}
    assert sorted(made) == ["raps-20260425-1800", "raps-20260502-1800"]
    first = made["raps-20260425-1800"]
    assert (first.starts, first.ends) == (
        datetime(2026, 4, 25, 18, tzinfo=TZ),
        datetime(2026, 4, 25, 19, tzinfo=TZ),
    )
    assert first.status == Status.APPROVED
    moved = {
        **RAPS_CALENDAR,
        "moved": [
            {"from": "2026-05-02 18:00", "to": "2026-05-03 18:00", "reason": "public holiday"}
        ],
    }
    d.s.set_promotion(
        d.cmd(ADMIN),
        PromotionPlan("raps", PERIOD, moved, template),
        "moved",
        started=frozenset({"raps-20260425-1800"}),
    )
    status = {s.session_id: s.status for s in d.s.sessions.values()}
    assert status == {
        "raps-20260425-1800": Status.APPROVED,
        "raps-20260502-1800": Status.CANCELLED,
        "raps-20260503-1800": Status.APPROVED,
    }


def test_a_promotion_s_calendar_sessions_set_when_its_countdowns_start() -> None:
    """Issue 15 item 6, per promotion: its sessions' claim countdown starts at absent,
    with no escalation (0 in TOML, which has no null); recorded, and in the rules."""
    d = Desk()
    template = {"window": "raps", "claim_starts": "absent", "max_en_route_seconds": 0}
    d.s.set_promotion(d.cmd(ADMIN), PromotionPlan("raps", PERIOD, RAPS_CALENDAR, template), "x")
    made = list(d.s.sessions.values())
    assert made and all((p.claim_starts, p.max_en_route_seconds) == ("absent", None) for p in made)
    rules = made[0].rules()
    assert (rules.claim_starts, rules.max_en_route_seconds) == ("absent", None)
    added = d.s.records[1].data["session"]
    assert (added["claim_starts"], added["max_en_route_seconds"]) == ("absent", None)
    again = Schedule.replay(facts(), d.s.records)
    assert again.sessions == d.s.sessions
    # a single session changes its mode like any other rule, before it opens
    sid = made[0].session_id
    d.s.change(d.cmd(ADMIN), sid, {"claim_starts": "draw", "max_en_route_seconds": 90}, "x",
               started=False)  # fmt: skip
    assert d.s.records[-1].data["changed"] == ["claim_starts", "max_en_route_seconds"]


@pytest.mark.parametrize(
    ("calendar", "key", "words"),
    [
        (
            {
                "dated": [{"dates": ["2026-04-25"], "times": ["18:00"]}],
                "windows": {"raps": {"start": "at", "end": "17:00"}},
            },
            "dated[0]",
            "ends (17:00) before",
        ),
        (
            {
                "weekly": [
                    {
                        "weekdays": ["sat"],
                        "times": ["18:00", "19:00"],
                        "first": "2026-04-18",
                        "last": "2026-05-01",
                    }
                ],
                "windows": {"raps": {"start": "at", "end": "+90m"}},
            },
            "windows.raps",
            "past the start",
        ),
        (
            {"dated": [{"dates": ["2026-04-25", "2026-04-25"], "times": ["18:00"]}]},
            "dated[0]",
            "already given",
        ),
        ({"dated": [{"dates": ["2026-07-04"], "times": ["18:00"]}]}, "period", "outside"),
        (
            {
                "weekly": [
                    {
                        "weekdays": ["sat"],
                        "times": ["18:00"],
                        "first": "2026-05-01",
                        "last": "2026-04-20",
                    }
                ]
            },
            "weekly[0]",
            "before first",
        ),
        ({"dated": [{"dates": ["2026-04-25"], "times": ["25:00"]}]}, "dated[0].times[0]", "HH:MM"),
        (
            {"dated": [{"dates": ["2026-04-25"], "times": ["18:00"]}], "bogus": 1},
            "bogus",
            "unknown key",
        ),
        (
            {
                "dated": [{"dates": ["2026-04-25"], "times": ["18:00"]}],
                "moved": [{"from": "2026-04-26 18:00", "to": "2026-04-27 18:00"}],
            },
            "moved[0]",
            "no rule gives",
        ),
    ],
)
def test_an_impossible_calendar_is_refused_naming_the_field_never_half_applied(
    calendar: dict[str, Any], key: str, words: str
) -> None:
    d = Desk()
    template = {"window": "raps"} if "windows" in calendar else None
    e = refused(
        lambda: d.s.set_promotion(d.cmd(), PromotionPlan("raps", PERIOD, calendar, template), "x")
    )
    assert e.key == f"calendar.{key}" and words in e.reason, e
    assert d.s.records == [] and d.s.sessions == {} and d.s.promotions == {}


def test_a_dst_gap_in_a_calendar_names_its_rule() -> None:
    with pytest.raises(SpecError) as e:
        read_calendar({"dated": [{"dates": ["2026-03-29"], "times": ["01:30"]}]}, "Europe/London")
    assert e.value.key == "dated[0]" and "does not exist in Europe/London" in e.value.reason


def test_the_golden_horse_seed_makes_the_four_raps_sessions_of_003() -> None:
    """003: RAPS sessions only 18:00-19:00 on 25 Apr, 2 May, 30 May and 27 Jun 2026."""
    cfg = load_config(SEEDS / "golden-horse.toml")
    s = Schedule(cfg.schedule_facts())
    cfg.seed_schedule(s, datetime(2026, 4, 1, tzinfo=TZ))
    windows = [(p.starts, p.ends) for p in s.sessions.values()]
    days = [date(2026, 4, 25), date(2026, 5, 2), date(2026, 5, 30), date(2026, 6, 27)]
    assert windows == [
        (
            datetime.combine(d, datetime.min.time(), TZ).replace(hour=18),
            datetime.combine(d, datetime.min.time(), TZ).replace(hour=19),
        )
        for d in days
    ]
    assert all(
        p.status == Status.APPROVED and (p.slots, p.tables) == (6, 4) for p in s.sessions.values()
    )
    again = cfg.seed_schedule(s, datetime(2026, 4, 2, tzinfo=TZ))
    assert again == []  # a restart adds nothing the schedule already has


ACTORS = st.sampled_from([MARKETING, ADMIN])
STEPS = st.lists(
    st.tuples(
        st.sampled_from(["add", "change", "approve", "cancel"]),
        ACTORS,
        st.integers(0, 3),
        st.integers(10, 22),
    ),
    max_size=25,
)


@settings(max_examples=60, deadline=None)
@given(STEPS)
def test_replaying_the_records_gives_the_same_schedule(
    steps: list[tuple[str, Actor, int, int]],
) -> None:
    d = Desk()
    d.s.set_promotion(d.cmd(ADMIN), PromotionPlan("raps", PERIOD), "period")
    for what, actor, k, hour in steps:
        sid = f"s{k}"
        try:
            if what == "add":
                d.s.add(d.cmd(actor), plan(sid, day=25 + k, hour=hour), "add")
            elif what == "change":
                d.s.change(
                    d.cmd(actor),
                    sid,
                    {
                        "starts": datetime(2026, 5, 1 + k, hour, tzinfo=TZ),
                        "ends": datetime(2026, 5, 1 + k, hour, 30, tzinfo=TZ),
                    },
                    "move",
                    started=False,
                )
            elif what == "approve":
                d.s.approve(d.cmd(actor), sid, "ok")
            else:
                d.s.cancel(d.cmd(actor), sid, "no", started=False)
        except ScheduleError:
            pass
    again = Schedule.replay(facts(), d.s.records)
    assert again.sessions == d.s.sessions and again.promotions == d.s.promotions
    live = [p for p in d.s.sessions.values() if p.status != Status.CANCELLED]
    for a in live:  # the invariant the checks keep: live sessions never overlap
        for b in live:
            if a is not b and a.ends and b.ends:
                assert not (a.starts < b.ends and b.starts < a.ends)


def test_a_database_from_before_the_schedule_seeds_its_sessions_that_already_ran() -> None:
    """An older database holds sessions' journals but no schedule: the config's sessions
    are seeded even though their ids are taken by their own journal streams."""
    cfg = load_config(SEEDS.parent / "raps.example.toml")
    s = Schedule(cfg.schedule_facts())
    ran = cfg.sessions[0].id
    records = cfg.seed_schedule(s, datetime(2026, 4, 1, tzinfo=TZ), taken={ran})
    assert ran in s.sessions and any(
        r.data.get("session", {}).get("session_id") == ran for r in records
    )


# ------------------------------------------------ on the calendar, or saying why not


def with_calendar(template: dict[str, Any] | None = None) -> Desk:
    d = Desk()
    d.s.set_promotion(
        d.cmd(ADMIN), PromotionPlan("raps", PERIOD, RAPS_CALENDAR, template), "003's Saturdays"
    )
    return d


def test_a_live_session_off_the_calendar_needs_the_reason_and_an_admin() -> None:
    """003: RAPS sessions only 18:00-19:00 on its Saturdays.  Wednesday 29 April at
    10:00 is refused naming the calendar's nearest draws; with the reason it is held off
    the calendar it is proposed, and only an admin's approval lets it open."""
    d = with_calendar()
    wednesday = plan("wed", day=29, hour=10)
    e = refused(lambda: d.s.add(d.cmd(), wednesday, "extra"))
    assert e.key == "starts" and "nearest: Sat 25 Apr 2026 18:00 or Sat 02 May 2026 18:00" in (
        e.reason
    )
    assert refused(lambda: d.s.add(d.cmd(ADMIN), wednesday, "extra")).key == "starts"
    held = replace(wednesday, off_calendar="25 April's draw moved: power failure (rule 20)")
    d.s.add(d.cmd(), held, "moved draw")
    assert d.s.plan("wed").status == Status.PROPOSED
    d.s.approve(d.cmd(ADMIN), "wed", "rule 20: technical failure")
    assert d.s.plan("wed").off_calendar.startswith("25 April")
    # on the calendar: the window comes from the occurrence, and no reason is kept
    sat = replace(plan("sat", day=25, hour=18), ends=None, off_calendar="not needed")
    d.s.add(d.cmd(ADMIN), sat, "the first Saturday")
    got = d.s.plan("sat")
    assert (got.ends, got.off_calendar) == (datetime(2026, 4, 25, 19, tzinfo=TZ), "")
    may = datetime(2026, 5, 2, 18, 30, tzinfo=TZ)
    late = SessionPlan("late", "raps", may, may + timedelta(hours=1))
    assert refused(lambda: d.s.add(d.cmd(ADMIN), late, "runs past 19:00")).key == "starts"


def test_a_calendar_may_not_leave_a_session_behind_it() -> None:
    d = with_calendar()
    d.s.add(d.cmd(ADMIN), plan("sat"), "25 April, by hand")
    fewer = {**RAPS_CALENDAR, "dated": [{"dates": ["2026-05-02"], "times": ["18:00"]}]}
    e = refused(lambda: d.s.set_promotion(d.cmd(ADMIN), PromotionPlan("raps", PERIOD, fewer), "x"))
    assert e.key == "calendar" and "session 'sat' (Sat 25 Apr 2026 18:00) would not be on it" in (
        e.reason
    )
    # a calendar that makes sessions counts the one made by hand as its occurrence's
    template = {"window": "raps", "slots": 6, "tables": 4}
    d.s.set_promotion(d.cmd(ADMIN), PromotionPlan("raps", PERIOD, RAPS_CALENDAR, template), "x")
    assert sorted(d.s.sessions) == ["raps-20260502-1800", "sat"]


DEFINITION: dict[str, Any] = {
    "name": "Golden Horse Thursdays",
    "threshold_points": 100,
    "window": {"start": "10:00", "end": "24:00"},
    "tiers": ["king", "ace"],
    "areas_excluded": ["Salon Prive"],
    "pool_kinds": ["slots"],
}


def test_marketing_s_promotion_changes_wait_for_an_admin_and_replay() -> None:
    """A promotion defined on the page (who qualifies), and marketing's changes to its
    definition, period and calendar: proposals that change nothing until an admin
    approves them; a rejected one is dropped; the records alone make it all again."""
    d = Desk()
    d.s.areas = frozenset({"Main Floor", "Salon Prive"})
    d.s.define(d.cmd(), "gh-thu", DEFINITION, "Thursday promotion for the high tiers")
    assert "gh-thu" not in d.s.facts and d.s.proposals["gh-thu"].definition is not None
    d.s.set_promotion(d.cmd(), PromotionPlan("gh-thu", PERIOD), "its period")
    assert refused(lambda: d.s.approve_promotion(d.cmd(), "gh-thu", "x")).reason == (
        "only an admin approves a promotion's changes"
    )
    d.s.approve_promotion(d.cmd(ADMIN), "gh-thu", "checked with compliance")
    assert d.s.facts["gh-thu"].pool_kinds == frozenset({"slots"})
    promo = d.s.definition("gh-thu")
    assert promo is not None and promo.threshold_points == 100 and promo.window.end.hour == 0
    assert d.s.promotions["gh-thu"].period == PERIOD and d.s.proposals == {}
    d.s.define(d.cmd(), "gh-thu", {**DEFINITION, "threshold_points": 200}, "harder")
    d.s.reject_promotion(d.cmd(ADMIN), "gh-thu", "not this month")
    again = d.s.definition("gh-thu")
    assert again is not None and again.threshold_points == 100 and d.s.proposals == {}
    d.s.define(d.cmd(ADMIN), "gh-thu", {**DEFINITION, "name": "GH Thursdays"}, "shorter")
    assert d.s.facts["gh-thu"].name == "GH Thursdays"  # an admin's applies at once
    kinds = [r.type.removeprefix("schedule.") for r in d.s.records]
    assert kinds == [
        "promotion_proposed",
        "promotion_proposed",
        "promotion_approved",
        "promotion_added",
        "promotion_set",
        "promotion_proposed",
        "promotion_rejected",
        "promotion_changed",
    ]
    replayed = Schedule.replay(facts(), d.s.records)
    assert (replayed.facts, replayed.definitions, replayed.promotions, replayed.proposals) == (
        d.s.facts,
        d.s.definitions,
        d.s.promotions,
        d.s.proposals,
    )


@pytest.mark.parametrize(
    ("bad", "key", "words"),
    [
        ({"window": {"start": "19:00", "end": "08:00"}}, "window.end", "after start 19:00"),
        ({"tiers": ["jack", "joker"]}, "tiers[1]", "not 'joker'"),
        ({"areas_excluded": ["Salon Privee"]}, "areas_excluded[0]", "no machine or table"),
        ({"threshold_points": -1}, "threshold_points", "from 0 to"),
        ({"pool_kinds": []}, "pool_kinds", "at least one"),
        ({"name": ""}, "name", "1 to 80"),
        ({"colour": "red"}, "colour", "unknown key"),
    ],
)
def test_a_bad_definition_is_refused_naming_its_field(
    bad: dict[str, Any], key: str, words: str
) -> None:
    d = Desk()
    d.s.areas = frozenset({"Main Floor", "Salon Prive"})
    e = refused(lambda: d.s.define(d.cmd(ADMIN), "gh-thu", {**DEFINITION, **bad}, "x"))
    assert e.key == key and words in e.reason, e
    assert d.s.records == [] and d.s.proposals == {}


def test_an_approval_that_no_longer_holds_applies_nothing() -> None:
    """Approved as it stands at approval: a calendar that would leave behind a session
    made since the proposal is refused, and none of the proposal applies."""
    d = Desk()
    template = {"window": "raps", "slots": 6, "tables": 4}
    d.s.define(d.cmd(), "raps", {"name": "RAPS", "threshold_points": 60}, "60 points")
    d.s.set_promotion(d.cmd(), PromotionPlan("raps", PERIOD, RAPS_CALENDAR, template), "003")
    d.s.add(d.cmd(ADMIN), plan("blocker", day=29, hour=10), "a Wednesday, by hand")
    before = (len(d.s.records), dict(d.s.facts), dict(d.s.proposals))
    e = refused(lambda: d.s.approve_promotion(d.cmd(ADMIN), "raps", "ok"))
    assert e.key == "calendar" and "session 'blocker' (Wed 29 Apr 2026 10:00)" in e.reason
    assert (len(d.s.records), dict(d.s.facts), dict(d.s.proposals)) == before
    assert d.s.definitions == {} and d.s.promotions == {}


PROMOTION_STEPS = st.lists(
    st.tuples(
        st.sampled_from(["define", "plan", "approve", "reject", "add"]),
        ACTORS,
        st.integers(20, 80),
    ),
    max_size=15,
)


@settings(max_examples=40, deadline=None)
@given(PROMOTION_STEPS)
def test_promotion_proposals_replay_to_the_same_schedule_and_never_apply_unapproved(
    steps: list[tuple[str, Actor, int]],
) -> None:
    """Whatever marketing and admins do to a promotion, in whatever order: the records
    replay to the same definitions, plans and proposals, and what marketing proposed
    applies only through an admin's approval record."""
    d = Desk()
    for what, actor, n in steps:
        try:
            if what == "define":
                d.s.define(d.cmd(actor), "raps", {"name": "RAPS", "threshold_points": n}, "x")
            elif what == "plan":
                last = date(2026, 6, 27 - n % 5)
                d.s.set_promotion(d.cmd(actor), PromotionPlan("raps", (PERIOD[0], last)), "x")
            elif what == "add":
                d.s.add(d.cmd(actor), plan(f"s{n}", day=25, hour=n % 24), "x")
            elif what == "approve":
                d.s.approve_promotion(d.cmd(actor), "raps", "x")
            else:
                d.s.reject_promotion(d.cmd(actor), "raps", "x")
        except ScheduleError:
            pass
    again = Schedule.replay(facts(), d.s.records)
    assert (again.definitions, again.promotions, again.proposals, again.sessions) == (
        d.s.definitions,
        d.s.promotions,
        d.s.proposals,
        d.s.sessions,
    )
    for rec in d.s.records:
        if rec.type in ("schedule.promotion_added", "schedule.promotion_changed",
                        "schedule.promotion_set"):  # fmt: skip
            assert rec.actor.role == "admin", rec


def test_who_qualifies_keeps_the_pools_the_sessions_to_come_draw_from() -> None:
    d = Desk()
    d.s.add(d.cmd(ADMIN), plan("sat"), "a Saturday session, 6 + 4")
    slots_only = {"name": "RAPS", "pool_kinds": ["slots"]}
    e = refused(lambda: d.s.define(d.cmd(ADMIN), "raps", slots_only, "no tables"))
    assert e.key == "pool_kinds" and "session 'sat' draws tables winners" in e.reason
    d.s.define(d.cmd(ADMIN), "raps", slots_only, "no tables", started=frozenset({"sat"}))
    assert d.s.facts["raps"].pool_kinds == frozenset({"slots"})  # it has run already

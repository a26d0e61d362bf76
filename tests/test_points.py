"""Qualifying points: how play becomes points, and which points count.

The seed asks for >= 50 points earned between 08:00 and 19:00 Johannesburg time on
the session day.  Points are computed from wagers and table ratings (or taken from
the casino system), per player per site-local day, only inside the window, and never
twice for the same play.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, time, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfoNotFoundError

import pytest

from selector.events import GamePlayed, PointsEarned, TableRatingUpdated
from selector.floor import ELIGIBLE, Floor
from selector.layout import FloorLayout, Machine, Table
from selector.promotion import EarnRules, Promotion
from selector.windows import DayClock, QualifyingWindow
from tests.builders import (
    NOON,
    SAST,
    Events,
    local,
    raps_floor,
    seated_slot_player,
    seated_table_player,
    small_layout,
)

ALL_DAY = QualifyingWindow(start=time(0, 0), end=time(0, 0))


def events_floor(**promotion: Any) -> Floor:
    """A floor that takes points only from the casino system's PointsEarned events."""
    earn = EarnRules(points_source="events")
    return Floor(small_layout(), [Promotion("raps", **promotion)], earn)


def pts(floor: Floor, card: str, on: datetime = NOON) -> float:
    return floor.points("raps", card, on)


# ------------------------------------------------------------------ slot points


def test_ten_rand_wagered_is_one_point() -> None:
    """Default earn rate: R10 (1000 minor units) wagered earns 1 point."""
    floor, ev = raps_floor(), Events()
    floor.apply(ev.player("C1"))
    floor.apply(ev.card_in("M01", "C1"))
    floor.apply(ev.game("M01", wager=1000))
    assert pts(floor, "C1") == 1.0
    floor.apply(ev.game("M01", wager=500))
    floor.apply(ev.game("M01", wager=250))
    assert pts(floor, "C1") == 1.75
    floor.apply(ev.game("M01", wager=0))
    assert pts(floor, "C1") == 1.75


def test_fifty_points_is_exactly_the_threshold() -> None:
    """49 points leave the player out, the 50th point lets them in (>= 50)."""
    floor, ev = raps_floor(), Events()
    seated_slot_player(floor, ev, "C1", "M01", points=49)
    assert floor.check("raps", "C1") == "below_threshold"
    assert list(floor.pool("raps", "slots")) == []
    floor.apply(ev.game("M01", wager=1000))
    assert pts(floor, "C1") == 50.0
    assert list(floor.pool("raps", "slots")) == ["C1"]


def test_win_does_not_earn_points() -> None:
    """Points come from the wager only."""
    floor, ev = raps_floor(), Events()
    floor.apply(ev.player("C1"))
    floor.apply(ev.card_in("M01", "C1"))
    floor.apply(
        GamePlayed(event_id="big", source="sas", ts=ev.now, machine="M01", wager=0, win=10**7)
    )
    floor.apply(ev.game("M01", wager=1000))
    assert pts(floor, "C1") == 1.0


def test_points_follow_the_player_across_machines() -> None:
    """Points are per player per day, not per machine session."""
    floor, ev = raps_floor(), Events()
    seated_slot_player(floor, ev, "C1", "M01", points=30)
    floor.apply(ev.card_out("M01", "C1"))
    seated_slot_player(floor, ev, "C1", "M02", points=20)
    assert pts(floor, "C1") == 50.0
    assert list(floor.pool("raps", "slots")) == ["C1"]


def test_custom_slot_rate() -> None:
    """A site may set R5 per point."""
    floor = Floor(small_layout(), [Promotion("raps")], EarnRules(slot_wager_per_point=500))
    ev = Events()
    seated_slot_player(floor, ev, "C1", "M01", points=3)
    assert pts(floor, "C1") == 6.0


# ----------------------------------------------------------------- table points


def test_r100_for_one_minute_is_one_table_point() -> None:
    """Default table rate: average bet x minutes / 10000 (R100 x 1 minute = 1 point)."""
    floor, ev = raps_floor(), Events()
    floor.apply(ev.player("C1"))
    floor.apply(ev.rating_open("T1", 1, "C1"))
    floor.apply(ev.rating_update("T1", 1, "C1", bet=10_000, minutes=1))
    assert pts(floor, "C1") == 1.0
    floor.apply(ev.rating_update("T1", 1, "C1", bet=25_000, minutes=2))
    assert pts(floor, "C1") == 5.0


def test_table_points_credited_incrementally_never_twice() -> None:
    """Updates carry cumulative figures: only the increase is credited, the close adds the rest."""
    floor, ev = raps_floor(), Events()
    floor.apply(ev.player("C1"))
    floor.apply(ev.rating_open("T1", 1, "C1"))
    floor.apply(ev.rating_update("T1", 1, "C1", bet=10_000, minutes=10))
    assert pts(floor, "C1") == 10.0
    floor.apply(ev.rating_update("T1", 1, "C1", bet=10_000, minutes=10))  # repeated
    assert pts(floor, "C1") == 10.0
    floor.apply(ev.rating_update("T1", 1, "C1", bet=10_000, minutes=25))
    assert pts(floor, "C1") == 25.0
    # a corrected, lower figure never takes points back nor credits again later
    floor.apply(ev.rating_update("T1", 1, "C1", bet=10_000, minutes=20))
    assert pts(floor, "C1") == 25.0
    floor.apply(ev.rating_close("T1", 1, "C1", bet=10_000, minutes=40))
    assert pts(floor, "C1") == 40.0
    assert not floor.anomalies


def test_table_close_without_updates_credits_everything() -> None:
    """A terminal that only reports at close still earns the full rating."""
    floor, ev = raps_floor(), Events()
    floor.apply(ev.player("C1"))
    floor.apply(ev.rating_open("T1", 1, "C1"))
    floor.apply(ev.rating_close("T1", 1, "C1", bet=5_000, minutes=90))
    assert pts(floor, "C1") == 45.0


def test_table_points_cross_the_threshold_on_an_update() -> None:
    """A seated player enters the table pool the moment the update lifts them to 50."""
    floor, ev = raps_floor(), Events()
    seated_table_player(floor, ev, "C1", "T1", 1, points=49)
    assert floor.check("raps", "C1") == "below_threshold"
    floor.apply(ev.rating_update("T1", 1, "C1", bet=10_000, minutes=50))
    assert list(floor.pool("raps", "tables")) == ["C1"]


# -------------------------------------------------------------------- overrides


def override_layout() -> FloorLayout:
    return FloorLayout(
        [
            Machine("A1", "Main", "B1", "1", game_type="video"),
            Machine("A2", "Salon", "B2", "2", game_type="video"),
            Machine("A3", "Main", "B1", "3", game_type="reel"),
        ],
        [
            Table("T1", "Pit", "blackjack"),
            Table("T2", "VIP", "blackjack"),
            Table("T3", "Pit", "roulette"),
        ],
    )


def test_slot_overrides_by_game_and_area_area_wins() -> None:
    """'game:' overrides the default rate; 'area:' overrides both."""
    earn = EarnRules(slot_overrides={"game:video": 2000, "area:Salon": 100})
    floor = Floor(override_layout(), [Promotion("raps")], earn)
    ev = Events()
    for card, machine in [("C1", "A1"), ("C2", "A2"), ("C3", "A3")]:
        floor.apply(ev.player(card))
        floor.apply(ev.card_in(machine, card))
        floor.apply(ev.game(machine, wager=1000))
    assert pts(floor, "C1") == 0.5  # game:video, R20 per point
    assert pts(floor, "C2") == 10.0  # area:Salon wins over game:video, R1 per point
    assert pts(floor, "C3") == 1.0  # default


def test_table_overrides_by_game_and_area_area_wins() -> None:
    earn = EarnRules(table_overrides={"game:blackjack": 5000, "area:VIP": 20_000})
    floor = Floor(override_layout(), [Promotion("raps")], earn)
    ev = Events()
    for card, table in [("C1", "T1"), ("C2", "T2"), ("C3", "T3")]:
        floor.apply(ev.player(card))
        floor.apply(ev.rating_open(table, 1, card))
        floor.apply(ev.rating_update(table, 1, card, bet=10_000, minutes=10))
    assert pts(floor, "C1") == 20.0  # game:blackjack doubles
    assert pts(floor, "C2") == 5.0  # area:VIP wins and halves
    assert pts(floor, "C3") == 10.0  # default


@pytest.mark.parametrize(
    "kwargs",
    [
        {"points_source": "cms"},
        {"slot_wager_per_point": 0},
        {"table_bet_minutes_per_point": -1},
        {"slot_overrides": {"area:X": 0}},
        {"table_overrides": {"game:x": -5}},
        {"slot_overrides": {"Salon": 100}},
        {"table_overrides": {"bank:B1": 100}},
    ],
)
def test_earn_rules_validation(kwargs: dict[str, object]) -> None:
    """Misconfigured earn rules fail at start-up, not as wrong points all day."""
    with pytest.raises(ValueError):
        EarnRules(**kwargs)  # type: ignore[arg-type]


# -------------------------------------------------------------- qualifying window


@pytest.mark.parametrize(
    ("at", "counts"),
    [
        (local(7, 59, 59), False),
        (local(8, 0, 0), True),
        (local(12, 0, 0), True),
        (local(18, 59, 59), True),
        (local(19, 0, 0), False),
        (local(23, 30, 0), False),
    ],
    ids=["07:59:59", "08:00:00", "12:00:00", "18:59:59", "19:00:00", "23:30:00"],
)
def test_only_play_between_08h00_and_19h00_counts(at: datetime, counts: bool) -> None:
    """Seed: points earned between 8am and 7pm, window [08:00, 19:00) local time."""
    floor, ev = raps_floor(), Events(start=at)
    floor.apply(ev.player("C1"))
    floor.apply(ev.card_in("M01", "C1"))
    floor.apply(ev.game("M01", wager=1000))
    assert pts(floor, "C1", at) == (1.0 if counts else 0.0)


@pytest.mark.parametrize(
    ("opened", "updated", "minutes", "expected"),
    [
        (local(7, 0), local(8, 5), 65, 5.0),  # seed 003: only 08:00-08:05 counts
        (local(7, 50), local(8, 0), 10, 0.0),  # all of it before 08:00
        (local(8, 0), local(8, 0), 10, 0.0),  # 10 minutes reported at 08:00 were played before
        (local(7, 55), local(8, 5), 10, 5.0),
        (local(8, 0), local(8, 10), 10, 10.0),  # all inside
        (local(18, 30), local(19, 5), 35, 30.0),  # 19:00-19:05 does not count
    ],
    ids=["seed-07h00-08h05", "07h50-08h00", "open-at-08h00", "07h55-08h05", "inside", "19h05"],
)
def test_table_play_counts_for_its_part_inside_the_window(
    opened: datetime, updated: datetime, minutes: int, expected: float
) -> None:
    """Rating time is apportioned to the window: the span since the open (or at least the
    minutes reported, when they are more) is spread evenly and its in-window part counts."""
    floor, ev = raps_floor(), Events(start=opened)
    floor.apply(ev.player("C1"))
    floor.apply(ev.rating_open("T1", 1, "C1"))
    floor.apply(ev.rating_update("T1", 1, "C1", bet=10_000, minutes=minutes, at=updated))
    assert pts(floor, "C1", updated) == expected


def test_points_earned_after_19h00_do_not_count_but_earlier_ones_stay() -> None:
    """At 19:30 the player keeps what they earned in the window, and earns no more."""
    floor, ev = raps_floor(), Events(start=local(18, 0))
    seated_slot_player(floor, ev, "C1", "M01", points=50)
    ev.now = local(19, 30)
    for _ in range(20):
        floor.apply(ev.game("M01"))
    assert pts(floor, "C1", local(19, 30)) == 50.0
    assert floor.check("raps", "C1") == ELIGIBLE


def test_same_instant_in_any_offset_gives_the_same_points() -> None:
    """The window is about the instant, not about how the adapter wrote the time."""
    instants = [local(7, 59, 59), local(8, 0), local(18, 59, 59), local(19, 0)]
    offsets = [SAST, UTC, timezone(timedelta(hours=-3)), timezone(timedelta(hours=9))]
    results = []
    for tz in offsets:
        floor, ev = raps_floor(), Events()
        floor.apply(ev.player("C1"))
        floor.apply(ev.card_in("M01", "C1"))
        for i, at in enumerate(instants):
            floor.apply(ev.game("M01", wager=1000 * 10**i, at=at.astimezone(tz)))
        results.append(pts(floor, "C1", NOON.astimezone(tz)))
    assert results == [110.0] * len(offsets)  # 10 (08:00) + 100 (18:59:59)


def test_utc_timestamp_late_evening_counts_on_the_local_day() -> None:
    """16:59:59 UTC is 18:59:59 SAST (inside); 17:00 UTC is 19:00 SAST (outside)."""
    floor, ev = raps_floor(), Events()
    floor.apply(ev.player("C1"))
    floor.apply(ev.card_in("M01", "C1"))
    floor.apply(ev.game("M01", at=datetime(2026, 4, 25, 16, 59, 59, tzinfo=UTC)))
    floor.apply(ev.game("M01", at=datetime(2026, 4, 25, 17, 0, 0, tzinfo=UTC)))
    floor.apply(ev.game("M01", at=datetime(2026, 4, 25, 6, 0, 0, tzinfo=UTC)))  # 08:00 SAST
    floor.apply(ev.game("M01", at=datetime(2026, 4, 25, 5, 59, 59, tzinfo=UTC)))
    assert pts(floor, "C1") == 2.0


# ------------------------------------------------------------ site-local days


def test_yesterdays_points_do_not_carry_over() -> None:
    """Points are per site-local day: the next morning starts from zero."""
    floor, ev = raps_floor(), Events()
    seated_slot_player(floor, ev, "C1", "M01", points=60)
    next_morning = local(9, 0, day=26)
    assert pts(floor, "C1", NOON) == 60.0
    assert pts(floor, "C1", next_morning) == 0.0
    floor.advance(next_morning)
    floor.apply(ev.game("M01", at=next_morning))
    assert pts(floor, "C1", next_morning) == 1.0
    assert floor.check("raps", "C1") == "below_threshold"
    assert list(floor.pool("raps", "slots")) == []


def test_local_day_starts_at_22h00_utc() -> None:
    """With an all-day window, 21:59:59 UTC is still the 25th; 22:00:00 UTC is the 26th."""
    floor = Floor(small_layout(), [Promotion("raps", window=ALL_DAY)], EarnRules())
    ev = Events()
    floor.apply(ev.player("C1"))
    floor.apply(ev.card_in("M01", "C1"))
    before = datetime(2026, 4, 25, 21, 59, 59, tzinfo=UTC)
    after = datetime(2026, 4, 25, 22, 0, 0, tzinfo=UTC)
    floor.apply(ev.game("M01", wager=3000, at=before))
    assert pts(floor, "C1", local(12, 0, day=25)) == 3.0
    floor.apply(ev.game("M01", wager=2000, at=after))
    assert pts(floor, "C1", local(12, 0, day=26)) == 2.0
    assert pts(floor, "C1", local(0, 0, day=26)) == 2.0
    assert pts(floor, "C1", after) == 2.0


def test_new_local_day_takes_yesterdays_qualifiers_out_of_the_pool() -> None:
    """Yesterday's 50 points do not qualify today, even for a player still seated.

    The pool must agree with `check`: a pool is what a draw samples from, and what
    the dashboards count.
    """
    floor, ev = raps_floor(), Events(start=local(18, 30))
    seated_table_player(floor, ev, "C1", "T1", 1, points=60)
    assert list(floor.pool("raps", "tables")) == ["C1"]
    # still seated the next day, rating open all night
    floor.advance(local(10, 0, day=26))
    assert floor.check("raps", "C1") == "below_threshold"
    assert list(floor.pool("raps", "tables")) == []


def test_late_event_from_yesterday_does_not_wipe_todays_points() -> None:
    """Buffered events replayed after an outage must not erase points already earned today."""
    floor = events_floor()
    ev = Events(start=local(10, 0, day=26))
    floor.apply(ev.player("C1"))
    floor.apply(ev.points("C1", 60))
    assert pts(floor, "C1", local(10, 0, day=26)) == 60.0
    floor.apply(ev.points("C1", 5, at=local(18, 0, day=25)))  # delivered late
    assert pts(floor, "C1", local(10, 0, day=26)) == 60.0


# ------------------------------------------------------------ points from events


def test_points_source_events_uses_points_earned_and_ignores_wagers() -> None:
    """When the CMS is the points authority, wagers and ratings earn nothing locally."""
    floor, ev = events_floor(), Events()
    seated_slot_player(floor, ev, "C1", "M01", points=80)
    seated_table_player(floor, ev, "C2", "T1", 1, points=80)
    assert pts(floor, "C1") == 0.0
    assert pts(floor, "C2") == 0.0
    assert floor.check("raps", "C1") == "below_threshold"
    floor.apply(ev.points("C1", 49.5))
    assert floor.check("raps", "C1") == "below_threshold"
    floor.apply(ev.points("C1", 0.5))
    assert pts(floor, "C1") == 50.0
    assert list(floor.pool("raps", "slots")) == ["C1"]
    assert floor.ignored_points_events == 0


def test_points_events_are_ignored_and_counted_when_computed() -> None:
    """In computed mode PointsEarned would double count: it is ignored, and counted."""
    floor, ev = raps_floor(), Events()
    floor.apply(ev.player("C1"))
    assert floor.apply(ev.points("C1", 100)) is None
    assert floor.apply(ev.points("C1", 5)) is None
    assert floor.ignored_points_events == 2
    assert pts(floor, "C1") == 0.0
    assert not floor.rejections


def test_points_events_respect_the_window() -> None:
    """A CMS credit timestamped outside 08:00-19:00 does not qualify."""
    floor = events_floor()
    ev = Events(start=local(7, 0))
    floor.apply(ev.points("C1", 100))
    floor.apply(ev.points("C1", 100, at=local(19, 0)))
    floor.apply(ev.points("C1", 7, at=local(8, 0)))
    assert pts(floor, "C1") == 7.0


def test_points_events_for_a_card_not_on_the_floor_count_once_seated() -> None:
    """Points may arrive before the card does; the player qualifies when seated."""
    floor, ev = events_floor(), Events()
    floor.apply(ev.points("C1", 60))
    floor.apply(ev.player("C1"))
    floor.apply(ev.card_in("M01", "C1"))
    floor.apply(ev.game("M01"))
    assert list(floor.pool("raps", "slots")) == ["C1"]


def test_negative_points_rejected() -> None:
    """A debit from the CMS is not a qualifying event: refuse it and count it."""
    floor, ev = events_floor(), Events()
    floor.apply(ev.points("C1", 60))
    assert floor.apply(ev.points("C1", -10)) == "negative_points"
    assert floor.rejections["negative_points"] == 1
    assert pts(floor, "C1") == 60.0


def test_points_query_for_unknown_card_is_zero() -> None:
    floor = raps_floor()
    assert pts(floor, "nobody") == 0.0
    with pytest.raises(KeyError):
        floor.points("no-such-promotion", "C1", NOON)


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_non_finite_points_never_crash_the_floor(value: float) -> None:
    """A NaN/inf must be refused at the edge or rejected by the floor, never raised from apply."""
    floor = events_floor()
    try:
        event = PointsEarned(event_id="x", source="cms", ts=NOON, card="C1", points=value)
    except ValueError:
        return  # refused at the edge: fine
    reason = floor.apply(event)
    assert reason is not None
    assert pts(floor, "C1") == 0.0


@pytest.mark.parametrize("minutes", [math.nan, math.inf])
def test_non_finite_rating_minutes_never_crash_the_floor(minutes: float) -> None:
    floor, ev = raps_floor(), Events()
    floor.apply(ev.player("C1"))
    floor.apply(ev.rating_open("T1", 1, "C1"))
    try:
        event = TableRatingUpdated(
            event_id="x", source="pit", ts=NOON, table="T1", seat=1, card="C1",
            average_bet=10_000, minutes=minutes,
        )  # fmt: skip
    except ValueError:
        return
    reason = floor.apply(event)
    assert reason is not None
    assert pts(floor, "C1") == 0.0


# ------------------------------------------------------------ window settings


def test_window_validation() -> None:
    """An empty or inverted window, or an unknown zone, is a configuration error."""
    with pytest.raises(ValueError, match="after start"):
        QualifyingWindow(start=time(19, 0), end=time(8, 0))
    with pytest.raises(ValueError, match="after start"):
        QualifyingWindow(start=time(8, 0), end=time(8, 0))
    with pytest.raises(ZoneInfoNotFoundError):
        QualifyingWindow(tz="Africa/Atlantis")
    assert QualifyingWindow() == QualifyingWindow("Africa/Johannesburg", time(8), time(19))


def test_window_bounds_in_epoch_seconds() -> None:
    """bounds() gives [08:00, 19:00) SAST as epoch seconds (06:00-17:00 UTC)."""
    start, end = QualifyingWindow().bounds(NOON.date())
    assert start == datetime(2026, 4, 25, 6, 0, tzinfo=UTC).timestamp()
    assert end == datetime(2026, 4, 25, 17, 0, tzinfo=UTC).timestamp()


def test_window_ending_at_midnight_runs_to_the_end_of_the_day() -> None:
    """end 00:00 means midnight: the window closes at the next local midnight."""
    window = QualifyingWindow(start=time(18, 0), end=time(0, 0))
    start, end = window.bounds(NOON.date())
    assert start == local(18, 0).timestamp()
    assert end == local(0, 0, day=26).timestamp()
    floor = Floor(small_layout(), [Promotion("raps", window=window)], EarnRules())
    ev = Events()
    floor.apply(ev.player("C1"))
    floor.apply(ev.card_in("M01", "C1"))
    floor.apply(ev.game("M01", at=local(17, 59, 59)))
    floor.apply(ev.game("M01", wager=2000, at=local(18, 0)))
    floor.apply(ev.game("M01", wager=4000, at=local(23, 59, 59)))
    assert pts(floor, "C1", local(20, 0)) == 6.0
    floor.apply(ev.game("M01", wager=8000, at=local(0, 0, day=26)))  # next day, before 18:00
    assert pts(floor, "C1", local(20, 0, day=26)) == 0.0


def test_day_clock_classifies_and_caches_per_local_day() -> None:
    """The clock answers (day, inside?) and reloads itself for other days, late events too."""
    clock = DayClock(QualifyingWindow())
    day25 = NOON.date().toordinal()
    assert clock.classify(local(8, 0).timestamp()) == (day25, True)
    assert clock.classify(local(19, 0).timestamp()) == (day25, False)
    assert clock.classify(local(9, 0, day=26).timestamp()) == (day25 + 1, True)
    assert clock.classify(local(7, 0).timestamp()) == (day25, False)  # late event
    assert clock.day_of(local(23, 59, 59).timestamp()) == day25
    assert clock.day_of(local(0, 0, day=26).timestamp()) == day25 + 1
    assert clock.local_day(datetime(2026, 4, 25, 22, 0, tzinfo=UTC).timestamp()).day == 26

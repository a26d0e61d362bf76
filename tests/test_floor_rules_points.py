"""Issue 15, floor rules 1 and 2: which play counts toward the 50 points, exactly.

Seed 003: "earn a minimum of 50 points ... between 8am and 7pm".  A table rating reports
cumulative minutes; the play they stand for is spread over the time it took, and only
its part inside the window counts.  The threshold compares exact amounts: 49.9996 points
are not 50, and only a display rounds.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from fractions import Fraction

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from selector.floor import ELIGIBLE, Floor
from selector.promotion import EarnRules, Promotion
from tests.builders import Events, local, raps_floor, seated_slot_player, small_layout

WINDOW = (local(8, 0).timestamp(), local(19, 0).timestamp())
UNIT = 10**6  # the floor's points unit with the default earn rates


def pts(floor: Floor, card: str, on: datetime | None = None) -> float:
    return floor.points("raps", card, on or local(12, 0))


def in_window_seconds(start: float, end: float) -> float:
    return max(0.0, min(end, WINDOW[1]) - max(start, WINDOW[0]))


def events_floor(**promotion: object) -> Floor:
    return Floor(small_layout(), [Promotion("raps", **promotion)], EarnRules("events"))  # type: ignore[arg-type]


# ---------------------------------------------------------------- 1. the window


def test_seed_table_rating_from_07h00_counts_only_from_08h00() -> None:
    """Opened 07:00, first update 08:05 with 65 minutes at R100: 5 points, not 65."""
    floor, ev = raps_floor(), Events(start=local(7, 0))
    floor.apply(ev.player("C1"))
    floor.apply(ev.rating_open("T1", 1, "C1"))
    floor.apply(ev.rating_update("T1", 1, "C1", bet=10_000, minutes=65, at=local(8, 5)))
    assert pts(floor, "C1") == 5.0
    assert floor.check("raps", "C1") == "below_threshold"
    # later play is all inside: 45 more minutes reach exactly 50
    floor.apply(ev.rating_update("T1", 1, "C1", bet=10_000, minutes=110, at=local(8, 50)))
    assert pts(floor, "C1") == 50.0
    assert floor.check("raps", "C1") == ELIGIBLE


def test_a_rating_only_reported_at_its_close_counts_its_in_window_part() -> None:
    """A terminal that reports only at close: 06:00-10:00 is 4 hours, 2 of them inside."""
    floor, ev = raps_floor(), Events(start=local(6, 0))
    floor.apply(ev.player("C1"))
    floor.apply(ev.rating_open("T1", 1, "C1"))
    floor.apply(ev.rating_close("T1", 1, "C1", bet=5_000, minutes=240, at=local(10, 0)))
    assert pts(floor, "C1") == 60.0  # 120 minutes x R50


def test_a_rating_without_its_open_takes_its_span_from_the_minutes() -> None:
    """The open was lost: 65 minutes reported at 08:05 were played from 07:00."""
    floor, ev = raps_floor(), Events(start=local(8, 5))
    floor.apply(ev.player("C1"))
    floor.apply(ev.rating_update("T1", 1, "C1", bet=10_000, minutes=65))
    assert floor.anomalies["rating_without_open"] == 1
    assert pts(floor, "C1", local(8, 5)) == 5.0


def test_a_rating_across_19h00_and_midnight_credits_each_day_its_part() -> None:
    """18:00 to 09:00 next day, one figure at the end: 1 hour of the 25th's window and
    1 hour of the 26th's; the floor keeps today's points."""
    floor, ev = raps_floor(), Events(start=local(18, 0))
    floor.apply(ev.player("C1"))
    floor.apply(ev.rating_open("T1", 1, "C1"))
    floor.apply(ev.rating_update("T1", 1, "C1", bet=10_000, minutes=60, at=local(19, 0)))
    assert pts(floor, "C1", local(19, 0)) == 60.0
    floor.apply(ev.rating_close("T1", 1, "C1", bet=10_000, minutes=900, at=local(9, 0, day=26)))
    assert pts(floor, "C1", local(9, 0, day=26)) == 60.0  # 08:00-09:00 on the 26th


def test_slot_games_count_at_their_own_time() -> None:
    """A game is an instant: it counts when its timestamp is inside the window."""
    floor, ev = raps_floor(), Events(start=local(7, 59, 59))
    floor.apply(ev.player("C1"))
    floor.apply(ev.card_in("M01", "C1"))
    floor.apply(ev.game("M01", wager=50_000))
    floor.apply(ev.game("M01", wager=3_000, at=local(8, 0)))
    assert pts(floor, "C1") == 3.0


def test_a_slot_game_rebuilt_across_08h00_counts_its_in_window_part() -> None:
    """Meters read at 07:00, the machine unreachable, read again at 08:05: a game of R650
    rebuilt from the delta was played sometime in those 65 minutes: 5 of its 65 points."""
    floor, ev = raps_floor(), Events(start=local(6, 55))
    floor.apply(ev.player("C1"))
    floor.apply(ev.card_in("M01", "C1"))
    floor.apply(ev.game("M01", wager=65_000, at=local(8, 5), span_start=local(7, 0)))
    assert pts(floor, "C1") == 5.0
    assert floor.playing("C1")  # the game still marks the player active at its read time


def test_slot_games_rebuilt_across_19h00_count_only_until_19h00() -> None:
    """Read at 18:30 and at 19:05: seven games of R50 from the delta, 30/35 of each."""
    floor, ev = raps_floor(), Events(start=local(18, 0))
    floor.apply(ev.player("C1"))
    floor.apply(ev.card_in("M01", "C1"))
    for _ in range(7):
        floor.apply(ev.game("M01", wager=5_000, at=local(19, 5), span_start=local(18, 30)))
    assert pts(floor, "C1", local(19, 5)) == 30.0


def test_points_reported_for_a_span_count_their_in_window_part() -> None:
    """The casino system sends 20 points earned 07:50-08:10: 10 of them count."""
    floor, ev = events_floor(), Events(start=local(8, 10))
    floor.apply(ev.player("C1"))
    floor.apply(ev.points("C1", 20, span_start=local(7, 50)))
    assert pts(floor, "C1") == 10.0
    floor.apply(ev.points("C1", 35, at=local(19, 5), span_start=local(18, 30)))
    assert pts(floor, "C1", local(19, 5)) == 40.0


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    start=st.integers(6 * 3600, 20 * 3600),
    length=st.integers(1, 4 * 3600),
    wagers=st.lists(st.integers(1, 50_000), min_size=1, max_size=12),
)
def test_games_rebuilt_over_one_span_earn_the_floor_of_their_in_window_share(
    start: int, length: int, wagers: list[int]
) -> None:
    """A meter delta spread over several games (one span): their in-window points are
    the floor of the exact share of the whole, however the coin-in was spread."""
    midnight = local(0, 0)
    since = midnight + timedelta(seconds=start)
    read = since + timedelta(seconds=length)
    floor, ev = raps_floor(), Events(start=since)
    floor.apply(ev.player("C1"))
    floor.apply(ev.card_in("M01", "C1"))
    for wager in wagers:
        floor.apply(ev.game("M01", wager=wager, at=read, span_start=since))
    share = (
        Fraction(sum(wagers) * UNIT, 1000)
        * Fraction(in_window_seconds(since.timestamp(), read.timestamp()))
        / Fraction(length)
    )
    assert round(pts(floor, "C1", read) * UNIT) == math.floor(share)


minute_cuts = st.lists(st.integers(1, 899), unique=True, max_size=12).map(sorted)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    offset=st.integers(0, 3 * 3600),
    total=st.integers(1, 900),
    cuts=minute_cuts,
    bet=st.sampled_from([1_000, 5_000, 10_000, 12_345, 78_125]),
)
def test_splitting_a_rating_into_updates_gives_the_same_points(
    offset: int, total: int, cuts: list[int], bet: int
) -> None:
    """However a steady rating is reported (one close, or updates at any minutes), it
    earns exactly the floor of its in-window share: bet x minutes inside / rate."""
    opened = local(7, 0) + timedelta(seconds=offset)
    t0 = opened.timestamp()
    results = []
    for pieces in ([], [c for c in cuts if c < total]):
        floor, ev = raps_floor(), Events(start=opened)
        floor.apply(ev.player("C1"))
        floor.apply(ev.rating_open("T1", 1, "C1"))
        for m in pieces:
            at = opened + timedelta(minutes=m)
            floor.apply(ev.rating_update("T1", 1, "C1", bet=bet, minutes=m, at=at))
        closed = opened + timedelta(minutes=total)
        floor.apply(ev.rating_close("T1", 1, "C1", bet=bet, minutes=total, at=closed))
        results.append(pts(floor, "C1"))
    share = (
        Fraction(bet * total, 10_000)
        * Fraction(in_window_seconds(t0, t0 + 60 * total))
        / Fraction(60 * total)
    )
    assert results[0] == results[1] == math.floor(share * UNIT) / UNIT


figures = st.lists(
    st.tuples(st.integers(0, 4 * 3600), st.integers(0, 240)), min_size=1, max_size=10
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    offset=st.integers(0, 12 * 3600),
    steps=figures,
    bet=st.sampled_from([1_000, 10_000, 12_345]),
    lost_open=st.booleans(),
)
def test_table_points_never_exceed_the_in_window_share(
    offset: int, steps: list[tuple[int, int]], bet: int, lost_open: bool
) -> None:
    """Whatever the figures (pauses, repeats, minutes behind or ahead of the clock, a lost
    open), a rating earns at most the in-window share of each figure's increase over the
    time since the previous figure (the first one reaching back at least its minutes):
    never more than its total, nothing when all of that time is outside the window, and
    everything when all of it is inside."""
    opened = local(6, 0) + timedelta(seconds=offset)
    floor, ev = raps_floor(), Events(start=opened)
    floor.apply(ev.player("C1"))
    if not lost_open:
        floor.apply(ev.rating_open("T1", 1, "C1"))
    at, minutes = opened, 0
    prev: float | None = None if lost_open else opened.timestamp()
    share, credited_total, first = Fraction(0), 0, True
    earliest = opened.timestamp()
    for gap, more in steps:
        at += timedelta(seconds=gap)
        minutes += more
        floor.apply(ev.rating_update("T1", 1, "C1", bet=bet, minutes=minutes, at=at))
        end = at.timestamp()
        total = bet * minutes * UNIT // 10_000
        start = end - 60 * minutes if prev is None else prev
        if first and minutes:
            start = min(start, end - 60 * minutes)
            first = False
        earliest = min(earliest, start)
        if total > credited_total:
            part = in_window_seconds(start, end)
            inside = WINDOW[0] <= end < WINDOW[1]
            fraction = Fraction(part) / Fraction(end - start) if end > start else int(inside)
            share += (total - credited_total) * fraction
            credited_total = total
        prev = end
    got = pts(floor, "C1", local(12, 0))
    assert round(got * UNIT) == math.floor(share)
    assert share <= credited_total
    if in_window_seconds(earliest, at.timestamp()) == 0 and not (
        WINDOW[0] <= at.timestamp() < WINDOW[1]
    ):
        assert got == 0
    if WINDOW[0] <= earliest and at.timestamp() <= WINDOW[1]:
        assert round(got * UNIT) == credited_total


# ------------------------------------------------------------------ 2. exactness


def test_49_9996_points_from_the_casino_system_are_below_50() -> None:
    """Milli-point rounding made 49.9996 eligible; the threshold compares exact amounts."""
    floor, ev = events_floor(), Events()
    seated_slot_player(floor, ev, "C1", "M01", points=1)
    floor.apply(ev.points("C1", 49.9996))
    assert floor.check("raps", "C1") == "below_threshold"
    assert pts(floor, "C1") == 49.9996  # shown as sent; rounding is the display's business
    floor.apply(ev.points("C1", 0.0004))
    assert pts(floor, "C1") == 50.0
    assert floor.check("raps", "C1") == ELIGIBLE


def test_49_9996_points_earn_the_ticket_ledger_49999_milli_points_not_50000() -> None:
    """The points sink (the ticket ledger, 50 points a ticket) gets milli-points rounded
    down like every other credit: 49.9996 points must not earn a ticket."""
    got: list[int] = []
    floor = Floor(
        small_layout(),
        [Promotion("raps")],
        EarnRules("events"),
        points_sink=lambda _cell, _epoch, milli, _eid: got.append(milli),
    )
    ev = Events()
    floor.apply(ev.player("C1"))
    floor.apply(ev.points("C1", 49.9996))
    assert sum(got) == 49_999
    floor.apply(ev.points("C1", 0.0004))
    assert sum(got) == 49_999  # each credit on its own: 0.4 milli-points are none


def test_a_player_short_by_0_0004_is_told_0_001_needed_never_0() -> None:
    """The kiosk's "am I qualified": today's points round down, what is missing up."""
    from types import SimpleNamespace

    from raps.ticket_routes import _raps_view

    floor, ev = events_floor(), Events()
    floor.apply(ev.player("C1"))
    floor.apply(ev.points("C1", 49.9996))
    promo = floor.promotion("raps")
    view = _raps_view(SimpleNamespace(floor=floor), promo, "C1", local(12, 0))  # type: ignore[arg-type]
    assert view["points_today"] == 49.999 and view["points_needed"] == 0.001
    floor.apply(ev.points("C1", 12.0004))
    view = _raps_view(SimpleNamespace(floor=floor), promo, "C1", local(12, 0))  # type: ignore[arg-type]
    assert view["points_today"] == 62.0 and view["points_needed"] == 0.0


def test_decimal_points_add_up_as_written() -> None:
    """0.1 + 0.2 + ... as the CMS wrote them, not as binary floats: 500 x 0.1 is 50."""
    floor, ev = events_floor(), Events()
    seated_slot_player(floor, ev, "C1", "M01", points=1)
    for _ in range(499):
        floor.apply(ev.points("C1", 0.1))
    assert floor.check("raps", "C1") == "below_threshold"
    floor.apply(ev.points("C1", 0.1))
    assert floor.check("raps", "C1") == ELIGIBLE


def test_a_fractional_threshold_is_exact_too() -> None:
    floor, ev = events_floor(threshold_points=12.345), Events()
    seated_slot_player(floor, ev, "C1", "M01", points=1)
    floor.apply(ev.points("C1", 12.3449))
    assert floor.check("raps", "C1") == "below_threshold"
    floor.apply(ev.points("C1", 0.0001))
    assert floor.check("raps", "C1") == ELIGIBLE


def test_a_slot_rate_that_does_not_divide_1000_is_exact() -> None:
    """R3 per point: 150 games of R1 are 50 points (milli-points made it 49.950)."""
    floor = Floor(small_layout(), [Promotion("raps")], EarnRules(slot_wager_per_point=300))
    ev = Events()
    floor.apply(ev.player("C1"))
    floor.apply(ev.card_in("M01", "C1"))
    for _ in range(149):
        floor.apply(ev.game("M01", wager=100))
    assert floor.check("raps", "C1") == "below_threshold"
    floor.apply(ev.game("M01", wager=100))
    assert floor.check("raps", "C1") == ELIGIBLE
    assert pts(floor, "C1") == 50.0


def test_table_minutes_count_as_written() -> None:
    """R781.25 for 6.4 minutes is exactly 50 points (6.4 is no binary float)."""
    floor, ev = raps_floor(), Events()
    floor.apply(ev.player("C1"))
    floor.apply(ev.rating_open("T1", 1, "C1", at=local(11, 0)))
    floor.apply(ev.rating_update("T1", 1, "C1", bet=78_125, minutes=6.4))
    assert floor.check("raps", "C1") == ELIGIBLE


# ---------------------------------------------------------- snapshots and restore


def test_exact_points_survive_a_snapshot_round_trip() -> None:
    floor, ev = events_floor(), Events()
    seated_slot_player(floor, ev, "C1", "M01", points=1)
    floor.apply(ev.points("C1", 49.9996))
    again = events_floor()
    again.restore(floor.snapshot())
    assert again.check("raps", "C1") == "below_threshold"
    assert pts(again, "C1") == 49.9996


def test_a_rating_keeps_its_figures_across_a_restore() -> None:
    """The restored rating knows its last figure's time: the next update's span starts
    there, not at the restart."""
    floor, ev = raps_floor(), Events(start=local(7, 0))
    floor.apply(ev.player("C1"))
    floor.apply(ev.rating_open("T1", 1, "C1"))
    floor.apply(ev.rating_update("T1", 1, "C1", bet=10_000, minutes=30, at=local(7, 30)))
    again = raps_floor()
    again.restore(floor.snapshot())
    again.apply(ev.rating_update("T1", 1, "C1", bet=10_000, minutes=65, at=local(8, 5)))
    assert pts(again, "C1", local(8, 5)) == 5.0


def test_a_version_1_snapshot_in_milli_points_still_restores() -> None:
    """The daemon restores what the previous version wrote: milli-points, no figures."""
    floor, ev = raps_floor(), Events()
    seated_slot_player(floor, ev, "C1", "M01", points=49)
    floor.apply(ev.player("C2"))
    floor.apply(ev.rating_open("T1", 2, "C2"))
    floor.apply(ev.rating_update("T1", 2, "C2", bet=10_000, minutes=40))
    snap = floor.snapshot()
    day = snap["players"][0][9][0]
    v1 = {
        **{k: v for k, v in snap.items() if k not in ("points_unit", "ended_ratings")},
        "version": 1,
        "players": [[*row[:9], [day, round(row[9][1] / UNIT * 1000)]] for row in snap["players"]],
        "seats": [[t, s, c, credited * 1000 // UNIT] for t, s, c, credited, *_ in snap["seats"]],
    }
    again = raps_floor()
    again.restore(v1)
    assert pts(again, "C1") == 49.0 and pts(again, "C2") == 40.0
    assert again.check("raps", "C2") == "below_threshold"
    again.apply(ev.rating_update("T1", 2, "C2", bet=10_000, minutes=50))
    assert pts(again, "C2") == 50.0  # credited beyond what the old daemon credited, once
    assert again.check("raps", "C2") == ELIGIBLE
    again.apply(ev.game("M01", wager=1_000))
    assert again.check("raps", "C1") == ELIGIBLE


def test_a_span_start_out_of_range_is_refused_before_anything_changes() -> None:
    """A year-0001 span_start once failed on its local day after the game had already
    made its player active and fed the ticket points sink: refused first, nothing moves."""
    got: list[int] = []
    floor = Floor(
        small_layout(),
        [Promotion("raps")],
        EarnRules(),
        points_sink=lambda _cell, _epoch, milli, _eid: got.append(milli),
    )
    ev = Events(start=local(9, 0))
    floor.apply(ev.player("C1"))
    floor.apply(ev.card_in("M01", "C1"))
    before = list(got)
    year1 = datetime.fromisoformat("0001-01-01T00:00:00+02:00")
    too_long = local(9, 0) - timedelta(days=3 * 366 + 1)
    for start in (year1, too_long):
        assert floor.apply(ev.game("M01", wager=65_000, span_start=start)) == "span_out_of_range"
    assert got == before and not floor.playing("C1") and pts(floor, "C1") == 0.0
    assert floor.rejections["span_out_of_range"] == 2
    points = events_floor()
    assert points.apply(ev.points("C2", 20, span_start=year1)) == "span_out_of_range"
    assert points.profile("C2") is None and pts(points, "C2") == 0.0
    # two years is a span the floor credits (its in-window share)
    floor.apply(ev.game("M01", wager=1_000, span_start=local(9, 0) - timedelta(days=730)))
    assert sum(got) > sum(before) and floor.playing("C1")

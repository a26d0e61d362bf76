"""Eligibility: why a player on the floor is, or is not, in a promotion's pool.

Every left-out player has one reason, the first rule that keeps them out, so the
journal can say why nobody else was offered at a pick.  Exclusions (seed rules 1-3)
apply at once, on every pool, before anyone can be drawn.
"""

from __future__ import annotations

from datetime import time, timedelta

import pytest

from selector.events import Exclusion, PoolKind, Tier
from selector.floor import ELIGIBLE, Floor
from selector.promotion import ALL_TIERS, EarnRules, Promotion, SessionRules
from selector.windows import QualifyingWindow
from tests.builders import (
    Events,
    local,
    raps_floor,
    seated_slot_player,
    seated_table_player,
    small_layout,
)


def slot_pool(floor: Floor, promo: str = "raps") -> list[str]:
    return list(floor.pool(promo, PoolKind.SLOTS))


def table_pool(floor: Floor, promo: str = "raps") -> list[str]:
    return list(floor.pool(promo, PoolKind.TABLES))


# ------------------------------------------------------------ one reason each


def test_card_not_in_directory_is_unknown_player() -> None:
    """Seed rule 4: members only; a card the directory does not know cannot qualify."""
    floor, ev = raps_floor(), Events()
    floor.apply(ev.card_in("M01", "C1"))
    for _ in range(60):
        floor.apply(ev.game("M01"))
    assert floor.check("raps", "C1") == "unknown_player"
    assert floor.left_out_counts("raps", "slots") == {"unknown_player": 1}
    assert slot_pool(floor) == []
    assert floor.check("raps", "never-seen") == "unknown_player"


def test_directory_entry_arriving_later_admits_the_player() -> None:
    """A directory sync that lags the card-in must not cost the player their chance."""
    floor, ev = raps_floor(), Events()
    floor.apply(ev.card_in("M01", "C1"))
    for _ in range(60):
        floor.apply(ev.game("M01"))
    floor.apply(ev.player("C1"))
    assert slot_pool(floor) == ["C1"]


def test_age_not_verified_is_left_out() -> None:
    """Seed rule 1: nobody under 18; an unverified age is treated as not verified adult."""
    floor, ev = raps_floor(), Events()
    seated_slot_player(floor, ev, "C1", "M01", age_verified=False)
    seated_table_player(floor, ev, "C2", "T1", 1, age_verified=False)
    assert floor.check("raps", "C1") == "age_not_verified"
    assert floor.check("raps", "C2") == "age_not_verified"
    assert floor.left_out_counts("raps", "slots") == {"age_not_verified": 1}
    assert floor.left_out_counts("raps", "tables") == {"age_not_verified": 1}
    assert slot_pool(floor) == table_pool(floor) == []


@pytest.mark.parametrize("exclusion", list(Exclusion), ids=[e.value for e in Exclusion])
def test_each_exclusion_is_its_own_reason(exclusion: Exclusion) -> None:
    """Seed rules 2-3 (self-exclusion, refusal of entry, staff and family) and manual blocks."""
    floor, ev = raps_floor(), Events()
    seated_slot_player(floor, ev, "C1", "M01", exclusions=frozenset({exclusion}))
    seated_table_player(floor, ev, "C2", "T1", 1, exclusions=frozenset({exclusion}))
    assert floor.check("raps", "C1") == exclusion.value
    assert floor.check("raps", "C2") == exclusion.value
    assert floor.left_out_counts("raps", "slots") == {exclusion.value: 1}
    assert floor.left_out_counts("raps", "tables") == {exclusion.value: 1}
    assert slot_pool(floor) == table_pool(floor) == []


def test_exclusion_reason_names_are_the_documented_ones() -> None:
    assert {e.value for e in Exclusion} == {
        "self_excluded",
        "refusal_of_entry",
        "staff_or_associate",
        "manual_block",
    }


def test_several_exclusions_give_one_stable_reason() -> None:
    """The reason is deterministic (first in Exclusion order), so journals are reproducible."""
    floor, ev = raps_floor(), Events()
    both = frozenset({Exclusion.MANUAL_BLOCK, Exclusion.SELF_EXCLUDED})
    seated_slot_player(floor, ev, "C1", "M01", exclusions=both, block_reason="dispute")
    assert floor.check("raps", "C1") == "self_excluded"
    profile = floor.profile("C1")
    assert profile is not None
    assert profile.block_reason == "dispute"


def test_age_check_comes_before_exclusions() -> None:
    floor, ev = raps_floor(), Events()
    seated_slot_player(
        floor, ev, "C1", "M01", age_verified=False, exclusions=frozenset({Exclusion.MANUAL_BLOCK})
    )
    assert floor.check("raps", "C1") == "age_not_verified"


def test_tier_not_included() -> None:
    """A promotion restricted to some tiers leaves the others out."""
    floor, ev = raps_floor(tiers=frozenset({Tier.KING, Tier.ACE})), Events()
    seated_slot_player(floor, ev, "C1", "M01", tier=Tier.QUEEN)
    seated_slot_player(floor, ev, "C2", "M02", tier=Tier.ACE)
    assert floor.check("raps", "C1") == "tier_not_included"
    assert slot_pool(floor) == ["C2"]
    assert floor.left_out_counts("raps", "slots") == {"tier_not_included": 1}


def test_seed_raps_is_open_to_all_tiers() -> None:
    """Seed: 'Open to All tiers' is the default."""
    floor, ev = raps_floor(), Events()
    for i, tier in enumerate(Tier, start=1):
        seated_slot_player(floor, ev, f"C{i}", f"M{i:02d}", tier=tier)
    assert len(slot_pool(floor)) == len(Tier)
    assert Promotion("p").tiers == ALL_TIERS


def test_area_excluded() -> None:
    """Machines M26-M30 of the small layout are in 'Salon Prive'."""
    floor, ev = raps_floor(areas_excluded=frozenset({"Salon Prive"})), Events()
    seated_slot_player(floor, ev, "C1", "M25")
    seated_slot_player(floor, ev, "C2", "M26")
    seated_slot_player(floor, ev, "C3", "M30")
    assert slot_pool(floor) == ["C1"]
    assert floor.check("raps", "C2") == "area_not_included"
    assert floor.left_out_counts("raps", "slots") == {"area_not_included": 2}


def test_areas_included_limits_to_listed_areas() -> None:
    floor, ev = raps_floor(areas_included=frozenset({"Pit"})), Events()
    seated_slot_player(floor, ev, "C1", "M01")
    seated_table_player(floor, ev, "C2", "T1", 1)
    assert slot_pool(floor) == []
    assert table_pool(floor) == ["C2"]
    assert floor.check("raps", "C1") == "area_not_included"


def test_moving_into_an_excluded_area_leaves_the_pool() -> None:
    """The area is where the player is now, not where they earned the points."""
    floor, ev = raps_floor(areas_excluded=frozenset({"Salon Prive"})), Events()
    seated_slot_player(floor, ev, "C1", "M01")
    assert slot_pool(floor) == ["C1"]
    floor.apply(ev.card_in("M28", "C1"))
    floor.apply(ev.game("M28"))
    assert slot_pool(floor) == []
    assert floor.check("raps", "C1") == "area_not_included"


def test_idle_reason() -> None:
    floor, ev = raps_floor(), Events()
    seated_slot_player(floor, ev, "C1", "M01")
    floor.advance(ev.tick(120))
    assert floor.check("raps", "C1") == "idle"
    assert floor.left_out_counts("raps", "slots") == {"idle": 1}


def test_below_threshold_reason() -> None:
    floor, ev = raps_floor(), Events()
    seated_slot_player(floor, ev, "C1", "M01", points=10)
    seated_table_player(floor, ev, "C2", "T1", 1, points=49)
    assert floor.check("raps", "C1") == "below_threshold"
    assert floor.check("raps", "C2") == "below_threshold"
    assert floor.left_out_counts("raps", "slots") == {"below_threshold": 1}
    assert floor.left_out_counts("raps", "tables") == {"below_threshold": 1}


def test_below_min_active_time_until_advance_passes_it() -> None:
    """A minimum active time keeps a newcomer out until advance() reaches it."""
    floor, ev = raps_floor(min_active_seconds=60), Events()
    seated_slot_player(floor, ev, "C1", "M01")
    since = ev.now
    assert floor.check("raps", "C1") == "below_min_active_time"
    assert floor.left_out_counts("raps", "slots") == {"below_min_active_time": 1}
    floor.advance(since + timedelta(seconds=59.5))
    assert slot_pool(floor) == []
    floor.advance(since + timedelta(seconds=60))
    assert slot_pool(floor) == ["C1"]
    assert floor.check("raps", "C1") == ELIGIBLE


def test_min_active_time_for_table_counts_from_rating_open() -> None:
    floor, ev = raps_floor(min_active_seconds=300), Events()
    seated_table_player(floor, ev, "C1", "T1", 1)
    assert floor.check("raps", "C1") == "below_min_active_time"
    floor.advance(ev.tick(300))
    assert table_pool(floor) == ["C1"]


def test_not_on_floor_and_pool_kind_not_included() -> None:
    """check() also tells apart a card that left and a place the promotion ignores."""
    floor, ev = raps_floor(pool_kinds=frozenset({PoolKind.SLOTS})), Events()
    seated_table_player(floor, ev, "C1", "T1", 1)
    floor.apply(ev.player("C2"))
    assert floor.check("raps", "C1") == "pool_kind_not_included"
    assert floor.check("raps", "C2") == "not_on_floor"
    assert floor.left_out_counts("raps", "tables") == {}
    assert table_pool(floor) == []


def test_unknown_promotion_is_a_key_error() -> None:
    floor = raps_floor()
    for call in (
        lambda: floor.check("nope", "C1"),
        lambda: floor.pool("nope", "slots"),
        lambda: floor.eligible_counts("nope"),
        lambda: floor.left_out_counts("nope", "slots"),
        lambda: floor.promotion("nope"),
    ):
        with pytest.raises(KeyError):
            call()


# ---------------------------------------------------------- exclusions at once


def test_self_exclusion_leaves_every_pool_immediately() -> None:
    """A directory update to self-excluded takes effect before the next pick, everywhere."""
    floor = Floor(
        small_layout(),
        [Promotion("raps"), Promotion("other", threshold_points=10)],
        EarnRules(),
    )
    ev = Events()
    seated_slot_player(floor, ev, "C1", "M01")
    seated_table_player(floor, ev, "C2", "T1", 1)
    for promo in ("raps", "other"):
        assert slot_pool(floor, promo) == ["C1"]
        assert table_pool(floor, promo) == ["C2"]
    floor.apply(ev.player("C1", exclusions=frozenset({Exclusion.SELF_EXCLUDED})))
    floor.apply(ev.player("C2", exclusions=frozenset({Exclusion.SELF_EXCLUDED})))
    for promo in ("raps", "other"):
        assert slot_pool(floor, promo) == []
        assert table_pool(floor, promo) == []
        assert floor.check(promo, "C1") == "self_excluded"
        assert floor.left_out_counts(promo, "slots") == {"self_excluded": 1}
    assert floor.eligible_counts("raps") == {}


def test_lifting_a_manual_block_readmits_the_player() -> None:
    """The directory entry replaces what was known: clearing the block clears the reason."""
    floor, ev = raps_floor(), Events()
    seated_slot_player(floor, ev, "C1", "M01", exclusions=frozenset({Exclusion.MANUAL_BLOCK}))
    assert slot_pool(floor) == []
    floor.apply(ev.player("C1"))
    assert slot_pool(floor) == ["C1"]


def test_tier_change_moves_the_player_between_tier_counts() -> None:
    floor, ev = raps_floor(), Events()
    seated_slot_player(floor, ev, "C1", "M01", tier=Tier.TEN)
    assert floor.eligible_counts("raps") == {("slots", "Main Floor", "ten"): 1}
    floor.apply(ev.player("C1", tier=Tier.KING))
    assert floor.eligible_counts("raps") == {("slots", "Main Floor", "king"): 1}


# ------------------------------------------------------------------- counts


def test_eligible_counts_by_kind_area_and_tier() -> None:
    """Dashboards show pool sizes by (kind, area, tier); only eligible players count."""
    floor, ev = raps_floor(), Events()
    seated_slot_player(floor, ev, "C1", "M01", tier=Tier.TEN)
    seated_slot_player(floor, ev, "C2", "M02", tier=Tier.TEN)
    seated_slot_player(floor, ev, "C3", "M03", tier=Tier.QUEEN)
    seated_slot_player(floor, ev, "C4", "M27", tier=Tier.ACE)
    seated_slot_player(floor, ev, "C5", "M04", tier=Tier.TEN, points=5)  # below threshold
    seated_table_player(floor, ev, "C6", "T1", 1, tier=Tier.KING)
    seated_table_player(floor, ev, "C7", "T2", 3, tier=Tier.KING)
    assert floor.eligible_counts("raps") == {
        ("slots", "Main Floor", "ten"): 2,
        ("slots", "Main Floor", "queen"): 1,
        ("slots", "Salon Prive", "ace"): 1,
        ("tables", "Pit", "king"): 2,
    }
    assert floor.left_out_counts("raps", "slots") == {"below_threshold": 1}
    assert floor.left_out_counts("raps", "tables") == {}
    assert slot_pool(floor) == ["C1", "C2", "C3", "C4"]  # canonical order
    # leaving the floor clears the counts
    floor.apply(ev.card_out("M01", "C1"))
    floor.apply(ev.rating_close("T1", 1, "C6", bet=10_000, minutes=60))
    assert floor.eligible_counts("raps")[("slots", "Main Floor", "ten")] == 1
    assert floor.eligible_counts("raps")[("tables", "Pit", "king")] == 1


# --------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"promotion_id": ""}, "promotion_id"),
        ({"threshold_points": -1}, "threshold"),
        ({"min_active_seconds": -0.1}, "min_active"),
        ({"tiers": frozenset()}, "tier"),
        ({"pool_kinds": frozenset()}, "pool kind"),
    ],
)
def test_promotion_validation(kwargs: dict[str, object], match: str) -> None:
    args: dict[str, object] = {"promotion_id": "p"}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        Promotion(**args)  # type: ignore[arg-type]


def test_promotion_defaults_are_the_seed_raps() -> None:
    """Defaults: 50 points, 08:00-19:00 Johannesburg, all tiers, slots and tables."""
    p = Promotion("raps")
    assert p.threshold_points == 50.0
    assert p.window == QualifyingWindow("Africa/Johannesburg", time(8), time(19))
    assert p.pool_kinds == frozenset(PoolKind)
    assert p.area_allowed("anything")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"quotas": {PoolKind.SLOTS: -1, PoolKind.TABLES: 4}},
        {"quotas": {PoolKind.SLOTS: 0, PoolKind.TABLES: 0}},
        {"quotas": {}},
        {"claim_seconds": 0},
        {"claim_seconds": -90},
    ],
)
def test_session_rules_validation(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        SessionRules(**kwargs)  # type: ignore[arg-type]


def test_session_rules_defaults_are_the_seed() -> None:
    rules = SessionRules()
    assert rules.quotas == {PoolKind.SLOTS: 6, PoolKind.TABLES: 4}
    assert rules.claim_seconds == 90.0
    assert not rules.exclude_no_shows  # 003: "selected more than once, win only once"
    assert rules.exclude_voided


def test_earn_rules_defaults() -> None:
    earn = EarnRules()
    assert earn.points_source == "computed"
    assert earn.slot_wager_per_point == 1000
    assert earn.table_bet_minutes_per_point == 10_000


def test_floor_refuses_the_same_promotion_twice() -> None:
    with pytest.raises(ValueError, match="twice"):
        Floor(small_layout(), [Promotion("raps"), Promotion("raps", threshold_points=1)])


# ----------------------------------------------------------- several promotions


def test_two_promotions_with_different_thresholds_keep_separate_pools() -> None:
    """One floor serves several promotions; each has its own threshold and pool."""
    floor = Floor(
        small_layout(),
        [Promotion("raps"), Promotion("high", threshold_points=100)],
        EarnRules(),
    )
    ev = Events()
    seated_slot_player(floor, ev, "C1", "M01", points=60)
    seated_slot_player(floor, ev, "C2", "M02", points=120)
    assert slot_pool(floor, "raps") == ["C1", "C2"]
    assert slot_pool(floor, "high") == ["C2"]
    assert floor.check("high", "C1") == "below_threshold"
    # C1 crosses the higher threshold later: joins that pool without touching the other
    for _ in range(40):
        floor.apply(ev.game("M01"))
    assert slot_pool(floor, "high") == ["C1", "C2"]
    assert slot_pool(floor, "raps") == ["C1", "C2"]


def test_two_promotions_with_different_windows_keep_separate_points() -> None:
    """Points earned outside one promotion's window still count for another's."""
    evening = QualifyingWindow(start=time(19, 0), end=time(0, 0))
    floor = Floor(
        small_layout(),
        [Promotion("raps"), Promotion("night", threshold_points=10, window=evening)],
        EarnRules(),
    )
    ev = Events(start=local(19, 30))
    seated_slot_player(floor, ev, "C1", "M01", points=20)
    assert floor.points("raps", "C1", ev.now) == 0.0
    assert floor.points("night", "C1", ev.now) == 20.0
    assert slot_pool(floor, "night") == ["C1"]
    assert slot_pool(floor, "raps") == []
    assert floor.check("raps", "C1") == "below_threshold"


def test_promotions_with_different_areas_and_kinds() -> None:
    """Pool filters are per promotion: the same player can be in one pool and not another."""
    floor = Floor(
        small_layout(),
        [
            Promotion("raps"),
            Promotion("salon", areas_included=frozenset({"Salon Prive"})),
            Promotion("slots-only", pool_kinds=frozenset({PoolKind.SLOTS})),
        ],
        EarnRules(),
    )
    ev = Events()
    seated_slot_player(floor, ev, "C1", "M01")
    seated_slot_player(floor, ev, "C2", "M29")
    seated_table_player(floor, ev, "C3", "T1", 1)
    assert slot_pool(floor, "raps") == ["C1", "C2"]
    assert slot_pool(floor, "salon") == ["C2"]
    assert slot_pool(floor, "slots-only") == ["C1", "C2"]
    assert table_pool(floor, "raps") == ["C3"]
    assert table_pool(floor, "salon") == []
    assert table_pool(floor, "slots-only") == []


def test_promotions_changed_while_running_recompute_the_pools_at_once() -> None:
    """A definition approved on the calendar page reaches the floor without a restart:
    a higher threshold takes a player out of the pool now; a promotion with a play window
    no other has counts points from the change on."""
    floor, ev = raps_floor(), Events()
    seated_slot_player(floor, ev, "C1", "M01", points=60)
    seated_slot_player(floor, ev, "C2", "M02", points=120)
    assert slot_pool(floor) == ["C1", "C2"]
    evening = QualifyingWindow(start=time(12), end=time(0))
    floor.set_promotions(
        [Promotion("raps", threshold_points=100), Promotion("late", window=evening)]
    )
    assert slot_pool(floor) == ["C2"] and floor.check("raps", "C1") == "below_threshold"
    assert slot_pool(floor, "late") == []  # its window's points start now
    for _ in range(50):
        floor.apply(ev.game("M01", wager=1000))
    assert slot_pool(floor) == ["C1", "C2"] and slot_pool(floor, "late") == ["C1"]
    with pytest.raises(KeyError):
        floor.pool("gone", PoolKind.SLOTS)

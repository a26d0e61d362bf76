"""Issue 15, floor rule 7: cards never in the directory are not tracked forever.

A card the directory does not know (a guest card, a misread) that has left the floor and
earned no qualifying points today is forgotten `prune_unknown_after_seconds` after it was
last seen, and counted (`unknown_card_pruned`, exported with the floor anomalies).  A card
with points today is kept: its directory entry may still arrive and admit it.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError

from raps.config.floor import FloorConfig, SimulateConfig
from raps.metrics import Metrics
from raps.seal import SeedSealer
from raps.service import Service
from raps.store.database import open_engine
from selector.floor import ELIGIBLE, Floor
from selector.promotion import EarnRules, Promotion
from tests.builders import NOON, Events, local, raps_floor, small_layout
from tests.daemon_helpers import SEED_KEY, Clock, floor_config


def plays_and_leaves(floor: Floor, ev: Events, card: str, start: datetime, games: int) -> None:
    """The card goes in at M01 at `start`, plays a game a second, and comes out."""
    floor.apply(ev.card_in("M01", card, at=start))
    for i in range(games):
        floor.apply(ev.game("M01", wager=1_000, at=start + timedelta(seconds=i)))
    floor.apply(ev.card_out("M01", card, at=start + timedelta(seconds=games)))


def test_an_unknown_card_without_points_is_pruned_an_hour_after_it_left() -> None:
    floor, ev = raps_floor(), Events()
    plays_and_leaves(floor, ev, "GUEST", local(7, 0), 10)  # before 08:00: no points
    left = local(7, 0, 9)  # the floor's time when it left (its last game)
    floor.advance(left + timedelta(seconds=3599))
    assert floor.tracked_players == 1
    floor.advance(left + timedelta(seconds=3600))
    assert floor.tracked_players == 0
    assert floor.anomalies["unknown_card_pruned"] == 1
    assert floor.counters()["anomalies"] == {"unknown_card_pruned": 1}
    # it comes back as a new card: nothing left over, nothing broken
    floor.apply(ev.card_in("M02", "GUEST", at=local(9, 0)))
    floor.apply(ev.game("M02", at=local(9, 0)))
    assert floor.check("raps", "GUEST") == "unknown_player"
    assert floor.points("raps", "GUEST", local(9, 0)) == 1.0


def test_an_unknown_card_with_points_today_is_kept_until_the_next_day() -> None:
    """Its directory entry may still come today: the points must be there for it."""
    floor, ev = raps_floor(), Events()
    plays_and_leaves(floor, ev, "GUEST", local(12, 0), 60)
    floor.advance(local(18, 0))
    assert floor.tracked_players == 1
    assert not floor.anomalies["unknown_card_pruned"]
    floor.advance(local(1, 0, day=26))
    assert floor.tracked_players == 0
    assert floor.anomalies["unknown_card_pruned"] == 1


def test_a_directory_entry_after_the_visit_keeps_the_card_for_good() -> None:
    floor, ev = raps_floor(), Events()
    plays_and_leaves(floor, ev, "NEW", local(12, 0), 60)
    floor.apply(ev.player("NEW", at=local(12, 5)))
    floor.advance(local(12, 0, day=27))
    assert floor.tracked_players == 1
    floor.apply(ev.card_in("M03", "NEW", at=local(12, 1, day=27)))
    floor.apply(ev.game("M03", at=local(12, 1, day=27)))
    assert floor.check("raps", "NEW") == "below_threshold"


def test_known_players_and_unknown_cards_on_the_floor_are_never_pruned() -> None:
    floor, ev = raps_floor(), Events(start=local(6, 0))
    floor.apply(ev.player("KNOWN"))
    floor.apply(ev.card_in("M01", "KNOWN"))
    floor.apply(ev.card_out("M01", "KNOWN"))
    floor.apply(ev.card_in("M02", "STAYS"))  # unknown, carded in all day
    floor.apply(ev.rating_open("T1", 1, "SEATED"))  # unknown, rated all day
    floor.advance(local(23, 0))
    assert floor.tracked_players == 3
    assert floor.left_out_counts("raps", "slots") == {"unknown_player": 1}
    assert floor.left_out_counts("raps", "tables") == {"unknown_player": 1}


def test_a_card_seen_again_restarts_its_time() -> None:
    floor, ev = raps_floor(), Events()
    plays_and_leaves(floor, ev, "GUEST", local(6, 0), 1)
    plays_and_leaves(floor, ev, "GUEST", local(6, 30), 1)
    floor.advance(local(7, 0, 1))
    assert floor.tracked_players == 1
    floor.advance(local(7, 30))
    assert floor.tracked_players == 0


def test_points_events_for_an_unknown_card_outside_the_window_do_not_keep_it() -> None:
    floor = Floor(small_layout(), [Promotion("raps")], EarnRules(points_source="events"))
    ev = Events(start=local(20, 0))
    floor.apply(ev.points("GHOST", 30))  # after 19:00: no qualifying points
    floor.advance(local(21, 0))
    assert floor.tracked_players == 0
    assert floor.anomalies["unknown_card_pruned"] == 1


def test_pruning_is_configurable_and_can_be_off() -> None:
    floor = Floor(small_layout(), [Promotion("raps")], prune_unknown_after_seconds=60)
    ev = Events()
    plays_and_leaves(floor, ev, "GUEST", local(7, 0), 1)
    floor.advance(local(7, 1, 1))
    assert floor.tracked_players == 0
    never = Floor(small_layout(), [Promotion("raps")], prune_unknown_after_seconds=None)
    plays_and_leaves(never, Events(), "GUEST", local(7, 0), 1)
    never.advance(local(7, 0, day=28))
    assert never.tracked_players == 1
    for bad in (0, -5):
        with pytest.raises(ValueError, match="prune_unknown_after_seconds"):
            Floor(small_layout(), [Promotion("raps")], prune_unknown_after_seconds=bad)


def test_a_restored_unknown_card_is_pruned_too() -> None:
    floor, ev = raps_floor(), Events()
    plays_and_leaves(floor, ev, "GUEST", local(7, 0), 1)
    floor.apply(ev.player("C1", at=local(7, 0)))
    again = raps_floor()
    again.restore(floor.snapshot())
    again.advance(local(9, 0))
    assert again.tracked_players == 1
    assert again.profile("C1") is not None


def test_a_pruned_card_does_not_disturb_the_pools() -> None:
    floor, ev = raps_floor(), Events()
    floor.apply(ev.player("C1", at=local(6, 0)))
    plays_and_leaves(floor, ev, "GUEST", local(6, 0), 5)
    floor.apply(ev.card_in("M05", "C1", at=local(12, 0)))
    for i in range(50):
        floor.apply(ev.game("M05", at=local(12, 0, i)))
    floor.advance(local(12, 0, 50))
    assert floor.anomalies["unknown_card_pruned"] == 1
    assert list(floor.pool("raps", "slots")) == ["C1"]
    assert floor.check("raps", "C1") == ELIGIBLE


def test_the_floor_config_has_the_key_with_its_default() -> None:
    sim = SimulateConfig(machines=1, tables=0, players=1)
    assert FloorConfig(simulate=sim).prune_unknown_after_seconds == 3600.0
    tuned = FloorConfig(simulate=sim, prune_unknown_after_seconds=600)
    assert tuned.prune_unknown_after_seconds == 600
    with pytest.raises(ValidationError):
        FloorConfig(simulate=sim, prune_unknown_after_seconds=0)


def test_the_service_gives_the_floor_the_configured_prune_time(tmp_path: Path) -> None:
    """`floor.prune_unknown_after_seconds` reaches the daemon's floor: an unknown card is
    forgotten after the configured 600 s, not the default hour."""
    cfg = floor_config(f"sqlite:///{tmp_path / 'raps.db'}", tmp_path)
    floor = cfg.floor.model_copy(update={"prune_unknown_after_seconds": 600.0})
    cfg = cfg.model_copy(update={"floor": floor})
    service = Service(cfg, open_engine(cfg.storage.url), SeedSealer(SEED_KEY), Metrics(), Clock())
    assert service.floor.prune_unknown_after == 600.0
    ev = Events(NOON)
    assert service.ingest([ev.card_in("M01", "GUEST"), ev.card_out("M01", "GUEST")], "t") == 2
    service.floor.advance(NOON + timedelta(seconds=599))
    assert service.floor.tracked_players == 1
    service.floor.advance(NOON + timedelta(seconds=601))
    assert service.floor.tracked_players == 0

"""Floor state: who is where, who is actively playing, and what the floor refuses.

A pick sends security to a machine or a seat, so the floor must never hold a card
in two places, must drop players who stopped playing, and must reject events naming
machines, tables or seats it does not know rather than guess.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from selector.events import AnyFloorEvent, MachineStatus
from selector.floor import ELIGIBLE, Floor
from selector.layout import FloorLayout, Location, Machine, Table
from selector.promotion import EarnRules, Promotion
from tests.builders import (
    Events,
    raps_floor,
    seated_slot_player,
    seated_table_player,
    small_layout,
)


def slots(floor: Floor) -> list[str]:
    return list(floor.pool("raps", "slots"))


def tables(floor: Floor) -> list[str]:
    return list(floor.pool("raps", "tables"))


# --------------------------------------------------------------- one place at most


def test_card_in_elsewhere_ends_the_first_machine_session() -> None:
    """A card is at one machine at most: a card-in at B moves the player off A."""
    floor, ev = raps_floor(), Events()
    seated_slot_player(floor, ev, "C1", "M01")
    assert slots(floor) == ["C1"]

    assert floor.apply(ev.card_in("M02", "C1")) is None
    assert floor.anomalies["card_in_elsewhere"] == 1
    loc = floor.location("C1")
    assert loc is not None
    assert loc.machine == "M02"
    # no game at M02 yet: the player is on the floor but not active
    assert slots(floor) == []
    assert floor.check("raps", "C1") == "idle"
    # M01 is free again: another card can go in without a replacement anomaly
    floor.apply(ev.player("C2"))
    floor.apply(ev.card_in("M01", "C2"))
    assert floor.anomalies["card_replaced_at_machine"] == 0


def test_card_in_at_occupied_machine_replaces_the_card() -> None:
    """The machine reader holds one card: the newcomer wins, the old card leaves the floor."""
    floor, ev = raps_floor(), Events()
    seated_slot_player(floor, ev, "C1", "M01")
    floor.apply(ev.player("C2"))

    floor.apply(ev.card_in("M01", "C2"))
    assert floor.anomalies["card_replaced_at_machine"] == 1
    assert floor.location("C1") is None
    assert floor.check("raps", "C1") == "not_on_floor"
    assert slots(floor) == []
    loc = floor.location("C2")
    assert loc is not None
    assert loc.machine == "M01"


def test_repeated_card_in_at_same_machine_changes_nothing() -> None:
    """A SMIB resending card-in must not reset the player's activity or count an anomaly."""
    floor, ev = raps_floor(), Events()
    seated_slot_player(floor, ev, "C1", "M01")
    floor.apply(ev.card_in("M01", "C1"))
    assert slots(floor) == ["C1"]
    assert not floor.anomalies


def test_card_moves_from_slot_to_table_seat() -> None:
    """Opening a rating for a card that is in a machine moves it to the table."""
    floor, ev = raps_floor(), Events()
    seated_slot_player(floor, ev, "C1", "M01")
    floor.apply(ev.rating_open("T1", 3, "C1"))
    assert floor.anomalies["card_in_elsewhere"] == 1
    assert floor.location("C1") == Location("tables", "Pit", table="T1", seat=3)
    assert slots(floor) == []
    assert tables(floor) == ["C1"]  # points are per player, not per place
    # the machine is free: a card-out for C1 there is now an anomaly
    floor.apply(ev.card_out("M01", "C1"))
    assert floor.anomalies["card_out_without_card_in"] == 1


def test_card_moves_from_table_seat_to_slot() -> None:
    """A card-in for a seated table player ends the rating's seat."""
    floor, ev = raps_floor(), Events()
    seated_table_player(floor, ev, "C1", "T1", 2)
    assert tables(floor) == ["C1"]
    floor.apply(ev.card_in("M05", "C1"))
    assert floor.anomalies["card_in_elsewhere"] == 1
    assert tables(floor) == []
    loc = floor.location("C1")
    assert loc is not None
    assert (loc.kind, loc.machine) == ("slots", "M05")
    # the seat is free: another card opens it without a replacement anomaly
    floor.apply(ev.player("C2"))
    floor.apply(ev.rating_open("T1", 2, "C2"))
    assert floor.anomalies["seat_rating_replaced"] == 0
    # a game at M05 makes C1 an active, qualified slot player
    floor.apply(ev.game("M05"))
    assert slots(floor) == ["C1"]


def test_card_out_with_wrong_card_is_an_anomaly_not_a_crash() -> None:
    """A card-out for a card the machine does not hold leaves the real player in place."""
    floor, ev = raps_floor(), Events()
    seated_slot_player(floor, ev, "C1", "M01")
    assert floor.apply(ev.card_out("M01", "C9")) is None
    assert floor.apply(ev.card_out("M02", "C1")) is None
    assert floor.anomalies["card_out_without_card_in"] == 2
    assert slots(floor) == ["C1"]
    assert not floor.rejections


def test_card_out_removes_player_from_floor_and_pool() -> None:
    """After card-out the player is nowhere: no location, not drawable."""
    floor, ev = raps_floor(), Events()
    seated_slot_player(floor, ev, "C1", "M01")
    floor.apply(ev.card_out("M01", "C1"))
    assert floor.location("C1") is None
    assert slots(floor) == []
    assert floor.check("raps", "C1") == "not_on_floor"
    assert floor.left_out_counts("raps", "slots") == {}


# ------------------------------------------------------------------- slot activity


def test_slot_player_active_only_after_a_game_with_card_in() -> None:
    """Card in alone is not play: the design asks for card in AND recent game play."""
    floor, ev = raps_floor(), Events()
    floor.apply(ev.player("C1"))
    floor.apply(ev.points("C1", 0))  # ignored in computed mode, just noise
    floor.apply(ev.game("M01"))  # played before the card went in: uncarded
    floor.apply(ev.card_in("M01", "C1"))
    assert floor.check("raps", "C1") == "idle"
    for _ in range(60):
        floor.apply(ev.game("M01"))
    assert floor.check("raps", "C1") == ELIGIBLE
    assert slots(floor) == ["C1"]


def test_games_without_a_card_are_counted_as_uncarded() -> None:
    """Uncarded play earns nobody anything but is counted for ingest health."""
    floor, ev = raps_floor(), Events()
    for _ in range(3):
        floor.apply(ev.game("M01"))
    seated_slot_player(floor, ev, "C1", "M02", points=2)
    floor.apply(ev.card_out("M02", "C1"))
    floor.apply(ev.game("M02"))
    assert floor.uncarded_games == 4
    assert floor.points("raps", "C1", ev.now) == 2.0


def test_idle_player_leaves_pool_after_default_120_seconds() -> None:
    """Default idle limit 120 s: at last game + 120 s the player leaves, not before."""
    floor, ev = raps_floor(), Events()
    seated_slot_player(floor, ev, "C1", "M01")
    last = ev.now
    floor.advance(last + timedelta(seconds=119.999))
    assert slots(floor) == ["C1"]
    floor.advance(last + timedelta(seconds=120))
    assert slots(floor) == []
    assert floor.left_out_counts("raps", "slots") == {"idle": 1}
    assert floor.check("raps", "C1") == "idle"


def test_game_in_between_keeps_the_player_in_pool() -> None:
    """The idle clock restarts at every game: a steady player never drops out."""
    floor, ev = raps_floor(), Events()
    seated_slot_player(floor, ev, "C1", "M01")
    first = ev.now
    floor.apply(ev.game("M01", at=first + timedelta(seconds=100)))
    floor.advance(first + timedelta(seconds=150))
    assert slots(floor) == ["C1"]
    floor.advance(first + timedelta(seconds=219))
    assert slots(floor) == ["C1"]
    floor.advance(first + timedelta(seconds=220))
    assert slots(floor) == []


def test_idle_player_comes_back_with_the_next_game() -> None:
    """Going idle is not leaving: the next game puts a qualified player back."""
    floor, ev = raps_floor(), Events()
    seated_slot_player(floor, ev, "C1", "M01")
    floor.advance(ev.tick(300))
    assert slots(floor) == []
    floor.apply(ev.game("M01", wager=0))
    assert slots(floor) == ["C1"]


@pytest.mark.parametrize("idle", [30.0, 600.0])
def test_idle_limit_is_configurable(idle: float) -> None:
    """Sites tune the idle limit; the pool follows the configured value."""
    floor = Floor(small_layout(), [Promotion("raps")], EarnRules(), idle_seconds=idle)
    ev = Events()
    seated_slot_player(floor, ev, "C1", "M01")
    last = ev.now
    floor.advance(last + timedelta(seconds=idle - 0.5))
    assert slots(floor) == ["C1"]
    floor.advance(last + timedelta(seconds=idle))
    assert slots(floor) == []


@pytest.mark.parametrize("idle", [0.0, -1.0])
def test_idle_limit_must_be_positive(idle: float) -> None:
    with pytest.raises(ValueError, match="idle_seconds"):
        Floor(small_layout(), [Promotion("raps")], idle_seconds=idle)


def test_check_reports_idle_before_advance_runs() -> None:
    """A fresh check (used on the winner at pick time) sees idleness even without advance."""
    floor, ev = raps_floor(), Events()
    seated_slot_player(floor, ev, "C1", "M01")
    floor.apply(ev.game("M02", at=ev.now + timedelta(seconds=121)))  # moves floor.now
    assert floor.check("raps", "C1") == "idle"


def test_out_of_service_machine_makes_player_inactive() -> None:
    """A machine taken out of service cannot be played on: its player is not active."""
    floor, ev = raps_floor(), Events()
    seated_slot_player(floor, ev, "C1", "M01")
    floor.apply(ev.machine_status("M01", MachineStatus.OUT_OF_SERVICE))
    assert slots(floor) == []
    assert floor.check("raps", "C1") == "idle"
    # games reported while out of service do not reactivate the player
    floor.apply(ev.game("M01"))
    assert slots(floor) == []
    # back in service, the next game does
    floor.apply(ev.machine_status("M01", MachineStatus.ONLINE))
    assert slots(floor) == []
    floor.apply(ev.game("M01"))
    assert slots(floor) == ["C1"]


@pytest.mark.parametrize("status", [MachineStatus.OFFLINE, MachineStatus.DOOR_OPEN])
def test_other_machine_statuses_keep_player_active(status: MachineStatus) -> None:
    """A lost link or an open door is not the player's doing; the idle limit still rules."""
    floor, ev = raps_floor(), Events()
    seated_slot_player(floor, ev, "C1", "M01")
    floor.apply(ev.machine_status("M01", status))
    assert slots(floor) == ["C1"]


# ------------------------------------------------------------------- tables


def test_table_player_active_while_rating_open() -> None:
    """Tables have no idle limit: an open rating is activity, however long."""
    floor, ev = raps_floor(), Events()
    seated_table_player(floor, ev, "C1", "T1", 1)
    floor.advance(ev.tick(3600))
    assert tables(floor) == ["C1"]
    assert floor.check("raps", "C1") == ELIGIBLE


def test_table_player_leaves_pool_on_rating_close() -> None:
    """Closing the rating frees the seat and takes the player out of the pool."""
    floor, ev = raps_floor(), Events()
    seated_table_player(floor, ev, "C1", "T1", 1)
    floor.apply(ev.rating_close("T1", 1, "C1", bet=10_000, minutes=60))
    assert tables(floor) == []
    assert floor.location("C1") is None
    assert floor.check("raps", "C1") == "not_on_floor"
    assert not floor.anomalies


def test_seat_rating_replaced_by_another_card() -> None:
    """One rating per seat: a new card's open removes the previous card from the floor."""
    floor, ev = raps_floor(), Events()
    seated_table_player(floor, ev, "C1", "T1", 1)
    seated_table_player(floor, ev, "C2", "T1", 1)
    assert floor.anomalies["seat_rating_replaced"] == 1
    assert floor.location("C1") is None
    assert tables(floor) == ["C2"]


def test_rating_opened_twice_for_same_card_is_harmless() -> None:
    """A repeated open must not reset the rating (and so double-credit later updates)."""
    floor, ev = raps_floor(), Events()
    seated_table_player(floor, ev, "C1", "T1", 1, points=30)
    floor.apply(ev.rating_open("T1", 1, "C1"))
    floor.apply(ev.rating_update("T1", 1, "C1", bet=10_000, minutes=30))
    assert floor.points("raps", "C1", ev.now) == 30.0
    assert not floor.anomalies


def test_rating_update_without_open_seats_the_player() -> None:
    """A lost open message must not lose the play: the update opens the rating itself."""
    floor, ev = raps_floor(), Events()
    floor.apply(ev.player("C1"))
    assert floor.apply(ev.rating_update("T2", 4, "C1", bet=10_000, minutes=55)) is None
    assert floor.anomalies["rating_without_open"] == 1
    assert floor.location("C1") == Location("tables", "Pit", table="T2", seat=4)
    assert floor.points("raps", "C1", ev.now) == 55.0
    assert tables(floor) == ["C1"]


def test_rating_close_without_open_credits_points_and_seats_nobody() -> None:
    """A close we never saw opened still carries real play; nobody is left seated."""
    floor, ev = raps_floor(), Events()
    floor.apply(ev.player("C1"))
    floor.apply(ev.rating_close("T1", 1, "C1", bet=10_000, minutes=20))
    assert floor.anomalies["rating_close_without_open"] == 1
    assert floor.location("C1") is None
    assert floor.points("raps", "C1", ev.now) == 20.0


# ---------------------------------------------------------------- unknown places


def test_unknown_machine_rejected_and_counted() -> None:
    """An event naming a machine not in the layout is refused: a pick must be findable."""
    floor, ev = raps_floor(), Events()
    floor.apply(ev.player("C1"))
    assert floor.apply(ev.card_in("M99", "C1")) == "unknown_machine"
    assert floor.apply(ev.card_out("M99", "C1")) == "unknown_machine"
    assert floor.apply(ev.game("M99")) == "unknown_machine"
    assert floor.apply(ev.machine_status("M99", MachineStatus.ONLINE)) == "unknown_machine"
    assert floor.rejections["unknown_machine"] == 4
    assert floor.location("C1") is None
    assert floor.uncarded_games == 0


def test_unknown_table_rejected_and_counted() -> None:
    floor, ev = raps_floor(), Events()
    floor.apply(ev.player("C1"))
    assert floor.apply(ev.rating_open("T9", 1, "C1")) == "unknown_table"
    assert floor.apply(ev.rating_update("T9", 1, "C1", 10_000, 60)) == "unknown_table"
    assert floor.apply(ev.rating_close("T9", 1, "C1", 10_000, 60)) == "unknown_table"
    assert floor.rejections["unknown_table"] == 3
    assert floor.location("C1") is None
    assert floor.points("raps", "C1", ev.now) == 0.0


@pytest.mark.parametrize("seat", [0, 8, -1])
def test_unknown_seat_rejected_and_counted(seat: int) -> None:
    """Seats are 1..seats of the table (7 in the small layout)."""
    floor, ev = raps_floor(), Events()
    floor.apply(ev.player("C1"))
    assert floor.apply(ev.rating_open("T1", seat, "C1")) == "unknown_seat"
    assert floor.apply(ev.rating_update("T1", seat, "C1", 10_000, 60)) == "unknown_seat"
    assert floor.apply(ev.rating_close("T1", seat, "C1", 10_000, 60)) == "unknown_seat"
    assert floor.rejections == {"unknown_seat": 3}
    assert floor.points("raps", "C1", ev.now) == 0.0


def test_apply_many_counts_rejections() -> None:
    """The batch path rejects exactly what the single path rejects."""
    floor, ev = raps_floor(), Events()
    batch: list[AnyFloorEvent] = [
        ev.player("C1"),
        ev.card_in("M01", "C1"),
        ev.game("M01"),
        ev.game("M77"),
        ev.rating_open("T1", 9, "C2"),
    ]
    assert floor.apply_many(batch) == 2
    assert floor.rejections == {"unknown_machine": 1, "unknown_seat": 1}
    assert floor.points("raps", "C1", ev.now) == 1.0


def test_unknown_event_type_rejected() -> None:
    """Only the known event vocabulary reaches the core."""
    floor = raps_floor()
    assert floor.apply(object()) == "unknown_event_type"  # type: ignore[arg-type]
    assert floor.rejections["unknown_event_type"] == 1


# ---------------------------------------------------------------------- location


def test_location_of_slot_player() -> None:
    """Security walks to area / bank / machine number."""
    floor, ev = raps_floor(), Events()
    seated_slot_player(floor, ev, "C1", "M27", points=1)
    loc = floor.location("C1")
    assert loc == Location("slots", "Salon Prive", machine="M27", bank="B3", number="27")
    assert loc is not None
    assert loc.describe() == "Salon Prive / bank B3 / machine 27"
    assert loc.to_dict()["table"] is None


def test_location_of_table_player() -> None:
    floor, ev = raps_floor(), Events()
    seated_table_player(floor, ev, "C1", "T3", 6)
    loc = floor.location("C1")
    assert loc == Location("tables", "Pit", table="T3", seat=6)
    assert loc is not None
    assert loc.describe() == "Pit / table T3 / seat 6"
    assert loc.to_dict()["seat"] == 6


def test_location_of_unknown_or_absent_card_is_none() -> None:
    floor, ev = raps_floor(), Events()
    assert floor.location("nobody") is None
    floor.apply(ev.player("C1"))
    assert floor.location("C1") is None


def test_layout_refuses_duplicates_and_seatless_tables() -> None:
    """The layout is the source of truth for locations: it must be unambiguous."""
    m = Machine("M1", "A", "B1", "1")
    with pytest.raises(ValueError, match="twice"):
        FloorLayout([m, m])
    t = Table("T1", "Pit")
    with pytest.raises(ValueError, match="twice"):
        FloorLayout([], [t, t])
    with pytest.raises(ValueError, match="seat"):
        FloorLayout([], [Table("T2", "Pit", seats=0)])
    assert small_layout().areas() == {"Main Floor", "Salon Prive", "Pit"}


def test_tracked_players_and_counters() -> None:
    """Operations read anomalies and rejections from one counters() snapshot."""
    floor, ev = raps_floor(), Events()
    floor.apply(ev.player("C1"))
    floor.apply(ev.card_out("M01", "C1"))
    floor.apply(ev.game("M99"))
    assert floor.tracked_players == 1
    assert floor.counters() == {
        "anomalies": {"card_out_without_card_in": 1},
        "rejections": {"unknown_machine": 1},
    }


def test_idle_timer_of_a_slot_session_does_not_touch_a_later_table_seat() -> None:
    """A player who walks from a slot to a table must not be timed out by the slot's timer."""
    floor, ev = raps_floor(), Events()
    seated_slot_player(floor, ev, "C1", "M01")
    floor.apply(ev.rating_open("T1", 1, "C1", at=ev.tick(30)))
    floor.advance(ev.tick(600))
    assert tables(floor) == ["C1"]
    assert floor.check("raps", "C1") == ELIGIBLE


def test_idle_timer_of_an_earlier_slot_session_does_not_cut_a_new_one_short() -> None:
    """Card out and back in: only the new session's last game decides idleness."""
    floor, ev = raps_floor(), Events()
    seated_slot_player(floor, ev, "C1", "M01")
    start = ev.now
    floor.apply(ev.card_out("M01", "C1", at=start + timedelta(seconds=10)))
    floor.apply(ev.card_in("M02", "C1", at=start + timedelta(seconds=20)))
    floor.apply(ev.game("M02", at=start + timedelta(seconds=100)))
    floor.advance(start + timedelta(seconds=150))
    assert slots(floor) == ["C1"]
    floor.advance(start + timedelta(seconds=220))
    assert slots(floor) == []

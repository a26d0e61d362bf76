"""Issue 15, floor rule 3: a player's location follows their latest real presence.

Security walks to the place the floor names.  A pit terminal that keeps a rating open
after the player left, or a message delivered late, must not send them back to a seat
the player has left: its figures still earn points (once), the location stays.
"""

from __future__ import annotations

from selector.floor import ELIGIBLE, Floor
from selector.layout import Location
from tests.builders import Events, local, raps_floor


def where(floor: Floor, card: str) -> tuple[str | None, ...] | None:
    loc = floor.location(card)
    return None if loc is None else (loc.machine, loc.table, str(loc.seat) if loc.table else None)


def at_table_then_slot(floor: Floor, ev: Events) -> None:
    """C1 rated at T1 seat 3 from 11:00 (50 minutes by 11:50), cards in at M01 at 12:00."""
    floor.apply(ev.player("C1"))
    floor.apply(ev.rating_open("T1", 3, "C1", at=local(11, 0)))
    floor.apply(ev.rating_update("T1", 3, "C1", bet=10_000, minutes=50, at=local(11, 50)))
    floor.apply(ev.card_in("M01", "C1", at=local(12, 0)))
    floor.apply(ev.game("M01", wager=1_000, at=local(12, 0)))


def test_a_stale_table_update_does_not_take_a_slot_player_back_to_the_table() -> None:
    """The pit never closed the rating: its 12:05 update credits the extra 15 minutes but
    the player is at M01, and security goes to M01."""
    floor, ev = raps_floor(), Events()
    at_table_then_slot(floor, ev)
    floor.apply(ev.rating_update("T1", 3, "C1", bet=10_000, minutes=65, at=local(12, 5)))
    floor.apply(ev.game("M01", wager=0, at=local(12, 5)))
    assert where(floor, "C1") == ("M01", None, None)
    assert floor.location("C1") == Location(
        "slots", "Main Floor", machine="M01", bank="B1", number="1"
    )
    assert floor.points("raps", "C1", local(12, 5)) == 66.0  # 65 table + 1 slot, once
    assert floor.anomalies["rating_update_after_leave"] == 1
    assert floor.check("raps", "C1") == ELIGIBLE
    assert list(floor.pool("raps", "tables")) == []
    # the same figure again credits nothing; the close credits only what is new
    floor.apply(ev.rating_update("T1", 3, "C1", bet=10_000, minutes=65, at=local(12, 6)))
    floor.apply(ev.rating_close("T1", 3, "C1", bet=10_000, minutes=70, at=local(12, 10)))
    assert floor.points("raps", "C1", local(12, 10)) == 71.0
    assert where(floor, "C1") == ("M01", None, None)


def test_a_late_update_stamped_before_the_card_in_does_not_relocate() -> None:
    floor, ev = raps_floor(), Events()
    at_table_then_slot(floor, ev)
    floor.apply(ev.rating_update("T1", 3, "C1", bet=10_000, minutes=58, at=local(11, 58)))
    assert where(floor, "C1") == ("M01", None, None)
    assert floor.points("raps", "C1", local(12, 0)) == 59.0


def test_an_unknown_rating_older_than_the_current_place_counts_but_does_not_move() -> None:
    """A rating we never saw opened, begun (by its minutes) before the card-in at M01."""
    floor, ev = raps_floor(), Events()
    floor.apply(ev.player("C1"))
    floor.apply(ev.card_in("M01", "C1", at=local(12, 0)))
    floor.apply(ev.rating_update("T2", 1, "C1", bet=10_000, minutes=30, at=local(12, 5)))
    assert where(floor, "C1") == ("M01", None, None)
    assert floor.anomalies["stale_rating_update"] == 1
    assert floor.anomalies["card_in_elsewhere"] == 0
    assert floor.points("raps", "C1", local(12, 5)) == 30.0
    floor.apply(ev.rating_update("T2", 1, "C1", bet=10_000, minutes=35, at=local(12, 10)))
    assert floor.points("raps", "C1", local(12, 10)) == 35.0  # only the new 5 minutes
    assert where(floor, "C1") == ("M01", None, None)


def test_a_rating_begun_after_the_card_in_is_a_real_move() -> None:
    """A lost open still seats the player when its rating began after their slot session."""
    floor, ev = raps_floor(), Events()
    floor.apply(ev.player("C1"))
    floor.apply(ev.card_in("M01", "C1", at=local(12, 0)))
    floor.apply(ev.rating_update("T2", 1, "C1", bet=10_000, minutes=10, at=local(12, 30)))
    assert where(floor, "C1") == (None, "T2", "1")
    assert floor.anomalies["rating_without_open"] == 1
    assert floor.anomalies["card_in_elsewhere"] == 1


def test_a_late_card_in_does_not_take_a_table_player_back_to_a_slot() -> None:
    floor, ev = raps_floor(), Events()
    floor.apply(ev.player("C1"))
    floor.apply(ev.rating_open("T1", 2, "C1", at=local(12, 10)))
    floor.apply(ev.card_in("M04", "C1", at=local(12, 0)))  # buffered by the SMIB
    assert where(floor, "C1") == (None, "T1", "2")
    assert floor.anomalies["stale_card_in"] == 1
    # the machine holds nobody: a later card-in there by someone else is no replacement
    floor.apply(ev.player("C2"))
    floor.apply(ev.card_in("M04", "C2", at=local(12, 11)))
    assert floor.anomalies["card_replaced_at_machine"] == 0


def test_a_late_rating_open_does_not_move_a_slot_player_and_its_figures_count() -> None:
    floor, ev = raps_floor(), Events()
    floor.apply(ev.player("C1"))
    floor.apply(ev.card_in("M01", "C1", at=local(12, 10)))
    floor.apply(ev.rating_open("T1", 4, "C1", at=local(12, 0)))
    assert where(floor, "C1") == ("M01", None, None)
    assert floor.anomalies["stale_rating_open"] == 1
    floor.apply(ev.rating_close("T1", 4, "C1", bet=10_000, minutes=9, at=local(12, 9)))
    assert where(floor, "C1") == ("M01", None, None)
    assert floor.points("raps", "C1", local(12, 9)) == 9.0


def test_a_late_update_never_unseats_the_seat_s_new_player() -> None:
    """C1 left seat 3 at 12:00 (closed), C2 sat down at 12:01; C1's late 11:59 figure
    counts for C1 beyond the close, and C2 stays seated."""
    floor, ev = raps_floor(), Events()
    floor.apply(ev.player("C1"))
    floor.apply(ev.player("C2"))
    floor.apply(ev.rating_open("T1", 3, "C1", at=local(11, 0)))
    floor.apply(ev.rating_close("T1", 3, "C1", bet=10_000, minutes=60, at=local(12, 0)))
    floor.apply(ev.rating_open("T1", 3, "C2", at=local(12, 1)))
    floor.apply(ev.rating_update("T1", 3, "C1", bet=10_000, minutes=59, at=local(11, 59)))
    assert where(floor, "C2") == (None, "T1", "3")
    assert floor.location("C1") is None
    assert floor.anomalies["seat_rating_replaced"] == 0
    assert floor.anomalies["rating_update_after_close"] == 1
    assert floor.points("raps", "C1", local(12, 1)) == 60.0


def test_a_new_rating_at_the_same_seat_after_a_close_is_not_mistaken_for_the_old() -> None:
    """Closed at 12:00; at 14:00 the same card sits there again, its open lost: its
    figures begin after the close, so it is a new rating and seats the player."""
    floor, ev = raps_floor(), Events()
    floor.apply(ev.player("C1"))
    floor.apply(ev.rating_open("T1", 3, "C1", at=local(11, 0)))
    floor.apply(ev.rating_close("T1", 3, "C1", bet=10_000, minutes=60, at=local(12, 0)))
    floor.apply(ev.rating_update("T1", 3, "C1", bet=10_000, minutes=10, at=local(14, 10)))
    assert where(floor, "C1") == (None, "T1", "3")
    assert floor.points("raps", "C1", local(14, 10)) == 70.0

"""Smoke: the builders make a floor whose seated players are eligible."""

from tests.builders import Events, raps_floor, seated_slot_player, seated_table_player


def test_seated_players_are_eligible() -> None:
    floor = raps_floor()
    ev = Events()
    seated_slot_player(floor, ev, "C1", "M01")
    seated_table_player(floor, ev, "C2", "T1", 1)
    assert list(floor.pool("raps", "slots")) == ["C1"]
    assert list(floor.pool("raps", "tables")) == ["C2"]

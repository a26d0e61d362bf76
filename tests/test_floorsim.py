"""The simulated floor: a casino whose directory stays the same when only play varies.

The daemon starts an unseeded simulator with fresh play at every start; the players
(tier, name, exclusions) must not change with it, or a restart would self-exclude a
winner the real casino never excluded (the crash soak saw its pending winners voided).
"""

from __future__ import annotations

from datetime import UTC, datetime

from raps.floorsim import FloorSimulator, demo_layout

START = datetime(2026, 4, 25, 16, 0, tzinfo=UTC)


def _directory(sim: FloorSimulator) -> list[tuple[object, ...]]:
    return [(p.card, p.tier, p.display_name, p.exclusions) for p in sim.directory()]


def test_directory_seed_fixes_the_players_whatever_the_play() -> None:
    layout = demo_layout(50, 4)
    a = FloorSimulator(layout, 2_000, START, seed=11, directory_seed=0)
    b = FloorSimulator(layout, 2_000, START, seed=12, directory_seed=0)
    assert _directory(a) == _directory(b)
    assert any(p.exclusions for p in a.players)  # the comparison covers excluded players
    # the play itself still differs
    until = START.replace(minute=5)
    assert a.events_until(until) != b.events_until(until)


def test_without_a_directory_seed_the_players_follow_the_seed() -> None:
    layout = demo_layout(50, 4)
    same = FloorSimulator(layout, 500, START, seed=3), FloorSimulator(layout, 500, START, seed=3)
    other = FloorSimulator(layout, 500, START, seed=4)
    assert _directory(same[0]) == _directory(same[1])
    assert _directory(same[0]) != _directory(other)

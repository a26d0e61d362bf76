"""The podium randomiser (000 rules 55-56, 103, 123-124), one test per rule."""

from __future__ import annotations

from datetime import date

import pytest

from selector.session import CommandConflict
from selector.stagegames.derive import shuffle
from selector.stagegames.game import GameState, PrizeKind, StageError
from selector.stagegames.podium import BONUS, PodiumGame, PodiumPrize
from selector.stagegames.verify import verify_game
from tests.test_stagegames_kit import (
    PODIUMS_1500,
    PODIUMS_2100,
    SAT,
    THURSDAY_PODIUMS,
    cards,
    cmd,
    seed,
)

THU = date(2025, 10, 2)


def _open(podiums: list[PodiumPrize], n: int, label: str, **kw: bool) -> PodiumGame:
    g = PodiumGame(f"podium:{label}", label, THU, podiums, cards(n), **kw)
    g.open(cmd(), seed(label))
    return g


def test_rule_55_five_winners_in_draw_order_pick_a_randomiser_for_their_podium() -> None:
    g = _open(THURSDAY_PODIUMS, 5, "queen-2025-10-02")
    table = shuffle(seed("queen-2025-10-02"), g.game_id, "podium", [1, 2, 3, 4, 5])
    with pytest.raises(StageError, match="turn"):
        g.choose(cmd(), "6000002", 1)  # the second drawn may not go first
    podiums = []
    for i, (card, randomiser) in enumerate(zip(cards(5), [4, 2, 5, 1, 3], strict=True), 1):
        rec = g.choose(cmd(), card, randomiser)
        assert rec.data["position"] == i and rec.data["podium"] == table[randomiser - 1]
        podiums.append(rec.data["podium"])
    assert sorted(podiums) == [1, 2, 3, 4, 5]  # each podium once
    assert g.state is GameState.FINISHED


def test_rule_55_a_randomiser_is_chosen_once() -> None:
    g = _open(THURSDAY_PODIUMS, 5, "queen-twice")
    g.choose(cmd(), "6000001", 3)
    with pytest.raises(StageError, match="randomiser 3"):
        g.choose(cmd(), "6000002", 3)
    assert g.free_randomisers() == [1, 2, 4, 5]


def test_rule_56_forty_thousand_rand_up_for_grabs_weekly() -> None:
    assert sum(p.amount for p in THURSDAY_PODIUMS) == 4_000_000
    g = _open(THURSDAY_PODIUMS, 5, "queen-2025-10-09")
    for card, r in zip(cards(5), [1, 2, 3, 4, 5], strict=True):
        g.choose(cmd(), card, r)
    awards = g.awards()
    assert sum(a.amount for a in awards) == 4_000_000
    assert {a.kind for a in awards} == {PrizeKind.CASH}
    g.close(cmd())
    assert verify_game(g.records) == []


def test_rule_103_the_1500_winners_pick_podiums_four_cash_two_bonus() -> None:
    g = PodiumGame("podium:sat-1500", "sat-cash-2025-10-04-1500", SAT, PODIUMS_1500, cards(6))
    g.open(cmd(), seed("sat-1500"))
    for card, r in zip(cards(6), [6, 5, 4, 3, 2, 1], strict=True):
        g.choose(cmd(), card, r)
    bonus = g.bonus_cards()
    assert len(bonus) == 2 and bonus == [c for c in cards(6) if c in bonus]  # in draw order
    assert len(g.awards()) == 4 and all(a.amount > 0 for a in g.awards())


def test_rule_123_124_the_2100_podiums_hold_five_to_ten_thousand() -> None:
    assert all(500_000 <= p.amount <= 1_000_000 for p in PODIUMS_2100)
    g = _open(PODIUMS_2100, 5, "sat-2100", final=False)
    for card, r in zip(cards(5), [2, 4, 1, 5, 3], strict=True):
        g.choose(cmd(), card, r)
    assert g.awards() == []  # the safe game pays the 21:00 podiums
    assert sorted(g.prize_of(p).amount for p in range(1, 6)) == sorted(
        p.amount for p in PODIUMS_2100
    )


def test_a_retried_choice_changes_nothing_and_a_reused_id_conflicts() -> None:
    g = _open(THURSDAY_PODIUMS, 5, "queen-retry")
    c = cmd()
    first = g.choose(c, "6000001", 2)
    assert g.choose(c, "6000001", 2) is first and len(g.records) == 2
    with pytest.raises(CommandConflict):
        g.choose(c, "6000002", 3)


def test_the_config_is_checked() -> None:
    with pytest.raises(StageError):
        PodiumPrize(100, BONUS)
    with pytest.raises(StageError):
        PodiumGame("podium:x", "x", THU, THURSDAY_PODIUMS, cards(6))
    with pytest.raises(StageError):
        PodiumGame("podium:x", "x", THU, THURSDAY_PODIUMS, ["1", "1"])
    g = _open(THURSDAY_PODIUMS, 2, "queen-close")
    with pytest.raises(StageError, match="not finished"):
        g.close(cmd())
    assert g.revealed_seed is None

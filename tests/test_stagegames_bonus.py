"""The 15:00 bonus feature (000 rules 104-107), one test per rule."""

from __future__ import annotations

import pytest

from selector.stagegames.bonus import BLANK, BonusGame, BonusRules
from selector.stagegames.game import GameState, StageError
from selector.stagegames.verify import verify_game
from tests.test_stagegames_kit import SAT, cmd, seed

A, B = "6000003", "6000005"


def _game(label: str, rules: BonusRules | None = None) -> BonusGame:
    g = BonusGame(f"bonus:{label}", "sat-cash-2025-10-04-1500", SAT, [A, B], [3, 5], rules)
    g.open(cmd(), seed(label))
    return g


def _both_play(g: BonusGame) -> None:
    g.decide(cmd(), A, True)
    g.decide(cmd(), B, True)


def _play_out(g: BonusGame) -> None:
    """Both open the lowest closed box on their turn until someone has three."""
    while g.state is GameState.OPEN:
        who = g.turn()
        assert who is not None
        box = min(set(range(1, 13)) - set(g.play.opened))
        g.open_box(cmd(), who, box)


def test_rule_104_two_winners_unlock_the_bonus_each_with_a_symbol() -> None:
    with pytest.raises(StageError, match="two contestants"):
        BonusGame("bonus:x", "d", SAT, [A], [3])
    g = _game("r104")
    assert g.rules.symbols == ("flame", "star") and g.contestants == (A, B)


def test_rule_105_they_open_one_box_at_a_time_alternately_first_to_three_wins() -> None:
    g = _game("r105")
    with pytest.raises(StageError, match="accept"):
        g.open_box(cmd(), A, 1)
    _both_play(g)
    with pytest.raises(StageError, match="turn"):
        g.open_box(cmd(), B, 1)  # winner 1 opens first
    g.open_box(cmd(), A, 1)
    with pytest.raises(StageError, match="turn"):
        g.open_box(cmd(), A, 2)
    with pytest.raises(StageError, match="still closed"):
        g.open_box(cmd(), B, 1)
    _play_out(g)
    winner = g.play.winner
    assert winner is not None and g.play.counts[winner] == 3 and g.play.counts[1 - winner] < 3
    awards = {a.card: a.amount for a in g.awards()}
    assert awards[g.contestants[winner]] == 1_000_000  # R10,000 jackpot
    assert awards[g.contestants[1 - winner]] == 750_000  # R7,500 runner-up
    assert g.awards()[0].position == 3 and g.awards()[1].position == 5
    with pytest.raises(StageError):
        g.open_box(cmd(), g.contestants[len(g.play.opened) % 2], 12)
    g.close(cmd())
    assert verify_game(g.records) == []


def test_rule_105_a_symbol_counts_for_its_owner_whoever_opens_it() -> None:
    g = _game("r105-owner")
    _both_play(g)
    boxes = g._boxes
    star_box = boxes.index("star") + 1  # B's symbol
    rec = g.open_box(cmd(), A, star_box)
    assert rec.data["owner"] == B and rec.data["counts"] == [0, 1]


def test_rule_106_twelve_boxes_three_of_each_symbol() -> None:
    g = _game("r106")
    assert len(g._boxes) == 12
    assert g._boxes.count("flame") == 3 and g._boxes.count("star") == 3
    assert g._boxes.count(BLANK) == 6
    with pytest.raises(StageError):
        BonusRules(boxes=5, needed=3)


def test_rule_107_one_declines_consolation_and_the_other_the_jackpot() -> None:
    g = _game("r107-one")
    g.decide(cmd(), A, False)
    g.decide(cmd(), B, True)
    assert g.state is GameState.FINISHED
    assert {a.card: a.amount for a in g.awards()} == {A: 500_000, B: 1_000_000}
    g2 = _game("r107-other")
    g2.decide(cmd(), A, True)
    with pytest.raises(StageError, match="already decided"):
        g2.decide(cmd(), A, False)
    g2.decide(cmd(), B, False)
    assert {a.card: a.amount for a in g2.awards()} == {A: 1_000_000, B: 500_000}


def test_rule_107_both_decline_five_thousand_each() -> None:
    g = _game("r107-both")
    g.decide(cmd(), B, False)
    g.decide(cmd(), A, False)
    assert {a.card: a.amount for a in g.awards()} == {A: 500_000, B: 500_000}
    g.close(cmd())
    assert verify_game(g.records) == []

"""The 19:00 paddles (000 rules 112-117), one test per rule."""

from __future__ import annotations

import pytest

from selector.stagegames.derive import shuffle
from selector.stagegames.game import GameState, StageError
from selector.stagegames.paddles import PaddleGame
from selector.stagegames.verify import verify_game
from tests.test_stagegames_kit import PADDLES, REVEALS, SAT, cards, cmd, seed

W = cards(5)


def _game(label: str) -> PaddleGame:
    g = PaddleGame(f"paddles:{label}", "sat-cash-2025-10-04-1900", SAT, W, PADDLES, REVEALS)
    g.open(cmd(), seed(label))
    return g


def test_rule_112_113_five_winners_in_draw_order_each_pick_a_paddle_of_2_3_or_4() -> None:
    g = _game("r113")
    with pytest.raises(StageError, match="turn"):
        g.pick_paddle(cmd(), W[1], 1)
    rec = g.pick_paddle(cmd(), W[0], 3)
    hidden = shuffle(seed("r113"), g.game_id, "paddles", PADDLES)
    assert rec.data["chances"] == hidden[2] and rec.data["chances"] in (2, 3, 4)
    with pytest.raises(StageError, match="already holds"):
        g.pick_paddle(cmd(), W[0], 4)
    with pytest.raises(StageError):
        PaddleGame("paddles:x", "d", SAT, W, [2, 3, 5, 4, 4], REVEALS)


def test_rule_114_the_paddle_number_is_the_chances() -> None:
    g = _game("r114")
    chances = g.pick_paddle(cmd(), W[0], 1).data["chances"]
    free = iter(range(1, 26))
    for _ in range(chances):
        g.reveal(cmd(), W[0], next(free))
    assert g.turns[0].done and len(g.turns[0].opened) == chances
    assert g.current() == 1  # the next winner is on stage


def test_rule_115_the_winner_may_stop_and_keeps_the_last_reveal() -> None:
    g = _game("r115-stop")
    with pytest.raises(StageError, match="paddle first"):
        g.reveal(cmd(), W[0], 1)
    g.pick_paddle(cmd(), W[0], 2)
    with pytest.raises(StageError, match="nothing to keep"):
        g.stop(cmd(), W[0])
    opened = g.reveal(cmd(), W[0], 7).data["amount"]
    g.stop(cmd(), W[0])
    assert g.turns[0].done and g.turns[0].prize == opened


def test_rule_115_all_chances_used_the_last_reveal_is_the_prize() -> None:
    g = _game("r115-last")
    chances = g.pick_paddle(cmd(), W[0], 5).data["chances"]
    recs = [g.reveal(cmd(), W[0], r) for r in range(1, chances + 1)]
    assert recs[-1].data["final"] and not any(r.data["final"] for r in recs[:-1])
    assert g.turns[0].prize == recs[-1].data["amount"]


def test_rule_116_twenty_five_reveals_each_opened_once() -> None:
    g = _game("r116")
    assert len(g.reveals) == 25
    assert sorted(shuffle(seed("r116"), g.game_id, "reveals", REVEALS)) == sorted(REVEALS)
    g.pick_paddle(cmd(), W[0], 1)
    g.reveal(cmd(), W[0], 25)
    g.stop(cmd(), W[0])
    g.pick_paddle(cmd(), W[1], 2)
    with pytest.raises(StageError, match="still closed"):
        g.reveal(cmd(), W[1], 25)  # the board is shared: it stays open
    with pytest.raises(StageError, match="still closed"):
        g.reveal(cmd(), W[1], 26)


def test_rule_117_prizes_do_not_add_up() -> None:
    g = _game("r117")
    nxt = iter(range(1, 26))
    for i, card in enumerate(W):
        chances = g.pick_paddle(cmd(), card, i + 1).data["chances"]
        last = 0
        for _ in range(chances):
            last = g.reveal(cmd(), card, next(nxt)).data["amount"]
        assert g.turns[i].prize == last  # never the sum
    assert g.state is GameState.FINISHED
    assert [a.amount for a in g.awards()] == [t.prize for t in g.turns]
    g.close(cmd())
    assert verify_game(g.records) == []

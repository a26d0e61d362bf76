"""The verifier recomputes every reveal from the revealed seed and catches a change
made after the contestant chose (and a game seed not derived from its draw's seed); a
full Saturday (15:00, 19:00, 21:00) and the 20 Dec vault share are played through the
core, posted to the ledger and verified; games restore from their records."""

from __future__ import annotations

import copy
from datetime import date
from typing import Any

import pytest

from selector.stagegames.bonus import BonusGame
from selector.stagegames.cars import CarFinal
from selector.stagegames.derive import below, game_seed
from selector.stagegames.game import Award, DrawGame, GameState, PrizeKind, StageError, StageGame
from selector.stagegames.ledger import StageLedger
from selector.stagegames.paddles import PaddleGame
from selector.stagegames.podium import PodiumGame
from selector.stagegames.restore import restore_game
from selector.stagegames.safe import SafeGame, SafeOdds
from selector.stagegames.verify import verify_game, verify_open_game, verify_show
from tests.test_stagegames_kit import (
    PADDLES,
    PODIUMS_1500,
    PODIUMS_2100,
    REVEALS,
    SAT,
    cards,
    cmd,
    seed,
)

DAY = [f"60{i:05d}" for i in range(1, 17)]  # sixteen different winners of the day


def _dicts(g: StageGame) -> list[dict[str, Any]]:
    return [r.to_dict() for r in g.records]


def _podium(label: str = "tamper") -> PodiumGame:
    g = PodiumGame(f"podium:{label}", "d", SAT, PODIUMS_2100, cards(5))
    g.open(cmd(), seed(label))
    for card, r in zip(cards(5), [3, 1, 5, 2, 4], strict=True):
        g.choose(cmd(), card, r)
    g.close(cmd())
    return g


def _paddles(label: str = "tamper-paddles") -> PaddleGame:
    g = PaddleGame(f"paddles:{label}", "d", SAT, cards(5), PADDLES, REVEALS)
    g.open(cmd(), seed(label))
    nxt = iter(range(1, 26))
    for i, card in enumerate(cards(5)):
        g.pick_paddle(cmd(), card, i + 1)
        g.reveal(cmd(), card, next(nxt))
        if g.current() == i:
            g.stop(cmd(), card)
    g.close(cmd())
    return g


def test_an_honest_game_verifies_from_json() -> None:
    assert verify_game(_dicts(_podium())) == []
    assert verify_game(_dicts(_paddles())) == []


def test_a_changed_podium_reveal_is_named() -> None:
    recs = _dicts(_podium())
    recs[2]["data"]["podium"] = recs[2]["data"]["podium"] % 5 + 1
    bad = verify_game(recs)
    assert bad and bad[0].position == 2 and "podium" in bad[0].message


def test_a_changed_paddle_or_prize_reveal_is_named() -> None:
    recs = _dicts(_paddles())
    paddle = next(i for i, r in enumerate(recs) if r["type"] == "paddles.paddle")
    recs[paddle]["data"]["chances"] = 4 if recs[paddle]["data"]["chances"] != 4 else 2
    assert any(m.position == paddle and "chances" in m.message for m in verify_game(recs))
    recs = _dicts(_paddles())
    reveal = next(i for i, r in enumerate(recs) if r["type"] == "paddles.reveal")
    recs[reveal]["data"]["amount"] += 100_000
    assert any(m.position == reveal and "amount" in m.message for m in verify_game(recs))


def test_a_changed_box_symbol_and_a_changed_safe_guess_are_named() -> None:
    g = BonusGame("bonus:tamper", "d", SAT, ["6000001", "6000002"], [1, 2])
    g.open(cmd(), seed("bonus-tamper"))
    g.decide(cmd(), "6000001", True)
    g.decide(cmd(), "6000002", True)
    while g.state is GameState.OPEN:
        who = g.turn()
        assert who is not None
        g.open_box(cmd(), who, min(set(range(1, 13)) - set(g.play.opened)))
    g.close(cmd())
    recs = _dicts(g)
    box = 3
    recs[box]["data"]["symbol"] = "flame" if recs[box]["data"]["symbol"] != "flame" else "blank"
    assert any(m.position == box and "symbol" in m.message for m in verify_game(recs))

    s = SafeGame("safe:tamper", "d", SAT, ["6000001"], [1_000_000], 10_000_000)
    s.open(cmd(), seed("safe-tamper"))
    s.attempt(cmd(), "6000001")
    for code in ("000", "001", "002"):
        if s.state is GameState.OPEN:
            s.guess(cmd(), "6000001", code)
    s.close(cmd())
    recs = _dicts(s)
    recs[2]["data"]["correct"] = not recs[2]["data"]["correct"]
    assert any(m.position == 2 and "correct" in m.message for m in verify_game(recs))


def test_a_seed_that_is_not_the_committed_one_is_refused() -> None:
    recs = _dicts(_podium())
    recs[-1]["data"]["seed"] = seed("another").hex()
    (bad,) = verify_game(recs)
    assert "commitment" in bad.message


def test_a_changed_revealed_table_or_award_is_named() -> None:
    recs = _dicts(_podium())
    table = recs[-1]["data"]["contents"]["randomisers"]
    table[0], table[1] = table[1], table[0]
    assert any("hidden table" in m.message for m in verify_game(recs))
    recs = _dicts(_podium())
    recs[-1]["data"]["awards"][0]["amount"] += 1
    assert any("awards" in m.message for m in verify_game(recs))


def test_a_choice_out_of_turn_or_a_game_not_closed_is_named() -> None:
    recs = _dicts(_podium())
    recs[1], recs[2] = recs[2], recs[1]
    assert any("refuse" in m.message for m in verify_game(recs))
    assert "not closed" in verify_game(_dicts(_podium())[:-1])[0].message
    recs = _dicts(_podium())
    recs[0]["data"]["config"]["podiums"][0]["amount"] = 2_000_000
    assert verify_game(recs)  # the prize table changed after the commitment


def _post(led: StageLedger, g: StageGame, day: date) -> None:
    for a in g.awards():
        led.post(cmd(), a, day)


def test_a_full_saturday_and_the_vault_share_verify_end_to_end() -> None:
    day = date(2025, 12, 20)
    led = StageLedger()
    led.start(cmd())
    for prior in ("sat-cash-2025-10-04-2100", "sat-cash-2025-11-01-2100"):
        led.offer_safe(cmd(), prior, f"safe:{prior}", led.safe_value)
        led.safe_draw_closed(cmd(), prior, DrawGame.PODIUM_SAFE.value, cracked=False)
    games: dict[str, StageGame] = {}

    # 15:00: six winners pick podiums; two unlock the bonus
    p15 = PodiumGame("podium:1500", "sat-cash-2025-12-20-1500", day, PODIUMS_1500, DAY[:6])
    p15.open(cmd(), seed("day-1500"))
    for card, r in zip(DAY[:6], [1, 2, 3, 4, 5, 6], strict=True):
        p15.choose(cmd(), card, r)
    p15.close(cmd())
    bonus_cards = p15.bonus_cards()
    positions = [DAY.index(c) + 1 for c in bonus_cards]
    bonus = BonusGame("bonus:1500", p15.draw_id, day, bonus_cards, positions)
    bonus.open(cmd(), seed("day-bonus"))
    for c in bonus_cards:
        bonus.decide(cmd(), c, True)
    while bonus.state is GameState.OPEN:
        who = bonus.turn()
        assert who is not None
        bonus.open_box(cmd(), who, max(set(range(1, 13)) - set(bonus.play.opened)))
    bonus.close(cmd())

    # 19:00: five winners with paddles
    pad = PaddleGame("paddles:1900", "sat-cash-2025-12-20-1900", day, DAY[6:11], PADDLES, REVEALS)
    pad.open(cmd(), seed("day-1900"))
    nxt = iter(range(1, 26))
    for i, card in enumerate(DAY[6:11]):
        pad.pick_paddle(cmd(), card, 5 - i)
        while pad.current() == i:
            pad.reveal(cmd(), card, next(nxt))
    pad.close(cmd())

    # 21:00: podiums (paid by the safe), then the safe
    p21 = PodiumGame("podium:2100", "sat-cash-2025-12-20-2100", day, PODIUMS_2100, DAY[11:16],
                     final=False)  # fmt: skip
    p21.open(cmd(), seed("day-2100"))
    for card, r in zip(DAY[11:16], [5, 4, 3, 2, 1], strict=True):
        p21.choose(cmd(), card, r)
    p21.close(cmd())
    prizes = [p21.prize_of(p).amount for p in range(1, 6)]
    safe = SafeGame("safe:2100", p21.draw_id, day, DAY[11:16], prizes, led.safe_value)
    safe.open(cmd(), seed("day-safe"))
    led.offer_safe(cmd(), safe.draw_id, safe.game_id, safe.safe_value)
    for card in DAY[11:16]:
        safe.attempt(cmd(), card)
        for code in ("111", "222", "333"):
            at = safe.current()
            if at is not None and safe.winners[at - 1] == card:
                safe.guess(cmd(), card, code)
    safe.close(cmd())
    assert not safe.cracked  # none of those guesses is a code of these seeds
    for g in (p15, bonus, pad, p21, safe):
        games[g.game_id] = g
        _post(led, g, day)
    led.safe_draw_closed(cmd(), safe.draw_id, DrawGame.PODIUM_SAFE.value, cracked=False)
    assert led.safe_value == 10_000_000 + 3 * 2_000_000

    # 21:30: the vault is shared among five further winners of the day's bin (the draw
    # bars the day's earlier winners: raps.tickets.stage, tests/test_stage_games_api.py)
    vault = [f"61{i:05d}" for i in range(1, 6)]
    led.share_vault(cmd(), "sat-cash-2025-12-20-2130", day, vault)
    assert led.safe_value == 0
    kinds = led.totals_by_kind()
    assert kinds["vault_share"] == 16_000_000 and kinds["cash"] > 0
    assert [h[3] for h in led.safe_history()][-1] == 0

    report = verify_show(
        {gid: _dicts(g) for gid, g in games.items()}, [r.to_dict() for r in led.records]
    )
    assert all(v == [] for v in report.values()), report
    # an award missing from the ledger is named
    empty = StageLedger()
    empty.start(cmd())
    report = verify_show({pad.game_id: _dicts(pad)}, [r.to_dict() for r in empty.records])
    assert sum("not in the ledger" in m.message for m in report["ledger"]) == 5
    # and a ledger record dropped from the middle breaks its replay
    short = [r.to_dict() for r in led.records if r.data.get("card") != DAY[7]]
    assert verify_show({}, short)["ledger"]


def test_the_ledger_posts_an_award_once_and_reads_the_day_s_winners() -> None:
    led = StageLedger()
    led.start(cmd())
    card = "6000001"
    led.post(cmd(), Award("sat-1500", 1, card, 500_000, PrizeKind.CASH, "podium:a"), SAT)
    led.post(cmd(), Award("car-1500", 1, "6000002", 0, PrizeKind.CAR_SPOT, "car:x"), SAT)
    assert led.winners_on(SAT) == {card: "sat-1500", "6000002": "car-1500"}
    # posting the same award again (after a restart) is one entry
    before = len(led.entries)
    led.post(cmd(), Award("sat-1500", 1, card, 500_000, PrizeKind.CASH, "podium:a"), SAT)
    assert len(led.entries) == before


def test_a_game_seed_not_derived_from_its_draw_s_seed_is_named() -> None:
    draw_seed = seed("the draw")
    g = PodiumGame("stage:podium:d", "d", SAT, PODIUMS_2100, cards(5))
    g.open(cmd(), game_seed(draw_seed, g.game_id), seed_from="draw:d")
    for card, r in zip(cards(5), [3, 1, 5, 2, 4], strict=True):
        g.choose(cmd(), card, r)
    g.close(cmd())
    assert g.records[0].data["seed_from"] == "draw:d"
    assert verify_game(_dicts(g), draw_seed) == []
    (bad,) = verify_game(_dicts(g), seed("another draw"))
    assert "derived from its draw's seed" in bad.message
    # a game opened with a fresh seed instead (chosen after the winners were known)
    h = PodiumGame("stage:podium:d", "d", SAT, PODIUMS_2100, cards(5))
    h.open(cmd(), seed("fresh"), seed_from="draw:d")
    assert game_seed(draw_seed, h.game_id) != seed("fresh")


def test_a_game_restores_from_its_records_and_answers_retries() -> None:
    g = _paddles("restore")
    half = PaddleGame("paddles:restore", "d", SAT, cards(5), PADDLES, REVEALS)
    half.open(cmd(), seed("restore"))
    first = half.pick_paddle(c1 := cmd(), cards(5)[0], 1)
    again = restore_game([r.to_dict() for r in half.records], seed("restore"))
    assert again.records[-1].to_dict() == first.to_dict()
    assert again.pick_paddle(c1, cards(5)[0], 1).to_dict() == first.to_dict()  # a retry
    assert len(again.records) == 2
    with pytest.raises(StageError, match="commitment"):
        restore_game([r.to_dict() for r in half.records], seed("another"))
    done = restore_game(_dicts(g), seed("restore"))
    assert done.state is GameState.CLOSED and done.awards() == g.awards()
    bad = _dicts(g)
    bad[2]["data"]["chances"] = 9
    with pytest.raises(StageError, match="record 2"):
        restore_game(bad, seed("restore"))


def test_a_car_final_with_a_changed_winner_is_named() -> None:
    g = CarFinal("car:tamper", "car-2025-10-25-2100", SAT, cards(6), ["sedan"])
    g.open(cmd(), seed("car-tamper"))
    g.reveal(cmd())
    g.choose_vehicle(cmd(), "sedan")
    g.close(cmd())
    recs = copy.deepcopy(_dicts(g))
    other = next(c for c in cards(6) if c != recs[1]["data"]["card"])
    recs[1]["data"]["card"] = other
    assert any(m.position == 1 for m in verify_game(recs))


def test_a_malformed_or_foreign_record_is_named_not_a_crash() -> None:
    recs = _dicts(_podium())
    del recs[1]["data"]["randomiser"]
    assert any("malformed" in m.message for m in verify_game(recs))
    recs = _dicts(_podium())
    recs[2]["session_id"] = "podium:other"
    assert any("another stream" in m.message for m in verify_game(recs))
    assert "stage.opened" in verify_game([])[0].message


# -- a game not closed yet: checked without its seed ------------------------------------


def _bonus(label: str = "open-bonus") -> BonusGame:
    g = BonusGame(f"bonus:{label}", "d", SAT, ["6000001", "6000002"], [1, 2])
    g.open(cmd(), seed(label))
    g.decide(cmd(), "6000001", True)
    g.decide(cmd(), "6000002", True)
    while g.state is GameState.OPEN:
        who = g.turn()
        assert who is not None
        g.open_box(cmd(), who, min(set(range(1, 13)) - set(g.play.opened)))
    g.close(cmd())
    return g


def _safe(label: str, odds: SafeOdds) -> SafeGame:
    g = SafeGame(f"safe:{label}", "d", SAT, cards(3), [1_000_000] * 3, 10_000_000, odds)
    g.open(cmd(), seed(label))
    for card in cards(3):
        if g.cracked:  # nobody tries after a crack
            g.decline(cmd(), card)
            continue
        g.attempt(cmd(), card)
        while (p := g.current()) is not None and g.winners[p - 1] == card:
            if odds.mode == "chance":
                g.spin(cmd(), card)
            else:  # the second winner cracks it on their second try
                code = g.code_text(below(seed(label), g.game_id, f"safe-code|{p}", 10))
                wrong = [c for c in "0123456789" if c != code]
                tried = len(g.trying[p])
                g.guess(cmd(), card, code if (p, tried) == (2, 1) else wrong[tried])
    g.close(cmd())
    return g


def _car() -> CarFinal:
    g = CarFinal("car:open", "car-2025-10-25-2100", SAT, cards(6), ["sedan"])
    g.open(cmd(), seed("car-open"))
    g.reveal(cmd())
    g.choose_vehicle(cmd(), "sedan", 30_000_000)
    g.close(cmd())
    return g


def _open_games() -> list[StageGame]:
    return [_podium("open"), _bonus(), _paddles("open-paddles"), _car(),
            _safe("open-code", SafeOdds(digits=1, tries=3)),
            _safe("open-chance", SafeOdds(mode="chance", numerator=1, denominator=3))]  # fmt: skip


def test_every_step_of_a_game_not_closed_yet_checks_without_its_seed() -> None:
    """Whatever point the show is at, what was played so far follows from the opened
    config and the turns (the reveals are checked against the seed at the close)."""
    for g in _open_games():
        recs = _dicts(g)[:-1]  # no stage.closed: the seed is not revealed
        for n in range(1, len(recs) + 1):
            assert verify_open_game(recs[:n]) == [], (g.game_id, n)
    cracked = [g.odds.mode for g in _open_games() if isinstance(g, SafeGame) and g.cracked]
    assert cracked == ["code", "chance"]  # an open safe's crack is checked too


def _named(recs: list[dict[str, Any]], position: int, words: str) -> None:
    bad = verify_open_game(recs)
    assert any(m.position == position and words in m.message for m in bad), bad


def test_a_step_out_of_turn_out_of_range_or_impossible_is_named_before_the_close() -> None:
    podium = _dicts(_podium("open-tamper"))[:-1]
    recs = copy.deepcopy(podium)
    recs[1], recs[2] = recs[2], recs[1]
    _named(recs, 1, "turn")  # the second winner before the first
    recs = copy.deepcopy(podium)
    recs[2]["data"]["randomiser"] = recs[1]["data"]["randomiser"]
    _named(recs, 2, "not one still to choose")
    recs = copy.deepcopy(podium)
    recs[2]["data"]["podium"] = recs[1]["data"]["podium"]
    _named(recs, 2, "no such value left")  # two randomisers cannot hide one podium
    recs = copy.deepcopy(podium)
    recs[1]["data"]["prize"]["amount"] += 1
    _named(recs, 1, "prize")  # not the configured prize of that podium
    recs = copy.deepcopy(podium)
    recs[0]["data"]["config"]["winners"][0] = "6009999"
    _named(recs, 1, "turn")  # the steps no longer fit (raps verify also compares the
    # contestants with the draw's verified winners)

    boxes = _dicts(_bonus("open-bonus-tamper"))[:-1]
    first_box = 3  # after the two decisions
    recs = copy.deepcopy(boxes)
    recs[first_box]["data"]["card"] = "6000002"
    _named(recs, first_box, "turn")  # contestant 1 opens first (rule 105)
    recs = copy.deepcopy(boxes)
    recs[first_box]["data"]["symbol"] = "diamond"
    _named(recs, first_box, "no such value left")  # not a symbol the boxes hold
    recs = copy.deepcopy(boxes)
    recs[first_box]["data"]["box"] = 13
    _named(recs, first_box, "still closed")  # 12 boxes

    paddles = _dicts(_paddles("open-paddles-tamper"))[:-1]
    recs = copy.deepcopy(paddles)
    recs[1]["data"]["chances"] = 5
    _named(recs, 1, "no such value left")  # no paddle holds 5 chances
    recs = copy.deepcopy(paddles)
    reveal = next(i for i, r in enumerate(recs) if r["type"] == "paddles.reveal")
    recs[reveal]["data"]["reveal"] = 26
    _named(recs, reveal, "still closed")  # 25 reveals

    car = _dicts(_car())[:-1]
    recs = copy.deepcopy(car)
    recs[1]["data"]["spot"] = 7
    _named(recs, 1, "finalists")

    safe = _dicts(_safe("open-safe-tamper", SafeOdds(digits=1, tries=3)))[:-1]
    recs = copy.deepcopy(safe)
    guess = next(i for i, r in enumerate(recs) if r["type"] == "safe.guess")
    recs[guess]["data"]["code"] = "77"
    _named(recs, guess, "digits")
    recs = copy.deepcopy(safe)
    del recs[1]  # a guess with no forfeit before it
    _named(recs, 1, "forfeited")

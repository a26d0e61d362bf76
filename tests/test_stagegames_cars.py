"""Car draws (000 rules 66-72, 87): spots, the 21:00 finalists, the car."""

from __future__ import annotations

from collections import Counter
from datetime import date

import pytest

from selector.stagegames.cars import CarFinal, CarQualifiers
from selector.stagegames.derive import below
from selector.stagegames.game import GameState, PrizeKind, StageError
from selector.stagegames.verify import verify_game
from tests.test_stagegames_kit import cards, cmd, seed

OCT25 = date(2025, 10, 25)
VEHICLES = ["hatchback", "sedan", "bakkie"]


# rules 67-68 (the car days and times) and 71-72 (their tickets) are config: checked on
# the Gold Reef City config in tests/test_stage_games_config.py


def test_rule_69_the_2100_draw_fills_what_earlier_qualifiers_left() -> None:
    sources = {
        "sat-cash-2025-10-04-1900": [1],
        "car-2025-10-25-1500": [1, 2],
        "car-2025-10-25-1900": [1, 2],
        "car-2025-10-25-2100": [1, 2, 3, 4, 5, 6],
    }
    q = CarQualifiers("car-2025-10-25", sources=sources, final_draw="car-2025-10-25-2100")
    assert q.finalists_needed() == 6
    q.qualify(cmd(), "6000001", "sat-cash-2025-10-04-1900", 1)  # a prior Saturday
    with pytest.raises(StageError, match="earns no spot"):  # a position the config omits
        q.qualify(cmd(), "6000009", "sat-cash-2025-10-04-1900", 2)
    q.qualify(cmd(), "6000002", "car-2025-10-25-1500", 1)
    q.qualify(cmd(), "6000003", "car-2025-10-25-1500", 2)
    q.qualify(cmd(), "6000004", "car-2025-10-25-1900", 1)
    assert q.finalists_needed() == 2  # the 21:00 finalist draw draws two
    with pytest.raises(StageError, match="bars them"):  # a holder is no finalist twice
        q.qualify(cmd(), "6000001", "car-2025-10-25-2100", 1)
    for i, c in enumerate(["6000005", "6000006"], 1):
        q.qualify(cmd(), c, "car-2025-10-25-2100", i)
    assert q.finalists_needed() == 0 and len(q.holders()) == 6
    with pytest.raises(StageError, match="taken"):
        q.qualify(cmd(), "6000007", "car-2025-10-25-2100", 3)
    again = CarQualifiers.replay("car-2025-10-25", q.records)
    assert again.holders() == q.holders() and again.sources == q.sources
    assert [r.type for r in q.records][:2] == ["car.rules", "car.qualified"]
    assert all(r.session_id == "car-spots:car-2025-10-25" for r in q.records)


def test_rule_70_one_spot_per_patron_an_extra_spot_is_five_thousand_cash() -> None:
    q = CarQualifiers("car-2025-11-29")
    first = q.qualify(c1 := cmd(), "6000001", "sat-cash-2025-11-01-1500", 1)
    assert first.kind is PrizeKind.CAR_SPOT and first.amount == 0
    assert q.qualify(c1, "6000001", "sat-cash-2025-11-01-1500", 1) == first  # a retry
    extra = q.qualify(cmd(), "6000001", "sat-cash-2025-11-08-1900", 3)
    assert extra.kind is PrizeKind.CASH and extra.amount == 500_000
    assert q.holders() == ["6000001"] and q.finalists_needed() == 5
    again = CarQualifiers.replay("car-2025-11-29", q.records)
    assert again.holders() == q.holders()
    assert again.qualify(c1, "6000001", "sat-cash-2025-11-01-1500", 1) == first
    bad = list(q.records)
    bad[2] = bad[1]
    with pytest.raises(StageError, match="does not follow"):
        CarQualifiers.replay("car-2025-11-29", bad)


def _final(label: str, n: int = 6) -> CarFinal:
    g = CarFinal(f"car:{label}", "car-2025-10-25-2100", OCT25, cards(n), VEHICLES)
    g.open(cmd(), seed(label))
    return g


def test_rule_87_the_2100_winner_chooses_a_vehicle_buy_back_as_agreed() -> None:
    g = _final("r87")
    with pytest.raises(StageError, match="reveal"):
        g.choose_vehicle(cmd(), "sedan")
    won = g.reveal(cmd())
    index = below(seed("r87"), g.game_id, "car-winner", 6)
    assert won.data["card"] == cards(6)[index]
    with pytest.raises(StageError, match="on offer"):
        g.choose_vehicle(cmd(), "yacht")
    g.choose_vehicle(cmd(), "bakkie", buy_back=31_000_000)
    assert g.state is GameState.FINISHED and g.buy_back == 31_000_000
    (award,) = g.awards()
    assert award.kind is PrizeKind.CAR and award.amount == 38_000_000  # about R380,000
    assert award.ref.endswith("bakkie")
    assert award.to_dict()["detail"] == {"vehicle": "bakkie", "buy_back": 31_000_000}
    g.close(cmd())
    assert verify_game(g.records) == []


def test_the_car_winner_is_uniform_over_the_six_finalists() -> None:
    """6 cells, 3,000 finals (500 expected each); chi-square p < 1e-4 rejects."""
    from scipy.stats import chisquare

    counts = Counter(below(seed(f"final/{i}"), "car:g", "car-winner", 6) for i in range(3_000))
    assert chisquare([counts[i] for i in range(6)]).pvalue >= 1e-4, counts

"""Car draws (000 rules 66-72, 87): spots, the 21:00 finalists, the car."""

from __future__ import annotations

from collections import Counter
from datetime import date

import pytest

from selector.stagegames.cars import CAR_DAYS, CAR_TIMES, CarFinal, CarQualifiers
from selector.stagegames.derive import below
from selector.stagegames.game import GameState, PrizeKind, StageError
from selector.stagegames.verify import verify_game
from tests.test_stagegames_kit import cards, cmd, seed

OCT25 = date(2025, 10, 25)
VEHICLES = ["hatchback", "sedan", "bakkie"]


def test_rule_67_68_car_draws_on_three_saturdays_at_three_pm_seven_and_nine() -> None:
    assert (date(2025, 10, 25), date(2025, 11, 29), date(2025, 12, 27)) == CAR_DAYS
    assert all(d.weekday() == 5 for d in CAR_DAYS)
    assert CAR_TIMES == ("15:00", "19:00", "21:00")


def test_rule_69_the_2100_draw_fills_what_earlier_qualifiers_left() -> None:
    q = CarQualifiers("car-2025-10-25")
    assert q.finalists_needed() == 6
    q.qualify(cmd(), "6000001", "sat-cash-2025-10-04-1900", 2)  # a prior Saturday
    q.qualify(cmd(), "6000002", "car-2025-10-25-1500", 1)
    q.qualify(cmd(), "6000003", "car-2025-10-25-1500", 2)
    q.qualify(cmd(), "6000004", "car-2025-10-25-1900", 1)
    assert q.finalists_needed() == 2  # the 21:00 finalist draw draws two
    for i, c in enumerate(["6000005", "6000006"], 1):
        q.qualify(cmd(), c, "car-2025-10-25-2100", i)
    assert q.finalists_needed() == 0 and len(q.holders()) == 6
    with pytest.raises(StageError, match="taken"):
        q.qualify(cmd(), "6000007", "car-2025-10-25-2100", 3)


def test_rule_70_one_spot_per_patron_an_extra_spot_is_five_thousand_cash() -> None:
    q = CarQualifiers("car-2025-11-29")
    first = q.qualify(cmd(), "6000001", "sat-cash-2025-11-01-1500", 1)
    assert first.kind is PrizeKind.CAR_SPOT and first.amount == 0
    extra = q.qualify(cmd(), "6000001", "sat-cash-2025-11-08-1900", 3)
    assert extra.kind is PrizeKind.CASH and extra.amount == 500_000
    assert q.holders() == ["6000001"] and q.finalists_needed() == 5
    again = CarQualifiers.replay("car-2025-11-29", q.records)
    assert again.holders() == q.holders()
    bad = list(q.records)
    bad[1] = bad[0]
    with pytest.raises(StageError, match="does not follow"):
        CarQualifiers.replay("car-2025-11-29", bad)


def test_rule_71_72_tickets_are_the_ticket_programs_not_the_stage() -> None:
    """Rules 71-72 (100 points a ticket from 27 Sep; complimentary by tier) are the car
    program's ticket rules (selector.tickets, config/seeds/gold-reef-city.toml); the
    stage takes the finalists the ticket draws give, here checked against the config."""
    import tomllib
    from pathlib import Path

    cfg = tomllib.loads(
        (Path(__file__).resolve().parent.parent / "config/seeds/gold-reef-city.toml").read_text()
    )
    car = next(p for p in cfg["ticket_programs"] if p["id"] == "car")
    assert set(car["rates"].values()) == {100}
    draws = [d for d in cfg["ticket_draws"] if d["program"] == "car"]
    assert {d["at"][:10] for d in draws} == {d.isoformat() for d in CAR_DAYS}


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
    g.close(cmd())
    assert verify_game(g.records) == []


def test_the_car_winner_is_uniform_over_the_six_finalists() -> None:
    """6 cells, 3,000 finals (500 expected each); chi-square p < 1e-4 rejects."""
    from scipy.stats import chisquare

    counts = Counter(below(seed(f"final/{i}"), "car:g", "car-winner", 6) for i in range(3_000))
    assert chisquare([counts[i] for i in range(6)]).pvalue >= 1e-4, counts

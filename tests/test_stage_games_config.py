"""`[stage]`: the game each ticket draw has, the safe's progressive and the car draws,
from the Gold Reef City config (000 rules 55-56, 66-72, 87, 103-139) and refused with
their keys when they do not fit the draws."""

from __future__ import annotations

from collections import Counter
from datetime import date
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from raps.config import ConfigError, load_config, parse_config
from raps.config.games import StagePlan
from selector.events import Tier
from selector.stagegames.game import DrawGame
from tests.test_config import FLOOR, PROMO, SITE, toml

SEEDS = Path(__file__).resolve().parent.parent / "config" / "seeds"
SAST = ZoneInfo("Africa/Johannesburg")
CAR_DAYS = {date(2025, 10, 25), date(2025, 11, 29), date(2025, 12, 27)}


@pytest.fixture(scope="module")
def gold_reef() -> tuple[StagePlan, dict[str, tuple[str, str, int]]]:
    cfg = load_config(SEEDS / "gold-reef-city.toml")
    plan = cfg.ticket_plan()
    draws = {d.draw_id: (d.program_id, d.at.astimezone(SAST).strftime("%H:%M"), d.winners)
             for d in plan.draws}  # fmt: skip
    return cfg.stage_plan(), draws


def test_every_saturday_and_thursday_draw_has_its_game(
    gold_reef: tuple[StagePlan, dict[str, tuple[str, str, int]]],
) -> None:
    stage, draws = gold_reef
    by_slot = Counter((draws[d][0], draws[d][1], p.kind.value) for d, p in stage.draws.items())
    assert by_slot[("sat-cash", "15:00", "podium+bonus")] == 3
    assert by_slot[("sat-cash", "19:00", "paddles")] == 3
    assert by_slot[("sat-cash", "21:00", "podium+safe")] == 3
    assert by_slot[("sat-cash", "21:30", "vault_share")] == 1
    queen = [d for d, (prog, _, _) in draws.items() if prog == "queen-thu"]
    assert all(stage.draws[d].kind is DrawGame.PODIUM for d in queen)
    # rule 56: R40,000 across the five podiums of every Queen Thursday
    assert {sum(p.amount for p in stage.draws[d].podiums) for d in queen} == {4_000_000}
    # rule 124: the 21:00 podiums hold R5,000 to R10,000; rule 125: R2,000 to try
    for p in stage.draws.values():
        if p.kind is DrawGame.PODIUM_SAFE:
            assert {x.amount for x in p.podiums} <= set(range(500_000, 1_000_001))
            assert p.forfeit == 200_000 and p.odds is not None
    # Wednesday draws keep their device-revealed prizes: no game
    assert not [d for d in stage.draws if draws[d][0] == "wed-cash"]
    assert stage.progressive.base == 10_000_000 and stage.progressive.increment == 2_000_000


def test_rule_67_68_car_draws_on_three_saturdays_at_three_seven_and_nine(
    gold_reef: tuple[StagePlan, dict[str, tuple[str, str, int]]],
) -> None:
    stage, draws = gold_reef
    assert {c.day for c in stage.cars.values()} == CAR_DAYS
    assert all(d.weekday() == 5 for d in CAR_DAYS)
    for car in stage.cars.values():
        on_day = sorted(
            (draws[d][1], p.kind.value) for d, p in stage.draws.items() if p.car == car.car_id
        )
        assert on_day == [("15:00", "car_spots"), ("19:00", "car_spots"), ("21:00", "car_final")]
        assert car.finalists == 6 and car.extra_spot_cash == 500_000  # rules 69-70
        assert car.car_value == 38_000_000 and car.vehicles  # rule 87


def test_rule_69_spots_come_from_the_prior_saturday_and_the_day() -> None:
    cfg = load_config(SEEDS / "gold-reef-city.toml")
    car = cfg.stage_plan().cars["car-2025-10-25"]
    assert dict(car.sources) == {
        "sat-cash-2025-10-04-1900": (1,),  # the prior cash Saturday's first 19:00 winner
        "car-2025-10-25-1500": (1, 2),
        "car-2025-10-25-1900": (1, 2),
        "car-2025-10-25-2100": (1, 2, 3, 4, 5, 6),  # the final draws what is left
    }
    assert car.final_draw == "car-2025-10-25-2100"


def test_rule_71_72_car_tickets_are_the_car_program_s() -> None:
    plan = load_config(SEEDS / "gold-reef-city.toml").ticket_plan()
    car = next(p for p in plan.programs if p.program_id == "car")
    assert set(car.rates.values()) == {100}  # 100 points a ticket (rule 71)
    assert car.period.start is not None and car.period.start.date() == date(2025, 9, 27)
    assert car.complimentary == {Tier.ACE: 50, Tier.KING: 40, Tier.QUEEN: 30,
                                 Tier.JACK: 20, Tier.TEN: 10}  # rule 72  # fmt: skip


PROGRAM = """[[ticket_programs]]
id = "cash"
promotion = "raps"
rates = { ten = 50 }
[ticket_programs.period]
kind = "day_to_draw"
"""


def draw(i: str, hhmm: str, winners: int, day: str = "2026-04-25", program: str = "cash") -> str:
    return (f'[[ticket_draws]]\nid = "{i}"\nprogram = "{program}"\nat = "{day} {hhmm}"\n'
            f'opens = "{day} 08:00"\ncloses = "{day} 09:00"\nwinners = {winners}\n')  # fmt: skip


GAME = """[[stage.games]]
id = "{id}"
program = "cash"
kind = "{kind}"
{more}
"""


def stage_error(*parts: str) -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as info:
        parse_config(toml(SITE, FLOOR, PROMO, PROGRAM, *parts), "raps.toml")
    return [(p.key, p.message) for p in info.value.problems]


def test_a_game_that_does_not_fit_its_draws_is_refused_with_its_key() -> None:
    (problem,) = stage_error(
        draw("d1", "15:00", 5),
        GAME.format(id="g", kind="podium", more="podiums = [{ amount = 100 }]"),
    )
    assert problem[0] == "stage.games[0].podiums" and "1 podiums for the 5 winners" in problem[1]
    (problem,) = stage_error(
        draw("d1", "15:00", 2),
        GAME.format(id="g", kind="podium+bonus", more="podiums = [{ amount = 1 }, { amount = 2 }]"),
    )
    assert "two podiums unlock the bonus" in problem[1]
    (problem,) = stage_error(
        draw("d1", "15:00", 2),
        GAME.format(id="a", kind="paddles", more="paddles = [2, 4]\nreveals = [1, 2, 3]"),
    )
    assert problem[0] == "stage.games[0].reveals" and "run out" in problem[1]
    (problem,) = stage_error(draw("d1", "15:00", 2), GAME.format(id="v", kind="vault_share",
                                                                 more=""))  # fmt: skip
    assert "shared among 5" in problem[1]
    (problem,) = stage_error(draw("d1", "15:00", 2), GAME.format(id="c", kind="car_spots", more=""))
    assert "no [[stage.cars]] on 2026-04-25" in problem[1]
    problems = stage_error(
        draw("d1", "15:00", 1),
        GAME.format(id="a", kind="podium", more="podiums = [{ amount = 1 }]"),
        GAME.format(id="b", kind="podium", more="podiums = [{ amount = 1 }]\nforfeit = 5"),
    )
    assert ("stage.games[1].forfeit", 'does not apply to kind = "podium"') in problems
    problems = stage_error(
        draw("d1", "15:00", 1),
        GAME.format(id="a", kind="podium", more="podiums = [{ amount = 1 }]"),
        GAME.format(id="b", kind="podium", more="podiums = [{ amount = 1 }]"),
    )
    assert problems == [("stage.games[1]", "draw 'd1' already has the game of stage.games[0]")]
    problems = stage_error(GAME.format(id="a", kind="podium", more="podiums = [{ amount = 1 }]")
                           .replace('"cash"', '"nope"'))  # fmt: skip
    assert problems == [("stage.games[0].program", "no ticket program has id 'nope'")]


def test_too_many_spots_before_a_car_final_are_refused() -> None:
    car = """[[stage.cars]]
id = "car"
day = 2026-04-25
finalists = 3
vehicles = ["Sedan"]
[[stage.cars.qualifying]]
program = "cash"
times = ["10:00"]
positions = [1, 2]
"""
    problems = stage_error(
        draw("prior", "10:00", 2, day="2026-04-18"),
        draw("spots", "15:00", 2),
        draw("final", "21:00", 2),
        GAME.format(id="p", kind="podium", more='times = ["10:00"]\npodiums = [{}, {}]'),
        GAME.format(id="s", kind="car_spots", more='times = ["15:00"]'),
        GAME.format(id="f", kind="car_final", more='times = ["21:00"]'),
        car,
    )
    assert problems == [
        ("stage.cars[0].finalists", "up to 4 spots can be won before the final: over 3")
    ]


def test_rule_66_car_draws_are_open_to_every_rewards_tier() -> None:
    plan = load_config(SEEDS / "gold-reef-city.toml").ticket_plan()
    car = next(p for p in plan.programs if p.program_id == "car")
    assert car.tiers == frozenset(Tier)


def test_rules_102_112_120_138_winners_of_each_saturday_draw(
    gold_reef: tuple[StagePlan, dict[str, tuple[str, str, int]]],
) -> None:
    stage, draws = gold_reef
    winners = {(p.kind.value, draws[d][2]) for d, p in stage.draws.items()
               if draws[d][0] == "sat-cash"}  # fmt: skip
    assert winners == {("podium+bonus", 6), ("paddles", 5), ("podium+safe", 5),
                       ("vault_share", 5)}  # fmt: skip


def test_rules_89_90_128_129_140_141_the_app_and_online_add_ons() -> None:
    cfg = load_config(SEEDS / "gold-reef-city.toml")
    for program in ("car", "sat-cash"):
        stage = next(p for p in cfg.ticket_programs if p.id == program).stage
        add_ons = {a.id: [(x.amount, x.kind) for x in a.prizes] for a in stage.add_ons}
        assert add_ons == {"app": [(50_000, "cash")], "online": [(50_000, "plus_play")]}
        assert stage.win_limit == "per_day"  # rules 74, 127, 139

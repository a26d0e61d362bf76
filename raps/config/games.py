"""`[stage]`: the games that follow ticket draws on stage, the digit safe's progressive,
and the car draws (seed 000, issue 19); checked against the ticket plan and resolved
into a `StagePlan` the daemon runs by.

Games are chosen per draw by a selection, not listed under each `[[ticket_draws]]`
entry, so draws made from a calendar get theirs too: a `[[stage.games]]` entry names a
ticket `program` and, optionally, the local `times` of day, the `dates` and the
explicit `draws` it applies to. Every draw gets at most one game entry (two matching is
an error naming both). Amounts are in minor units (cents), as everywhere else.

| kind | follows | needs |
| --- | --- | --- |
| `podium` | Thursday Queen draws (rules 55-56) | `podiums` (one per winner) |
| `podium+bonus` | Saturday 15:00 (103-107) | `podiums`, two of `kind = "bonus"`; `[bonus]` |
| `paddles` | Saturday 19:00 (112-117) | `paddles` (2, 3 or 4 each), 25 `reveals` |
| `podium+safe` | Saturday 21:00 (123-126) | `podiums`, `[safe_odds]`, `forfeit` |
| `vault_share` | 20 Dec 21:30 (135-138) | as many winners as `stage.progressive.vault_winners` |
| `car_spots` | car day 15:00 and 19:00 (69-70) | a `[[stage.cars]]` entry for the draw's day |
| `car_final` | car day 21:00 (69, 87) | a `[[stage.cars]]` entry for the draw's day |

A car draw (`[[stage.cars]]`) is the car days' final: its spots are won at the
`car_spots` draws of its day, at its `car_final` draw (which draws what is left), and at
the positions `qualifying` names of the draws before it (after the previous car day):
our reading of rule 69's "qualifiers drawn at the Cash draws on the prior Saturdays",
which the seed does not specify. The spots a car draw can get before its final may not
exceed its finalists.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, time
from typing import Any, Literal
from zoneinfo import ZoneInfo

from pydantic import Field, field_validator, model_validator

from adapters.wire.settings import StrictModel, key_problems
from raps.config.common import check_item_id, duplicates, parse_hhmm
from selector.stagegames.bonus import BonusRules
from selector.stagegames.game import DrawGame, StageError
from selector.stagegames.ledger import ProgressiveRules
from selector.stagegames.podium import BONUS, PodiumPrize
from selector.stagegames.safe import SafeOdds
from selector.tickets import TicketDraw, TicketPlan

GameKindName = Literal[
    "podium", "podium+bonus", "paddles", "podium+safe", "vault_share", "car_spots", "car_final"
]
PODIUM_KINDS = ("podium", "podium+bonus", "podium+safe")


def _date(v: Any) -> Any:
    if isinstance(v, str):
        try:
            return date.fromisoformat(v)
        except ValueError:
            raise ValueError(f"must be a date like 2025-10-25, not {v!r}") from None
    return v


class Selection(StrictModel):
    """Which ticket draws an entry applies to: all of them must match what is given."""

    program: str | None = None
    times: tuple[time, ...] = ()  # local time of day of the draw, "HH:MM"
    dates: tuple[date, ...] = ()  # local date of the draw
    draws: tuple[str, ...] = ()  # draw ids

    @field_validator("times", mode="before")
    @classmethod
    def _hhmm(cls, v: Any) -> Any:
        if isinstance(v, list | tuple):
            return tuple(parse_hhmm(x, "times") for x in v)
        return v

    @field_validator("dates", mode="before")
    @classmethod
    def _dates(cls, v: Any) -> Any:
        if isinstance(v, list | tuple):
            return tuple(_date(x) for x in v)
        return v

    @model_validator(mode="after")
    def _something(self) -> Selection:
        if self.program is None and not self.draws:
            raise key_problems([("program", "name a ticket program (or list the draws)")])
        return self

    def matches(self, d: TicketDraw, zone: ZoneInfo) -> bool:
        local = d.at.astimezone(zone)
        return (
            (self.program is None or d.program_id == self.program)
            and (not self.times or local.time().replace(second=0) in self.times)
            and (not self.dates or local.date() in self.dates)
            and (not self.draws or d.draw_id in self.draws)
        )


class PodiumConfig(StrictModel):
    amount: int = Field(default=0, ge=0)
    kind: Literal["cash", "plus_play", "bonus"] = "cash"

    def core(self) -> PodiumPrize:
        return PodiumPrize(self.amount, self.kind)


class BonusConfig(StrictModel):
    """The 15:00 bonus feature (rules 104-107)."""

    boxes: int = Field(default=12, ge=2, le=100)
    needed: int = Field(default=3, ge=1)
    symbols: tuple[str, str] = ("flame", "star")
    jackpot: int = Field(default=1_000_000, ge=0)
    runner_up: int = Field(default=750_000, ge=0)
    consolation: int = Field(default=500_000, ge=0)

    def core(self) -> BonusRules:
        return BonusRules(self.boxes, self.needed, self.symbols, self.jackpot, self.runner_up,
                          self.consolation)  # fmt: skip


class SafeOddsConfig(StrictModel):
    """The safe's odds, stated on the stage screen: a code of `digits` digits and
    `tries` guesses, or a chance of numerator in denominator per attempt."""

    mode: Literal["code", "chance"] = "code"
    digits: int = Field(default=3, ge=1, le=12)
    tries: int = Field(default=3, ge=1)
    numerator: int = Field(default=1, ge=1)
    denominator: int = Field(default=100, ge=2)

    def core(self) -> SafeOdds:
        return SafeOdds(self.mode, self.digits, self.tries, self.numerator, self.denominator)


class GameConfig(Selection):
    """The game that follows the selected draws."""

    id: str
    kind: GameKindName
    name: str = Field(default="", max_length=80)
    podiums: tuple[PodiumConfig, ...] = ()
    bonus: BonusConfig = Field(default_factory=BonusConfig)
    paddles: tuple[int, ...] = ()
    reveals: tuple[int, ...] = ()
    reveal_kind: Literal["cash", "plus_play"] = "cash"
    safe_odds: SafeOddsConfig = Field(default_factory=SafeOddsConfig)
    forfeit: int = Field(default=200_000, ge=0)

    @field_validator("id")
    @classmethod
    def _plain_id(cls, v: str) -> str:
        return check_item_id(v)

    @model_validator(mode="after")
    def _what_the_kind_needs(self) -> GameConfig:
        problems: list[tuple[str, str]] = []
        set_ = self.model_fields_set
        if self.kind in PODIUM_KINDS and not self.podiums:
            problems.append(("podiums", f'missing (kind = "{self.kind}" needs them)'))
        if self.kind not in PODIUM_KINDS and "podiums" in set_:
            problems.append(("podiums", f'does not apply to kind = "{self.kind}"'))
        bonus = sum(1 for p in self.podiums if p.kind == BONUS)
        if self.kind == "podium+bonus" and bonus != 2:
            problems.append(("podiums", f"two podiums unlock the bonus (rule 104), not {bonus}"))
        elif self.kind != "podium+bonus" and bonus:
            problems.append(("podiums", 'kind = "bonus" podiums are for "podium+bonus" only'))
        if self.kind == "paddles":
            if not self.paddles or any(c not in (2, 3, 4) for c in self.paddles):
                problems.append(("paddles", "a paddle holds 2, 3 or 4 chances (rule 113)"))
            if not self.reveals or any(a < 0 for a in self.reveals):
                problems.append(("reveals", "the prize reveals' amounts (rule 116), each >= 0"))
        else:
            for key in ("paddles", "reveals", "reveal_kind"):
                if key in set_:
                    problems.append((key, f'does not apply to kind = "{self.kind}"'))
        if self.kind != "podium+safe":
            for key in ("safe_odds", "forfeit"):
                if key in set_:
                    problems.append((key, f'does not apply to kind = "{self.kind}"'))
        if self.kind != "podium+bonus" and "bonus" in set_:
            problems.append(("bonus", f'does not apply to kind = "{self.kind}"'))
        try:
            self.bonus.core()
            self.safe_odds.core()
        except StageError as e:
            problems.append(("bonus" if "symbol" in str(e) or "boxes" in str(e) else "safe_odds",
                             str(e)))  # fmt: skip
        if problems:
            raise key_problems(problems)
        return self


class ProgressiveConfig(StrictModel):
    """The digit safe's progressive (rule 126) and the vault share (rules 135-138)."""

    base: int = Field(default=10_000_000, ge=0)  # R100,000
    increment: int = Field(default=2_000_000, ge=0)  # R20,000
    grows_at: tuple[GameKindName, ...] = ("podium+safe",)
    reset_on_crack: bool = True
    vault_winners: int = Field(default=5, ge=1)

    def core(self) -> ProgressiveRules:
        return ProgressiveRules(self.base, self.increment, self.reset_on_crack,
                                self.vault_winners, self.grows_at)  # fmt: skip


class QualifyingConfig(Selection):
    """Positions of the selected draws whose winner earns a car draw spot."""

    positions: tuple[int, ...] = Field(min_length=1)

    @field_validator("positions")
    @classmethod
    def _positive(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        if any(p < 1 for p in v) or len(set(v)) != len(v):
            raise ValueError("positions are distinct numbers from 1")
        return v


class CarConfig(StrictModel):
    """A car draw: its day's `car_spots` and `car_final` draws, and what feeds it."""

    id: str
    day: date
    finalists: int = Field(default=6, ge=1)
    extra_spot_cash: int = Field(default=500_000, ge=0)  # rule 70
    vehicles: tuple[str, ...] = Field(min_length=1)
    car_value: int = Field(default=38_000_000, ge=0)  # about R380,000 (rule 87)
    qualifying: tuple[QualifyingConfig, ...] = ()

    @field_validator("id")
    @classmethod
    def _plain_id(cls, v: str) -> str:
        return check_item_id(v)

    @field_validator("day", mode="before")
    @classmethod
    def _day(cls, v: Any) -> Any:
        return _date(v)

    @field_validator("vehicles")
    @classmethod
    def _named(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if any(not x.strip() or not x.isprintable() or len(x) > 80 for x in v):
            raise ValueError("each vehicle is a name of 1 to 80 printable characters")
        if len(set(v)) != len(v):
            raise ValueError("a vehicle is listed twice")
        return v


class StageSection(StrictModel):
    progressive: ProgressiveConfig = Field(default_factory=ProgressiveConfig)
    games: tuple[GameConfig, ...] = ()
    cars: tuple[CarConfig, ...] = ()


# ------------------------------------------------------------------ the resolved plan


@dataclass(frozen=True, slots=True)
class DrawPlan:
    """The game that follows one ticket draw."""

    draw_id: str
    day: date
    kind: DrawGame
    config_id: str
    name: str
    winners: int
    podiums: tuple[PodiumPrize, ...] = ()
    bonus: BonusRules | None = None
    paddles: tuple[int, ...] = ()
    reveals: tuple[int, ...] = ()
    reveal_kind: str = "cash"
    odds: SafeOdds | None = None
    forfeit: int = 0
    car: str | None = None  # car_spots / car_final: the car draw of the day


@dataclass(frozen=True, slots=True)
class CarPlan:
    car_id: str
    day: date
    finalists: int
    extra_spot_cash: int
    vehicles: tuple[str, ...]
    car_value: int
    sources: Mapping[str, tuple[int, ...]]  # draw id -> positions earning a spot
    final_draw: str | None


@dataclass(frozen=True, slots=True)
class StagePlan:
    progressive: ProgressiveRules
    draws: Mapping[str, DrawPlan] = field(default_factory=dict)
    cars: Mapping[str, CarPlan] = field(default_factory=dict)

    def qualifying(self, draw_id: str) -> list[tuple[str, tuple[int, ...]]]:
        """(car draw, positions) whose winners of this draw earn a car spot."""
        return [(c.car_id, c.sources[draw_id]) for c in self.cars.values() if draw_id in c.sources]


def resolve(section: StageSection, plan: TicketPlan, tz: str) -> StagePlan:
    """The plan every draw runs by; a problem raises ValueError('key: message')."""
    problems = stage_problems(section, plan, tz)
    if problems:
        raise ValueError("; ".join(f"{k}: {m}" for k, m in problems))
    return _build(section, plan, tz)[0]


def stage_problems(section: StageSection, plan: TicketPlan, tz: str) -> list[tuple[str, str]]:
    """What is wrong between `[stage]` and the ticket draws, each under its own key."""
    problems = duplicates("stage.games", [g.id for g in section.games])
    problems += duplicates("stage.cars", [c.id for c in section.cars])
    programs = {p.program_id for p in plan.programs}
    for where, sel in _selections(section):
        if sel.program is not None and sel.program not in programs:
            problems.append((f"{where}.program", f"no ticket program has id {sel.program!r}"))
        for j, d in enumerate(sel.draws):
            if d not in {x.draw_id for x in plan.draws}:
                problems.append((f"{where}.draws[{j}]", f"no ticket draw has id {d!r}"))
    days = [c.day for c in section.cars]
    problems += [(f"stage.cars[{i}].day", "two car draws on one day")
                 for i, d in enumerate(days) if days.index(d) != i]  # fmt: skip
    if problems:
        return problems
    return _build(section, plan, tz)[1]


def _selections(section: StageSection) -> list[tuple[str, Selection]]:
    out: list[tuple[str, Selection]] = [
        (f"stage.games[{i}]", g) for i, g in enumerate(section.games)
    ]
    for i, c in enumerate(section.cars):
        out += [(f"stage.cars[{i}].qualifying[{j}]", q) for j, q in enumerate(c.qualifying)]
    return out


def _build(
    section: StageSection, plan: TicketPlan, tz: str
) -> tuple[StagePlan, list[tuple[str, str]]]:
    zone = ZoneInfo(tz)
    problems: list[tuple[str, str]] = []
    cars_by_day = {c.day: c for c in section.cars}
    draws: dict[str, DrawPlan] = {}
    chosen: dict[str, int] = {}
    for d in plan.draws:
        day = d.at.astimezone(zone).date()
        for i, g in enumerate(section.games):
            if not g.matches(d, zone):
                continue
            where = f"stage.games[{i}]"
            if d.draw_id in chosen:
                problems.append((where, f"draw {d.draw_id!r} already has the game of "
                                        f"stage.games[{chosen[d.draw_id]}]"))  # fmt: skip
                continue
            chosen[d.draw_id] = i
            car = cars_by_day.get(day)
            kind = DrawGame(g.kind)
            problems += _fits(where, g, d, section)
            draws[d.draw_id] = DrawPlan(
                draw_id=d.draw_id, day=day, kind=kind, config_id=g.id, name=g.name or g.id,
                winners=d.winners, podiums=tuple(p.core() for p in g.podiums),
                bonus=g.bonus.core() if kind is DrawGame.PODIUM_BONUS else None,
                paddles=g.paddles, reveals=g.reveals, reveal_kind=g.reveal_kind,
                odds=g.safe_odds.core() if kind is DrawGame.PODIUM_SAFE else None,
                forfeit=g.forfeit if kind is DrawGame.PODIUM_SAFE else 0,
                car=car.id if car is not None and kind in (DrawGame.CAR_SPOTS,
                                                           DrawGame.CAR_FINAL) else None,
            )  # fmt: skip
    cars: dict[str, CarPlan] = {}
    ordered = sorted(section.cars, key=lambda c: c.day)
    for n, c in enumerate(ordered):
        i = section.cars.index(c)
        after = ordered[n - 1].day if n else date.min
        sources: dict[str, tuple[int, ...]] = {}
        finals = [p for p in draws.values() if p.car == c.id and p.kind is DrawGame.CAR_FINAL]
        spots = [p for p in draws.values() if p.car == c.id and p.kind is DrawGame.CAR_SPOTS]
        if len(finals) != 1:
            problems.append((f"stage.cars[{i}]", f"{len(finals)} car_final draws on {c.day} "
                                                 "(one is its final)"))  # fmt: skip
        for p in spots:
            sources[p.draw_id] = tuple(range(1, p.winners + 1))
        for j, q in enumerate(c.qualifying):
            for d in plan.draws:
                day = d.at.astimezone(zone).date()
                if not (after < day < c.day) or not q.matches(d, zone):
                    continue
                if d.draw_id not in draws:
                    problems.append((f"stage.cars[{i}].qualifying[{j}]", f"draw {d.draw_id!r} "
                                     "has no stage game to award its spot"))  # fmt: skip
                elif max(q.positions) > d.winners:
                    problems.append((f"stage.cars[{i}].qualifying[{j}].positions",
                                     f"draw {d.draw_id!r} has {d.winners} winners"))  # fmt: skip
                sources[d.draw_id] = tuple(
                    sorted(set(sources.get(d.draw_id, ())) | set(q.positions))
                )
        before = sum(len(ps) for ps in sources.values())
        if before > c.finalists:
            why = f"up to {before} spots can be won before the final: over {c.finalists}"
            problems.append((f"stage.cars[{i}].finalists", why))
        final = finals[0].draw_id if len(finals) == 1 else None
        if final is not None:
            sources[final] = tuple(range(1, c.finalists + 1))
        cars[c.id] = CarPlan(c.id, c.day, c.finalists, c.extra_spot_cash, c.vehicles,
                             c.car_value, sources, final)  # fmt: skip
    for p in draws.values():
        if p.kind in (DrawGame.CAR_SPOTS, DrawGame.CAR_FINAL) and p.car is None:
            problems.append((f"stage.games[{chosen[p.draw_id]}]",
                             f"draw {p.draw_id!r}: no [[stage.cars]] on {p.day}"))  # fmt: skip
    out = StagePlan(section.progressive.core(), draws, cars)
    return out, problems


def _fits(where: str, g: GameConfig, d: TicketDraw, section: StageSection) -> list[tuple[str, str]]:
    """A game whose numbers the draw's winners do not fit, named with the draw."""
    n, kind = d.winners, g.kind
    if kind in PODIUM_KINDS and len(g.podiums) != n:
        return [(f"{where}.podiums", f"{len(g.podiums)} podiums for the {n} winners of "
                                     f"draw {d.draw_id!r}")]  # fmt: skip
    if kind == "paddles":
        if len(g.paddles) < n:
            return [(f"{where}.paddles", f"{len(g.paddles)} paddles for {n} winners of "
                                         f"draw {d.draw_id!r}")]  # fmt: skip
        if sum(sorted(g.paddles)[-n:]) > len(g.reveals):
            return [(f"{where}.reveals", "the reveals could run out before every chance is used")]
    if kind == "vault_share" and n != section.progressive.vault_winners:
        return [(where, f"draw {d.draw_id!r} has {n} winners; the vault is shared among "
                        f"{section.progressive.vault_winners}")]  # fmt: skip
    return []

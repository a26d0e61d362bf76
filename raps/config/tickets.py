"""`[[ticket_programs]]` and `[[ticket_draws]]`: how members earn draw tickets and which
draws take them; their cross-checks, and their translation into the core's TicketPlan
(selector.tickets).

Date-times without an offset are site-local time (`site.timezone`), as for sessions.  A
problem is reported under its own key (``ticket_draws[3].closes: ...``); what only the
whole plan can see (a draw before its program's first window, two bins of a
`fixed_windows` program earning from one window) is found by building the core's plan,
and reported under the `at` of the draw that brings it in.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime, time
from typing import Annotated, Any, Literal, TypeVar

from pydantic import Field, ValidationError, ValidationInfo, field_validator, model_validator

from adapters.wire.settings import StrictModel, key_problems
from raps.config.common import (
    check_item_id,
    duplicates,
    missing_local_time,
    parse_datetime,
    parse_hhmm,
    site_time,
)
from raps.config.draw_calendars import DrawCalendarConfig
from raps.config.errors import KeyedError, key_part
from raps.config.promotions import TierName
from raps.config.stage import PrizeConfig, StageConfig
from selector.calendar_spec import SpecError
from selector.events import Tier
from selector.tickets import PeriodKind, PeriodRule, TicketDraw, TicketPlan, TicketProgram

PeriodKindName = Literal["fixed_windows", "month_to_draw", "fixed_start_to_draw", "day_to_draw"]
# the period keys (besides kind) that each kind takes
PERIOD_KEYS: Mapping[str, frozenset[str]] = {
    "fixed_windows": frozenset({"start", "days", "use", "last_end"}),
    "month_to_draw": frozenset({"start_time"}),
    "fixed_start_to_draw": frozenset({"start"}),
    "day_to_draw": frozenset({"start_time"}),
}
_TIERS = tuple(t.value for t in Tier)
_BY_TIER = ("rates", "complimentary", "app_bonus", "raps_winner_bonus")
Tickets = Annotated[int, Field(ge=0)]
_E = TypeVar("_E")
_C = TypeVar("_C")


def _shown(dt: datetime) -> str:
    return dt.isoformat(sep=" ", timespec="minutes")


class TicketPeriodConfig(StrictModel):
    """Which points count for a draw (selector.tickets.PeriodRule)."""

    kind: PeriodKindName
    start: datetime | None = None  # fixed_windows: the first window's start; fixed_start_to_draw
    days: int = Field(default=7, ge=1)
    use: Literal["containing", "previous"] = "containing"
    last_end: datetime | None = None
    start_time: time = time(8, 0)

    @field_validator("start", "last_end", mode="before")
    @classmethod
    def _iso(cls, v: Any) -> Any:
        return parse_datetime(v)

    @field_validator("start_time", mode="before")
    @classmethod
    def _hhmm(cls, v: Any, info: ValidationInfo) -> Any:
        return parse_hhmm(v, info.field_name or "")

    @model_validator(mode="after")
    def _keys_of_the_kind(self) -> TicketPeriodConfig:
        takes = PERIOD_KEYS[self.kind]
        problems = [
            (key, f'does not apply to kind = "{self.kind}"')
            for key in sorted(self.model_fields_set - takes - {"kind"})
        ]
        if "start" in takes and self.start is None:
            problems.append(("start", f'missing (kind = "{self.kind}" needs it)'))
        if problems:
            raise key_problems(problems)
        return self


class TicketProgramConfig(StrictModel):
    """How one promotion's members earn tickets (selector.tickets.TicketProgram)."""

    id: str
    promotion: str
    name: str = ""
    tiers: tuple[TierName, ...] = Field(
        default=("ten", "jack", "queen", "king", "ace"), min_length=1
    )
    rates: dict[str, Annotated[int, Field(ge=1)]] = Field(default_factory=dict)
    complimentary: dict[str, Tickets] = Field(default_factory=dict)
    app_bonus: dict[str, Tickets] = Field(default_factory=dict)
    raps_winner_bonus: dict[str, Tickets] = Field(default_factory=dict)
    cap: int | None = Field(default=None, ge=1)
    period: TicketPeriodConfig
    stage: StageConfig = Field(default_factory=StageConfig)
    # its draws from calendars (raps.config.draw_calendars), besides any [[ticket_draws]]
    calendars: tuple[DrawCalendarConfig, ...] = ()

    @field_validator("id")
    @classmethod
    def _plain_id(cls, v: str) -> str:
        return check_item_id(v)

    @field_validator(*_BY_TIER)
    @classmethod
    def _keyed_by_tier(cls, v: dict[str, int]) -> dict[str, int]:
        bad = [k for k in v if k not in _TIERS]
        if bad:
            raise key_problems(
                [(key_part(k), f"not a tier (tiers: {', '.join(_TIERS)})") for k in bad]
            )
        return v

    @model_validator(mode="after")
    def _tiers_of_the_program(self) -> TicketProgramConfig:
        problems = [
            (f"{name}.{tier}", f"{tier} is not in tiers ({', '.join(self.tiers)})")
            for name in _BY_TIER
            for tier in getattr(self, name)
            if tier not in self.tiers
        ]
        if problems:
            raise key_problems(problems)
        return self


class TicketDrawConfig(StrictModel):
    """One draw and its entry window [opens, closes) (selector.tickets.TicketDraw)."""

    id: str
    program: str
    name: str = ""
    at: datetime
    opens: datetime
    closes: datetime
    bin: str | None = None  # draws naming one bin share its tickets; default: its own
    winners: int = Field(default=5, ge=1)
    prizes: tuple[PrizeConfig, ...] | None = None  # by position; default: the program's
    # proxy forms until then; default: the program's proxy_deadline_minutes before `at`
    proxy_deadline: datetime | None = None
    # held only if this holds (000: "safe not cracked"), asked of the daemon at open
    condition: str | None = Field(default=None, min_length=1, max_length=80)

    @field_validator("id", "bin")
    @classmethod
    def _plain_id(cls, v: str | None) -> str | None:
        return None if v is None else check_item_id(v)

    @field_validator("at", "opens", "closes", "proxy_deadline", mode="before")
    @classmethod
    def _iso(cls, v: Any) -> Any:
        return None if v is None else parse_datetime(v)

    @model_validator(mode="after")
    def _prizes_within_winners(self) -> TicketDrawConfig:
        if self.prizes is not None and len(self.prizes) > self.winners:
            raise key_problems(
                [("prizes", f"{len(self.prizes)} prizes for {self.winners} winners")]
            )
        return self

    @property
    def bin_id(self) -> str:
        return self.bin or self.id


# ------------------------------------------------------------------ cross-checks


def calendar_draws(
    programs: Sequence[TicketProgramConfig], tz: str
) -> tuple[list[TicketDrawConfig], list[str], list[tuple[str, str]]]:
    """The draws the programs' calendars make, each with the key it is reported under
    (``ticket_programs[0].calendars[1].draw(wed-2025-10-01-1300)``), and the problems of
    calendars that cannot make any."""
    draws: list[TicketDrawConfig] = []
    keys: list[str] = []
    problems: list[tuple[str, str]] = []
    for i, p in enumerate(programs):
        for k, cal in enumerate(p.calendars):
            where = f"ticket_programs[{i}].calendars[{k}]"
            try:
                made = cal.draws(p.id, tz)
            except SpecError as e:
                problems.append((f"{where}.{e.key}", e.reason))
                continue
            for d in made:
                try:
                    draws.append(TicketDrawConfig(**d))
                except ValidationError as e:
                    first = e.errors()[0]
                    field = ".".join(str(x) for x in first["loc"])
                    problems.append((f"{where}.draw({d['id']}).{field}", first["msg"]))
                    continue
                keys.append(f"{where}.draw({d['id']})")
    return draws, keys, problems


def ticket_problems(
    programs: Sequence[TicketProgramConfig],
    draws: Sequence[TicketDrawConfig],
    promotions: Collection[str],
    tz: str,
    keys: Sequence[str] | None = None,
) -> list[tuple[str, str]]:
    """What is wrong between the entries, and with the rest of the config, each under its
    own key (`keys`: each draw's; default ``ticket_draws[j]``); the core's plan
    (`build_plan`) finds the rest once these are fixed."""
    keys = keys or [f"ticket_draws[{j}]" for j in range(len(draws))]
    problems = duplicates("ticket_programs", [p.id for p in programs])
    problems += _duplicate_draws(draws, keys)
    known = ", ".join(repr(k) for k in promotions)
    for i, p in enumerate(programs):
        where = f"ticket_programs[{i}]"
        if p.promotion not in promotions:
            problems.append(
                (f"{where}.promotion", f"no promotion has id {p.promotion!r} ({known})")
            )
        gaps = _times(f"{where}.period", p.period, ("start", "last_end"), tz)
        problems += gaps
        start, last_end = p.period.start, p.period.last_end
        if (
            start is not None
            and last_end is not None
            and not gaps
            and site_time(last_end, tz) <= site_time(start, tz)
        ):
            problems.append((f"{where}.period.last_end", f"must be after start ({_shown(start)})"))
    program_ids = ", ".join(repr(p.id) for p in programs) or "none"
    for j, d in enumerate(draws):
        where = keys[j]
        if d.program not in {p.id for p in programs}:
            problems.append(
                (f"{where}.program", f"no ticket program has id {d.program!r} (ids: {program_ids})")
            )
        gaps = _times(where, d, ("at", "opens", "closes"), tz)
        problems += gaps
        if gaps:
            continue
        at, opens, closes = (site_time(t, tz) for t in (d.at, d.opens, d.closes))
        if closes <= opens:
            problems.append((f"{where}.closes", f"must be after opens ({_shown(d.opens)})"))
        elif closes > at:
            problems.append(
                (f"{where}.closes", f"must not be after the draw (at = {_shown(d.at)})")
            )
    return problems + _bin_problems(draws, keys)


def _duplicate_draws(
    draws: Sequence[TicketDrawConfig], keys: Sequence[str]
) -> list[tuple[str, str]]:
    seen: dict[str, int] = {}
    out = []
    for j, d in enumerate(draws):
        if d.id in seen:
            out.append((f"{keys[j]}.id", f"duplicate id {d.id!r} (see {keys[seen[d.id]]})"))
        else:
            seen[d.id] = j
    return out


def _times(where: str, entry: Any, keys: Sequence[str], tz: str) -> list[tuple[str, str]]:
    out = []
    for key in keys:
        value = getattr(entry, key)
        gap = None if value is None else missing_local_time(value, tz)
        if gap is not None:
            out.append((f"{where}.{key}", gap))
    return out


def _bin_problems(draws: Sequence[TicketDrawConfig], keys: Sequence[str]) -> list[tuple[str, str]]:
    """A bin belongs to one program; a draw's id names no bin but its own."""
    index = {d.id: k for k, d in enumerate(draws)}
    owner: dict[str, int] = {}
    problems = []
    for j, d in enumerate(draws):
        key = f"{keys[j]}.{'bin' if d.bin else 'program'}"
        k = index.get(d.bin_id, j)
        if d.bin is not None and k != j and draws[k].bin_id != d.bin:
            problems.append(
                (
                    key,
                    f"{d.bin!r} is the id of {keys[k]}, whose tickets go to bin "
                    f"{draws[k].bin_id!r}; a draw's id names only its own bin",
                )
            )
            continue
        first = owner.setdefault(d.bin_id, j)
        if draws[first].program != d.program:
            problems.append(
                (
                    key,
                    f"bin {d.bin_id!r} is of program {draws[first].program!r} "
                    f"({keys[first]}); a bin's tickets come from one program",
                )
            )
    return problems


# ------------------------------------------------------------------- the core's plan


def core_program(p: TicketProgramConfig, tz: str) -> TicketProgram:
    period = p.period
    return TicketProgram(
        program_id=p.id,
        promotion_id=p.promotion,
        name=p.name or p.id,
        period=PeriodRule(
            kind=PeriodKind(period.kind),
            tz=tz,
            start=period.start,
            days=period.days,
            use=period.use,
            last_end=period.last_end,
            start_time=period.start_time,
        ),
        rates={Tier(k): v for k, v in p.rates.items()},
        complimentary={Tier(k): v for k, v in p.complimentary.items()},
        app_bonus={Tier(k): v for k, v in p.app_bonus.items()},
        raps_winner_bonus={Tier(k): v for k, v in p.raps_winner_bonus.items()},
        cap=p.cap,
        tiers=frozenset(Tier(t) for t in p.tiers),
    )


def core_draw(d: TicketDrawConfig, tz: str) -> TicketDraw:
    return TicketDraw(
        draw_id=d.id,
        program_id=d.program,
        name=d.name or d.id,
        at=site_time(d.at, tz),
        opens=site_time(d.opens, tz),
        closes=site_time(d.closes, tz),
        bin_id=d.bin or "",
        winners=d.winners,
    )


def build_plan(
    programs: Sequence[TicketProgramConfig],
    draws: Sequence[TicketDrawConfig],
    tz: str,
    keys: Sequence[str] | None = None,
) -> TicketPlan:
    """The core's plan in the site's zone; a refusal is a KeyedError naming the entry."""
    keys = keys or [f"ticket_draws[{j}]" for j in range(len(draws))]
    core_programs = [
        _keyed(f"ticket_programs[{i}]", core_program, p, tz) for i, p in enumerate(programs)
    ]
    core_draws = [_keyed(keys[j], core_draw, d, tz) for j, d in enumerate(draws)]
    try:
        return TicketPlan(core_programs, core_draws, tz)
    except ValueError as whole:
        # the plan sees draws together: the first one whose addition it refuses is named
        for n in range(1, len(core_draws) + 1):
            try:
                TicketPlan(core_programs, core_draws[:n], tz)
            except ValueError as exc:
                raise KeyedError(f"{keys[n - 1]}.at", str(exc)) from exc
        raise KeyedError("ticket_programs", str(whole)) from whole


def _keyed(key: str, build: Callable[[_E, str], _C], entry: _E, tz: str) -> _C:
    try:
        return build(entry, tz)
    except ValueError as exc:
        raise KeyedError(key, str(exc)) from exc

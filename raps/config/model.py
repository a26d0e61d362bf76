"""The whole daemon config: its sections composed, cross-checked, loaded from TOML, and
turned into the core's settings.

`raps run --config FILE` must refuse to start on a wrong or missing key, and say which
key in which file, so the whole file is validated up front by strict pydantic models
(no silent coercion: ``port = "80"`` or ``enabled = 1`` are errors, not guesses) and
every problem is reported at once as ``FILE: dotted.key[0].path: message``.
"""

from __future__ import annotations

import functools
import os
import re
import tomllib
import typing
from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import Field, PrivateAttr, ValidationError, model_validator

from adapters.mqtt.config import MqttConfig
from adapters.wire.settings import StrictModel, key_problems
from raps.config.common import duplicates, missing_local_time, site_time
from raps.config.draw_calendars import DrawCalendarConfig
from raps.config.errors import ConfigError, KeyedError, Problem, from_validation, key_part
from raps.config.floor import FloorConfig, SourcesConfig
from raps.config.games import StagePlan, StageSection, resolve, stage_problems
from raps.config.promotions import EarnConfig, PromotionConfig, SessionConfig, core_promotion
from raps.config.schedule import facts as schedule_facts
from raps.config.schedule import seed, seeding_command, seeds_a_plan
from raps.config.site import (
    CredentialsConfig,
    DirectoryConfig,
    HttpConfig,
    LoggingConfig,
    SiteConfig,
    StorageConfig,
)
from raps.config.tickets import (
    TicketDrawConfig,
    TicketProgramConfig,
    build_plan,
    calendar_draws,
    ticket_problems,
)
from raps.config.users import UserConfig
from raps.config.witness import WitnessConfig
from selector.claims import ClaimStart
from selector.events import PoolKind
from selector.layout import FloorLayout, Machine, Table
from selector.promotion import EarnRules, Promotion, SessionRules
from selector.records import Record
from selector.schedule import PromotionFacts, Schedule, ScheduleError
from selector.tickets import TicketPlan

_T = typing.TypeVar("_T")


class Config(StrictModel):
    """The whole daemon configuration; build the core's settings with its methods."""

    site: SiteConfig
    storage: StorageConfig = Field(default_factory=StorageConfig)
    credentials: CredentialsConfig = Field(default_factory=CredentialsConfig)
    http: HttpConfig = Field(default_factory=HttpConfig)
    directory: DirectoryConfig = Field(default_factory=DirectoryConfig)
    mqtt: MqttConfig = Field(default_factory=MqttConfig)
    floor: FloorConfig
    sources: SourcesConfig = Field(default_factory=SourcesConfig)
    earn: EarnConfig = Field(default_factory=EarnConfig)
    # the TOML key is `promotions`; the attribute is renamed to leave promotions() free
    promotion_entries: tuple[PromotionConfig, ...] = Field(alias="promotions", min_length=1)
    sessions: tuple[SessionConfig, ...] = ()
    ticket_programs: tuple[TicketProgramConfig, ...] = ()
    ticket_draws: tuple[TicketDrawConfig, ...] = ()
    stage: StageSection = Field(default_factory=StageSection)  # the games after draws
    users: tuple[UserConfig, ...] = ()
    logging: LoggingConfig = Field(default_factory=LoggingConfig)
    witness: WitnessConfig | None = None

    _source: str = PrivateAttr(default="<config>")
    _calendar_draws: tuple[TicketDrawConfig, ...] = PrivateAttr(default=())
    _draw_keys: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="before")
    @classmethod
    def _client_id_from_site(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        site, mqtt = data.get("site"), data.get("mqtt", {})
        if (
            isinstance(site, dict)
            and isinstance(site.get("id"), str)
            and isinstance(mqtt, dict)
            and "client_id" not in mqtt
        ):
            return {**data, "mqtt": {**mqtt, "client_id": f"raps-{site['id']}"}}
        return data

    @model_validator(mode="after")
    def _cross_checks(self) -> Config:
        problems: list[tuple[str, str]] = []
        problems += duplicates("promotions", [p.id for p in self.promotion_entries])
        problems += duplicates("sessions", [s.id for s in self.sessions])
        problems += duplicates("users", [u.name for u in self.users], what="name")
        promos = {p.id: p for p in self.promotion_entries}
        for i, s in enumerate(self.sessions):
            promo = promos.get(s.promotion)
            if promo is None:
                known = ", ".join(repr(k) for k in promos)
                problems.append(
                    (
                        f"sessions[{i}].promotion",
                        f"no promotion has id {s.promotion!r} (ids: {known})",
                    )
                )
            else:
                for kind in ("slots", "tables"):
                    if getattr(s.quotas, kind) and kind not in promo.pool_kinds:
                        problems.append(
                            (
                                f"sessions[{i}].quotas.{kind}",
                                f"promotion {promo.id!r} has no {kind} pool "
                                f"(pool_kinds = {list(promo.pool_kinds)})",
                            )
                        )
            gap = missing_local_time(s.starts, self.site.timezone)
            if gap is not None:
                problems.append((f"sessions[{i}].starts", gap))
            if s.ends is not None:
                end_gap = missing_local_time(s.ends, self.site.timezone)
                if end_gap is not None:
                    problems.append((f"sessions[{i}].ends", end_gap))
                elif gap is None and site_time(s.ends, self.site.timezone) <= site_time(
                    s.starts, self.site.timezone
                ):
                    problems.append(
                        (f"sessions[{i}].ends", f"must be after starts ({s.starts:%Y-%m-%d %H:%M})")
                    )
        if not problems:
            problems += self._schedule_problems()
        problems += self._layout_references()
        problems += self._sas_references()
        problems += self._ticket_references()
        if not problems:
            problems += stage_problems(self.stage, self.ticket_plan(), self.site.timezone)
        if problems:
            raise key_problems(problems)
        return self

    def _schedule_problems(self) -> list[tuple[str, str]]:
        """The schedule the config seeds: promotions, periods, calendars, the sessions."""
        try:
            self.seed_schedule(self.new_schedule(), datetime.now(UTC))
        except ScheduleError as e:
            return [(e.key, e.reason)]
        return []

    def schedule_facts(self) -> dict[str, PromotionFacts]:
        return schedule_facts(self.promotion_entries, self.site.timezone)

    def new_schedule(self, records: Sequence[Record] = ()) -> Schedule:
        """The schedule `records` make, for this site (its zone and the floor's areas)."""
        areas = frozenset(self.layout().areas())
        return Schedule.replay(self.schedule_facts(), records, tz=self.site.timezone, areas=areas)

    def seed_schedule(
        self, schedule: Schedule, at: datetime, taken: Collection[str] = ()
    ) -> list[Record]:
        """Add what this config has and `schedule` lacks (raps.config.schedule)."""
        return seed(
            schedule,
            self.promotion_entries,
            self.sessions,
            self.site.timezone,
            seeding_command(at),
            source=self._source,
            taken=taken,
            programs=self.ticket_programs,
        )

    def seeds_a_plan(self, schedule: Schedule) -> bool:
        """Whether `seed_schedule` needs `taken` (a promotion's plan to set)."""
        return seeds_a_plan(schedule, self.promotion_entries)

    def check_ticket_calendar(
        self,
        calendars: Mapping[str, Sequence[Mapping[str, Any]]],
        program_id: str,
        index: int,
        entry: Mapping[str, Any],
    ) -> Config:
        """This config with `calendars` and one of them set (or added, at the end): a
        ScheduleError naming the field of the entry (``calendar.moved[0].to``), or the
        key of another entry it breaks, when it cannot be."""
        programs = {p.id: i for i, p in enumerate(self.ticket_programs)}
        if program_id not in programs:
            known = ", ".join(repr(p) for p in programs) or "none"
            raise ScheduleError("program_id", f"no ticket program {program_id!r} ({known})")
        given = {pid: list(v) for pid, v in calendars.items()}
        have = given.setdefault(program_id, [])
        have[index : index + 1] = [dict(entry)]
        try:
            return self.with_ticket_calendars(given)
        except KeyedError as e:
            mine = f"ticket_programs[{programs[program_id]}].calendars[{index}]."
            raise ScheduleError(e.key.removeprefix(mine), str(e)) from None

    def with_ticket_calendars(self, calendars: Mapping[str, Sequence[Mapping[str, Any]]]) -> Config:
        """This config with the ticket programs' calendars the schedule holds (by program
        id; a program it does not name keeps its own), checked as the config would be:
        a KeyedError names the first problem (``ticket_programs[0].calendars[1]...``)."""
        programs = []
        for i, p in enumerate(self.ticket_programs):
            given = calendars.get(p.id)
            if given is None:
                programs.append(p)
                continue
            made = []
            for k, entry in enumerate(given):
                try:
                    made.append(DrawCalendarConfig.model_validate(entry))
                except ValidationError as e:
                    first = e.errors()[0]
                    field = ".".join(str(x) for x in first["loc"])
                    raise KeyedError(f"ticket_programs[{i}].calendars[{k}].{field}",
                                     first["msg"]) from None  # fmt: skip
            programs.append(p.model_copy(update={"calendars": tuple(made)}))
        new = self.model_copy(update={"ticket_programs": tuple(programs)})
        problems = new._ticket_references()
        if not problems:
            problems = stage_problems(new.stage, new.ticket_plan(), self.site.timezone)
        if problems:
            raise KeyedError(*problems[0])
        return new

    def _ticket_references(self) -> list[tuple[str, str]]:
        """The ticket sections, checked among themselves and then as the core's plan; the
        programs' calendars make their draws first (kept beside the listed ones)."""
        tz = self.site.timezone
        made, keys, problems = calendar_draws(self.ticket_programs, tz)
        self._calendar_draws = tuple(made)
        self._draw_keys = (*(f"ticket_draws[{j}]" for j in range(len(self.ticket_draws))), *keys)
        programs, draws = self.ticket_programs, self.all_ticket_draws()
        problems += ticket_problems(programs, draws, self.promotions_by_id(), tz, self._draw_keys)
        if not problems:
            try:
                build_plan(programs, draws, tz, self._draw_keys)
            except KeyedError as e:
                problems.append((e.key, str(e)))
        return problems

    def all_ticket_draws(self) -> tuple[TicketDrawConfig, ...]:
        """Every ticket draw: those listed in [[ticket_draws]], then those the programs'
        calendars make ([[ticket_programs.calendars]])."""
        return (*self.ticket_draws, *self._calendar_draws)

    def _sas_references(self) -> list[tuple[str, str]]:
        """SAS channels and Modbus gateways name machines of the floor, each once only."""
        problems = duplicates("sources.sas", [c.name for c in self.sources.sas], what="name")
        problems += duplicates("sources.modbus", [g.name for g in self.sources.modbus], what="name")
        machines = self.layout().machines
        seen: dict[str, str] = {}
        feeds: list[tuple[str, int, str, Sequence[Any]]] = [
            ("sas", i, ch.name, ch.machines) for i, ch in enumerate(self.sources.sas)
        ]
        feeds += [("modbus", i, g.name, g.machines) for i, g in enumerate(self.sources.modbus)]
        for kind, i, name, listed in feeds:
            for j, m in enumerate(listed):
                key = f"sources.{kind}[{i}].machines[{j}].machine"
                if m.machine not in machines:
                    problems.append((key, f"no machine {m.machine!r} on the floor"))
                elif m.machine in seen:
                    problems.append((key, f"{m.machine!r} is already fed by {seen[m.machine]}"))
                else:
                    seen[m.machine] = f"{kind} {name}"
        return problems

    def _layout_references(self) -> list[tuple[str, str]]:
        """Areas and game types named in rules must exist, or a typo silently does nothing."""
        layout = self.layout()
        areas = layout.areas()
        games = {
            "slot_overrides": {m.game_type for m in layout.machines.values()},
            "table_overrides": {t.game_type for t in layout.tables.values()},
        }
        known = ", ".join(repr(a) for a in sorted(areas))
        problems: list[tuple[str, str]] = []
        for i, p in enumerate(self.promotion_entries):
            for field in ("areas_included", "areas_excluded"):
                for j, area in enumerate(getattr(p, field) or ()):
                    if area not in areas:
                        problems.append(
                            (
                                f"promotions[{i}].{field}[{j}]",
                                f"no machine or table is in area {area!r} (areas: {known})",
                            )
                        )
        for field, game_types in games.items():
            for key in getattr(self.earn, field):
                kind, _, name = key.partition(":")
                path = f"earn.{field}.{key_part(key)}"
                if kind == "area" and name not in areas:
                    problems.append((path, f"no machine or table is in area {name!r}"))
                elif kind == "game" and name not in game_types:
                    what = "machine" if field == "slot_overrides" else "table"
                    problems.append((path, f"no {what} has game_type {name!r}"))
        return problems

    # --- the core's settings ------------------------------------------------------------

    @property
    def source(self) -> str:
        """The file this config was read from (for messages)."""
        return self._source

    def _core(self, key: str, build: typing.Callable[[], _T]) -> _T:
        try:
            return build()
        except KeyedError as e:
            raise ConfigError(self._source, [Problem(e.key, str(e))]) from e
        except ValueError as e:
            raise ConfigError(self._source, [Problem(key, str(e))]) from e

    def promotions_by_id(self) -> dict[str, PromotionConfig]:
        return {p.id: p for p in self.promotion_entries}

    def promotions(self) -> list[Promotion]:
        """The core's Promotion for every [[promotions]] entry, windows in site time."""
        tz = self.site.timezone
        out = []
        for i, p in enumerate(self.promotion_entries):
            out.append(self._core(f"promotions[{i}]", functools.partial(core_promotion, p, tz)))
        return out

    def earn_rules(self) -> EarnRules:
        e = self.earn
        return self._core(
            "earn",
            lambda: EarnRules(
                points_source=e.points_source,
                slot_wager_per_point=e.slot_wager_per_point,
                table_bet_minutes_per_point=e.table_bet_minutes_per_point,
                slot_overrides=dict(e.slot_overrides),
                table_overrides=dict(e.table_overrides),
            ),
        )

    def ticket_plan(self) -> TicketPlan:
        """The core's TicketPlan of every [[ticket_programs]] and [[ticket_draws]] entry,
        in the site's time zone (an empty plan when there are none)."""
        tz = self.site.timezone
        draws = self.all_ticket_draws()
        keys = self._draw_keys if len(self._draw_keys) == len(draws) else None
        return self._core("ticket_draws", lambda: build_plan(self.ticket_programs, draws, tz, keys))

    def stage_plan(self) -> StagePlan:
        """The game that follows each ticket draw, the safe's rules and the car draws."""
        return self._core("stage", lambda: resolve(self.stage, self.ticket_plan(),
                                                   self.site.timezone))  # fmt: skip

    def session(self, session_id: str) -> SessionConfig:
        """The [[sessions]] entry with this id (KeyError if there is none)."""
        for s in self.sessions:
            if s.id == session_id:
                return s
        raise KeyError(session_id)

    def session_rules(self, session: SessionConfig | str) -> SessionRules:
        s = self.session(session) if isinstance(session, str) else session
        return self._core(
            f"sessions[{self._index(s)}]",
            lambda: SessionRules(
                quotas={PoolKind.SLOTS: s.quotas.slots, PoolKind.TABLES: s.quotas.tables},
                claim_seconds=s.claim_seconds,
                exclude_no_shows=s.exclude_no_shows,
                exclude_voided=s.exclude_voided,
                window=None
                if s.ends is None
                else (self.session_start(s), site_time(s.ends, self.site.timezone)),
                claim_starts=ClaimStart(s.claim_starts),
                max_en_route_seconds=s.max_en_route_seconds or None,
            ),
        )

    def session_start(self, session: SessionConfig | str) -> datetime:
        """When the session starts, always timezone-aware (naive means site local time)."""
        s = self.session(session) if isinstance(session, str) else session
        return site_time(s.starts, self.site.timezone)

    def layout(self) -> FloorLayout:
        """The floor's machines and tables: the listed ones, or the simulator's."""
        f = self.floor
        if f.simulate is not None:
            from raps.floorsim import demo_layout

            sim = f.simulate
            return self._core("floor.simulate", lambda: demo_layout(sim.machines, sim.tables))
        return self._core(
            "floor",
            lambda: FloorLayout(
                [Machine(m.id, m.area, m.bank, m.number, m.game_type) for m in f.machines],
                [Table(t.id, t.area, t.game_type, t.seats) for t in f.tables],
            ),
        )

    def _index(self, s: SessionConfig) -> int:
        return next((i for i, x in enumerate(self.sessions) if x is s), -1)


_TOML_POS = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")


def parse_config(
    text: str, source: str = "<string>", env: Mapping[str, str] | None = None
) -> Config:
    """Validate TOML text; `source` names it in errors, `env` replaces os.environ."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        msg = str(e)
        m = _TOML_POS.search(msg)
        line, col = (int(m[1]), int(m[2])) if m else (None, None)
        reason = _TOML_POS.sub("", msg)
        raise ConfigError(
            source, [Problem("", f"TOML syntax error: {reason}")], line=line, column=col
        ) from None
    context = {"env": os.environ if env is None else env}
    try:
        config = Config.model_validate(data, context=context)
    except ValidationError as e:
        raise from_validation(source, e, Config) from None
    config._source = source
    return config


def load_config(path: str | Path, env: Mapping[str, str] | None = None) -> Config:
    """Read and validate a config file; any problem raises ConfigError naming the file."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(source, [Problem("", "no such file")]) from None
    except UnicodeDecodeError as e:
        raise ConfigError(source, [Problem("", f"not UTF-8 text ({e.reason})")]) from None
    except OSError as e:
        raise ConfigError(source, [Problem("", f"cannot read: {e.strerror}")]) from None
    return parse_config(text, source, env)

"""`[floor]` and `[sources]`: the machines and tables (listed or simulated), their map
positions, and the SAS channels and Modbus gateways the daemon polls in-process.

The SAS and Modbus sections are the adapters' own models; this composes them.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator, model_validator

from adapters.modbus.config import ModbusGatewayConfig
from adapters.sas.config import SasChannelConfig
from adapters.wire.settings import StrictModel, key_problems
from raps.config.common import duplicates


class SimulateConfig(StrictModel):
    """A simulated floor for the demo and tests (raps.floorsim)."""

    machines: int = Field(gt=0)
    tables: int = Field(ge=0)
    players: int = Field(gt=0)
    events_per_second: float = Field(default=20.0, gt=0)
    seed: int | None = None
    warmup_seconds: float = Field(default=1200.0, ge=0)
    # the first N machines also play through simulated SAS machines and the real poller
    sas_machines: int = Field(default=0, ge=0)
    # every simulated player has a photo, <photo_base_url><card>.png (the ID check; list
    # its origin in [directory] photo_origins)
    photo_base_url: str | None = Field(default=None, pattern=r"^https?://\S+$", max_length=400)


def _str_or_int(v: Any) -> Any:
    """Machine banks and numbers are labels; `number = 12` is as good as `number = "12"`."""
    return str(v) if isinstance(v, int) and not isinstance(v, bool) else v


class MachineConfig(StrictModel):
    """One slot machine: where security walks to when it wins."""

    id: str = Field(min_length=1)
    area: str = Field(min_length=1)
    bank: str = Field(min_length=1)
    number: str = Field(min_length=1)
    game_type: str = Field(default="slot", min_length=1)
    # where it stands on the floor map (metres from the plan's top-left corner); optional,
    # but given for every machine and table or for none
    x: float | None = None
    y: float | None = None

    @field_validator("bank", "number", mode="before")
    @classmethod
    def _labels(cls, v: Any) -> Any:
        return _str_or_int(v)


class TableConfig(StrictModel):
    """One gaming table and its number of seats."""

    id: str = Field(min_length=1)
    area: str = Field(min_length=1)
    game_type: str = Field(default="table", min_length=1)
    seats: int = Field(default=7, ge=1)
    # the table's centre on the floor map (metres), like MachineConfig.x / .y
    x: float | None = None
    y: float | None = None


class AreaConfig(StrictModel):
    """An area's rectangle on the floor map (metres), for a floor with positions."""

    name: str = Field(min_length=1)
    x: float
    y: float
    width: float = Field(gt=0)
    height: float = Field(gt=0)


class FloorConfig(StrictModel):
    """The floor layout, simulated or listed, and the slot idle limit."""

    idle_seconds: float = Field(default=120.0, gt=0)
    # a card never in the directory, off the floor and without points today, is forgotten
    # this long after it was last seen (selector.floor.Floor)
    prune_unknown_after_seconds: float = Field(default=3600.0, gt=0)
    simulate: SimulateConfig | None = None
    machines: tuple[MachineConfig, ...] = ()
    tables: tuple[TableConfig, ...] = ()
    areas: tuple[AreaConfig, ...] = ()

    @model_validator(mode="after")
    def _one_source(self) -> FloorConfig:
        listed = bool(self.machines or self.tables)
        if (self.simulate is None) == (not listed):
            raise key_problems([("", "give either floor.simulate or floor.machines/floor.tables")])
        problems = duplicates("machines", [m.id for m in self.machines], shown="floor.machines")
        problems += duplicates("tables", [t.id for t in self.tables], shown="floor.tables")
        problems += self._positions()
        if problems:
            raise key_problems(problems)
        return self

    @property
    def positioned(self) -> bool:
        """Whether the listed floor gives map positions (x, y) for its machines and tables."""
        placed: list[MachineConfig | TableConfig] = [*self.machines, *self.tables]
        return any(i.x is not None for i in placed)

    def _positions(self) -> list[tuple[str, str]]:
        """Map positions: x with y, on every machine and table or on none; areas need them."""
        problems: list[tuple[str, str]] = []
        items: list[tuple[str, int, MachineConfig | TableConfig]] = [
            ("machines", i, m) for i, m in enumerate(self.machines)
        ]
        items += [("tables", i, t) for i, t in enumerate(self.tables)]
        for section, i, item in items:
            if (item.x is None) != (item.y is None):
                missing = "y" if item.y is None else "x"
                problems.append((f"{section}[{i}].{missing}", "missing (x and y go together)"))
        if problems:
            return problems
        if self.positioned:
            for section, i, item in items:
                if item.x is None:
                    problems.append(
                        (
                            f"{section}[{i}]",
                            "has no x, y: give map positions for every machine and table "
                            "or for none",
                        )
                    )
                    break
        if self.areas and not self.positioned:
            problems.append(
                ("areas", "area rectangles need x, y on the floor's machines and tables")
            )
        problems += duplicates("areas", [a.name for a in self.areas], what="name",
                                shown="floor.areas")  # fmt: skip
        known = {m.area for m in self.machines} | {t.area for t in self.tables}
        for i, a in enumerate(self.areas):
            if a.name not in known:
                problems.append((f"areas[{i}].name", f"no machine or table is in area {a.name!r}"))
        return problems


class SourcesConfig(StrictModel):
    """Floor sources the daemon runs in-process (MQTT ingest is under [mqtt])."""

    sas: tuple[SasChannelConfig, ...] = ()
    modbus: tuple[ModbusGatewayConfig, ...] = ()
    # where SAS channels and Modbus gateways keep their last meters, to rebuild games
    # missed while down
    state_dir: str = Field(default="var/sas", min_length=1)

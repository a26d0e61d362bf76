"""The site's floor layout: which machines and tables exist and where they stand.

A pick must tell security where to walk, so every machine and table is known with
its area and position; events naming anything else are rejected, not guessed at.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Machine:
    machine: str
    area: str
    bank: str
    number: str
    game_type: str = "slot"


@dataclass(frozen=True, slots=True)
class Table:
    table: str
    area: str
    game_type: str = "table"
    seats: int = 7


@dataclass(frozen=True, slots=True)
class Location:
    """Where a pick is: a slot machine (bank, number) or a table seat."""

    kind: str  # "slots" or "tables"
    area: str
    machine: str | None = None
    bank: str | None = None
    number: str | None = None
    table: str | None = None
    seat: int | None = None

    def describe(self) -> str:
        if self.kind == "slots":
            return f"{self.area} / bank {self.bank} / machine {self.number}"
        return f"{self.area} / table {self.table} / seat {self.seat}"

    def to_dict(self) -> dict[str, str | int | None]:
        return {
            "kind": self.kind,
            "area": self.area,
            "machine": self.machine,
            "bank": self.bank,
            "number": self.number,
            "table": self.table,
            "seat": self.seat,
        }


class FloorLayout:
    """Lookup of machines and tables by id."""

    __slots__ = ("machines", "tables")

    def __init__(self, machines: Iterable[Machine] = (), tables: Iterable[Table] = ()) -> None:
        self.machines: dict[str, Machine] = {}
        self.tables: dict[str, Table] = {}
        for m in machines:
            if m.machine in self.machines:
                raise ValueError(f"machine {m.machine!r} is listed twice in the layout")
            self.machines[m.machine] = m
        for t in tables:
            if t.table in self.tables:
                raise ValueError(f"table {t.table!r} is listed twice in the layout")
            if t.seats < 1:
                raise ValueError(f"table {t.table!r} must have at least one seat")
            self.tables[t.table] = t

    def areas(self) -> set[str]:
        return {m.area for m in self.machines.values()} | {t.area for t in self.tables.values()}

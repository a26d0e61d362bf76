"""Ticket programs, draws and the plan that checks them as a whole.

A program says how tickets are earned (points per ticket by tier over an earning
period, complimentary and bonus tickets); a draw says when it happens, when its
tickets can be entered and which bin it draws from.  A ticket is valid for one bin
only; several draws may share a bin (000: the 21:30 vault draw uses that day's
tickets).  The plan derives each bin's earning interval once, so the ledger never
computes calendars on the ingest path.  Every inconsistency is a ValueError that
names the field.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from itertools import pairwise
from types import MappingProxyType

from selector.events import Tier
from selector.tickets.period import DEFAULT_TZ, PeriodRule, zone_of

ALL_TIERS = frozenset(Tier)
MILLI = 1000  # points are integer milli-points, as in selector/floor.py


def _tier_map(name: str, values: Mapping[Tier, int], minimum: int) -> Mapping[Tier, int]:
    """A read-only copy keyed by Tier, every value an int >= minimum."""
    out: dict[Tier, int] = {}
    for key, value in values.items():
        try:
            tier = Tier(key)
        except ValueError:
            raise ValueError(f"{name}: unknown tier {key!r}") from None
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ValueError(f"{name}[{tier.value}] must be an integer >= {minimum}, not {value!r}")
        out[tier] = value
    return MappingProxyType(out)


def _aware(name: str, dt: datetime) -> None:
    if dt.tzinfo is None or dt.utcoffset() is None:
        raise ValueError(f"{name} must be timezone-aware")


@dataclass(frozen=True, slots=True, kw_only=True)
class TicketProgram:
    """How one promotion's members earn tickets for its draws."""

    program_id: str
    promotion_id: str
    period: PeriodRule
    rates: Mapping[Tier, int] = field(default_factory=dict)  # points per ticket
    complimentary: Mapping[Tier, int] = field(default_factory=dict)  # per bin
    app_bonus: Mapping[Tier, int] = field(default_factory=dict)  # per bin, app-registered
    raps_winner_bonus: Mapping[Tier, int] = field(default_factory=dict)  # per RAPS win
    cap: int | None = None  # most tickets a card can enter in one bin; None: uncapped
    tiers: frozenset[Tier] = ALL_TIERS
    name: str = ""

    def __post_init__(self) -> None:
        if not self.program_id:
            raise ValueError("program_id must not be empty")
        if not self.promotion_id:
            raise ValueError(f"program {self.program_id!r}: promotion_id must not be empty")
        tiers = frozenset(Tier(t) for t in self.tiers)
        if not tiers:
            raise ValueError(f"program {self.program_id!r}: tiers must not be empty")
        object.__setattr__(self, "tiers", tiers)
        where = f"program {self.program_id!r}"
        for name, minimum in (
            ("rates", 1), ("complimentary", 0), ("app_bonus", 0), ("raps_winner_bonus", 0),
        ):  # fmt: skip
            values = _tier_map(f"{where}: {name}", getattr(self, name), minimum)
            outside = sorted(t.value for t in values if t not in tiers)
            if outside:
                raise ValueError(f"{where}: {name} names tiers not in tiers: {outside}")
            object.__setattr__(self, name, values)
        if self.cap is not None and (isinstance(self.cap, bool) or self.cap < 1):
            raise ValueError(f"{where}: cap must be None (uncapped) or >= 1, not {self.cap!r}")

    def divisors(self) -> Mapping[Tier, int]:
        """Milli-points per ticket for each tier that earns tickets from points."""
        return MappingProxyType({t: r * MILLI for t, r in self.rates.items()})


@dataclass(frozen=True, slots=True, kw_only=True)
class TicketDraw:
    """One draw: when it happens, its entry window [opens, closes) and its bin."""

    draw_id: str
    program_id: str
    at: datetime
    opens: datetime
    closes: datetime
    bin_id: str = ""  # "": the draw's own bin, named by draw_id
    winners: int = 5
    name: str = ""

    def __post_init__(self) -> None:
        if not self.draw_id:
            raise ValueError("draw_id must not be empty")
        where = f"draw {self.draw_id!r}"
        for name in ("at", "opens", "closes"):
            _aware(f"{where}: {name}", getattr(self, name))
        if self.closes <= self.opens:
            raise ValueError(f"{where}: closes ({self.closes}) must be after opens ({self.opens})")
        if self.closes > self.at:
            raise ValueError(
                f"{where}: closes ({self.closes}) must not be after the draw ({self.at})"
            )
        if self.winners < 1:
            raise ValueError(f"{where}: winners must be >= 1, not {self.winners}")
        if not self.bin_id:
            object.__setattr__(self, "bin_id", self.draw_id)


@dataclass(frozen=True, slots=True)
class TicketBin:
    """What the ledger needs of a bin, derived once by the plan (times in epoch seconds)."""

    bin_id: str
    program: TicketProgram
    draws: tuple[TicketDraw, ...]  # by draw time
    start: float  # earning interval [start, end)
    end: float
    windows: tuple[tuple[float, float], ...]  # entry windows [opens, closes) of its draws
    divisors: Mapping[Tier, int]

    def entry_open(self, epoch: float) -> bool:
        return any(opens <= epoch < closes for opens, closes in self.windows)


@dataclass(frozen=True, slots=True, init=False)
class TicketPlan:
    """Every ticket program and draw of a site, checked together."""

    programs: tuple[TicketProgram, ...]
    draws: tuple[TicketDraw, ...]
    tz: str  # the zone records are stamped in
    bins: Mapping[str, TicketBin] = field(repr=False, compare=False)
    _programs: Mapping[str, TicketProgram] = field(repr=False, compare=False)
    _draws: Mapping[str, TicketDraw] = field(repr=False, compare=False)

    def __init__(
        self,
        programs: Iterable[TicketProgram],
        draws: Iterable[TicketDraw],
        tz: str = DEFAULT_TZ,
    ) -> None:
        zone_of(tz, "plan.tz")
        set_ = object.__setattr__
        set_(self, "programs", tuple(programs))
        set_(self, "draws", tuple(sorted(draws, key=lambda d: (d.at, d.draw_id))))
        set_(self, "tz", tz)
        set_(self, "_programs", MappingProxyType(self._index_programs()))
        set_(self, "_draws", MappingProxyType(self._index_draws()))
        set_(self, "bins", MappingProxyType(self._build_bins()))
        self._check_overlaps()

    def _index_programs(self) -> dict[str, TicketProgram]:
        out: dict[str, TicketProgram] = {}
        for i, p in enumerate(self.programs):
            if p.program_id in out:
                raise ValueError(f"programs[{i}].program_id: {p.program_id!r} is defined twice")
            out[p.program_id] = p
        return out

    def _index_draws(self) -> dict[str, TicketDraw]:
        out: dict[str, TicketDraw] = {}
        for d in self.draws:
            if d.draw_id in out:
                raise ValueError(f"draws: draw_id {d.draw_id!r} is defined twice")
            if d.program_id not in self._programs:
                raise ValueError(
                    f"draw {d.draw_id!r}: program_id: unknown program {d.program_id!r}"
                )
            out[d.draw_id] = d
        return out

    def _build_bins(self) -> dict[str, TicketBin]:
        members: dict[str, list[TicketDraw]] = {}
        for d in self.draws:
            members.setdefault(d.bin_id, []).append(d)
        bins: dict[str, TicketBin] = {}
        for bin_id, draws in members.items():
            other = self._draws.get(bin_id)
            if other is not None and other.bin_id != bin_id:
                raise ValueError(
                    f"draw {bin_id!r}: draw_id is also the bin_id of other draws"
                    f" ({', '.join(d.draw_id for d in draws)}); a draw id may name only its own bin"
                )
            programs = {d.program_id for d in draws}
            if len(programs) > 1:
                raise ValueError(
                    f"bin_id {bin_id!r} is shared by draws of programs {sorted(programs)};"
                    " a bin belongs to one program"
                )
            program = self._programs[draws[0].program_id]
            intervals = []
            for d in draws:
                try:
                    intervals.append(program.period.interval(d.at))
                except ValueError as exc:
                    raise ValueError(
                        f"draw {d.draw_id!r}: program {program.program_id!r}: {exc}"
                    ) from None
            if len({s for s, _ in intervals}) > 1:
                raise ValueError(
                    f"bin_id {bin_id!r}: its draws ({', '.join(d.draw_id for d in draws)}) earn"
                    " from different period starts; a bin's tickets come from one period"
                )
            bins[bin_id] = TicketBin(
                bin_id=bin_id,
                program=program,
                draws=tuple(draws),
                start=intervals[0][0],
                end=max(e for _, e in intervals),
                windows=tuple((d.opens.timestamp(), d.closes.timestamp()) for d in draws),
                divisors=program.divisors(),
            )
        return bins

    def _check_overlaps(self) -> None:
        """Fixed windows do not roll over: no two bins of such a program may share points."""
        for p in self.programs:
            if not p.period.exclusive:
                continue
            spans = sorted(
                (b.start, b.end, b.bin_id)
                for b in self.bins.values()
                if b.program.program_id == p.program_id
            )
            for (s1, e1, b1), (s2, e2, b2) in pairwise(spans):
                if s2 < e1:
                    raise ValueError(
                        f"program {p.program_id!r}: period: bins {b1!r} ({self._span(s1, e1)}) and"
                        f" {b2!r} ({self._span(s2, e2)}) earn from overlapping periods;"
                        " fixed_windows do not roll over, so one window feeds one bin"
                    )

    def _span(self, start: float, end: float) -> str:
        zone = zone_of(self.tz)
        a, b = (datetime.fromtimestamp(t, zone).isoformat(timespec="minutes") for t in (start, end))
        return f"{a} to {b}"

    def program(self, program_id: str) -> TicketProgram:
        try:
            return self._programs[program_id]
        except KeyError:
            raise KeyError(f"unknown ticket program {program_id!r}") from None

    def draw(self, draw_id: str) -> TicketDraw:
        try:
            return self._draws[draw_id]
        except KeyError:
            raise KeyError(f"unknown draw {draw_id!r}") from None

    def resolve(self, bin_or_draw: str) -> TicketBin | None:
        """The bin named by a bin id or by one of its draws' ids; None when unknown."""
        b = self.bins.get(bin_or_draw)
        if b is None:
            d = self._draws.get(bin_or_draw)
            b = self.bins[d.bin_id] if d is not None else None
        return b

    def next_bin(self, program_id: str, epoch: float) -> TicketBin | None:
        """The bin of the program's first draw whose entry window is still to close."""
        for d in self.draws:
            if d.program_id == program_id and d.closes.timestamp() > epoch:
                return self.bins[d.bin_id]
        return None

"""The floor map of the dispatch screen: an SVG drawn from the site's floor layout.

Where the config gives positions (`x`, `y` on every machine and table, optional area
rectangles), the map puts each machine and table there.  Otherwise — a simulated floor,
or a listed one without positions — it lays the floor out as a deterministic grid: each
area a block with a label; in it the banks as back-to-back double rows of machines, in
the order the layout lists them, and the tables (with numbered seats) below; the blocks
shelf-packed to the wall screen's 16:9.  The same layout always gives the same map.

Every machine carries `data-machine` (and `data-bank`, `data-number`), every table
`data-table` and every seat `data-table` + `data-seat`, so the page highlights a winner's
spot by its location without knowing any coordinates.  Units are metres (1 = one machine).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

from raps.config import Config
from selector.layout import FloorLayout

MACHINE = 1.0  # a machine's footprint, metres
BANK_GAP_X = 2.0  # aisle between banks side by side
BANK_GAP_Y = 2.4  # aisle between rows of banks (their labels sit in it)
TABLE_W = 4.0
TABLE_H = 2.2
TABLE_CELL_W = TABLE_W + 2.4
TABLE_CELL_H = TABLE_H + 3.6  # seats hang below the table top
SEAT_R = 0.42
AREA_PAD = 1.5
LABEL_H = 3.2  # room for the area's name above its content
AREA_GAP = 3.0
ASPECT = 16 / 9


@dataclass(frozen=True, slots=True)
class AreaBox:
    name: str
    x: float
    y: float
    w: float
    h: float


@dataclass(frozen=True, slots=True)
class MachineSpot:
    machine: str
    area: str
    bank: str
    number: str
    x: float  # centre
    y: float


@dataclass(frozen=True, slots=True)
class TableSpot:
    table: str
    area: str
    seats: int
    x: float  # centre of the table top
    y: float


@dataclass(frozen=True, slots=True)
class BankLabel:
    bank: str
    x: float
    y: float


@dataclass(frozen=True, slots=True)
class FloorMap:
    areas: tuple[AreaBox, ...]
    machines: tuple[MachineSpot, ...]
    tables: tuple[TableSpot, ...]
    banks: tuple[BankLabel, ...]
    x: float
    y: float
    w: float
    h: float


def seat_position(t: TableSpot, seat: int) -> tuple[float, float]:
    """Seats on an arc below the table top; seat 1 on the right (the dealer's left)."""
    theta = math.pi * (seat - 0.5) / t.seats
    rx, ry = TABLE_W / 2 + 0.3, TABLE_H / 2 + 1.1
    return t.x + rx * math.cos(theta), t.y + ry * math.sin(theta) + 0.2


# --------------------------------------------------------------------- the layout


def _areas_in_order(layout: FloorLayout) -> list[str]:
    seen: dict[str, None] = {}
    for m in layout.machines.values():
        seen.setdefault(m.area, None)
    for t in layout.tables.values():
        seen.setdefault(t.area, None)
    return list(seen)


def _grid_area(
    name: str, layout: FloorLayout
) -> tuple[float, float, list[MachineSpot], list[TableSpot], list[BankLabel]]:
    """One area laid out from (0, 0): its size and its spots."""
    banks: dict[str, list[tuple[str, str]]] = {}
    for m in layout.machines.values():
        if m.area == name:
            banks.setdefault(m.bank, []).append((m.machine, m.number))
    tables = [t for t in layout.tables.values() if t.area == name]
    machines: list[MachineSpot] = []
    labels: list[BankLabel] = []
    top = LABEL_H
    width = 0.0
    if banks:
        cols = max(math.ceil(len(ms) / 2) for ms in banks.values())
        cell_w, cell_h = cols * MACHINE + BANK_GAP_X, 2 * MACHINE + BANK_GAP_Y
        per_row = max(1, math.ceil(math.sqrt(len(banks) * cell_h / cell_w * ASPECT)))
        for i, (bank, ms) in enumerate(banks.items()):
            bx = AREA_PAD + (i % per_row) * cell_w
            by = top + (i // per_row) * cell_h + BANK_GAP_Y * 0.6
            labels.append(BankLabel(bank, bx, by - 0.35))
            half = math.ceil(len(ms) / 2)
            for j, (machine, number) in enumerate(ms):
                row, col = divmod(j, half)
                machines.append(
                    MachineSpot(
                        machine,
                        name,
                        bank,
                        number,
                        bx + (col + 0.5) * MACHINE,
                        by + (row + 0.5) * MACHINE,
                    )
                )
        rows = math.ceil(len(banks) / per_row)
        width = min(len(banks), per_row) * cell_w - BANK_GAP_X
        top += rows * cell_h
    spots: list[TableSpot] = []
    if tables:
        if width > 0:
            per_row = max(1, int((width + 2.4) // TABLE_CELL_W))
        else:
            per_row = max(1, math.ceil(math.sqrt(len(tables) * TABLE_CELL_H / TABLE_CELL_W)))
        for i, t in enumerate(tables):
            cx = AREA_PAD + (i % per_row) * TABLE_CELL_W + TABLE_W / 2
            cy = top + (i // per_row) * TABLE_CELL_H + TABLE_H / 2 + 0.6
            spots.append(TableSpot(t.table, name, t.seats, cx, cy))
        width = max(width, min(len(tables), per_row) * TABLE_CELL_W - 2.4)
        top += math.ceil(len(tables) / per_row) * TABLE_CELL_H
    return width + 2 * AREA_PAD, top + AREA_PAD, machines, spots, labels


def _shelves(sizes: list[tuple[float, float]], target: float) -> list[tuple[float, float]]:
    """Top-left corners of blocks packed left to right in shelves `target` wide."""
    out: list[tuple[float, float]] = []
    x = y = shelf = 0.0
    for w, h in sizes:
        if x > 0 and x + w > target:
            x, y, shelf = 0.0, y + shelf + AREA_GAP, 0.0
        out.append((x, y))
        x += w + AREA_GAP
        shelf = max(shelf, h)
    return out


def _fill(sizes: list[tuple[float, float]], corners: list[tuple[float, float]]) -> float:
    """How much of a 16:9 screen the packed blocks' bounding box fills (0..1]."""
    w = max(x + s[0] for (x, _), s in zip(corners, sizes, strict=True))
    h = max(y + s[1] for (_, y), s in zip(corners, sizes, strict=True))
    screen_w = max(w, h * ASPECT)
    return (w * h) / (screen_w * screen_w / ASPECT)


def _grid(layout: FloorLayout) -> FloorMap:
    blocks = [(name, *_grid_area(name, layout)) for name in _areas_in_order(layout)]
    sizes = [(w, h) for _, w, h, *_ in blocks]
    # the shelf width that fills the wall screen best (widest block ... all in one row)
    candidates = sorted({sum(w + AREA_GAP for w, _ in sizes[:k]) for k in range(1, len(sizes) + 1)})
    candidates = [c for c in candidates if c >= max((w for w, _ in sizes), default=0)]
    target = max(candidates or [10.0], key=lambda t: (_fill(sizes, _shelves(sizes, t)), -t))
    corners = _shelves(sizes, target)
    areas: list[AreaBox] = []
    machines: list[MachineSpot] = []
    tables: list[TableSpot] = []
    banks: list[BankLabel] = []
    for (name, w, h, ms, ts, ls), (x, y) in zip(blocks, corners, strict=True):
        areas.append(AreaBox(name, x, y, w, h))
        machines += [MachineSpot(m.machine, name, m.bank, m.number, m.x + x, m.y + y) for m in ms]
        tables += [TableSpot(t.table, name, t.seats, t.x + x, t.y + y) for t in ts]
        banks += [BankLabel(b.bank, b.x + x, b.y + y) for b in ls]
    width = max((a.x + a.w for a in areas), default=10.0)
    height = max((a.y + a.h for a in areas), default=10.0)
    return FloorMap(tuple(areas), tuple(machines), tuple(tables), tuple(banks),
                    -1.0, -1.0, width + 2, height + 2)  # fmt: skip


def _positioned(cfg: Config) -> FloorMap:
    f = cfg.floor
    machines = tuple(
        MachineSpot(m.id, m.area, m.bank, m.number, float(m.x or 0), float(m.y or 0))
        for m in f.machines
    )
    tables = tuple(
        TableSpot(t.id, t.area, t.seats, float(t.x or 0), float(t.y or 0)) for t in f.tables
    )
    given = {a.name: AreaBox(a.name, a.x, a.y, a.width, a.height) for a in f.areas}
    areas: list[AreaBox] = []
    names = dict.fromkeys([*(m.area for m in machines), *(t.area for t in tables)])
    for name in names:
        if name in given:
            areas.append(given[name])
            continue
        xs = [m.x for m in machines if m.area == name] + [
            t.x + s * TABLE_W / 2 for t in tables if t.area == name for s in (-1, 1)
        ]
        ys = [m.y for m in machines if m.area == name] + [
            t.y + d for t in tables if t.area == name for d in (-TABLE_H / 2, TABLE_H / 2 + 1.6)
        ]
        x0, y0 = min(xs) - MACHINE / 2 - AREA_PAD, min(ys) - MACHINE / 2 - AREA_PAD - LABEL_H
        x1, y1 = max(xs) + MACHINE / 2 + AREA_PAD, max(ys) + MACHINE / 2 + AREA_PAD
        areas.append(AreaBox(name, x0, y0, x1 - x0, y1 - y0))
    banks: dict[str, list[MachineSpot]] = {}
    for m in machines:
        banks.setdefault(m.bank, []).append(m)
    labels = tuple(
        BankLabel(b, min(m.x for m in ms) - MACHINE / 2, min(m.y for m in ms) - MACHINE / 2 - 0.35)
        for b, ms in banks.items()
    )
    x0 = min(a.x for a in areas) - 1
    y0 = min(a.y for a in areas) - 1
    x1 = max(a.x + a.w for a in areas) + 1
    y1 = max(a.y + a.h for a in areas) + 1
    return FloorMap(tuple(areas), machines, tables, labels, x0, y0, x1 - x0, y1 - y0)


def build_map(cfg: Config) -> FloorMap:
    """The map of the configured floor: positions from the config, else a grid."""
    if cfg.floor.simulate is None and cfg.floor.positioned:
        return _positioned(cfg)
    return _grid(cfg.layout())


# ------------------------------------------------------------------------ the SVG


def _n(v: float) -> str:
    s = f"{v:.2f}".rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def _a(v: str) -> str:
    return escape(v, quote=True)


def _watermark_size(a: AreaBox) -> float:
    """The area's name, large and faint across it: readable across a room on a big floor."""
    return max(1.0, min(a.w / (0.62 * max(1, len(a.name))), a.h / 3))


def render_svg(fm: FloorMap) -> str:
    """The map as a standalone SVG document (the page inlines it to style and mark it)."""
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="floor-map" role="img" '
        f'aria-label="Floor map" viewBox="{_n(fm.x)} {_n(fm.y)} {_n(fm.w)} {_n(fm.h)}" '
        f'preserveAspectRatio="xMidYMid meet">',
        '<g class="areas">',
    ]
    for a in fm.areas:
        out.append(
            f'<g class="area" data-area="{_a(a.name)}">'
            f'<rect class="area-box" x="{_n(a.x)}" y="{_n(a.y)}" width="{_n(a.w)}" '
            f'height="{_n(a.h)}" rx="0.8"/>'
            f'<text class="area-watermark" x="{_n(a.x + a.w / 2)}" y="{_n(a.y + a.h / 2)}" '
            f'font-size="{_n(_watermark_size(a))}">{escape(a.name)}</text>'
            f'<text class="area-label" x="{_n(a.x + AREA_PAD)}" y="{_n(a.y + 2.2)}">'
            f"{escape(a.name)}</text></g>"
        )
    out.append('</g><g class="bank-labels">')
    for b in fm.banks:
        out.append(f'<text x="{_n(b.x)}" y="{_n(b.y)}">{escape(b.bank)}</text>')
    out.append('</g><g class="machines">')
    half = MACHINE * 0.45
    for m in fm.machines:
        out.append(
            f'<rect class="machine" data-machine="{_a(m.machine)}" data-bank="{_a(m.bank)}" '
            f'data-number="{_a(m.number)}" x="{_n(m.x - half)}" y="{_n(m.y - half)}" '
            f'width="{_n(2 * half)}" height="{_n(2 * half)}"/>'
        )
    out.append('</g><g class="tables">')
    for t in fm.tables:
        tid = _a(t.table)
        out.append(
            f'<g class="table" data-table="{tid}">'
            f'<rect class="table-top" x="{_n(t.x - TABLE_W / 2)}" y="{_n(t.y - TABLE_H / 2)}" '
            f'width="{_n(TABLE_W)}" height="{_n(TABLE_H)}" rx="1.1"/>'
            f'<text class="table-label" x="{_n(t.x)}" y="{_n(t.y + 0.35)}">{escape(t.table)}'
            "</text>"
        )
        for seat in range(1, t.seats + 1):
            sx, sy = seat_position(t, seat)
            out.append(
                f'<circle class="seat" data-table="{tid}" data-seat="{seat}" '
                f'cx="{_n(sx)}" cy="{_n(sy)}" r="{_n(SEAT_R)}"/>'
            )
        out.append("</g>")
    out.append('</g><g class="marks"></g></svg>')
    return "\n".join(out)

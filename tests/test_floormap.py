"""The dispatch floor map: drawn from the layout config, positions when given, else a grid."""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET

import pytest

from raps.config import Config, ConfigError, parse_config
from raps.floormap import MACHINE, build_map, render_svg, seat_position

SVG = "{http://www.w3.org/2000/svg}"


def config(floor: str) -> Config:
    return parse_config(
        f"""
[site]
id = "map"
[floor]
{floor}
[[promotions]]
id = "p"
""",
        source="map test",
    )


LISTED = """
[[floor.machines]]
id = "A1"
area = "Main <Floor> & \\"Co\\""
bank = "B1"
number = 1
x = 2.0
y = 3.0
[[floor.machines]]
id = "A2"
area = "Main <Floor> & \\"Co\\""
bank = "B1"
number = 2
x = 3
y = 3
[[floor.tables]]
id = "T1"
area = "Pit"
seats = 5
x = 20.0
y = 10.0
[[floor.areas]]
name = "Pit"
x = 14.0
y = 4.0
width = 12.0
height = 10.0
"""


def test_a_simulated_floor_is_a_deterministic_grid_with_every_spot_once() -> None:
    cfg = config("[floor.simulate]\nmachines = 230\ntables = 13\nplayers = 10")
    fm = build_map(cfg)
    assert fm == build_map(cfg)
    layout = cfg.layout()
    assert sorted(m.machine for m in fm.machines) == sorted(layout.machines)
    assert sorted(t.table for t in fm.tables) == sorted(layout.tables)
    # machines never overlap, and each sits inside its own area's rectangle
    for a, b in itertools.combinations(fm.machines, 2):
        assert max(abs(a.x - b.x), abs(a.y - b.y)) >= MACHINE - 1e-9
    boxes = {a.name: a for a in fm.areas}
    for m in fm.machines:
        box = boxes[m.area]
        assert box.x < m.x < box.x + box.w and box.y < m.y < box.y + box.h
        assert m.bank == layout.machines[m.machine].bank
    for t in fm.tables:
        box = boxes[t.area]
        for seat in range(1, t.seats + 1):
            sx, sy = seat_position(t, seat)
            assert box.x < sx < box.x + box.w and box.y < sy < box.y + box.h
    # areas do not overlap either
    for r, q in itertools.combinations(fm.areas, 2):
        apart = r.x + r.w <= q.x or q.x + q.w <= r.x or r.y + r.h <= q.y or q.y + q.h <= r.y
        assert apart, (r, q)


def test_the_svg_names_every_machine_and_seat_for_the_page_to_mark() -> None:
    cfg = config("[floor.simulate]\nmachines = 25\ntables = 2\nplayers = 10")
    root = ET.fromstring(render_svg(build_map(cfg)))
    assert root.tag == f"{SVG}svg" and root.get("viewBox")
    machines = root.findall(f".//{SVG}rect[@data-machine]")
    assert {m.get("data-machine") for m in machines} == set(cfg.layout().machines)
    seats = root.findall(f".//{SVG}circle[@data-seat]")
    assert len(seats) == 2 * 7
    assert root.find(f".//{SVG}g[@class='marks']") is not None


def test_positions_from_the_config_are_used_and_names_are_escaped() -> None:
    cfg = config(LISTED)
    fm = build_map(cfg)
    spots = {m.machine: (m.x, m.y) for m in fm.machines}
    assert spots == {"A1": (2.0, 3.0), "A2": (3.0, 3.0)}
    (table,) = fm.tables
    assert (table.x, table.y, table.seats) == (20.0, 10.0, 5)
    boxes = {a.name: a for a in fm.areas}
    assert (boxes["Pit"].x, boxes["Pit"].y, boxes["Pit"].w, boxes["Pit"].h) == (14, 4, 12, 10)
    main = boxes['Main <Floor> & "Co"']  # no rectangle given: drawn around its machines
    assert main.x < 2 and main.x + main.w > 3 and main.y < 3 < main.y + main.h
    svg = render_svg(fm)
    root = ET.fromstring(svg)  # well-formed despite <, & and " in a name
    labels = [t.text for t in root.iter(f"{SVG}text")]
    assert 'Main <Floor> & "Co"' in labels


@pytest.mark.parametrize(
    ("floor", "message"),
    [
        (LISTED.replace("x = 3\ny = 3\n", ""), "machines[1]: has no x, y"),
        (LISTED.replace("y = 3.0\n", ""), "machines[0].y: missing (x and y go together)"),
        (LISTED.replace('name = "Pit"', 'name = "Pit 9"'), "areas[0].name: no machine or table"),
        (
            "[floor.simulate]\nmachines = 5\ntables = 1\nplayers = 3\n"
            '[[floor.areas]]\nname = "Main Floor"\nx = 0\ny = 0\nwidth = 5\nheight = 5\n',
            "area rectangles need x, y",
        ),
    ],
)
def test_positions_are_all_or_nothing(floor: str, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        config(floor)
    assert message in str(e.value)


def test_a_listed_floor_without_positions_gets_the_grid() -> None:
    floor = LISTED.split("[[floor.areas]]")[0]
    for key in ("x = 2.0\n", "y = 3.0\n", "x = 3\n", "y = 3\n", "x = 20.0\n", "y = 10.0\n"):
        floor = floor.replace(key, "", 1)
    fm = build_map(config(floor))
    assert len(fm.machines) == 2 and len(fm.tables) == 1
    assert fm.machines[0].y == fm.machines[1].y or fm.machines[0].x == fm.machines[1].x

"""Table ratings over MQTT: the payload family of the pit's rating terminals.

`table_rating_opened`, `_updated` and `_closed` on `{prefix}/{site}/tables/{table}/events`;
their JSON Schemas are in `schemas/` beside this file (docs/mqtt.md shows each with an
example).  The ingest (adapters.mqtt, the shared transport) validates them with these
schemas, checks the table and seat against the floor here, and turns them into
TableRating* FloorEvents through the shared codec (adapters.wire.codec).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from adapters.mqtt.family import PayloadFamily
from adapters.mqtt.topics import Kind
from selector.layout import FloorLayout

SCHEMA_DIR = Path(__file__).parent / "schemas"
# the core's reason names, given at the edge
UNKNOWN_TABLE = "unknown_table"
UNKNOWN_SEAT = "unknown_seat"


def _seat_on_floor(layout: FloorLayout, data: Mapping[str, Any]) -> tuple[str, str] | None:
    table = layout.tables.get(data["table"])
    if table is None:
        return UNKNOWN_TABLE, f"table {data['table']!r} is not on the floor"
    if data["seat"] > table.seats:
        return UNKNOWN_SEAT, f"seat {data['seat']} (table {table.table} has {table.seats})"
    return None


TABLE_FEED = PayloadFamily(Kind.TABLES, SCHEMA_DIR, _seat_on_floor)

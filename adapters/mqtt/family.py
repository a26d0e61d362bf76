"""A payload family: what one MQTT-borne source brings to the shared transport.

The transport (this package) owns the topic tree, the connection, acknowledgements and
dead letters.  Each source that publishes over it owns its payloads: their JSON Schemas
and the edge checks that need the floor layout (is this table on the floor, does it
have this seat).  The daemon hands the ingest the families it runs; the CMS feeds
(card sessions, game play, the player directory, points, tickets) are this package's own
(`adapters.mqtt.feeds`), table ratings are `adapters.tables`'.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from adapters.mqtt.topics import ID_FIELD, TYPES_BY_KIND, Kind
from selector.layout import FloorLayout

# (reason, detail) for a payload naming a place that is not on the floor, else None
PlaceCheck = Callable[[FloorLayout, Mapping[str, Any]], tuple[str, str] | None]


@dataclass(frozen=True, slots=True)
class PayloadFamily:
    """The payloads one topic kind carries: schemas in `schema_dir`, one per type name."""

    kind: Kind
    schema_dir: Path
    place_check: PlaceCheck | None = None

    @property
    def types(self) -> frozenset[str]:
        """The payload types the topic tree allows on this family's topics."""
        return TYPES_BY_KIND[self.kind]

    @property
    def id_field(self) -> str | None:
        """The payload field that must equal the topic's {machine} / {table} level."""
        return ID_FIELD.get(self.kind)

    def schema(self, type_name: str) -> dict[str, Any]:
        return load_schema(self.schema_dir / f"{type_name}.json")


@cache
def load_schema(path: Path) -> dict[str, Any]:
    """One committed JSON Schema, read once."""
    data: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return data

"""The payload families this package owns: the CMS and SMIB feeds.

Card sessions, game play and machine status on `slots/{machine}/events`, the player
directory on `players`, casino points on `points`, and the casino system's own draw
tickets on `tickets`.  Their schemas are in `schemas/`
beside this file.  Table ratings are `adapters.tables`' family.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from adapters.mqtt.family import PayloadFamily
from adapters.mqtt.topics import Kind
from selector.layout import FloorLayout

SCHEMA_DIR = Path(__file__).parent / "schemas"
UNKNOWN_MACHINE = "unknown_machine"  # the core's reason name, given at the edge


def _machine_on_floor(layout: FloorLayout, data: Mapping[str, Any]) -> tuple[str, str] | None:
    if data["machine"] not in layout.machines:
        return UNKNOWN_MACHINE, f"machine {data['machine']!r} is not on the floor"
    return None


SLOT_FEED = PayloadFamily(Kind.SLOTS, SCHEMA_DIR, _machine_on_floor)
PLAYER_FEED = PayloadFamily(Kind.PLAYERS, SCHEMA_DIR)
POINTS_FEED = PayloadFamily(Kind.POINTS, SCHEMA_DIR)
TICKET_FEED = PayloadFamily(Kind.TICKETS, SCHEMA_DIR)
CMS_FEEDS = (SLOT_FEED, PLAYER_FEED, POINTS_FEED, TICKET_FEED)


def deadletter_schema() -> dict[str, Any]:
    """The schema of what the ingest publishes on `{prefix}/{site}/deadletter`."""
    return SLOT_FEED.schema("deadletter")

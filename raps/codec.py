"""FloorEvents to and from JSON-ready dicts: the event log and the MQTT payloads.

The `type` names here are part of the documented wire format (docs/), so they are
spelled out once, in this table, and nowhere else.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

from selector.events import (
    AnyFloorEvent,
    CardInserted,
    CardRemoved,
    Exclusion,
    GamePlayed,
    MachineStatus,
    MachineStatusChanged,
    PlayerUpserted,
    PointsEarned,
    TableRatingClosed,
    TableRatingOpened,
    TableRatingUpdated,
    Tier,
)

EVENT_TYPES: dict[str, type[AnyFloorEvent]] = {
    "card_inserted": CardInserted,
    "card_removed": CardRemoved,
    "game_played": GamePlayed,
    "machine_status": MachineStatusChanged,
    "table_rating_opened": TableRatingOpened,
    "table_rating_updated": TableRatingUpdated,
    "table_rating_closed": TableRatingClosed,
    "points_earned": PointsEarned,
    "player_upserted": PlayerUpserted,
}
TYPE_NAMES = {cls: name for name, cls in EVENT_TYPES.items()}
_HEADER = ("event_id", "source", "ts")


class CodecError(ValueError):
    """A payload that is not a valid FloorEvent; `reason` is a short metric label."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


def event_to_dict(event: AnyFloorEvent) -> dict[str, Any]:
    out: dict[str, Any] = {"type": TYPE_NAMES[type(event)]}
    for f in dataclasses.fields(event):
        if not f.init:
            continue
        value = getattr(event, f.name)
        if isinstance(value, datetime):
            value = value.isoformat()
        elif isinstance(value, frozenset):
            value = sorted(str(v) for v in value)
        elif isinstance(value, Tier | MachineStatus):
            value = value.value
        out[f.name] = value
    return out


def event_from_dict(d: Any) -> AnyFloorEvent:
    """Build and validate an event; raises CodecError naming what is wrong."""
    if not isinstance(d, dict):
        raise CodecError("not_an_object", "payload must be a JSON object")
    name = d.get("type")
    cls = EVENT_TYPES.get(name) if isinstance(name, str) else None
    if cls is None:
        raise CodecError("unknown_type", f"unknown event type {name!r}")
    known = {f.name for f in dataclasses.fields(cls) if f.init}
    extra = set(d) - known - {"type"}
    if extra:
        raise CodecError("unknown_field", f"unknown field(s) {sorted(extra)} for {name}")
    kwargs: dict[str, Any] = {k: v for k, v in d.items() if k != "type"}
    missing = [k for k in _HEADER if k not in kwargs]
    if missing:
        raise CodecError("missing_field", f"missing {missing}")
    try:
        kwargs["ts"] = datetime.fromisoformat(kwargs["ts"])
        if "tier" in kwargs:
            kwargs["tier"] = Tier(kwargs["tier"])
        if "status" in kwargs:
            kwargs["status"] = MachineStatus(kwargs["status"])
        if "exclusions" in kwargs:
            kwargs["exclusions"] = frozenset(Exclusion(e) for e in kwargs["exclusions"])
        return cls(**kwargs)
    except (TypeError, ValueError) as e:
        raise CodecError("invalid_field", str(e)) from e

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
    TicketsGranted,
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
    "tickets_granted": TicketsGranted,
}
TYPE_NAMES = {cls: name for name, cls in EVENT_TYPES.items()}
_HEADER = ("event_id", "source", "ts")


class CodecError(ValueError):
    """A payload that is not a valid FloorEvent; `reason` is a short metric label."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


_PLAIN, _TIME, _SET, _ENUM, _SPAN = range(5)


def _plan(cls: type) -> tuple[tuple[str, int], ...]:
    """How to encode each field of an event class, worked out once per class."""
    plan = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        kind = {"ts": _TIME, "exclusions": _SET, "tier": _ENUM, "status": _ENUM,
                "span_start": _SPAN}.get(f.name, _PLAIN)  # fmt: skip
        plan.append((f.name, kind))
    return tuple(plan)


_PLANS = {cls: _plan(cls) for cls in EVENT_TYPES.values()}
_FIELDS = {name: frozenset(n for n, _ in _PLANS[cls]) for name, cls in EVENT_TYPES.items()}


def event_to_dict(event: AnyFloorEvent) -> dict[str, Any]:
    cls = type(event)
    out: dict[str, Any] = {"type": TYPE_NAMES[cls]}
    for name, kind in _PLANS[cls]:
        value = getattr(event, name)
        if kind == _SPAN:  # optional: absent when the event is no span
            if value is None:
                continue
            value = value.isoformat()
        elif kind == _TIME:
            value = value.isoformat()
        elif kind == _SET:
            value = sorted(str(v) for v in value)
        elif kind == _ENUM:
            value = value.value
        out[name] = value
    return out


def typed_fields(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Turn a payload's JSON values into the event's field types, in place: the time,
    and the enums and sets by name.  Raises ValueError on a value that is none of them."""
    kwargs["ts"] = datetime.fromisoformat(kwargs["ts"])
    if kwargs.get("span_start") is not None:
        kwargs["span_start"] = datetime.fromisoformat(kwargs["span_start"])
    if "tier" in kwargs:
        kwargs["tier"] = Tier(kwargs["tier"])
    if "status" in kwargs:
        kwargs["status"] = MachineStatus(kwargs["status"])
    if "exclusions" in kwargs:
        kwargs["exclusions"] = frozenset(Exclusion(e) for e in kwargs["exclusions"])
    return kwargs


def event_from_dict(d: Any) -> AnyFloorEvent:
    """Build and validate an event; raises CodecError naming what is wrong."""
    if not isinstance(d, dict):
        raise CodecError("not_an_object", "payload must be a JSON object")
    name = d.get("type")
    if not isinstance(name, str) or name not in EVENT_TYPES:
        raise CodecError("unknown_type", f"unknown event type {name!r}")
    cls = EVENT_TYPES[name]
    known = _FIELDS[name]
    extra = [k for k in d if k not in known and k != "type"]
    if extra:
        raise CodecError("unknown_field", f"unknown field(s) {sorted(extra)} for {name}")
    kwargs: dict[str, Any] = {k: v for k, v in d.items() if k != "type"}
    missing = [k for k in _HEADER if k not in kwargs]
    if missing:
        raise CodecError("missing_field", f"missing {missing}")
    try:
        return cls(**typed_fields(kwargs))
    except (TypeError, ValueError) as e:
        raise CodecError("invalid_field", str(e)) from e

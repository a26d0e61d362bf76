"""MQTT adapter: the versioned topic tree, payload schemas, validation and the ingest.

Public API: `MqttIngest` (the subscriber), `Topics` (topic names), `PayloadDecoder`
(payload -> FloorEvent or a Rejection), `event_payload` (FloorEvent -> wire payload).
See docs/mqtt.md for every topic, payload, and the delivery and ordering rules.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from adapters.mqtt.ingest import MqttIngest, source_label
    from adapters.mqtt.topics import Kind, Topics
    from adapters.mqtt.validate import PayloadDecoder, Rejection, event_payload

# imported when first asked for: the ingest's receiver process (adapters.mqtt.receiver)
# starts without the decoder, the schemas and the core it does not use
_WHERE = {
    "MqttIngest": "adapters.mqtt.ingest",
    "source_label": "adapters.mqtt.ingest",
    "Kind": "adapters.mqtt.topics",
    "Topics": "adapters.mqtt.topics",
    "PayloadDecoder": "adapters.mqtt.validate",
    "Rejection": "adapters.mqtt.validate",
    "event_payload": "adapters.mqtt.validate",
}


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(where), name)


__all__ = [
    "Kind",
    "MqttIngest",
    "PayloadDecoder",
    "Rejection",
    "Topics",
    "event_payload",
    "source_label",
]

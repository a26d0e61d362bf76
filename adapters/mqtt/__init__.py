"""MQTT adapter: the versioned topic tree, payload schemas, validation and the ingest.

Public API: `MqttIngest` (the subscriber), `Topics` (topic names), `PayloadDecoder`
(payload -> FloorEvent or a Rejection), `event_payload` (FloorEvent -> wire payload).
See docs/mqtt.md for every topic, payload, and the delivery and ordering rules.
"""

from __future__ import annotations

from adapters.mqtt.ingest import MqttIngest, source_label
from adapters.mqtt.topics import Kind, Topics
from adapters.mqtt.validate import PayloadDecoder, Rejection, event_payload

__all__ = [
    "Kind",
    "MqttIngest",
    "PayloadDecoder",
    "Rejection",
    "Topics",
    "event_payload",
    "source_label",
]

"""Outbound MQTT: draw notices and the journal head, for signage and other systems.

Publishing never blocks a draw: messages go through a bounded queue to one client
task that reconnects with backoff.  Retained topics (the head, the summary) let a
late subscriber see the latest state.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiomqtt

from adapters.mqtt.config import MqttConfig
from adapters.mqtt.publish import Outbound, broker_options, publish_queue
from raps.logs import get_logger
from raps.metrics import Metrics

QUEUE_LIMIT = 10_000


class MqttPublisher:
    def __init__(self, cfg: MqttConfig, metrics: Metrics, port: int | None = None) -> None:
        self.cfg = cfg
        self.port = port or cfg.port
        self.metrics = metrics
        self.log = get_logger(component="mqtt-out")
        self.queue: asyncio.Queue[Outbound] = asyncio.Queue(QUEUE_LIMIT)
        self.connected = False

    async def publish(self, topic: str, payload: dict[str, Any], retain: bool = False) -> None:
        body = json.dumps(payload, separators=(",", ":")).encode()
        try:
            self.queue.put_nowait((topic, body, retain))
        except asyncio.QueueFull:
            self.log.warning("outbound queue full; message dropped", topic=topic)

    def _client(self) -> aiomqtt.Client:
        return aiomqtt.Client(
            self.cfg.host,
            self.port,
            identifier=f"{self.cfg.client_id}-out",
            **broker_options(self.cfg),
        )

    def _set(self, up: bool) -> None:
        self.connected = up
        self.metrics.link_up.labels("mqtt", "outbound").set(1 if up else 0)

    async def run(self) -> None:
        await publish_queue(self._client, self.queue, self.log, self._set)

"""Outbound MQTT: draw notices and the journal head, for signage and other systems.

Publishing never blocks a draw: messages go through a bounded queue to one client
task that reconnects with backoff.  Retained topics (the head, the summary) let a
late subscriber see the latest state.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import Callable
from typing import Any

import aiomqtt

from raps.config import MqttConfig
from raps.logs import get_logger
from raps.metrics import Metrics

QUEUE_LIMIT = 10_000
Outbound = tuple[str, bytes, bool]  # topic, body, retain


async def publish_queue(
    make_client: Callable[[], aiomqtt.Client],
    queue: asyncio.Queue[Outbound],
    log: Any,
    on_link: Callable[[bool], None],
) -> None:
    """Publish a queue's messages at QoS 1 until cancelled, reconnecting with backoff
    (0.5 s, doubling to 30 s); the message in hand when the link drops goes first after."""
    backoff = 0.5
    pending: Outbound | None = None
    while True:
        try:
            async with make_client() as client:
                on_link(True)
                backoff = 0.5
                while True:
                    if pending is None:
                        pending = await queue.get()
                    topic, body, retain = pending
                    await client.publish(topic, body, qos=1, retain=retain)
                    pending = None
        except aiomqtt.MqttError as e:
            on_link(False)
            log.warning("broker unreachable; retrying", error=str(e), retry_in=backoff)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 30.0)


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
        tls = None
        if self.cfg.tls:
            tls = ssl.create_default_context(cafile=self.cfg.ca_file)
        password = self.cfg.password.get_secret_value() if self.cfg.password else None
        return aiomqtt.Client(
            self.cfg.host,
            self.port,
            identifier=f"{self.cfg.client_id}-out",
            username=self.cfg.username,
            password=password,
            tls_context=tls,
        )

    def _set(self, up: bool) -> None:
        self.connected = up
        self.metrics.link_up.labels("mqtt", "outbound").set(1 if up else 0)

    async def run(self) -> None:
        await publish_queue(self._client, self.queue, self.log, self._set)

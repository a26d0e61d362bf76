"""`raps sas-agent`: SAS channels on an edge box, FloorEvents out over MQTT.

The same `SasChannel` the daemon runs in-process, publishing each event as JSON
(adapters.wire.codec.event_to_dict) to `{prefix}/{site}/slots/{machine}/events` at QoS 1,
and each channel's link state, retained, to `{prefix}/{site}/sas/{channel}/link`.
Events wait in a bounded queue while the broker is away; the agent reconnects
with backoff and never exits on a broker or serial failure (systemd restarts it
only if it crashes).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import aiomqtt
import structlog

from adapters.mqtt.publish import Outbound, broker_options, publish_queue
from adapters.sas.config import SasAgentConfig
from adapters.sas.source import SasChannel
from adapters.wire.codec import event_to_dict
from selector.events import AnyFloorEvent

QUEUE_LIMIT = 100_000


class Agent:
    def __init__(self, cfg: SasAgentConfig) -> None:
        self.cfg = cfg
        self.log = structlog.get_logger("raps").bind(component="sas-agent", site=cfg.site)
        self.queue: asyncio.Queue[Outbound] = asyncio.Queue(QUEUE_LIMIT)
        self.rejected: Counter[str] = Counter()
        self.dropped = 0
        prefix = f"{cfg.mqtt.topic_prefix}/{cfg.site}"
        self._prefix = prefix
        state_dir = Path(cfg.state_dir or os.environ.get("STATE_DIRECTORY", "."))
        self.channels = [
            SasChannel(
                c,
                None,
                self.emit,
                self._reject,
                self._link,
                state_path=state_dir / f"sas-{c.name}.json",
            )
            for c in cfg.channels
        ]

    def _put(self, topic: str, body: bytes, retain: bool = False) -> None:
        try:
            self.queue.put_nowait((topic, body, retain))
        except asyncio.QueueFull:
            self.dropped += 1

    def emit(self, events: list[AnyFloorEvent]) -> None:
        for ev in events:
            machine = getattr(ev, "machine", "_")
            body = json.dumps(event_to_dict(ev), separators=(",", ":")).encode()
            self._put(f"{self._prefix}/slots/{machine}/events", body)

    def _reject(self, reason: str) -> None:
        self.rejected[reason] += 1

    def _link(self, name: str, up: bool) -> None:
        body = json.dumps({"up": up, "ts": datetime.now(UTC).isoformat()}).encode()
        self._put(f"{self._prefix}/sas/{name}/link", body, retain=True)

    def _client(self) -> aiomqtt.Client:
        m = self.cfg.mqtt
        client = aiomqtt.Client(
            m.host,
            m.port,
            identifier=m.client_id or f"raps-sas-agent-{self.cfg.site}",
            **broker_options(m),
        )
        client.pending_calls_threshold = 10_000
        return client

    async def publish(self) -> None:
        await publish_queue(self._client, self.queue, self.log, self._broker_link)

    def _broker_link(self, up: bool) -> None:
        if up:
            self.log.info("broker connected", host=self.cfg.mqtt.host)

    async def report(self, seconds: float = 60.0) -> None:
        while True:
            await asyncio.sleep(seconds)
            self.log.info(
                "sas agent",
                queued=self.queue.qsize(),
                dropped=self.dropped,
                rejected=dict(self.rejected),
                channels={c.name: c.link_up for c in self.channels},
            )

    async def run(self, stop: asyncio.Event) -> None:
        tasks = [asyncio.create_task(c.run(), name=f"sas-{c.name}") for c in self.channels]
        tasks.append(asyncio.create_task(self.publish(), name="mqtt"))
        tasks.append(asyncio.create_task(self.report(), name="report"))
        await stop.wait()
        for c in self.channels:
            c.stop()
        await asyncio.wait(tasks[: len(self.channels)], timeout=5)
        for _ in range(50):  # let the last events reach the broker
            if self.queue.empty():
                break
            await asyncio.sleep(0.1)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def run_agent(cfg: SasAgentConfig, stop: asyncio.Event | None = None) -> None:
    """Run until `stop` is set (or SIGTERM/SIGINT when no event is given)."""
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    await Agent(cfg).run(stop)

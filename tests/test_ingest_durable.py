"""Acknowledged means durable: a kill -9 while draining an MQTT backlog loses nothing.

The real daemon (`raps run`) as a subprocess, a real Mosquitto (a private one: the
backlog is held for the daemon while it is down, more than Mosquitto's default queue
of 1,000, see tests/mqtt_broker.py), 20,004 QoS 1 messages queued for it, a kill -9
in the middle of the drain, a restart: every message must be applied exactly once
(the broker redelivers only what was not acknowledged; before the fix, acknowledged
messages whose floor-log batch had not been written were lost for good).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiomqtt
import httpx
import pytest

from adapters.mqtt import Topics
from raps.config import parse_config
from raps.metrics import Metrics
from raps.seal import SeedSealer, load_key
from raps.service import Service
from raps.store.database import open_engine
from tests.mqtt_broker import PrivateMosquitto, floor_config_text

MACHINES = ("M01", "M02", "M03", "M04")
GAMES_PER_MACHINE = 5_000
TOTAL = len(MACHINES) * (GAMES_PER_MACHINE + 1)  # a card-in per machine, then its games


@pytest.fixture
def broker() -> Iterator[PrivateMosquitto]:
    b = PrivateMosquitto()
    b.start()
    try:
        yield b
    finally:
        b.close()


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.01)


class RapsDaemon:
    """`raps run --config C --ready-file R` in a subprocess."""

    def __init__(self, folder: Path, config: Path) -> None:
        self.folder = folder
        self.config = config
        self.ready_file = folder / "ready.json"
        self.proc: subprocess.Popen[bytes] | None = None
        self.runs = 0

    def spawn(self) -> None:
        self.ready_file.unlink(missing_ok=True)
        self.runs += 1
        log = (self.folder / f"daemon-{self.runs}.log").open("wb")
        cmd = [sys.executable, "-m", "raps.cli", "run", "--config", str(self.config)]
        self.proc = subprocess.Popen(
            [*cmd, "--ready-file", str(self.ready_file)], stdout=log, stderr=log, cwd=self.folder
        )
        log.close()

    def wait_ready(self) -> None:
        """The ready file, then /readyz 200 (the MQTT ingest is subscribed)."""
        assert self.proc is not None
        wait_for(lambda: self.ready_file.exists() or self.proc.poll() is not None, 60, "ready")
        assert self.proc.poll() is None, (self.folder / f"daemon-{self.runs}.log").read_text()
        url = __import__("json").loads(self.ready_file.read_text())["url"]

        def ready() -> bool:
            try:
                return httpx.get(f"{url}/readyz", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(ready, 30, "/readyz 200")

    def kill9(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(60)


def durable_events(db: Path) -> int:
    """How many events are durable: the newest sequence number in the floor log or its
    snapshots (every applied event takes the next one; a restart continues from it)."""
    with sqlite3.connect(db, timeout=5) as conn:
        batches = conn.execute("SELECT max(last_seq) FROM floor_event_batches").fetchone()[0]
        snaps = conn.execute("SELECT max(last_event_seq) FROM floor_snapshots").fetchone()[0]
    return max(batches or 0, snaps or 0)


def card(machine: str) -> str:
    return f"60047000000{machine[1:]}"


async def publish_backlog(host: str, port: int, site: str, now: datetime) -> None:
    """A card-in at each machine, then its games (one point each), QoS 1, all accepted."""
    topics = Topics("raps/v1", site)
    ts = (now - timedelta(seconds=30)).isoformat()
    async with aiomqtt.Client(
        host, port, identifier=f"pub-{uuid.uuid4().hex[:8]}", max_inflight_messages=1000
    ) as client:
        client.pending_calls_threshold = 1_000_000
        sends = []
        for m in MACHINES:
            body = (
                f'{{"event_id":"in-{m}","ts":"{ts}","type":"card_inserted",'
                f'"machine":"{m}","card":"{card(m)}"}}'
            )
            await client.publish(topics.slots(m), body, qos=1)
        for n in range(GAMES_PER_MACHINE):
            for m in MACHINES:
                body = (
                    f'{{"event_id":"g-{m}-{n}","ts":"{ts}","type":"game_played",'
                    f'"machine":"{m}","wager":1000}}'
                )
                sends.append(client.publish(topics.slots(m), body, qos=1))
            if len(sends) >= 2000:
                await asyncio.gather(*sends)
                sends = []
        await asyncio.gather(*sends)


def test_kill9_mid_drain_loses_no_acknowledged_message(
    broker: PrivateMosquitto, tmp_path: Path
) -> None:
    site = f"d{uuid.uuid4().hex[:8]}"
    text = floor_config_text(tmp_path, site, broker.port)
    text += '\n[http]\nhost = "127.0.0.1"\nport = 0\n'
    config = tmp_path / "raps.toml"
    config.write_text(text)
    db = tmp_path / "raps.db"
    daemon = RapsDaemon(tmp_path, config)
    try:
        daemon.spawn()
        daemon.wait_ready()  # the persistent session and its subscriptions exist
        daemon.kill9()
        now = datetime.now(UTC)
        asyncio.run(publish_backlog(broker.host, broker.port, site, now))
        daemon.spawn()
        wait_for(lambda: db.exists() and durable_events(db) >= TOTAL // 5, 120, "a fifth")
        daemon.kill9()  # in the middle of the drain
        first = durable_events(db)
        assert first < TOTAL, "the backlog drained before the kill: the test proves nothing"
        daemon.spawn()
        daemon.wait_ready()
        wait_for(lambda: durable_events(db) >= TOTAL, 120, "every message applied")
        daemon.stop()  # SIGTERM: the final snapshot
        assert durable_events(db) == TOTAL, "a message was applied twice"
    finally:
        if daemon.proc is not None and daemon.proc.poll() is None:
            daemon.kill9()
    asyncio.run(_check_points(tmp_path, text, now))


async def _check_points(folder: Path, text: str, now: datetime) -> None:
    """Each card's points are exactly its machine's games: none lost, none twice."""
    cfg = parse_config(text)
    service = Service(
        cfg, open_engine(cfg.storage.url), SeedSealer(load_key(folder / "seed.key")),
        Metrics(), lambda: now,
    )  # fmt: skip
    await service.start()
    try:
        for m in MACHINES:
            assert service.floor.points("raps", card(m), now) == GAMES_PER_MACHINE, m
    finally:
        await service.engine.dispose()

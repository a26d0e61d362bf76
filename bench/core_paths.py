"""bench/core.py's measures of the paths the daemon runs (issue 20).

- ingest: the same events through Floor.apply_many (prebuilt list), Service.ingest (in
  batches as the sources deliver them) and MqttIngest.handle (JSON payloads on their
  topics, decoded, checked and applied), in the same round, median of rounds;
- picks on a changing floor: 1,000 pool changes (500 players leave, 500 arrive and
  qualify) between picks, at each floor size, beside a cold full rehash of the pool
  (sha256 over the canonical pool, no cache) and a warm pick (no change between picks).
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import json
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from adapters.mqtt import MqttIngest
from adapters.mqtt.ingest import _Item
from adapters.mqtt.topics import Topics
from adapters.mqtt.validate import event_payload
from bench.harness import percentile, say
from bench.journal_setup import Rotation, floor_events
from raps.config import parse_config
from raps.daemon import INBOUND_FEEDS
from raps.metrics import Metrics
from raps.seal import SeedSealer, create_key_file, load_key
from raps.service import Service
from raps.store.database import open_engine
from selector.events import AnyFloorEvent, PlayerUpserted, PoolKind
from selector.floor import Floor
from selector.layout import FloorLayout
from selector.promotion import EarnRules, Promotion
from selector.records import Actor
from selector.session import Command, DrawSession

PROMO = "raps"
BATCH = 500  # the MQTT ingest's batch (bench/mqtt.py's mean batch) and a SAS loop's order
STAFF = Actor("bench", "marketing")
CHANGES = 1_000  # pool changes between picks: 500 rotations, each one out and one in


def _config(folder: Path, machines: int, tables: int) -> str:
    key = folder / "seed.key"
    create_key_file(key)
    return f"""
[site]
id = "bench"
timezone = "Africa/Johannesburg"

[storage]
url = "sqlite:///{folder / "raps.db"}"
event_flush_seconds = 0.5
max_unflushed_events = 2000000

[credentials]
seed_key_file = "{key}"

[mqtt]
enabled = true
host = "127.0.0.1"
port = 1

[floor.simulate]
machines = {machines}
tables = {tables}
players = 1
events_per_second = 0.001

[[promotions]]
id = "{PROMO}"
threshold_points = 50
window = {{ start = "00:00", end = "24:00" }}

[logging]
format = "json"
level = "warning"
"""


async def _daemon_round(
    folder: Path,
    machines: int,
    tables: int,
    directory: list[PlayerUpserted],
    events: list[AnyFloorEvent],
    payloads: list[_Item],
) -> tuple[float, float, float]:
    """(Service.ingest events/s, its rate with the floor log flushes, MqttIngest.handle /s)."""
    cfg = parse_config(_config(folder, machines, tables), source="bench config")
    now = events[-1].ts + timedelta(seconds=1)
    rates: list[float] = []
    for path in ("service", "mqtt"):
        db = folder / "raps.db"
        for leftover in folder.glob("raps.db*"):
            leftover.unlink()
        service = Service(
            cfg, open_engine(cfg.storage.url), SeedSealer(load_key(folder / "seed.key")),
            Metrics(), lambda: now,
        )  # fmt: skip
        await service.start()
        service.ingest(directory, "cms")
        await service.flush_events()
        gc.collect()
        spent = flushing = 0.0
        if path == "service":
            for i in range(0, len(events), BATCH):
                batch = events[i : i + BATCH]
                t0 = time.perf_counter()
                service.ingest(batch, "bench")
                spent += time.perf_counter() - t0
                if i % (50 * BATCH) == 0:
                    t1 = time.perf_counter()
                    await service.flush_events()
                    flushing += time.perf_counter() - t1
        else:
            ingest = MqttIngest(
                cfg.mqtt, "bench", service.ingest_detailed, service.reject, lambda up: None,
                lambda: now, port=1, known=cfg.layout(), client_id="bench",
                families=INBOUND_FEEDS, flush=service.flush_events, room=service.ingest_room,
            )  # fmt: skip
            for i in range(0, len(payloads), BATCH):
                t0 = time.perf_counter()
                dead = ingest.handle(payloads[i : i + BATCH])
                spent += time.perf_counter() - t0
                assert not dead, dead[:1]
                if i % (50 * BATCH) == 0:
                    t1 = time.perf_counter()
                    await service.flush_events()
                    flushing += time.perf_counter() - t1
        t1 = time.perf_counter()
        await service.flush_events()
        flushing += time.perf_counter() - t1
        await service.stop()
        rates.append(len(events) / spent)
        if path == "service":
            rates.append(len(events) / (spent + flushing))
        del db
    return rates[0], rates[1], rates[2]


def daemon_ingest(
    layout: FloorLayout,
    machines: int,
    tables: int,
    directory: list[PlayerUpserted],
    events: list[AnyFloorEvent],
    rounds: int,
) -> dict[str, Any]:
    """apply_many, Service.ingest and MqttIngest.handle on the same events, per round."""
    say(
        f"\n== the daemon's ingest paths: {len(events):,} events, {rounds} rounds; in each"
        f" round Floor.apply_many (prebuilt list), Service.ingest (batches of {BATCH}) and"
        f" MqttIngest.handle (JSON payloads on their topics, batches of {BATCH}) =="
    )
    topics = Topics("raps/v1", "bench")
    payloads: list[_Item] = []
    for ev in events:
        body = event_payload(ev)
        if "machine" in body:
            topic = topics.slots(body["machine"])
        elif "table" in body:
            topic = topics.tables(body["table"])
        else:
            topic = topics.for_event(body["type"], body)
        payloads.append(_Item(topic, json.dumps(body, separators=(",", ":")).encode()))
    out: dict[str, list[float]] = {"apply_many": [], "service": [], "service_flushed": []}
    out["mqtt_handle"] = []
    for r in range(rounds):
        floor = Floor(layout, [Promotion(PROMO)], EarnRules())
        floor.apply_many(directory)
        gc.collect()
        t0 = time.perf_counter()
        floor.apply_many(events)
        out["apply_many"].append(len(events) / (time.perf_counter() - t0))
        del floor
        with tempfile.TemporaryDirectory(prefix="raps-bench-core-") as tmp:
            svc, flushed, mqtt = asyncio.run(
                _daemon_round(Path(tmp), machines, tables, directory, events, payloads)
            )
        out["service"].append(svc)
        out["service_flushed"].append(flushed)
        out["mqtt_handle"].append(mqtt)
        say(
            f"  round {r + 1}: apply_many {out['apply_many'][-1]:,.0f}/s, Service.ingest"
            f" {svc:,.0f}/s ({flushed:,.0f}/s with the floor log's flushes), MqttIngest.handle"
            f" {mqtt:,.0f}/s"
        )
    med = {k: statistics.median(v) for k, v in out.items()}
    ratios = [s / a for s, a in zip(out["service"], out["apply_many"], strict=True)]
    return {
        "events_per_s_median": {k: round(v) for k, v in med.items()},
        "rounds": {k: [round(x) for x in v] for k, v in out.items()},
        "us_per_event_median": {k: round(1e6 / v, 2) for k, v in med.items()},
        "service_over_apply_many_median": round(statistics.median(ratios), 3),
        "batch": BATCH,
    }


# ------------------------------------------------------------------- churn picks


def _floor_of(n: int, at: datetime) -> Floor:
    from raps.floorsim import demo_layout

    floor = Floor(demo_layout(n, 0), [Promotion(PROMO)], EarnRules())
    step = 30_000
    for i in range(0, n, step):  # built and applied in parts: 1M players' events at once
        part = floor_events(min(step, n - i), at, f"f{i}-")  # would be gigabytes
        # floor_events numbers players from 0: shift them to i..
        floor.apply_many(_shifted(part, i))
    return floor


def _shifted(events: list[AnyFloorEvent], offset: int) -> list[AnyFloorEvent]:
    if offset == 0:
        return events
    from bench.journal_setup import card_of, machine_of

    out: list[AnyFloorEvent] = []
    for ev in events:
        changes: dict[str, Any] = {}
        card = getattr(ev, "card", None)
        if card is not None:
            changes["card"] = card_of(int(card[1:]) + offset)
        machine = getattr(ev, "machine", None)
        if machine is not None:
            changes["machine"] = machine_of(int(machine[1:]) - 1 + offset)
        out.append(_replace(ev, changes))
    return out


def _replace(ev: AnyFloorEvent, changes: dict[str, Any]) -> AnyFloorEvent:
    import dataclasses

    return dataclasses.replace(ev, **changes)


def churn_picks(sizes: list[int], n_picks: int) -> dict[str, Any]:
    """Pick latency with 0 and 1,000 pool changes between picks, and a cold rehash."""
    say(
        f"\n== picks on a changing floor: DrawSession.draw with {CHANGES:,} pool changes"
        f" between picks (500 leave, 500 arrive and qualify) and with none (warm), {n_picks}"
        " timed picks each, gc off; the peer: a cold full rehash of the pool (sha256 over"
        " the canonical pool, no cache) =="
    )
    at = datetime(2026, 4, 25, 7, 0, tzinfo=UTC)
    out: dict[str, Any] = {}
    for n in sizes:
        t0 = time.perf_counter()
        floor = _floor_of(n, at)
        now = at + timedelta(seconds=10)
        floor.advance(now)
        assert len(floor.pool(PROMO, PoolKind.SLOTS)) == n
        built = time.perf_counter() - t0
        rotation = Rotation(n)
        lat: dict[str, list[float]] = {"warm": [], "churn": [], "cold_rehash": []}
        session: DrawSession | None = None
        k = 0
        gc.collect()
        gc.freeze()
        for mode in ("warm", "churn"):
            for j in range(n_picks + 2):
                if k % 6 == 0:
                    session = DrawSession(f"b-{n}-{k}", PROMO, floor)
                    seed = hashlib.sha256(f"seed-{n}-{k}".encode()).digest()
                    session.open(Command(f"open-{k}", STAFF, now), seed)
                assert session is not None
                now += timedelta(milliseconds=10)
                if mode == "churn":
                    for _ in range(CHANGES // 2):
                        floor.apply_many(rotation.events(now))
                cmd = Command(f"draw-{k}", STAFF, now)
                gc.disable()
                t1 = time.perf_counter()
                outcome = session.draw(cmd, PoolKind.SLOTS)
                dt = time.perf_counter() - t1
                gc.enable()
                assert outcome.pick is not None
                k += 1
                if j >= 2:  # the first two: warm-up, and the cache's first build
                    lat[mode].append(dt * 1000)
        for _ in range(max(5, n_picks // 10)):
            gc.disable()
            t1 = time.perf_counter()
            pool = list(floor.pool(PROMO, PoolKind.SLOTS))
            hashlib.sha256("\n".join(pool).encode()).hexdigest()
            lat["cold_rehash"].append((time.perf_counter() - t1) * 1000)
            gc.enable()
        gc.unfreeze()
        out[str(n)] = {
            m: {"p50": round(percentile(v, 50), 3), "p99": round(percentile(v, 99), 3)}
            for m, v in lat.items()
        }
        r = out[str(n)]
        say(
            f"  {n:>9,} eligible (built in {built:.0f} s): warm p50 {r['warm']['p50']} p99"
            f" {r['warm']['p99']} ms; {CHANGES:,} changes p50 {r['churn']['p50']} p99"
            f" {r['churn']['p99']} ms; cold rehash p50 {r['cold_rehash']['p50']} ms"
        )
        del floor, rotation, session
        gc.collect()
    return out

"""bench/core.py's measures of the paths the daemon runs (issue 20).

- ingest: the same events through Floor.apply_many (prebuilt list), Service.ingest (in
  batches as the sources deliver them) and MqttIngest.handle (JSON payloads on their
  topics, decoded, checked and applied), in the same round, median of rounds;
(The picks on a changing floor are bench/core_picks.py's.)
"""

from __future__ import annotations

import asyncio
import gc
import json
import statistics
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from adapters.mqtt import MqttIngest
from adapters.mqtt.ingest import _Item
from adapters.mqtt.topics import Topics
from adapters.mqtt.validate import event_payload
from bench.harness import say
from raps.config import parse_config
from raps.daemon import INBOUND_FEEDS
from raps.metrics import Metrics
from raps.seal import SeedSealer, create_key_file, load_key
from raps.service import Service
from raps.store.database import open_engine
from selector.events import AnyFloorEvent, PlayerUpserted
from selector.floor import Floor
from selector.layout import FloorLayout
from selector.promotion import EarnRules, Promotion
from selector.records import Actor

PROMO = "raps"
BATCH = 500  # the MQTT ingest's batch (bench/mqtt.py's mean batch) and a SAS loop's order
STAFF = Actor("bench", "marketing")


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
    mqtt: bool = True,
) -> tuple[float, float, float]:
    """(Service.ingest events/s, its rate with the floor log flushes, MqttIngest.handle /s;
    nan without `mqtt`)."""
    cfg = parse_config(_config(folder, machines, tables), source="bench config")
    now = events[-1].ts + timedelta(seconds=1)
    rates: list[float] = []
    for path in ("service", "mqtt") if mqtt else ("service",):
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
    return rates[0], rates[1], rates[2] if mqtt else float("nan")


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
        f" MqttIngest.handle (JSON payloads on their topics, batches of {BATCH}); a"
        f" directory of {len(directory):,} players applied first, not timed =="
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

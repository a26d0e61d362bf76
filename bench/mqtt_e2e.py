"""`bench/mqtt.py --e2e`: the whole `raps run` process fed by `mosquitto_pub` publishers.

A private Mosquitto; per QoS and round a fresh daemon (`raps run` on its own SQLite, its
MQTT ingest subscribed to the slot topics, logs at warning), started and ready before
anything is published; then one `mosquitto_pub -l` per machine topic publishes its share
of the stream (a card-in, then games; timestamps just behind the clock, so every event
passes the ingest's checks).  The daemon's own /metrics is polled every 20 ms:
applied events/s = events applied (raps_events_ingested_total) / (time the last was
applied - time the first was), rejections counted too (raps_events_rejected_total).
The publishers' own finishing time is given beside it: when they finish long before the
daemon does, the figure is the daemon's, not theirs.  Median of rounds per QoS.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import statistics
import tempfile
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.harness import ROOT, RapsProcess, say
from tests.mqtt_broker import PrivateMosquitto, floor_config_text

MACHINES = ("M01", "M02", "M03", "M04")
POLL = 0.02
TIMEOUT = 300.0
_SAMPLE = re.compile(r"^(raps_events_(?:ingested|rejected)_total)\{[^}]*\} ([0-9.e+]+)$", re.M)


def streams(folder: Path, n: int, tag: str) -> list[tuple[str, Path]]:
    """n payloads in all, one file per machine topic, timestamps just behind the clock."""
    out = []
    per = n // len(MACHINES)
    base = datetime.now(UTC) - timedelta(seconds=per / 1000 + 120)
    for mi, machine in enumerate(MACHINES):
        path = folder / f"{tag}-{machine}.txt"
        with path.open("w") as f:
            card = {"event_id": f"{tag}-{machine}-in", "ts": base.isoformat(),
                    "type": "card_inserted", "machine": machine,
                    "card": f"600000000{mi}"}  # fmt: skip
            f.write(json.dumps(card, separators=(",", ":")) + "\n")
            for i in range(per - 1):
                ts = (base + timedelta(milliseconds=i + 1)).isoformat(timespec="milliseconds")
                game = {"event_id": f"{tag}-{machine}-{i}", "ts": ts, "type": "game_played",
                        "machine": machine, "wager": 100 + (i % 7) * 50, "win": 0}  # fmt: skip
                f.write(json.dumps(game, separators=(",", ":")) + "\n")
        out.append((f"raps/v1/bench/slots/{machine}/events", path))
    return out


def counts(url: str) -> tuple[float, float]:
    """(events applied, events rejected) from the daemon's /metrics."""
    with urllib.request.urlopen(url + "/metrics", timeout=5) as r:
        body = r.read().decode()
    applied = rejected = 0.0
    for name, value in _SAMPLE.findall(body):
        if name.endswith("ingested_total"):
            applied += float(value)
        else:
            rejected += float(value)
    return applied, rejected


async def one_run(broker: PrivateMosquitto, folder: Path, qos: int, n: int, tag: str
                  ) -> dict[str, float]:  # fmt: skip
    folder.mkdir()
    cfg = folder / "raps.toml"
    cfg.write_text(
        floor_config_text(folder, "bench", broker.port)
        + '\n[http]\nhost = "127.0.0.1"\nport = 0\n'
        + '\n[logging]\nformat = "json"\nlevel = "warning"\n'
    )
    daemon = RapsProcess(cfg, folder / "ready.json", folder / "daemon.log", cwd=ROOT,
                         name="raps run (e2e)")  # fmt: skip
    daemon.spawn()
    try:
        daemon.wait_until_ready(120, 0.05)
        url = json.loads((folder / "ready.json").read_text())["url"]
        base_applied, _ = counts(url)  # the directory and anything the daemon made itself
        files = streams(folder, n, tag)
        t_pub = time.perf_counter()
        procs = []
        for topic, path in files:
            with path.open("rb") as f:
                args = ["-h", "127.0.0.1", "-p", str(broker.port), "-q", str(qos), "-t", topic,
                        "-l", "-M", "200"]  # fmt: skip
                procs.append(await asyncio.create_subprocess_exec("mosquitto_pub", *args, stdin=f))
        published = 0.0
        first = last = 0.0
        applied = rejected = 0.0
        deadline = time.monotonic() + TIMEOUT
        while True:
            if not published and all(p.returncode is not None for p in procs):
                published = time.perf_counter() - t_pub
            now = time.perf_counter()
            a, rejected = counts(url)
            a -= base_applied
            if a > applied:
                if applied == 0:
                    first = now
                applied, last = a, now
            if applied + rejected >= n:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"e2e: {applied:,.0f} of {n:,} applied in {TIMEOUT:.0f} s")
            await asyncio.sleep(POLL)
        for p in procs:
            await p.wait()
        published = published or time.perf_counter() - t_pub
    finally:
        daemon.stop()
    rate = (applied - 1) / (last - first) if last > first else float("nan")
    return {"applied_per_s": rate, "applied": applied, "rejected": rejected,
            "publishers_done_s": published, "daemon_last_applied_s": last - t_pub}  # fmt: skip


async def e2e(n: int, rounds: int, qos_levels: list[int]) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="raps-bench-mqtt-e2e-"))
    broker = PrivateMosquitto(max_queued=max(1_000_000, 2 * n), extra="queue_qos0_messages true\n")
    broker.start()
    say(f"e2e: mosquitto on 127.0.0.1:{broker.port}; {n:,} events per run, {rounds} round(s)")
    out: dict[str, Any] = {}
    try:
        for qos in qos_levels:
            runs = []
            for r in range(rounds):
                tag = f"e2e-q{qos}-r{r}"
                run = await one_run(broker, folder / tag, qos, n, tag)
                runs.append(run)
                say(
                    f"  qos {qos} round {r + 1}: `raps run` applied {run['applied_per_s']:,.0f}"
                    f" events/s ({run['applied']:,.0f} applied, {run['rejected']:,.0f} rejected);"
                    f" publishers done after {run['publishers_done_s']:.2f} s, the daemon's last"
                    f" event applied after {run['daemon_last_applied_s']:.2f} s"
                )
            rates = [x["applied_per_s"] for x in runs]
            out[f"qos{qos}"] = {
                "applied_events_per_s": round(statistics.median(rates)),
                "rounds": [{k: round(v, 3) for k, v in x.items()} for x in runs],
            }
    finally:
        broker.close()
        shutil.rmtree(folder, ignore_errors=True)
    return out

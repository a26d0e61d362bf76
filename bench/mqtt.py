"""Benchmark: sustained MQTT ingest from a real Mosquitto into the core, vs a bare subscriber.

Run from the repository root:

    .venv/bin/python bench/mqtt.py            # full run (3 rounds of 100k messages per QoS)
    .venv/bin/python bench/mqtt.py --quick    # one round of 20k messages (under a minute)
    .venv/bin/python bench/mqtt.py --e2e      # the whole `raps run` fed by mosquitto_pub
                                              # (bench/mqtt_e2e.py), applied events/s

Set-up: a private Mosquitto 2.0 (Debian package) on a free port, persistence on,
queues large enough that nothing is dropped; `mosquitto_pub -l` (mosquitto-clients,
C) publishes the stream, one process per machine topic, so the broker and the
publishers are never the bottleneck and the subscriber's own rate is what is measured.
The stream: for each of 4 slot machines a card-in then games (games are ~90% of a
floor's traffic), as JSON payloads that pass every check.

Measured, at QoS 0 and QoS 1, on the same broker in the same run, alternating:

- paho:   a bare paho subscriber (paho-mqtt's own synchronous receive loop,
          `client.loop()`, an on_message that only counts): the reference of the issue's
          target, the same receive loop doing nothing;
- mosquitto_sub: the C client (`-C n`, output to /dev/null), for scale;
- bare:   a bare aiomqtt subscriber (`async for message in client.messages`, nothing done
          with the messages), reported beside the others (slower than paho's loop);
- receiver: the ingest's receive path doing nothing: its receiver process
          (adapters.mqtt.receiver) forwarding batches that are only counted and
          acknowledged; ingest / receiver is what the work itself costs;
- ingest: adapters.mqtt.MqttIngest into a real raps.service.Service (SQLite floor log
          flushed every 0.5 s and the 0.2 s tick running, as in the daemon): its
          receiver process, then JSON parse, schema check, topic and clock rules,
          FloorEvent, ordering guard, core apply, the floor log written before the
          manual acknowledgements.  Its CPU figure is the daemon process's alone (the
          receiver's is not in it).

Rate = messages / (time of the last message handled - time of the first received).
Before the first round, a warm-up round (half the messages, at most 20k; printed, not
counted) runs every subscriber once: the first run in a process pays for its first
allocations and caches, and the daemon runs warm.  Ratios divide the figures of the same
round; the median of the rounds is reported.
Target (issue 20): ingest >= 0.8 x the bare paho subscriber at each QoS, backlog mode
(paho and mosquitto_sub are always measured on a backlog, in both modes).  The last line
printed is one JSON object with every figure and whether each target is met.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import platform
import signal
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import aiomqtt  # noqa: E402
import structlog  # noqa: E402

from adapters.mqtt import MqttIngest  # noqa: E402
from adapters.mqtt.ingest import BATCH_MAX, CREDIT, RECEIVE_MAXIMUM  # noqa: E402
from adapters.mqtt.link import ReceiverLink  # noqa: E402
from adapters.mqtt.link_wire import LinkSettings  # noqa: E402
from bench.harness import print_result, say  # noqa: E402
from bench.mqtt_e2e import e2e  # noqa: E402
from raps.config import parse_config  # noqa: E402
from raps.daemon import INBOUND_FEEDS  # noqa: E402
from raps.gcpolicy import settle_after_start  # noqa: E402
from raps.logs import configure  # noqa: E402
from raps.metrics import Metrics  # noqa: E402
from raps.seal import SeedSealer, load_key  # noqa: E402
from raps.service import Service  # noqa: E402
from raps.store.database import open_engine  # noqa: E402
from tests.mqtt_broker import PrivateMosquitto, floor_config_text  # noqa: E402

TZ = ZoneInfo("Africa/Johannesburg")
NOW = datetime(2026, 4, 25, 12, 0, tzinfo=TZ)
MACHINES = ("M01", "M02", "M03", "M04")
TARGET_RATIO = 0.8
TIMEOUT = 300.0
WARMUP_MESSAGES = 20_000
SUBSCRIPTIONS = ("raps/v1/bench/slots/+/events", "raps/v1/bench/tables/+/events")


def write_stream(folder: Path, site: str, n: int, tag: str) -> list[tuple[str, Path]]:
    """One file of payload lines per machine topic; n messages in all."""
    out = []
    per = n // len(MACHINES)
    base = NOW - timedelta(minutes=30)
    for mi, machine in enumerate(MACHINES):
        path = folder / f"{tag}-{machine}.txt"
        with path.open("w") as f:
            card = {
                "event_id": f"{tag}-{machine}-in",
                "ts": base.isoformat(),
                "type": "card_inserted",
                "machine": machine,
                "card": f"600000000{mi}",
            }
            f.write(json.dumps(card, separators=(",", ":")) + "\n")
            for i in range(per - 1):
                ts = (base + timedelta(milliseconds=i)).isoformat(timespec="milliseconds")
                game = {
                    "event_id": f"{tag}-{machine}-{i}",
                    "ts": ts,
                    "type": "game_played",
                    "machine": machine,
                    "wager": 100 + (i % 7) * 50,
                    "win": 0,
                }
                f.write(json.dumps(game, separators=(",", ":")) + "\n")
        out.append((f"raps/v1/{site}/slots/{machine}/events", path))
    return out


async def publish(port: int, qos: int, streams: list[tuple[str, Path]]) -> None:
    procs = []
    for topic, path in streams:
        with path.open("rb") as f:
            args = ["-h", "127.0.0.1", "-p", str(port), "-q", str(qos), "-t", topic, "-l"]
            procs.append(
                await asyncio.create_subprocess_exec("mosquitto_pub", *args, "-M", "200", stdin=f)
            )
    for p in procs:
        if await p.wait() != 0:
            raise RuntimeError(f"mosquitto_pub exited with {p.returncode}")


async def wait_until(done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not done():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        await asyncio.sleep(0.005)


async def prepare_session(port: int, client_id: str) -> None:
    """Create the persistent session (subscriptions) that the backlog is queued for."""
    client = aiomqtt.Client("127.0.0.1", port, identifier=client_id, clean_session=False)
    async with client:
        await client.subscribe([(t, 1) for t in SUBSCRIPTIONS])


async def feed(
    port: int, qos: int, streams: list[tuple[str, Path]], live: bool
) -> asyncio.Task[None]:
    """Backlog mode: publish everything now and return when the broker holds it."""
    task = asyncio.create_task(publish(port, qos, streams))
    if not live:
        await task
        await asyncio.sleep(0.5)  # QoS 0: let the broker read the last packets
    return task


async def run_bare(
    port: int, qos: int, n: int, streams: list[tuple[str, Path]], live: bool
) -> tuple[float, float]:
    client_id = f"bench-bare-{uuid.uuid4().hex[:8]}"
    if not live:
        await prepare_session(port, client_id)
        pub = await feed(port, qos, streams, live)
    client = aiomqtt.Client("127.0.0.1", port, identifier=client_id, clean_session=False)
    # backlog: the clock starts at connect (the broker sends as soon as it accepts)
    first, cpu0 = (0.0, 0.0) if live else (time.perf_counter(), time.process_time())
    async with client:
        await client.subscribe([(t, 1) for t in SUBSCRIPTIONS])
        if live:
            pub = await feed(port, qos, streams, live)
        got = 0
        async for _message in client.messages:
            if not first:
                first, cpu0 = time.perf_counter(), time.process_time()
            got += 1
            if got >= n:
                break
        last, cpu1 = time.perf_counter(), time.process_time()
        await pub
    return n / (last - first), (cpu1 - cpu0) / n * 1e6


async def run_receiver(
    port: int, qos: int, n: int, streams: list[tuple[str, Path]], live: bool
) -> tuple[float, float]:
    """The ingest's receiver process, its batches only counted and acknowledged."""
    client_id = f"bench-recv-{uuid.uuid4().hex[:8]}"
    if not live:
        await prepare_session(port, client_id)
        pub = await feed(port, qos, streams, live)
    settings = LinkSettings(
        host="127.0.0.1", port=port, client_id=client_id, protocol="3.1.1", username=None,
        password=None, tls=False, ca_file=None, subscriptions=list(SUBSCRIPTIONS),
        barrier="raps/v1/bench/ingest/barrier", deadletter="raps/v1/bench/deadletter",
        batch_max=BATCH_MAX, receive_maximum=RECEIVE_MAXIMUM, session_expiry=3600,
        backoff_initial=0.5, backoff_max=5.0,
    )  # fmt: skip
    up = asyncio.Event()
    link = ReceiverLink(settings, lambda _c: up.set(), lambda _c: None, structlog.get_logger())
    await link.start()
    first, cpu0 = (0.0, 0.0) if live else (time.perf_counter(), time.process_time())
    try:
        link.credit(CREDIT)
        if live:
            await up.wait()
            pub = await feed(port, qos, streams, live)
        got = 0
        while got < n:
            conn, messages = await link.batch()
            link.credit(1)
            if not first:
                first, cpu0 = time.perf_counter(), time.process_time()
            got += len(messages)
            link.ack(conn, messages)
        last, cpu1 = time.perf_counter(), time.process_time()
        await link.stop(3.0)
    finally:
        await link.close()
    await pub
    return n / (last - first), (cpu1 - cpu0) / n * 1e6


async def run_paho(port: int, qos: int, n: int, streams: list[tuple[str, Path]]) -> float:
    """A bare paho subscriber on a backlog: paho's receive loop, messages only counted."""
    import paho.mqtt.client as paho_mqtt

    client_id = f"bench-paho-{uuid.uuid4().hex[:8]}"
    await prepare_session(port, client_id)
    await feed(port, qos, streams, live=False)

    def receive() -> float:
        got = [0]
        first = [0.0]

        def on_message(_c: Any, _u: Any, _m: Any) -> None:
            if not got[0]:
                first[0] = time.perf_counter()
            got[0] += 1

        client = paho_mqtt.Client(
            paho_mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, clean_session=False
        )
        client.on_message = on_message
        client.connect("127.0.0.1", port)
        deadline = time.monotonic() + TIMEOUT
        while got[0] < n:
            client.loop(timeout=0.1)
            if time.monotonic() > deadline:
                raise TimeoutError("paho subscriber")
        last = time.perf_counter()
        client.disconnect()
        return n / (last - first[0])

    return await asyncio.to_thread(receive)


async def run_mosquitto_sub(port: int, qos: int, n: int, streams: list[tuple[str, Path]]) -> float:
    """mosquitto_sub (C) draining the same backlog; from its start to its exit."""
    client_id = f"bench-msub-{uuid.uuid4().hex[:8]}"
    await prepare_session(port, client_id)
    await feed(port, qos, streams, live=False)
    args = ["-h", "127.0.0.1", "-p", str(port), "-i", client_id, "-c", "-q", "1"]
    for topic in SUBSCRIPTIONS:
        args += ["-t", topic]
    t0 = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        "mosquitto_sub", *args, "-C", str(n), stdout=asyncio.subprocess.DEVNULL
    )
    if await asyncio.wait_for(proc.wait(), TIMEOUT) != 0:
        raise RuntimeError(f"mosquitto_sub exited with {proc.returncode}")
    return n / (time.perf_counter() - t0)


async def every(
    seconds: float, step: Callable[[], Awaitable[None]], stopping: asyncio.Event
) -> None:
    """A periodic step, stopped between steps (never cancelled in a database write)."""
    while not stopping.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), seconds)
        await step()


async def run_ingest(
    port: int, qos: int, n: int, streams: list[tuple[str, Path]], folder: Path, live: bool
) -> tuple[float, dict[str, Any]]:
    client_id = f"bench-ingest-{uuid.uuid4().hex[:8]}"
    if not live:
        await prepare_session(port, client_id)
        pub = await feed(port, qos, streams, live)
    cfg = parse_config(floor_config_text(folder, "bench", port))
    cfg = cfg.model_copy(
        update={"storage": cfg.storage.model_copy(update={"event_flush_seconds": 0.5})}
    )
    sealer = SeedSealer(load_key(folder / "seed.key"))
    service = Service(cfg, open_engine(cfg.storage.url), sealer, Metrics(), lambda: NOW)
    await service.start()
    settle_after_start()  # as `raps run` does once it is ready (raps.gcpolicy)
    ingest = MqttIngest(
        cfg.mqtt, "bench", service.ingest_detailed, service.reject, lambda up: None,
        lambda: NOW, port=port, known=cfg.layout(), client_id=client_id,
        families=INBOUND_FEEDS, flush=service.flush_events, room=service.ingest_room,
    )  # fmt: skip
    first, cpu0 = (0.0, 0.0) if live else (time.perf_counter(), time.process_time())
    stopping = asyncio.Event()
    tasks = [
        asyncio.create_task(ingest.run()),
        asyncio.create_task(every(cfg.storage.event_flush_seconds, service.flush_events, stopping)),
        asyncio.create_task(every(0.2, service.tick, stopping)),
    ]
    try:
        if live:
            await wait_until(lambda: ingest.connected, "ingest connect")
            pub = await feed(port, qos, streams, live)

        def handled() -> int:
            return ingest.applied + ingest.duplicates + sum(ingest.dead_letters.values())

        while not first:
            if ingest.received:
                first, cpu0 = time.perf_counter(), time.process_time()
            else:
                await asyncio.sleep(0.0005)
        await wait_until(lambda: handled() >= n, "ingest")
        last, cpu1 = time.perf_counter(), time.process_time()
        await pub
        info = {
            "applied": ingest.applied,
            "dead_letters": sum(ingest.dead_letters.values()),
            "duplicates": ingest.duplicates,
            "cpu_us": (cpu1 - cpu0) / n * 1e6,
            "mean_batch": round(ingest.received / max(1, ingest.batches), 1),
        }
    finally:
        stopping.set()
        tasks[0].cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await service.stop()
    return n / (last - first), info


async def measure(
    kind: str, port: int, qos: int, n: int, streams: list[tuple[str, Path]], folder: Path,
    live: bool,
) -> tuple[float, float, str]:  # fmt: skip
    """One run of one subscriber: msg/s, CPU us a message (in-process ones), a note."""
    if kind == "ingest":
        folder.mkdir()
        rate, info = await run_ingest(port, qos, n, streams, folder, live)
        applied, batch = info["applied"], info["mean_batch"]
        return rate, info["cpu_us"], f", applied {applied:,}, mean batch {batch}"
    if kind == "paho":
        return await run_paho(port, qos, n, streams), 0.0, ""
    if kind == "mosquitto_sub":
        return await run_mosquitto_sub(port, qos, n, streams), 0.0, ""
    run = run_receiver if kind == "receiver" else run_bare
    rate, cpu = await run(port, qos, n, streams, live)
    return rate, cpu, ""


async def bench(
    n: int, rounds: int, qos_levels: list[int], live: bool, warmup: bool = True
) -> dict[str, Any]:
    # the whole process, bare subscribers included, runs under the daemon's collector
    # settings, so both sides of the ratio are measured alike
    settle_after_start()
    folder = Path(tempfile.mkdtemp(prefix="raps-bench-mqtt-"))
    broker = PrivateMosquitto(max_queued=max(1_000_000, 2 * n), extra="queue_qos0_messages true\n")
    broker.start()
    say(f"mosquitto on 127.0.0.1:{broker.port}; {n:,} messages per run, {rounds} round(s)")
    results: dict[str, Any] = {}
    try:
        for qos in qos_levels:
            kinds = ("paho", "ingest", "bare", "mosquitto_sub", "receiver")
            rates: dict[str, list[float]] = {k: [] for k in kinds}
            cpus: dict[str, list[float]] = {k: [] for k in kinds}
            # round 0 warms every path up (the first run of a process pays for its first
            # allocations and caches; the daemon runs warm); it is reported, not counted
            first = 0 if qos == qos_levels[0] and warmup else 1
            for r in range(first, rounds + 1):
                size = n if r else min(n // 2, WARMUP_MESSAGES)
                for kind in kinds:
                    tag = f"q{qos}r{r}{kind}"
                    streams = write_stream(folder, "bench", size, tag)
                    rate, cpu, extra = await measure(kind, broker.port, qos, size, streams,
                                                     folder / tag, live)  # fmt: skip
                    if r:
                        rates[kind].append(rate)
                        cpus[kind].append(cpu)
                    which = f"round {r}" if r else "warm-up"
                    say(
                        f"  qos {qos} {which:8} {kind:10} {rate:10,.0f} msg/s "
                        f"({cpu:.0f} us CPU/msg{extra})"
                    )
                    for _, path in streams:
                        path.unlink()
            med = {k: statistics.median(v) for k, v in rates.items()}
            # ratios of figures from the same round, then their median
            per_round = [i / p for i, p in zip(rates["ingest"], rates["paho"], strict=True)]
            ratio = statistics.median(per_round)
            say(
                f"qos {qos}: paho {med['paho']:,.0f}/s,"
                f" mosquitto_sub {med['mosquitto_sub']:,.0f}/s,"
                f" aiomqtt bare {med['bare']:,.0f}/s, receiver {med['receiver']:,.0f}/s, "
                f"ingest {med['ingest']:,.0f}/s: ingest/paho {ratio:.2f} (target >= {TARGET_RATIO})"
            )
            results[f"qos{qos}"] = {
                "paho_msgs_per_s": round(med["paho"]),
                "mosquitto_sub_msgs_per_s": round(med["mosquitto_sub"]),
                "ratio_vs_paho": round(ratio, 3),
                "ratio_vs_paho_rounds": [round(x, 3) for x in per_round],
                "bare_msgs_per_s": round(med["bare"]),
                "receiver_msgs_per_s": round(med["receiver"]),
                "ingest_msgs_per_s": round(med["ingest"]),
                "ratio_vs_aiomqtt_bare": round(med["ingest"] / med["bare"], 3),
                "ratio_vs_receiver": round(med["ingest"] / med["receiver"], 3),
                "cpu_us_per_msg": {k: round(statistics.median(v), 1) for k, v in cpus.items()},
                "runs": {k: [round(x) for x in v] for k, v in rates.items()},
            }
    finally:
        broker.close()
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--quick", action="store_true", help="one round of 20k messages")
    ap.add_argument("-n", type=int, help="messages per run")
    ap.add_argument("--rounds", type=int)
    ap.add_argument(
        "--live",
        action="store_true",
        help="publish while receiving (depends on the publishers' CPU) instead of a backlog",
    )
    ap.add_argument("--e2e", action="store_true", help="the whole `raps run` process instead")
    args = ap.parse_args(argv)
    n = args.n or (20_000 if args.quick else 100_000)
    rounds = args.rounds or (1 if args.quick else 3)
    configure("console", "warning")
    logging.getLogger("mqtt").setLevel(logging.ERROR)
    # SIGTERM unwinds like Ctrl-C, so the private broker is stopped and its folder removed
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    t0 = time.monotonic()
    if args.e2e:
        res = asyncio.run(e2e(n, rounds, [0, 1]))
        print_result({"bench": "mqtt --e2e", "mode": "quick" if args.quick else "full",
                      "events_per_run": n, "rounds": rounds, **res,
                      "seconds": round(time.monotonic() - t0, 1),
                      "loadavg_1min": os.getloadavg()[0],
                      "python": platform.python_version()})  # fmt: skip
        return 0
    results = asyncio.run(bench(n, rounds, [0, 1], args.live))
    targets = {
        f"{q}_ingest_vs_paho_ge_{TARGET_RATIO}": results[q]["ratio_vs_paho"] >= TARGET_RATIO
        for q in ("qos0", "qos1")
    }
    out = {
        "bench": "mqtt",
        "mode": "quick" if args.quick else "full",
        "stream": "live" if args.live else "backlog",
        "messages_per_run": n,
        "rounds": rounds,
        **results,
        "target_ratio": TARGET_RATIO,
        "targets_met": targets,
        "all_targets_met": all(targets.values()),
        "seconds": round(time.monotonic() - t0, 1),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }
    print_result(out)
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())

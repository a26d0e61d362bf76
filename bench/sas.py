"""SAS benchmark: how many machines one core polls at 200 ms, and codec decode rate.

    python bench/sas.py [--quick]

1. Codec: replies of the kinds a floor produces (no-activity bytes, game start and
   end events, meter replies) decoded in a loop; frames per second.
2. Capacity: simulated machines (adapters.sas.egm, playing 10 games a minute)
   on in-memory SAS loops of 32 machines each, all loops and all simulators in
   ONE event loop on one core, polled at 200 ms in real-time mode, every event
   applied to the core through Service.ingest as the daemon does (a started
   Service on SQLite, its floor log flushed after each step; logs at warning).
   The count doubles until 0.1% of the poll slots are missed, then a bisection
   finds the largest count with fewer (the issue's bar: the limit reported; the
   largest step measured with none missed is reported too).  A slot is missed
   when its poll cannot start within the 200 ms cycle it belongs to; slots
   that start more than 20 ms late are reported too).  The simulators' own
   work is on the same core, so the figure is conservative.  Other processes
   on a shared machine can stall this one for longer than a cycle: a step
   that fails is run once more, and the CPU cost per poll (with the machine
   count one core could carry by CPU alone) is reported beside it.

--quick measures the same, shorter: each step 1.5 s after a 0.5 s warm-up (full
runs: 20 s after 4 s), the bisection stopped at 250 machines (full: 100), the codec
loop 1 s (full: 3 s).

Prints as it goes; the last line is one JSON object with the figures and
whether the targets are met (>= 1,000 machines at 200 ms with < 0.1% missed).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adapters.sas import codec
from adapters.sas.config import SimulatorConfig, simulated_channels
from adapters.sas.source import SasChannel
from bench.core_paths import _config
from bench.harness import print_result
from raps.config import parse_config
from raps.logs import configure
from raps.metrics import Metrics
from raps.seal import SeedSealer, load_key
from raps.service import Service
from raps.store.database import open_engine
from selector.events import AnyFloorEvent

Ingest = Callable[[list[AnyFloorEvent]], int]

TARGET_MACHINES = 1000
MAX_MISSED = 0.001
PER_CHANNEL = 32


def bench_codec(seconds: float) -> float:
    gp = codec.Request(1, None)
    meters = codec.decode_request(codec.long_poll(1, 0x0F))
    mix = [
        (gp, b"\x00"),
        (gp, b"\x00"),
        (gp, b"\x00"),
        (gp, codec.event_message(1, 0x7E, {"credits_wagered": 25, "coin_in_meter": 123456})),
        (gp, codec.event_message(1, 0x7F, {"win_credits": 40})),
        (gp, codec.event_message(1, 0x11)),
        (meters, codec.meters_reply(1, 0x0F, {"coin_in": 123456, "games_played": 789})),
    ] * 100
    decode = codec.decode_reply
    n = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for req, frame in mix:
            decode(req, frame)
        n += len(mix)
    return n / (time.perf_counter() - t0)


async def run_floor(
    machines: int, warmup: float, seconds: float, ingest: Ingest
) -> dict[str, float]:
    ids = [f"M{i + 1:05d}" for i in range(machines)]  # the service's layout's machines
    sim = SimulatorConfig(games_per_minute=10.0, seed=1)
    events = 0
    applied = 0

    def emit(batch: list[AnyFloorEvent]) -> None:
        nonlocal events, applied
        events += len(batch)
        applied += ingest(batch)

    rejects: dict[str, int] = {}

    def reject(reason: str) -> None:
        rejects[reason] = rejects.get(reason, 0) + 1

    channels = [
        SasChannel(c, None, emit, reject, lambda _n, _u: None)
        for c in simulated_channels(ids, per_channel=PER_CHANNEL, simulate=sim)
    ]
    tasks = [asyncio.create_task(c.run()) for c in channels]
    await asyncio.sleep(warmup)
    before = [dict(c.poller.stats) for c in channels]
    ev0 = events
    cpu0, t0 = time.process_time(), time.perf_counter()
    await asyncio.sleep(seconds)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0
    after = [dict(c.poller.stats) for c in channels]
    for c in channels:
        c.stop()
    await asyncio.gather(*tasks)

    def delta(key: str) -> int:
        return sum(a.get(key, 0) - b.get(key, 0) for a, b in zip(after, before, strict=True))

    slots, missed, polls = delta("slots"), delta("missed_slots"), delta("polls")
    late = delta("late_slots")
    up = sum(c.link_up for c in channels)
    return {
        "machines": machines,
        "channels": len(channels),
        "slots": slots,
        "missed_slots": missed,
        "missed_ratio": missed / slots if slots else 1.0,
        "late_over_20ms_ratio": late / slots if slots else 1.0,
        "polls_per_s": polls / wall,
        "expected_polls_per_s": machines / 0.2,
        "events_per_s": (events - ev0) / wall,
        "events_applied": applied,
        "cpu_share": cpu / wall,
        "cpu_us_per_poll": 1e6 * cpu / polls if polls else 0.0,
        "channels_up": up,
        "rejects": sum(rejects.values()),
        "loadavg_1m": os.getloadavg()[0],
    }


def _ok(r: dict[str, float]) -> bool:
    """The issue's bar: fewer than 0.1% of the poll slots missed, every loop up."""
    return r["missed_ratio"] < MAX_MISSED and r["channels_up"] == r["channels"]


async def search(quick: bool, folder: Path) -> tuple[int, list[dict[str, float]]]:
    """Double the machines until 0.1% of the slots are missed, then bisect: the largest with
    fewer missed."""
    top = 16_000
    cfg = parse_config(_config(folder, top, 0), source="bench config")
    now = datetime.now(UTC)
    service = Service(
        cfg, open_engine(cfg.storage.url), SeedSealer(load_key(folder / "seed.key")),
        Metrics(), lambda: now,
    )  # fmt: skip
    await service.start()
    warmup, seconds = (0.5, 1.5) if quick else (4.0, 20.0)
    resolution = 250 if quick else 100
    results: list[dict[str, float]] = []

    async def step(n: int) -> bool:
        r: dict[str, float] = {}
        for attempt in (1, 2):  # other processes can stall this one: a failing step reruns
            gc.collect()
            r = await run_floor(n, warmup, seconds, lambda b: service.ingest(b, "sas"))
            r["attempt"] = attempt
            await service.flush_events()
            if _ok(r):
                break
        results.append(r)
        print(
            f"{n:>6} machines in {r['channels']:>4} loops: "
            f"missed {r['missed_ratio']:.4%} of {r['slots']:,} slots "
            f"(late > 20 ms {r['late_over_20ms_ratio']:.2%}), "
            f"{r['polls_per_s']:,.0f} polls/s (want {r['expected_polls_per_s']:,.0f}), "
            f"{r['events_per_s']:,.0f} events/s ({r['events_applied']:,} applied by"
            f" Service.ingest), cpu {r['cpu_share']:.0%} ({r['cpu_us_per_poll']:.0f} us/poll),"
            f" load {r['loadavg_1m']:.1f} -> {'ok' if _ok(r) else 'missed slots'}",
            flush=True,
        )
        return _ok(r)

    try:
        good, bad = 0, 0
        n = 500
        while n <= top:
            if not await step(n):
                bad = n
                break
            good, n = n, n * 2
        while bad and bad - good > resolution:
            mid = (good + bad) // 2
            if await step(mid):
                good = mid
            else:
                bad = mid
    finally:
        await service.stop()
    return good, results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a short run (under 60 s)")
    args = ap.parse_args()
    quick = args.quick
    configure("console", "warning")
    print(f"SAS benchmark ({'quick' if quick else 'full'}); poller and simulators share one core")

    rate = bench_codec(1.0 if quick else 3.0)
    print(f"codec: {rate:,.0f} replies decoded per second")
    with tempfile.TemporaryDirectory(prefix="raps-bench-sas-") as tmp:
        capacity, results = asyncio.run(search(quick, Path(tmp)))
    none = [r for r in results if r["missed_slots"] == 0 and r["channels_up"] == r["channels"]]
    none_missed = max((int(r["machines"]) for r in none), default=0)
    ok_steps = [r for r in results if r["machines"] <= capacity] or results
    us = sorted(r["cpu_us_per_poll"] for r in ok_steps)[len(ok_steps) // 2]
    summary = {
        "bench": "sas",
        "quick": quick,
        "codec_decode_frames_per_s": round(rate),
        "machines_at_200ms": capacity,
        "machines_at_200ms_meaning": "largest count found with < 0.1% of slots missed",
        "machines_with_0_missed_measured": none_missed,
        "max_missed_slot_ratio": MAX_MISSED,
        "events_applied_via": "Service.ingest",
        "cpu_us_per_poll_median": round(us, 1),
        "machines_per_core_by_cpu": round(1e6 / (us * 5)) if us else None,
        "machines_per_loop": PER_CHANNEL,
        "steps": [
            {k: (round(v, 6) if isinstance(v, float) else v) for k, v in r.items()} for r in results
        ],
        "note": "poller and simulated machines share one core: the capacity is conservative; "
        "other processes on the machine (loadavg) take the core away and lower it further",
        "cpus": os.cpu_count(),
        "targets": {
            "machines_at_200ms": {
                "target": TARGET_MACHINES,
                "value": capacity,
                "met": capacity >= TARGET_MACHINES,
            }
        },
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    print_result(summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

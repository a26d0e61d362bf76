"""SAS benchmark: how many machines one core polls at 200 ms, and codec decode rate.

    python bench/sas.py [--quick]

1. Codec: replies of the kinds a floor produces (no-activity bytes, game start and
   end events, meter replies) decoded in a loop; frames per second.
2. Capacity: simulated machines (adapters.sas.egm, playing 10 games a minute)
   on in-memory SAS loops of 32 machines each, all loops and all simulators in
   ONE event loop on one core, polled at 200 ms in real-time mode.  The count
   steps up until more than 0.1% of poll slots are missed (a slot is missed
   when its poll cannot start within the 200 ms cycle it belongs to; slots
   that start more than 20 ms late are reported too).  The simulators' own
   work is on the same core, so the figure is conservative.  Other processes
   on a shared machine can stall this one for longer than a cycle: a step
   that fails is run once more, and the CPU cost per poll (with the machine
   count one core could carry by CPU alone) is reported beside it.

Prints as it goes; the last line is one JSON object with the figures and
whether the targets are met (>= 1,000 machines at 200 ms with < 0.1% missed).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adapters.sas import codec
from adapters.sas.config import SimulatorConfig, simulated_channels
from adapters.sas.source import SasChannel
from bench.harness import print_result
from selector.events import AnyFloorEvent

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


async def run_floor(machines: int, warmup: float, seconds: float) -> dict[str, float]:
    ids = [f"m{i:05d}" for i in range(machines)]
    sim = SimulatorConfig(games_per_minute=10.0, seed=1)
    events = 0

    def emit(batch: list[AnyFloorEvent]) -> None:
        nonlocal events
        events += len(batch)

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
        "cpu_share": cpu / wall,
        "cpu_us_per_poll": 1e6 * cpu / polls if polls else 0.0,
        "channels_up": up,
        "rejects": sum(rejects.values()),
        "loadavg_1m": os.getloadavg()[0],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a short run (under 60 s)")
    args = ap.parse_args()
    quick = args.quick
    print(f"SAS benchmark ({'quick' if quick else 'full'}); poller and simulators share one core")

    rate = bench_codec(1.0 if quick else 3.0)
    print(f"codec: {rate:,.0f} replies decoded per second")

    if quick:
        steps, warmup, seconds = [1000, 1500, 2000, 2500, 3000], 1.5, 3.5
    else:
        steps = [1000, 1500, 2000, 2500, 3000, 3500, 4000, 5000, 6000, 8000]
        warmup, seconds = 4.0, 20.0
    results = []
    capacity = 0
    for n in steps:
        for attempt in (1, 2):  # other processes can stall this one: a failing step gets a rerun
            gc.collect()
            r = asyncio.run(run_floor(n, warmup, seconds))
            r["attempt"] = attempt
            ok = r["missed_ratio"] < MAX_MISSED and r["channels_up"] == r["channels"]
            if ok:
                break
        results.append(r)
        print(
            f"{n:>5} machines in {r['channels']:>3} loops: "
            f"missed {r['missed_ratio']:.4%} of {r['slots']:,} slots "
            f"(late > 20 ms {r['late_over_20ms_ratio']:.2%}), "
            f"{r['polls_per_s']:,.0f} polls/s (want {r['expected_polls_per_s']:,.0f}), "
            f"{r['events_per_s']:,.0f} events/s, cpu {r['cpu_share']:.0%} "
            f"({r['cpu_us_per_poll']:.0f} us/poll), "
            f"load {r['loadavg_1m']:.1f} -> "
            f"{'ok' if ok else 'over the limit'}"
        )
        if not ok:
            break
        capacity = n
    ok_steps = [r for r in results if r["machines"] <= capacity] or results
    us = sorted(r["cpu_us_per_poll"] for r in ok_steps)[len(ok_steps) // 2]
    summary = {
        "bench": "sas",
        "quick": quick,
        "codec_decode_frames_per_s": round(rate),
        "machines_at_200ms": capacity,
        "max_missed_slot_ratio": MAX_MISSED,
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

"""`bench/core.py --scale`: the scale curve of issue 20 item 4, written for
docs/performance.md.

At 1k, 10k, 100k and 1M players (--quick: up to 100k), from one command:

- events/s: raps.floorsim's traffic (games, cards, ratings) on a floor of
  min(players, 5,000) machines and 300 tables whose directory holds every player (applied
  first, not timed), through `Floor.apply_many` (the core, a prebuilt list) and through
  `Service.ingest` (batches of 500 as the sources deliver them, a started Service on
  SQLite; the floor log's flushes outside the figure), in the same round; median of rounds
  and the per-round ratio;
- picks (bench/core_picks.churn_picks, derivation v3): p50/p99 warm, under 1,000 pool
  changes between picks (churn), and the first pick after a start (the floor restored from
  its snapshot) with the cold digest, every player eligible; median of rounds;
- bytes per player: tracemalloc over a floor of that many players, each carded in at a
  machine, playing, eligible (the layout's own cost left out).

The table is printed in Markdown, ready for docs/performance.md, and the last line is one
JSON object with every figure.
"""

from __future__ import annotations

import asyncio
import gc
import os
import platform
import statistics
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.core_paths import _daemon_round
from bench.core_picks import PROMO, churn_picks, seat_players
from bench.harness import print_result, say
from raps.floorsim import FloorSimulator, demo_layout
from selector.events import PoolKind
from selector.floor import Floor
from selector.promotion import EarnRules, Promotion

START = datetime(2026, 4, 25, 6, 0, tzinfo=UTC)  # 08:00 SAST on a RAPS day
MACHINES = 5_000
TABLES = 300


def ingest_rates(n: int, n_events: int, rounds: int) -> dict[str, Any]:
    machines = min(n, MACHINES)
    layout = demo_layout(machines, TABLES)
    sim = FloorSimulator(layout, n, start=START, events_per_second=2_000)
    directory = sim.directory()
    events = list(sim.events(n_events))
    del sim
    core: list[float] = []
    service: list[float] = []
    for r in range(rounds):
        floor = Floor(layout, [Promotion(PROMO)], EarnRules())
        floor.apply_many(directory)
        gc.collect()
        gc.disable()
        t0 = time.perf_counter()
        floor.apply_many(events)
        core.append(len(events) / (time.perf_counter() - t0))
        gc.enable()
        del floor
        with tempfile.TemporaryDirectory(prefix="raps-bench-scale-") as tmp:
            svc, _, _ = asyncio.run(
                _daemon_round(Path(tmp), machines, TABLES, directory, events, [], mqtt=False)
            )
        service.append(svc)
        say(
            f"  {n:>9,} players, round {r + 1}: Floor.apply_many {core[-1]:,.0f} events/s,"
            f" Service.ingest {svc:,.0f} events/s ({len(events):,} events)"
        )
    ratios = [s / c for s, c in zip(service, core, strict=True)]
    return {
        "core_events_per_s": round(statistics.median(core)),
        "service_events_per_s": round(statistics.median(service)),
        "service_over_core": round(statistics.median(ratios), 3),
        "rounds": {"core": [round(x) for x in core], "service": [round(x) for x in service]},
        "events": len(events),
        "machines": machines,
    }


def bytes_per_player(n: int) -> dict[str, Any]:
    layout = demo_layout(n, 0)
    at = START + timedelta(hours=1)
    gc.collect()
    tracemalloc.start()
    floor = Floor(layout, [Promotion(PROMO)], EarnRules(), idle_seconds=3600)
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    seat_players(floor, n, at, "m")
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert floor.tracked_players == n == len(floor.pool(PROMO, PoolKind.SLOTS))
    per = (after - before) / n
    say(f"  {n:>9,} players (all eligible): {per:,.0f} bytes per player (tracemalloc)")
    return {"bytes_per_player": round(per, 1)}


def _cell(x: Any, fmt: str = ",.0f") -> str:
    return "n/a" if x is None else format(x, fmt)


def table(rows: dict[str, dict[str, Any]]) -> list[str]:
    out = [
        "| players | core events/s | Service.ingest events/s | warm p50 / p99 ms"
        " | churn (1,000 changes) p50 / p99 ms | first after a start ms (x warm p50)"
        " | cold digest ms | bytes / player |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for n, r in rows.items():
        p = r["picks"]
        out.append(
            f"| {int(n):,} | {_cell(r['ingest']['core_events_per_s'])}"
            f" | {_cell(r['ingest']['service_events_per_s'])}"
            f" | {p['warm']['p50']['median']:.2f} / {p['warm']['p99']['median']:.2f}"
            f" | {p['changes_1000']['p50']['median']:.2f} /"
            f" {p['changes_1000']['p99']['median']:.2f}"
            f" | {p['first_pick_ms']['median']:.2f} ({p['first_over_warm_p50']['median']:.1f}x)"
            f" | {p['cold_digest_ms']['median']:,.1f}"
            f" | {r['memory']['bytes_per_player']:,.0f} |"
        )
    return out


def scale_only(quick: bool) -> int:
    started = time.perf_counter()
    sizes = [1_000, 10_000, 100_000] if quick else [1_000, 10_000, 100_000, 1_000_000]
    n_events = 50_000 if quick else 200_000
    load_start = os.getloadavg()
    say("RAPS core benchmark, the scale curve (--scale" + (", --quick)" if quick else ")"))
    say(
        f"  Python {platform.python_version()}; load average at start {load_start[0]:.2f} on"
        f" {os.cpu_count()} CPUs; sizes {sizes}"
    )
    rows: dict[str, dict[str, Any]] = {}
    say(f"\n== events/s: {n_events:,} simulated events per round, median of rounds ==")
    for n in sizes:
        rows[str(n)] = {"ingest": ingest_rates(n, n_events, 3 if n < 1_000_000 else 2)}
        gc.collect()
    say("\n== bytes per player ==")
    for n in sizes:
        rows[str(n)]["memory"] = bytes_per_player(n)
        gc.collect()
    churn = churn_picks(sizes, 20 if quick else 100, 3 if quick else 5)
    for n in sizes:
        rows[str(n)]["picks"] = churn[str(n)]
    load_end = os.getloadavg()
    say(
        f"\n== the table (docs/performance.md): `python bench/core.py --scale"
        f"{' --quick' if quick else ''}`, load average {load_start[0]:.1f} at start,"
        f" {load_end[0]:.1f} at end, {time.perf_counter() - started:.0f} s =="
    )
    for line in table(rows):
        say(line)
    print_result({
        "scale": rows, "quick": quick, "python": platform.python_version(),
        "loadavg_1min": [round(load_start[0], 2), round(load_end[0], 2)],
        "wall_s": round(time.perf_counter() - started, 1),
    })  # fmt: skip
    return 0

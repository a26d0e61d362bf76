"""Benchmark of the RAPS core (selector/) against a report-style SQL peer.

Run from the repository root:

    .venv/bin/python bench/core.py            # full run (1M events, a few minutes at most)
    .venv/bin/python bench/core.py --quick    # short run (50k events, well under a minute)
    .venv/bin/python bench/core.py --profile  # add a cProfile of one ingest pass

What it measures (issue targets in brackets):

1. Ingest: a floor of 5,000 machines, 300 tables and 50,000 players simulated by
   raps.floorsim; the directory (PlayerUpserted) is applied first and counted apart,
   then >= 1M events are timed through Floor.apply_many [>= 750,000 events/s on one core].
   All events are built before any timing: building them is the adapters' job.
2. The SQL peer on the same event list: an in-memory SQLite sessions table updated by
   one statement per event (cursor.execute, commit every 10k) [core >= 2x its rate].
3. Pick latency at 1k, 10k and 50k eligible players (bench/core_pool.py): DrawSession.draw,
   which includes Floor.advance, the pool snapshot in canonical order, its SHA-256 digest
   and the HMAC pick [p99 <= 2 ms at 10k]; the SQL peer's ORDER BY RANDOM() LIMIT 1 for
   comparison.
4. Memory per tracked player, by tracemalloc (bench/core_pool.py) [<= 1 KiB].
5. The daemon's ingest paths (bench/core_paths.py): the same events through
   Service.ingest (batches of 500) and MqttIngest.handle (JSON payloads), beside
   apply_many in the same round; median of rounds.
6. Picks on a changing floor (bench/core_picks.py, derivation v3): warm, 10 and 1,000 pool
   changes between picks, a cold digest and the first pick after a start, at 10k, 100k and
   1M eligible (--quick: 10k, 100k) [issue 20: p99 <= 2 ms at 100k, <= 5 ms at 1M under
   1,000 changes; first pick after a start <= 3x a warm pick], median of rounds with the
   spread. `--picks` runs this part alone.

--quick is the same measurement, smaller: 50k events and 2 rounds for 1-2; for 5, 20k
events in 2 rounds, the Service given the directory of the players those events name
(1.4k) rather than all 50k; for 3, one floor grown from 1k to 10k to 50k eligible (the
players who join the pool play a second game), not a floor per size; for 4, a floor of
10k players; for 6, 2 rounds of 10 picks, one cold digest a round, and the floor
restored from its snapshot once (in the first round).

The last line printed is one JSON object with every figure and target.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import os
import platform
import pstats
import sqlite3
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.core_paths import daemon_ingest  # noqa: E402
from bench.core_picks import churn_picks, pick_targets, picks_only  # noqa: E402
from bench.core_pool import (  # noqa: E402
    PICK_ROUNDS,
    PLAYERS,
    POOL_SIZES,
    PROMO,
    TABLES,
    bench_memory,
    bench_picks,
    make_floor,
)
from bench.core_scale import scale_only  # noqa: E402
from bench.core_sql_peer import COMMIT_EVERY, SqlPeer  # noqa: E402
from bench.harness import print_result, say  # noqa: E402
from raps.floorsim import FloorSimulator, demo_layout  # noqa: E402
from selector.events import (  # noqa: E402
    AnyFloorEvent,
    PlayerUpserted,
    PoolKind,
)
from selector.layout import FloorLayout  # noqa: E402
from selector.promotion import EarnRules  # noqa: E402

MACHINES = 5_000
# Saturday 25 April 2026, 08:00 SAST: a RAPS session day, start of the qualifying window
START = datetime(2026, 4, 25, 6, 0, tzinfo=UTC)
EVENTS_PER_SECOND = 2_000

QUICK_EVENTS = 50_000  # --quick: events through the ingest paths
QUICK_MEMORY_PLAYERS = 10_000  # --quick: players in the tracemalloc floor
TARGET_EVENTS_PER_S = 750_000
TARGET_RATIO = 2.0
TARGET_PICK_P99_MS = 2.0
TARGET_PICK_POOL = 10_000
TARGET_BYTES_PER_PLAYER = 1024


def timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """Run fn with the cyclic garbage collector off; (wall seconds, CPU seconds, result)."""
    gc.collect()
    gc.disable()
    try:
        c0 = time.process_time()
        t0 = time.perf_counter()
        result = fn()
        wall = time.perf_counter() - t0
        return wall, time.process_time() - c0, result
    finally:
        gc.enable()


# ----------------------------------------------------------------------- ingest


def bench_ingest(
    layout: FloorLayout,
    directory: list[PlayerUpserted],
    events: list[AnyFloorEvent],
    passes: int,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Core and SQL peer passes, interleaved so that machine noise hits both alike."""
    say(
        f"\n== ingest: {passes} rounds; each round one core pass (Floor.apply_many on a fresh"
        f" Floor) then one SQL peer pass (fresh sqlite3 {sqlite3.sqlite_version} in-memory"
        f" database, one cursor.execute per event, commit every {COMMIT_EVERY:,}); gc off =="
    )
    core: dict[str, list[float]] = {"wall": [], "cpu": [], "dir": []}
    sql: dict[str, list[float]] = {"wall": [], "cpu": [], "dir": []}
    floor = make_floor(layout)
    peer = SqlPeer(layout, EarnRules())
    for i in range(passes):
        del floor
        floor = make_floor(layout)
        dt_dir, _, rej_dir = timed(lambda f=floor: f.apply_many(directory))
        dt, cpu, rejected = timed(lambda f=floor: f.apply_many(events))
        core["wall"].append(len(events) / dt)
        core["cpu"].append(len(events) / cpu)
        core["dir"].append(len(directory) / dt_dir)
        say(
            f"  round {i + 1} core: {len(events):,} events in {dt:.3f} s ="
            f" {core['wall'][-1]:>9,.0f} events/s (CPU-time rate {core['cpu'][-1]:,.0f};"
            f" directory {len(directory):,} upserts at {core['dir'][-1]:,.0f}/s;"
            f" rejected {rejected + rej_dir})"
        )
        peer.conn.close()
        peer = SqlPeer(layout, EarnRules())
        dt_dir, _, _ = timed(lambda p=peer: p.apply_many(directory))
        dt, cpu, n = timed(lambda p=peer: p.apply_many(events))
        sql["wall"].append(n / dt)
        sql["cpu"].append(n / cpu)
        sql["dir"].append(len(directory) / dt_dir)
        say(
            f"  round {i + 1} SQL:  {n:,} updates in {dt:.3f} s ="
            f" {sql['wall'][-1]:>9,.0f} updates/s (CPU-time rate {sql['cpu'][-1]:,.0f};"
            f" directory upserts at {sql['dir'][-1]:,.0f}/s)"
        )
    # one more core pass with the garbage collector on, as a running daemon would have it
    floor_gc = make_floor(layout)
    floor_gc.apply_many(directory)
    gc.collect()
    t0 = time.perf_counter()
    floor_gc.apply_many(events)
    gc_on = len(events) / (time.perf_counter() - t0)
    del floor_gc
    say(f"  info, one core pass with gc ON: {gc_on:,.0f} events/s")
    floor.advance(events[-1].ts)  # fire idle timers up to the last event, outside any timing
    pools = {k.value: len(floor.pool(PROMO, k)) for k in PoolKind}
    say(
        f"  final floor: {floor.tracked_players:,} tracked players, eligible pools {pools},"
        f" counters {dict(floor.counters())}"
    )
    # the peer keeps the same books: its eligible rows must match the core's pools
    now = events[-1].epoch
    threshold = round(floor.promotion(PROMO).threshold_points * 1000)
    same = {k: (n, peer.eligible(k, now, threshold, floor.idle_seconds)) for k, n in pools.items()}
    agree = all(a == b for a, b in same.values())
    say(f"  cross-check, eligible (core, SQL) by pool: {same} -> {'agree' if agree else 'DIFFER'}")
    peer.conn.close()
    ratios = [c / q for c, q in zip(core["wall"], sql["wall"], strict=True)]
    cpu_ratios = [c / q for c, q in zip(core["cpu"], sql["cpu"], strict=True)]
    core_out = {
        "cpu_median": statistics.median(core["cpu"]),
        "round_cpu_ratios": cpu_ratios,
        "best": max(core["wall"]),
        "median": statistics.median(core["wall"]),
        "passes": core["wall"],
        "cpu_best": max(core["cpu"]),
        "directory_best": max(core["dir"]),
        "gc_on": gc_on,
        "pools": pools,
        "tracked": floor.tracked_players,
        "agree": agree,
        "round_ratios": ratios,
    }
    sql_out = {
        "best": max(sql["wall"]),
        "median": statistics.median(sql["wall"]),
        "passes": sql["wall"],
        "cpu_best": max(sql["cpu"]),
        "directory_best": max(sql["dir"]),
    }
    return core_out, sql_out


# ---------------------------------------------------------------------- profile


def profile_ingest(
    layout: FloorLayout, directory: list[PlayerUpserted], events: list[AnyFloorEvent]
) -> None:
    say("\n== cProfile of one Floor.apply_many pass (profiler overhead inflates calls) ==")
    floor = make_floor(layout)
    floor.apply_many(directory)
    prof = cProfile.Profile()
    gc.disable()
    prof.enable()
    floor.apply_many(events)
    prof.disable()
    gc.enable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(12)
    for line in out.getvalue().splitlines():
        if line.strip():
            say("  " + line)


# ------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--quick", action="store_true", help="short run, under a minute")
    ap.add_argument("--events", type=int, default=None, help="override the event count")
    ap.add_argument("--profile", action="store_true", help="add a cProfile of one pass")
    ap.add_argument("--picks", action="store_true", help="only the picks on a changing floor")
    ap.add_argument("--scale", action="store_true", help="the scale curve (docs/performance.md)")
    args = ap.parse_args(argv)
    quick: bool = args.quick
    if args.picks or args.scale:
        return picks_only(quick) if args.picks else scale_only(quick)
    n_events: int = args.events or (QUICK_EVENTS if quick else 1_000_000)
    passes = 2 if quick else 5
    n_picks = 30 if quick else 300
    started = time.perf_counter()

    say("RAPS core benchmark" + (" (--quick)" if quick else ""))
    say(
        f"  Python {platform.python_version()} ({platform.python_implementation()}),"
        f" {platform.machine()}, {platform.system()}; single-threaded: one core is used"
    )
    say(
        "  timed loops run with the cyclic gc disabled (gc.disable), collected before each;"
        " timer time.perf_counter"
    )
    load_start = os.getloadavg()
    say(
        f"  load average at start {load_start[0]:.2f} on {os.cpu_count()} CPUs"
        " (the machine is shared: other processes' load shows in wall-clock figures)"
    )

    say(
        f"\n== building events (not timed: building events is the adapters' job) ==\n"
        f"  floor of {MACHINES:,} machines, {TABLES} tables, {PLAYERS:,} players;"
        f" start {START.isoformat()} (08:00 SAST), {EVENTS_PER_SECOND:,} events/s of floor time"
    )
    t0 = time.perf_counter()
    layout = demo_layout(MACHINES, TABLES)
    sim = FloorSimulator(layout, PLAYERS, start=START, events_per_second=EVENTS_PER_SECOND)
    directory = sim.directory()
    events = list(sim.events(n_events))
    n_directory = len(directory)
    mix = Counter(type(e).__name__ for e in events)
    say(
        f"  {len(directory):,} directory upserts + {len(events):,} events built in"
        f" {time.perf_counter() - t0:.1f} s; last event at {events[-1].ts.isoformat()}"
    )
    say("  mix: " + ", ".join(f"{k} {v / len(events):.1%}" for k, v in mix.most_common()))
    del sim

    core, sqlr = bench_ingest(layout, directory, events, passes)

    if args.profile:
        profile_ingest(layout, directory, events)

    n_daemon = min(n_events, 20_000 if quick else 200_000)
    daemon_events = events[:n_daemon]
    if quick:  # the directory of the players these events name: the same paths, less setup
        named = {c for e in daemon_events if (c := getattr(e, "card", None))}
        directory = [d for d in directory if d.card in named]
    daemon = daemon_ingest(layout, MACHINES, TABLES, directory, daemon_events, 2 if quick else 5)
    del events, directory, daemon_events
    gc.collect()

    picks, sql_picks = bench_picks(n_picks, grow=quick)
    if quick:  # two rounds; one restore (the first pick after a start), one cold digest
        churn = churn_picks([10_000, 100_000], 10, 2, restores=1, colds=1)
    else:
        churn = churn_picks([10_000, 100_000, 1_000_000], 100, 5)
    mem = bench_memory(QUICK_MEMORY_PLAYERS if quick else PLAYERS)

    ratio = statistics.median(core["round_ratios"])  # each round's core / its SQL pass
    ratio_best = core["best"] / sqlr["best"]
    ratio_cpu = statistics.median(core["round_cpu_ratios"])
    p99_10k = picks[str(TARGET_PICK_POOL)]["p99"]
    cpu_p99_10k = picks[str(TARGET_PICK_POOL)]["cpu_p99"]
    bpp = mem["bytes_per_player"]
    targets = {
        # "met" is judged on wall-clock time; the CPU-time figures (process_time, which
        # leaves out time the shared machine gave to other processes) are for reference
        f"events_per_s>={TARGET_EVENTS_PER_S}": {
            "value": round(core["median"]),
            "met": core["median"] >= TARGET_EVENTS_PER_S,
            "cpu_time_value": round(core["cpu_median"]),
            "met_by_cpu_time": core["cpu_median"] >= TARGET_EVENTS_PER_S,
        },
        f"ratio_vs_sql>={TARGET_RATIO:g}": {
            "value": round(ratio, 3),
            "met": ratio >= TARGET_RATIO,
            "cpu_time_value": round(ratio_cpu, 3),
            "met_by_cpu_time": ratio_cpu >= TARGET_RATIO,
        },
        f"pick_p99_ms_at_{TARGET_PICK_POOL}<={TARGET_PICK_P99_MS:g}": {
            "value": p99_10k,
            "met": p99_10k <= TARGET_PICK_P99_MS,
            "cpu_time_value": cpu_p99_10k,
            "met_by_cpu_time": cpu_p99_10k <= TARGET_PICK_P99_MS,
        },
        **pick_targets(churn),
        f"bytes_per_player<={TARGET_BYTES_PER_PLAYER}": {
            "value": round(bpp, 1),
            "met": bpp <= TARGET_BYTES_PER_PLAYER,
        },
    }
    elapsed = time.perf_counter() - started
    load_end = os.getloadavg()

    say("\n== summary ==")
    say(f"  {'measure':<44} {'best':>14} {'median':>14}")
    say(f"  {'core events/s (apply_many)':<44} {core['best']:>14,.0f} {core['median']:>14,.0f}")
    say(f"  {'SQL peer updates/s':<44} {sqlr['best']:>14,.0f} {sqlr['median']:>14,.0f}")
    say(f"  {'core / SQL (best/best; median per round)':<44} {ratio_best:>14.2f} {ratio:>14.2f}")
    say(f"  {'core events/s by CPU time (process_time)':<44} {core['cpu_best']:>14,.0f}")
    say(f"  {'SQL updates/s by CPU time (process_time)':<44} {sqlr['cpu_best']:>14,.0f}")
    say(f"  {'core events/s with gc on (one pass)':<44} {core['gc_on']:>14,.0f}")
    say(f"  {'pick latency ms':<44} {'p50':>14} {'p99':>14}")
    for size in POOL_SIZES:
        c, s = picks[str(size)], sql_picks[str(size)]
        say(f"    {f'core, {size:,} eligible':<42} {c['p50']:>14.3f} {c['p99']:>14.3f}")
        say(f"    {f'SQL peer, {size:,} eligible':<42} {s['p50']:>14.3f} {s['p99']:>14.3f}")
    say(f"  {'bytes per tracked player':<44} {bpp:>14,.0f}")
    say(
        "  targets (judged on the median of the rounds: throughput, each round's own core/SQL"
        f" ratio, pick p99 over {PICK_ROUNDS} rounds; the best is reported alongside):"
    )
    for name, t in targets.items():
        verdict = "met" if t["met"] else "NOT MET"
        extra = ""
        if "cpu_time_value" in t:
            cpu_verdict = "met" if t["met_by_cpu_time"] else "not met"
            extra = f"   (by CPU time: {t['cpu_time_value']}, {cpu_verdict})"
        say(f"    {name:<42} {t['value']:>14} {verdict:>14}{extra}")
    say(f"  total wall time {elapsed:.0f} s; load average at end {load_end[0]:.2f}")

    result = {
        "events_per_s": round(core["median"]),  # the median of the rounds
        "events_per_s_best": round(core["best"]),
        "events_per_s_passes": [round(r) for r in core["passes"]],
        "events_per_s_gc_on": round(core["gc_on"]),
        "directory_upserts_per_s": round(core["directory_best"]),
        "sql_peer_updates_per_s": round(sqlr["median"]),
        "sql_peer_updates_per_s_best": round(sqlr["best"]),
        "sql_peer_updates_per_s_passes": [round(r) for r in sqlr["passes"]],
        "sql_peer_directory_upserts_per_s": round(sqlr["directory_best"]),
        "ratio_vs_sql": round(ratio, 3),  # the median of the rounds' own ratios
        "ratio_vs_sql_best_over_best": round(ratio_best, 3),
        "ratio_vs_sql_rounds": [round(r, 3) for r in core["round_ratios"]],
        "events_per_s_cpu_time": round(core["cpu_median"]),
        "sql_peer_updates_per_s_cpu_time": round(sqlr["cpu_best"]),
        "eligible_cross_check_agrees": core["agree"],
        "daemon_ingest": daemon,
        "pick_ms": picks,
        "pick_ms_changing_floor": churn,
        "sql_pick_ms": sql_picks,
        "bytes_per_player": round(bpp, 1),
        "memory_tracked_players": mem["tracked"],
        "events": n_events,
        "directory_events": n_directory,
        "tracked_players": core["tracked"],
        "floor": {"machines": MACHINES, "tables": TABLES, "players": PLAYERS},
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "threads": 1,
        "loadavg_1min": [round(load_start[0], 2), round(load_end[0], 2)],
        "gc_disabled_in_timed_loops": True,
        "wall_s": round(elapsed, 1),
        "targets": targets,
        "quick": quick,
    }
    print_result(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

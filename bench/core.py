"""Benchmark of the RAPS core (selector/) against a report-style SQL peer.

Run from the repository root:

    .venv/bin/python bench/core.py            # full run (1M events, a few minutes at most)
    .venv/bin/python bench/core.py --quick    # short run (100k events, about a minute of CPU)
    .venv/bin/python bench/core.py --profile  # add a cProfile of one ingest pass

What it measures (issue targets in brackets):

1. Ingest: a floor of 5,000 machines, 300 tables and 50,000 players simulated by
   raps.floorsim; the directory (PlayerUpserted) is applied first and counted apart,
   then >= 1M events are timed through Floor.apply_many [>= 750,000 events/s on one core].
   All events are built before any timing: building them is the adapters' job.
2. The SQL peer on the same event list: an in-memory SQLite sessions table updated by
   one statement per event (cursor.execute, commit every 10k) [core >= 2x its rate].
3. Pick latency at 1k, 10k and 50k eligible players: DrawSession.draw, which includes
   Floor.advance, the pool snapshot in canonical order, its SHA-256 digest and the HMAC
   pick [p99 <= 2 ms at 10k]; the SQL peer's ORDER BY RANDOM() LIMIT 1 for comparison.
4. Memory per tracked player, by tracemalloc [<= 1 KiB].
5. The daemon's ingest paths (bench/core_paths.py): the same events through
   Service.ingest (batches of 500) and MqttIngest.handle (JSON payloads), beside
   apply_many in the same round; median of rounds.
6. Picks on a changing floor (bench/core_picks.py, derivation v3): warm, 10 and 1,000 pool
   changes between picks, a cold digest and the first pick after a start, at 10k, 100k and
   1M eligible (--quick: 10k, 100k) [issue 20: p99 <= 2 ms at 100k, <= 5 ms at 1M under
   1,000 changes; first pick after a start <= 3x a warm pick], median of rounds with the
   spread. `--picks` runs this part alone.

The last line printed is one JSON object with every figure and target.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import hashlib
import io
import os
import platform
import pstats
import sqlite3
import statistics
import sys
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.core_paths import daemon_ingest  # noqa: E402
from bench.core_picks import churn_picks, pick_targets, picks_only  # noqa: E402
from bench.core_scale import scale_only  # noqa: E402
from bench.core_sql_peer import COMMIT_EVERY, SqlPeer  # noqa: E402
from bench.harness import percentile, print_result, say  # noqa: E402
from raps.floorsim import FloorSimulator, demo_layout  # noqa: E402
from selector.events import (  # noqa: E402
    AnyFloorEvent,
    CardInserted,
    GamePlayed,
    PlayerUpserted,
    PoolKind,
    Tier,
)
from selector.floor import Floor  # noqa: E402
from selector.layout import FloorLayout  # noqa: E402
from selector.promotion import EarnRules, Promotion  # noqa: E402
from selector.records import Actor  # noqa: E402
from selector.session import Command, DrawSession  # noqa: E402

PROMO = "raps"
MACHINES = 5_000
TABLES = 300
PLAYERS = 50_000
# Saturday 25 April 2026, 08:00 SAST: a RAPS session day, start of the qualifying window
START = datetime(2026, 4, 25, 6, 0, tzinfo=UTC)
EVENTS_PER_SECOND = 2_000
POOL_SIZES = (1_000, 10_000, 50_000)
STAFF = Actor("bench", "marketing")

PICK_ROUNDS = 3
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


def make_floor(layout: FloorLayout) -> Floor:
    return Floor(layout, [Promotion(PROMO)], EarnRules())


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


# ------------------------------------------------------------------------ picks


def pick_events(n_eligible: int, at: datetime) -> list[AnyFloorEvent]:
    """50k players, each carded in at one of 50k machines and playing; n_eligible of them
    reach the 50-point threshold, the rest earn 1 point (on the floor, active, below it)."""
    out: list[AnyFloorEvent] = []
    cards = [f"{7_000_000_000 + i * 7919:010d}" for i in range(PLAYERS)]
    for i, card in enumerate(cards):
        out.append(
            PlayerUpserted(
                event_id=f"p{i}", source="cms", ts=at, card=card, tier=Tier.JACK,
                display_name=f"Player {i}", age_verified=True,
            )
        )  # fmt: skip
    t_in = at + timedelta(seconds=1)
    for i, card in enumerate(cards):
        out.append(
            CardInserted(
                event_id=f"c{i}", source="bench", ts=t_in, machine=f"M{i + 1:05d}", card=card
            )
        )
    t_game = at + timedelta(seconds=2)
    for i in range(PLAYERS):
        wager = 50_000 if i < n_eligible else 1_000  # R500 = 50 points, R10 = 1 point
        out.append(
            GamePlayed(
                event_id=f"g{i}", source="bench", ts=t_game, machine=f"M{i + 1:05d}", wager=wager
            )
        )
    return out


def bench_picks(n_picks: int) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    say(
        f"\n== pick latency: DrawSession.draw on a floor of {PLAYERS:,} carded, active slot"
        f" players ({PICK_ROUNDS} rounds of {n_picks} timed picks per size, gc off) =="
    )
    say(
        "  each draw = Floor.advance + pool snapshot in canonical order + SHA-256 pool digest"
        " + HMAC-SHA256 pick + fresh re-check + journal record; sessions of 6 slot winners"
        " (default rules), a new session every 6 picks, winners left pending, so 0-5 of the"
        " eligible are barred as pending; the SQL peer gets one round"
    )
    layout = demo_layout(PLAYERS, TABLES)
    earn = EarnRules()
    at = datetime(2026, 4, 25, 7, 0, tzinfo=UTC)  # 09:00 SAST, inside the window
    promo = Promotion(PROMO)
    threshold = round(promo.threshold_points * 1000)
    core: dict[str, dict[str, Any]] = {}
    sql: dict[str, dict[str, Any]] = {}
    per_session = 6
    for size in POOL_SIZES:
        events = pick_events(size, at)
        floor = make_floor(layout)
        floor.apply_many(events)
        draw_at = at + timedelta(seconds=10)
        floor.advance(draw_at)
        pool = floor.pool(PROMO, PoolKind.SLOTS)
        counted = sum(floor.eligible_counts(PROMO).values())
        assert len(pool) == size == counted, (len(pool), size, counted)
        # rounds of n_picks timed picks; the machine is shared, so a round hit by another
        # process's burst shows up as such: every round is reported, their median judged
        rounds: list[dict[str, float]] = []
        all_lat: list[float] = []
        sizes: Counter[int] = Counter()
        session: DrawSession | None = None
        warmup = 5
        k = 0
        for r in range(PICK_ROUNDS):
            lat: list[float] = []
            cpu: list[float] = []
            for _ in range(n_picks + (warmup if r == 0 else 0)):
                if k % per_session == 0:
                    session = DrawSession(f"bench-{size}-{k // per_session}", PROMO, floor)
                    seed = hashlib.sha256(f"bench-seed-{size}-{k}".encode()).digest()
                    session.open(Command(f"open-{k}", STAFF, draw_at), seed)
                assert session is not None
                cmd = Command(f"draw-{k}", STAFF, draw_at + timedelta(milliseconds=10 * k))
                gc.disable()
                c0 = time.process_time()
                t0 = time.perf_counter()
                outcome = session.draw(cmd, PoolKind.SLOTS)
                dt = time.perf_counter() - t0
                dc = time.process_time() - c0
                gc.enable()
                assert outcome.pick is not None, "the pool ran dry"
                if k >= warmup:
                    lat.append(dt * 1000)
                    cpu.append(dc * 1000)
                    sizes[outcome.pick.pool_size] += 1
                k += 1
            all_lat += lat
            rounds.append(
                {
                    "p50": round(percentile(lat, 50), 4),
                    "p99": round(percentile(lat, 99), 4),
                    "max": round(max(lat), 4),
                    "cpu_p99": round(percentile(cpu, 99), 4),
                }
            )
        med = {q: round(statistics.median(x[q] for x in rounds), 4) for q in rounds[0]}
        core[str(size)] = {  # the median of the rounds, not the best round
            "p50": med["p50"],
            "p99": med["p99"],
            "max": med["max"],
            "cpu_p99": med["cpu_p99"],
            "n": n_picks,
            "rounds_p99": [x["p99"] for x in rounds],
            "all_rounds_p50": round(percentile(all_lat, 50), 4),
            "all_rounds_p99": round(percentile(all_lat, 99), 4),
            "eligible": size,
            "pool_sizes_drawn_from": f"{min(sizes)}..{max(sizes)}",
        }
        c = core[str(size)]
        say(
            f"  core {size:>6,} eligible: median of rounds p50 {c['p50']:.3f} ms,"
            f" p99 {c['p99']:.3f} ms"
            f" (CPU-time p99 {c['cpu_p99']:.3f}); p99 per round {c['rounds_p99']};"
            f" all {len(all_lat)} picks p50 {c['all_rounds_p50']:.3f} p99"
            f" {c['all_rounds_p99']:.3f} ms (candidates {min(sizes)}..{max(sizes)})"
        )
        # the SQL peer on the same players
        peer = SqlPeer(layout, earn)
        peer.apply_many(events)
        now = draw_at.timestamp()
        n_sql = peer.eligible("slots", now, threshold, floor.idle_seconds)
        assert n_sql == size, (n_sql, size)
        slat: list[float] = []
        for j in range(n_picks + warmup):
            gc.disable()
            t0 = time.perf_counter()
            card = peer.pick("slots", now, threshold, floor.idle_seconds)
            dt = time.perf_counter() - t0
            gc.enable()
            assert card is not None
            if j >= warmup:
                slat.append(dt * 1000)
        peer.conn.close()
        sql[str(size)] = {
            "p50": round(percentile(slat, 50), 4),
            "p99": round(percentile(slat, 99), 4),
            "n": len(slat),
        }
        say(
            f"  SQL  {size:>6,} eligible: p50 {sql[str(size)]['p50']:.3f} ms,"
            f" p99 {sql[str(size)]['p99']:.3f} ms (ORDER BY RANDOM() LIMIT 1 over"
            f" {PLAYERS:,} rows, no digest, not provable)"
        )
        del floor, events, peer
        gc.collect()
    return core, sql


# ----------------------------------------------------------------------- memory


def bench_memory() -> dict[str, Any]:
    say("\n== memory per tracked player (tracemalloc) ==")
    layout = demo_layout(PLAYERS, TABLES)
    at = datetime(2026, 4, 25, 7, 0, tzinfo=UTC)
    gc.collect()
    tracemalloc.start()
    floor = make_floor(layout)  # machines and tables: the layout's cost, not the players'
    gc.collect()
    base = tracemalloc.take_snapshot()
    before = tracemalloc.get_traced_memory()[0]
    # the events are built while tracing so that the strings the floor keeps (cards,
    # names) are counted; the events themselves are dropped before measuring
    events = pick_events(PLAYERS, at)
    floor.apply_many(events)
    del events
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    snap = tracemalloc.take_snapshot()
    tracemalloc.stop()
    tracked = floor.tracked_players
    eligible = len(floor.pool(PROMO, PoolKind.SLOTS))
    per = (after - before) / tracked
    say(
        f"  {tracked:,} tracked players (directory profile, carded in at a machine, active,"
        f" points for today, {eligible:,} in the eligible pool):"
        f" {after - before:,} bytes = {per:,.0f} bytes per player"
    )
    say("  where it goes (top allocation sites, bytes per player):")
    top = snap.compare_to(base, "lineno")[:8]
    sites: list[dict[str, Any]] = []
    for stat in top:
        frame = stat.traceback[0]
        name = Path(frame.filename)
        where = f"{name.parent.name}/{name.name}:{frame.lineno}"
        say(f"    {stat.size_diff / tracked:8.1f}  {where}")
        sites.append({"site": where, "bytes_per_player": round(stat.size_diff / tracked, 1)})
    return {"bytes_per_player": per, "tracked": tracked, "top_sites": sites}


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
    n_events: int = args.events or (100_000 if quick else 1_000_000)
    passes = 3 if quick else 5
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

    n_daemon = min(n_events, 30_000 if quick else 200_000)
    daemon = daemon_ingest(
        layout, MACHINES, TABLES, directory, events[:n_daemon], 3 if quick else 5
    )
    del events, directory
    gc.collect()

    picks, sql_picks = bench_picks(n_picks)
    churn_sizes = [10_000, 100_000] if quick else [10_000, 100_000, 1_000_000]
    churn = churn_picks(churn_sizes, 10 if quick else 100, 3 if quick else 5)
    mem = bench_memory()

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

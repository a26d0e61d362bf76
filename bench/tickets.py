"""Benchmark of draw tickets (issue 12): what crediting costs ingest, and kiosk round trips.

Run from the repository root:

    .venv/bin/python bench/tickets.py            # full run (50k players, 1M events; minutes)
    .venv/bin/python bench/tickets.py --quick    # short run (10k players, 60k events; < 1 min)

What it measures (issue targets in brackets):

1. Ingest with tickets on vs off, same run [on >= 0.85 x off]: the core benchmark's floor
   (5,000 machines, 300 tables, 50,000 players, bench.core's event mix from
   raps.floorsim, Saturday 25 Apr 2026 from 08:00 SAST) earning in a 7-day TEEDS window,
   a Saturday day_to_draw bin and the month's Queen Thursdays (bench/tickets_setup.py).
   Tickets on = the ledger as the floor's points sink, exactly as the daemon wires it.
   (a) Floor.apply_many over the prebuilt events; (b) Service.ingest (dedupe, floor,
   floor-log queue) on two started Services.  Each round feeds the same events in small
   slices alternately to a fresh floor (or Service) with tickets and one without, so
   each round's ratio divides figures measured side by side; the median over rounds is
   judged, wall-clock time (CPU time for reference).  Also: ticket credit records made,
   where the ticket time goes (sink calls, the floor's inline check), and the ledger's
   memory per player (tracemalloc).
2. Kiosk activation round trips at 50 concurrent kiosks [p99 <= 20 ms at 100 entries/s]:
   a real `raps run` daemon on SQLite and on PostgreSQL (a fresh database on
   127.0.0.1:5432, or a throwaway cluster), 50 httpx clients with their own tokens,
   paced, then a closed-loop stress phase (reported, no target), then every answer
   checked against the receipts API and the journal (bench/tickets_kiosk.py).  Then
   (full run, or --breakdown) where an entry's time goes: the same Service in-process,
   TicketDesk.enter timed part by part without HTTP (bench/tickets_breakdown.py).

--quick measures the same, smaller: 10k players and 60k events in 3 rounds (the
ledger's tracemalloc on 10k players); kiosk daemons of 10k players, phases of 1.5 s
warm-up, 4 s paced and 2 s stress (full: 5, 60 and 15 s), no breakdown unless asked.

The last line printed is one JSON object with every figure and target.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import platform
import shutil
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.core import EVENTS_PER_SECOND, MACHINES, PLAYERS, START, TABLES  # noqa: E402
from bench.harness import (  # noqa: E402
    pg_server,
    print_result,
    say,
    section,
    start_clock,
    version_of,
)
from bench.journal_setup import quiet_logging  # noqa: E402
from bench.tickets_breakdown import breakdown  # noqa: E402
from bench.tickets_ingest import run_ingest  # noqa: E402
from bench.tickets_kiosk import bench_kiosks  # noqa: E402
from bench.tickets_setup import (  # noqa: E402
    KIOSKS,
    TARGET_INGEST_RATIO,
    TARGET_KIOSK_P99_MS,
    service_config,
)
from raps.config import parse_config  # noqa: E402
from raps.floorsim import FloorSimulator, demo_layout  # noqa: E402


def _bins_cover(cfg_text: str, first: float, last: float) -> list[str]:
    """Bins whose earning interval holds every event, for the record."""
    plan = parse_config(cfg_text, "bench").ticket_plan()
    return sorted(b.bin_id for b in plan.bins.values() if b.start <= first and last < b.end)


def part_ingest(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    quick: bool = args.quick
    players = args.players or (10_000 if quick else PLAYERS)
    n_events = args.events or (60_000 if quick else 1_000_000)
    rounds = args.rounds or (3 if quick else 5)
    key_file = folder / "seed.key"
    url = f"sqlite:///{folder / 'unused.db'}"
    on_text = service_config(url, key_file, players, tickets=True)
    cfg_on = parse_config(on_text, "bench tickets on")
    cfg_off = parse_config(service_config(url, key_file, players, tickets=False), "bench off")
    section(
        "building events (not timed: building events is the adapters' job): the core"
        f" benchmark's generator, {MACHINES:,} machines, {TABLES} tables, {players:,} players,"
        f" {EVENTS_PER_SECOND:,} events/s of floor time from {START.isoformat()}"
    )
    t0 = time.perf_counter()
    sim = FloorSimulator(demo_layout(MACHINES, TABLES), players, start=START,
                         events_per_second=EVENTS_PER_SECOND)  # fmt: skip
    directory = sim.directory()
    events = list(sim.events(n_events))
    del sim
    mix = Counter(type(e).__name__ for e in events)
    covered = _bins_cover(on_text, events[0].epoch, events[-1].epoch)
    plan = cfg_on.ticket_plan()
    say(
        f"  {len(directory):,} directory upserts + {len(events):,} events in"
        f" {time.perf_counter() - t0:.1f} s, {events[0].ts.isoformat()} to"
        f" {events[-1].ts.isoformat()}"
    )
    say("  mix: " + ", ".join(f"{k} {v / len(events):.1%}" for k, v in mix.most_common()))
    say(
        f"  ticket plan: {len(plan.programs)} programs, {len(plan.draws)} draws, {len(plan.bins)}"
        f" bins; the events earn in {len(covered)}: {', '.join(covered)}"
    )
    out = run_ingest(
        cfg_on, cfg_off, folder, directory, events, rounds, players, 1 if quick else rounds
    )
    out.update(players=players, events=n_events, rounds=rounds, bins_earning=covered,
               mix={k: round(v / len(events), 4) for k, v in mix.items()})  # fmt: skip
    return out


def part_kiosks(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    quick: bool = args.quick
    players = args.kiosk_players or (10_000 if quick else PLAYERS)
    if quick:
        phases = {"sim_warmup": 5.0, "idle": 1.0, "warmup": 1.5, "paced": 4.0, "stress": 2.0}
    else:
        phases = {"sim_warmup": 30.0, "idle": 5.0, "warmup": 5.0, "paced": 60.0, "stress": 15.0}
    sample = 200 if quick else 2_000
    say(
        f"\n  kiosk phases: warm-up {phases['warmup']:g} s (dropped), paced"
        f" {phases['paced']:g} s at {KIOSKS} kiosks x 1 entry / 0.5 s, stress"
        f" {phases['stress']:g} s closed loop"
    )
    results: dict[str, Any] = {}
    sqlite_url = f"sqlite:///{folder / 'kiosk.db'}"
    results["sqlite"] = asyncio.run(
        bench_kiosks("SQLite", sqlite_url, folder, players, args.floor_rate, phases, sample)
    )
    breakdown_s = 0.0 if quick and not args.breakdown else (10.0 if quick else 30.0)
    if breakdown_s:
        url = f"sqlite:///{folder / 'breakdown.db'}"
        results["sqlite"]["breakdown_ms"] = asyncio.run(
            breakdown("SQLite", url, folder, players, args.floor_rate, breakdown_s)
        )
    pg = pg_server(args.pg_host, args.pg_port)
    try:
        db = pg.create("tickets")
        results["postgresql"] = asyncio.run(
            bench_kiosks(
                "PostgreSQL",
                pg.url(db),
                folder,
                players,
                args.floor_rate,
                phases,
                sample,
                pg=pg,
                dbname=db,
            )
        )
        if breakdown_s:
            results["postgresql"]["breakdown_ms"] = asyncio.run(
                breakdown("PostgreSQL", pg.url(pg.create("breakdown")), folder, players,
                          args.floor_rate, breakdown_s)
            )  # fmt: skip
        results["postgresql"]["server"] = (
            f"throwaway cluster on port {pg.port}" if pg.cluster else f"{pg.host}:{pg.port}"
        )
    finally:
        pg.drop_all()
        pg.stop()
    results["players"] = players
    results["floor_events_per_s"] = args.floor_rate
    results["phases_s"] = phases
    return results


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--quick", action="store_true", help="short run, under a minute")
    ap.add_argument("--events", type=int, default=None, help="events per ingest pass")
    ap.add_argument("--players", type=int, default=None, help="players in the ingest part")
    ap.add_argument("--rounds", type=int, default=None, help="ingest rounds (3 quick, 5 full)")
    ap.add_argument("--kiosk-players", type=int, default=None, help="the daemon's players")
    ap.add_argument(
        "--floor-rate",
        type=float,
        default=1000.0,
        help="the kiosk daemon's simulated floor, events/s (default 1,000: a busy floor of"
        " 5,000 machines)",
    )
    ap.add_argument(
        "--breakdown",
        action="store_true",
        help="with --quick: also time an entry's parts in-process (always on in a full run)",
    )
    ap.add_argument("--skip-ingest", action="store_true", help="part 2 only")
    ap.add_argument("--skip-kiosks", action="store_true", help="part 1 only")
    ap.add_argument("--dir", default=None, help="where the temporary files go")
    ap.add_argument("--pg-host", default=os.environ.get("RAPS_TEST_PG_HOST", "127.0.0.1"))
    ap.add_argument("--pg-port", type=int, default=int(os.environ.get("RAPS_TEST_PG_PORT", "5432")))
    args = ap.parse_args(argv)
    start_clock()
    started = time.perf_counter()
    say("RAPS tickets benchmark" + (" (--quick)" if args.quick else ""))
    say(
        f"  Python {platform.python_version()} ({platform.python_implementation()}),"
        f" {platform.machine()}, {platform.system()}; httpx {version_of('httpx')},"
        f" uvicorn {version_of('uvicorn')}, SQLite {sqlite3.sqlite_version}"
    )
    load_start = os.getloadavg()
    say(
        f"  load average at start {load_start[0]:.2f} on {os.cpu_count()} CPUs (the machine"
        " is shared: on/off ratios are measured side by side, absolute rates drift)"
    )
    quiet_logging()
    folder = Path(tempfile.mkdtemp(prefix="raps-bench-tickets-", dir=args.dir))
    result: dict[str, Any] = {}
    targets: dict[str, dict[str, Any]] = {}
    try:
        if not args.skip_ingest:
            ing = part_ingest(args, folder)
            result["ingest"] = ing
            for path in ("core", "service"):
                r = ing[path]
                name = "apply_many" if path == "core" else "service_ingest"
                targets[f"{name} on/off >= {TARGET_INGEST_RATIO}"] = {
                    "value": r["ratio_median"],
                    "met": r["ratio_median"] >= TARGET_INGEST_RATIO,
                    "rounds": r["ratio_rounds"],
                    "cpu_time_value": r["ratio_cpu_median"],
                    "met_by_cpu_time": r["ratio_cpu_median"] >= TARGET_INGEST_RATIO,
                }
            gc.collect()
        if not args.skip_kiosks:
            kio = part_kiosks(args, folder)
            result["kiosks"] = kio
            for db in ("sqlite", "postgresql"):
                p99 = kio[db]["paced"]["p99_ms"]
                targets[f"{db} kiosk p99 <= {TARGET_KIOSK_P99_MS:g} ms at {KIOSKS} kiosks"] = {
                    "value": p99,
                    "met": p99 <= TARGET_KIOSK_P99_MS and kio[db]["ok"],
                    "entries_per_s": kio[db]["paced"]["per_s"],
                    "checks_ok": kio[db]["ok"],
                }
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    elapsed = time.perf_counter() - started
    load_end = os.getloadavg()
    section("summary")
    if "ingest" in result:
        ing = result["ingest"]
        for path, label in (("core", "Floor.apply_many"), ("service", "Service.ingest")):
            r = ing[path]
            say(
                f"  {label:<18} off {r['events_per_s_off_median']:>9,} ev/s, on"
                f" {r['events_per_s_on_median']:>9,} ev/s (medians); on/off per round"
                f" {r['ratio_rounds']} -> median {r['ratio_median']:.3f}"
            )
        b, m = ing["core"]["breakdown"], ing["memory"]
        say(
            f"  ticket credit records per pass {ing['core']['credits']['credit_records']:,};"
            f" sink calls {b['sink_calls']:,} ({b['sink_us_per_call']:.2f} us each);"
            f" room-only stub/off {ing['core']['room_only_ratio_median']:.3f};"
            f" ledger {m['ledger_bytes_per_player']:,.0f} bytes per player"
        )
    if "kiosks" in result:
        for db in ("sqlite", "postgresql"):
            k = result["kiosks"][db]
            p, s = k["paced"], k["stress"]
            say(
                f"  kiosks {db:<10} paced {p['per_s']:.0f}/s p50 {p['p50_ms']:.2f} p95"
                f" {p['p95_ms']:.2f} p99 {p['p99_ms']:.2f} max {p['max_ms']:.2f} ms;"
                f" stress {s['per_s']:.0f}/s p99 {s['p99_ms']:.2f} ms; checks"
                f" {'ok' if k['ok'] else 'FAILED'}"
            )
    say("  targets (medians over rounds / the paced phase's p99):")
    for name, t in targets.items():
        say(f"    {name:<44} {t['value']:>10} {'met' if t['met'] else 'NOT MET':>10}")
    say(f"  total wall time {elapsed:.0f} s; load average at end {load_end[0]:.2f}")
    result.update(
        python=platform.python_version(),
        sqlite=sqlite3.sqlite_version,
        cpus=os.cpu_count(),
        loadavg_1min=[round(load_start[0], 2), round(load_end[0], 2)],
        gc_disabled_in_timed_ingest=True,
        wall_s=round(elapsed, 1),
        targets=targets,
        quick=args.quick,
    )
    print_result(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark of the durable journal: pick latency with the commit, and restart-to-ready.

Run from the repository root:

    .venv/bin/python bench/journal.py            # full run: 5,000 picks, 1M journal entries
    .venv/bin/python bench/journal.py --quick    # short run: 100 picks, 5k entries (< 1 min)

Both databases are measured in the same run: SQLite (a file in a temporary directory,
WAL, synchronous=FULL, as raps.store.database opens it) and PostgreSQL (fresh databases
created and dropped on the server at 127.0.0.1:5432, or on a throwaway cluster started
with initdb/pg_ctl when none runs, as tests/conftest.py does).

What it measures (issue targets in brackets), per database:

1. Pick latency at 10,000 eligible slot players: `await Service.draw(...)`, i.e. the
   core's pick (pool snapshot, its digest, the HMAC pick, the re-check) plus the durable
   journal append (chain hashing, the pool as a delta in the pick's own row, the commit),
   against bare commits of small rows on the same engine and database (`INSERT INTO
   bench_bare ...` + commit), the two alternated step by step so that machine noise hits
   both alike [pick p99 <= 1.5x bare commit p99]. A pick is two commits (its pool as
   `pick.requested`, then its winner: docs/fairness.md), so its peer is two bare commits
   one after the other.
   Between steps (not timed) one player leaves the floor and another qualifies, so every
   pool differs and its delta is really written, and the pick is voided so the pool
   stays at exactly 10,000 (the session does not bar voided players).  Every 128th delta
   the journal also stores that pool in full as a checkpoint, in its own transaction
   after the pick's commit; a checkpoint still running when its pick returns is awaited
   before the next step (as when picks are seconds apart), and those waits are reported
   apart, in no timed figure.  A breakdown says where a pick's time goes: the core's
   draw, chain hashing, the pool delta, connection checkout, the statement, the commit.
   `--profile` adds a cProfile of the timed picks.
   The p99 ratio is taken over all the alternated samples (>= 5,000 in a full run) and
   given again for 5 rounds of consecutive steps: their median and spread [min..max].
2. Restart-to-ready with 1M journal entries: a journal of 1M chained entries (50k
   closed sessions drawn by the real core on a small floor, bulk-inserted, not timed),
   every one of those sessions in the schedule (seeded by the live phase's config), so a
   start holds each (the closed ones known as closed at once, restored and checked after
   it is ready: raps.session_loader); a live session with pending picks, a floor
   snapshot of 10k players and a tail of 10k floor events logged after it, then no stop
   (a kill -9).  Every timed start runs on a fresh copy of that crashed database
   (SQLite's backup API, PostgreSQL's CREATE DATABASE ... TEMPLATE; not timed), so each
   one replays the tail: open_engine + `Service(...)` + `await service.start()` is timed
   [<= 2 s], and so is a whole `raps run` process until its --ready-file appears
   (interpreter, imports and config included; import time is given apart).  The first
   start of each database is then followed to the end of its closed sessions' restore in
   the background (timed, every one restored, none refused).

--quick measures the same, smaller: 100 alternated picks and bare commits per database
(5 rounds of 20), a journal of 5k entries (250 closed sessions and the live one) for the
restart, 2 timed starts and 1 `raps run` per database, import time from 1 fresh process.

The last line printed is one JSON object with every figure and target.

This file has the command line and the run's outline; the parts are in bench/:
journal_setup.py (constants, config, floor events), journal_probe.py (where a timed
operation's time goes), journal_picks.py (1.) and journal_restart.py (2.).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import platform
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sqlalchemy.engine import make_url  # noqa: E402

from bench.harness import (  # noqa: E402
    PgServer,
    pg_server,
    print_result,
    say,
    section,
    start_clock,
    version_of,
)
from bench.journal_picks import bench_picks  # noqa: E402
from bench.journal_restart import (  # noqa: E402
    History,
    bench_restart,
    copy_to_postgres,
    fill_sqlite,
    import_time,
    migrate_only,
)
from bench.journal_setup import (  # noqa: E402
    ELIGIBLE,
    LIVE_RECORDS,
    LIVE_SESSION,
    PROCESS_RUNS,
    QUICK_ENTRIES,
    QUICK_PICKS,
    RECORDS_PER_HISTORY_SESSION,
    RESTART_RUNS,
    TARGET_RATIO,
    TARGET_RESTART_S,
    config_text,
    quiet_logging,
)
from raps.config import parse_config  # noqa: E402
from raps.seal import KEY_BYTES, SeedSealer  # noqa: E402
from raps.signing import create_signing_key_file  # noqa: E402


def filesystem_of(path: Path) -> str:
    """The filesystem type and device of the mount holding path (from /proc/mounts)."""
    best, kind = "", "?"
    try:
        lines = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return kind
    target = str(path.resolve())
    for line in lines:
        parts = line.split()
        if len(parts) < 3:
            continue
        mount = parts[1]
        inside = target == mount or target.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) > len(best):
            best, kind = mount, f"{parts[2]} on {parts[0]} (mounted at {mount})"
    return kind


def sqlite_copies(db: Path) -> Callable[[], str]:
    """The database's url the first time (the live phase crashes it), then a fresh copy of
    it each time (the previous copy deleted): every timed start sees the same crash."""
    made: list[Path] = []

    def fresh() -> str:
        if not made:
            made.append(db)
            return f"sqlite:///{db}"
        for old in made[1:]:
            for f in old.parent.glob(old.name + "*"):
                f.unlink()
        copy = db.with_name(f"{db.stem}-{len(made)}.db")
        src, dst = sqlite3.connect(db), sqlite3.connect(copy)
        with dst:
            src.backup(dst)
        src.close()
        dst.close()
        made.append(copy)
        return f"sqlite:///{copy}"

    return fresh


def pg_copies(pg: PgServer, dbname: str) -> Callable[[], str]:
    """As sqlite_copies, by CREATE DATABASE ... TEMPLATE."""
    made: list[str] = []

    def fresh() -> str:
        if not made:
            made.append(dbname)
            return pg.url(dbname)
        for old in made[1:]:
            with pg.connect() as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{old}" WITH (FORCE)')
        made[1:] = []
        copy = pg.create("restart", template=dbname)
        made.append(copy)
        return pg.url(copy)

    return fresh


# -------------------------------------------------------------------------- main


async def run(args: argparse.Namespace) -> int:
    quick: bool = args.quick
    n_entries: int = args.entries or (QUICK_ENTRIES if quick else 1_000_000)
    n_picks: int = args.picks or (QUICK_PICKS if quick else 5000)
    replay: int = args.replay_events
    started = time.perf_counter()

    say("RAPS journal benchmark" + (" (--quick)" if quick else ""))
    say(
        f"  Python {platform.python_version()} ({platform.python_implementation()}),"
        f" {platform.machine()}, {platform.system()}; SQLAlchemy {version_of('sqlalchemy')},"
        f" aiosqlite {version_of('aiosqlite')}, asyncpg {version_of('asyncpg')},"
        f" psycopg {version_of('psycopg')} (setup only)"
    )
    load_start = os.getloadavg()
    say(
        f"  load average at start {load_start[0]:.2f} on {os.cpu_count()} CPUs"
        " (the machine is shared: other processes' load shows in wall-clock figures)"
    )
    say(
        "  timed operations run with the cyclic gc disabled (collected between them);"
        " logging is production JSON at info, rendered to /dev/null"
    )
    quiet_logging()

    folder = Path(tempfile.mkdtemp(prefix="raps-bench-journal-", dir=args.dir))
    pg = pg_server(args.pg_host, args.pg_port)
    results: dict[str, Any] = {}
    try:
        key = os.urandom(KEY_BYTES)
        key_file = folder / "seed.key"
        key_file.write_text(key.hex() + "\n")
        key_file.chmod(0o600)
        create_signing_key_file(folder / "head.key")  # `raps run` signs its heads with it
        sealer = SeedSealer(key)
        with pg.connect() as conn:
            row = conn.execute(
                "SELECT current_setting('server_version'), current_setting('fsync'),"
                " current_setting('synchronous_commit'), current_setting('wal_sync_method'),"
                " current_setting('full_page_writes')"
            ).fetchone()
        assert row is not None
        pg_version, fsync, sync_commit, wal_sync, fpw = row
        fs = filesystem_of(folder)
        say(
            f"  SQLite {sqlite3.sqlite_version}: files in {folder} ({fs});"
            " journal_mode=WAL, synchronous=FULL (raps.store.database)"
        )
        where = f"throwaway cluster on port {pg.port}" if pg.cluster else f"{pg.host}:{pg.port}"
        say(
            f"  PostgreSQL {pg_version} at {where}: fsync={fsync},"
            f" synchronous_commit={sync_commit}, wal_sync_method={wal_sync},"
            f" full_page_writes={fpw}"
        )

        # --- 1. pick latency, per database
        sqlite_picks_url = f"sqlite:///{folder / 'picks.db'}"
        pg_picks_url = pg.url(pg.create("picks"))
        results["sqlite"] = await bench_picks(
            "SQLite", sqlite_picks_url, key_file, n_picks, args.profile
        )
        results["postgresql"] = await bench_picks(
            "PostgreSQL", pg_picks_url, key_file, n_picks, args.profile
        )

        # --- 2. restart: one history, inserted into both databases
        n_sessions = max(1, math.ceil((n_entries - LIVE_RECORDS) / RECORDS_PER_HISTORY_SESSION))
        history_entries = n_sessions * RECORDS_PER_HISTORY_SESSION
        section(
            f"restart fill (not timed): {history_entries + LIVE_RECORDS:,} journal entries"
            f" = {n_sessions:,} closed sessions x {RECORDS_PER_HISTORY_SESSION} records"
            f" + a live session's {LIVE_RECORDS}"
            + (" (--quick: 5k, not 1M)" if quick and not args.entries else "")
        )
        sqlite_db = folder / "restart.db"
        sqlite_url = f"sqlite:///{sqlite_db}"
        pg_url = pg.url(pg.create("restart"))
        await migrate_only(sqlite_url)
        await migrate_only(pg_url)
        probe_cfg = parse_config(config_text(sqlite_url, key_file, ELIGIBLE, []), "bench config")
        history = History(n_sessions, sealer, probe_cfg.promotions())
        t0 = time.perf_counter()
        secs = fill_sqlite(sqlite_db, history)
        say(
            f"  SQLite: {history.count:,} entries drawn by the core, chained and inserted"
            f" (executemany) in {secs:.1f} s; {len(history.pools):,} pool snapshots,"
            f" {len(history.seeds):,} sealed seeds; {sqlite_db.stat().st_size / 2**20:.0f} MiB"
        )
        secs = copy_to_postgres(sqlite_db, pg, make_url(pg_url).database or "")
        say(f"  PostgreSQL: the same rows by COPY, then VACUUM ANALYZE, in {secs:.1f} s")
        every = [(history.session_id(j), True) for j in range(n_sessions)]
        say(
            f"  the live phase's config lists all {n_sessions + 1:,} sessions (seeded into the"
            " schedule: every start holds each one, the closed ones restored after it is ready);"
            f" the restart's lists only the live one; fill took {time.perf_counter() - t0:.1f} s"
        )
        copies = {
            "sqlite": sqlite_copies(sqlite_db),
            "postgresql": pg_copies(pg, make_url(pg_url).database or ""),
        }
        for name, key_name in (("SQLite", "sqlite"), ("PostgreSQL", "postgresql")):
            fresh = copies[key_name]
            url = sqlite_url if key_name == "sqlite" else pg_url
            seed_cfg = parse_config(
                config_text(url, key_file, ELIGIBLE, [*every, (LIVE_SESSION, True)]),
                source="bench config",
            )
            cfg = parse_config(
                config_text(url, key_file, ELIGIBLE, [(LIVE_SESSION, True)]), "bench config"
            )
            results[key_name].update(
                await bench_restart(
                    name,
                    fresh,
                    seed_cfg,
                    cfg,
                    lambda u: config_text(u, key_file, ELIGIBLE, [(LIVE_SESSION, True)]),
                    sealer,
                    folder,
                    replay,
                    2 if quick else RESTART_RUNS,
                    1 if quick else PROCESS_RUNS,
                )
            )
        results["sqlite"]["version"] = sqlite3.sqlite_version
        results["sqlite"]["filesystem"] = fs
        results["postgresql"]["version"] = pg_version
        results["postgresql"]["settings"] = {
            "fsync": fsync,
            "synchronous_commit": sync_commit,
            "wal_sync_method": wal_sync,
        }
    finally:
        pg.drop_all()
        pg.stop()
        if args.keep:
            say(f"  kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)

    import_runs = 1 if quick else 3
    section(f"import time (fresh processes, median of {import_runs})")
    imp = import_time(import_runs)
    say(
        f"  interpreter start {imp['interpreter_s']:.3f} s; `import raps.cli, raps.daemon`"
        f" {imp['imports_s']:.3f} s (both are in the `raps run` figure, not in start())"
    )

    targets: dict[str, dict[str, Any]] = {}
    for key_name, label in (("sqlite", "sqlite"), ("postgresql", "postgresql")):
        r = results[key_name]
        targets[f"{label} pick p99 <= {TARGET_RATIO}x two bare commits"] = {
            "value": r["ratio_p99"],
            "met": r["ratio_p99"] <= TARGET_RATIO,
            "pick_p99_ms": r["pick_ms"]["p99"],
            "bare_commit_p99_ms": r["bare_commit_ms"]["p99"],
        }
        targets[f"{label} restart-to-ready <= {TARGET_RESTART_S:g} s"] = {
            "value": r["restart_s"],
            "met": r["restart_s"] <= TARGET_RESTART_S,
            "met_every_run": max(r["restart_runs_s"]) <= TARGET_RESTART_S,
            "entries": r["entries"],
        }
    elapsed = time.perf_counter() - started
    load_end = os.getloadavg()

    section("summary")
    say(f"  {'':<40} {'SQLite':>14} {'PostgreSQL':>14}")
    s, p = results["sqlite"], results["postgresql"]
    rows: list[tuple[str, Any, Any, str]] = [
        ("pick p50 ms", s["pick_ms"]["p50"], p["pick_ms"]["p50"], ".3f"),
        ("pick p99 ms", s["pick_ms"]["p99"], p["pick_ms"]["p99"], ".3f"),
        ("2 bare commits p50 ms", s["bare_commit_ms"]["p50"], p["bare_commit_ms"]["p50"], ".3f"),
        ("2 bare commits p99 ms", s["bare_commit_ms"]["p99"], p["bare_commit_ms"]["p99"], ".3f"),
        ("ratio p50 (pick / bare)", s["ratio_p50"], p["ratio_p50"], ".2f"),
        ("ratio p99 (pick / bare)", s["ratio_p99"], p["ratio_p99"], ".2f"),
        ("restart-to-ready s (median)", s["restart_s"], p["restart_s"], ".3f"),
        (
            "`raps run` to ready file s (1st)",
            s["process_ready_s"][0] if s["process_ready_s"] else None,
            p["process_ready_s"][0] if p["process_ready_s"] else None,
            ".3f",
        ),
        ("journal entries", s["entries"], p["entries"], ","),
    ]
    for label, a, b, fmt in rows:
        cells = [f"{v:>14{fmt}}" if v is not None else f"{'n/a':>14}" for v in (a, b)]
        say(f"  {label:<40} {cells[0]} {cells[1]}")
    say("  targets:")
    for name, t in targets.items():
        say(f"    {name:<44} {t['value']:>10} {'met' if t['met'] else 'NOT MET':>10}")
    say(f"  total wall time {elapsed:.0f} s; load average at end {load_end[0]:.2f}")

    result = {
        "sqlite": results["sqlite"],
        "postgresql": results["postgresql"],
        "import": {k: round(v, 4) for k, v in imp.items()},
        "python": platform.python_version(),
        "picks": n_picks,
        "loadavg_1min": [round(load_start[0], 2), round(load_end[0], 2)],
        "wall_s": round(elapsed, 1),
        "targets": targets,
        "quick": quick,
    }
    print_result(result)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--quick", action="store_true", help="short run, under a minute")
    ap.add_argument("--entries", type=int, default=None, help="journal entries for the restart")
    ap.add_argument("--picks", type=int, default=None, help="timed picks per database")
    ap.add_argument(
        "--replay-events",
        type=int,
        default=10_000,
        help="floor events logged after the snapshot, replayed at restart (default 10,000)",
    )
    ap.add_argument("--dir", default=None, help="where the SQLite files go (default: $TMPDIR)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument(
        "--profile", action="store_true", help="print a cProfile of the timed picks (slows them)"
    )
    ap.add_argument("--pg-host", default=os.environ.get("RAPS_TEST_PG_HOST", "127.0.0.1"))
    ap.add_argument("--pg-port", type=int, default=int(os.environ.get("RAPS_TEST_PG_PORT", "5432")))
    args = ap.parse_args(argv)
    start_clock()
    return asyncio.run(run(args))


if __name__ == "__main__":
    raise SystemExit(main())

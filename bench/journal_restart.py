"""Part 2 of the journal benchmark: a long journal filled in bulk (not timed), a live
session and a floor snapshot, then restart-to-ready timed: Service.start in process,
and a whole `raps run` until its ready file appears."""

from __future__ import annotations

import asyncio
import gc
import hashlib
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from bench.harness import ROOT, PgServer, RapsProcess, say, section
from bench.journal_probe import Probe, timed_async, timed_wrapper
from bench.journal_setup import (
    ELIGIBLE,
    HISTORY_PICKS,
    HISTORY_PLAYERS,
    HISTORY_START,
    LIVE_PICKS,
    LIVE_SESSION,
    PROMO,
    STAFF,
    START,
    TARGET_RESTART_S,
    FakeClock,
    floor_events,
    machine_of,
)
from raps.chain import Entry, Head, link
from raps.config import Config
from raps.floorsim import demo_layout
from raps.metrics import Metrics
from raps.seal import SeedSealer
from raps.service import Service
from raps.store.database import migrate, open_engine
from selector.events import AnyFloorEvent, CardInserted, GamePlayed, PlayerUpserted, PoolKind, Tier
from selector.fairness import commitment
from selector.floor import Floor
from selector.promotion import SessionRules
from selector.session import Command, DrawSession, Prize, PrizeKind

JournalRow = tuple[int, str, str, str, str, str, str, str | None, int | None, str | None]


@dataclass
class History:
    """Closed sessions drawn by the real core on a small floor, chained from genesis."""

    sessions: int
    sealer: SeedSealer
    promotions: list[Any]
    pools: set[str] = field(default_factory=set)  # digests of the pools stored so far
    seeds: list[tuple[str, str, bytes, bytes]] = field(default_factory=list)
    head: Head | None = None
    count: int = 0

    def session_id(self, j: int) -> str:
        return f"hist-{j:07d}"

    def rows(self) -> Iterator[JournalRow]:
        """Journal rows (seq, session_id, type, at, record, prev, hash, pool_digest,
        pool_size, pool_cards); the pool only in the row that first drew from it."""
        floor = Floor(demo_layout(HISTORY_PLAYERS, 0), self.promotions, idle_seconds=1e9)
        t_play = HISTORY_START - timedelta(minutes=3)
        for i in range(HISTORY_PLAYERS):
            card, machine = f"8{i:09d}", machine_of(i)
            floor.apply_many([
                PlayerUpserted(event_id=f"hp{i}", source="cms", ts=t_play, card=card,
                               tier=Tier.KING, display_name=f"Regular {i}", age_verified=True),
                CardInserted(event_id=f"hc{i}", source="bench", ts=t_play, machine=machine,
                             card=card),
                GamePlayed(event_id=f"hg{i}", source="bench", ts=t_play, machine=machine,
                           wager=80_000),
            ])  # fmt: skip
        rules = SessionRules(quotas={PoolKind.SLOTS: HISTORY_PICKS, PoolKind.TABLES: 0})
        spacing = min(1.0, 60_000 / max(1, self.sessions))  # stay inside one local day
        head = self.head
        for j in range(self.sessions):
            sid = self.session_id(j)
            at = HISTORY_START + timedelta(seconds=j * spacing)
            s = DrawSession(sid, PROMO, floor, rules)
            seed = hashlib.sha256(f"bench-history-seed-{j}".encode()).digest()
            nonce, ciphertext = self.sealer.seal(sid, seed)
            self.seeds.append((sid, commitment(seed), nonce, ciphertext))
            s.open(Command(f"{sid}-open", STAFF, at), seed)
            for k in range(HISTORY_PICKS):
                o = s.draw(Command(f"{sid}-d{k}", STAFF, at), PoolKind.SLOTS)
                assert o.pick is not None
                n = o.pick.number
                s.verify(Command(f"{sid}-v{k}", STAFF, at), n)
                prize = Prize(100_000 * (k + 1), PrizeKind.CASH, f"E{k + 1:02d}")
                s.award(Command(f"{sid}-a{k}", STAFF, at), n, prize)
            s.close(Command(f"{sid}-close", STAFF, at))
            records = [r.to_dict() for r in s.records]
            for r in records:
                data = r["data"]
            entry: Entry | None = None
            for entry, r in zip(link(records, head), records, strict=True):
                data = r["data"]
                pool: tuple[str | None, int | None, str | None] = (None, None, None)
                if "pool" in data and data["pool_digest"] not in self.pools:
                    # stored in full in the row of the pick that first drew from it
                    self.pools.add(data["pool_digest"])
                    pool = (data["pool_digest"], len(data["pool"]), "\n".join(data["pool"]))
                yield (entry.seq, r["session_id"], r["type"], r["at"], entry.record_json,
                       entry.prev, entry.hash, *pool)  # fmt: skip
            assert entry is not None
            head = Head(entry.seq, entry.hash)
            self.count = entry.seq
        self.head = head


JOURNAL_COLUMNS = (
    "seq, session_id, type, at, record, prev, hash, pool_digest, pool_size, pool_cards"
)


def fill_sqlite(path: Path, history: History) -> float:
    """Bulk insert the history (executemany, one transaction); returns seconds."""
    t0 = time.perf_counter()
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=OFF")  # setup only; the daemon opens it with FULL
    with con:
        con.executemany(
            f"INSERT INTO journal ({JOURNAL_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            history.rows(),
        )
        con.executemany(
            "INSERT INTO sealed_seeds (session_id, commitment, nonce, ciphertext)"
            " VALUES (?, ?, ?, ?)",
            history.seeds,
        )
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    return time.perf_counter() - t0


def copy_to_postgres(source: Path, pg: PgServer, dbname: str) -> float:
    """COPY the history from the SQLite file into PostgreSQL; returns seconds."""
    t0 = time.perf_counter()
    src = sqlite3.connect(source)
    with pg.connect(dbname, autocommit=False) as conn:
        cur = conn.cursor()
        tables = (
            ("journal", JOURNAL_COLUMNS, "seq"),
            ("sealed_seeds", "session_id, commitment, nonce, ciphertext", "session_id"),
        )
        for table, columns, order in tables:
            with cur.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for row in src.execute(f"SELECT {columns} FROM {table} ORDER BY {order}"):
                    copy.write_row(row)
        conn.commit()
    src.close()
    with pg.connect(dbname) as conn:
        conn.execute("VACUUM ANALYZE")  # what autovacuum does to a table this size anyway
    return time.perf_counter() - t0


async def migrate_only(url: str) -> None:
    engine = open_engine(url)
    try:
        await migrate(engine)
    finally:
        await engine.dispose()


async def live_phase(url: str, cfg: Config, sealer: SeedSealer, replay: int) -> dict[str, Any]:
    """Through the service: the floor, a live session with pending picks, a floor snapshot,
    then `replay` more floor events logged after it (a restart replays them)."""
    clock = FakeClock(START)
    engine = open_engine(url)
    service = Service(cfg, engine, sealer, Metrics(), clock)
    await service.start()
    service.ingest(floor_events(ELIGIBLE, START, "f"), "bench")
    clock.tick(5)
    await service.open(LIVE_SESSION, STAFF, "live-open")
    numbers: list[int] = []
    for k in range(LIVE_PICKS):
        clock.tick(1)
        r = await service.draw(LIVE_SESSION, STAFF, f"live-draw-{k}", PoolKind.SLOTS)
        assert r.outcome.pick is not None
        numbers.append(r.outcome.pick.number)
    for k, n in enumerate(numbers[:3]):
        await service.verify(LIVE_SESSION, STAFF, f"live-verify-{k}", n)
        await service.award(LIVE_SESSION, STAFF, f"live-award-{k}", n, 500_000, "cash", f"L{k}")
    await service.snapshot_floor()
    # a snapshot interval's worth of play after the snapshot: a restart replays it
    at = clock()
    events: list[AnyFloorEvent] = []
    for i in range(replay):
        ts = at + timedelta(milliseconds=i)
        m = machine_of(i % ELIGIBLE)
        events.append(GamePlayed(event_id=f"t{i}", source="bench", ts=ts, machine=m, wager=1000))
    service.ingest(events, "bench")
    await service.flush_events()
    head = service.journal.head
    # no Service.stop(): that would snapshot again and leave nothing to replay (a crash);
    # the closed sessions' restore after its start let go of the database as a crash would
    if service.restore.task is not None:
        service.restore.task.cancel()
        await asyncio.gather(service.restore.task, return_exceptions=True)
    await engine.dispose()
    assert head is not None
    return {"head": head.seq, "pending": LIVE_PICKS - 3}


# ------------------------------------------------------------ restart: timing


async def restart_once(
    url: str, cfg: Config, sealer: SeedSealer, sessions: int, background: bool = False
) -> dict[str, float]:
    """open_engine + Service() + start(), with the parts of start() stamped; every one of
    `sessions` must be back when it returns (the open ones restored, the closed ones known
    as closed: raps.session_loader), none refused. background: then the closed sessions'
    restore after the start timed to its end too (every one restored, none refused)."""
    probe = Probe()
    gc.collect()
    c0 = time.process_time()
    t0 = time.perf_counter()
    engine = open_engine(url)
    service = Service(cfg, engine, sealer, Metrics(), FakeClock(START))
    t1 = time.perf_counter()
    vars(service.journal)["load_head"] = timed_async(probe, "head", service.journal.load_head)
    replayed: list[int] = []
    restore_floor = service._restore_floor

    async def counted_restore_floor() -> int:
        n = await restore_floor()
        replayed.append(n)
        return n

    vars(service)["_restore_floor"] = timed_async(probe, "floor", counted_restore_floor)
    vars(service)["_restore_sessions"] = timed_async(probe, "sessions", service._restore_sessions)
    vars(service.floorlog)["latest_snapshot"] = timed_async(
        probe, "snapshot", service.floorlog.latest_snapshot
    )
    vars(service.floor)["restore"] = timed_wrapper(probe, "restore", service.floor.restore)
    await service.start()
    t2 = time.perf_counter()
    cpu = time.process_time() - c0
    marks = dict(probe.marks)
    live = service.session(LIVE_SESSION)
    ok = (
        service.storage_ok
        and len(live.pending()) == LIVE_PICKS - 3
        and len(service.floor.pool(PROMO, PoolKind.SLOTS)) == ELIGIBLE
    )
    held = (len(service.sessions), len(service.deferred))
    ok = ok and sum(held) == sessions and not service.refused
    after: dict[str, float] = {}
    if ok and background and service.restore.task is not None:
        c1, t3 = time.process_time(), time.perf_counter()
        await service.restore.task
        after = {"closed_restore": time.perf_counter() - t3,
                 "closed_restore_cpu": time.process_time() - c1}  # fmt: skip
        ok = len(service.sessions) == sessions and not service.refused
    elif service.restore.task is not None:
        service.restore.task.cancel()
        await asyncio.gather(service.restore.task, return_exceptions=True)
    head = service.journal.head
    await engine.dispose()
    if not ok:
        raise RuntimeError(
            f"the restarted service did not come back as it was ({held[0]} sessions restored"
            f" and {held[1]} closed ones deferred at ready, {len(service.sessions)} after, of"
            f" {sessions}; {len(service.refused)} refused)"
        )
    return {
        **after,
        "restored_at_ready": float(held[0]),
        "deferred_at_ready": float(held[1]),
        "total": t2 - t0,
        "cpu": cpu,  # this process's CPU time (the database server's is not in it)
        "construct": t1 - t0,
        "migrate": marks["head<"] - t1,
        "load_head": marks["head>"] - marks["head<"],
        "snapshot_read": marks["snapshot>"] - marks["snapshot<"],
        "floor_restore": marks["restore>"] - marks["restore<"],
        "replay": marks["floor>"] - marks["restore>"],
        "sessions": marks["sessions>"] - marks["sessions<"],
        "other": t2 - marks["sessions>"],
        "head": float(head.seq if head else 0),
        "replayed": float(replayed[0]),
    }


def process_once(config_file: Path, folder: Path) -> dict[str, float]:
    """`raps run` as a process: wall time until its --ready-file appears."""
    daemon = RapsProcess(
        config_file,
        folder / "ready.json",
        folder / "daemon.log",
        cwd=ROOT,
        command=[sys.executable, "-m", "raps.cli"],
        name="raps run",
    )
    t0 = time.perf_counter()
    daemon.spawn()
    try:
        daemon.wait_until_ready(120, 0.002)
        wall = time.perf_counter() - t0
    finally:
        daemon.stop()
    startup = float("nan")
    for rec in daemon.log_events():
        if rec.get("event") == "ready":
            startup = float(rec.get("startup_seconds", float("nan")))
    return {"wall": wall, "daemon_startup": startup}


def import_time(runs: int = 3) -> dict[str, float]:
    """Interpreter start, and the import of everything `raps run` loads, in fresh processes."""
    code = (
        "import time; t = time.perf_counter(); import raps.cli, raps.daemon;"
        " print(time.perf_counter() - t)"
    )
    imports, bare = [], []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                             text=True, check=True)  # fmt: skip
        imports.append(float(out.stdout.strip()))
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        bare.append(time.perf_counter() - t0)
    return {"imports_s": statistics.median(imports), "interpreter_s": statistics.median(bare)}


async def bench_restart(
    name: str,
    fresh: Callable[[], str],
    seed_cfg: Config,
    cfg: Config,
    config_text: Callable[[str], str],
    sealer: SeedSealer,
    folder: Path,
    replay: int,
    restart_runs: int,
    process_runs: int,
) -> dict[str, Any]:
    """fresh() is the crashed database's url, copied anew: every timed start reads the same
    journal and replays the same floor tail, as after a kill -9 (a start snapshots the
    floor, so a second start on the same database would have nothing to replay)."""
    section(f"{name}: restart-to-ready")
    t0 = time.perf_counter()
    crashed = fresh()
    live = await live_phase(crashed, seed_cfg, sealer, replay)
    sessions = len(seed_cfg.sessions)
    say(
        f"  live session {LIVE_SESSION}: {LIVE_PICKS} picks ({live['pending']} pending), floor"
        f" snapshot of {ELIGIBLE:,} players, then {replay:,} floor events logged after it, no"
        f" stop (a crash); {sessions:,} sessions in the schedule (the config that seeded them"
        f" is not the restart's); journal head {live['head']:,}"
        f" ({time.perf_counter() - t0:.1f} s, not timed)"
    )
    runs = []
    for i in range(restart_runs):
        t1 = time.perf_counter()
        url = fresh()
        copied = time.perf_counter() - t1
        r = await restart_once(url, cfg, sealer, sessions, background=i == 0)
        assert int(r["head"]) == live["head"], (r["head"], live["head"])
        assert int(r["replayed"]) == replay, (r["replayed"], replay)
        runs.append(r)
        say(
            f"  start {i + 1} (on a fresh copy of the crashed database, copied in {copied:.1f} s,"
            f" not timed): {r['total']:.3f} s (CPU {r['cpu']:.3f} s)"
            f" = construct {r['construct']:.3f}"
            f" + migrations check {r['migrate']:.3f} + head {r['load_head']:.3f}"
            f" + floor snapshot read {r['snapshot_read']:.3f} + restore {r['floor_restore']:.3f}"
            f" + replay {r['replay']:.3f} ({int(r['replayed']):,} events)"
            f" + sessions {r['sessions']:.3f} ({int(r['restored_at_ready']):,} from the"
            f" journal, {int(r['deferred_at_ready']):,} closed deferred)"
            f" + other {r['other']:.3f}"
        )
        if "closed_restore" in r:
            say(
                f"    then the {int(r['deferred_at_ready']):,} closed sessions restored in the"
                f" background in {r['closed_restore']:.1f} s (CPU {r['closed_restore_cpu']:.1f}"
                " s), none refused"
            )
    procs: list[dict[str, float]] = []
    process_error: str | None = None
    for i in range(process_runs):
        config_file = folder / f"{name.lower()}-{i}.toml"
        config_file.write_text(config_text(fresh()))
        try:
            p = process_once(config_file, folder)
        except RuntimeError as e:  # reported, not fatal: start() is what the target is about
            process_error = str(e).strip().splitlines()[-1][:300]
            say(f"  `raps run` process {i + 1} did not become ready: {process_error}")
            break
        procs.append(p)
        say(
            f"  `raps run` process {i + 1}: ready file after {p['wall']:.3f} s"
            f" (the daemon's own startup_seconds {p['daemon_startup']:.3f})"
            + " (a fresh copy of the crashed database)"
        )
    totals = [r["total"] for r in runs]
    median = statistics.median(totals)
    verdict = "met" if median <= TARGET_RESTART_S else "NOT MET"
    whole = f"{statistics.median(p['wall'] for p in procs):.3f} s" if procs else "not measured"
    say(
        f"  restart-to-ready (Service.start) median {median:.3f} s of {len(totals)}, max"
        f" {max(totals):.3f} s (target <= {TARGET_RESTART_S:g} s: {verdict});"
        f" whole process {whole}"
    )
    parts = {
        k: round(statistics.median(r[k] for r in runs), 4)
        for k in runs[0]
        if k
        not in (
            "head",
            "replayed",
            "closed_restore",
            "closed_restore_cpu",
            "restored_at_ready",
            "deferred_at_ready",
        )
    }
    background = next((r for r in runs if "closed_restore" in r), None)
    return {
        "restart_s": round(median, 4),
        "restart_runs_s": [round(t, 4) for t in totals],
        "restart_breakdown_s": parts,
        "process_ready_s": [round(p["wall"], 4) for p in procs],
        "daemon_startup_s": [round(p["daemon_startup"], 4) for p in procs],
        "process_error": process_error,
        "entries": live["head"],
        "floor_events_replayed": int(runs[0]["replayed"]),
        "floor_players": ELIGIBLE,
        "sessions_restored": sessions,
        "sessions_restored_at_ready": int(runs[0]["restored_at_ready"]),
        "closed_sessions_deferred": int(runs[0]["deferred_at_ready"]),
        # the first start's closed sessions, restored after it was ready
        "closed_restore_s": round(background["closed_restore"], 3) if background else None,
        "closed_restore_cpu_s": (
            round(background["closed_restore_cpu"], 3) if background else None
        ),
    }

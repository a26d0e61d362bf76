"""Part 1 of the journal benchmark: pick latency (Service.draw, journal commit included)
at 10,000 eligible players against two bare commits on the same engine, alternated."""

from __future__ import annotations

import cProfile
import gc
import io
import pstats
import sqlite3
import statistics
import time
from pathlib import Path
from typing import Any

import psycopg
from sqlalchemy import text
from sqlalchemy.engine import make_url

import raps.store.journal as journal_module
from bench.harness import percentile, say, section, summary_ms
from bench.journal_probe import (
    Probe,
    bare_breakdown,
    pick_breakdown,
    timed_async,
    timed_link,
    timed_wrapper,
)
from bench.journal_setup import (
    ELIGIBLE,
    FLUSH_EVERY,
    PICK_SESSION,
    PROMO,
    ROUNDS,
    STAFF,
    START,
    STEP_SECONDS,
    TARGET_RATIO,
    WARMUP,
    FakeClock,
    Rotation,
    config_text,
    floor_events,
)
from raps.config import parse_config
from raps.metrics import Metrics
from raps.seal import SeedSealer
from raps.service import Service
from raps.store.database import open_engine
from selector.events import PoolKind
from selector.session import Outcome


class RawCommit:
    """The same bare commit through the plain sync driver (reference only)."""

    def __init__(self, url: str) -> None:
        u = make_url(url)
        self.sqlite: sqlite3.Connection | None = None
        self.pg: psycopg.Connection | None = None
        if u.get_backend_name() == "sqlite":
            assert u.database is not None
            self.sqlite = sqlite3.connect(u.database, timeout=60)
            self.sqlite.execute("PRAGMA journal_mode=WAL")
            self.sqlite.execute("PRAGMA synchronous=FULL")
            self.sqlite.execute("PRAGMA busy_timeout=60000")  # a loaded machine: wait, not fail
        else:
            self.pg = psycopg.connect(
                host=u.host, port=u.port, user=u.username, dbname=u.database, autocommit=False
            )

    def commit_one(self, i: int) -> None:
        row = (i, time.time(), f"raw commit {i}")
        if self.sqlite is not None:
            self.sqlite.execute("INSERT INTO bench_bare_raw (id, at, note) VALUES (?, ?, ?)", row)
            self.sqlite.commit()
        else:
            assert self.pg is not None
            self.pg.execute("INSERT INTO bench_bare_raw (id, at, note) VALUES (%s, %s, %s)", row)
            self.pg.commit()

    def close(self) -> None:
        if self.sqlite is not None:
            self.sqlite.close()
        if self.pg is not None:
            self.pg.close()


BARE_INSERT = text("INSERT INTO bench_bare (id, at, note) VALUES (:id, :at, :note)")


async def bench_picks(
    name: str, url: str, key_file: Path, n_picks: int, profile: bool = False
) -> dict[str, Any]:
    section(f"{name}: pick latency at {ELIGIBLE:,} eligible vs two bare commits")
    cfg = parse_config(
        config_text(url, key_file, ELIGIBLE, [(PICK_SESSION, False)]), source="bench config"
    )
    sealer = SeedSealer(bytes.fromhex(key_file.read_text().strip()))
    clock = FakeClock(START)
    engine = open_engine(url)
    service = Service(cfg, engine, sealer, Metrics(), clock)
    await service.start()
    real_type = "REAL" if engine.dialect.name == "sqlite" else "DOUBLE PRECISION"
    id_type = "INTEGER" if engine.dialect.name == "sqlite" else "BIGINT"
    async with engine.begin() as conn:
        for table in ("bench_bare", "bench_bare_raw"):
            await conn.execute(
                text(
                    f"CREATE TABLE {table} (id {id_type} PRIMARY KEY, at {real_type} NOT NULL,"
                    " note TEXT NOT NULL)"
                )
            )
    t0 = time.perf_counter()
    applied = service.ingest(floor_events(ELIGIBLE, START, "f"), "bench")
    await service.flush_events()
    pool = service.floor.pool(PROMO, PoolKind.SLOTS)
    assert len(pool) == ELIGIBLE, len(pool)
    say(
        f"  floor: {applied:,} events ingested through Service.ingest and flushed in"
        f" {time.perf_counter() - t0:.2f} s; eligible slot pool {len(pool):,}"
    )
    clock.tick(1)
    opened = await service.open(PICK_SESSION, STAFF, "open")
    assert opened.outcome.records, "the session did not open"

    probe = Probe()
    probe.attach(engine)
    session = service.session(PICK_SESSION)
    vars(session)["draw"] = timed_wrapper(probe, "core", session.draw)
    vars(service.journal)["append"] = timed_async(probe, "append", service.journal.append)
    encoder = vars(service.journal)["_pools"]
    vars(encoder)["rows"] = timed_wrapper(probe, "encode", encoder.rows)
    real_link = vars(journal_module)["link"]
    vars(journal_module)["link"] = timed_link(probe)
    raw = RawCommit(url)
    rotation = Rotation(ELIGIBLE)

    picks: list[float] = []
    bares: list[float] = []
    raws: list[float] = []
    pick_cpu: list[float] = []
    bare_cpu: list[float] = []
    pick_parts: list[dict[str, float]] = []
    bare_parts: list[dict[str, float]] = []
    pool_sizes: set[int] = set()
    digests: set[str] = set()

    profiler = cProfile.Profile() if profile else None
    checkpoint_waits: list[float] = []

    async def timed_pick(k: int) -> tuple[float, float, Outcome]:
        clock.tick(STEP_SECONDS)
        assert len(service.floor.pool(PROMO, PoolKind.SLOTS)) == ELIGIBLE
        probe.reset()
        gc.disable()
        if profiler is not None:
            profiler.enable()
        c0 = time.process_time()
        t0 = time.perf_counter()
        result = await service.draw(PICK_SESSION, STAFF, f"draw-{k}", PoolKind.SLOTS)
        t1 = time.perf_counter()
        c1 = time.process_time()
        if profiler is not None:
            profiler.disable()
        gc.enable()
        parts = pick_breakdown(probe, t0, t1)
        if parts is not None and k >= WARMUP:
            pick_parts.append(parts)
        return t1 - t0, c1 - c0, result.outcome

    async def timed_bare(k: int) -> tuple[float, float]:
        probe.reset()
        gc.disable()
        c0 = time.process_time()
        t0 = time.perf_counter()
        # a pick is two commits (its pool, then its winner: issue 17), so its fair peer
        # is two bare commits, one after the other
        for n in (2 * k, 2 * k + 1):
            async with engine.begin() as conn:
                await conn.execute(BARE_INSERT, {"id": n, "at": time.time(), "note": f"bare {n}"})
        t1 = time.perf_counter()
        c1 = time.process_time()
        gc.enable()
        parts = bare_breakdown(probe, t0, t1)
        if parts is not None and k >= WARMUP:
            bare_parts.append(parts)
        return t1 - t0, c1 - c0

    gc.collect()
    gc.freeze()  # the floor's 10k players are long-lived: keep them out of collections
    total = n_picks + WARMUP
    try:
        for k in range(total):
            if k % 2 == 0:
                bare, bcpu = await timed_bare(k)
                pick, pcpu, outcome = await timed_pick(k)
            else:
                pick, pcpu, outcome = await timed_pick(k)
                bare, bcpu = await timed_bare(k)
            # a pool checkpoint (a full pool stored after every 128th delta, off the pick's
            # path) runs before the next step, as it does when picks are seconds apart; and
            # before the raw commit, which blocks the event loop: a checkpoint still writing
            # would wait for the loop while the raw commit waits for its lock
            if service.journal._checkpoints or service.journal._bases:
                c0 = time.perf_counter()
                await service.journal.settle()
                checkpoint_waits.append(time.perf_counter() - c0)
            gc.disable()
            r0 = time.perf_counter()
            raw.commit_one(k)
            raw_s = time.perf_counter() - r0
            gc.enable()
            assert outcome.pick is not None, "the pool ran dry"
            if k >= WARMUP:
                picks.append(pick)
                bares.append(bare)
                raws.append(raw_s)
                pick_cpu.append(pcpu)
                bare_cpu.append(bcpu)
                pool_sizes.add(outcome.pick.pool_size)
                digests.add(outcome.pick.pool_digest)
            # not timed: void the pick (the session does not bar voided players, so the
            # pool stays at 10,000), then let one player leave and another qualify
            await service.void(PICK_SESSION, STAFF, f"void-{k}", outcome.pick.number, "bench")
            service.ingest(rotation.events(clock()), "bench")
            if k % FLUSH_EVERY == FLUSH_EVERY - 1:
                await service.flush_events()
    finally:
        vars(journal_module)["link"] = real_link
        gc.unfreeze()
        raw.close()

    if profiler is not None:
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out).sort_stats("tottime")
        stats.print_stats(30)  # the whole pick: core, service, SQLAlchemy, the event loop
        stats.print_stats("selector|raps/", 25)  # the product's own code only
        say("  cProfile of the timed picks (event-loop thread only; timings inflated):")
        say(out.getvalue())
    head = service.journal.head
    async with engine.connect() as conn:
        pools_stored = (
            await conn.execute(text("SELECT count(*) FROM journal WHERE pool_digest IS NOT NULL"))
        ).scalar()
        checkpoints_stored = (
            await conn.execute(text("SELECT count(*) FROM pool_snapshots"))
        ).scalar()
    await engine.dispose()
    assert pool_sizes == {ELIGIBLE}, pool_sizes

    pick_ms = summary_ms(picks)
    bare_ms = summary_ms(bares)
    raw_ms = summary_ms(raws)
    ratio_p99 = percentile(picks, 99) / percentile(bares, 99)
    ratio_p50 = percentile(picks, 50) / percentile(bares, 50)
    ratio_p95 = percentile(picks, 95) / percentile(bares, 95)
    # the same ratio per round of consecutive steps (ROUNDS of them): how much one burst
    # of the shared machine's load moves a p99; the target is judged on the whole series,
    # reported with the rounds' median and spread
    size = max(1, len(picks) // ROUNDS)
    rounds = [
        round(percentile(picks[i : i + size], 99) / percentile(bares[i : i + size], 99), 3)
        for i in range(0, size * ROUNDS, size)
    ]
    spread = {"median": statistics.median(rounds), "min": min(rounds), "max": max(rounds)}
    say(
        f"  {len(picks)} timed picks and {len(bares)} bare commits, alternated ({WARMUP} warm-up"
        f" steps dropped); every pick drawn from exactly {ELIGIBLE:,} players,"
        f" {len(digests)} distinct pools; {pools_stored} pools stored in pick rows;"
        f" journal head {head.seq if head else 0}"
    )
    waits = checkpoint_waits or [0.0]
    say(
        f"  {checkpoints_stored} pool checkpoints stored off the pick path (full pools after"
        f" every 128th delta), awaited between steps: {len(checkpoint_waits)} still running"
        f" when their pick returned, waited for p50 {percentile(waits, 50) * 1e3:.2f} ms,"
        f" max {max(waits) * 1e3:.2f} ms (not in any timed figure)"
    )
    say(
        f"  pick (Service.draw)      p50 {pick_ms['p50']:8.3f} ms  p99 {pick_ms['p99']:8.3f} ms"
        f"  max {pick_ms['max']:8.3f}  (CPU p50 {percentile(pick_cpu, 50) * 1000:.3f} ms)"
    )
    say(
        f"  bare commit (same engine) p50 {bare_ms['p50']:7.3f} ms  p99 {bare_ms['p99']:8.3f} ms"
        f"  max {bare_ms['max']:8.3f}  (CPU p50 {percentile(bare_cpu, 50) * 1000:.3f} ms)"
    )
    say(
        f"  raw driver bare commit   p50 {raw_ms['p50']:8.3f} ms  p99 {raw_ms['p99']:8.3f} ms"
        f"  (sqlite3 / psycopg, no SQLAlchemy or async driver; reference only)"
    )
    verdict = "met" if ratio_p99 <= TARGET_RATIO else "NOT MET"
    say(
        f"  ratio pick / bare commit: p50 {ratio_p50:.2f}x, p95 {ratio_p95:.2f}x,"
        f" p99 {ratio_p99:.2f}x over all {len(picks)} alternated samples (target p99 <="
        f" {TARGET_RATIO}x: {verdict}); p99 ratio in {ROUNDS} rounds of {size}: {rounds},"
        f" median {spread['median']:.2f} [{spread['min']:.2f}..{spread['max']:.2f}]"
    )
    if len(picks) < 5000:
        say(f"  note: {len(picks)} samples; issue 20 asks for >= 5,000 (a full run)")
    if len(picks) < 200:
        say(
            f"  note: with {len(picks)} samples the p99 is one of the two largest: a single"
            " outlier in either series decides it"
        )
    pick_break = breakdown_table(pick_parts, picks, "pick")
    bare_break = breakdown_table(bare_parts, bares, "bare commit")
    return {
        "pick_ms": pick_ms,
        "bare_commit_ms": bare_ms,
        "raw_driver_commit_ms": raw_ms,
        "ratio_p99": round(ratio_p99, 3),
        "ratio_p50": round(ratio_p50, 3),
        "ratio_p95": round(ratio_p95, 3),
        "ratio_p99_rounds": rounds,
        "ratio_p99_rounds_spread": spread,
        "samples": len(picks),
        "pick_cpu_ms_p50": round(percentile(pick_cpu, 50) * 1000, 3),
        "bare_cpu_ms_p50": round(percentile(bare_cpu, 50) * 1000, 3),
        "pick_breakdown_ms": pick_break,
        "bare_breakdown_ms": bare_break,
        "eligible": ELIGIBLE,
        "distinct_pools": len(digests),
        "pool_checkpoints": checkpoints_stored,
    }


def breakdown_table(
    parts: list[dict[str, float]], totals: list[float], what: str
) -> dict[str, dict[str, float]]:
    """Per part: p50, mean, and mean over the slowest 5% of operations (the tail)."""
    if not parts:
        return {}
    keys = list(parts[0])
    cut = percentile([sum(p.values()) for p in parts], 95)
    tail = [p for p in parts if sum(p.values()) >= cut]
    out: dict[str, dict[str, float]] = {}
    say(f"  where a {what}'s time goes (ms; tail = mean over the slowest 5%, {len(tail)} ops):")
    say(f"    {'part':<26} {'p50':>9} {'mean':>9} {'tail':>9}")
    for k in keys:
        vals = [p[k] for p in parts]
        row = {
            "p50": round(percentile(vals, 50) * 1000, 3),
            "mean": round(statistics.fmean(vals) * 1000, 3),
            "tail_mean": round(statistics.fmean(p[k] for p in tail) * 1000, 3),
        }
        out[k] = row
        say(f"    {k:<26} {row['p50']:>9.3f} {row['mean']:>9.3f} {row['tail_mean']:>9.3f}")
    total_tail = statistics.fmean(sum(p.values()) for p in tail) * 1000
    say(
        f"    {'sum of parts':<26} {'':>9} {statistics.fmean(totals) * 1000:>9.3f}"
        f" {total_tail:>9.3f}"
    )
    return out

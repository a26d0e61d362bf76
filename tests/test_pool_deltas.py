"""Pool snapshots stored as deltas rebuild exactly, on both databases.

A pick's pool is the evidence `raps verify` recomputes the pick from; storing it as a
delta against a recent pool must give back the very same canonical list.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raps.store.database import migrate, open_engine
from raps.store.journal import JournalStore
from raps.store.pools import MAX_DEPTH, PoolEncoder, rebuild
from selector.fairness import pool_digest


def pools_drifting(n: int, steps: int, seed: int) -> list[list[str]]:
    """A pool of n cards that loses and gains a few players at each step."""
    rng = random.Random(seed)
    current = {f"6{i:09d}" for i in range(n)}
    fresh = n
    out = [sorted(current)]
    for _ in range(steps):
        for card in rng.sample(sorted(current), rng.randint(0, 3)):
            current.discard(card)
        for _ in range(rng.randint(0, 3)):
            current.add(f"6{fresh:09d}")
            fresh += 1
        out.append(sorted(current))
    return out


def record(pool: list[str]) -> dict[str, object]:
    return {"type": "pick.drawn", "session_id": "S", "at": "2026-04-25T18:00:00+02:00",
            "actor": {"user": "a", "role": "marketing"},
            "data": {"pool": pool, "pool_digest": pool_digest(pool)}}  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=0, max_value=10_000), st.integers(min_value=200, max_value=400))
def test_encoder_rows_rebuild_every_pool(seed: int, n: int) -> None:
    enc = PoolEncoder()
    rows: dict[str, dict[str, object]] = {}
    pools = pools_drifting(n, 40, seed)
    for pool in pools:
        item = [(pool_digest(pool), pool)]
        new = enc.rows(item)
        for r in new:
            rows[str(r["digest"])] = r
        enc.committed(item, new)
    assert any(r["base"] for r in rows.values()), "small changes must be stored as deltas"
    for pool in pools:
        assert rebuild(rows, pool_digest(pool)) == pool


def test_delta_chains_are_capped() -> None:
    enc = PoolEncoder()
    depth = {}
    for pool in pools_drifting(200, 3 * MAX_DEPTH, seed=7):
        item = [(pool_digest(pool), pool)]
        rows = enc.rows(item)
        for r in rows:
            base = r["base"]
            depth[r["digest"]] = depth[base] + 1 if base else 0
        enc.committed(item, rows)
    assert max(depth.values()) <= MAX_DEPTH


def test_a_failed_commit_forgets_the_bases() -> None:
    enc = PoolEncoder()
    a, b = pools_drifting(200, 1, seed=3)
    enc.committed([(pool_digest(a), a)], enc.rows([(pool_digest(a), a)]))
    enc.forget()
    (row,) = enc.rows([(pool_digest(b), b)])
    assert row["base"] is None and row["cards"]  # no base known to be durable: full


@pytest.mark.asyncio
async def test_journal_stores_deltas_and_reads_pools_back(db_url: str) -> None:
    engine = open_engine(db_url)
    try:
        await migrate(engine)
        store = JournalStore(engine)
        pools = pools_drifting(2000, 25, seed=11)
        for pool in pools:
            await store.append([record(pool)])
        back = await store.pools([pool_digest(p) for p in pools])
        assert [back[pool_digest(p)] for p in pools] == pools
        fresh = JournalStore(engine)  # a restarted daemon reads them the same way
        assert (await fresh.pools([pool_digest(pools[-1])]))[pool_digest(pools[-1])] == pools[-1]
    finally:
        await engine.dispose()

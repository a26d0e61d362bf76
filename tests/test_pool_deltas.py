"""Pool snapshots stored as deltas rebuild exactly, on both databases.

A pick's pool is the evidence `raps verify` recomputes the pick from; storing it as a
delta against a recent pool must give back the very same canonical list.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence

import pytest
from alembic import command
from alembic.config import Config as AlembicConfig
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import select
from sqlalchemy.engine import Connection

from raps.store.database import MIGRATIONS, migrate, open_engine
from raps.store.journal import JournalStore
from raps.store.pools import CHECKPOINT_DEPTH, MAX_DEPTH, PoolEncoder, rebuild
from raps.store.schema import journal, pool_snapshots
from selector.diff import sorted_delta
from selector.fairness import pool_digest
from selector.snapshot import PoolSnapshot


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


def pools_rotating(n: int, steps: int) -> list[list[str]]:
    """A pool of n cards where one player leaves and one joins at each step (each pool's
    nearest stored base is then the one just before it)."""
    cards = [f"6{i:09d}" for i in range(n + steps)]
    return [cards[i : i + n] for i in range(steps)]


def record(pool: Sequence[str]) -> dict[str, object]:
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


@settings(max_examples=300, deadline=None)
@given(
    st.sets(st.integers(min_value=0, max_value=3_000), max_size=1_500),
    st.sets(st.integers(min_value=0, max_value=3_000), max_size=1_500),
)
def test_sorted_delta_matches_the_set_difference(a: set[int], b: set[int]) -> None:
    base, now = sorted(f"{x:05d}" for x in a), sorted(f"{x:05d}" for x in b)
    found = sorted_delta(base, now, limit=len(base) + len(now))
    assert found is not None
    added, removed = found
    assert added == sorted(set(now) - set(base))
    assert removed == sorted(set(base) - set(now))


def test_sorted_delta_gives_up_past_its_limit() -> None:
    base = [f"{x:05d}" for x in range(1_000)]
    now = base[::2]
    assert sorted_delta(base, now, limit=499) is None
    assert sorted_delta(base, now, limit=500) == ([], base[1::2])


def _alembic(connection: Connection, action: str, revision: str) -> None:
    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["connection"] = connection
    getattr(command, action)(cfg, revision)


@pytest.mark.asyncio
async def test_pools_survive_the_move_into_journal_rows_and_back(db_url: str) -> None:
    """Revision 0004 stores new pools in their pick's row; pools written before it (in
    pool_snapshots) still read back, and a downgrade puts the newer ones beside them."""
    old, new = pools_drifting(300, 1, seed=5)
    engine = open_engine(db_url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(_alembic, "upgrade", "0003")
            await conn.execute(
                pool_snapshots.insert().values(
                    digest=pool_digest(old), size=len(old), cards="\n".join(old)
                )
            )
        await migrate(engine)
        store = JournalStore(engine)
        await store.append([record(new)])
        both = await store.pools([pool_digest(old), pool_digest(new)])
        assert both == {pool_digest(old): old, pool_digest(new): new}
        async with engine.begin() as conn:
            await conn.run_sync(_alembic, "downgrade", "0003")
            moved = (
                await conn.execute(
                    select(pool_snapshots.c.cards).where(
                        pool_snapshots.c.digest == pool_digest(new)
                    )
                )
            ).scalar_one()
        assert moved.split("\n") == new
    finally:
        await engine.dispose()


def test_a_deep_chain_is_checkpointed_once_then_restarts_from_it() -> None:
    enc = PoolEncoder()
    due: list[tuple[str, list[str]]] = []
    depth: dict[str, int] = {}
    pools = pools_rotating(200, CHECKPOINT_DEPTH + 4)
    for pool in pools[: CHECKPOINT_DEPTH + 1]:
        item = [(pool_digest(pool), pool)]
        rows = enc.rows(item)
        for r in rows:
            depth[r["digest"]] = depth[r["base"]] + 1 if r["base"] else 0
        due += enc.committed(item, rows)
    assert max(depth.values()) == CHECKPOINT_DEPTH
    assert due == [(pool_digest(pools[CHECKPOINT_DEPTH]), pools[CHECKPOINT_DEPTH])]
    enc.checkpointed(*due[0])
    nxt = pools[CHECKPOINT_DEPTH + 1]
    (row,) = enc.rows([(pool_digest(nxt), nxt)])
    assert row["base"] == due[0][0]  # the next delta starts from the checkpoint
    assert enc.committed([(pool_digest(nxt), nxt)], [row]) == []


@pytest.mark.asyncio
async def test_picks_store_deltas_and_checkpoints_go_beside_them(db_url: str) -> None:
    """After the first pool, every pick's row holds a delta; deep chains get a full
    checkpoint in pool_snapshots, and every pool reads back exactly."""
    engine = open_engine(db_url)
    try:
        await migrate(engine)
        store = JournalStore(engine)
        pools = pools_rotating(500, 3 * CHECKPOINT_DEPTH)
        for pool in pools:
            await store.append([record(pool)])
            await store.settle()  # as when picks are seconds apart
        async with engine.connect() as conn:
            j = journal
            cards = (
                await conn.execute(
                    select(j.c.pool_cards).where(j.c.pool_digest.is_not(None)).order_by(j.c.seq)
                )
            ).scalars()
            stored = list(cards)
            checkpoints = (await conn.execute(select(pool_snapshots.c.digest))).scalars().all()
        assert stored[0] and not any(stored[1:])  # full once, then deltas only
        assert len(checkpoints) >= 2
        back = await store.pools([pool_digest(p) for p in pools])
        assert [back[pool_digest(p)] for p in pools] == pools
    finally:
        await engine.dispose()


def test_a_snapshots_own_change_is_stored_when_its_base_is_known() -> None:
    """The core's snapshot says what changed since the last one; the encoder stores
    exactly that, and only against a base it knows to be stored."""
    a, b = pools_rotating(300, 2)
    enc = PoolEncoder()
    enc.committed([(pool_digest(a), a)], enc.rows([(pool_digest(a), a)]))
    hinted = PoolSnapshot(b)
    hinted.since = (pool_digest(a), [b[-1]], [a[0]])
    (row,) = enc.rows([(pool_digest(b), hinted)])
    assert row["base"] == pool_digest(a)
    assert json.loads(row["delta"]) == {"add": [b[-1]], "del": [a[0]]}
    assert rebuild({pool_digest(a): {"base": None, "size": len(a), "cards": "\n".join(a)},
                    row["digest"]: row}, pool_digest(b)) == b  # fmt: skip
    unknown = PoolSnapshot(b)
    unknown.since = ("f" * 64, ["bogus"], [])  # a base never stored: not trusted
    (row,) = enc.rows([(pool_digest(b), unknown)])
    assert row["base"] == pool_digest(a)  # found by comparing with a stored base instead
    assert json.loads(row["delta"]) == {"add": [b[-1]], "del": [a[0]]}


@pytest.mark.asyncio
async def test_after_a_start_the_first_pick_writes_only_a_delta(db_url: str) -> None:
    """At start the daemon stores each pool in full in the background (off the pick path,
    raps.session_loader.store_pools); a pick right after waits for it, then writes only
    what changed since, and the pool reads back exactly from the stored base."""
    base, pick = pools_rotating(500, 2)
    engine = open_engine(db_url)
    try:
        await migrate(engine)
        store = JournalStore(engine)
        store.store_base(pool_digest(base), base)  # not awaited: the pick comes at once
        snap = PoolSnapshot(pick)
        snap.since = (pool_digest(base), [pick[-1]], [base[0]])
        await store.append([record(snap)])
        async with engine.connect() as conn:
            row = (await conn.execute(select(journal.c.pool_cards, journal.c.pool_base))).one()
            based = (await conn.execute(select(pool_snapshots.c.digest))).scalars().all()
        assert row == ("", pool_digest(base)) and based == [pool_digest(base)]
        assert (await store.pools([pool_digest(pick)]))[pool_digest(pick)] == pick
    finally:
        await engine.dispose()

"""Pool snapshots reuse the last snapshot's hashing and still give the exact digest.

The digest binds a pick to its pool; a cache that ever fed SHA-256 a stale block
would make the pick unverifiable, so every snapshot is checked against the plain
`pool_digest` of the plain candidate list, across inserts, removals, block splits
and merges, and barred cards.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from sortedcontainers import SortedList

from selector.fairness import pool_digest
from selector.snapshot import PoolSnapshotter

cards = st.integers(min_value=0, max_value=400).map(lambda i: f"7{i:09d}")
steps = st.lists(
    st.tuples(
        st.lists(cards, max_size=30),  # join
        st.lists(cards, max_size=30),  # leave
        st.sets(cards, max_size=6),  # barred at this snapshot
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(st.sets(cards, max_size=300), steps, st.sampled_from([4, 16, 1000]))
def test_every_snapshot_is_the_plain_pool_and_its_digest(
    start: set[str], changes: list[tuple[list[str], list[str], set[str]]], load: int
) -> None:
    pool = SortedList(start)
    pool._reset(load)  # small blocks: splits and merges happen within a few steps
    snap = PoolSnapshotter()
    last: tuple[list[str], str] | None = None
    for join, leave, barred in changes:
        for c in join:
            if c not in pool:
                pool.add(c)
        for c in leave:
            pool.discard(c)
        candidates, digest = snap.take(pool, barred)
        expected = [c for c in pool if c not in barred]
        assert candidates == expected
        assert digest == pool_digest(expected)
        # the change it carries turns the last snapshot into this one, exactly
        if last is None:
            assert candidates.since is None
        else:
            assert candidates.since is not None
            base, added, removed = candidates.since
            assert base == last[1]
            assert added == sorted(set(expected) - set(last[0]))
            assert removed == sorted(set(last[0]) - set(expected))
        last = (list(candidates), digest)


def test_an_unchanged_block_is_not_encoded_again() -> None:
    pool = SortedList(f"7{i:09d}" for i in range(5000))
    snap = PoolSnapshotter()
    first, _ = snap.take(pool, ())
    before = {k: id(v[3]) for k, v in snap._blocks.items()}
    pool.add("7000004999x")  # lands in the last block only
    second, digest = snap.take(pool, ())
    after = {k: id(v[3]) for k, v in snap._blocks.items()}
    reused = [k for k in after if before.get(k) == after[k]]
    assert len(reused) == len(after) - 1
    assert digest == pool_digest(second) and len(second) == len(first) + 1


def test_an_empty_or_fully_barred_pool_has_the_empty_digest() -> None:
    pool = SortedList(["7000000001", "7000000002"])
    snap = PoolSnapshotter()
    assert snap.take(SortedList(), ()) == ([], pool_digest([]))
    assert snap.take(pool, {"7000000001", "7000000002"}) == ([], pool_digest([]))

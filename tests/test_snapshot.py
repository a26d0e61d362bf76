"""Pool snapshots reuse the last snapshot's hashing and still give the exact digest.

The digest binds a pick to its pool; a cache that ever fed SHA-256 a stale block
would make the pick unverifiable, so every snapshot is checked against the plain
`pool_digest` of the plain candidate list, across inserts, removals, block splits
and merges, and barred cards: for a plain SortedList (every block compared) and for a
`Pool` that notes its changes (only blocks with a changed card in range are redone).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sortedcontainers import SortedList

from selector.fairness import pool_digest
from selector.snapshot import Pool, PoolSnapshot, PoolSnapshotter

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
@given(st.sets(cards, max_size=300), steps, st.sampled_from([4, 16, 1000]), st.booleans())
def test_every_snapshot_is_the_plain_pool_and_its_digest(
    start: set[str],
    changes: list[tuple[list[str], list[str], set[str]]],
    load: int,
    tracked: bool,
) -> None:
    pool = Pool(start) if tracked else SortedList(start)
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
        assert candidates == expected and list(candidates) == expected
        assert digest == pool_digest(expected)
        assert [candidates[i] for i in range(len(candidates))] == expected
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


def test_two_snapshotters_on_one_pool_each_see_every_change() -> None:
    """A Pool's noted changes are those since its last reader: another snapshotter
    that reads in between must not make the first one miss a change."""
    pool = Pool(f"7{i:09d}" for i in range(3000))
    pool._reset(64)
    a, b = PoolSnapshotter(), PoolSnapshotter()
    a.take(pool, ())
    pool.remove("7000000100")
    b.take(pool, ())  # b reads (and resets) the noted changes
    pool.add("7000000100x")
    for snap in (a, b, a):
        candidates, digest = snap.take(pool, ())
        assert digest == pool_digest(list(pool)) and candidates == list(pool)


def test_a_bulk_change_makes_the_next_snapshot_compare_every_block() -> None:
    pool = Pool(f"7{i:09d}" for i in range(2000))
    pool._reset(64)
    snap = PoolSnapshotter()
    snap.take(pool, ())
    pool.update(["7000000005x", "7000001500x"])
    assert pool.changed is None
    candidates, digest = snap.take(pool, ())
    assert digest == pool_digest(list(pool))
    assert candidates.since is not None and candidates.since[1] == ["7000000005x", "7000001500x"]
    assert pool.changed == set()  # noted again from here on
    pool += ["7000000007x"]
    assert pool.changed is None


def test_a_snapshot_reads_like_the_list_it_stands_for() -> None:
    blocks = [["a", "b", "c"], ["d"], ["e", "f"]]
    snap = PoolSnapshot.of_blocks(blocks)
    plain = ["a", "b", "c", "d", "e", "f"]
    assert len(snap) == 6 and list(snap) == plain and snap == plain and plain == snap
    assert [snap[i] for i in range(-6, 6)] == plain + plain
    for start in range(-7, 8):
        for stop in range(-7, 8):
            assert snap[start:stop] == plain[start:stop]
    assert snap[::2] == plain[::2]
    with pytest.raises(IndexError):
        snap[6]
    assert snap.without(3) == ["a", "b", "c", "e", "f"] and snap.without(3).since is None
    assert snap != ["a"] and snap != "abcdef"
    assert PoolSnapshot() == [] and len(PoolSnapshot(["x"])) == 1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=5), min_size=1, max_size=700), st.data())
def test_a_position_looked_up_by_block_lengths_is_the_list_s(
    sizes: list[int], data: st.DataObject
) -> None:
    """A pick's winner is found from the blocks' lengths (runs of 256 summed at a time),
    not from where every block starts: the same card either way, across run edges."""
    blocks = [[f"{b:04d}-{k}" for k in range(n)] for b, n in enumerate(sizes)]
    plain = [c for block in blocks for c in block]
    by_lengths = PoolSnapshot.of_blocks(blocks, len(plain), [len(b) for b in blocks])
    picks = data.draw(st.lists(st.integers(0, len(plain) - 1), max_size=20))
    for i in [*picks, 0, len(plain) - 1]:
        assert by_lengths[i] == plain[i] and by_lengths[i - len(plain)] == plain[i]
    assert by_lengths[1:5] == plain[1:5]  # and once the starts are worked out, the same
    assert [by_lengths[i] for i in range(len(plain))] == plain

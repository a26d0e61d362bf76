"""Derivation v3's pool trees: after any churn a snapshot is the plain pool minus its bars,
its digest the reference bin digest of weight-1 entries, its delta the true difference
from the previous snapshot, and an earlier snapshot never changes afterwards."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from selector.bindigest import bin_digest
from selector.pooltree import PoolTree
from selector.snapshot import Pool

cards = st.text(alphabet="0123456789AB", min_size=1, max_size=4)
step = st.tuples(
    st.lists(st.tuples(st.booleans(), cards), max_size=40),  # (add?, card) changes
    st.frozensets(cards, max_size=6),  # the bars of this snapshot
    st.booleans(),  # settle between the changes and the snapshot (the floor's batch end)
)


def reference(pool: set[str], barred: frozenset[str]) -> tuple[list[str], str]:
    cands = sorted(pool - barred)
    return cands, bin_digest([(c, 1) for c in cands])


@settings(max_examples=150, deadline=None)
@given(st.frozensets(cards, max_size=120), st.lists(step, min_size=1, max_size=12))
def test_snapshots_follow_the_reference_through_churn(start, steps) -> None:
    pool = Pool(start)
    tree = PoolTree(pool)
    model = set(start)
    taken: list[tuple[list[str], object]] = []
    previous: list[str] | None = None
    for changes, barred, settle in steps:
        for add, card in changes:
            if add and card not in model:
                pool.add(card)
                model.add(card)
            elif not add and card in model:
                pool.remove(card)
                model.discard(card)
        if settle:
            tree.settle()
        snap, digest = tree.snapshot(barred)
        cands, want = reference(model, barred)
        assert list(snap) == cands and len(snap) == len(cands)
        # by position, as a pick reads its winner (from the leaves' lengths)
        assert [snap[i] for i in range(len(cands))] == cands
        assert digest == want
        if previous is not None:
            assert snap.since is not None
            base, added, removed = snap.since
            assert base == reference_digest(previous)
            # sets, in no particular order (docs/journal.md): no card twice
            assert sorted(added) == sorted(set(cands) - set(previous)) == sorted(set(added))
            assert sorted(removed) == sorted(set(previous) - set(cands)) == sorted(set(removed))
        previous = cands
        taken.append((cands, snap))
    for cands, snap in taken:  # later changes left every earlier snapshot as it was
        assert list(snap) == cands  # type: ignore[call-overload]
    assert tree.digest() == bin_digest([(c, 1) for c in sorted(model)])


def reference_digest(cands: list[str]) -> str:
    return bin_digest([(c, 1) for c in cands])


def test_a_bulk_change_builds_the_tree_again_and_forgets_the_delta() -> None:
    pool = Pool([f"C{i:05d}" for i in range(5000)])
    tree = PoolTree(pool)
    first, _ = tree.snapshot(())
    assert first.since is None  # nothing before it
    pool.update([f"D{i:05d}" for i in range(100)])  # a bulk change: unknown per card
    snap, digest = tree.snapshot(["C00001"])
    assert snap.since is None
    assert digest == bin_digest([(c, 1) for c in sorted(set(pool) - {"C00001"})])
    for i in range(1000):  # more than 1 in 8 of the pool at once: rebuilt, delta kept
        pool.remove(f"C{i:05d}")
    snap2, _ = tree.snapshot(["C00001"])
    assert snap2.since is not None
    assert sorted(snap2.since[2]) == [f"C{i:05d}" for i in range(1000) if i != 1]


def test_a_checkpoint_is_the_whole_pool_and_the_next_delta_starts_from_it() -> None:
    pool = Pool(["A", "B", "C"])
    tree = PoolTree(pool)
    whole, digest = tree.checkpoint()
    assert list(whole) == ["A", "B", "C"]
    pool.add("D")
    snap, _ = tree.snapshot(["B"])
    assert snap.since == (digest, ["D"], ["B"])

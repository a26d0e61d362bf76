"""The v2 bin digest: SumTree agrees with the reference after any sequence of changes."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from selector.bindigest import EMPTY_TOP, bin_digest, final_digest, height, locate
from selector.sumtree import SumTree

cards = st.text(alphabet="0123456789ABCDEF", min_size=1, max_size=6)
ops = st.lists(
    st.tuples(st.sampled_from(["set", "remove"]), cards, st.integers(1, 50)), max_size=200
)


def reference(tree_items: dict[str, int]) -> str:
    return bin_digest(sorted(tree_items.items()))


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(cards, st.integers(1, 1000), max_size=300), ops)
def test_incremental_digest_matches_reference(start: dict[str, int], changes) -> None:
    tree = SumTree(start.items())
    model = dict(start)
    assert tree.digest() == reference(model)
    for i, (op, card, w) in enumerate(changes):
        if op == "set":
            tree.set(card, w)
            model[card] = w
        else:
            tree.discard(card)
            model.pop(card, None)
        if i % 7 == 0:
            assert tree.digest() == reference(model)
    assert tree.digest() == reference(model)
    assert list(tree.items()) == sorted(model.items())
    assert tree.total == sum(model.values())


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(cards, st.integers(1, 20), max_size=200), ops)
def test_blocks_are_a_snapshot_that_later_changes_leave_alone(start, changes) -> None:
    tree = SumTree(start.items())
    model = dict(start)
    held: list[tuple[list[list[str]], list[str]]] = []
    for i, (op, card, w) in enumerate(changes):
        if op == "set":
            tree.set(card, w)
            model[card] = w
        else:
            tree.discard(card)
            model.pop(card, None)
        if i % 3 == 0:
            blocks = tree.blocks()
            assert all(blocks) and [c for b in blocks for c in b] == sorted(model)
            # the lengths kept beside the order (a pick finds its winner by them) agree
            assert tree.block_lengths() == [len(b) for b in blocks]
            held.append((blocks, sorted(model)))
    for blocks, cards_then in held:
        assert [c for b in blocks for c in b] == cards_then


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(cards, st.integers(1, 20), min_size=1, max_size=200), st.data())
def test_locate_matches_reference(bin_: dict[str, int], data) -> None:
    tree = SumTree(bin_.items())
    items = sorted(bin_.items())
    t = data.draw(st.integers(0, tree.total - 1))
    card, first = tree.locate(t)
    i = locate(items, t)
    assert card == items[i][0]
    assert first == sum(w for _, w in items[:i])


def test_large_bin_with_deep_levels_and_churn() -> None:
    start = {f"C{i:07d}": 1 + i % 13 for i in range(20_000)}
    tree = SumTree(start.items())
    assert tree.digest() == reference(start)
    assert max(height(c) for c in start) >= 2  # the test reaches level 2
    for i in range(0, 20_000, 37):
        tree.remove(f"C{i:07d}")
        del start[f"C{i:07d}"]
        tree.set(f"D{i:07d}", 3)
        start[f"D{i:07d}"] = 3
    assert tree.digest() == reference(start)


def test_empty_bin_digest() -> None:
    tree = SumTree()
    assert tree.digest() == final_digest(0, 0, EMPTY_TOP) == bin_digest([])
    tree.set("A", 2)
    tree.remove("A")
    assert tree.digest() == bin_digest([])


def test_digest_pins_the_published_derivation() -> None:
    """A worked example from docs/fairness.md: changing the format changes this value."""
    leaf = hashlib.sha256(
        b"raps-leaf-v2"
        + b"\x00\x01A"
        + (3).to_bytes(8, "big")
        + b"\x00\x01B"
        + (1).to_bytes(8, "big")
    ).digest()
    assert height("A") == 0 and height("B") == 0
    expect = hashlib.sha256(b"raps-bin-v2" + (2).to_bytes(8, "big") + (4).to_bytes(8, "big") + leaf)
    assert bin_digest([("A", 3), ("B", 1)]) == expect.hexdigest()


def test_rejects_bad_entries() -> None:
    with pytest.raises(ValueError):
        bin_digest([("B", 1), ("A", 1)])
    with pytest.raises(ValueError):
        SumTree([("A", 0)])


def test_removing_the_last_cards_of_each_leaf() -> None:
    cards = [f"K{i:05d}" for i in range(3000)]
    tree = SumTree((c, 2) for c in cards)
    model = dict.fromkeys(cards, 2)
    bounds = [c for c in cards if height(c)]
    for c in [*bounds, cards[-1], cards[0]]:  # every leaf's end, then the ends of the bin
        tree.remove(c)
        del model[c]
        assert tree.digest() == reference(model)
    for c in reversed(cards):
        tree.discard(c)
        model.pop(c, None)
    assert tree.digest() == reference(model) and len(tree) == 0


def test_worked_example_of_the_docs() -> None:
    """docs/fairness.md "Worked example": the published values of derivation v2."""
    from selector.fairness import ticket_index

    items = [("1001", 3), ("1002", 1), ("1003", 6)]
    digest = bin_digest(items)
    assert digest == "238ce30b0be73d34eb2da5e8f523a35c83d6fdebbf6ec78018d74044444fe7dc"
    assert SumTree(items).digest() == digest
    seed = hashlib.sha256(b"example seed").digest()
    ticket, rejected = ticket_index(seed, "draw:teeds-q-2026-04-25", 1, 0, digest, 10)
    assert (ticket, rejected) == (4, 0)
    assert items[locate(items, ticket)][0] == "1003"

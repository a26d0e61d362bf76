"""A bin kept as its v2 Merkle-sum tree, so a digest costs what changed, not the bin.

The digest is byte for byte `selector.bindigest.bin_digest` of the bin's entries; only
the nodes on the paths of changed cards are hashed again (O(changes x log n)).

Leaves are plain lists (cards and their encoded entries side by side, with their total)
so a changed leaf is hashed again with one join. A leaf's list of cards is replaced, never
edited, when a card comes or goes: `blocks()` hands the lists out as a snapshot that the
tree's later changes leave alone (a pool's candidates at a pick, held until its winner).
Each level's nodes are named by the card they end at (None for a level's last node when
it ends at the bin's last card without a cut there); `_bounds[l]` holds the cards that
end a node at level l. A change marks its leaf dirty; recomputing a node marks its parent,
so one digest hashes each changed path once however many changes it holds. Cutting
depends only on each card (its height), so a card coming or going splits or joins the
nodes it ends and nothing else.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from hashlib import sha256
from operator import itemgetter

from selector.bindigest import (
    EMPTY_TOP,
    GROUP_MASK,
    LEAF_PREFIX,
    MAX_HEIGHT,
    MAX_WEIGHT,
    NODE_PREFIX,
    RANK_PREFIX,
    child_bytes,
    encode_entry,
    final_digest,
    height,
    height_of_bytes,
)

Key = str | None
_PACKED, _TOTAL, _COUNT = itemgetter(0), itemgetter(1), itemgetter(2)
# a node: its bytes as its parent hashes them (hash | u64 total | u64 count), total, count
NodeValue = tuple[bytes, int, int]


@dataclass(slots=True)
class _Leaf:
    cards: list[str] = field(default_factory=list)
    encoded: list[bytes] = field(default_factory=list)
    total: int = 0


class SumTree:
    """(card, weight) entries, weight >= 1, with their v2 digest and ticket lookup."""

    def __init__(self, items: Iterable[tuple[str, int]] = ()) -> None:
        entries = dict(items)
        cards = sorted(entries)
        weights = [entries[c] for c in cards]
        for c, w in zip(cards, weights, strict=True):
            if not (type(w) is int and 1 <= w <= MAX_WEIGHT and 0 < len(c) <= 0x3FFF):
                encode_entry(c, w)  # raises the ValueError that says what is wrong
        self._build(cards, weights)

    @classmethod
    def from_sorted(cls, cards: list[str], weights: list[int]) -> SumTree:
        """A tree of entries the caller has checked: cards strictly increasing, weights
        in 1..2^63-1 (a draw's open has already checked its bin; not checked twice)."""
        tree = cls.__new__(cls)
        tree._build(cards, weights)
        return tree

    def _build(self, cards: list[str], weights: list[int]) -> None:
        raw = [c.encode("utf-8") for c in cards]
        if max(map(len, raw), default=0) > 0xFFFF:
            raise ValueError("a card must be 1 to 65,535 bytes")
        # built list by list (not card by card): a 200,000-card bin opens in a fraction of
        # the time; only the 1 card in 64 that ends a leaf has its height worked out
        encoded = [len(b).to_bytes(2, "big") + b + w.to_bytes(8, "big")
                   for b, w in zip(raw, weights, strict=True)]  # fmt: skip
        low = [sha256(RANK_PREFIX + b).digest()[-1] for b in raw]
        ends = [i for i, x in enumerate(low) if not x & GROUP_MASK]
        self._weight: dict[str, int] = dict(zip(cards, weights, strict=True))
        self._heights: dict[str, int] = {cards[i]: height_of_bytes(raw[i]) for i in ends}
        self._leaves: dict[Key, _Leaf] = {}
        order: list[list[str]] = []
        start = 0
        for i in [*ends, len(cards) - 1]:
            if i < start:
                continue
            leaf = _Leaf(cards[start : i + 1], encoded[start : i + 1], sum(weights[start : i + 1]))
            self._leaves[cards[i] if cards[i] in self._heights else None] = leaf
            order.append(leaf.cards)
            start = i + 1
        # plain sorted lists: 1 card in 64 ends a leaf, so even a 1M-card bin's level 0
        # holds ~16k; bisect and slicing run in C
        ends_in_order = [cards[i] for i in ends]
        self._bounds: list[list[str]] = [
            [c for c in ends_in_order if self._heights[c] > lv] for lv in range(MAX_HEIGHT)
        ]
        self._nodes: list[dict[Key, NodeValue]] = [{} for _ in range(MAX_HEIGHT + 1)]
        self._dirty: list[set[Key]] = [set() for _ in range(MAX_HEIGHT + 1)]
        self._dirty[0].update(self._leaves)
        self._total = sum(weights)
        self._digest: str | None = None
        # the leaves' lists of cards in order (blocks()) and their lengths, kept up to date
        # by every change; built here, with the leaves, so a restored floor's first pick
        # does not look every leaf up again (issue 20: first pick after a start)
        self._order: list[list[str]] = order
        self._lens: list[int] = list(map(len, order))

    # ------------------------------------------------------------------ reading

    def __len__(self) -> int:
        return len(self._weight)

    def __contains__(self, card: object) -> bool:
        return card in self._weight

    @property
    def total(self) -> int:
        return self._total

    def weight(self, card: str) -> int:
        return self._weight.get(card, 0)

    def weights(self) -> dict[str, int]:
        """A copy of card -> weight (a dict copy: fast even for 200,000 cards)."""
        return self._weight.copy()

    def weight_of(self) -> Callable[[str], int | None]:
        """card -> weight or None, without a copy (the tree's own dict's `get`)."""
        return self._weight.get

    def items(self) -> Iterator[tuple[str, int]]:
        """Entries in canonical order."""
        w = self._weight
        for key in [*self._bounds[0], None]:
            leaf = self._leaves.get(key)
            if leaf is not None:
                yield from ((c, w[c]) for c in leaf.cards)

    def blocks(self) -> list[list[str]]:
        """The cards in canonical order as the leaves hold them, leaf by leaf (the lists
        themselves, not copies). A change replaces a leaf's list rather than editing it, so
        the lists handed out here never change: together they are a snapshot, taken in
        O(n / 64) (one copy of the order every change keeps up to date)."""
        return list(self._order)

    def block_lengths(self) -> list[int]:
        """How many cards each of `blocks()` holds (a copy: a list of small ints, so a
        snapshot finds a position without touching every block, selector.snapshot)."""
        return list(self._lens)

    def _place(self, key: Key) -> int:
        """Where the leaf named `key` is (or would be) in the order of blocks."""
        b = self._bounds[0]
        return len(b) if key is None else bisect_left(b, key)

    def _reorder(self, at: int, replaced: int, blocks: list[list[str]]) -> None:
        """The kept order of blocks, and their lengths, after a change: `replaced` leaves
        from `at` on are now these (a leaf changed, split or joined its neighbour)."""
        self._order[at : at + replaced] = blocks
        self._lens[at : at + replaced] = map(len, blocks)

    def digest(self) -> str:
        if self._digest is None:
            self._recompute()
            top = next((lv for lv in self._nodes if len(lv) == 1), None)
            if not self._weight or top is None:
                self._digest = final_digest(0, 0, EMPTY_TOP)
            else:
                packed, total, count = next(iter(top.values()))
                self._digest = final_digest(count, total, packed[:32])
        return self._digest

    def locate(self, ticket: int) -> tuple[str, int]:
        """(card holding `ticket` in canonical order, the card's first ticket)."""
        if not 0 <= ticket < self._total:
            raise ValueError(f"ticket {ticket} is outside the bin's {self._total} tickets")
        self.digest()
        level = next(lv for lv, nodes in enumerate(self._nodes) if len(nodes) == 1)
        key: Key = next(iter(self._nodes[level]))
        first = 0
        while level > 0:
            below = self._nodes[level - 1]
            for child in self._children(level, key):
                total = below[child][1]
                if ticket < first + total:
                    key = child
                    break
                first += total
            level -= 1
        w = self._weight
        for card in self._leaves[key].cards:
            if ticket < first + w[card]:
                return card, first
            first += w[card]
        raise AssertionError("tree totals disagree with the leaves")  # pragma: no cover

    # ------------------------------------------------------------------ changing

    def set(self, card: str, weight: int) -> None:
        """Give `card` this many tickets (adding it if new)."""
        old = self._weight.get(card)
        if old == weight:
            return
        encoded = encode_entry(card, weight)
        self._weight[card] = weight
        self._total += weight - (old or 0)
        self._digest = None
        key = self._key(0, card)
        self._dirty[0].add(key)
        leaf = self._leaves.get(key)
        fresh = leaf is None
        if leaf is None:
            leaf = self._leaves[key] = _Leaf()
        i = bisect_left(leaf.cards, card)
        leaf.total += weight - (old or 0)
        if old is not None:
            leaf.encoded[i] = encoded
            return
        cards = leaf.cards = leaf.cards.copy()  # a new list: snapshots keep the old one
        cards.insert(i, card)
        leaf.encoded.insert(i, encoded)
        j = self._place(key)
        h = height(card)
        if not h:
            self._reorder(j, 0 if fresh else 1, [leaf.cards])
            return
        self._heights[card] = h
        for lv in range(h):
            insort(self._bounds[lv], card)
        # the leaf splits after the new card: its head is a new leaf named by the card
        head = _Leaf(leaf.cards[: i + 1], leaf.encoded[: i + 1])
        head.total = sum(self._weight[c] for c in head.cards)
        leaf.cards = leaf.cards[i + 1 :]
        del leaf.encoded[: i + 1]
        leaf.total -= head.total
        self._leaves[card] = head
        self._dirty[0].add(card)
        if not leaf.cards:
            del self._leaves[key]
        self._reorder(j, 0 if fresh else 1, [head.cards] + ([leaf.cards] if leaf.cards else []))

    def remove(self, card: str) -> None:
        weight = self._weight.pop(card)  # KeyError when absent, as for a dict
        self._total -= weight
        self._digest = None
        key = self._key(0, card)
        j = self._place(key)
        leaf = self._leaves[key]
        cards = leaf.cards = leaf.cards.copy()  # a new list: snapshots keep the old one
        i = bisect_left(cards, card)
        del cards[i], leaf.encoded[i]
        leaf.total -= weight
        h = self._heights.pop(card, 0)
        for lv in range(h):
            b = self._bounds[lv]
            del b[bisect_left(b, card)]
            self._nodes[lv].pop(card, None)
            self._dirty[lv].discard(card)
        after = self._key(0, card)
        if h:
            # the card ended its leaf: what is left of it joins the next leaf
            del self._leaves[card]
            nxt = self._leaves.get(after)
            if nxt is None:
                if leaf.cards:
                    self._leaves[after] = leaf
                self._reorder(j, 1, [leaf.cards] if leaf.cards else [])
            else:
                nxt.cards = [*leaf.cards, *nxt.cards]
                nxt.encoded[:0] = leaf.encoded
                nxt.total += leaf.total
                self._reorder(j, 2, [nxt.cards])
        elif not leaf.cards:
            del self._leaves[key]
            self._reorder(j, 1, [])
        else:
            self._reorder(j, 1, [leaf.cards])
        self._dirty[0].add(after)

    def discard(self, card: str) -> None:
        if card in self._weight:
            self.remove(card)

    # ------------------------------------------------------------------ the tree

    def _key(self, level: int, card: str) -> Key:
        """The node at `level` whose range holds `card` (present or not)."""
        if level >= MAX_HEIGHT:
            return None
        b = self._bounds[level]
        i = bisect_left(b, card)
        return b[i] if i < len(b) else None

    def _start(self, level: int, key: Key) -> str | None:
        """The card the node before `key` ends at (None: the node starts the level)."""
        if level >= MAX_HEIGHT:
            return None
        b = self._bounds[level]
        i = len(b) if key is None else bisect_left(b, key)
        return b[i - 1] if i else None

    def _children(self, level: int, key: Key) -> list[Key]:
        start = self._start(level, key)
        below = self._bounds[level - 1]
        i = 0 if start is None else bisect_right(below, start)
        j = len(below) if key is None else bisect_right(below, key)
        kids: list[Key] = list(below[i:j])
        if key is None and None in self._nodes[level - 1]:
            kids.append(None)
        return kids

    def _recompute(self) -> None:
        """Hash the marked nodes level by level, up to the top (the first level with one
        node): the levels above wait, their marks kept, until the bin grows into them."""
        for level in range(MAX_HEIGHT + 1):
            dirty = self._dirty[level]
            if not dirty:
                if len(self._nodes[level]) <= 1:
                    break  # the top, and nothing below it changed
                continue
            nodes = self._nodes[level]
            up = self._dirty[level + 1] if level < MAX_HEIGHT else None
            for key in dirty:
                value: NodeValue | None = None
                if level == 0:
                    leaf = self._leaves.get(key)
                    if leaf is not None and leaf.cards:
                        h = sha256(LEAF_PREFIX + b"".join(leaf.encoded)).digest()
                        n = len(leaf.cards)
                        value = (child_bytes(h, leaf.total, n), leaf.total, n)
                else:
                    kids = list(map(self._nodes[level - 1].__getitem__, self._children(level, key)))
                    if kids:
                        h = sha256(NODE_PREFIX + b"".join(map(_PACKED, kids))).digest()
                        total = sum(map(_TOTAL, kids))
                        n = sum(map(_COUNT, kids))
                        value = (child_bytes(h, total, n), total, n)
                if value is None:
                    nodes.pop(key, None)
                else:
                    nodes[key] = value
                if up is not None:
                    up.add(None if key is None else self._key(level + 1, key))
            dirty.clear()
            if len(nodes) <= 1:
                break  # the top: what is above it is read by no digest

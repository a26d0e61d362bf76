"""A RAPS pool kept as its derivation v3 tree, so a pick's digest costs the change, not the pool.

Derivation v3 (docs/fairness.md) digests a pool as a v2 bin in which every card weighs 1:
`selector.sumtree.SumTree` keeps that digest up to date in O(changes x log n). The floor's
`Pool` (a SortedList) notes the cards that came or went (`Pool.touched`); `settle` applies
them to the tree and hashes the changed paths. The floor settles its trees at the end of
every batch of events (and when its clock moves), so the hashing is paid where the change
happens, at ingest, and a pick pays only for its own bars:

- `snapshot(barred)`: the session's barred cards are taken out, the digest read, the
  cards' leaves handed out as the candidates (a leaf's list is replaced, never edited,
  so they stay as they were: O(n / 64)), and the barred cards put back (O(barred x log n));
- what changed since the previous snapshot is known from the touched cards, so the
  snapshot carries it (`PoolSnapshot.since`) and the journal stores the pool as a delta.

A large batch of changes (a restore, a replay, 1 pool in 8 changed at once) builds the
tree again from the pool in bulk, which is faster than that many single changes.
"""

from __future__ import annotations

from collections.abc import Collection

from selector.snapshot import Pool, PoolSnapshot
from selector.sumtree import SumTree

_REBUILD_FRACTION = 8  # more than 1 card in 8 touched: build the tree again in bulk
_REBUILD_MIN = 4096


class PoolTree:
    """One pool's weight-1 SumTree, its snapshots and what changed between them."""

    __slots__ = ("_added", "_last", "_removed", "pool", "tree")

    def __init__(self, pool: Pool) -> None:
        self.pool = pool
        self.tree = SumTree()
        # the cards that came to / went from the floor's pool since the last snapshot
        # (None: unknown after a bulk change, no delta for the next snapshot)
        self._added: set[str] | None = None
        self._removed: set[str] = set()
        # (digest, barred cards cut) of the last snapshot
        self._last: tuple[str, frozenset[str]] | None = None
        if pool.touched is None or len(pool):
            self._rebuild()

    def _rebuild(self) -> None:
        cards = list(self.pool)
        self.tree = SumTree.from_sorted(cards, [1] * len(cards))
        self.pool.touched = set()
        self.tree.digest()

    def settle(self) -> None:
        """Bring the tree level with the pool and hash what changed."""
        pool = self.pool
        touched = pool.touched
        tree = self.tree
        if touched is None:  # a bulk change: what each card was is unknown
            self._added = None
            self._rebuild()
            return
        if not touched:
            tree.digest()  # the paths of bars put back at the last snapshot, if any
            return
        added, removed = self._added, self._removed
        present = pool.__contains__
        bulk = len(touched) > max(_REBUILD_MIN, len(pool) // _REBUILD_FRACTION)
        for card in touched:
            now = present(card)
            if now == (card in tree):
                continue
            if added is not None:  # a card back as it was at the last snapshot cancels out
                back, into = (removed, added) if now else (added, removed)
                if card in back:
                    back.discard(card)
                else:
                    into.add(card)
            if not bulk:
                if now:
                    tree.set(card, 1)
                else:
                    tree.remove(card)
        if bulk:
            self._rebuild()
            return
        touched.clear()
        tree.digest()

    def digest(self) -> str:
        """The v3 digest of the whole pool (no bars)."""
        self.settle()
        return self.tree.digest()

    def snapshot(self, barred: Collection[str]) -> tuple[PoolSnapshot, str]:
        """The candidates (the pool minus the barred cards) in canonical order and their
        v3 digest; the snapshot's `since` is what changed from the previous one."""
        self.settle()
        tree = self.tree
        cut = frozenset(c for c in barred if c in tree)
        for card in cut:
            tree.remove(card)
        try:
            digest = tree.digest()
            snap = PoolSnapshot.of_blocks(tree.blocks(), len(tree), tree.block_lengths())
        finally:
            for card in cut:
                tree.set(card, 1)  # hashed again at the next settle
        snap.since = self._since(cut)
        self._added, self._removed = set(), set()
        self._last = (digest, cut)
        return snap, digest

    def _since(self, cut: frozenset[str]) -> tuple[str, list[str], list[str]] | None:
        """(last digest, cards added, cards removed) between the last snapshot's candidates
        and these: the floor's moves, and the cards barred then or now."""
        last, came, went = self._last, self._added, self._removed
        if last is None or came is None:
            return None
        last_digest, last_cut = last
        added = came.difference(cut)
        removed = went.difference(last_cut)
        for card in last_cut.symmetric_difference(cut):
            if card in came or card in went or card not in self.tree:
                continue  # counted above, or not in the floor's pool then or now
            if card in cut:
                removed.add(card)  # barred since
            else:
                added.add(card)  # barred no more
        # in no particular order: the stored delta is a pair of sets (docs/journal.md), and
        # sorting 1,000 changes cost a pick 0.2 ms
        return last_digest, list(added), list(removed)

    def checkpoint(self) -> tuple[PoolSnapshot, str]:
        """The whole pool and its digest, as the base the next snapshot's delta is taken
        from (the daemon stores it in full at start, off the pick path)."""
        return self.snapshot(())

"""A pool's canonical snapshot and digest, reusing what the last snapshot already hashed.

A pick hashes its whole pool: for 10,000 cards that is most of the pick's core time,
spent walking 10,000 strings scattered over the heap. Between two picks a few players
come and go, so nearly all of the pool's sorted list is as it was. The pool is fed to
SHA-256 block by block (the blocks of its SortedList), and a block holding the same
cards as last time reuses its encoded bytes: comparing the two lists reads only their
pointers; and the hashing itself resumes after the blocks that lead both snapshots
unchanged. The digest is byte for byte `fairness.pool_digest` of the candidates.

The blocks that did change are also all that differs from the last snapshot, so the
snapshot carries that change (the last snapshot's digest, cards added, cards removed):
the journal stores a pick's pool as such a delta without comparing 10,000 cards again.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left, bisect_right
from collections.abc import Collection, Sequence
from typing import Any

from sortedcontainers import SortedList

from selector.diff import sorted_delta
from selector.fairness import POOL_PREFIX, pool_digest


class PoolSnapshot(list[str]):
    """Candidates in canonical order; `since` is (digest of the previous snapshot, cards
    added, cards removed) when this snapshotter took one before, else None. Whoever
    changes the list must set `since` to None."""

    since: tuple[str, list[str], list[str]] | None = None


Block = tuple[list[str], tuple[str, ...], list[str], bytes]


class PoolSnapshotter:
    """Candidates in canonical order (the pool minus barred cards) and their digest."""

    def __init__(self) -> None:
        # the last snapshot's blocks by their first card:
        # (the block's cards, the barred cards cut from it, what is left, its encoded bytes)
        self._blocks: dict[str, Block] = {}
        self._digest: str | None = None
        # its non-empty blocks in order, each with the SHA-256 state after it: a snapshot
        # that starts with the same blocks resumes hashing after them
        self._order: list[tuple[Block, Any]] = []

    def take(self, pool: SortedList, barred: Collection[str]) -> tuple[PoolSnapshot, str]:
        candidates = PoolSnapshot()
        live: Any = None  # the running SHA-256, from the first block not shared with the last
        order: list[tuple[Block, Any]] = []
        cut = sorted(barred)
        blocks: dict[str, Block] = {}
        fresh: list[str] = []  # the cards of blocks not reused, in order
        for sub in _blocks_of(pool):
            first = sub[0]
            here = tuple(cut[bisect_left(cut, first) : bisect_right(cut, sub[-1])])
            known = self._blocks.get(first)
            if known is not None and known[1] == here and known[0] == sub:
                entry = blocks[first] = known
                block, data = known[2], known[3]
            else:
                source = list(sub)  # a copy: the SortedList changes its blocks in place
                block = source
                if here:  # the few barred cards of this block, cut out by bisection
                    block = list(sub)
                    for card in here:
                        i = bisect_left(block, card)
                        if i < len(block) and block[i] == card:
                            del block[i]
                data = "\n".join(block).encode("utf-8")
                entry = blocks[first] = (source, here, block, data)
                fresh.extend(block)
            if not block:
                continue
            at = len(order)
            if live is None and at < len(self._order) and self._order[at][0] is entry:
                order.append(self._order[at])  # same block, same place: same state after it
            else:
                if live is None:
                    live = order[-1][1].copy() if order else hashlib.sha256(POOL_PREFIX)
                if order:
                    live.update(b"\n")
                live.update(data)
                order.append((entry, live.copy()))
            candidates.extend(block)
        if self._digest is not None:
            gone: list[str] = []  # the cards of the last snapshot's blocks not reused
            for key, old in self._blocks.items():
                if blocks.get(key) is not old:
                    gone.extend(old[2])
            found = sorted_delta(gone, fresh, len(gone) + len(fresh))
            if found is not None:
                candidates.since = (self._digest, found[0], found[1])
        self._blocks = blocks
        self._order = order
        if live is not None:
            self._digest = live.hexdigest()
        else:  # nothing changed, or nothing at all
            self._digest = order[-1][1].hexdigest() if order else pool_digest([])
        return candidates, self._digest


def _blocks_of(pool: SortedList) -> Sequence[list[str]]:
    """The SortedList's own sorted blocks, each non-empty, in order."""
    # sortedcontainers keeps a SortedList as a list of sorted sublists (_lists); the tests
    # check every snapshot against pool_digest, so a change there cannot pass unseen
    blocks: list[list[str]] = pool._lists
    return blocks

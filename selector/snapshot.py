"""A pool's canonical snapshot and digest, reusing what the last snapshot already hashed.

A pick hashes its whole pool: for 10,000 cards that is most of the pick's core time.
Between two picks a few players come and go, so nearly all of the pool's sorted list
is as it was. The pool is fed to SHA-256 block by block (the blocks of its SortedList);
a block holding the same cards as last time reuses its encoded bytes, and hashing
resumes after the blocks that lead both snapshots unchanged. The digest is byte for
byte `fairness.pool_digest` of the candidates.

Which blocks changed: a `Pool` notes the cards that came or went since its snapshotter
last read it, so a block is known unchanged from its first card, its length and the
absence of any noted card in its range (a block's content cannot change without a card
in that range coming or going). For a plain SortedList every block is compared.

A changed block whose first and last cards are unchanged is not encoded again either:
its last encoding is patched where the noted cards came or went.

The blocks that did change are also all that differs from the last snapshot, so the
snapshot carries that change (the last snapshot's digest, cards added, cards removed):
the journal stores a pick's pool as such a delta without comparing 10,000 cards again.
The snapshot itself is a read-only view over the blocks it hashed, not a copy.
"""

from __future__ import annotations

import hashlib
import itertools
from bisect import bisect_left, bisect_right
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import Any, overload

from sortedcontainers import SortedList

from selector.diff import sorted_delta
from selector.fairness import POOL_PREFIX, pool_digest

_RUN = 256  # block lengths summed at a time when looking a position up


class Pool(SortedList):  # type: ignore[misc]
    """A pool's cards in canonical order that notes which cards came or went.

    `changed` holds the cards added or removed since `reader` (a PoolSnapshotter) last
    took a snapshot; None when unknown (a bulk change, or never read). `touched` holds
    the cards added or removed since the pool's tree (selector.pooltree) last caught up;
    None after a bulk change (the tree is then built again).
    """

    def __init__(self, iterable: Iterable[str] | None = None) -> None:
        self.changed: set[str] | None = None
        self.reader: object | None = None
        self.touched: set[str] | None = None
        super().__init__(iterable)
        if iterable is None:
            self.touched = set()

    def add(self, value: str) -> None:
        super().add(value)
        if self.changed is not None:
            self.changed.add(value)
        if self.touched is not None:
            self.touched.add(value)

    def remove(self, value: str) -> None:
        super().remove(value)
        if self.changed is not None:
            self.changed.add(value)
        if self.touched is not None:
            self.touched.add(value)

    def discard(self, value: str) -> None:
        if value in self:
            self.remove(value)

    def update(self, iterable: Iterable[str]) -> None:
        self.changed = self.touched = None  # a bulk change: the next snapshot compares every block
        super().update(iterable)

    def clear(self) -> None:
        self.changed = self.touched = None
        super().clear()

    def pop(self, index: int = -1) -> str:
        value: str = super().pop(index)
        if self.changed is not None:
            self.changed.add(value)
        if self.touched is not None:
            self.touched.add(value)
        return value

    def __delitem__(self, index: int | slice) -> None:
        self.changed = self.touched = None
        super().__delitem__(index)

    def __iadd__(self, other: Iterable[str]) -> Pool:
        self.changed = self.touched = None
        super().__iadd__(other)
        return self

    def __imul__(self, num: int) -> Pool:
        self.changed = self.touched = None
        super().__imul__(num)
        return self


class PoolSnapshot(Sequence[str]):
    """Candidates in canonical order, held as the sorted blocks they were hashed in.

    `since` is (digest of the previous snapshot, cards added, cards removed) when the
    snapshotter took one before, else None.
    """

    __slots__ = ("_blocks", "_len", "_lens", "_start_list", "since")

    def __init__(
        self,
        cards: Iterable[str] = (),
        since: tuple[str, list[str], list[str]] | None = None,
    ) -> None:
        block = list(cards)
        self._blocks: list[list[str]] = [block] if block else []
        self._start_list: list[int] | None = [0] if block else []
        self._lens: list[int] | None = None
        self._len = len(block)
        self.since = since

    @classmethod
    def of_blocks(
        cls, blocks: list[list[str]], length: int | None = None, lens: list[int] | None = None
    ) -> PoolSnapshot:
        """A view over non-empty blocks that are never changed afterwards (not copied);
        `length`, when the caller knows it, saves counting; `lens`, the blocks' lengths,
        lets one lookup by position (a pick's winner) skip working out where every block
        starts: at 1M cards that touched 16,000 lists, milliseconds a pick."""
        snap = cls()
        snap._blocks = blocks
        snap._start_list = None
        snap._lens = lens
        snap._len = sum(map(len, blocks)) if length is None else length
        return snap

    @property
    def _starts(self) -> list[int]:
        if self._start_list is None:
            lens = self._lens if self._lens is not None else map(len, self._blocks)
            upto = itertools.islice(lens, len(self._blocks) - 1)
            self._start_list = [0, *itertools.accumulate(upto)]
        return self._start_list

    def _find(self, i: int) -> str:
        """The card at position i, from the blocks' lengths summed a run at a time (C
        speed) when where each block starts is not worked out yet."""
        lens = self._lens
        if lens is None or self._start_list is not None:
            b = bisect_right(self._starts, i) - 1
            return self._blocks[b][i - self._starts[b]]
        first, b, n = 0, 0, len(lens)
        while b + _RUN < n:
            run = sum(lens[b : b + _RUN])
            if i < first + run:
                break
            first += run
            b += _RUN
        while i >= first + lens[b]:
            first += lens[b]
            b += 1
        return self._blocks[b][i - first]

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._len)
            if step != 1:
                return list(self)[index]
            out: list[str] = []
            if start >= stop:
                return out
            b = bisect_right(self._starts, start) - 1
            while start < stop:
                at = self._starts[b]
                block = self._blocks[b]
                out.extend(block[start - at : stop - at])
                start = at + len(block)
                b += 1
            return out
        i = index + self._len if index < 0 else index
        if not 0 <= i < self._len:
            raise IndexError("pool snapshot index out of range")
        return self._find(i)

    def __iter__(self) -> Iterator[str]:
        return itertools.chain.from_iterable(self._blocks)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(other) == self._len and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PoolSnapshot({list(self)!r})"

    def without(self, index: int) -> PoolSnapshot:
        """These candidates less the one at index (a winner who failed the re-check)."""
        cards = list(self)
        del cards[index]
        return PoolSnapshot(cards)


# a block as last hashed: (its cards as in the pool, the barred cards cut from it,
# what is left, those encoded)
Block = tuple[list[str], tuple[str, ...], list[str], bytes]


class PoolSnapshotter:
    """Candidates in canonical order (the pool minus barred cards) and their digest."""

    def __init__(self) -> None:
        # the last snapshot's blocks by their first card
        self._blocks: dict[str, Block] = {}
        self._digest: str | None = None
        self._cut: list[str] = []  # the barred cards of the last snapshot, sorted
        # its non-empty blocks in order, each with the SHA-256 state after it: a snapshot
        # that starts with the same blocks resumes hashing after them
        self._order: list[tuple[Block, Any]] = []

    def take(self, pool: SortedList, barred: Collection[str]) -> tuple[PoolSnapshot, str]:
        tracked = isinstance(pool, Pool)
        # the cards that came or went since this snapshotter's last look, when known
        touched = (
            sorted(pool.changed)
            if tracked and pool.reader is self and pool.changed is not None
            else None
        )
        live: Any = None  # the running SHA-256, from the first block not shared with the last
        order: list[tuple[Block, Any]] = []
        cut = sorted(barred)
        blocks: dict[str, Block] = {}
        kept: list[list[str]] = []  # the candidates, block by block
        fresh: list[str] = []  # the cards of blocks not reused, in order
        for sub in _blocks_of(pool):
            first, last = sub[0], sub[-1]
            here = tuple(cut[bisect_left(cut, first) : bisect_right(cut, last)])
            known = self._blocks.get(first)
            if (
                known is not None
                and known[1] == here
                and (
                    known[0] == sub
                    if touched is None
                    else len(known[0]) == len(sub) and _none_within(touched, first, last)
                )
            ):
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
                patched = (
                    _patched(known, block, touched, first, last)
                    if touched is not None and known is not None and known[1] == here
                    else None
                )
                data = "\n".join(block).encode("utf-8") if patched is None else patched
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
            kept.append(block)
        candidates = PoolSnapshot.of_blocks(kept)
        if self._digest is not None:
            gone: list[str] = []  # the cards of the last snapshot's blocks not reused
            for key, old in self._blocks.items():
                if blocks.get(key) is not old:
                    gone.extend(old[2])
            found: tuple[list[str], list[str]] | None
            if touched is not None:
                # only a card that came, went or changed barring can differ between them
                suspects = set(touched).union(set(self._cut).symmetric_difference(cut))
                found = _membership_delta(gone, fresh, suspects)
            else:
                found = sorted_delta(gone, fresh, len(gone) + len(fresh))
            if found is not None:
                candidates.since = (self._digest, found[0], found[1])
        self._blocks = blocks
        self._order = order
        self._cut = cut
        if live is not None:
            self._digest = live.hexdigest()
        else:  # nothing changed, or nothing at all
            self._digest = order[-1][1].hexdigest() if order else pool_digest([])
        if tracked:
            pool.changed = set()
            pool.reader = self
        return candidates, self._digest


_PATCH_LIMIT = 16  # more changed cards than this in a block: encode it whole


def _patched(
    known: Block, block: list[str], touched: list[str], first: str, last: str
) -> bytes | None:
    """The encoding of `block`, made from the last encoding of the block that began
    with the same card, when it also ends with the same card: then only the touched
    cards can differ, and only those are read (not the block's thousand strings)."""
    old, data = known[2], known[3]
    if not old or not block or old[-1] != block[-1] or known[0][-1] != last:
        return None
    lo, hi = bisect_left(touched, first), bisect_right(touched, last)
    if hi - lo > _PATCH_LIMIT:
        return None
    padded = b"\n" + data + b"\n"  # every card sits between two newlines
    pieces: list[bytes] = []
    cursor = 0
    for card in touched[lo:hi]:
        was, now = _has(old, card), _has(block, card)
        if was == now:
            continue
        raw = card.encode("utf-8")
        if was:  # gone: cut "\n" + card, keep the newline after it
            at = padded.find(b"\n" + raw + b"\n", cursor)
            if at < 0:
                return None
            pieces.append(padded[cursor:at])
            cursor = at + 1 + len(raw)
        else:  # came: insert before the next card of the old block (the last card stays)
            after = old[bisect_left(old, card)]
            at = padded.find(b"\n" + after.encode("utf-8") + b"\n", cursor)
            if at < 0:
                return None
            pieces.append(padded[cursor:at])
            pieces.append(b"\n" + raw)
            cursor = at
    pieces.append(padded[cursor:])
    return b"".join(pieces)[1:-1]


def _none_within(touched: list[str], first: str, last: str) -> bool:
    """Whether no card of the sorted `touched` lies in [first, last]."""
    i = bisect_left(touched, first)
    return i == len(touched) or touched[i] > last


def _membership_delta(
    gone: list[str], fresh: list[str], suspects: Iterable[str]
) -> tuple[list[str], list[str]]:
    """(added, removed) between two sorted lists that differ only in `suspects`."""
    added: list[str] = []
    removed: list[str] = []
    for card in sorted(suspects):
        was, now = _has(gone, card), _has(fresh, card)
        if now and not was:
            added.append(card)
        elif was and not now:
            removed.append(card)
    return added, removed


def _has(cards: list[str], card: str) -> bool:
    i = bisect_left(cards, card)
    return i < len(cards) and cards[i] == card


def _blocks_of(pool: SortedList) -> Sequence[list[str]]:
    """The SortedList's own sorted blocks, each non-empty, in order."""
    # sortedcontainers keeps a SortedList as a list of sorted sublists (_lists); the tests
    # check every snapshot against pool_digest, so a change there cannot pass unseen
    blocks: list[list[str]] = pool._lists
    return blocks

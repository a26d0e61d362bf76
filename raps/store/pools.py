"""Pool snapshots stored as deltas against a recent pool.

Every pick records the exact pool it was drawn from, and consecutive pools differ by a
handful of players: storing 10,000 cards per pick made the pick's commit several times
bigger than the journal entry itself.  A pool is stored in full, or as the cards added
to and removed from a recent base pool (chains are capped, so reading stays cheap).
Reading rebuilds the pool; `raps verify` then checks it against the digest the journal
holds, so a wrong delta cannot pass for a pool.

A full snapshot of 10,000 cards costs a pick about a millisecond more than a delta, so
picks store deltas only: once a chain grows CHECKPOINT_DEPTH deep, the journal stores
that pool in full in its own transaction after the pick (a checkpoint), and later
deltas start from it. A pick writes a full pool only when nothing close is known yet
(the daemon's first pick of a pool) or checkpoints keep failing (MAX_DEPTH).

The delta usually comes with the pool: the core's snapshot knows what changed since the
previous one (selector.snapshot). Otherwise it is found by walking the pool and a stored
base side by side (selector.diff): about 0.15 ms for 10,000 cards and a few changes.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from selector.diff import sorted_delta
from selector.snapshot import PoolSnapshot

RECENT = 4  # pools kept in memory as bases for the next deltas
# A delta of a few cards costs nothing to chain and little to read back (one small row per
# level), while each full pool writes ~100 KB that slows the writes right after it: so
# checkpoints are rare, about one per two busy days of picks for a pool kind.
CHECKPOINT_DEPTH = 128  # a pool this deep in deltas is also stored in full, off the pick path
MAX_DEPTH = 256  # a delta of a delta of ... at most this deep, then a full snapshot inline


@dataclass(frozen=True, slots=True)
class _Known:
    cards: Sequence[str]
    depth: int


class PoolEncoder:
    """Chooses full or delta rows for new pools; remembers pools once they are committed.

    The pick path pays for this, so each new pool is compared with one base only: the
    recent pool closest in size, the newest on a tie (a slot pool is not diffed against
    a table pool).
    """

    def __init__(self) -> None:
        self._recent: OrderedDict[str, _Known] = OrderedDict()

    def rows(self, pools: Sequence[tuple[str, Sequence[str]]]) -> list[dict[str, Any]]:
        """Rows for new pools (digest, size, cards, base, delta); known ones are skipped."""
        return [self._row(d, cards) for d, cards in pools if d not in self._recent]

    def _row(self, digest: str, cards: Sequence[str]) -> dict[str, Any]:
        found = self._delta(cards)
        if found is None:
            return {"digest": digest, "size": len(cards), "cards": "\n".join(cards),
                    "base": None, "delta": None}  # fmt: skip
        base, added, removed = found
        delta = json.dumps({"add": added, "del": removed}, separators=(",", ":"))
        return {"digest": digest, "size": len(cards), "cards": "", "base": base, "delta": delta}

    def _delta(self, cards: Sequence[str]) -> tuple[str, list[str], list[str]] | None:
        """(base digest, added, removed) against the best recent base, or None for full."""
        if len(cards) < 64:
            return None
        # a core snapshot knows what changed since the previous one (selector.snapshot):
        # when that one is a stored base, no comparison of the whole pool is needed
        since = cards.since if isinstance(cards, PoolSnapshot) else None
        if since is not None:
            base, added, removed = since
            hinted = self._recent.get(base)
            if (
                hinted is not None
                and hinted.depth < MAX_DEPTH
                and len(hinted.cards) + len(added) - len(removed) == len(cards)
                and (len(added) + len(removed)) * 4 <= len(cards)
            ):
                return base, added, removed
        best: tuple[int, str] | None = None
        for d, k in reversed(self._recent.items()):  # newest first: it wins a tie in size
            gap = abs(len(k.cards) - len(cards))
            if k.depth < MAX_DEPTH and (best is None or gap < best[0]):
                best = (gap, d)
        if best is None or best[0] * 4 > len(cards):
            return None
        known = self._recent[best[1]].cards
        found = sorted_delta(known, cards, len(cards) // 4)
        if found is None or len(known) + len(found[0]) - len(found[1]) != len(cards):
            return None
        return best[1], found[0], found[1]

    def committed(
        self, pools: Sequence[tuple[str, Sequence[str]]], rows: Sequence[dict[str, Any]]
    ) -> list[tuple[str, Sequence[str]]]:
        """Remember pools whose rows are now durable, as bases for later deltas; returns
        the pools due for a checkpoint (stored in full, off the pick path)."""
        depth = {r["digest"]: self._recent[r["base"]].depth + 1 for r in rows if r["base"]}
        due: list[tuple[str, Sequence[str]]] = []
        for digest, cards in pools:
            if digest in self._recent:
                self._recent.move_to_end(digest)
                continue
            # kept as given, not copied (10k cards): a journaled pool is never changed
            self._recent[digest] = _Known(cards, depth.get(digest, 0))
            if depth.get(digest) == CHECKPOINT_DEPTH:
                due.append((digest, cards))  # once: deeper ones wait for this one
            while len(self._recent) > RECENT:
                self._recent.popitem(last=False)
        return due

    def checkpointed(self, digest: str, cards: Sequence[str]) -> None:
        """A pool now durable in full: later deltas chain from it at depth 0."""
        self._recent[digest] = _Known(cards, 0)
        while len(self._recent) > RECENT:
            self._recent.popitem(last=False)

    def forget(self) -> None:
        """After a failed commit nothing new is durable: start again from full snapshots."""
        self._recent.clear()


def rebuild(rows: dict[str, Any], digest: str) -> list[str]:
    """A pool from its row and its bases' rows (digest -> row with size, cards, base, delta)."""
    chain = []
    at: str | None = digest
    while at is not None:
        row = rows.get(at)
        if row is None:
            raise KeyError(at)
        chain.append(row)
        at = row["base"]
    base = chain[-1]
    cards = set(base["cards"].split("\n")) if base["size"] else set()
    for row in reversed(chain[:-1]):
        delta = json.loads(row["delta"])
        cards.difference_update(delta["del"])
        cards.update(delta["add"])
    return sorted(cards)

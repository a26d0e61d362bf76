"""Pool snapshots stored as deltas against a recent pool.

Every pick records the exact pool it was drawn from, and consecutive pools differ by a
handful of players: storing 10,000 cards per pick made the pick's commit several times
bigger than the journal entry itself.  A pool is stored in full, or as the cards added
to and removed from a recent base pool (chains are capped, so reading stays cheap).
Reading rebuilds the pool; `raps verify` then checks it against the digest the journal
holds, so a wrong delta cannot pass for a pool.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

RECENT = 4  # pools kept in memory as bases for the next deltas
MAX_DEPTH = 32  # a delta of a delta of ... at most this deep, then a full snapshot


@dataclass(frozen=True, slots=True)
class _Known:
    cards: set[str]
    depth: int


class PoolEncoder:
    """Chooses full or delta rows for new pools; remembers pools once they are committed.

    The pick path pays for this, so each new pool is compared with one base only: the
    recent pool closest in size (a slot pool is not diffed against a table pool).
    """

    def __init__(self) -> None:
        self._recent: OrderedDict[str, _Known] = OrderedDict()
        self._sets: dict[str, set[str]] = {}  # sets built by rows(), reused by committed()

    def rows(self, pools: Sequence[tuple[str, list[str]]]) -> list[dict[str, Any]]:
        """Rows for the pool_snapshots table (digest, size, cards, base, delta)."""
        self._sets.clear()
        return [self._row(d, cards) for d, cards in pools if d not in self._recent]

    def _row(self, digest: str, cards: list[str]) -> dict[str, Any]:
        full = {"digest": digest, "size": len(cards), "cards": "\n".join(cards), "base": None,
                "delta": None}  # fmt: skip
        bases = [(abs(len(k.cards) - len(cards)), d) for d, k in self._recent.items()
                 if k.depth < MAX_DEPTH]  # fmt: skip
        if len(cards) < 64 or not bases:
            return full
        gap, base = min(bases)
        if gap * 4 > len(cards):
            return full
        now = self._sets[digest] = set(cards)
        known = self._recent[base].cards
        added = now - known
        removed = known - now
        if (len(added) + len(removed)) * 4 > len(cards):
            return full
        delta = json.dumps({"add": sorted(added), "del": sorted(removed)}, separators=(",", ":"))
        return {"digest": digest, "size": len(cards), "cards": "", "base": base, "delta": delta}

    def committed(
        self, pools: Sequence[tuple[str, list[str]]], rows: Sequence[dict[str, Any]]
    ) -> None:
        """Remember pools whose rows are now durable, as bases for later deltas."""
        depth = {r["digest"]: self._recent[r["base"]].depth + 1 for r in rows if r["base"]}
        for digest, cards in pools:
            if digest in self._recent:
                self._recent.move_to_end(digest)
                continue
            cards_set = self._sets.pop(digest, None) or set(cards)
            self._recent[digest] = _Known(cards_set, depth.get(digest, 0))
            while len(self._recent) > RECENT:
                self._recent.popitem(last=False)

    def forget(self) -> None:
        """After a failed commit nothing new is durable: start again from full snapshots."""
        self._recent.clear()
        self._sets.clear()


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

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
    cards: frozenset[str]
    depth: int


class PoolEncoder:
    """Chooses full or delta rows for new pools; remembers pools once they are committed."""

    def __init__(self) -> None:
        self._recent: OrderedDict[str, _Known] = OrderedDict()

    def rows(self, pools: Sequence[tuple[str, list[str]]]) -> list[dict[str, Any]]:
        """Rows for the pool_snapshots table (digest, size, cards, base, delta)."""
        out: list[dict[str, Any]] = []
        for digest, cards in pools:
            if digest in self._recent:
                continue  # stored already (insert-if-absent would skip it too)
            row = self._delta_row(digest, cards)
            out.append(row)
        return out

    def _delta_row(self, digest: str, cards: list[str]) -> dict[str, Any]:
        full = {"digest": digest, "size": len(cards), "cards": "\n".join(cards), "base": None,
                "delta": None}  # fmt: skip
        if not self._recent or len(cards) < 64:
            return full
        now = set(cards)
        best: tuple[int, str, list[str], list[str]] | None = None
        for base_digest, known in self._recent.items():
            if known.depth >= MAX_DEPTH:
                continue
            added = now - known.cards
            removed = known.cards - now
            cost = len(added) + len(removed)
            if best is None or cost < best[0]:
                best = (cost, base_digest, sorted(added), sorted(removed))
        if best is None or best[0] * 4 > len(cards):
            return full
        _, base, added_cards, removed_cards = best
        delta = json.dumps({"add": added_cards, "del": removed_cards}, separators=(",", ":"))
        return {"digest": digest, "size": len(cards), "cards": "", "base": base, "delta": delta}

    def committed(
        self, pools: Sequence[tuple[str, list[str]]], rows: Sequence[dict[str, Any]]
    ) -> None:
        """Remember pools whose rows are now durable, as bases for later deltas."""
        depth_of = {r["digest"]: (self._recent[r["base"]].depth + 1 if r["base"] else 0)
                    for r in rows if r["base"] is None or r["base"] in self._recent}  # fmt: skip
        for digest, cards in pools:
            if digest in self._recent:
                self._recent.move_to_end(digest)
                continue
            self._recent[digest] = _Known(frozenset(cards), depth_of.get(digest, 0))
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

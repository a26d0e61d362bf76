"""A RAPS pick by the derivation its session opened with: v1 (before the upgrade) or v3.

- v1: the pool's digest is SHA-256 of its cards joined by newlines, the pick an index by
  HMAC over the session, pick, attempt and digest (selector.fairness.pick_index);
- v3: the pool is a bin of weight 1 per card and its digest the Merkle-sum digest of
  selector.bindigest; the HMAC message ends with the witness's mix, and the ticket it gives
  in [0, n) is the winner's position (selector.fairness.ticket_index_v3).

A session restored after the upgrade keeps the derivation of its `session.opened` (a
record without one is v1), so sessions opened before it keep drawing and verifying.
"""

from __future__ import annotations

from collections.abc import Sequence

from selector.bindigest import bin_digest
from selector.fairness import (
    DERIVATION_V1,
    DERIVATION_V3,
    NO_WITNESS,
    pick_index,
    pool_digest,
    ticket_index_v3,
)
from selector.sumtree import SumTree

RAPS_DERIVATIONS = (DERIVATION_V1, DERIVATION_V3)


def check_raps_derivation(derivation: object) -> str:
    if derivation not in RAPS_DERIVATIONS:
        raise ValueError(f"unknown RAPS derivation {derivation!r}")
    return str(derivation)


def raps_pool_digest(derivation: str, cards: Sequence[str]) -> str:
    """The digest of candidates in canonical order (the fast build; see reference_digest)."""
    if derivation == DERIVATION_V1:
        return pool_digest(cards)
    items = list(cards)
    return SumTree.from_sorted(items, [1] * len(items)).digest()


def reference_pool_digest(derivation: str, cards: Sequence[str]) -> str:
    """The same digest by the plain reference code (verify; checks canonical order)."""
    if derivation == DERIVATION_V1:
        return pool_digest(cards)
    return bin_digest([(c, 1) for c in cards])


def raps_pick(
    derivation: str,
    seed: bytes,
    session_id: str,
    pick_number: int,
    attempt: int,
    digest: str,
    n: int,
    mix: bytes = NO_WITNESS,
) -> tuple[int, int]:
    """(position of the winner among the n candidates, rejected blocks)."""
    if derivation == DERIVATION_V1:
        return pick_index(seed, session_id, pick_number, attempt, digest, n)
    return ticket_index_v3(seed, session_id, pick_number, attempt, digest, mix, n)

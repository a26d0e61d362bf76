"""Provable fairness: commit to a seed, derive each pick from it, let anyone recompute.

(Derivation v1, below; v2 and v3 are defined where their functions are.)

At session open the system draws a secret 256-bit seed (from a CSPRNG, outside the
core) and publishes SHA-256(seed).  Each pick's randomness is

    block_k = HMAC-SHA256(seed, "raps-pick-v1" | session id | pick number | attempt
                          | pool digest | k)           for k = 0, 1, 2, ...

read as big-endian 256-bit integers and scaled to an index in [0, n) by rejection
sampling, so every index is exactly equally likely (no modulo bias).  The pool
digest is SHA-256 of the eligible cards in canonical (sorted) order, so a pick is
bound to the exact pool it was drawn from.  After the seed is revealed at close,
`selector.verify` recomputes every pick.
"""

from __future__ import annotations

import hashlib
import hmac
import struct
from collections.abc import Callable, Iterator, Sequence

SEED_BYTES = 32
BLOCK_BITS = 256
POOL_PREFIX = b"raps-pool-v1\n"
_PICK_PREFIX = b"raps-pick-v1"
# Derivation v2 (weighted bins; docs/fairness.md): the digest is selector.bindigest's
# Merkle-sum tree and the scaled value is a ticket in [0, total), not a position.
DERIVATION_V1 = "raps-pick-v1"
DERIVATION_V2 = "raps-pick-v2"
_PICK_PREFIX_V2 = DERIVATION_V2.encode()
# Derivation v3 (docs/fairness.md): one derivation for RAPS picks and ticket draws. The
# digest is v2's Merkle-sum tree (a RAPS pool is a bin of weight 1 per card) and the
# message ends with the witness's mix, so nobody can predict a pick without the witness.
DERIVATION_V3 = "raps-pick-v3"
_PICK_PREFIX_V3 = DERIVATION_V3.encode()
WITNESS_MIX_PREFIX = b"raps-witness-mix-v1"
NO_WITNESS = bytes(32)  # the mix of an unwitnessed pick
DERIVATIONS = (DERIVATION_V1, DERIVATION_V2, DERIVATION_V3)


def commitment(seed: bytes) -> str:
    """Hex SHA-256 of the seed, published at open before any pick."""
    if len(seed) != SEED_BYTES:
        raise ValueError(f"seed must be {SEED_BYTES} bytes, got {len(seed)}")
    return hashlib.sha256(seed).hexdigest()


def pool_digest(cards: Sequence[str]) -> str:
    """Hex SHA-256 of the pool in canonical order (cards joined by newlines)."""
    return hashlib.sha256(POOL_PREFIX + "\n".join(cards).encode("utf-8")).hexdigest()


def pick_message(
    session_id: str, pick_number: int, attempt: int, digest: str, prefix: bytes = _PICK_PREFIX
) -> bytes:
    sid = session_id.encode("utf-8")
    return (
        prefix
        + struct.pack(">I", len(sid))
        + sid
        + struct.pack(">II", pick_number, attempt)
        + bytes.fromhex(digest)
    )


def hmac_blocks(seed: bytes, message: bytes) -> Iterator[int]:
    """The endless stream of 256-bit integers a pick draws from."""
    key = hmac.new(seed, message, hashlib.sha256)
    k = 0
    while True:
        h = key.copy()
        h.update(struct.pack(">I", k))
        yield int.from_bytes(h.digest(), "big")
        k += 1


def scale_to_index(n: int, words: Callable[[], int], bits: int) -> tuple[int, int]:
    """Map uniform `bits`-wide words to a uniform index in [0, n) by rejection.

    Words at or above the largest multiple of n that fits are thrown away, so each
    index keeps exactly the same number of source values.  Returns (index, rejected).
    """
    if n < 1:
        raise ValueError("cannot pick from an empty pool")
    span = 1 << bits
    if n > span:
        raise ValueError(f"pool of {n} is larger than a {bits}-bit source can address")
    limit = span - span % n
    rejected = 0
    while True:
        x = words()
        if x < limit:
            return x % n, rejected
        rejected += 1


def pick_index(
    seed: bytes, session_id: str, pick_number: int, attempt: int, digest: str, n: int
) -> tuple[int, int]:
    """(index into the canonical pool, number of rejected blocks) for one pick."""
    stream = hmac_blocks(seed, pick_message(session_id, pick_number, attempt, digest))
    return scale_to_index(n, stream.__next__, BLOCK_BITS)


def witness_mix(signature_hex: str | None) -> bytes:
    """SHA-256("raps-witness-mix-v1" | the signature's 64 bytes), or 32 zero bytes for an
    unwitnessed pick (the record says so, and why)."""
    if signature_hex is None:
        return NO_WITNESS
    return hashlib.sha256(WITNESS_MIX_PREFIX + bytes.fromhex(signature_hex)).digest()


def pick_message_v3(
    session_id: str, pick_number: int, attempt: int, digest: str, mix: bytes
) -> bytes:
    """ "raps-pick-v3" | u32 len(session) | session | u32 pick | u32 attempt | digest (32)
    | witness mix (32)."""
    if len(mix) != 32:
        raise ValueError("a witness mix is 32 bytes")
    return pick_message(session_id, pick_number, attempt, digest, _PICK_PREFIX_V3) + mix


def ticket_index_v3(
    seed: bytes,
    session_id: str,
    pick_number: int,
    attempt: int,
    digest: str,
    mix: bytes,
    total: int,
) -> tuple[int, int]:
    """Derivation v3: (ticket in [0, total), rejected blocks). For a RAPS pool (weight 1
    per card) the ticket is the winner's position in canonical order."""
    message = pick_message_v3(session_id, pick_number, attempt, digest, mix)
    return scale_to_index(total, hmac_blocks(seed, message).__next__, BLOCK_BITS)


def ticket_index(
    seed: bytes, session_id: str, pick_number: int, attempt: int, digest: str, total: int
) -> tuple[int, int]:
    """Derivation v2: (ticket in [0, total) of the bin, rejected blocks) for one pick.

    Every ticket is equally likely, so each card wins in proportion to its tickets; the
    winner is the card whose tickets hold the index in canonical order.
    """
    message = pick_message(session_id, pick_number, attempt, digest, _PICK_PREFIX_V2)
    return scale_to_index(total, hmac_blocks(seed, message).__next__, BLOCK_BITS)

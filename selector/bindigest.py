"""The v2 digest of a weighted bin: a Merkle-sum tree over (card, weight) in canonical order.

This is the plain reference that `raps verify` and an inspector's own code follow
(docs/fairness.md, "Derivation v2"); `selector.sumtree.SumTree` keeps the same digest up
to date in O(changes x log n) and must agree with it byte for byte.

- Canonical order: cards sorted by their UTF-8 bytes (code point order), each once.
- A card's height: SHA-256("raps-rank-v2" | card) read as a big-endian integer; its
  lowest 60 bits taken as ten 6-bit groups; height = how many of them, from the lowest,
  are zero (0..10). The shape depends only on the set of cards, never on the order in
  which they came, so the same bin always has the same digest.
- Level 0 (leaves): the canonical sequence cut after every card of height >= 1.
  Level l >= 1: the sequence of level l-1 nodes cut after every node whose last card
  has height >= l + 1. Levels stop at the first one with a single node: the top.
- leaf hash = SHA-256("raps-leaf-v2" | for each entry: u16 len(card) | card | u64 weight)
  node hash = SHA-256("raps-node-v2" | for each child: hash | u64 total | u64 count)
  digest    = SHA-256("raps-bin-v2" | u64 count | u64 total | top hash, or 32 zero bytes)
  (integers big-endian; a node's total is the sum of its weights, count its entries).
"""

from __future__ import annotations

import hashlib
import itertools
import struct
from collections.abc import Sequence

RANK_PREFIX = b"raps-rank-v2"
LEAF_PREFIX = b"raps-leaf-v2"
NODE_PREFIX = b"raps-node-v2"
BIN_PREFIX = b"raps-bin-v2"
GROUP_BITS = 6
MAX_HEIGHT = 10
MAX_WEIGHT = (1 << 63) - 1
EMPTY_TOP = bytes(32)

_U64 = struct.Struct(">Q")
_CHILD = struct.Struct(">32sQQ")
_HEAD = struct.Struct(">QQ")
GROUP_MASK = _GROUP = (1 << GROUP_BITS) - 1

Node = tuple[bytes, int, int, str]  # (hash, total, count, last card)


def height(card: str) -> int:
    """How many levels a card closes a node at (0 for most; 1 in 64 close a leaf)."""
    return height_of_bytes(card.encode("utf-8"))


def height_of_bytes(card: bytes) -> int:
    # only the lowest 60 bits count: the digest's last 8 bytes hold them
    rank = int.from_bytes(hashlib.sha256(RANK_PREFIX + card).digest()[-8:], "big")
    if rank & _GROUP:
        return 0  # 63 cards in 64
    h = 0
    while h < MAX_HEIGHT and rank & _GROUP == 0:
        rank >>= GROUP_BITS
        h += 1
    return h


def encode_entry(card: str, weight: int) -> bytes:
    """One leaf entry as it is hashed: u16 length, the card's UTF-8 bytes, u64 weight."""
    b = card.encode("utf-8")
    if not 1 <= weight <= MAX_WEIGHT:
        raise ValueError(f"weight of {card!r} must be in 1..2^63-1, not {weight}")
    if not b or len(b) > 0xFFFF:
        raise ValueError("a card must be 1 to 65,535 bytes")
    return len(b).to_bytes(2, "big") + b + _U64.pack(weight)


def leaf_hash(encoded: Sequence[bytes]) -> bytes:
    return hashlib.sha256(LEAF_PREFIX + b"".join(encoded)).digest()


def node_hash(children: Sequence[tuple[bytes, int, int]]) -> bytes:
    return hashlib.sha256(
        NODE_PREFIX + b"".join(_CHILD.pack(h, total, count) for h, total, count in children)
    ).digest()


def child_bytes(h: bytes, total: int, count: int) -> bytes:
    """A child as its parent hashes it: hash | u64 total | u64 count."""
    return _CHILD.pack(h, total, count)


def final_digest(count: int, total: int, top: bytes) -> str:
    return hashlib.sha256(BIN_PREFIX + _HEAD.pack(count, total) + top).hexdigest()


def check_canonical(items: Sequence[tuple[str, int]]) -> None:
    """Raise ValueError unless the cards are strictly increasing (sorted, each once)."""
    for (a, _), (b, _) in itertools.pairwise(items):
        if a >= b:
            raise ValueError(f"bin is not in canonical order at {a!r}, {b!r}")


def bin_digest(items: Sequence[tuple[str, int]]) -> str:
    """The v2 digest of a bin given in canonical order (the reference computation)."""
    check_canonical(items)
    if not items:
        return final_digest(0, 0, EMPTY_TOP)
    heights = [height(card) for card, _ in items]
    level: list[Node] = []
    chunk: list[bytes] = []
    total = count = 0
    for (card, weight), h in zip(items, heights, strict=True):
        chunk.append(encode_entry(card, weight))
        total += weight
        count += 1
        if h >= 1:
            level.append((leaf_hash(chunk), total, count, card))
            chunk, total, count = [], 0, 0
    if chunk:
        level.append((leaf_hash(chunk), total, count, items[-1][0]))
    by_card = dict(zip((c for c, _ in items), heights, strict=True))
    depth = 0
    while len(level) > 1:
        depth += 1
        upper: list[Node] = []
        group: list[Node] = []
        for node in level:
            group.append(node)
            if by_card[node[3]] >= depth + 1:
                upper.append(_join(group))
                group = []
        if group:
            upper.append(_join(group))
        level = upper
    top, total, count, _ = level[0]
    return final_digest(count, total, top)


def _join(group: Sequence[Node]) -> Node:
    h = node_hash([(c[0], c[1], c[2]) for c in group])
    return (h, sum(c[1] for c in group), sum(c[2] for c in group), group[-1][3])


def locate(items: Sequence[tuple[str, int]], ticket: int) -> int:
    """Index of the entry whose tickets [first, first + weight) hold `ticket` (reference)."""
    first = 0
    for i, (_card, weight) in enumerate(items):
        if ticket < first + weight:
            return i
        first += weight
    raise ValueError(f"ticket {ticket} is beyond the bin's {first} tickets")

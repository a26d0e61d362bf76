"""Derivation stage-v1: the hidden contents of a stage game, from its committed seed.

Why a derivation and not a shuffle at show time: everything a box, paddle, podium or safe
hides must be fixed before the contestant chooses, and checkable after. At game open the
daemon draws a 32-byte seed from `secrets` (never `random`) and the game publishes
SHA-256(seed); every hidden value is a function of the seed, the game id and a purpose
string, so once the seed is revealed at close anyone can recompute it (docs/fairness.md,
"Stage games (stage-v1)").

In the daemon a game's seed is not drawn at game open (the contestants are known by
then, and a seed tried against them could be chosen): it is derived from the seed of
the ticket draw the game belongs to, which was committed when the draw opened, before
any winner was drawn:

    game_seed = HMAC-SHA256(key=draw_seed, "raps-stage-v1/game" | u32 len(game_id) | game_id)

    message = "raps-stage-v1" | u32 len(game_id) | game_id | u32 len(purpose) | purpose
    block_k = HMAC-SHA256(key=seed, message | u32 k)      k = 0, 1, 2, ...

Blocks are 256-bit big-endian integers consumed in order by `uniform` (rejection sampling,
selector.fairness.scale_to_index: no modulo bias) and `shuffle` (Fisher-Yates).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import struct
from collections.abc import Callable, Sequence
from typing import TypeVar

from selector.fairness import BLOCK_BITS, SEED_BYTES, hmac_blocks, scale_to_index

STAGE_V1 = "raps-stage-v1"
GAME_SEED = "raps-stage-v1/game"
_PREFIX = STAGE_V1.encode()
T = TypeVar("T")
Words = Callable[[], int]


def new_seed() -> bytes:
    """A fresh game seed from the OS CSPRNG (`secrets`): the only way the house makes one."""
    return secrets.token_bytes(SEED_BYTES)


def game_seed(draw_seed: bytes, game_id: str) -> bytes:
    """The game's seed, from its draw's committed seed (fixed before any winner was drawn).

    Revealing it at the game's close reveals nothing of the draw's seed (HMAC is one-way),
    and once the draw's seed is revealed anyone can check the game's seed came from it."""
    if len(draw_seed) != SEED_BYTES:
        raise ValueError(f"a draw seed is {SEED_BYTES} bytes, got {len(draw_seed)}")
    gid = game_id.encode("utf-8")
    msg = GAME_SEED.encode() + struct.pack(">I", len(gid)) + gid
    return hmac.new(draw_seed, msg, hashlib.sha256).digest()


def message(game_id: str, purpose: str) -> bytes:
    """The HMAC message of one purpose of one game (domain separated, length prefixed)."""
    gid = game_id.encode("utf-8")
    what = purpose.encode("utf-8")
    return _PREFIX + struct.pack(">I", len(gid)) + gid + struct.pack(">I", len(what)) + what


def stream(seed: bytes, game_id: str, purpose: str) -> Words:
    """The endless 256-bit word stream of one purpose."""
    if len(seed) != SEED_BYTES:
        raise ValueError(f"seed must be {SEED_BYTES} bytes, got {len(seed)}")
    return hmac_blocks(seed, message(game_id, purpose)).__next__


def uniform(words: Words, n: int) -> int:
    """A uniform integer in [0, n) from the stream (rejected words are skipped)."""
    return scale_to_index(n, words, BLOCK_BITS)[0]


def below(seed: bytes, game_id: str, purpose: str, n: int) -> int:
    """One uniform integer in [0, n): the first accepted word of the purpose's stream."""
    return uniform(stream(seed, game_id, purpose), n)


def shuffle(seed: bytes, game_id: str, purpose: str, items: Sequence[T]) -> list[T]:
    """Fisher-Yates over a copy: for i = n-1 down to 1, j = uniform(i + 1), swap i and j.

    One stream per purpose, words taken in order, so every permutation is exactly
    equally likely and an inspector's loop gives the same list."""
    words = stream(seed, game_id, purpose)
    out = list(items)
    for i in range(len(out) - 1, 0, -1):
        j = uniform(words, i + 1)
        out[i], out[j] = out[j], out[i]
    return out

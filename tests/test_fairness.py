"""selector.fairness: the primitives an auditor re-runs to recompute every pick.

These functions are the whole proof a draw was fair: a commitment to the seed, a
canonical digest of the pool, an unambiguous message per pick, an HMAC stream and an
integer scaling without modulo bias.  Each property below is one an inspector relies
on; if any of them broke, a recomputed pick could agree with a manipulated one.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import struct
from collections import Counter
from collections.abc import Callable, Iterator

import pytest

from selector.fairness import (
    BLOCK_BITS,
    SEED_BYTES,
    commitment,
    hmac_blocks,
    pick_index,
    pick_message,
    pool_digest,
    scale_to_index,
)

SEED = bytes(range(SEED_BYTES))
OTHER_SEED = bytes(range(1, SEED_BYTES + 1))
DIGEST = pool_digest(["C1", "C2", "C3"])
# large enough that two different 256-bit blocks practically never give the same index
BIG_N = 10**12


# --------------------------------------------------------------------- commitment


def test_commitment_is_hex_sha256_of_the_seed() -> None:
    """The published commitment must be plain SHA-256 so anyone can check it with any tool."""
    assert commitment(SEED) == hashlib.sha256(SEED).hexdigest()
    assert len(commitment(SEED)) == 64
    assert commitment(SEED) != commitment(OTHER_SEED)


@pytest.mark.parametrize("length", [0, 1, 16, SEED_BYTES - 1, SEED_BYTES + 1, 64])
def test_commitment_refuses_a_seed_of_the_wrong_length(length: int) -> None:
    """A short seed would be guessable; the core must refuse it rather than commit to it."""
    with pytest.raises(ValueError, match="seed must be"):
        commitment(bytes(length))


# -------------------------------------------------------------------- pool digest


def test_pool_digest_is_deterministic() -> None:
    assert pool_digest(["C1", "C2"]) == pool_digest(["C1", "C2"])
    assert pool_digest(("C1", "C2")) == pool_digest(["C1", "C2"])


def test_pool_digest_is_order_sensitive() -> None:
    """The digest binds the canonical order; a reordered pool must not pass as the same."""
    assert pool_digest(["C1", "C2", "C3"]) != pool_digest(["C2", "C1", "C3"])
    assert pool_digest(["C1", "C2", "C3"]) != pool_digest(["C3", "C2", "C1"])


@pytest.mark.parametrize(
    "other",
    [
        ["C1", "C2"],  # one removed
        ["C1", "C2", "C3", "C4"],  # one added
        ["C1", "C2", "C4"],  # one replaced
        ["C1", "C2", "C33"],  # one altered
        ["C1", "C2C3"],  # boundaries moved
        ["C1", "C2", "C3", ""],  # empty card appended
        [],
    ],
)
def test_pool_digest_is_content_sensitive(other: list[str]) -> None:
    """Adding, removing or altering any card changes the digest a pick is bound to."""
    assert pool_digest(["C1", "C2", "C3"]) != pool_digest(other)


def test_pool_digest_distinct_over_all_small_pools() -> None:
    """Every subset, in every order, of a few cards has its own digest (no collisions)."""
    cards = ["A", "B", "AB", "C"]
    seen: dict[str, tuple[str, ...]] = {}
    for r in range(len(cards) + 1):
        for combo in itertools.permutations(cards, r):
            d = pool_digest(combo)
            assert d not in seen, (combo, seen.get(d))
            seen[d] = combo


# ------------------------------------------------------------------- pick message


def test_pick_message_layout() -> None:
    """The layout is documented and fixed: prefix, length-prefixed id, two u32, raw digest."""
    msg = pick_message("S-1", 7, 2, DIGEST)
    assert msg == (
        b"raps-pick-v1"
        + struct.pack(">I", 3)
        + b"S-1"
        + struct.pack(">II", 7, 2)
        + bytes.fromhex(DIGEST)
    )


def test_pick_message_is_unambiguous() -> None:
    """Different (session, pick, attempt, pool) must never share a message, so never share
    randomness; ids are chosen so that naive concatenation would collide."""
    sessions = ["", "a", "ab", "a\x00", "ab\x00\x00\x00\x01", "2026-04-25", "2026-04-2"]
    numbers = [0, 1, 2, 10, 256, 2**32 - 1]
    attempts = [0, 1, 2, 256]
    digests = [pool_digest([]), DIGEST, pool_digest(["C1"])]
    messages: dict[bytes, tuple[str, int, int, str]] = {}
    for key in itertools.product(sessions, numbers, attempts, digests):
        msg = pick_message(*key)
        assert msg not in messages, (key, messages.get(msg))
        messages[msg] = key
    assert len(messages) == len(sessions) * len(numbers) * len(attempts) * len(digests)


def test_pick_message_distinguishes_pick_number_from_attempt() -> None:
    """Swapping pick number and attempt gives another message (fixed-width fields)."""
    assert pick_message("S", 1, 2, DIGEST) != pick_message("S", 2, 1, DIGEST)


# -------------------------------------------------------------------- hmac blocks


def _reference_block(seed: bytes, message: bytes, k: int) -> int:
    """Block k as an auditor would compute it from the documented formula."""
    mac = hmac.new(seed, message + struct.pack(">I", k), hashlib.sha256).digest()
    return int.from_bytes(mac, "big")


def test_hmac_blocks_are_deterministic_and_follow_the_formula() -> None:
    msg = pick_message("S", 1, 0, DIGEST)
    first = list(itertools.islice(hmac_blocks(SEED, msg), 6))
    again = list(itertools.islice(hmac_blocks(SEED, msg), 6))
    assert first == again
    assert first == [_reference_block(SEED, msg, k) for k in range(6)]
    assert all(0 <= b < 2**BLOCK_BITS for b in first)
    assert len(set(first)) == len(first)


def test_hmac_blocks_depend_on_seed_and_message() -> None:
    msg = pick_message("S", 1, 0, DIGEST)
    base = next(hmac_blocks(SEED, msg))
    assert next(hmac_blocks(OTHER_SEED, msg)) != base
    assert next(hmac_blocks(SEED, pick_message("S", 2, 0, DIGEST))) != base


# --------------------------------------------------------------------- pick index


def test_pick_index_is_deterministic() -> None:
    args = (SEED, "S-1", 3, 1, DIGEST, 17)
    assert pick_index(*args) == pick_index(*args)
    index, rejected = pick_index(*args)
    assert 0 <= index < 17
    assert rejected >= 0


def test_pick_index_follows_the_documented_formula() -> None:
    """Recompute from scratch: first block below the largest multiple of n, modulo n."""
    n = 7
    msg = pick_message("S-1", 3, 1, DIGEST)
    limit = 2**BLOCK_BITS - 2**BLOCK_BITS % n
    expected = next(
        (b % n, k) for k in itertools.count() if (b := _reference_block(SEED, msg, k)) < limit
    )
    assert pick_index(SEED, "S-1", 3, 1, DIGEST, n) == expected


@pytest.mark.parametrize(
    "changed",
    [
        {"seed": OTHER_SEED},
        {"seed": bytes(SEED_BYTES)},
        {"session_id": "S-2"},
        {"pick_number": 4},
        {"attempt": 2},
        {"digest": pool_digest(["C1", "C2"])},
        {"n": BIG_N + 1},
    ],
    ids=lambda c: next(iter(c)),
)
def test_pick_index_changes_when_any_input_changes(changed: dict[str, object]) -> None:
    """Every input feeds the pick; with a huge n, equal indexes would mean the input was
    ignored (a coincidence has probability about 1e-12)."""
    base: dict[str, object] = {
        "seed": SEED,
        "session_id": "S-1",
        "pick_number": 3,
        "attempt": 1,
        "digest": DIGEST,
        "n": BIG_N,
    }
    assert pick_index(**base)[0] != pick_index(**{**base, **changed})[0]  # type: ignore[arg-type]


# ---------------------------------------------------------------- integer scaling


def _counting_source(values: Iterator[int]) -> tuple[Callable[[], int], list[int]]:
    """A word source over `values` that counts how many words it handed out."""
    used = [0]

    def words() -> int:
        value = next(values)  # StopIteration once every value has been handed out
        used[0] += 1
        return value

    return words, used


def _drain(n: int, order: Iterator[int]) -> tuple[Counter[int], int, int]:
    """Feed each 16-bit value exactly once to scale_to_index until the source runs dry.

    Returns (accepted indexes tally, rejections reported by completed calls, values
    consumed by the last call that ran out of source: those were all rejected).
    """
    words, used = _counting_source(order)
    tally: Counter[int] = Counter()
    reported = 0
    while True:
        before = used[0]
        try:
            index, rejected = scale_to_index(n, words, 16)
        except StopIteration:
            return tally, reported, used[0] - before
        assert used[0] - before == rejected + 1  # one accepted word, the rest rejected
        tally[index] += 1
        reported += rejected


@pytest.mark.parametrize("n", [3, 20, 1000])
@pytest.mark.parametrize("order", ["ascending", "scrambled"])
def test_scaling_is_exactly_uniform_over_every_16_bit_value(n: int, order: str) -> None:
    """Exhaustive proof of no modulo bias: feeding all 65536 values of a 16-bit source
    exactly once, every index in [0, n) is returned exactly 65536 // n times and exactly
    65536 % n values are thrown away.  'scrambled' visits the same values in another
    order (x * odd mod 2**16 is a bijection) so rejections happen mid-stream too."""
    span = 1 << 16
    values = range(span) if order == "ascending" else (x * 40503 % span for x in range(span))
    tally, reported, trailing = _drain(n, iter(values))
    assert set(tally) == set(range(n))
    assert set(tally.values()) == {span // n}
    assert sum(tally.values()) + reported + trailing == span  # each value consumed once
    assert reported + trailing == span % n
    if order == "ascending":  # the rejected values are exactly the top span % n
        assert reported == 0
        assert trailing == span % n


def test_scaling_reports_rejected_words() -> None:
    """With n = 3, 65535 is the only rejected 16-bit value (65536 % 3 == 1)."""
    words = iter([65535, 65535, 65534, 5])
    assert scale_to_index(3, words.__next__, 16) == (65534 % 3, 2)
    assert scale_to_index(3, words.__next__, 16) == (5 % 3, 0)


def test_scaling_n_one_accepts_every_word() -> None:
    tally, reported, trailing = _drain(1, iter(range(1 << 16)))
    assert tally == Counter({0: 1 << 16})
    assert reported == trailing == 0


def test_scaling_n_equal_to_span_is_the_identity() -> None:
    """n = 2**bits: nothing is rejected and each word is its own index."""
    words, used = _counting_source(iter(range(1 << 16)))
    for x in range(1 << 16):
        assert scale_to_index(1 << 16, words, 16) == (x, 0)
    assert used[0] == 1 << 16


@pytest.mark.parametrize("n", [(1 << 16) + 1, 1 << 17])
def test_scaling_refuses_a_pool_larger_than_the_source(n: int) -> None:
    with pytest.raises(ValueError, match="larger than"):
        scale_to_index(n, lambda: 0, 16)


@pytest.mark.parametrize("n", [0, -1])
def test_scaling_refuses_an_empty_pool(n: int) -> None:
    with pytest.raises(ValueError, match="empty pool"):
        scale_to_index(n, lambda: 0, 16)

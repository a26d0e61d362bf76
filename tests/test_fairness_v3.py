"""The worked examples of docs/fairness.md (derivation v3), pinned: each number the page
gives is computed here again, from the reference code and from the plain formulas."""

from __future__ import annotations

import hashlib
import hmac
import struct
from pathlib import Path

from raps.signing import SigningKey
from selector.bindigest import bin_digest, height, locate
from selector.fairness import NO_WITNESS, commitment, pick_message_v3, ticket_index_v3, witness_mix
from selector.witness import RequestTerms, open_message

DOC = (Path(__file__).resolve().parent.parent / "docs" / "fairness.md").read_text("utf-8")
SEED = hashlib.sha256(b"example seed").digest()
SID = "S-20260425-1800"
POOL = [f"{1000 + i}" for i in range(1, 7)]
WITNESS = SigningKey(hashlib.sha256(b"example witness").digest())


def in_doc(*values: str) -> None:
    for v in values:
        assert v in DOC, f"docs/fairness.md no longer shows {v}"


def test_the_seed_commitment_and_the_empty_bin() -> None:
    assert SEED.hex() == "326eaa548e7bb1b3e97ff8e26929630fa0c04a21179ec71afe5f6b62d0796b81"
    in_doc(SEED.hex(), commitment(SEED), bin_digest([]))


def test_the_raps_pick_unwitnessed_by_the_plain_formula() -> None:
    assert [height(c) for c in POOL] == [0] * 6  # one leaf, as the page says
    digest = bin_digest([(c, 1) for c in POOL])
    message = (
        b"raps-pick-v3" + struct.pack(">I", len(SID)) + SID.encode()
        + struct.pack(">II", 1, 0) + bytes.fromhex(digest) + bytes(32)
    )  # fmt: skip
    assert message == pick_message_v3(SID, 1, 0, digest, NO_WITNESS)
    block0 = hmac.new(SEED, message + struct.pack(">I", 0), hashlib.sha256).digest()
    n = len(POOL)
    limit = 2**256 - 2**256 % n
    value = int.from_bytes(block0, "big")
    assert value < limit
    assert value % n == 5 and POOL[5] == "1006"
    assert ticket_index_v3(SEED, SID, 1, 0, digest, NO_WITNESS, n) == (5, 0)
    in_doc(digest, block0.hex()[:16], "ticket 5", "winner `1006`")


def test_the_same_pick_witnessed() -> None:
    digest = bin_digest([(c, 1) for c in POOL])
    terms = RequestTerms("demo", SID, 1, 1, 0, "slots", "raps-pick-v3", digest, commitment(SEED),
                         41, "ab" * 32)  # fmt: skip
    signature = WITNESS.sign(terms.message())
    assert signature == WITNESS.sign(terms.message())  # deterministic
    mix = witness_mix(signature)
    assert mix == hashlib.sha256(b"raps-witness-mix-v1" + bytes.fromhex(signature)).digest()
    assert ticket_index_v3(SEED, SID, 1, 0, digest, mix, 6)[0] == 1
    private = hashlib.sha256(b"example witness").hexdigest()
    in_doc(WITNESS.public_hex, signature[:8], signature[-6:], mix.hex(), "winner `1002`")
    in_doc(terms.message().hex()[:24], private[:8], private[-4:])
    receipt = WITNESS.sign(open_message("demo", SID, commitment(SEED), "raps-pick-v3"))
    assert len(bytes.fromhex(receipt)) == 64


def test_the_ticket_bin() -> None:
    items = [("1001", 3), ("1002", 1), ("1003", 6)]
    digest = bin_digest(items)
    ticket, _ = ticket_index_v3(SEED, "draw:teeds-q-2026-04-25", 1, 0, digest, NO_WITNESS, 10)
    assert ticket == 9 and items[locate(items, ticket)][0] == "1003"
    in_doc(digest, "ticket 9, winner\n  `1003`")

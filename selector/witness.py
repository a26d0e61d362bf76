"""What the witness signs, and how its signatures are checked: pure, no I/O.

The witness (`raps witness`, docs/fairness.md "The witness") is a separate process with its
own Ed25519 key. At a draw's open the daemon registers the draw with it and records the
witness's public key and its open receipt in the opening record; for every pick the daemon
first makes the request durable (`pick.requested`, `draw.requested`), then asks the witness
to sign the request, and mixes the signature into the pick (derivation v3,
selector.fairness.witness_mix). Ed25519 signs deterministically, so asked again for the
same request the witness gives the same signature, and a retry gives the same winner.

Both messages are byte strings built from length-prefixed fields (u32 big-endian lengths
and numbers, u64 for the journal sequence, raw 32-byte digests):

    open    = "raps-witness-open-v1" | str site | str session | commitment (32) | str derivation
    request = "raps-witness-request-v1" | str site | str session | u32 request | u32 pick
              | u32 attempt | str kind | str derivation | digest (32) | commitment (32)
              | u64 seq | entry hash (32)

where `str x` is u32 len(UTF-8 bytes) | the bytes. `request` counts the draw's requests from
1; `seq` and `entry hash` are those of the journal entry holding the request record.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from selector.fairness import witness_mix
from selector.signatures import SignatureError, check, key_id

OPEN_PREFIX = b"raps-witness-open-v1"
REQUEST_PREFIX = b"raps-witness-request-v1"


def _text(value: str) -> bytes:
    raw = value.encode("utf-8")
    return struct.pack(">I", len(raw)) + raw


def _hash32(hex_digest: str, what: str) -> bytes:
    try:
        raw = bytes.fromhex(hex_digest)
    except (ValueError, TypeError) as e:
        raise ValueError(f"{what} must be 64 hex digits") from e
    if len(raw) != 32:
        raise ValueError(f"{what} must be 64 hex digits")
    return raw


def open_message(site: str, session_id: str, commitment: str, derivation: str) -> bytes:
    """What the witness signs when a draw opens (its receipt)."""
    return (
        OPEN_PREFIX
        + _text(site)
        + _text(session_id)
        + _hash32(commitment, "a commitment")
        + _text(derivation)
    )


@dataclass(frozen=True, slots=True)
class RequestTerms:
    """Everything one signature binds."""

    site: str
    session_id: str
    request: int
    pick: int
    attempt: int
    kind: str
    derivation: str
    digest: str
    commitment: str
    seq: int
    entry_hash: str

    def message(self) -> bytes:
        for name in ("request", "pick", "attempt"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**32:
                raise ValueError(f"{name} must be an integer in 0..2^32-1")
        if isinstance(self.seq, bool) or not isinstance(self.seq, int) or not 0 < self.seq < 2**64:
            raise ValueError("seq must be a positive integer")
        return (
            REQUEST_PREFIX
            + _text(self.site)
            + _text(self.session_id)
            + struct.pack(">III", self.request, self.pick, self.attempt)
            + _text(self.kind)
            + _text(self.derivation)
            + _hash32(self.digest, "a digest")
            + _hash32(self.commitment, "a commitment")
            + struct.pack(">Q", self.seq)
            + _hash32(self.entry_hash, "an entry hash")
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "site": self.site,
            "session_id": self.session_id,
            "request": self.request,
            "pick": self.pick,
            "attempt": self.attempt,
            "kind": self.kind,
            "derivation": self.derivation,
            "digest": self.digest,
            "commitment": self.commitment,
            "seq": self.seq,
            "entry_hash": self.entry_hash,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RequestTerms:
        return cls(
            str(d["site"]),
            str(d["session_id"]),
            int(d["request"]),
            int(d["pick"]),
            int(d["attempt"]),
            str(d["kind"]),
            str(d["derivation"]),
            str(d["digest"]),
            str(d["commitment"]),
            int(d["seq"]),
            str(d["entry_hash"]),
        )


@dataclass(frozen=True, slots=True)
class WitnessAtOpen:
    """The witness a draw opened with, as its opening record holds it."""

    site: str
    public_key: str
    receipt: str
    fallback: bool  # may a pick go unwitnessed when the witness cannot be reached?

    def to_dict(self) -> dict[str, Any]:
        return {
            "site": self.site,
            "public_key": self.public_key,
            "key_id": key_id(self.public_key),
            "receipt": self.receipt,
            "fallback": self.fallback,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> WitnessAtOpen:
        return cls(str(d["site"]), str(d["public_key"]), str(d["receipt"]), bool(d["fallback"]))

    def check_receipt(self, session_id: str, commitment: str, derivation: str) -> None:
        """Raise SignatureError unless the receipt is the witness's signature of the open."""
        check(
            self.public_key,
            open_message(self.site, session_id, commitment, derivation),
            self.receipt,
        )


@dataclass(frozen=True, slots=True)
class WitnessReply:
    """What the daemon brings back to a pick: the signature over the request made durable
    at `seq` (whose entry hash is `entry_hash`), or none and why (a fallback)."""

    seq: int
    entry_hash: str
    signature: str | None
    reason: str | None = None


class WitnessRefused(ValueError):
    """A pick's witness reply that its draw cannot take (the message says why)."""


def pick_mix(
    witness: WitnessAtOpen | None,
    request: int,
    entry: tuple[int, str] | None,
    reply: WitnessReply | None,
    terms_of: Callable[[int, str], RequestTerms],
) -> tuple[bytes, dict[str, Any] | None]:
    """The witness's mix for a pick (derivation v3) and what its record says about it.

    `witness`: the draw's witness, or None when the pick has none (an unwitnessed draw, an
    empty pool): then no signature may come. Otherwise the reply's signature must be the
    witness's over `terms_of(seq, entry_hash)`, for the journal entry of the request when
    it is known; no signature is taken only when the draw allows a fallback."""
    if witness is None:
        if reply is not None and reply.signature is not None:
            raise WitnessRefused("this pick is not witnessed: no signature is mixed in")
        return witness_mix(None), None
    if reply is None:
        raise WitnessRefused("the draw has a witness: its pick needs the witness's signature")
    if entry is not None and (reply.seq, reply.entry_hash) != entry:
        raise WitnessRefused("the witness signed another journal entry than the request's")
    record: dict[str, Any] = {
        "request": request,
        "seq": reply.seq,
        "entry_hash": reply.entry_hash,
        "signature": reply.signature,
    }
    if reply.signature is None:
        if not witness.fallback:
            raise WitnessRefused("the witness did not sign and the draw allows no fallback")
        record["reason"] = reply.reason or "the witness could not be reached"
        return witness_mix(None), record
    try:
        check_request(witness.public_key, terms_of(reply.seq, reply.entry_hash), reply.signature)
    except SignatureError as e:
        raise WitnessRefused(f"the witness's signature of request {request}: {e}") from e
    return witness_mix(reply.signature), record


def witness_at_open(
    opened: Mapping[str, Any], session_id: str, derivation: str, pinned: str | None
) -> tuple[WitnessAtOpen | None, list[str]]:
    """Verify's view of a v3 opening record: its witness (None: declared unwitnessed) and
    what is wrong with it (no `witness` key at all, a receipt that does not check, a
    public key other than the one the inspector pinned)."""
    problems: list[str] = []
    witness = None
    if "witness" not in opened:
        problems.append("a v3 opening record names no witness, nor none")
    elif opened["witness"] is not None:
        try:
            witness = WitnessAtOpen.from_dict(opened["witness"])
            witness.check_receipt(session_id, str(opened["commitment"]), derivation)
        except (KeyError, TypeError, ValueError) as e:  # SignatureError is a ValueError
            problems.append(f"the witness's receipt of the open: {e}")
    if pinned is not None:
        have = None if witness is None else witness.public_key.lower()
        if have != pinned.lower():
            problems.append(f"the witness key is {have}, not the pinned {pinned.lower()}")
    return witness, problems


def pick_witness_problems(
    witness: WitnessAtOpen | None,
    recorded: object,
    request: int,
    entry: tuple[int, str] | None,
    terms_of: Callable[[int, str], RequestTerms],
) -> list[str]:
    """What is wrong with a v3 pick's `witness` field: none for a pick without a witness
    (an unwitnessed draw, an empty pool); else the signature of exactly its request and
    journal entry, or none where the draw allows a fallback (an anomaly, reported apart)."""
    if witness is None:
        return [] if recorded is None else ["a witness recorded for a pick that has none"]
    if not isinstance(recorded, dict):
        return ["the draw has a witness, the pick records none"]
    out = []
    if recorded.get("request") != request:
        out.append(f"witnessed request {recorded.get('request')}, the pick's is {request}")
    if entry is not None and (recorded.get("seq"), recorded.get("entry_hash")) != tuple(entry):
        out.append("the witness signed another journal entry than the request's")
    signature = recorded.get("signature")
    if signature is None:
        if not witness.fallback:
            out.append("drawn without the witness, which the draw forbids")
        return out
    try:
        terms = terms_of(int(recorded["seq"]), str(recorded["entry_hash"]))
        check_request(witness.public_key, terms, str(signature))
    except (KeyError, TypeError, ValueError) as e:
        out.append(f"witness signature: {e}")
    return out


def check_request(public_key: str, terms: RequestTerms, signature: str) -> None:
    """Raise SignatureError unless `signature` is the witness's over these terms."""
    try:
        message = terms.message()
    except ValueError as e:
        raise SignatureError(f"the signed request is malformed: {e}") from e
    check(public_key, message, signature)


__all__ = [
    "OPEN_PREFIX",
    "REQUEST_PREFIX",
    "RequestTerms",
    "SignatureError",
    "WitnessAtOpen",
    "WitnessRefused",
    "WitnessReply",
    "check_request",
    "open_message",
    "pick_mix",
    "pick_witness_problems",
    "witness_at_open",
]

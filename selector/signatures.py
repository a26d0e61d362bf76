"""Ed25519 signatures as the journal, the heads and the witness use them: pure, no I/O.

A public key travels as 64 hex digits (its 32 raw bytes); its short name, the key id,
is the first 16 hex digits of SHA-256 of those bytes. A signature travels as 128 hex
digits. Signing happens in raps/signing.py, where the key files are read; checking
happens here, so `raps verify` and the core need nothing but the public key.
"""

from __future__ import annotations

import hashlib

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

PUBLIC_KEY_BYTES = 32
SIGNATURE_BYTES = 64


class SignatureError(ValueError):
    """A public key or signature that is malformed, or a signature that does not check."""


def key_id(public_hex: str) -> str:
    """The short, stable name of a public key: 16 hex digits of its SHA-256."""
    return hashlib.sha256(_public_bytes(public_hex)).hexdigest()[:16]


def check(public_hex: str, message: bytes, signature_hex: str) -> None:
    """Raise SignatureError unless `signature_hex` is the key's signature of `message`."""
    try:
        key = Ed25519PublicKey.from_public_bytes(_public_bytes(public_hex))
    except ValueError as e:  # not a point on the curve
        raise SignatureError("the public key is not an Ed25519 key") from e
    try:
        signature = bytes.fromhex(signature_hex)
    except (ValueError, TypeError) as e:
        raise SignatureError("a signature is 128 hex digits") from e
    if len(signature) != SIGNATURE_BYTES:
        raise SignatureError("a signature is 128 hex digits")
    try:
        key.verify(signature, message)
    except InvalidSignature as e:
        raise SignatureError(f"the signature does not match key {key_id(public_hex)}") from e


def valid(public_hex: str, message: bytes, signature_hex: str) -> bool:
    """check(), as a yes or no."""
    try:
        check(public_hex, message, signature_hex)
    except SignatureError:
        return False
    return True


def _public_bytes(public_hex: str) -> bytes:
    try:
        raw = bytes.fromhex(public_hex)
    except (ValueError, TypeError) as e:
        raise SignatureError("a public key is 64 hex digits") from e
    if len(raw) != PUBLIC_KEY_BYTES:
        raise SignatureError("a public key is 64 hex digits")
    return raw

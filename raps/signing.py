"""Ed25519 signing keys in credential files: the site's head key and the witness's key.

A key file holds the 32-byte private seed as 64 hex digits (whitespace ignored), like
the seed-sealing key (raps/seal.py), and is read from a systemd credential in
production. The private key never enters the database, the journal or the logs;
only its public half (selector/signatures.py) is published.
"""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from selector.signatures import key_id

PRIVATE_KEY_BYTES = 32


class SigningKeyError(Exception):
    """The key file is missing, unreadable or not 64 hex digits."""


class SigningKey:
    """A private Ed25519 key; repr and str never show it."""

    def __init__(self, private: bytes) -> None:
        if len(private) != PRIVATE_KEY_BYTES:
            raise SigningKeyError("an Ed25519 private key is 32 bytes")
        self._key = Ed25519PrivateKey.from_private_bytes(private)
        raw = self._key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        self.public_hex = raw.hex()
        self.key_id = key_id(self.public_hex)

    def __repr__(self) -> str:
        return f"SigningKey(key_id={self.key_id}, <private key hidden>)"

    def sign(self, message: bytes) -> str:
        """The signature of `message`, as 128 hex digits (Ed25519 is deterministic)."""
        return self._key.sign(message).hex()


def load_signing_key(path: Path, what: str = "signing key") -> SigningKey:
    """Read a key file; the error names the file and what it is for."""
    try:
        text = path.read_text(encoding="ascii").strip()
    except OSError as e:
        raise SigningKeyError(f"cannot read the {what} file {path}: {e.strerror}") from e
    except UnicodeDecodeError as e:
        raise SigningKeyError(f"{what} file {path} must hold 64 hex digits") from e
    try:
        raw = bytes.fromhex(text)
    except ValueError as e:
        raise SigningKeyError(f"{what} file {path} must hold 64 hex digits") from e
    if len(raw) != PRIVATE_KEY_BYTES:
        raise SigningKeyError(f"{what} file {path} must hold 64 hex digits, not {len(text)}")
    return SigningKey(raw)


def create_signing_key_file(path: Path) -> SigningKey:
    """Write a new random key readable by the owner only (demo and first setup)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = os.urandom(PRIVATE_KEY_BYTES)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(raw.hex() + "\n")
    return SigningKey(raw)

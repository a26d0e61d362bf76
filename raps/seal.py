"""Sealing a session's secret seed so it survives a crash but not a database leak.

The seed is encrypted with AES-256-GCM under a key read from a credential file
(systemd LoadCredential in production, a generated file for the demo); the session
id is the associated data, so a sealed seed cannot be moved to another session.
The key never enters the database, the logs or the journal.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

KEY_BYTES = 32
NONCE_BYTES = 12


class SealError(Exception):
    """The key file is missing or wrong, or a sealed seed does not open."""


def load_key(path: Path) -> bytes:
    """Read a 32-byte key stored as 64 hex digits (whitespace ignored)."""
    try:
        text = path.read_text(encoding="ascii").strip()
    except OSError as e:
        raise SealError(f"cannot read the seed key file {path}: {e.strerror}") from e
    try:
        key = bytes.fromhex(text)
    except ValueError as e:
        raise SealError(f"seed key file {path} must hold 64 hex digits") from e
    if len(key) != KEY_BYTES:
        raise SealError(f"seed key file {path} must hold 64 hex digits, not {len(text)}")
    return key


def create_key_file(path: Path) -> bytes:
    """Write a new random key readable by the owner only (for the demo and first setup)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_bytes(KEY_BYTES)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(key.hex() + "\n")
    return key


class SeedSealer:
    def __init__(self, key: bytes) -> None:
        if len(key) != KEY_BYTES:
            raise SealError("the seed key must be 32 bytes")
        self._aead = AESGCM(key)

    def __repr__(self) -> str:
        return "SeedSealer(<key hidden>)"

    def seal(self, session_id: str, seed: bytes) -> tuple[bytes, bytes]:
        nonce = secrets.token_bytes(NONCE_BYTES)
        return nonce, self._aead.encrypt(nonce, seed, session_id.encode("utf-8"))

    def unseal(self, session_id: str, nonce: bytes, ciphertext: bytes) -> bytes:
        try:
            return self._aead.decrypt(nonce, ciphertext, session_id.encode("utf-8"))
        except InvalidTag as e:
            raise SealError(
                f"sealed seed of session {session_id} does not open with this key"
            ) from e

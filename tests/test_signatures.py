"""Ed25519 keys and signatures: deterministic, checked by the public key alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from raps.signing import SigningKeyError, create_signing_key_file, load_signing_key
from selector.signatures import SignatureError, check, key_id, valid


def test_a_key_file_signs_deterministically_and_the_public_key_checks(tmp_path: Path) -> None:
    made = create_signing_key_file(tmp_path / "head.key")
    key = load_signing_key(tmp_path / "head.key")
    assert key.public_hex == made.public_hex and key.key_id == key_id(key.public_hex)
    sig = key.sign(b"raps head 7")
    assert sig == key.sign(b"raps head 7") and len(sig) == 128
    check(key.public_hex, b"raps head 7", sig)
    assert not valid(key.public_hex, b"raps head 8", sig)
    other = create_signing_key_file(tmp_path / "other.key")
    assert not valid(other.public_hex, b"raps head 7", sig)
    private = (tmp_path / "head.key").read_text().strip()
    assert "hidden" in repr(key) and private not in repr(key) and private not in str(key)
    assert (tmp_path / "head.key").stat().st_mode & 0o077 == 0


@pytest.mark.parametrize("text", ["", "zz" * 32, "ab" * 31, "ab" * 33])
def test_a_bad_key_file_is_named(tmp_path: Path, text: str) -> None:
    path = tmp_path / "witness.key"
    path.write_text(text)
    with pytest.raises(SigningKeyError, match="witness key file"):
        load_signing_key(path, "witness key")


def test_a_missing_key_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(SigningKeyError, match="cannot read the head key file"):
        load_signing_key(tmp_path / "none.key", "head key")


@pytest.mark.parametrize(
    ("public", "sig"), [("ab", "00" * 64), ("ab" * 32, "00" * 10), ("ab" * 32, "not hex")]
)
def test_malformed_keys_and_signatures_are_refused(public: str, sig: str) -> None:
    assert not valid(public, b"m", sig)
    with pytest.raises(SignatureError):
        check(public, b"m", sig)

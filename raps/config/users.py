"""`[[users]]`: staff accounts for the pages and the API, the API accounts of e-Host kiosks
and casino-app integrations, and how their secrets are hashed.

Secrets are stored as argon2id hashes only (werkzeug-style scrypt is accepted for
accounts migrated from elsewhere); a plain-text secret in the file is refused.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import typing
from typing import Literal

import argon2
from pydantic import field_validator, model_validator

from adapters.wire.settings import StrictModel, key_problems

Role = Literal[
    "marketing",
    "security",
    "ops",
    "admin",
    "auditor",
    "stage_host",
    "rewards_desk",
    "kiosk",
    "app",
    "stage_screen",
]
ROLES: tuple[Role, ...] = typing.get_args(Role)
# people: they sign in on the pages with a password or PIN (and may have an API token)
STAFF_ROLES: tuple[Role, ...] = (
    "marketing",
    "security",
    "ops",
    "admin",
    "auditor",
    "stage_host",
    "rewards_desk",
)
# programs: an e-Host kiosk, a casino-app integration, the audience's stage screen; an
# API token only, no page sign-in
DEVICE_ROLES: tuple[Role, ...] = ("kiosk", "app", "stage_screen")

_USER_NAME = re.compile(r"[A-Za-z0-9._@-]+")
_ARGON2ID = re.compile(
    r"\$argon2id\$v=\d+\$m=\d+,t=\d+,p=\d+\$[A-Za-z0-9+/]+={0,2}\$[A-Za-z0-9+/]+={0,2}"
)
# werkzeug's scrypt format: scrypt:N:r:p$salt$hex(sha) with a 64-byte derived key
_SCRYPT = re.compile(r"scrypt:(\d+):(\d+):(\d+)\$([^$]+)\$([0-9a-f]{128})")

_hasher = argon2.PasswordHasher()  # argon2id with the library's current defaults


def hash_secret(secret: str) -> str:
    """An argon2id hash of a password or API token, for users[].password_hash."""
    return _hasher.hash(secret)


def check_secret(secret: str, hashed: str) -> bool:
    """Whether `secret` matches `hashed` (argon2id, or werkzeug-style scrypt).

    Never raises on a malformed hash: a login with a broken hash simply fails.
    """
    if hashed.startswith("$argon2id$"):
        try:
            return _hasher.verify(hashed, secret)
        except argon2.exceptions.VerificationError:
            return False
        except argon2.exceptions.InvalidHashError:
            return False
    m = _SCRYPT.fullmatch(hashed)
    if m is None:
        return False
    n, r, p = int(m[1]), int(m[2]), int(m[3])
    try:
        derived = hashlib.scrypt(
            secret.encode(), salt=m[4].encode(), n=n, r=r, p=p, maxmem=132 * n * r * p, dklen=64
        )
    except (ValueError, MemoryError):
        return False
    return hmac.compare_digest(derived.hex(), m[5])


def check_hash(value: str | None) -> str | None:
    """Refuse anything that is not a hash, without ever echoing the value."""
    if value is None or _ARGON2ID.fullmatch(value) or _SCRYPT.fullmatch(value):
        return value
    if value.startswith(("$argon2i$", "$argon2d$")):
        raise ValueError("only argon2id hashes are accepted; run `raps hash-password`")
    if value.startswith(("$argon2", "scrypt:")):
        raise ValueError("not a well-formed argon2id or scrypt hash; run `raps hash-password`")
    raise ValueError(
        "looks like a plain-text secret, not a hash; store the output of "
        "`raps hash-password` instead"
    )


class UserConfig(StrictModel):
    """A staff account for the web pages and API, or a kiosk's or app's API account;
    secrets are stored hashed only."""

    name: str
    role: Role
    password_hash: str | None = None  # staff only, and required for them
    api_token_hash: str | None = None  # required for kiosk and app

    @field_validator("name")
    @classmethod
    def _plain_name(cls, v: str) -> str:
        if not _USER_NAME.fullmatch(v):
            raise ValueError(f"must be letters, digits, '.', '_', '@' and '-' only, not {v!r}")
        return v

    @field_validator("password_hash", "api_token_hash")
    @classmethod
    def _hashed(cls, v: str | None) -> str | None:
        return check_hash(v)

    @model_validator(mode="after")
    def _secrets_of_the_role(self) -> UserConfig:
        if self.role in DEVICE_ROLES:
            problems = []
            if self.api_token_hash is None:
                problems.append(("api_token_hash", f"missing (a {self.role} signs in with it)"))
            if self.password_hash is not None:
                problems.append(
                    ("password_hash", f"a {self.role} account has no page sign-in: leave it out")
                )
            if problems:
                raise key_problems(problems)
        elif self.password_hash is None:
            raise key_problems([("password_hash", "missing")])
        return self

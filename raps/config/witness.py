"""`[witness]`: the independent witness the daemon asks to sign every draw's request
(docs/fairness.md "The witness"). Without this section draws open unwitnessed, and say so."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from pydantic import Field, ValidationInfo, field_validator

from adapters.wire.settings import StrictModel

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_URL = re.compile(r"https?://[^\s/]+(/[^\s]*)?")
_HEX64 = re.compile(r"[0-9a-f]{64}")


class WitnessConfig(StrictModel):
    url: str  # the witness's base URL, e.g. https://witness.example:8787
    # the bearer token (a credential file, like the seed key); the witness keeps its hash
    token_file: str
    # the witness's public key (64 hex digits), when pinned: a witness answering with
    # another key is refused
    public_key: str | None = None
    timeout_seconds: float = Field(default=2.0, gt=0, le=30)
    # may a draw go on without the witness's signature when it cannot be reached? The pick
    # is then journaled unwitnessed and `raps verify` reports it as an anomaly
    fallback: bool = False

    @field_validator("url")
    @classmethod
    def _http_url(cls, v: str) -> str:
        if not _URL.fullmatch(v):
            raise ValueError("must be an http:// or https:// URL")
        return v.rstrip("/")

    @field_validator("public_key")
    @classmethod
    def _hex(cls, v: str | None) -> str | None:
        if v is not None and not _HEX64.fullmatch(v):
            raise ValueError("must be 64 lower-case hex digits (raps witness key)")
        return v

    @field_validator("token_file")
    @classmethod
    def _expand_env(cls, v: str, info: ValidationInfo) -> str:
        env: Mapping[str, str] = (info.context or {}).get("env", os.environ)

        def sub(m: re.Match[str]) -> str:
            if m[1] not in env:
                raise ValueError(
                    f"environment variable {m[1]} is not set (systemd sets "
                    "CREDENTIALS_DIRECTORY for a unit with LoadCredential=)"
                )
            return env[m[1]]

        out = _ENV_REF.sub(sub, v)
        if not out:
            raise ValueError("must not be empty")
        return out

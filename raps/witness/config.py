"""The witness's own config file (`raps witness run --config witness.toml`).

It shares nothing with the daemon's: its own key (a credential file), its own database,
its own address, and the SHA-256 of each bearer token it accepts (a token is 32 random
bytes or more, so its hash can sit in a file that is not secret; the check is one hash
and a constant-time compare, cheap enough for every pick).
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator

from adapters.wire.settings import StrictModel

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_HEX64 = re.compile(r"[0-9a-f]{64}")


class WitnessConfigError(ValueError):
    """The witness's config file is missing or wrong; the message names each key."""


def expand_env(value: str, env: Mapping[str, str]) -> str:
    """${NAME} replaced from the environment (systemd sets CREDENTIALS_DIRECTORY)."""

    def sub(m: re.Match[str]) -> str:
        if m[1] not in env:
            raise ValueError(f"environment variable {m[1]} is not set")
        return env[m[1]]

    return _ENV_REF.sub(sub, value)


class WitnessServerConfig(StrictModel):
    host: str = Field(default="127.0.0.1", min_length=1)
    port: int = Field(default=8787, ge=0, le=65535)
    database: str = "var/witness/witness.db"  # SQLite, written and fsynced before answering
    key_file: str = "var/witness/witness.key"  # Ed25519 private key, 64 hex digits
    # SHA-256 (hex) of each bearer token accepted (one per daemon)
    token_sha256: tuple[str, ...] = Field(min_length=1)
    sites: tuple[str, ...] = ()  # the sites it serves (empty: any)

    @field_validator("token_sha256")
    @classmethod
    def _hex(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for h in v:
            if not _HEX64.fullmatch(h):
                raise ValueError("each token hash is 64 lower-case hex digits (sha256sum)")
        return v


class WitnessLogging(StrictModel):
    format: Literal["json", "console"] = "json"
    level: Literal["debug", "info", "warning", "error"] = "info"


class WitnessFile(StrictModel):
    witness: WitnessServerConfig
    logging: WitnessLogging = Field(default_factory=WitnessLogging)


def parse_witness_config(
    text: str, source: str = "<string>", env: Mapping[str, str] | None = None
) -> WitnessFile:
    try:
        raw: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise WitnessConfigError(f"{source}: not TOML: {e}") from e
    try:
        cfg = WitnessFile.model_validate(raw)
    except ValidationError as e:
        lines = [
            f"{source}: {'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in e.errors()
        ]
        raise WitnessConfigError("\n".join(lines)) from None
    env = os.environ if env is None else env
    try:
        w = cfg.witness.model_copy(
            update={
                "key_file": expand_env(cfg.witness.key_file, env),
                "database": expand_env(cfg.witness.database, env),
            }
        )
    except ValueError as e:
        raise WitnessConfigError(f"{source}: witness: {e}") from e
    return cfg.model_copy(update={"witness": w})


def load_witness_config(path: str | Path) -> WitnessFile:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise WitnessConfigError(f"cannot read {p}: {e.strerror}") from e
    return parse_witness_config(text, str(p))

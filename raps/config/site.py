"""`[site]`, `[storage]`, `[credentials]`, `[http]`, `[directory]` and `[logging]`: where the
daemon runs, where it keeps its state, how it is reached and heard, and where it may fetch
the player directory's photos."""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, SecretStr, ValidationInfo, field_validator, model_validator

from adapters.wire.settings import StrictModel

_SITE_ID = re.compile(r"[a-z0-9-]+")
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_STORAGE_URL = re.compile(
    r"(?P<scheme>sqlite(?:\+aiosqlite)?):///(?P<path>.+)"
    r"|(?P<pg>postgresql(?:\+asyncpg|\+psycopg)?)://(?P<rest>.+)",
    re.DOTALL,
)


class SiteConfig(StrictModel):
    """Which casino this daemon serves; `id` goes into MQTT topics, so it is kept plain."""

    id: str
    name: str = ""
    timezone: str = "Africa/Johannesburg"

    @model_validator(mode="before")
    @classmethod
    def _name_defaults_to_id(cls, data: Any) -> Any:
        if isinstance(data, dict) and "name" not in data and isinstance(data.get("id"), str):
            return {**data, "name": data["id"]}
        return data

    @field_validator("id")
    @classmethod
    def _plain_id(cls, v: str) -> str:
        if not _SITE_ID.fullmatch(v):
            raise ValueError(
                f"must be lower-case letters, digits and '-' only (it is used in MQTT "
                f"topics), not {v!r}"
            )
        return v

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, v: str) -> str:
        try:
            ZoneInfo(v)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"unknown time zone {v!r} (use an IANA name such as 'Africa/Johannesburg')"
            ) from None
        return v


class StorageConfig(StrictModel):
    """Where state and the journal live: SQLite for one box, PostgreSQL in production."""

    url: str = "sqlite:///var/raps.db"
    snapshot_interval_seconds: float = Field(default=60.0, gt=0)
    event_flush_seconds: float = Field(default=0.5, gt=0)
    # applied floor events not yet in the floor log (it is failing): over this bound the
    # MQTT ingest stops acknowledging and other sources' events are refused, counted
    max_unflushed_events: int = Field(default=100_000, ge=1)
    # the newest journal head this daemon committed (raps.store.headmark); default: beside
    # a SQLite database file, var/journal-head.json for PostgreSQL
    head_mark_file: str | None = Field(default=None, min_length=1)

    @field_validator("url")
    @classmethod
    def _supported_url(cls, v: str) -> str:
        if _STORAGE_URL.fullmatch(v):
            return v
        # never echo the URL: a PostgreSQL URL may hold a password
        scheme = v.split(":", 1)[0] if ":" in v else ""
        got = f"scheme {scheme!r}" if scheme else "no scheme"
        raise ValueError(
            f"unsupported database URL ({got}); use sqlite:///PATH, sqlite+aiosqlite:///PATH, "
            "postgresql://..., postgresql+asyncpg://... or postgresql+psycopg://..."
        )


class CredentialsConfig(StrictModel):
    """Where the secret keys are read from (systemd LoadCredential= in production): the
    seed-sealing key and the site's head-signing key (raps.heads)."""

    seed_key_file: str = "var/seed.key"
    head_key_file: str | None = None  # default: head.key beside the seed key file

    def head_key_path(self) -> Path:
        if self.head_key_file is not None:
            return Path(self.head_key_file)
        return Path(self.seed_key_file).with_name("head.key")

    @field_validator("seed_key_file", "head_key_file")
    @classmethod
    def _expand_env(cls, v: str | None, info: ValidationInfo) -> str | None:
        if v is None:
            return None
        env: Mapping[str, str] = (info.context or {}).get("env", os.environ)

        def sub(m: re.Match[str]) -> str:
            name = m[1]
            if name not in env:
                raise ValueError(
                    f"environment variable {name} is not set (systemd sets "
                    "CREDENTIALS_DIRECTORY for a unit with LoadCredential=)"
                )
            return env[name]

        out = _ENV_REF.sub(sub, v)
        if not out:
            raise ValueError("must not be empty")
        return out


class HttpConfig(StrictModel):
    """The HTTP API, handheld and dispatch pages, /metrics."""

    host: str = Field(default="127.0.0.1", min_length=1)
    port: int = Field(default=8080, ge=0, le=65535)
    metrics_token: SecretStr | None = None
    # the pages' sign-in (raps.auth): cookie flags, lifetime, login rate limit
    secure_cookies: bool = True
    session_minutes: int = Field(default=720, gt=0, le=7 * 24 * 60)
    login_attempts: int = Field(default=5, ge=1)
    login_window_seconds: float = Field(default=300.0, gt=0)
    # request bodies (raps.body_limit): past these a request is answered 413 unread
    max_body_bytes: int = Field(default=64 * 1024, ge=1024, le=16 * 1024 * 1024)
    max_upload_bytes: int = Field(default=1024 * 1024, ge=1024, le=64 * 1024 * 1024)
    # reverse proxies whose X-Forwarded-For/-Proto are believed (the sign-in rate limit
    # counts per client address); none by default: the peer's own address counts
    trusted_proxies: tuple[str, ...] = ()

    @field_validator("trusted_proxies")
    @classmethod
    def _addresses(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        out = []
        for entry in v:
            try:
                net = ipaddress.ip_network(entry.strip(), strict=True)
            except ValueError:
                raise ValueError(
                    f"{entry!r} is not an IP address or network (e.g. '10.0.0.5' or "
                    "'10.0.0.0/24'); '*' is not allowed: it would let any client choose "
                    "its address"
                ) from None
            out.append(str(net.network_address) if net.num_addresses == 1 else str(net))
        return tuple(out)

    @model_validator(mode="after")
    def _upload_not_below_body(self) -> HttpConfig:
        if self.max_upload_bytes < self.max_body_bytes:
            raise ValueError("max_upload_bytes must not be below max_body_bytes")
        return self

    @field_validator("metrics_token")
    @classmethod
    def _long_enough(cls, v: SecretStr | None) -> SecretStr | None:
        if v is not None and len(v.get_secret_value()) < 16:
            raise ValueError("must be at least 16 characters (try `openssl rand -hex 16`)")
        return v


class DirectoryConfig(StrictModel):
    """The player directory's photos (`photo_url` of player_upserted) for the handheld's
    ID check: the daemon fetches a photo only from these origins and hands it to the
    roles that verify a winner (raps.photos); none listed: no photo is ever fetched."""

    photo_origins: tuple[str, ...] = ()
    photo_max_bytes: int = Field(default=2 * 1024 * 1024, ge=1024, le=20 * 1024 * 1024)
    photo_timeout_seconds: float = Field(default=3.0, gt=0, le=30)

    @field_validator("photo_origins")
    @classmethod
    def _origins(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        out = []
        for entry in v:
            parts = urlsplit(entry.strip())
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(f"{entry!r} is no origin: use scheme://host[:port]")
            if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
                raise ValueError(f"{entry!r}: an origin has no path, query or user")
            out.append(f"{parts.scheme}://{parts.netloc.lower()}")
        return tuple(out)


class LoggingConfig(StrictModel):
    """structlog output: JSON lines for journald/Loki, or a console for humans."""

    format: Literal["json", "console"] = "console"
    level: Literal["debug", "info", "warning", "error", "critical"] = "info"

    @field_validator("level", mode="before")
    @classmethod
    def _lower(cls, v: Any) -> Any:
        return v.lower() if isinstance(v, str) else v

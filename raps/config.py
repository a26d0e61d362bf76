"""The daemon's TOML configuration: parsed, validated and turned into the core's settings.

`raps run --config FILE` must refuse to start on a wrong or missing key, and say which
key in which file, so the whole file is validated up front by strict pydantic models
(no silent coercion: ``port = "80"`` or ``enabled = 1`` are errors, not guesses) and
every problem is reported at once as ``FILE: dotted.key[0].path: message``.

Secrets never appear in an error message: values are echoed only where they cannot be
secret (enum choices, time zones, ids).  See docs/configuration.md for every key.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import hmac
import os
import re
import tomllib
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import argon2
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from adapters.modbus.config import ModbusGatewayConfig
from adapters.sas.config import SasChannelConfig
from selector.events import PoolKind, Tier
from selector.layout import FloorLayout, Machine, Table
from selector.promotion import EarnRules, Promotion, SessionRules
from selector.windows import QualifyingWindow

__all__ = [
    "ROLES",
    "AreaConfig",
    "Config",
    "ConfigError",
    "CredentialsConfig",
    "EarnConfig",
    "FloorConfig",
    "HttpConfig",
    "LoggingConfig",
    "MachineConfig",
    "MqttConfig",
    "Problem",
    "PromotionConfig",
    "QuotasConfig",
    "SessionConfig",
    "SimulateConfig",
    "SiteConfig",
    "StorageConfig",
    "TableConfig",
    "UserConfig",
    "WindowConfig",
    "check_secret",
    "hash_secret",
    "load_config",
    "parse_config",
]

TierName = Literal["ten", "jack", "queen", "king", "ace"]
PoolKindName = Literal["slots", "tables"]
Role = Literal["marketing", "security", "ops", "admin", "auditor"]
ROLES: tuple[Role, ...] = typing.get_args(Role)

_SITE_ID = re.compile(r"[a-z0-9-]+")
_ITEM_ID = re.compile(r"[A-Za-z0-9._-]+")
_USER_NAME = re.compile(r"[A-Za-z0-9._@-]+")
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_HHMM = re.compile(r"(\d{2}):(\d{2})")
_STORAGE_URL = re.compile(
    r"(?P<scheme>sqlite(?:\+aiosqlite)?):///(?P<path>.+)"
    r"|(?P<pg>postgresql(?:\+asyncpg|\+psycopg)?)://(?P<rest>.+)",
    re.DOTALL,
)
_ARGON2ID = re.compile(
    r"\$argon2id\$v=\d+\$m=\d+,t=\d+,p=\d+\$[A-Za-z0-9+/]+={0,2}\$[A-Za-z0-9+/]+={0,2}"
)
# werkzeug's scrypt format: scrypt:N:r:p$salt$hex(sha) with a 64-byte derived key
_SCRYPT = re.compile(r"scrypt:(\d+):(\d+):(\d+)\$([^$]+)\$([0-9a-f]{128})")

_PROBLEMS = "raps_config"
_T = typing.TypeVar("_T")


# --- errors -------------------------------------------------------------------------------


class Problem(NamedTuple):
    """One thing wrong with a config: the dotted key path and what is wrong with it."""

    key: str
    message: str


class ConfigError(Exception):
    """A config that cannot be used; str() lists every problem, one per line.

    Each line reads ``FILE: key.path: message`` (``FILE:LINE:COL: message`` for a TOML
    syntax error), so an operator can go straight to the line to fix.
    """

    def __init__(
        self,
        source: str,
        problems: Iterable[Problem | tuple[str, str]],
        *,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        self.source = source
        self.problems = tuple(Problem(*p) for p in problems)
        self.line = line
        self.column = column
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.source
        if self.line is not None:
            where += f":{self.line}" + (f":{self.column}" if self.column is not None else "")
        return "\n".join(
            f"{where}: {p.key}: {p.message}" if p.key else f"{where}: {p.message}"
            for p in self.problems
        )


def _problems(items: Sequence[tuple[str, str]]) -> PydanticCustomError:
    """Several problems found by one cross-field check, each with a path relative to it.

    pydantic gives a model validator's error the model's own location; this carries finer
    paths (``machines[3].id``) through to the message without losing the others.
    """
    summary = "; ".join(f"{k}: {m}" if k else m for k, m in items)
    return PydanticCustomError(_PROBLEMS, "{summary}", {"summary": summary, "problems": items})


def _key_part(part: str | int) -> str:
    if isinstance(part, int):
        return f"[{part}]"
    return part if _BARE_KEY.fullmatch(part) else '"' + part.replace('"', '\\"') + '"'


def _join(base: str, sub: str) -> str:
    if not sub:
        return base
    if not base or sub.startswith("["):
        return base + sub
    return f"{base}.{sub}"


def _dotted(loc: Sequence[str | int]) -> str:
    out = ""
    for part in loc:
        out = _join(out, _key_part(part))
    return out


_TOML_TYPES: dict[str, str] = {
    "string_type": "a string",
    "int_type": "an integer",
    "float_type": "a number",
    "bool_type": "true or false",
    "tuple_type": "a list",
    "list_type": "a list",
    "dict_type": "a table",
    "model_type": "a table",
    "model_attributes_type": "a table",
    "datetime_type": "a date and time",
    "time_type": "a time",
}

_MISSING_HINTS = {
    "floor": "give either floor.simulate or floor.machines/floor.tables",
    "promotions": "give at least one [[promotions]] table",
}


def _toml_type(value: object) -> str:
    """The TOML name of a parsed value's type, for 'must be X, not Y' messages."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, datetime | date | time):
        return "a date/time"
    return type(value).__name__


def _unwrap(tp: Any) -> Any:
    """The model class inside an annotation like `X | None` or `tuple[X, ...]`, if any."""
    origin = typing.get_origin(tp)
    if origin is Annotated:
        return _unwrap(typing.get_args(tp)[0])
    if origin in (typing.Union, types.UnionType, tuple, list):
        for arg in typing.get_args(tp):
            found = _unwrap(arg)
            if isinstance(found, type) and issubclass(found, BaseModel):
                return found
        return None
    return tp


def _toml_keys(model: type[BaseModel]) -> dict[str, Any]:
    """A model's fields by the key a TOML file uses for them (the alias, if any)."""
    return {f.alias or name: f for name, f in model.model_fields.items()}


def _model_at(loc: Sequence[str | int]) -> type[BaseModel] | None:
    """The config model that sits at a location, to suggest the key that was meant."""
    model: type[BaseModel] | None = Config
    for part in loc:
        if isinstance(part, int):
            continue
        keys = _toml_keys(model) if model is not None else {}
        if part not in keys:
            return None
        found = _unwrap(keys[part].annotation)
        model = found if isinstance(found, type) and issubclass(found, BaseModel) else None
    return model


def _message(err: Mapping[str, Any]) -> str:
    """One pydantic error in the words of a config file (TOML types, no Python jargon)."""
    kind: str = err["type"]
    ctx: Mapping[str, Any] = err.get("ctx") or {}
    loc = tuple(err["loc"])
    value = err.get("input")
    if kind == "missing":
        hint = _MISSING_HINTS.get(_dotted(loc))
        return f"missing ({hint})" if hint else "missing"
    if kind == "extra_forbidden":
        parent = _model_at(loc[:-1])
        if parent is not None and isinstance(loc[-1], str):
            close = difflib.get_close_matches(loc[-1], list(_toml_keys(parent)), n=1)
            if close:
                return f"unknown key (did you mean {close[0]!r}?)"
        return "unknown key"
    if kind in _TOML_TYPES:
        return f"must be {_TOML_TYPES[kind]}, not {_toml_type(value)}"
    if kind == "literal_error":
        shown = f", not {value!r}" if isinstance(value, str) else f", not {_toml_type(value)}"
        return f"must be {ctx['expected']}{shown}"
    bounds = {
        "greater_than": ">",
        "greater_than_equal": ">=",
        "less_than": "<",
        "less_than_equal": "<=",
    }
    if kind in bounds:
        limit = next(iter(ctx.values()))
        if isinstance(limit, float) and limit.is_integer():
            limit = int(limit)
        return f"must be {bounds[kind]} {limit}"
    if kind == "string_too_short":
        return "must not be empty"
    if kind in ("too_short", "tuple_too_short"):
        n = ctx.get("min_length", 1)
        return "must not be empty" if n == 1 else f"must have at least {n} entries"
    if kind == "value_error":
        return str(ctx.get("error", err["msg"]))
    return str(err["msg"])


def _from_validation(source: str, exc: ValidationError) -> ConfigError:
    errors = exc.errors(include_url=False)
    failed_inside = {tuple(e["loc"][:n]) for e in errors for n in range(len(e["loc"]))}
    problems: list[Problem] = []
    for err in errors:
        if err["type"] == "too_short" and tuple(err["loc"]) in failed_inside:
            continue  # pydantic counts only the valid entries: the entry's error says it all
        base = _dotted(err["loc"])
        if err["type"] == _PROBLEMS:
            for sub, msg in err["ctx"]["problems"]:
                problems.append(Problem(_join(base, sub), msg))
        else:
            problems.append(Problem(base, _message(err)))
    return ConfigError(source, problems)


# --- secrets ------------------------------------------------------------------------------

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


def _check_hash(value: str | None) -> str | None:
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


# --- models -------------------------------------------------------------------------------


class _Model(BaseModel):
    """Strict, frozen, closed: an unknown key is a typo to report, not to ignore."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    @model_validator(mode="before")
    @classmethod
    def _lists_to_tuples(cls, data: Any) -> Any:
        # TOML arrays arrive as lists; the models hold tuples so that a Config is immutable
        if isinstance(data, dict):
            return {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
        return data


class SiteConfig(_Model):
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


class StorageConfig(_Model):
    """Where state and the journal live: SQLite for one box, PostgreSQL in production."""

    url: str = "sqlite:///var/raps.db"
    snapshot_interval_seconds: float = Field(default=60.0, gt=0)
    event_flush_seconds: float = Field(default=0.5, gt=0)

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


class CredentialsConfig(_Model):
    """Where the secret seed key is read from (systemd LoadCredential= in production)."""

    seed_key_file: str = "var/seed.key"

    @field_validator("seed_key_file")
    @classmethod
    def _expand_env(cls, v: str, info: ValidationInfo) -> str:
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


class HttpConfig(_Model):
    """The HTTP API, handheld and dispatch pages, /metrics."""

    host: str = Field(default="127.0.0.1", min_length=1)
    port: int = Field(default=8080, ge=0, le=65535)
    metrics_token: SecretStr | None = None
    # the pages' sign-in (raps.auth): cookie flags, lifetime, login rate limit
    secure_cookies: bool = True
    session_minutes: int = Field(default=720, gt=0, le=7 * 24 * 60)
    login_attempts: int = Field(default=5, ge=1)
    login_window_seconds: float = Field(default=300.0, gt=0)

    @field_validator("metrics_token")
    @classmethod
    def _long_enough(cls, v: SecretStr | None) -> SecretStr | None:
        if v is not None and len(v.get_secret_value()) < 16:
            raise ValueError("must be at least 16 characters (try `openssl rand -hex 16`)")
        return v


class MqttConfig(_Model):
    """The MQTT broker for table ratings in and winner notices out."""

    enabled: bool = False
    host: str = Field(default="127.0.0.1", min_length=1)
    port: int = Field(default=1883, ge=0, le=65535)
    client_id: str = ""  # filled with "raps-{site.id}" when not given
    username: str | None = None
    password: SecretStr | None = None
    tls: bool = False
    ca_file: str | None = None
    topic_prefix: str = "raps/v1"
    embedded: bool = False

    @field_validator("topic_prefix")
    @classmethod
    def _plain_prefix(cls, v: str) -> str:
        if not v or v.startswith("/") or v.endswith("/") or "//" in v:
            raise ValueError("must be topic levels separated by '/', like 'raps/v1'")
        if any(c in v for c in "#+\0"):
            raise ValueError("must not contain MQTT wildcards '#' or '+'")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> MqttConfig:
        problems: list[tuple[str, str]] = []
        if self.port == 0 and not self.embedded:
            problems.append(("port", "0 (a free port) is only allowed with embedded = true"))
        if self.embedded and not self.enabled:
            problems.append(("embedded", "an embedded broker needs enabled = true"))
        if self.ca_file is not None and not self.tls:
            problems.append(("ca_file", "is only used with tls = true"))
        if self.password is not None and self.username is None:
            problems.append(("password", "is given without a username"))
        if problems:
            raise _problems(problems)
        return self


class SimulateConfig(_Model):
    """A simulated floor for the demo and tests (raps.floorsim)."""

    machines: int = Field(gt=0)
    tables: int = Field(ge=0)
    players: int = Field(gt=0)
    events_per_second: float = Field(default=20.0, gt=0)
    seed: int | None = None
    warmup_seconds: float = Field(default=1200.0, ge=0)
    # the first N machines also play through simulated SAS machines and the real poller
    sas_machines: int = Field(default=0, ge=0)


def _str_or_int(v: Any) -> Any:
    """Machine banks and numbers are labels; `number = 12` is as good as `number = "12"`."""
    return str(v) if isinstance(v, int) and not isinstance(v, bool) else v


class MachineConfig(_Model):
    """One slot machine: where security walks to when it wins."""

    id: str = Field(min_length=1)
    area: str = Field(min_length=1)
    bank: str = Field(min_length=1)
    number: str = Field(min_length=1)
    game_type: str = Field(default="slot", min_length=1)
    # where it stands on the floor map (metres from the plan's top-left corner); optional,
    # but given for every machine and table or for none
    x: float | None = None
    y: float | None = None

    @field_validator("bank", "number", mode="before")
    @classmethod
    def _labels(cls, v: Any) -> Any:
        return _str_or_int(v)


class TableConfig(_Model):
    """One gaming table and its number of seats."""

    id: str = Field(min_length=1)
    area: str = Field(min_length=1)
    game_type: str = Field(default="table", min_length=1)
    seats: int = Field(default=7, ge=1)
    # the table's centre on the floor map (metres), like MachineConfig.x / .y
    x: float | None = None
    y: float | None = None


class AreaConfig(_Model):
    """An area's rectangle on the floor map (metres), for a floor with positions."""

    name: str = Field(min_length=1)
    x: float
    y: float
    width: float = Field(gt=0)
    height: float = Field(gt=0)


class FloorConfig(_Model):
    """The floor layout, simulated or listed, and the slot idle limit."""

    idle_seconds: float = Field(default=120.0, gt=0)
    simulate: SimulateConfig | None = None
    machines: tuple[MachineConfig, ...] = ()
    tables: tuple[TableConfig, ...] = ()
    areas: tuple[AreaConfig, ...] = ()

    @model_validator(mode="after")
    def _one_source(self) -> FloorConfig:
        listed = bool(self.machines or self.tables)
        if (self.simulate is None) == (not listed):
            raise _problems([("", "give either floor.simulate or floor.machines/floor.tables")])
        problems = _duplicates("machines", [m.id for m in self.machines], shown="floor.machines")
        problems += _duplicates("tables", [t.id for t in self.tables], shown="floor.tables")
        problems += self._positions()
        if problems:
            raise _problems(problems)
        return self

    @property
    def positioned(self) -> bool:
        """Whether the listed floor gives map positions (x, y) for its machines and tables."""
        placed: list[MachineConfig | TableConfig] = [*self.machines, *self.tables]
        return any(i.x is not None for i in placed)

    def _positions(self) -> list[tuple[str, str]]:
        """Map positions: x with y, on every machine and table or on none; areas need them."""
        problems: list[tuple[str, str]] = []
        items: list[tuple[str, int, MachineConfig | TableConfig]] = [
            ("machines", i, m) for i, m in enumerate(self.machines)
        ]
        items += [("tables", i, t) for i, t in enumerate(self.tables)]
        for section, i, item in items:
            if (item.x is None) != (item.y is None):
                missing = "y" if item.y is None else "x"
                problems.append((f"{section}[{i}].{missing}", "missing (x and y go together)"))
        if problems:
            return problems
        if self.positioned:
            for section, i, item in items:
                if item.x is None:
                    problems.append(
                        (
                            f"{section}[{i}]",
                            "has no x, y: give map positions for every machine and table "
                            "or for none",
                        )
                    )
                    break
        if self.areas and not self.positioned:
            problems.append(
                ("areas", "area rectangles need x, y on the floor's machines and tables")
            )
        problems += _duplicates("areas", [a.name for a in self.areas], what="name",
                                shown="floor.areas")  # fmt: skip
        known = {m.area for m in self.machines} | {t.area for t in self.tables}
        for i, a in enumerate(self.areas):
            if a.name not in known:
                problems.append((f"areas[{i}].name", f"no machine or table is in area {a.name!r}"))
        return problems


class EarnConfig(_Model):
    """How play turns into points (selector.promotion.EarnRules)."""

    points_source: Literal["computed", "events"] = "computed"
    slot_wager_per_point: int = Field(default=1000, gt=0)
    table_bet_minutes_per_point: int = Field(default=10_000, gt=0)
    slot_overrides: dict[str, Annotated[int, Field(gt=0)]] = Field(default_factory=dict)
    table_overrides: dict[str, Annotated[int, Field(gt=0)]] = Field(default_factory=dict)

    @field_validator("slot_overrides", "table_overrides")
    @classmethod
    def _keyed_by_area_or_game(cls, v: dict[str, int]) -> dict[str, int]:
        bad = [k for k in v if not k.startswith(("area:", "game:")) or k in ("area:", "game:")]
        if bad:
            raise _problems(
                [(_key_part(k), "override keys look like 'area:NAME' or 'game:TYPE'") for k in bad]
            )
        return v


def _parse_hhmm(v: Any, field: str) -> Any:
    if isinstance(v, time):
        return v
    if not isinstance(v, str):
        return v  # strict validation reports the type
    m = _HHMM.fullmatch(v)
    if m:
        hh, mm = int(m[1]), int(m[2])
        if hh == 24 and mm == 0 and field == "end":
            return time(0, 0)
        if hh < 24 and mm < 60:
            return time(hh, mm)
    upper = "24:00" if field == "end" else "23:59"
    raise ValueError(f'must be a time "HH:MM" from 00:00 to {upper}, not {v!r}')


class WindowConfig(_Model):
    """Local time of day in which points count; end 00:00 or 24:00 means midnight."""

    start: time = time(8, 0)
    end: time = time(19, 0)

    @field_validator("start", "end", mode="before")
    @classmethod
    def _hhmm(cls, v: Any, info: ValidationInfo) -> Any:
        return _parse_hhmm(v, info.field_name or "")

    @model_validator(mode="after")
    def _ordered(self) -> WindowConfig:
        if self.end != time(0, 0) and self.end <= self.start:
            raise _problems(
                [("end", f'must be after start {self.start:%H:%M} (use "24:00" for midnight)')]
            )
        return self


class PromotionConfig(_Model):
    """Who qualifies for a promotion (selector.promotion.Promotion)."""

    id: str
    name: str = ""
    threshold_points: float = Field(default=50.0, ge=0)
    window: WindowConfig = Field(default_factory=WindowConfig)
    tiers: tuple[TierName, ...] = Field(
        default=("ten", "jack", "queen", "king", "ace"), min_length=1
    )
    areas_included: tuple[str, ...] | None = None
    areas_excluded: tuple[str, ...] = ()
    pool_kinds: tuple[PoolKindName, ...] = Field(default=("slots", "tables"), min_length=1)
    min_active_seconds: float = Field(default=0.0, ge=0)

    @field_validator("id")
    @classmethod
    def _plain_id(cls, v: str) -> str:
        return _check_item_id(v)


def _check_item_id(v: str) -> str:
    if not _ITEM_ID.fullmatch(v):
        raise ValueError(f"must be letters, digits, '.', '_' and '-' only, not {v!r}")
    return v


class QuotasConfig(_Model):
    """Winners per pool in one session (seed: 6 slots + 4 tables)."""

    slots: int = Field(default=6, ge=0)
    tables: int = Field(default=4, ge=0)

    @model_validator(mode="after")
    def _some(self) -> QuotasConfig:
        if not (self.slots or self.tables):
            raise _problems([("", "at least one of slots, tables must be > 0")])
        return self


class SessionConfig(_Model):
    """A scheduled RAPS bonus jackpot session (selector.promotion.SessionRules)."""

    id: str
    promotion: str
    starts: datetime
    quotas: QuotasConfig = Field(default_factory=QuotasConfig)
    claim_seconds: float = Field(default=90.0, gt=0)
    exclude_no_shows: bool = True
    exclude_voided: bool = True
    rehearsal: bool = False

    @field_validator("id")
    @classmethod
    def _plain_id(cls, v: str) -> str:
        return _check_item_id(v)

    @field_validator("starts", mode="before")
    @classmethod
    def _iso(cls, v: Any) -> Any:
        if isinstance(v, str):
            try:
                return datetime.fromisoformat(v)
            except ValueError:
                raise ValueError(
                    f"must be an ISO 8601 date and time like '2026-04-25T18:00:00+02:00' "
                    f"or '2026-04-25 18:00', not {v!r}"
                ) from None
        if isinstance(v, date) and not isinstance(v, datetime):
            raise ValueError(f"needs a time of day too, like '{v.isoformat()}T18:00:00'")
        return v


class UserConfig(_Model):
    """A staff account for the web pages and API; secrets are stored hashed only."""

    name: str
    role: Role
    password_hash: str
    api_token_hash: str | None = None

    @field_validator("name")
    @classmethod
    def _plain_name(cls, v: str) -> str:
        if not _USER_NAME.fullmatch(v):
            raise ValueError(f"must be letters, digits, '.', '_', '@' and '-' only, not {v!r}")
        return v

    @field_validator("password_hash", "api_token_hash")
    @classmethod
    def _hashed(cls, v: str | None) -> str | None:
        return _check_hash(v)


class LoggingConfig(_Model):
    """structlog output: JSON lines for journald/Loki, or a console for humans."""

    format: Literal["json", "console"] = "console"
    level: Literal["debug", "info", "warning", "error", "critical"] = "info"

    @field_validator("level", mode="before")
    @classmethod
    def _lower(cls, v: Any) -> Any:
        return v.lower() if isinstance(v, str) else v


class SourcesConfig(_Model):
    """Floor sources the daemon runs in-process (MQTT ingest is under [mqtt])."""

    sas: tuple[SasChannelConfig, ...] = ()
    modbus: tuple[ModbusGatewayConfig, ...] = ()
    # where SAS channels and Modbus gateways keep their last meters, to rebuild games
    # missed while down
    state_dir: str = Field(default="var/sas", min_length=1)


class Config(_Model):
    """The whole daemon configuration; build the core's settings with its methods."""

    site: SiteConfig
    storage: StorageConfig = Field(default_factory=StorageConfig)
    credentials: CredentialsConfig = Field(default_factory=CredentialsConfig)
    http: HttpConfig = Field(default_factory=HttpConfig)
    mqtt: MqttConfig = Field(default_factory=MqttConfig)
    floor: FloorConfig
    sources: SourcesConfig = Field(default_factory=SourcesConfig)
    earn: EarnConfig = Field(default_factory=EarnConfig)
    # the TOML key is `promotions`; the attribute is renamed to leave promotions() free
    promotion_entries: tuple[PromotionConfig, ...] = Field(alias="promotions", min_length=1)
    sessions: tuple[SessionConfig, ...] = ()
    users: tuple[UserConfig, ...] = ()
    logging: LoggingConfig = Field(default_factory=LoggingConfig)

    _source: str = PrivateAttr(default="<config>")

    @model_validator(mode="before")
    @classmethod
    def _client_id_from_site(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        site, mqtt = data.get("site"), data.get("mqtt", {})
        if (
            isinstance(site, dict)
            and isinstance(site.get("id"), str)
            and isinstance(mqtt, dict)
            and "client_id" not in mqtt
        ):
            return {**data, "mqtt": {**mqtt, "client_id": f"raps-{site['id']}"}}
        return data

    @model_validator(mode="after")
    def _cross_checks(self) -> Config:
        problems: list[tuple[str, str]] = []
        problems += _duplicates("promotions", [p.id for p in self.promotion_entries])
        problems += _duplicates("sessions", [s.id for s in self.sessions])
        problems += _duplicates("users", [u.name for u in self.users], what="name")
        promos = {p.id: p for p in self.promotion_entries}
        zone = ZoneInfo(self.site.timezone)
        for i, s in enumerate(self.sessions):
            promo = promos.get(s.promotion)
            if promo is None:
                known = ", ".join(repr(k) for k in promos)
                problems.append(
                    (
                        f"sessions[{i}].promotion",
                        f"no promotion has id {s.promotion!r} (ids: {known})",
                    )
                )
            else:
                for kind in ("slots", "tables"):
                    if getattr(s.quotas, kind) and kind not in promo.pool_kinds:
                        problems.append(
                            (
                                f"sessions[{i}].quotas.{kind}",
                                f"promotion {promo.id!r} has no {kind} pool "
                                f"(pool_kinds = {list(promo.pool_kinds)})",
                            )
                        )
            if s.starts.tzinfo is None:
                there = s.starts.replace(tzinfo=zone)
                back = there.astimezone(UTC).astimezone(zone).replace(tzinfo=None)
                if back != s.starts:
                    problems.append(
                        (
                            f"sessions[{i}].starts",
                            f"{s.starts:%Y-%m-%d %H:%M} does not exist in {self.site.timezone} "
                            "(clocks change then); give another time or an explicit offset",
                        )
                    )
        problems += self._layout_references()
        problems += self._sas_references()
        if problems:
            raise _problems(problems)
        return self

    def _sas_references(self) -> list[tuple[str, str]]:
        """SAS channels and Modbus gateways name machines of the floor, each once only."""
        problems = _duplicates("sources.sas", [c.name for c in self.sources.sas], what="name")
        problems += _duplicates(
            "sources.modbus", [g.name for g in self.sources.modbus], what="name"
        )
        machines = self.layout().machines
        seen: dict[str, str] = {}
        feeds: list[tuple[str, int, str, Sequence[Any]]] = [
            ("sas", i, ch.name, ch.machines) for i, ch in enumerate(self.sources.sas)
        ]
        feeds += [("modbus", i, g.name, g.machines) for i, g in enumerate(self.sources.modbus)]
        for kind, i, name, listed in feeds:
            for j, m in enumerate(listed):
                key = f"sources.{kind}[{i}].machines[{j}].machine"
                if m.machine not in machines:
                    problems.append((key, f"no machine {m.machine!r} on the floor"))
                elif m.machine in seen:
                    problems.append((key, f"{m.machine!r} is already fed by {seen[m.machine]}"))
                else:
                    seen[m.machine] = f"{kind} {name}"
        return problems

    def _layout_references(self) -> list[tuple[str, str]]:
        """Areas and game types named in rules must exist, or a typo silently does nothing."""
        layout = self.layout()
        areas = layout.areas()
        games = {
            "slot_overrides": {m.game_type for m in layout.machines.values()},
            "table_overrides": {t.game_type for t in layout.tables.values()},
        }
        known = ", ".join(repr(a) for a in sorted(areas))
        problems: list[tuple[str, str]] = []
        for i, p in enumerate(self.promotion_entries):
            for field in ("areas_included", "areas_excluded"):
                for j, area in enumerate(getattr(p, field) or ()):
                    if area not in areas:
                        problems.append(
                            (
                                f"promotions[{i}].{field}[{j}]",
                                f"no machine or table is in area {area!r} (areas: {known})",
                            )
                        )
        for field, game_types in games.items():
            for key in getattr(self.earn, field):
                kind, _, name = key.partition(":")
                path = f"earn.{field}.{_key_part(key)}"
                if kind == "area" and name not in areas:
                    problems.append((path, f"no machine or table is in area {name!r}"))
                elif kind == "game" and name not in game_types:
                    what = "machine" if field == "slot_overrides" else "table"
                    problems.append((path, f"no {what} has game_type {name!r}"))
        return problems

    # --- the core's settings ------------------------------------------------------------

    @property
    def source(self) -> str:
        """The file this config was read from (for messages)."""
        return self._source

    def _core(self, key: str, build: typing.Callable[[], _T]) -> _T:
        try:
            return build()
        except ValueError as e:
            raise ConfigError(self._source, [Problem(key, str(e))]) from e

    def promotions_by_id(self) -> dict[str, PromotionConfig]:
        return {p.id: p for p in self.promotion_entries}

    def promotions(self) -> list[Promotion]:
        """The core's Promotion for every [[promotions]] entry, windows in site time."""
        tz = self.site.timezone
        out = []
        for i, p in enumerate(self.promotion_entries):
            out.append(self._core(f"promotions[{i}]", functools.partial(_promotion, p, tz)))
        return out

    def earn_rules(self) -> EarnRules:
        e = self.earn
        return self._core(
            "earn",
            lambda: EarnRules(
                points_source=e.points_source,
                slot_wager_per_point=e.slot_wager_per_point,
                table_bet_minutes_per_point=e.table_bet_minutes_per_point,
                slot_overrides=dict(e.slot_overrides),
                table_overrides=dict(e.table_overrides),
            ),
        )

    def session(self, session_id: str) -> SessionConfig:
        """The [[sessions]] entry with this id (KeyError if there is none)."""
        for s in self.sessions:
            if s.id == session_id:
                return s
        raise KeyError(session_id)

    def session_rules(self, session: SessionConfig | str) -> SessionRules:
        s = self.session(session) if isinstance(session, str) else session
        return self._core(
            f"sessions[{self._index(s)}]",
            lambda: SessionRules(
                quotas={PoolKind.SLOTS: s.quotas.slots, PoolKind.TABLES: s.quotas.tables},
                claim_seconds=s.claim_seconds,
                exclude_no_shows=s.exclude_no_shows,
                exclude_voided=s.exclude_voided,
            ),
        )

    def session_start(self, session: SessionConfig | str) -> datetime:
        """When the session starts, always timezone-aware (naive means site local time)."""
        s = self.session(session) if isinstance(session, str) else session
        if s.starts.tzinfo is None:
            return s.starts.replace(tzinfo=ZoneInfo(self.site.timezone))
        return s.starts

    def layout(self) -> FloorLayout:
        """The floor's machines and tables: the listed ones, or the simulator's."""
        f = self.floor
        if f.simulate is not None:
            from raps.floorsim import demo_layout

            sim = f.simulate
            return self._core("floor.simulate", lambda: demo_layout(sim.machines, sim.tables))
        return self._core(
            "floor",
            lambda: FloorLayout(
                [Machine(m.id, m.area, m.bank, m.number, m.game_type) for m in f.machines],
                [Table(t.id, t.area, t.game_type, t.seats) for t in f.tables],
            ),
        )

    def _index(self, s: SessionConfig) -> int:
        return next((i for i, x in enumerate(self.sessions) if x is s), -1)


def _duplicates(
    section: str, ids: Sequence[str], what: str = "id", shown: str = ""
) -> list[tuple[str, str]]:
    """Problems for repeated ids; `shown` is the section's full path, for the message."""
    first: dict[str, int] = {}
    out: list[tuple[str, str]] = []
    for i, x in enumerate(ids):
        if x in first:
            see = f"{shown or section}[{first[x]}]"
            out.append((f"{section}[{i}].{what}", f"duplicate {what} {x!r} (see {see})"))
        first.setdefault(x, i)
    return out


def _promotion(p: PromotionConfig, tz: str) -> Promotion:
    return Promotion(
        promotion_id=p.id,
        name=p.name or p.id,
        threshold_points=p.threshold_points,
        window=QualifyingWindow(tz=tz, start=p.window.start, end=p.window.end),
        tiers=frozenset(Tier(t) for t in p.tiers),
        areas_included=None if p.areas_included is None else frozenset(p.areas_included),
        areas_excluded=frozenset(p.areas_excluded),
        pool_kinds=frozenset(PoolKind(k) for k in p.pool_kinds),
        min_active_seconds=p.min_active_seconds,
    )


# --- loading ------------------------------------------------------------------------------

_TOML_POS = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")


def parse_config(
    text: str, source: str = "<string>", env: Mapping[str, str] | None = None
) -> Config:
    """Validate TOML text; `source` names it in errors, `env` replaces os.environ."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        msg = str(e)
        m = _TOML_POS.search(msg)
        line, col = (int(m[1]), int(m[2])) if m else (None, None)
        reason = _TOML_POS.sub("", msg)
        raise ConfigError(
            source, [Problem("", f"TOML syntax error: {reason}")], line=line, column=col
        ) from None
    context = {"env": os.environ if env is None else env}
    try:
        config = Config.model_validate(data, context=context)
    except ValidationError as e:
        raise _from_validation(source, e) from None
    config._source = source
    return config


def load_config(path: str | Path, env: Mapping[str, str] | None = None) -> Config:
    """Read and validate a config file; any problem raises ConfigError naming the file."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(source, [Problem("", "no such file")]) from None
    except UnicodeDecodeError as e:
        raise ConfigError(source, [Problem("", f"not UTF-8 text ({e.reason})")]) from None
    except OSError as e:
        raise ConfigError(source, [Problem("", f"cannot read: {e.strerror}")]) from None
    return parse_config(text, source, env)

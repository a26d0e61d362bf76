"""Config errors in the words of the file: ``FILE: dotted.key[0].path: message``.

pydantic's errors name Python types and locations; an operator needs TOML words and the
key to fix, every problem at once, secrets never echoed.  This turns a ValidationError
into a ConfigError that says exactly that.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime, time
from typing import Annotated, Any, NamedTuple

from pydantic import BaseModel, ValidationError

from adapters.wire.settings import KEY_PROBLEMS

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


class Problem(NamedTuple):
    """One thing wrong with a config: the dotted key path and what is wrong with it."""

    key: str
    message: str


class KeyedError(ValueError):
    """A value the core refused, with the config key it came from (e.g. the plan of the
    ticket sections names the draw that brings a problem in)."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


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


def key_part(part: str | int) -> str:
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
        out = _join(out, key_part(part))
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


def _model_at(root: type[BaseModel], loc: Sequence[str | int]) -> type[BaseModel] | None:
    """The config model that sits at a location, to suggest the key that was meant."""
    model: type[BaseModel] | None = root
    for part in loc:
        if isinstance(part, int):
            continue
        keys = _toml_keys(model) if model is not None else {}
        if part not in keys:
            return None
        found = _unwrap(keys[part].annotation)
        model = found if isinstance(found, type) and issubclass(found, BaseModel) else None
    return model


def _message(root: type[BaseModel], err: Mapping[str, Any]) -> str:
    """One pydantic error in the words of a config file (TOML types, no Python jargon)."""
    kind: str = err["type"]
    ctx: Mapping[str, Any] = err.get("ctx") or {}
    loc = tuple(err["loc"])
    value = err.get("input")
    if kind == "missing":
        hint = _MISSING_HINTS.get(_dotted(loc))
        return f"missing ({hint})" if hint else "missing"
    if kind == "extra_forbidden":
        parent = _model_at(root, loc[:-1])
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


def from_validation(source: str, exc: ValidationError, root: type[BaseModel]) -> ConfigError:
    """The ConfigError of a failed validation of `root` (the top model, for key hints)."""
    errors = exc.errors(include_url=False)
    failed_inside = {tuple(e["loc"][:n]) for e in errors for n in range(len(e["loc"]))}
    problems: list[Problem] = []
    for err in errors:
        if err["type"] == "too_short" and tuple(err["loc"]) in failed_inside:
            continue  # pydantic counts only the valid entries: the entry's error says it all
        base = _dotted(err["loc"])
        if err["type"] == KEY_PROBLEMS:
            for sub, msg in err["ctx"]["problems"]:
                problems.append(Problem(_join(base, sub), msg))
        else:
            problems.append(Problem(base, _message(root, err)))
    return ConfigError(source, problems)

"""msgspec Structs generated from the published JSON Schemas: the decoder's fast path.

The JSON Schemas (adapters/mqtt/schemas, adapters/tables/schemas) stay the contract with
the floor systems.  Each one is turned here, at start, into a msgspec Struct whose field
types and constraints say what the schema says, so one C call parses and validates a
payload (about 1 us, against ~15 us for JSON parsing + the compiled schema + the event
conversion).  Generated, not hand-written: the two cannot drift, and a schema keyword
this does not know raises UnsupportedSchema (that type then takes the reference path).

What msgspec cannot say is checked after the decode, by `FastType.fields`: JSON Schema's
"integer" also accepts 3.0 (the struct takes int | float, a float with a fraction is
refused), and uniqueItems.  tests/test_mqtt_decode_structs.py checks the Structs accept
exactly what jsonschema accepts, on generated valid and invalid payloads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union

import msgspec

from adapters.mqtt.compiled_schema import UnsupportedSchema

_ANNOTATIONS = frozenset({"description", "title", "examples", "default", "$comment"})
_PLAIN, _INTEGER, _UNIQUE = range(3)  # what a field needs after the decode


@dataclass(frozen=True, slots=True)
class FastType:
    """One payload type's Struct and which of its fields need a check after the decode."""

    name: str
    struct: type[msgspec.Struct]
    integers: tuple[str, ...]  # JSON Schema "integer": 3.0 is 3, 2.5 is refused
    uniques: tuple[str, ...]  # uniqueItems arrays


def _bounds(schema: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, meta in (("minimum", "ge"), ("maximum", "le")):
        value = schema.get(key)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise UnsupportedSchema(f"{key} must be a number")
            out[meta] = value
    if "le" not in out:
        # msgspec refuses 1e400 (inf), JSON Schema takes it when nothing bounds it
        raise UnsupportedSchema("a number without a maximum")
    return out


def _string(schema: Mapping[str, Any]) -> Any:
    meta: dict[str, Any] = {}
    if "minLength" in schema:
        meta["min_length"] = int(schema["minLength"])
    if "maxLength" in schema:
        meta["max_length"] = int(schema["maxLength"])
    if "pattern" in schema:
        meta["pattern"] = schema["pattern"]  # msgspec uses re.search, as jsonschema does
    return Annotated[str, msgspec.Meta(**meta)] if meta else str


def _enum(options: list[Any]) -> Any:
    if not options or not all(isinstance(o, str) for o in options):
        raise UnsupportedSchema("an enum of other than strings")
    return Literal[tuple(options)]


def _field_type(schema: Any) -> tuple[Any, int]:
    """The msgspec type of one property's schema, and its after-decode check."""
    if not isinstance(schema, Mapping):
        raise UnsupportedSchema(f"property schema {schema!r}")
    keys = set(schema) - _ANNOTATIONS
    kind = schema.get("type")
    if keys == {"enum"}:
        return _enum(list(schema["enum"])), _PLAIN
    if keys == {"const"} and isinstance(schema["const"], str):
        return Literal[schema["const"]], _PLAIN
    if kind == "string" and keys <= {"type", "minLength", "maxLength", "pattern"}:
        return _string(schema), _PLAIN
    if kind == ["string", "null"] and keys <= {"type", "minLength", "maxLength", "pattern"}:
        return Union[_string(schema), None], _PLAIN  # noqa: UP007 (a runtime type)
    if kind in ("integer", "number") and keys <= {"type", "minimum", "maximum"}:
        meta = msgspec.Meta(**_bounds(schema))
        # int | float keeps 5 an int and 5.0 a float, as json.loads does
        number = Union[Annotated[int, meta], Annotated[float, meta]]  # noqa: UP007
        return number, _INTEGER if kind == "integer" else _PLAIN
    if kind == "boolean" and keys == {"type"}:
        return bool, _PLAIN
    if kind == "array" and keys <= {"type", "maxItems", "minItems", "uniqueItems", "items"}:
        item, check = _field_type(schema.get("items", {}))
        if check != _PLAIN:
            raise UnsupportedSchema("array items that need a check after the decode")
        lo, hi = schema.get("minItems"), schema.get("maxItems")
        array: Any = list[item]  # type: ignore[valid-type]
        if lo is not None or hi is not None:
            low = None if lo is None else int(lo)
            high = None if hi is None else int(hi)
            array = Annotated[array, msgspec.Meta(min_length=low, max_length=high)]
        return array, _UNIQUE if schema.get("uniqueItems") else _PLAIN
    raise UnsupportedSchema(f"property schema with {sorted(keys)}")


def fast_type(name: str, schema: Mapping[str, Any]) -> FastType:
    """The Struct of one payload schema, tagged by its `type` const (the union's tag)."""
    keys = set(schema) - _ANNOTATIONS - {"$schema", "$id"}
    if schema.get("type") != "object" or schema.get("additionalProperties") is not False:
        raise UnsupportedSchema("a payload schema must be a closed object")
    if not keys <= {"type", "required", "properties", "additionalProperties"}:
        raise UnsupportedSchema(f"payload keywords {sorted(keys)}")
    props: Mapping[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", ()))
    if props.get("type") != {"const": name} or "type" not in required:
        raise UnsupportedSchema("the payload's type must be required and const")
    if not required <= set(props):
        raise UnsupportedSchema("a required property without a schema")
    mandatory: list[tuple[str, Any]] = []
    optional: list[tuple[str, Any, Any]] = []
    checks: list[tuple[str, int]] = []
    for field, sub in props.items():
        if field == "type":
            continue
        if not field.isidentifier() or field.startswith("_"):
            raise UnsupportedSchema(f"property name {field!r}")
        ftype, check = _field_type(sub)
        checks.append((field, check))
        if field in required:
            mandatory.append((field, ftype))
        else:  # absent stays absent: UNSET, not a default the schema does not give
            optional.append((field, Union[ftype, msgspec.UnsetType], msgspec.UNSET))  # noqa: UP007
    struct = msgspec.defstruct(
        f"Payload_{name}",
        [*mandatory, *optional],
        tag_field="type",
        tag=name,
        forbid_unknown_fields=True,
        frozen=True,
    )
    return FastType(
        name,
        struct,
        tuple(f for f, c in checks if c == _INTEGER),
        tuple(f for f, c in checks if c == _UNIQUE),
    )


def after_decode(fast: FastType, value: msgspec.Struct) -> dict[str, Any] | None:
    """The payload's fields (absent ones left out) with 3.0 as 3 in integer fields, or
    None when a check msgspec cannot do fails (a fraction in an integer, a repeat)."""
    out: dict[str, Any] = msgspec.to_builtins(value)  # absent (UNSET) fields left out
    del out["type"]  # the union's tag
    for field in fast.integers:
        v = out.get(field)
        if type(v) is float:
            if not v.is_integer():
                return None
            out[field] = int(v)
    for field in fast.uniques:
        items = out.get(field)
        if items is not None and len(set(items)) != len(items):
            return None
    return out


def union_decoder(types: list[FastType]) -> msgspec.json.Decoder[Any]:
    """One decoder for the payload types of one topic kind, told apart by `type`."""
    # a union always, even of one: msgspec does not require the tag of a lone Struct,
    # and a payload without its `type` must be refused
    target: Any = Union[(*(t.struct for t in types), _NoPayload)]
    return msgspec.json.Decoder(target)


class _NoPayload(msgspec.Struct, tag_field="type", tag="\x00", forbid_unknown_fields=True):
    """No payload's type (its tag holds NUL, which no schema allows): makes a union of one."""

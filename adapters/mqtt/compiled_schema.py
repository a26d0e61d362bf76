"""JSON Schemas compiled into plain Python checks, for payloads at the broker's full rate.

`jsonschema`'s validator costs about 90 us per payload, more than paho spends receiving
it, so each schema is compiled into a few closures; the compiled form accepts exactly
what `jsonschema` accepts (tests/test_mqtt_validate.py checks both on generated
payloads).  A schema that uses a keyword this does not know raises UnsupportedSchema,
and the caller validates with `jsonschema` alone: slower, never wrong.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any


class UnsupportedSchema(ValueError):
    """The schema uses a keyword compile_schema does not implement."""


Check = Callable[[Any], bool]
_ANNOTATIONS = frozenset(
    {"$schema", "$id", "$comment", "title", "description", "examples", "default"}
)
_TYPE_CHECKS: dict[str, Check] = {
    "string": lambda x: isinstance(x, str),
    "boolean": lambda x: isinstance(x, bool),
    "null": lambda x: x is None,
    "object": lambda x: isinstance(x, dict),
    "array": lambda x: isinstance(x, list),
    # JSON Schema: 3.0 is an integer, true is not a number
    "integer": lambda x: (
        (isinstance(x, int) and not isinstance(x, bool))
        or (isinstance(x, float) and x.is_integer())
    ),
    "number": lambda x: isinstance(x, int | float) and not isinstance(x, bool),
}


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _json_equal(a: Any, b: Any) -> bool:
    """JSON equality: 1 == 1.0, but true != 1 (as jsonschema compares)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    return type(a) is type(b) and bool(a == b)


def compile_schema(schema: Mapping[str, Any] | bool) -> Check:
    """A fast predicate equivalent to Draft202012Validator(schema).is_valid.

    Covers the keywords the committed schemas use; raises UnsupportedSchema otherwise.
    The common shapes (a typed string, number or object, a string enum) get one
    specialised closure each: this runs for every message at the broker's full rate.
    """
    if schema is True:
        return lambda _x: True
    if schema is False:
        return lambda _x: False
    if not isinstance(schema, Mapping):
        raise UnsupportedSchema(f"schema must be an object or a boolean, not {schema!r}")
    keys = set(schema) - _ANNOTATIONS
    special = _specialised(schema, keys)
    if special is not None:
        return special
    checks: list[Check] = []
    for key in keys:
        if key not in ("additionalProperties", "properties"):
            checks.append(_keyword(key, schema[key]))
    if "properties" in keys or "additionalProperties" in keys:
        checks.append(_object_check(schema, closed_type=False))
    if not checks:
        return lambda _x: True
    if len(checks) == 1:
        return checks[0]
    frozen = tuple(checks)

    return lambda x: all(c(x) for c in frozen)


_STRING_KEYS = frozenset({"type", "minLength", "maxLength", "pattern"})
_NUMBER_KEYS = frozenset({"type", "minimum", "maximum"})
_OBJECT_KEYS = frozenset({"type", "required", "properties", "additionalProperties"})


def _specialised(schema: Mapping[str, Any], keys: set[str]) -> Check | None:
    kind = schema.get("type")
    if kind == "string" and keys <= _STRING_KEYS:
        lo = int(schema.get("minLength", 0))
        hi = int(schema.get("maxLength", 1 << 62))
        pattern = schema.get("pattern")
        if pattern is None:
            return lambda x: isinstance(x, str) and lo <= len(x) <= hi
        search = re.compile(pattern).search
        return lambda x: isinstance(x, str) and lo <= len(x) <= hi and search(x) is not None
    if kind in ("integer", "number") and keys <= _NUMBER_KEYS:
        is_type = _TYPE_CHECKS[kind]
        low = schema.get("minimum")
        high = schema.get("maximum")
        if not all(v is None or _is_number(v) for v in (low, high)):
            raise UnsupportedSchema("minimum/maximum must be numbers")
        return lambda x: is_type(x) and (low is None or x >= low) and (high is None or x <= high)
    if kind == "boolean" and keys == {"type"}:
        return lambda x: isinstance(x, bool)
    if keys == {"enum"} and all(isinstance(o, str) for o in schema["enum"]):
        allowed = frozenset(schema["enum"])
        return lambda x: isinstance(x, str) and x in allowed
    if keys == {"const"} and isinstance(schema["const"], str):
        value = schema["const"]
        return lambda x: isinstance(x, str) and x == value
    if kind == "object" and keys <= _OBJECT_KEYS:
        return _object_check(schema, closed_type=True)
    return None


def _keyword(key: str, value: Any) -> Check:
    if key == "type":
        types = [value] if isinstance(value, str) else list(value)
        if not types or any(n not in _TYPE_CHECKS for n in types):
            raise UnsupportedSchema(f"type {value!r}")
        tests = tuple(_TYPE_CHECKS[n] for n in types)
        if len(tests) == 1:
            return tests[0]
        return lambda x: any(t(x) for t in tests)
    if key == "const":
        return lambda x: _json_equal(x, value)
    if key == "enum":
        options = list(value)
        if all(isinstance(o, str) for o in options):
            allowed = frozenset(options)
            return lambda x: isinstance(x, str) and x in allowed
        return lambda x: any(_json_equal(x, o) for o in options)
    if key == "required":
        names = frozenset(value)
        return lambda x: not isinstance(x, dict) or names <= x.keys()
    if key == "pattern":
        search = re.compile(value).search
        return lambda x: not isinstance(x, str) or search(x) is not None
    if key == "minLength":
        n = int(value)
        return lambda x: not isinstance(x, str) or len(x) >= n
    if key == "maxLength":
        n = int(value)
        return lambda x: not isinstance(x, str) or len(x) <= n
    if key == "minimum":
        return lambda x: not _is_number(x) or x >= value
    if key == "maximum":
        return lambda x: not _is_number(x) or x <= value
    if key == "exclusiveMinimum":
        return lambda x: not _is_number(x) or x > value
    if key == "exclusiveMaximum":
        return lambda x: not _is_number(x) or x < value
    if key == "minItems":
        n = int(value)
        return lambda x: not isinstance(x, list) or len(x) >= n
    if key == "maxItems":
        n = int(value)
        return lambda x: not isinstance(x, list) or len(x) <= n
    if key == "uniqueItems":
        if not value:
            return lambda _x: True
        return lambda x: not isinstance(x, list) or _unique(x)
    if key == "items":
        item = compile_schema(value)
        return lambda x: not isinstance(x, list) or all(item(i) for i in x)
    raise UnsupportedSchema(f"keyword {key!r}")


def _unique(items: list[Any]) -> bool:
    if all(isinstance(i, str) for i in items):
        return len(set(items)) == len(items)
    return not any(_json_equal(items[i], items[j]) for i in range(len(items)) for j in range(i))


def _object_check(schema: Mapping[str, Any], closed_type: bool) -> Check:
    """properties + additionalProperties (+ type object and required when closed_type)."""
    props: dict[str, Check] = {
        name: compile_schema(sub) for name, sub in schema.get("properties", {}).items()
    }
    extra = schema.get("additionalProperties", True)
    extra_check: Check | None = None
    if extra is not True:
        extra_check = compile_schema(extra)
    required = frozenset(schema.get("required", ()) if closed_type else ())
    get = props.get

    def check(x: Any) -> bool:
        if not isinstance(x, dict):
            return not closed_type
        if not required <= x.keys():
            return False
        for name, value in x.items():
            test = get(name)
            if test is None:
                if extra_check is not None and not extra_check(value):
                    return False
            elif not test(value):
                return False
        return True

    return check

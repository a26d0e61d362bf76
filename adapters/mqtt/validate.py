"""Inbound MQTT payloads: JSON -> JSON Schema -> topic rules -> FloorEvent, or a reason.

The JSON Schemas in `schemas/` (draft 2020-12, one per payload kind) are the contract
with the floor systems, and they are what decides here.  `jsonschema`'s validator
costs about 90 us per payload, more than paho spends receiving it, so each schema is
also compiled into a few plain Python checks (`compile_schema`); the compiled form
accepts exactly what `jsonschema` accepts (tests/test_mqtt_validate.py checks both on
generated payloads), and `jsonschema` is still asked for the human-readable detail of
every rejection.  A schema that uses a keyword the compiler does not know is
validated by `jsonschema` alone: slower, never wrong.

Every rejection carries a short `reason` (a metric label, the dead letter's reason)
and a `detail` for humans.  Nothing here raises on bad input.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from adapters.mqtt.topics import ID_FIELD, TYPES_BY_KIND, Kind
from raps.codec import EVENT_TYPES, event_to_dict
from selector.events import AnyFloorEvent, Exclusion, MachineStatus, Tier
from selector.layout import FloorLayout

SCHEMA_DIR = Path(__file__).parent / "schemas"
INBOUND_TYPES = (
    "card_inserted",
    "card_removed",
    "game_played",
    "machine_status",
    "table_rating_opened",
    "table_rating_updated",
    "table_rating_closed",
    "points_earned",
    "player_upserted",
)
MAX_PAYLOAD_BYTES = 65_536
DEFAULT_MAX_FUTURE_SECONDS = 300.0
# fields the schemas declare "integer": JSON says 250.0 is the integer 250, the core wants int
_INTEGER_FIELDS = ("wager", "win", "seat", "average_bet")
_DETAIL_MAX = 300

# Reasons given at the edge (the core adds unknown_machine, unknown_table, unknown_seat,
# negative_points and duplicate; duplicates are not dead letters).
TOO_LARGE = "too_large"
MALFORMED_JSON = "malformed_json"
UNKNOWN_TYPE = "unknown_type"
WRONG_TOPIC = "wrong_topic"
SCHEMA_VIOLATION = "schema_violation"
TOPIC_MISMATCH = "topic_mismatch"
INVALID_FIELD = "invalid_field"
FUTURE_TIMESTAMP = "future_timestamp"
RETAINED = "retained"
STALE = "stale"
UNKNOWN_CARD = "unknown_card"
UNKNOWN_MACHINE = "unknown_machine"
UNKNOWN_TABLE = "unknown_table"
UNKNOWN_SEAT = "unknown_seat"


@dataclass(frozen=True, slots=True)
class Rejection:
    reason: str
    detail: str
    event_id: str | None = None


# ------------------------------------------------------------------- schemas


@cache
def load_schema(name: str) -> dict[str, Any]:
    """One committed schema by payload kind (or 'deadletter')."""
    data: dict[str, Any] = json.loads((SCHEMA_DIR / f"{name}.json").read_text("utf-8"))
    return data


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


class SchemaSet:
    """Every inbound payload schema, each compiled and with its reference validator."""

    def __init__(self, names: tuple[str, ...] = INBOUND_TYPES) -> None:
        self.reference: dict[str, Draft202012Validator] = {}
        self.fast: dict[str, Check] = {}
        for name in names:
            schema = load_schema(name)
            Draft202012Validator.check_schema(schema)
            ref = Draft202012Validator(schema)
            self.reference[name] = ref
            try:
                self.fast[name] = compile_schema(schema)
            except UnsupportedSchema:
                self.fast[name] = ref.is_valid

    def problem(self, name: str, payload: Any) -> str | None:
        """None when the payload is valid for its kind, else what is wrong (for humans)."""
        if self.fast[name](payload):
            return None
        error = best_match(self.reference[name].iter_errors(payload))
        if error is None:  # cannot happen while fast and reference agree; stay safe
            return "rejected by the schema"
        where = "/".join(str(p) for p in error.absolute_path) or "payload"
        return f"{where}: {error.message}"


# -------------------------------------------------------------- conversion


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_decode_json = json.JSONDecoder(parse_constant=_refuse_constant).decode


def _clip(text: str) -> str:
    return text if len(text) <= _DETAIL_MAX else text[: _DETAIL_MAX - 3] + "..."


class PayloadDecoder:
    """Turns one inbound message into a FloorEvent, or a Rejection with its reason.

    `known` (the floor layout) rejects unknown machines, tables and seats at the edge,
    with the core's reason names; without it the core rejects them after the fact.
    `card_known`, when given, rejects events naming a card that is not in the player
    directory (`unknown_card`); by default such cards are accepted, see docs/mqtt.md.
    """

    def __init__(
        self,
        known: FloorLayout | None = None,
        max_future_seconds: float = DEFAULT_MAX_FUTURE_SECONDS,
        card_known: Callable[[str], bool] | None = None,
        schemas: SchemaSet | None = None,
    ) -> None:
        if not (math.isfinite(max_future_seconds) and max_future_seconds >= 0):
            raise ValueError("max_future_seconds must be a finite number >= 0")
        self.schemas = schemas or SchemaSet()
        self.known = known
        self.max_future = float(max_future_seconds)
        self.card_known = card_known

    def decode(
        self,
        kind: Kind,
        ident: str | None,
        payload: bytes,
        now_epoch: float,
        source: str,
        new_cards: set[str] | None = None,
    ) -> AnyFloorEvent | Rejection:
        """Decode, validate and convert; `new_cards` are directory cards seen in this batch."""
        if len(payload) > MAX_PAYLOAD_BYTES:
            return Rejection(
                TOO_LARGE, f"payload is {len(payload)} bytes, more than {MAX_PAYLOAD_BYTES}"
            )
        try:
            data = _decode_json(payload.decode("utf-8"))
        except UnicodeDecodeError as e:
            return Rejection(MALFORMED_JSON, _clip(f"not UTF-8 text: {e.reason} at byte {e.start}"))
        except (ValueError, RecursionError) as e:
            return Rejection(MALFORMED_JSON, _clip(f"not JSON: {e}"))
        if not isinstance(data, dict):
            return Rejection(
                SCHEMA_VIOLATION, f"payload must be a JSON object, not {type(data).__name__}"
            )
        raw_id = data.get("event_id")
        event_id = raw_id if isinstance(raw_id, str) and raw_id else None
        type_name = data.get("type")
        allowed = TYPES_BY_KIND[kind]
        if not isinstance(type_name, str) or type_name not in self.schemas.fast:
            return Rejection(
                UNKNOWN_TYPE,
                _clip(f"type {type_name!r} is none of {sorted(allowed)} on a {kind} topic"),
                event_id,
            )
        if type_name not in allowed:
            return Rejection(
                WRONG_TOPIC,
                f"{type_name} is not carried on a {kind} topic (allowed: {sorted(allowed)})",
                event_id,
            )
        problem = self.schemas.problem(type_name, data)
        if problem is not None:
            return Rejection(SCHEMA_VIOLATION, _clip(problem), event_id)
        id_field = ID_FIELD.get(kind)
        if id_field is not None and data[id_field] != ident:
            return Rejection(
                TOPIC_MISMATCH,
                _clip(f"{id_field} {data[id_field]!r} differs from the topic's {ident!r}"),
                event_id,
            )
        bad = self._unknown_place(data, kind)
        if bad is not None:
            return Rejection(*bad, event_id)
        try:
            event = _to_event(type_name, data, source)
        except (TypeError, ValueError) as e:
            return Rejection(INVALID_FIELD, _clip(str(e)), event_id)
        if event.epoch > now_epoch + self.max_future:
            ahead = event.epoch - now_epoch
            return Rejection(
                FUTURE_TIMESTAMP,
                f"ts is {ahead:.0f} s ahead of the clock (at most {self.max_future:.0f} s)",
                event_id,
            )
        if self.card_known is not None:
            card = data.get("card")
            if type_name == "player_upserted":
                if new_cards is not None:
                    new_cards.add(data["card"])
            elif (
                isinstance(card, str)
                and not (new_cards and card in new_cards)
                and not self.card_known(card)
            ):
                return Rejection(UNKNOWN_CARD, "the card is not in the player directory", event_id)
        return event

    def _unknown_place(self, data: dict[str, Any], kind: Kind) -> tuple[str, str] | None:
        layout = self.known
        if layout is None:
            return None
        if kind == Kind.SLOTS:
            if data["machine"] not in layout.machines:
                return UNKNOWN_MACHINE, _clip(f"machine {data['machine']!r} is not on the floor")
        elif kind == Kind.TABLES:
            table = layout.tables.get(data["table"])
            if table is None:
                return UNKNOWN_TABLE, _clip(f"table {data['table']!r} is not on the floor")
            if data["seat"] > table.seats:
                return UNKNOWN_SEAT, f"seat {data['seat']} (table {table.table} has {table.seats})"
        return None


def _to_event(type_name: str, data: dict[str, Any], source: str) -> AnyFloorEvent:
    """The FloorEvent of a schema-valid payload: raps.codec.event_from_dict's conversion.

    The schema has already checked every field and type, so this skips the codec's
    generic checks (a fifth of the per-message cost) and builds the event directly
    with the codec's type table; tests check both give the same event.
    """
    kwargs = dict(data)
    del kwargs["type"]
    kwargs.setdefault("source", source)
    kwargs["ts"] = datetime.fromisoformat(kwargs["ts"])
    for name in _INTEGER_FIELDS:
        value = kwargs.get(name)
        if type(value) is float:
            kwargs[name] = int(value)
    if "tier" in kwargs:
        kwargs["tier"] = Tier(kwargs["tier"])
    if "status" in kwargs:
        kwargs["status"] = MachineStatus(kwargs["status"])
    if "exclusions" in kwargs:
        kwargs["exclusions"] = frozenset(Exclusion(e) for e in kwargs["exclusions"])
    return EVENT_TYPES[type_name](**kwargs)


def event_payload(event: AnyFloorEvent, with_source: bool = False) -> dict[str, Any]:
    """A FloorEvent as its wire payload (simulators, tests): raps.codec's dict, no source.

    The topic already says where an event comes from; `source` is sent only when asked.
    """
    d = event_to_dict(event)
    if not with_source:
        d.pop("source", None)
    return d

"""Inbound MQTT payloads: JSON -> JSON Schema -> topic rules -> FloorEvent, or a reason.

The JSON Schemas of each payload family (draft 2020-12, one per payload type: the CMS
feeds' in `adapters/mqtt/schemas/`, table ratings' in `adapters/tables/schemas/`) are
the contract with the floor systems, and they are what decides here.

Two paths give one answer.  The fast path (nearly every message) decodes the bytes
straight into a msgspec Struct generated from the schema (adapters.mqtt.structs) and
builds the event; it accepts only what the reference path accepts.  Whatever it does not
accept goes down the reference path, which says why: `json` parsing, each schema
compiled into plain Python checks (adapters.mqtt.compiled_schema), and `jsonschema` for
the human-readable detail of every rejection.  Rejections are rare, so their cost is not
the ingest's; the reasons and details are exactly those of the reference path.

Every rejection carries a short `reason` (a metric label, the dead letter's reason)
and a `detail` for humans.  Nothing here raises on bad input.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import msgspec
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from adapters.mqtt.compiled_schema import Check, UnsupportedSchema, compile_schema
from adapters.mqtt.family import PayloadFamily
from adapters.mqtt.structs import FastType, after_decode, fast_type, union_decoder
from adapters.mqtt.topics import Kind
from adapters.wire.codec import EVENT_TYPES, event_to_dict, typed_fields
from selector.events import AnyFloorEvent, text_problem
from selector.layout import FloorLayout

MAX_PAYLOAD_BYTES = 65_536
DEFAULT_MAX_FUTURE_SECONDS = 300.0
# older than this is no floor event (a year-0001 ts once crashed the core): three years
# covers any broker queue, any late correction and any ticket period
DEFAULT_MAX_PAST_SECONDS = 3 * 366 * 86_400.0
# fields the schemas declare "integer": JSON says 250.0 is the integer 250, the core wants int
_INTEGER_FIELDS = ("wager", "win", "seat", "average_bet", "tickets")
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
INVALID_TEXT = "invalid_text"
PAST_TIMESTAMP = "past_timestamp"
# text fields are checked with the core's own rule (selector.events.text_problem): no
# controls (NUL, tab, newline, DEL, C1), no lone surrogates (not encodable as UTF-8: the
# journal could not write them), no line or paragraph separators


@dataclass(frozen=True, slots=True)
class Rejection:
    reason: str
    detail: str
    event_id: str | None = None


# ------------------------------------------------------------------- schemas


class SchemaSet:
    """Every payload schema of some families, each compiled and with its reference
    validator; a type name may belong to one family only."""

    def __init__(self, families: Iterable[PayloadFamily]) -> None:
        self.reference: dict[str, Draft202012Validator] = {}
        self.fast: dict[str, Check] = {}
        self.families: dict[Kind, PayloadFamily] = {}
        self.structs: dict[str, FastType] = {}
        for family in families:
            if family.kind in self.families:
                raise ValueError(f"two payload families for {family.kind} topics")
            self.families[family.kind] = family
            for name in sorted(family.types):
                schema = family.schema(name)
                Draft202012Validator.check_schema(schema)
                ref = Draft202012Validator(schema)
                self.reference[name] = ref
                try:
                    self.fast[name] = compile_schema(schema)
                except UnsupportedSchema:
                    self.fast[name] = ref.is_valid
                with contextlib.suppress(UnsupportedSchema):  # else the reference path only
                    self.structs[name] = fast_type(name, schema)
        # per topic kind: one msgspec decoder over the Structs of the types it carries
        self.decoders: dict[Kind, msgspec.json.Decoder[Any]] = {}
        self.by_struct: dict[type, FastType] = {}
        for kind, family in self.families.items():
            types = [self.structs[n] for n in sorted(family.types) if n in self.structs]
            if types:
                self.decoders[kind] = union_decoder(types)
            self.by_struct.update((t.struct, t) for t in types)

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


def clip(text: str) -> str:
    return text if len(text) <= _DETAIL_MAX else text[: _DETAIL_MAX - 3] + "..."


def clean_text(value: object) -> str | None:
    """`value` when it is a non-empty str with clean text, else None (dead letters, logs)."""
    if isinstance(value, str) and value and text_problem(value) is None:
        return value
    return None


def _fields_problem(data: dict[str, Any]) -> str | None:
    """The first text field of a schema-valid payload that is not clean text, and why."""
    for name, value in data.items():
        if isinstance(value, str):
            problem = text_problem(value)
            if problem is not None:
                return f"{name}: {problem}"
        elif isinstance(value, list):
            for n, item in enumerate(value):
                if isinstance(item, str) and (problem := text_problem(item)) is not None:
                    return f"{name}/{n}: {problem}"
    return None


class PayloadDecoder:
    """Turns one inbound message into a FloorEvent, or a Rejection with its reason.

    `schemas` holds the payload families of the sources that run (their schemas and
    edge checks).  `known` (the floor layout) lets each family's place check reject
    unknown machines, tables and seats at the edge, with the core's reason names;
    without it the core rejects them after the fact.
    `card_known`, when given, rejects events naming a card that is not in the player
    directory (`unknown_card`); by default such cards are accepted, see docs/mqtt.md.
    """

    def __init__(
        self,
        schemas: SchemaSet,
        known: FloorLayout | None = None,
        max_future_seconds: float = DEFAULT_MAX_FUTURE_SECONDS,
        card_known: Callable[[str], bool] | None = None,
        max_past_seconds: float = DEFAULT_MAX_PAST_SECONDS,
    ) -> None:
        if not (math.isfinite(max_future_seconds) and max_future_seconds >= 0):
            raise ValueError("max_future_seconds must be a finite number >= 0")
        if not (math.isfinite(max_past_seconds) and max_past_seconds > 0):
            raise ValueError("max_past_seconds must be a finite number > 0")
        self.schemas = schemas
        self.known = known
        self.max_future = float(max_future_seconds)
        self.max_past = float(max_past_seconds)
        self.card_known = card_known

    def decode(
        self,
        kind: Kind,
        ident: str | None,
        payload: bytes,
        now_epoch: float,
        source: str,
        new_cards: set[str] | None = None,
        numbered: Callable[[dict[str, Any]], object] | None = None,
    ) -> AnyFloorEvent | Rejection:
        """Decode, validate and convert; `new_cards` are directory cards seen in this batch.

        `numbered` is given every JSON object that carries a `seq` (ingest gaps,
        adapters.mqtt.gaps), valid or not: a refused message still arrived.
        """
        if len(payload) > MAX_PAYLOAD_BYTES:
            return Rejection(
                TOO_LARGE, f"payload is {len(payload)} bytes, more than {MAX_PAYLOAD_BYTES}"
            )
        event = self._fast(kind, ident, payload, now_epoch, source, new_cards, numbered)
        if event is not None:
            return event
        return self.reference(kind, ident, payload, now_epoch, source, new_cards, numbered)

    def _fast(
        self,
        kind: Kind,
        ident: str | None,
        payload: bytes,
        now_epoch: float,
        source: str,
        new_cards: set[str] | None,
        numbered: Callable[[dict[str, Any]], object] | None,
    ) -> AnyFloorEvent | None:
        """The event when every check passes, else None (the reference path says why).

        Side effects (`numbered`, `new_cards`) only once accepted, so a message that goes
        on down the reference path is counted there, once.
        """
        decoder = self.schemas.decoders.get(kind)
        if decoder is None:
            return None
        try:
            value = decoder.decode(payload)
        except msgspec.DecodeError:  # ValidationError too: not JSON, or not valid
            return None
        fast = self.schemas.by_struct[type(value)]
        data = after_decode(fast, value)
        if data is None:
            return None
        # printable ASCII without escapes (0x20-0x7E: JSON refuses raw controls) holds no
        # bad text; anything else is looked at field by field
        if not (payload.isascii() and b"\\" not in payload and b"\x7f" not in payload) and (
            _fields_problem(data) is not None
        ):
            return None
        family = self.schemas.families[kind]
        id_field = family.id_field
        if id_field is not None and data[id_field] != ident:
            return None
        if (
            self.known is not None
            and family.place_check is not None
            and family.place_check(self.known, data) is not None
        ):
            return None
        kwargs = dict(data)
        kwargs.pop("seq", None)
        kwargs.pop("boot", None)
        kwargs.setdefault("source", source)
        try:
            event = EVENT_TYPES[fast.name](**typed_fields(kwargs))
        except (TypeError, ValueError, OverflowError):
            return None
        if not now_epoch - self.max_past <= event.epoch <= now_epoch + self.max_future:
            return None
        span = getattr(event, "span_start", None)  # never after ts: bounded by it above
        if span is not None and span.timestamp() < now_epoch - self.max_past:
            return None
        if self.card_known is not None:
            if fast.name == "player_upserted":
                if new_cards is not None:
                    new_cards.add(data["card"])
            else:
                card = data.get("card")
                if (
                    card is not None
                    and not (new_cards and card in new_cards)
                    and not self.card_known(card)
                ):
                    return None
        if numbered is not None and "seq" in data:
            numbered(data)
        return event

    def reference(
        self,
        kind: Kind,
        ident: str | None,
        payload: bytes,
        now_epoch: float,
        source: str,
        new_cards: set[str] | None = None,
        numbered: Callable[[dict[str, Any]], object] | None = None,
    ) -> AnyFloorEvent | Rejection:
        """The reference path: json, the compiled schema, jsonschema's detail; every reason."""
        if len(payload) > MAX_PAYLOAD_BYTES:
            return Rejection(
                TOO_LARGE, f"payload is {len(payload)} bytes, more than {MAX_PAYLOAD_BYTES}"
            )
        try:
            data = _decode_json(payload.decode("utf-8"))
        except UnicodeDecodeError as e:
            return Rejection(MALFORMED_JSON, clip(f"not UTF-8 text: {e.reason} at byte {e.start}"))
        except (ValueError, RecursionError) as e:
            return Rejection(MALFORMED_JSON, clip(f"not JSON: {e}"))
        if not isinstance(data, dict):
            return Rejection(
                SCHEMA_VIOLATION, f"payload must be a JSON object, not {type(data).__name__}"
            )
        if numbered is not None and "seq" in data:
            numbered(data)
        event_id = clean_text(data.get("event_id"))  # a dead letter carries clean ids only
        type_name = data.get("type")
        family = self.schemas.families.get(kind)
        if family is None:
            return Rejection(WRONG_TOPIC, f"no source of {kind} payloads runs here", event_id)
        allowed = family.types
        if not isinstance(type_name, str) or type_name not in self.schemas.fast:
            return Rejection(
                UNKNOWN_TYPE,
                clip(f"type {type_name!r} is none of {sorted(allowed)} on a {kind} topic"),
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
            return Rejection(SCHEMA_VIOLATION, clip(problem), event_id)
        problem = _fields_problem(data)
        if problem is not None:
            return Rejection(INVALID_TEXT, clip(problem), event_id)
        id_field = family.id_field
        if id_field is not None and data[id_field] != ident:
            return Rejection(
                TOPIC_MISMATCH,
                clip(f"{id_field} {data[id_field]!r} differs from the topic's {ident!r}"),
                event_id,
            )
        if self.known is not None and family.place_check is not None:
            bad = family.place_check(self.known, data)
            if bad is not None:
                return Rejection(bad[0], clip(bad[1]), event_id)
        try:
            event = _to_event(type_name, data, source)
        except (TypeError, ValueError, OverflowError) as e:
            return Rejection(INVALID_FIELD, clip(str(e)), event_id)
        if event.epoch < now_epoch - self.max_past:
            behind = (now_epoch - event.epoch) / 86_400
            return Rejection(
                PAST_TIMESTAMP,
                f"ts is {behind:.0f} days behind the clock (at most "
                f"{self.max_past / 86_400:.0f} days)",
                event_id,
            )
        span = getattr(event, "span_start", None)  # never after ts (the event checks)
        if span is not None and span.timestamp() < now_epoch - self.max_past:
            behind = (now_epoch - span.timestamp()) / 86_400
            return Rejection(
                PAST_TIMESTAMP,
                f"span_start is {behind:.0f} days behind the clock (at most "
                f"{self.max_past / 86_400:.0f} days)",
                event_id,
            )
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


def _to_event(type_name: str, data: dict[str, Any], source: str) -> AnyFloorEvent:
    """The FloorEvent of a schema-valid payload: adapters.wire.codec.event_from_dict's conversion.

    The schema has already checked every field and type, so this skips the codec's
    generic checks (a fifth of the per-message cost) and builds the event directly
    with the codec's type table; tests check both give the same event.
    """
    kwargs = dict(data)
    del kwargs["type"]
    kwargs.pop("seq", None)  # the publisher's numbering: not part of the event
    kwargs.pop("boot", None)
    kwargs.setdefault("source", source)
    for name in _INTEGER_FIELDS:
        value = kwargs.get(name)
        if type(value) is float:
            kwargs[name] = int(value)
    return EVENT_TYPES[type_name](**typed_fields(kwargs))


def event_payload(event: AnyFloorEvent, with_source: bool = False) -> dict[str, Any]:
    """A FloorEvent as its wire payload (simulators, tests): adapters.wire.codec's dict, no source.

    The topic already says where an event comes from; `source` is sent only when asked.
    """
    d = event_to_dict(event)
    if not with_source:
        d.pop("source", None)
    return d

"""The msgspec fast path: the Structs agree with the published JSON Schemas, and the
decoder gives what the reference path (json + jsonschema) gives, event or reason."""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.mqtt.compiled_schema import UnsupportedSchema
from adapters.mqtt.feeds import CMS_FEEDS
from adapters.mqtt.structs import after_decode, fast_type, union_decoder
from adapters.mqtt.topics import Kind
from adapters.mqtt.validate import PayloadDecoder, Rejection, SchemaSet
from adapters.tables.payloads import TABLE_FEED
from tests.test_mqtt_validate import (
    INBOUND_TYPES,
    KIND_OF,
    LAYOUT,
    NOW,
    SCHEMAS,
    example,
    ident,
    json_value,
    load_schema,
    mutated,
)

SINGLE = {name: union_decoder([SCHEMAS.structs[name]]) for name in INBOUND_TYPES}


def struct_accepts(name: str, raw: bytes) -> bool:
    """The Struct's verdict on one payload: msgspec's checks and the after-decode ones."""
    try:
        value = SINGLE[name].decode(raw)
    except msgspec.DecodeError:
        return False
    return after_decode(SCHEMAS.structs[name], value) is not None


def encode(payload: Any) -> bytes | None:
    """Standard JSON of a payload, or None for what JSON cannot say (inf)."""
    try:
        return json.dumps(payload, allow_nan=False).encode()
    except ValueError:
        return None


def _boundaries(schema: dict[str, Any]) -> list[Any]:
    """Values at and just past each limit a property schema sets, and wrong types."""
    out: list[Any] = [None, True, "", [], {}]
    lo, hi = schema.get("minimum"), schema.get("maximum")
    for bound in (lo, hi):
        if bound is not None:
            out += [bound, bound - 1, bound + 1, float(bound), bound - 0.5, bound + 0.5]
    if schema.get("type") == "integer":
        out += [1, 3.0, 2.5, -0.0]
    if "enum" in schema:
        out += [*schema["enum"], schema["enum"][0].upper(), schema["enum"][0] + " "]
    if "const" in schema:
        out += [schema["const"], schema["const"] + "x"]
    if "minLength" in schema or "maxLength" in schema or schema.get("type") == "string":
        n, m = schema.get("minLength", 0), schema.get("maxLength", 70)
        out += ["a" * max(n - 1, 0), "a" * max(n, 1), "a" * m, "a" * (m + 1), "é" * m]
        out += ["a b", "a/b", "a+b", "#", "a\n", "\u00e9\u00e8", "x\u2028", "a\x7f", "\t"]
    if "pattern" in schema and "T" in schema["pattern"]:
        out += ["2026-04-25T17:42:05Z", "2026-04-25T17:42:05.123456789-03:30"]
        out += ["2026-04-25T17:42:05+02:00\n", "2026-04-25T17:42:05", "2026-02-30T17:42:05Z"]
    if schema.get("type") == "array":
        items = schema["items"]["enum"]
        out += [items[:2], [items[0], items[0]], items, [*items, items[0]], ["x"], [1]]
    return out


@st.composite
def near_valid(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """An example with 0-3 properties set to boundary values, dropped or added."""
    name = draw(st.sampled_from(INBOUND_TYPES))
    schema = load_schema(name)
    payload = example(name)
    for _ in range(draw(st.integers(0, 3))):
        prop = draw(st.sampled_from(sorted(schema["properties"])))
        op = draw(st.sampled_from(["set", "set", "set", "drop", "extra"]))
        if op == "set":
            payload[prop] = draw(st.sampled_from(_boundaries(schema["properties"][prop])))
        elif op == "drop":
            payload.pop(prop, None)
        else:
            payload[draw(st.sampled_from(["x", "Type", "seq ", "machine2"]))] = 1
    return name, payload


def _agree(name: str, payload: Any) -> None:
    raw = encode(payload)
    if raw is None:
        return
    assert struct_accepts(name, raw) == SCHEMAS.reference[name].is_valid(payload), raw


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(near_valid())
def test_structs_agree_with_the_schemas_near_their_limits(case: tuple[str, Any]) -> None:
    _agree(*case)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_structs_agree_with_the_schemas_on_mutated_payloads(case: tuple[str, Any]) -> None:
    _agree(*case)


def test_the_corpus_holds_valid_and_invalid_payloads() -> None:
    """The agreement is not vacuous: boundary cases fall on both sides, for every type."""
    for name in INBOUND_TYPES:
        schema = load_schema(name)
        verdicts = set()
        for prop, sub in schema["properties"].items():
            for value in _boundaries(sub):
                payload = {**example(name), prop: value}
                raw = encode(payload)
                assert raw is not None
                verdict = SCHEMAS.reference[name].is_valid(payload)
                assert struct_accepts(name, raw) == verdict, (name, prop, value)
                verdicts.add(verdict)
        assert verdicts == {True, False}, name


# -------------------------------------------- fast path == reference path


def _same(a: Any, b: Any) -> None:
    """One decode outcome equals the other: the same event with the same value types,
    or the same reason, detail and event id."""
    assert type(a) is type(b), (a, b)
    if isinstance(a, Rejection):
        assert a == b
        return
    assert a == b and a.epoch == b.epoch
    for f in dataclasses.fields(a):
        assert type(getattr(a, f.name)) is type(getattr(b, f.name)), f.name


def _both(raw: bytes, kind: Kind, decoder: PayloadDecoder, topic_id: str | None) -> None:
    seen_fast: list[dict[str, Any]] = []
    seen_ref: list[dict[str, Any]] = []
    cards_fast: set[str] = set()
    cards_ref: set[str] = set()
    now = NOW.timestamp()
    fast = decoder.decode(kind, topic_id, raw, now, "mqtt:t", cards_fast, seen_fast.append)
    ref = decoder.reference(kind, topic_id, raw, now, "mqtt:t", cards_ref, seen_ref.append)
    _same(fast, ref)
    assert cards_fast == cards_ref
    assert len(seen_fast) == len(seen_ref)
    for got, want in zip(seen_fast, seen_ref, strict=True):
        for key in ("seq", "boot", "source"):
            assert got.get(key) == want.get(key)


DECODERS = (
    PayloadDecoder(SCHEMAS, LAYOUT),
    PayloadDecoder(SCHEMAS),
    PayloadDecoder(SCHEMAS, LAYOUT, card_known={"6000012345"}.__contains__),
    PayloadDecoder(SchemaSet(CMS_FEEDS), LAYOUT, max_future_seconds=10),
)


@st.composite
def wire(draw: st.DrawFn) -> tuple[bytes, Kind, str | None]:
    """A payload's bytes and the topic it came on: mostly its own, sometimes another."""
    name, payload = draw(st.one_of(near_valid(), mutated()))
    if draw(st.booleans()) and isinstance(payload, dict):
        payload["seq"] = draw(st.sampled_from([1, 2, 7.0, 0, -1, "3", 2**53]))
        if draw(st.booleans()):
            payload["boot"] = draw(st.sampled_from(["b1", "", 5]))
    text = json.dumps(payload, ensure_ascii=draw(st.booleans()))
    raw = text.encode("utf-8", "surrogatepass")
    mangle = draw(st.sampled_from(["none", "none", "none", "cut", "byte", "dup", "space"]))
    if mangle == "cut" and raw:
        raw = raw[: draw(st.integers(0, len(raw) - 1))]
    elif mangle == "byte" and raw:
        at = draw(st.integers(0, len(raw) - 1))
        raw = raw[:at] + bytes([draw(st.integers(0, 255))]) + raw[at + 1 :]
    elif mangle == "dup" and raw.endswith(b"}") and len(raw) > 2:
        key = draw(st.sampled_from(sorted(example(name))))
        value = json.dumps(draw(json_value), allow_nan=True)
        raw = raw[:-1] + f', "{key}": {value}}}'.encode()
    elif mangle == "space":
        raw = b" \n\t" + raw + b"\r\n"
    kind = KIND_OF[name] if draw(st.integers(0, 5)) else draw(st.sampled_from(list(Kind)))
    topic_id = ident(kind) if draw(st.integers(0, 5)) else draw(st.sampled_from(["M1", "T9"]))
    return raw, kind, topic_id


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wire(), st.sampled_from(range(len(DECODERS))))
def test_fast_path_gives_what_the_reference_path_gives(
    case: tuple[bytes, Kind, str | None], which: int
) -> None:
    raw, kind, topic_id = case
    _both(raw, kind, DECODERS[which], topic_id)


@pytest.mark.parametrize("name", INBOUND_TYPES)
def test_every_example_takes_the_fast_path(name: str) -> None:
    """The fast path is not bypassed for valid payloads: its Struct decodes each example."""
    raw = json.dumps(example(name)).encode()
    assert struct_accepts(name, raw)
    kind = KIND_OF[name]
    event = DECODERS[0]._fast(kind, ident(kind), raw, NOW.timestamp(), "mqtt:t", None, None)
    assert event is not None and event.event_id == example(name)["event_id"]
    _both(raw, kind, DECODERS[0], ident(kind))


def test_repeated_keys_and_odd_text_take_the_reference_answer() -> None:
    d = DECODERS[0]
    game = json.dumps(example("game_played"))
    cases = [
        game[:-1] + ', "wager": -1, "wager": 5}',  # json keeps the last: accepted
        game[:-1] + ', "wager": 5, "wager": -1}',  # the last is invalid: refused
        game.replace('"M00017"', '"M00017", "machine": "M00017"'),
        game.replace("cms-7f3a9c1e-0001", "cms\\u0000x"),  # invalid_text
        game.replace("cms-7f3a9c1e-0001", "cms\x7fx"),  # DEL raw: invalid_text
        game.replace("cms-7f3a9c1e-0001", "cms\\ud800x"),  # a lone surrogate
        game.replace("cms-7f3a9c1e-0001", "caf\u00e9"),  # clean non-ASCII: accepted
        game.replace("250", "250.0"),  # an integer written as a float
        game.replace("250", "2.5e2"),
        game.replace("250", "1e400"),
    ]
    for text in cases:
        _both(text.encode("utf-8", "surrogatepass"), Kind.SLOTS, d, "M00017")


def test_a_schema_msgspec_cannot_say_is_refused_and_decoded_by_the_reference() -> None:
    schema = copy.deepcopy(load_schema("points_earned"))
    unbounded = copy.deepcopy(schema)
    del unbounded["properties"]["points"]["maximum"]
    odd = copy.deepcopy(schema)
    odd["properties"]["points"]["multipleOf"] = 0.5
    for bad in (unbounded, odd, {**schema, "additionalProperties": True}):
        with pytest.raises(UnsupportedSchema):
            fast_type("points_earned", bad)
    assert fast_type("points_earned", schema).integers == ("seq",)
    assert fast_type("player_upserted", load_schema("player_upserted")).uniques == ("exclusions",)


def test_every_family_type_has_its_struct_and_kind_decoder() -> None:
    full = SchemaSet((*CMS_FEEDS, TABLE_FEED))
    assert set(full.structs) == set(INBOUND_TYPES)
    assert set(full.decoders) == set(full.families)
    assert {t.name for t in full.by_struct.values()} == set(INBOUND_TYPES)

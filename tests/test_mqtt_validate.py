"""MQTT payloads: schemas, the compiled validator, reasons, topics and ordering rules."""

from __future__ import annotations

import copy
import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import hypothesis
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from adapters.mqtt.compiled_schema import compile_schema
from adapters.mqtt.feeds import CMS_FEEDS, deadletter_schema
from adapters.mqtt.ordering import OrderGuard
from adapters.mqtt.topics import Kind, TopicRef, Topics
from adapters.mqtt.validate import (
    MAX_PAYLOAD_BYTES,
    PayloadDecoder,
    Rejection,
    SchemaSet,
    _to_event,
    event_payload,
)
from adapters.tables.payloads import TABLE_FEED
from adapters.wire.codec import event_from_dict, event_to_dict
from selector.events import (
    CardInserted,
    CardRemoved,
    GamePlayed,
    MachineStatus,
    MachineStatusChanged,
    PlayerUpserted,
    PointsEarned,
    TableRatingClosed,
    TableRatingOpened,
    TableRatingUpdated,
    TicketsGranted,
    Tier,
)
from selector.layout import FloorLayout, Machine, Table

TZ = ZoneInfo("Africa/Johannesburg")
NOW = datetime(2026, 4, 25, 18, 0, tzinfo=TZ)
TOPICS = Topics("raps/v1", "gr")
LAYOUT = FloorLayout(
    [Machine("M00017", "Main", "B1", "17")],
    [Table("T012", "Pit 1", "blackjack", 7)],
)
ROOT = Path(__file__).resolve().parent.parent
KIND_OF = {
    "card_inserted": Kind.SLOTS,
    "card_removed": Kind.SLOTS,
    "game_played": Kind.SLOTS,
    "machine_status": Kind.SLOTS,
    "table_rating_opened": Kind.TABLES,
    "table_rating_updated": Kind.TABLES,
    "table_rating_closed": Kind.TABLES,
    "points_earned": Kind.POINTS,
    "player_upserted": Kind.PLAYERS,
    "tickets_granted": Kind.TICKETS,
}
FEEDS = (*CMS_FEEDS, TABLE_FEED)
SCHEMAS = SchemaSet(FEEDS)
INBOUND_TYPES = tuple(sorted(SCHEMAS.fast))


def load_schema(name: str) -> dict[str, Any]:
    """A payload type's schema from the family that owns it (or the dead letter's)."""
    if name == "deadletter":
        return deadletter_schema()
    return SCHEMAS.families[KIND_OF[name]].schema(name)


def example(name: str) -> dict[str, Any]:
    ex: dict[str, Any] = copy.deepcopy(load_schema(name)["examples"][0])
    return ex


def ident(kind: Kind) -> str | None:
    return {Kind.SLOTS: "M00017", Kind.TABLES: "T012"}.get(kind)


def decode(
    payload: dict[str, Any] | bytes | str,
    kind: Kind | None = None,
    decoder: PayloadDecoder | None = None,
    topic_id: str | None = None,
) -> Any:
    if isinstance(payload, dict):
        kind = kind or KIND_OF[payload.get("type", "")]
        raw = json.dumps(payload).encode()
    else:
        raw = payload.encode() if isinstance(payload, str) else payload
    assert kind is not None
    d = decoder or PayloadDecoder(SCHEMAS, LAYOUT)
    return d.decode(kind, topic_id or ident(kind), raw, NOW.timestamp(), "mqtt:test")


def reason(result: Any) -> str:
    assert isinstance(result, Rejection), result
    return result.reason


# ------------------------------------------------------------------ schemas


@pytest.mark.parametrize("name", [*INBOUND_TYPES, "deadletter"])
def test_every_schema_is_valid_2020_12_and_its_example_passes(name: str) -> None:
    schema = load_schema(name)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)
    for ex in schema["examples"]:
        assert Draft202012Validator(schema).is_valid(ex)
        assert compile_schema(schema)(ex)


@pytest.mark.parametrize("name", INBOUND_TYPES)
def test_example_decodes_to_the_codec_event(name: str) -> None:
    ex = example(name)
    event = decode(ex)
    assert not isinstance(event, Rejection), event
    assert event.event_id == ex["event_id"]
    reference = event_from_dict({**ex, "source": event.source})
    assert event == reference
    # back to the wire: the same fields and values (ts normalised by isoformat)
    wire = event_payload(event)
    assert "source" not in wire
    assert datetime.fromisoformat(wire["ts"]) == datetime.fromisoformat(ex["ts"])
    for key, value in ex.items():
        if key != "ts":
            assert wire[key] == value, key


def test_schemas_share_one_header() -> None:
    headers = {
        name: {k: load_schema(name)["properties"][k] for k in ("event_id", "ts", "source")}
        for name in INBOUND_TYPES
    }
    first = headers[INBOUND_TYPES[0]]
    assert all(h == first for h in headers.values())
    for name in INBOUND_TYPES:
        assert load_schema(name)["properties"]["type"] == {"const": name}
        assert {"event_id", "ts", "type"} <= set(load_schema(name)["required"])


def test_schema_files_cover_exactly_the_codec_types() -> None:
    from adapters.wire.codec import EVENT_TYPES

    cms = {p.stem for p in (ROOT / "adapters/mqtt/schemas").glob("*.json")}
    tables = {p.stem for p in (ROOT / "adapters/tables/schemas").glob("*.json")}
    assert not cms & tables
    assert cms | tables == set(EVENT_TYPES) | {"deadletter"}
    assert tables == TABLE_FEED.types
    assert set(INBOUND_TYPES) == set(EVENT_TYPES)


def test_a_kind_without_its_family_is_refused_at_the_edge() -> None:
    no_tables = PayloadDecoder(SchemaSet(CMS_FEEDS), LAYOUT)
    got = decode(example("table_rating_opened"), Kind.TABLES, decoder=no_tables)
    assert reason(got) == "wrong_topic"
    assert isinstance(decode(example("card_inserted"), decoder=no_tables), CardInserted)


def test_two_families_for_one_kind_are_refused() -> None:
    with pytest.raises(ValueError, match="two payload families"):
        SchemaSet((*CMS_FEEDS, TABLE_FEED, TABLE_FEED))


# ------------------------------------------------ compiled == jsonschema

json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**13), max_value=10**13),
    st.sampled_from([0, 1, 1.0, 2.5, -1, -0.5, 1e12, 1e13, 99, 100, 3.0]),
    st.floats(allow_nan=False, allow_infinity=True, width=64),
    st.text(max_size=8),
    st.sampled_from(
        [
            "",
            " ",
            "M00017",
            "a b",
            "x/y",
            "2026-04-25T17:42:05+02:00",
            "2026-04-25T17:42:05Z",
            "2026-04-25T17:42:05",
            "2026-04-25 17:42:05+02:00",
            "2026-04-25T17:42:05.1234567891+02:00",
            "2026-04-25T17:42:05+02:00\n",
            "queen",
            "online",
            "self_excluded",
            "game_played",
            "x" * 65,
            "y" * 129,
        ]
    ),
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=10,
)


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, Any]:
    name = draw(st.sampled_from(INBOUND_TYPES))
    payload: Any = example(name)
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(["set", "drop", "add", "exclusions", "whole"]))
        keys = sorted(payload) if isinstance(payload, dict) else []
        if op == "set" and keys:
            payload[draw(st.sampled_from(keys))] = draw(json_value)
        elif op == "drop" and keys:
            payload.pop(draw(st.sampled_from(keys)))
        elif op == "add" and isinstance(payload, dict):
            payload[draw(st.text(max_size=6))] = draw(json_value)
        elif op == "exclusions" and isinstance(payload, dict):
            payload["exclusions"] = draw(
                st.lists(
                    st.sampled_from(
                        [
                            "self_excluded",
                            "refusal_of_entry",
                            "staff_or_associate",
                            "manual_block",
                            "x",
                        ]
                    ),
                    max_size=5,
                )
            )
        elif op == "whole":
            payload = draw(json_value)
    return name, payload


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
# a control character in a field the schema lets through: both conversions refuse it
# (the codec's CodecError, the direct one the event's own ValueError)
@hypothesis.example(
    (
        "game_played",
        {
            "type": "game_played",
            "event_id": "\x1f",
            "machine": "M00017",
            "ts": "2026-04-25T17:42:05.250+02:00",
            "wager": 250,
            "win": 0,
        },
    )
)
def test_compiled_schemas_agree_with_jsonschema(case: tuple[str, Any]) -> None:
    name, payload = case
    reference = SCHEMAS.reference[name].is_valid(payload)
    assert SCHEMAS.fast[name](payload) == reference
    problem = SCHEMAS.problem(name, payload)
    assert (problem is None) == reference
    if reference:  # the direct conversion gives what adapters.wire.codec gives: the same
        # event, or a refusal (CodecError is a ValueError: which subclass says it differs)
        try:
            expected: Any = event_from_dict({"source": "s", **payload})
        except ValueError:
            expected = "refused"
        try:
            got: Any = _to_event(name, dict(payload), "s")
        except ValueError:
            got = "refused"
        assert got == expected


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "integer", "exclusiveMinimum": 0},
        {"enum": [1, True, None]},
        {"const": 1},
        {"type": "array", "items": {"type": "number"}, "uniqueItems": True, "minItems": 1},
        {"type": ["object", "null"], "additionalProperties": {"type": "string"}},
        {"required": ["a"], "properties": {"a": {"type": "string"}}},
    ],
)
@settings(max_examples=60, deadline=None)
@given(value=json_value)
def test_generic_keywords_agree_with_jsonschema(schema: dict[str, Any], value: Any) -> None:
    assert compile_schema(schema)(value) == Draft202012Validator(schema).is_valid(value)


# ---------------------------------------------------------------- reasons


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (b'{"event_id": "e1", "ts": ', "malformed_json"),
        (b"\xff\xfe{}", "malformed_json"),
        (b'{"event_id": "e1", "minutes": NaN}', "malformed_json"),
        (b"", "malformed_json"),
        (b"[1, 2]", "schema_violation"),
        (b'"text"', "schema_violation"),
        (b'{"event_id": "e1", "ts": "2026-04-25T17:00:00+02:00"}', "unknown_type"),
        (b'{"type": "jackpot_hit", "event_id": "e1"}', "unknown_type"),
        (b" " * (MAX_PAYLOAD_BYTES + 1), "too_large"),
    ],
)
def test_bad_bytes_are_rejected_with_a_reason(raw: bytes, why: str) -> None:
    assert reason(decode(raw, Kind.SLOTS)) == why


def variant(name: str, **changes: Any) -> dict[str, Any]:
    d = example(name)
    for k, v in changes.items():
        if v is ...:
            d.pop(k, None)
        else:
            d[k] = v
    return d


@pytest.mark.parametrize(
    ("payload", "why"),
    [
        (variant("game_played", wager=-5), "schema_violation"),
        (variant("game_played", wager="250"), "schema_violation"),
        (variant("game_played", wager=True), "schema_violation"),
        (variant("game_played", wager=2.5), "schema_violation"),
        (variant("game_played", machine=...), "schema_violation"),
        (variant("game_played", jackpot=1), "schema_violation"),
        (variant("card_inserted", card=6000012345), "schema_violation"),
        (variant("card_inserted", card=""), "schema_violation"),
        (variant("card_inserted", ts="2026-04-25T17:42:05"), "schema_violation"),
        (variant("card_inserted", ts="yesterday"), "schema_violation"),
        (variant("card_inserted", event_id=""), "schema_violation"),
        (variant("card_inserted", ts="2026-02-30T17:42:05+02:00"), "invalid_field"),
        (variant("machine_status", status="exploded"), "schema_violation"),
        (variant("table_rating_updated", minutes=-1), "schema_violation"),
        (variant("table_rating_opened", seat=0), "schema_violation"),
        (
            variant("player_upserted", exclusions=["self_excluded", "self_excluded"]),
            "schema_violation",
        ),
        (variant("player_upserted", tier="joker"), "schema_violation"),
        (variant("points_earned", points=-3), "schema_violation"),
        (variant("game_played", span_start="2026-04-25T17:42:05"), "schema_violation"),
        (variant("game_played", span_start="2026-04-25T17:50:00+02:00"), "invalid_field"),
        (variant("points_earned", span_start="2026-04-25T17:42:06+02:00"), "invalid_field"),
        (variant("card_inserted", machine="M99999"), "topic_mismatch"),
        (variant("table_rating_opened", table="T999"), "topic_mismatch"),
        (variant("table_rating_opened", seat=8), "unknown_seat"),
        (variant("card_inserted", ts="2026-04-25T18:05:01+02:00"), "future_timestamp"),
    ],
)
def test_payload_rules(payload: dict[str, Any], why: str) -> None:
    result = decode(payload)
    assert reason(result) == why
    assert result.detail
    assert result.event_id == payload.get("event_id") or payload.get("event_id") == ""


@pytest.mark.parametrize(
    ("changes", "where"),
    [
        ({"tickets": 0}, "tickets:"),
        ({"tickets": -3}, "tickets:"),
        ({"tickets": 2.5}, "tickets:"),
        ({"tickets": "10"}, "tickets:"),
        ({"tickets": 100_001}, "tickets:"),
        ({"card": ...}, "'card' is a required property"),
        ({"bin_id": ...}, "'bin_id' is a required property"),
        ({"bin_id": "sat cash"}, "bin_id:"),
        ({"reason": "x" * 201}, "reason:"),
        ({"points": 10}, "Additional properties"),
    ],
)
def test_malformed_tickets_granted_is_refused_with_its_reason(
    changes: dict[str, Any], where: str
) -> None:
    result = decode(variant("tickets_granted", **changes))
    assert reason(result) == "schema_violation"
    assert where in result.detail
    assert result.event_id == "cms-tkt-20417"


def test_tickets_granted_decodes_only_on_the_tickets_topic() -> None:
    event = decode(example("tickets_granted"))
    assert isinstance(event, TicketsGranted)
    assert (event.card, event.bin_id, event.tickets) == ("6000012345", "sat-cash-2025-10-04", 10)
    assert event.source == "mqtt:test" and event.reason == "birthday give-away"
    assert TOPICS.for_event("tickets_granted", example("tickets_granted")) == TOPICS.tickets
    for kind in (Kind.POINTS, Kind.PLAYERS, Kind.SLOTS):
        result = decode(example("tickets_granted"), kind)
        assert reason(result) == "wrong_topic"
        assert "tickets_granted is not carried" in result.detail
    assert reason(decode(example("points_earned"), Kind.TICKETS)) == "wrong_topic"
    ticket = decode(variant("tickets_granted", tickets=3.0, reason=...))
    assert isinstance(ticket, TicketsGranted) and type(ticket.tickets) is int
    assert ticket.reason == ""


def test_tickets_granted_from_an_unknown_card_needs_the_directory_check() -> None:
    strict = PayloadDecoder(SCHEMAS, LAYOUT, card_known={"1111"}.__contains__)
    assert reason(decode(example("tickets_granted"), decoder=strict)) == "unknown_card"
    known = decode(variant("tickets_granted", card="1111"), decoder=strict)
    assert isinstance(known, TicketsGranted)


def test_detail_says_where_and_what() -> None:
    result = decode(variant("game_played", wager=-5))
    assert isinstance(result, Rejection)
    assert result.detail.startswith("wager:") and "minimum" in result.detail


def test_type_on_the_wrong_topic() -> None:
    assert reason(decode(example("game_played"), Kind.TABLES, topic_id="T012")) == "wrong_topic"
    assert reason(decode(example("player_upserted"), Kind.POINTS)) == "wrong_topic"


def test_unknown_places_at_the_edge_only_with_a_layout() -> None:
    payload = variant("card_inserted", machine="M00099")
    assert reason(decode(payload, topic_id="M00099")) == "unknown_machine"
    no_layout = PayloadDecoder(SCHEMAS)
    assert not isinstance(decode(payload, topic_id="M00099", decoder=no_layout), Rejection)
    table = variant("table_rating_opened", table="T999")
    assert reason(decode(table, topic_id="T999")) == "unknown_table"


def test_future_limit_is_configurable_and_the_past_is_fine() -> None:
    ahead = variant("card_inserted", ts=(NOW + timedelta(seconds=30)).isoformat())
    assert not isinstance(decode(ahead), Rejection)
    strict = PayloadDecoder(SCHEMAS, LAYOUT, max_future_seconds=10)
    assert reason(decode(ahead, decoder=strict)) == "future_timestamp"
    old = variant("card_inserted", ts="2025-01-01T00:00:00Z")
    assert not isinstance(decode(old), Rejection)


def test_a_game_or_points_for_a_span_carry_its_start() -> None:
    """A game rebuilt from meters across an outage, points for a period: `span_start`
    (before `ts`), which the floor apportions; absent, the event is an instant."""
    game = decode(variant("game_played", span_start="2026-04-25T07:50:00+02:00"))
    assert isinstance(game, GamePlayed)
    assert game.span_start == datetime.fromisoformat("2026-04-25T07:50:00+02:00")
    assert event_to_dict(game)["span_start"] == "2026-04-25T07:50:00+02:00"
    assert "span_start" not in event_to_dict(decode(example("game_played")))  # type: ignore[arg-type]
    points = decode(variant("points_earned", span_start="2026-04-25T15:00:00Z"))
    assert isinstance(points, PointsEarned) and points.span_start is not None
    assert event_from_dict(event_to_dict(points)) == points


def test_json_integers_written_as_floats_become_ints() -> None:
    event = decode(variant("game_played", wager=250.0, win=0.0))
    assert isinstance(event, GamePlayed)
    assert event.wager == 250 and type(event.wager) is int and type(event.win) is int


def test_source_defaults_to_the_topic_and_may_be_given() -> None:
    assert decode(example("card_inserted")).source == "mqtt:test"
    assert decode(variant("card_inserted", source="smib-17")).source == "smib-17"


def test_unknown_cards_are_accepted_unless_a_directory_check_is_given() -> None:
    assert isinstance(decode(example("card_inserted")), CardInserted)
    known = {"1111"}
    strict = PayloadDecoder(SCHEMAS, LAYOUT, card_known=known.__contains__)
    assert reason(decode(example("card_inserted"), decoder=strict)) == "unknown_card"
    assert isinstance(decode(variant("card_inserted", card="1111"), decoder=strict), CardInserted)
    # a directory entry earlier in the same batch makes the card known
    new_cards: set[str] = set()
    up = json.dumps(example("player_upserted")).encode()
    ci = json.dumps(example("card_inserted")).encode()
    assert isinstance(
        strict.decode(Kind.PLAYERS, None, up, NOW.timestamp(), "t", new_cards), PlayerUpserted
    )
    assert isinstance(
        strict.decode(Kind.SLOTS, "M00017", ci, NOW.timestamp(), "t", new_cards), CardInserted
    )


# ----------------------------------------------------------------- topics


def test_topic_tree() -> None:
    assert TOPICS.slots("M00017") == "raps/v1/gr/slots/M00017/events"
    assert TOPICS.tables("T012") == "raps/v1/gr/tables/T012/events"
    assert TOPICS.players == "raps/v1/gr/players"
    assert TOPICS.points == "raps/v1/gr/points"
    assert TOPICS.tickets == "raps/v1/gr/tickets"
    assert TOPICS.deadletter == "raps/v1/gr/deadletter"
    assert TOPICS.draws("s1") == "raps/v1/gr/draws/s1"
    assert TOPICS.subscriptions() == [
        "raps/v1/gr/slots/+/events",
        "raps/v1/gr/tables/+/events",
        "raps/v1/gr/players",
        "raps/v1/gr/points",
        "raps/v1/gr/tickets",
    ]
    assert TOPICS.parse("raps/v1/gr/slots/M1/events") == TopicRef(Kind.SLOTS, "M1")
    assert TOPICS.parse("raps/v1/gr/tables/T1/events") == TopicRef(Kind.TABLES, "T1")
    assert TOPICS.parse("raps/v1/gr/players") == TopicRef(Kind.PLAYERS)
    assert TOPICS.parse("raps/v1/gr/points") == TopicRef(Kind.POINTS)
    assert TOPICS.parse("raps/v1/gr/tickets") == TopicRef(Kind.TICKETS)
    bad_topics = [
        "raps/v1/gr",
        "raps/v1/grx/players",
        "raps/v1/gr/slots/M1",
        "raps/v1/gr/x/M1/events",
        "raps/v1/gr/slots//events",
        "raps/v1/gr/deadletter",
        "raps/v1/gr/tickets/x",
    ]
    for bad in bad_topics:
        assert TOPICS.parse(bad) is None
    with pytest.raises(ValueError):
        TOPICS.slots("M/1")
    with pytest.raises(ValueError):
        Topics("raps/v1", "g+r")


# --------------------------------------------------------------- ordering


def at(minute: int) -> datetime:
    return NOW - timedelta(hours=1) + timedelta(minutes=minute)


def ev(cls: type[Any], n: int, minute: int, **fields: Any) -> Any:
    return cls(event_id=f"e{n}", source="t", ts=at(minute), **fields)


def test_late_card_in_after_the_card_out_is_stale() -> None:
    g = OrderGuard()
    assert g.check(ev(CardInserted, 1, 0, machine="M1", card="C1")) is None
    assert g.check(ev(CardRemoved, 2, 5, machine="M1", card="C1")) is None
    assert g.check(ev(CardInserted, 3, 1, machine="M1", card="C1")) is not None
    # the redelivered copy of an event already let through is not stale (the core dedupes)
    assert g.check(ev(CardInserted, 1, 0, machine="M1", card="C1")) is None


def test_late_card_in_elsewhere_is_stale_but_a_late_card_out_is_not() -> None:
    g = OrderGuard()
    assert g.check(ev(CardInserted, 1, 0, machine="M1", card="C1")) is None
    assert g.check(ev(CardInserted, 2, 10, machine="M2", card="C1")) is None
    # moved from M1 to M2 at 10; the M1 card-out (at 9) arrives late: harmless, applied
    assert g.check(ev(CardRemoved, 3, 9, machine="M1", card="C1")) is None
    # a card-in at M3 from before the move would take the player back: stale
    assert g.check(ev(CardInserted, 4, 5, machine="M3", card="C1")) is not None


def test_games_points_and_equal_timestamps_are_never_stale() -> None:
    g = OrderGuard()
    assert g.check(ev(CardInserted, 1, 10, machine="M1", card="C1")) is None
    assert g.check(ev(GamePlayed, 2, 0, machine="M1", wager=100)) is None
    assert g.check(ev(CardRemoved, 3, 10, machine="M1", card="C1")) is None
    assert g.check(ev(CardInserted, 4, 10, machine="M1", card="C2")) is None


def test_ratings_at_a_seat() -> None:
    g = OrderGuard()
    seat = {"table": "T1", "seat": 3}
    assert g.check(ev(TableRatingOpened, 1, 0, card="A", average_bet=100, **seat)) is None
    assert (
        g.check(ev(TableRatingClosed, 2, 30, card="A", average_bet=100, minutes=30, **seat)) is None
    )
    # a late cumulative update of the same rating is fine: figures only grow
    assert (
        g.check(ev(TableRatingUpdated, 3, 20, card="A", average_bet=100, minutes=20, **seat))
        is None
    )
    assert g.check(ev(TableRatingOpened, 4, 40, card="B", average_bet=100, **seat)) is None
    # a late open of A, or an update of A, from before B sat down: stale
    assert g.check(ev(TableRatingOpened, 5, 10, card="A", average_bet=100, **seat)) is not None
    upd = ev(TableRatingUpdated, 6, 35, card="A", average_bet=100, minutes=35, **seat)
    assert g.check(upd) is not None


def test_directory_entries_and_machine_status() -> None:
    g = OrderGuard()
    excluded = ev(PlayerUpserted, 1, 10, card="C1", tier=Tier.ACE, display_name="A",
                  age_verified=True)  # fmt: skip
    older = ev(PlayerUpserted, 2, 5, card="C1", tier=Tier.ACE, display_name="A", age_verified=True)
    assert g.check(excluded) is None
    assert g.check(older) is not None  # an older entry must not undo a newer exclusion
    down = ev(MachineStatusChanged, 3, 10, machine="M1", status=MachineStatus.OUT_OF_SERVICE)
    up = ev(MachineStatusChanged, 4, 5, machine="M1", status=MachineStatus.ONLINE)
    assert g.check(down) is None
    assert g.check(up) is not None


def test_docs_list_every_topic_kind_and_reason() -> None:
    text = (ROOT / "docs/mqtt.md").read_text()
    for name in INBOUND_TYPES:
        assert f"`{name}`" in text
    topics = (
        "slots/{machine}/events tables/{table}/events /players /points /tickets /deadletter "
        "draws/{session}/events draws/{session}/head draws/{session}/summary "
        "draws/{session}/commitment journal/head"
    )
    for topic in topics.split():
        assert topic in text
    reasons = (
        "malformed_json schema_violation unknown_type wrong_topic topic_mismatch invalid_field "
        "future_timestamp stale too_large retained unknown_machine unknown_table unknown_seat "
        "unknown_card"
    )
    for why in reasons.split():
        assert f"`{why}`" in text

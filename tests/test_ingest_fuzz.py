"""Fuzz: every inbound payload schema, broken every way, through the real ingest path.

MqttIngest.handle (what the subscriber runs on each batch before acknowledging it)
into a real Service on SQLite.  Payloads start from a valid one of each type and get
lone surrogates, NUL and control characters, huge and odd numbers, deep nesting,
non-UTF-8 bytes and random bytes.  Whatever comes in: handle returns (so the batch is
acknowledged), every message is applied, a duplicate or a dead letter, every dead
letter is counted once and is valid UTF-8 JSON of the dead-letter schema.
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.mqtt import MqttIngest, Topics
from adapters.mqtt.feeds import deadletter_schema
from adapters.mqtt.ingest import _Item
from raps.daemon import INBOUND_FEEDS
from raps.service import Service
from tests.daemon_helpers import Clock
from tests.test_mqtt_poison import make_service

SITE = "poison"
TOPICS = Topics("raps/v1", SITE)


def valid(now: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """One valid payload of every inbound type, on its topic."""
    card = "6000012345"
    return {
        "card_inserted": (TOPICS.slots("M01"), {"machine": "M01", "card": card}),
        "card_removed": (TOPICS.slots("M01"), {"machine": "M01", "card": card}),
        "game_played": (TOPICS.slots("M01"), {"machine": "M01", "wager": 250, "win": 0}),
        "machine_status": (TOPICS.slots("M01"), {"machine": "M01", "status": "online"}),
        "table_rating_opened": (TOPICS.tables("T1"),
                                {"table": "T1", "seat": 3, "card": card, "average_bet": 1000}),
        "table_rating_updated": (TOPICS.tables("T1"), {"table": "T1", "seat": 3, "card": card,
                                 "average_bet": 1000, "minutes": 5}),
        "table_rating_closed": (TOPICS.tables("T1"), {"table": "T1", "seat": 3, "card": card,
                                "average_bet": 1000, "minutes": 9}),
        "points_earned": (TOPICS.points, {"card": card, "points": 12.5}),
        "player_upserted": (TOPICS.players, {"card": card, "tier": "queen",
                            "display_name": "Thandi M.", "age_verified": True,
                            "exclusions": [], "block_reason": None}),
        "tickets_granted": (TOPICS.tickets, {"card": card, "bin_id": "b", "tickets": 1}),
    }  # fmt: skip


NASTY = ["\ud800", "a\udfffb", "\x00", "x\x00y", "\n", "\x1b[2J", "\u2028", "\x7f", "\u0085"]
NASTY_TEXT = st.sampled_from([*NASTY, "", " ", "é", "👩\u200d👩", "M01", "6000012345"])
NUMBERS = st.one_of(
    st.integers(), st.sampled_from([10**400, -(10**400), 2**63, -1, 0]),
    st.floats(allow_nan=False, allow_infinity=False), st.sampled_from([1e308, -1e308, 5e-324]),
)  # fmt: skip
VALUES = st.one_of(NASTY_TEXT, st.text(max_size=20), NUMBERS, st.booleans(), st.none(),
                   st.lists(NASTY_TEXT, max_size=3))  # fmt: skip
TS = st.one_of(st.just("NOW"), st.sampled_from([
    "0001-01-01T00:00:00+02:00", "9999-12-31T23:59:59-23:59", "0001-01-01T00:00:00Z",
    "2026-02-30T10:00:00+02:00", "2026-04-25T17:42:05", "1999-12-31T23:59:59+14:00",
]))  # fmt: skip


@st.composite
def message(draw: st.DrawFn, now: str) -> tuple[str, bytes]:
    kinds = valid(now)
    kind = draw(st.sampled_from(sorted(kinds)))
    where, fields = kinds[kind]
    body: dict[str, Any] = {"event_id": draw(st.one_of(st.just(f"e{draw(st.integers(0, 50))}"),
                            NASTY_TEXT)), "ts": now, "type": kind, **fields}  # fmt: skip
    for name in draw(st.lists(st.sampled_from([*sorted(body), "extra"]), max_size=3)):
        body[name] = draw(VALUES)
    ts = draw(TS)
    body["ts"] = now if ts == "NOW" else ts
    how = draw(st.sampled_from(["json", "json", "deep", "bytes", "latin1", "cut", "nan"]))
    if how == "deep":
        depth = draw(st.sampled_from([10, 1_000, 100_000]))
        return where, b'{"event_id":"d","x":' + b"[" * depth + b"]" * depth + b"}"
    if how == "bytes":
        return where, draw(st.binary(max_size=200))
    if how == "nan":
        return where, b'{"event_id":"n","ts":"' + now.encode() + b'","wager":NaN}'
    text = json.dumps(body, ensure_ascii=True)  # \ud800 escapes: a lone surrogate decoded
    if how == "latin1":
        return where, text.encode("ascii") + b"\xff\xfe"
    if how == "cut":
        return where, text.encode("ascii")[: draw(st.integers(0, len(text)))]
    return where, text.encode("ascii")


def rejections(svc: Service) -> float:
    total = 0.0
    for family in svc.metrics.registry.collect():
        if family.name == "raps_events_rejected":
            total += sum(
                s.value
                for s in family.samples  # duplicates are no dead letters
                if s.name.endswith("_total") and s.labels["reason"] != "duplicate"
            )
    return total


def test_every_broken_payload_ends_as_a_counted_dead_letter_or_an_event(tmp_path: Path) -> None:
    clock = Clock()
    svc = asyncio.run(make_service(tmp_path, clock))
    now = (clock() - timedelta(seconds=5)).isoformat()
    schema = deadletter_schema()
    ing = MqttIngest(svc.cfg.mqtt, SITE, svc.ingest_detailed, svc.reject, lambda up: None,
                     clock, known=svc.cfg.layout(), families=INBOUND_FEEDS)  # fmt: skip

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(message(now), min_size=1, max_size=8))
    def batch(msgs: list[tuple[str, bytes]]) -> None:
        before = (ing.applied, ing.duplicates, rejections(svc))
        dead = ing.handle([_Item(t, p) for t, p in msgs])  # never raises: the batch is acked
        applied, dups = ing.applied - before[0], ing.duplicates - before[1]
        assert applied + dups + len(dead) == len(msgs)
        assert rejections(svc) - before[2] == len(dead), "every dead letter counted once"
        for d in dead:
            letter = json.loads(d.decode("utf-8"))
            jsonschema.validate(letter, schema)

    try:
        batch()
    finally:
        asyncio.run(svc.engine.dispose())

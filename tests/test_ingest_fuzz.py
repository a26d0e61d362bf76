"""Fuzz: every inbound payload schema, broken every way, through the real ingest path.

MqttIngest.handle (what the subscriber runs on each batch before acknowledging it)
into a real Service on SQLite.  Payloads start from a valid one of each type and get
lone surrogates, NUL and control characters, huge and odd numbers, deep nesting,
non-UTF-8 bytes and random bytes.  Whatever comes in: handle returns (so the batch is
acknowledged), every message is applied, a duplicate or a dead letter, every dead
letter is counted once and is valid UTF-8 JSON of the dead-letter schema.

A leaner pass sends 200 such payloads (with `seq` and `boot` fields, broken too)
through a private Mosquitto to the running subscriber (`MqttIngest.run`, acknowledging
once durable), then connects again with the same client id: only a marker published
afterwards arrives, so nothing was left unacknowledged, and every rejection is counted.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiomqtt
import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.mqtt import MqttIngest, Topics
from adapters.mqtt.feeds import deadletter_schema
from adapters.mqtt.ingest import _Item
from raps.daemon import INBOUND_FEEDS
from raps.service import Service
from tests.daemon_helpers import Clock
from tests.mqtt_broker import private_mosquitto
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


SEQ = st.one_of(st.integers(1, 400), VALUES)
BOOT = st.one_of(st.none(), st.sampled_from(["b1", "b2"]), NASTY_TEXT, st.text(max_size=70))


@st.composite
def message(draw: st.DrawFn, now: str, numbered: bool = False) -> tuple[str, bytes]:
    kinds = valid(now)
    kind = draw(st.sampled_from(sorted(kinds)))
    where, fields = kinds[kind]
    body: dict[str, Any] = {"event_id": draw(st.one_of(st.just(f"e{draw(st.integers(0, 50))}"),
                            NASTY_TEXT)), "ts": now, "type": kind, **fields}  # fmt: skip
    if numbered:  # the publishers' sequence numbers, good and broken (adapters.mqtt.gaps)
        body["seq"] = draw(SEQ)
        if (boot := draw(BOOT)) is not None:
            body["boot"] = boot
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


# --------------------------------------------------------- through a real broker


async def through_broker(folder: Path, msgs: list[tuple[str, bytes]]) -> None:
    clock = Clock()
    svc = await make_service(folder, clock)
    try:
        with private_mosquitto() as broker:

            def subscriber() -> MqttIngest:
                return MqttIngest(svc.cfg.mqtt, SITE, svc.ingest_detailed, svc.reject,
                                  lambda up: None, clock, port=broker.port,
                                  known=svc.cfg.layout(), families=INBOUND_FEEDS,
                                  flush=svc.flush_events, room=svc.ingest_room,
                                  gap=svc.metrics.count_gap, backoff_initial=0.05,
                                  backoff_max=0.2)  # fmt: skip

            ing = subscriber()
            task = asyncio.create_task(ing.run())
            try:
                await until(lambda: ing.connected, "connect")
                async with aiomqtt.Client(broker.host, broker.port, identifier="fuzz-pub",
                                          max_inflight_messages=1000) as pub:  # fmt: skip
                    pub.pending_calls_threshold = 1_000_000
                    await asyncio.gather(*(pub.publish(t, p, qos=1) for t, p in msgs))
                await until(lambda: ing.applied + ing.duplicates + sum(ing.dead_letters.values())
                            == len(msgs), "every message handled")  # fmt: skip
                await until(lambda: ing.dead_letters_published == sum(ing.dead_letters.values()),
                            "every dead letter published")  # fmt: skip
                dead = sum(ing.dead_letters.values())
                assert ing.received == len(msgs) and ing.connects == 1, "a reconnect loop"
                assert rejections(svc) == dead, "every rejection counted once"
            finally:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
            again = subscriber()  # same client id, persistent session: unacked ones return
            task = asyncio.create_task(again.run())
            try:
                await until(lambda: again.connected, "reconnect")
                marker = json.dumps(
                    {
                        "event_id": "marker",
                        "ts": clock().isoformat(),
                        "type": "game_played",
                        "machine": "M01",
                        "wager": 100,
                    }
                )
                async with aiomqtt.Client(broker.host, broker.port, identifier="fuzz-pub2") as pub:
                    await pub.publish(TOPICS.slots("M01"), marker, qos=1)
                await until(lambda: again.applied == 1, "the marker")
                assert again.received == 1, "a fuzzed message was never acknowledged"
            finally:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
    finally:
        await svc.engine.dispose()


async def until(check: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


def test_broken_payloads_through_a_broker_are_all_acknowledged_and_counted(
    tmp_path: Path,
) -> None:
    now = (Clock()() - timedelta(seconds=5)).isoformat()
    runs = iter(range(1_000))

    @settings(max_examples=1, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(st.lists(message(now, numbered=True), min_size=200, max_size=200))
    def run(msgs: list[tuple[str, bytes]]) -> None:
        folder = tmp_path / f"run{next(runs)}"  # a shrinking rerun starts afresh
        folder.mkdir()
        asyncio.run(through_broker(folder, msgs))

    run()

"""Poison messages, bad text, core failures and a failing floor log (issue 16: 1, 3, 4, 8, 10).

In-process: the real MqttIngest into a real Service on SQLite; one test goes through
the machine's Mosquitto to show a poison message is acknowledged and what follows it
is applied.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Iterable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiomqtt
import pytest
import pytest_asyncio
import structlog
from sqlalchemy import text

from adapters.mqtt import MqttIngest, Topics
from adapters.mqtt.ingest import _Item
from adapters.mqtt.topics import Kind
from adapters.mqtt.validate import Rejection
from adapters.wire.codec import event_to_dict
from raps.config import parse_config
from raps.daemon import INBOUND_FEEDS
from raps.metrics import Metrics
from raps.seal import SeedSealer, load_key
from raps.service import Service
from raps.store.database import open_engine
from raps.store.schema import floor_event_batches
from selector.events import AnyFloorEvent, PlayerUpserted, Tier
from tests.daemon_helpers import Clock
from tests.mqtt_broker import floor_config_text, shared_or_private

pytestmark = pytest.mark.asyncio
POISON = b'{"event_id":"\\ud800","type":"bogus"}'


async def make_service(folder: Path, clock: Clock, backlog: int = 100_000) -> Service:
    toml = floor_config_text(folder, "poison", 1883)
    toml = toml.replace(
        "event_flush_seconds = 0.2", f"event_flush_seconds = 0.2\nmax_unflushed_events = {backlog}"
    )
    cfg = parse_config(toml)
    svc = Service(cfg, open_engine(cfg.storage.url), SeedSealer(load_key(folder / "seed.key")),
                  Metrics(), clock)  # fmt: skip
    await svc.start()
    return svc


@pytest_asyncio.fixture
async def svc(tmp_path: Path) -> AsyncIterator[Service]:
    s = await make_service(tmp_path, Clock())
    yield s
    await s.engine.dispose()


def ingest_for(svc: Service, **kw: object) -> MqttIngest:
    return MqttIngest(svc.cfg.mqtt, "poison", svc.ingest_detailed, svc.reject, lambda up: None,
                      svc.clock, known=svc.cfg.layout(), families=INBOUND_FEEDS, **kw)  # type: ignore[arg-type]  # fmt: skip


def topic(kind: str = "slots") -> str:
    t = Topics("raps/v1", "poison")
    return t.slots("M01") if kind == "slots" else t.players


def game(svc: Service, n: int, **changes: object) -> bytes:
    ts = (svc.clock() - timedelta(minutes=1)).isoformat()
    body = {"event_id": f"g{n}", "ts": ts, "type": "game_played", "machine": "M01",
            "wager": 1000, **changes}  # fmt: skip
    return json.dumps(body).encode()


def player(svc: Service, card: str, **changes: object) -> bytes:
    ts = (svc.clock() - timedelta(minutes=2)).isoformat()
    body = {"event_id": f"p{card}", "ts": ts, "type": "player_upserted", "card": card}
    body |= {"tier": "queen", "display_name": "Thandi M.", "age_verified": True, **changes}
    return json.dumps(body, ensure_ascii=True).encode()


def rejected(svc: Service, reason: str, source: str) -> float:
    labels = {"source": source, "reason": reason}
    return svc.metrics.registry.get_sample_value("raps_events_rejected_total", labels) or 0.0


def letters(dead: list[bytes]) -> list[dict[str, object]]:
    return [json.loads(d.decode("utf-8")) for d in dead]  # strict UTF-8: encodable


async def test_a_lone_surrogate_event_id_is_a_counted_dead_letter(svc: Service) -> None:
    ing = ingest_for(svc)
    dead = ing.handle([_Item(topic(), POISON), _Item(topic(), game(svc, 1))])
    (letter,) = letters(dead)
    assert letter["reason"] == "unknown_type" and letter["event_id"] is None
    assert letter["payload"] == POISON.decode()
    assert ing.applied == 1 and rejected(svc, "unknown_type", "mqtt-slots") == 1


async def test_poison_is_acknowledged_and_what_follows_it_applies(tmp_path: Path) -> None:
    """Through a real broker: the poison, then an exclusion; no reconnect loop, the
    exclusion applied, the dead letter out, and nothing redelivered to a new connection."""
    with shared_or_private() as (host, port):
        site = f"p{uuid.uuid4().hex[:8]}"
        cfg = parse_config(floor_config_text(tmp_path, site, port))
        clock = Clock()
        svc = Service(cfg, open_engine(cfg.storage.url),
                      SeedSealer(load_key(tmp_path / "seed.key")), Metrics(), clock)  # fmt: skip
        await svc.start()
        topics = Topics("raps/v1", site)

        def ingest() -> MqttIngest:
            return MqttIngest(cfg.mqtt, site, svc.ingest_detailed, svc.reject, lambda up: None,
                              clock, port=port, known=cfg.layout(), families=INBOUND_FEEDS,
                              flush=svc.flush_events, room=svc.ingest_room,
                              backoff_initial=0.05, backoff_max=0.2)  # fmt: skip

        ing = ingest()
        task = asyncio.create_task(ing.run())
        try:
            await until(lambda: ing.connected, "connect")
            async with aiomqtt.Client(host, port, identifier=f"pub-{site}") as pub:
                await pub.subscribe(topics.deadletter, qos=1)
                await pub.publish(topics.slots("M01"), POISON, qos=1)
                excluded = player(svc, "6000012345", exclusions=["self_excluded"])
                await pub.publish(topics.players, excluded, qos=1)
                letter = await asyncio.wait_for(anext(pub.messages), 20)
            assert json.loads(bytes(letter.payload))["event_id"] is None  # type: ignore[arg-type]
            await until(lambda: ing.applied == 1, "the exclusion applied")
            assert ing.connects == 1 and ing.dead_letters["unknown_type"] == 1
            profile = svc.floor.profile("6000012345")
            assert profile is not None and profile.exclusions
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        again = ingest()  # same client id, persistent session: anything unacked comes back
        task = asyncio.create_task(again.run())
        try:
            await until(lambda: again.connected, "reconnect")
            async with aiomqtt.Client(host, port, identifier=f"pub2-{site}") as pub:
                await pub.publish(topics.slots("M01"), game(svc, 7), qos=1)
            await until(lambda: again.applied == 1, "the marker")
            assert again.received == 1, "a message was never acknowledged"
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await svc.engine.dispose()


async def until(check: object, what: str, timeout: float = 20.0) -> None:
    async with asyncio.timeout(timeout):
        while not check():  # type: ignore[operator]
            await asyncio.sleep(0.01)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("display_name", "Thandi \ud800"),
        ("display_name", "Thandi\x00M."),
        ("display_name", "Thandi\nM."),
        ("display_name", "Thandi\u2028M."),
        ("card", "6000\x0012345"),
        ("event_id", "dir-\udfff"),
        ("block_reason", "bad\x7f"),
        ("source", "cms\x1b[31m"),
    ],
)
async def test_unclean_text_is_refused_at_the_edge(svc: Service, field: str, value: str) -> None:
    ing = ingest_for(svc)
    body = json.loads(player(svc, "6000012345"))
    body[field] = value
    dead = ing.handle([_Item(topic("players"), json.dumps(body).encode())])
    (letter,) = letters(dead)
    assert letter["reason"] == "invalid_text", letter
    assert str(letter["detail"]).startswith(f"{field}: holds U+")
    assert rejected(svc, "invalid_text", "mqtt-players") == 1
    assert ing.applied == 0 and svc.floor.profile("6000012345") is None


async def test_a_legacy_floor_log_row_with_unclean_text_is_skipped_at_replay(
    tmp_path: Path,
) -> None:
    """A row logged before the core checked text (a lone surrogate in a display name)
    no longer builds an event: the restart counts it, logs it, skips it and replays the
    rest of its batch; it never stops the daemon."""
    svc = await make_service(tmp_path, Clock())
    ev = [PlayerUpserted(event_id=f"p{n}", source="cms", ts=svc.clock(), card=f"600001234{n}",
                         tier=Tier.QUEEN, display_name="Thandi M.", age_verified=True)
          for n in range(3)]  # fmt: skip
    rows = [event_to_dict(e) for e in ev]
    rows[1]["display_name"] = "Thandi \ud800"  # as json.dumps wrote it before the check
    first = svc._event_seq + 1
    body = json.dumps(rows)
    assert "\\ud800" in body
    row = {"first_seq": first, "last_seq": first + 2, "received_at": 0.0, "body": body}
    try:
        async with svc.engine.begin() as conn:
            await conn.execute(floor_event_batches.insert().values(**row))
    finally:
        await svc.engine.dispose()
    with structlog.testing.capture_logs() as logs:
        again = await make_service(tmp_path, Clock())
    try:
        assert again.floor.profile("6000012340") and again.floor.profile("6000012342")
        assert again.floor.profile("6000012341") is None
        assert rejected(again, "refused_at_replay", "floor-log") == 1
        (line,) = [e for e in logs if e.get("reason") == "refused_at_replay"]
        assert line["seq"] == first + 1 and line["error"] == "invalid_field"
        assert again._event_seq == first + 2  # the skipped row keeps its number
    finally:
        await again.engine.dispose()


async def test_clean_non_ascii_names_still_apply(svc: Service) -> None:
    ing = ingest_for(svc)
    name = "Zoë N\u00a0Ndlovu 👩\u200d👩"
    assert ing.handle([_Item(topic("players"), player(svc, "6000012345", display_name=name))]) == []
    assert ing.applied == 1


async def test_a_year_0001_timestamp_is_refused_and_the_batch_goes_on(svc: Service) -> None:
    ing = ingest_for(svc)
    old = game(svc, 2, ts="0001-01-01T00:00:00+02:00")
    dead = ing.handle([_Item(topic(), game(svc, 1)), _Item(topic(), old),
                       _Item(topic(), game(svc, 3))])  # fmt: skip
    assert [d["reason"] for d in letters(dead)] == ["past_timestamp"]
    assert ing.applied == 2
    # a span_start as old: refused at the edge too (it once reached the core, which failed
    # on its local day after changing the idle timers and the ticket points sink)
    span = game(svc, 4, span_start="0001-01-01T00:00:00+02:00")
    (letter,) = letters(ing.handle([_Item(topic(), span), _Item(topic(), game(svc, 5))]))
    assert letter["reason"] == "past_timestamp" and letter["event_id"] == "g4", letter
    assert str(letter["detail"]).startswith("span_start is ")
    assert ing.applied == 3
    now = svc.clock().timestamp()
    decoder = ing.decoder  # the fast path (msgspec) declines it, the reference path says why
    assert decoder._fast(Kind.SLOTS, "M01", span, now, "mqtt-slots", None, None) is None
    refused = decoder.reference(Kind.SLOTS, "M01", span, now, "mqtt-slots")
    assert isinstance(refused, Rejection) and refused.reason == "past_timestamp", refused
    recent = game(svc, 6, span_start=(svc.clock() - timedelta(hours=1)).isoformat())
    assert decoder._fast(Kind.SLOTS, "M01", recent, now, "mqtt-slots", None, None) is not None


async def test_a_core_failure_dead_letters_exactly_that_event(
    svc: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The core fails on the second of three events: the first and third apply."""
    real = svc.floor.apply_many

    def apply_many(events: Iterable[AnyFloorEvent], hook: Any = None) -> int:
        def failing() -> Iterator[AnyFloorEvent]:  # raises inside the core's batch loop
            for ev in events:
                if ev.event_id == "g2":
                    raise OverflowError("date value out of range")
                yield ev

        return real(failing(), hook)

    monkeypatch.setattr(svc.floor, "apply_many", apply_many)
    ing = ingest_for(svc)
    dead = ing.handle([_Item(topic(), game(svc, n)) for n in (1, 2, 3)])
    assert [(d["reason"], d["event_id"]) for d in letters(dead)] == [("internal_error", "g2")]
    assert ing.applied == 2 and rejected(svc, "internal_error", "mqtt-slots") == 1
    assert [ev.event_id for _, _, ev in svc._unflushed] == ["g1", "g3"]
    # redelivered, the failed one is refused again (not taken for a duplicate)
    assert [d["reason"] for d in letters(ing.handle([_Item(topic(), game(svc, 2))]))] == [
        "internal_error"
    ]


async def test_an_apply_callable_that_raises_costs_only_its_event(svc: Service) -> None:
    """Should the apply callable itself fail on a run, its events are applied one by one."""

    def apply(events: list[object], label: str) -> list[str | None]:
        if any(getattr(e, "event_id", "") == "g2" for e in events):
            raise RuntimeError("boom")
        return svc.ingest_detailed(events, label)  # type: ignore[arg-type]

    ing = MqttIngest(svc.cfg.mqtt, "poison", apply, svc.reject, lambda up: None, svc.clock,
                     known=svc.cfg.layout(), families=INBOUND_FEEDS)  # fmt: skip
    dead = ing.handle([_Item(topic(), game(svc, n)) for n in (1, 2, 3)])
    assert [d["event_id"] for d in letters(dead)] == ["g2"] and ing.applied == 2


# ------------------------------------------------------------- a failing floor log


async def fail_floor_log(svc: Service, on: bool) -> None:
    """The disk is full for the floor log: a trigger aborts every batch INSERT."""
    async with svc.engine.begin() as conn:
        if on:
            await conn.execute(text(
                "CREATE TRIGGER raps_test_full BEFORE INSERT ON floor_event_batches "
                "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
            ))  # fmt: skip
        else:
            await conn.execute(text("DROP TRIGGER raps_test_full"))


async def test_floor_log_failures_are_counted_bounded_logged_once_and_not_ready(
    tmp_path: Path,
) -> None:
    clock = Clock()
    svc = await make_service(tmp_path, clock, backlog=5)  # a tiny bound for the test
    try:
        assert svc.ready() == (True, [])
        await fail_floor_log(svc, True)
        ing = ingest_for(svc)
        with structlog.testing.capture_logs() as logs:
            assert ing.handle([_Item(topic(), game(svc, n)) for n in range(3)]) == []
            for _ in range(20):  # 4 s of 0.2 s flushes, then a minute more
                with pytest.raises(Exception):  # noqa: B017 - FloorLogUnavailable
                    await svc.flush_events()
                clock.advance(0.2)
            clock.advance(60)
            with pytest.raises(Exception):  # noqa: B017
                await svc.flush_events()
            dead = ing.handle([_Item(topic(), game(svc, n)) for n in range(3, 6)])
            assert svc.ready() == (False, ["floor_log"])
            await fail_floor_log(svc, False)
            await svc.flush_events()
        assert [d["reason"] for d in letters(dead)] == ["floor_log_backlog"]
        registry = svc.metrics.registry
        assert registry.get_sample_value("raps_floor_log_write_failures_total") == 21
        outages = registry.get_sample_value("raps_storage_outages_total", {"path": "floor_log"})
        assert outages == 1
        said = [e["event"] for e in logs if e.get("storage") == "floor log"]
        assert said == ["floor log down", "floor log still down", "floor log up again"]
        assert not any(e.get("exc_info") for e in logs), "no tracebacks"
        assert svc.ready() == (True, [])
        assert registry.get_sample_value("raps_floor_log_backlog_events") == 0
    finally:
        await svc.engine.dispose()


async def test_database_outage_is_one_line_per_state_change(tmp_path: Path) -> None:
    clock = Clock()
    svc = await make_service(tmp_path, clock)
    db = Path(svc.cfg.storage.url.removeprefix("sqlite:///"))
    try:
        with structlog.testing.capture_logs() as logs:
            await svc.engine.dispose()
            db.rename(db.with_suffix(".away"))
            db.mkdir()  # a directory where the database was: it cannot be opened
            for _ in range(30):
                assert not await svc.probe_storage()
                clock.advance(5)  # 150 s down: still-down lines at 60 s and 120 s
            db.rmdir()
            db.with_suffix(".away").rename(db)
            assert await svc.probe_storage()
        said = [e["event"] for e in logs if e.get("storage") == "database"]
        assert said == ["database down", "database still down", "database still down",
                        "database up again"]  # fmt: skip
        assert (
            svc.metrics.registry.get_sample_value(
                "raps_storage_outages_total", {"path": "database"}
            )
            == 1
        )
    finally:
        await svc.engine.dispose()

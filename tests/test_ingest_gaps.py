"""Ingest gaps: messages the broker dropped are counted from the publishers' `seq` numbers.

Issue 16, defect 9: with Mosquitto's defaults 9,000 of 10,000 messages queued for a
daemon that was down were dropped by the broker, and nothing showed it.  Here:

- the rules of adapters.mqtt.gaps (in order, a gap, a redelivery, a publisher restart
  with or without a `boot` id, a late message of the boot before);
- the ingest counts a gap per source in the daemon's metrics, logs it once, and a
  payload with `seq`/`boot` is the same event as one without (backward compatible);
- a real Mosquitto started with the shipped dashboards/mosquitto/raps.conf keeps a
  10,000-message backlog for an offline `raps run` daemon across a broker restart (all
  arrive, no gap), and one with Mosquitto's defaults drops most of it, and the daemon
  counts exactly the dropped ones as a gap;
- where each stream was survives a restart (a kill -9 too), so messages lost while the
  daemon was down are counted at the first message after it.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiomqtt
import httpx
import pytest
import structlog
from prometheus_client.parser import text_string_to_metric_families

from adapters.mqtt import Topics
from adapters.mqtt.feeds import CMS_FEEDS
from adapters.mqtt.gaps import SequenceGaps
from adapters.mqtt.ingest import MqttIngest, _Item
from adapters.mqtt.topics import Kind
from adapters.mqtt.validate import PayloadDecoder, Rejection, SchemaSet
from adapters.tables.payloads import TABLE_FEED
from raps.config import parse_config
from raps.metrics import Metrics
from raps.seal import SeedSealer, load_key
from raps.service import Service
from raps.store.database import open_engine
from tests.mqtt_broker import PrivateMosquitto, floor_config_text
from tests.test_ingest_durable import RapsDaemon, durable_events, wait_for

ROOT = Path(__file__).resolve().parents[1]
SNIPPET = ROOT / "dashboards" / "mosquitto" / "raps.conf"
BACKLOG = 10_000


def msg(seq: int | float | None = None, boot: str | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = dict(extra)
    if seq is not None:
        out["seq"] = seq
    if boot is not None:
        out["boot"] = boot
    return out


# ------------------------------------------------------------------- the rules


def test_in_order_then_a_gap_counts_the_numbers_between() -> None:
    seen: list[tuple[str, int]] = []
    gaps = SequenceGaps(lambda source, n: seen.append((source, n)))
    assert [gaps.observe("mqtt-slots", "t", msg(n)) for n in (1, 2, 3)] == [0, 0, 0]
    assert gaps.observe("mqtt-slots", "t", msg(8)) == 4
    assert gaps.observe("mqtt-slots", "t", msg(9)) == 0
    assert seen == [("mqtt-slots", 4)] and gaps.missing == 4 and gaps.gaps == 1


def test_the_first_message_since_start_sets_the_place() -> None:
    gaps = SequenceGaps()
    assert gaps.observe("mqtt-slots", "t", msg(5000)) == 0
    assert gaps.observe("mqtt-slots", "t", msg(5001)) == 0


def test_redeliveries_and_late_copies_are_not_gaps_and_do_not_move_back() -> None:
    gaps = SequenceGaps()
    for n in (1, 2, 3, 4, 2, 3, 4, 5):
        assert gaps.observe("mqtt-slots", "t", msg(n)) == 0
    assert gaps.observe("mqtt-slots", "t", msg(7)) == 1  # 6 missing, not 3


def test_a_publisher_restart_without_boot_counts_from_one_again() -> None:
    gaps = SequenceGaps()
    for n in range(1, 101):
        gaps.observe("mqtt-points", "t", msg(n))
    assert gaps.observe("mqtt-points", "t", msg(1)) == 0
    assert gaps.observe("mqtt-points", "t", msg(2)) == 0
    assert gaps.observe("mqtt-points", "t", msg(4)) == 1
    assert gaps.restarts == 1


def test_a_new_boot_starts_a_new_sequence_and_the_old_boots_late_messages_are_ignored() -> None:
    gaps = SequenceGaps()
    for n in range(1, 11):
        gaps.observe("mqtt-slots", "t", msg(n, "boot-a"))
    assert gaps.observe("mqtt-slots", "t", msg(1, "boot-b")) == 0
    assert gaps.observe("mqtt-slots", "t", msg(11, "boot-a")) == 0  # late, from before
    assert gaps.observe("mqtt-slots", "t", msg(2, "boot-b")) == 0
    assert gaps.observe("mqtt-slots", "t", msg(5, "boot-b")) == 2
    assert gaps.restarts == 1 and gaps.missing == 2


def test_streams_are_per_topic_and_per_source() -> None:
    gaps = SequenceGaps()
    gaps.observe("mqtt-slots", "a", msg(1))
    gaps.observe("mqtt-slots", "b", msg(10))
    gaps.observe("mqtt-players", "p", msg(1, source="cms-1"))
    gaps.observe("mqtt-players", "p", msg(50, source="cms-2"))
    assert gaps.observe("mqtt-slots", "a", msg(2)) == 0
    assert gaps.observe("mqtt-slots", "b", msg(11)) == 0
    assert gaps.observe("mqtt-players", "p", msg(2, source="cms-1")) == 0
    assert gaps.observe("mqtt-players", "p", msg(53, source="cms-2")) == 2


@pytest.mark.parametrize(
    "bad",
    [{"seq": 0}, {"seq": -1}, {"seq": True}, {"seq": "7"}, {"seq": None}, {"seq": 2**53},
     {"seq": 1.5}, {"seq": 9, "boot": ""}, {"seq": 9, "boot": 7}, {"seq": 9, "boot": "x" * 65}],
)  # fmt: skip
def test_an_unusable_seq_is_not_numbered(bad: dict[str, Any]) -> None:
    gaps = SequenceGaps()
    gaps.observe("mqtt-slots", "t", msg(1))
    assert gaps.observe("mqtt-slots", "t", bad) == 0
    assert gaps.observe("mqtt-slots", "t", msg(2)) == 0
    assert gaps.observe("mqtt-slots", "t", msg(3.0)) == 0  # JSON's 3.0 is the integer 3


# ------------------------------------------------------------------ the ingest

NOW = datetime(2026, 4, 25, 16, 0, tzinfo=UTC)
SITE = "gaps"


def game(n: int, seq: int | None, boot: str | None = None, machine: str = "M01") -> bytes:
    body: dict[str, Any] = {
        "event_id": f"g-{machine}-{n}", "ts": NOW.isoformat(), "type": "game_played",
        "machine": machine, "wager": 1000,
    }  # fmt: skip
    if seq is not None:
        body["seq"] = seq
    if boot is not None:
        body["boot"] = boot
    return json.dumps(body).encode()


def test_seq_and_boot_are_optional_and_change_no_event() -> None:
    decoder = PayloadDecoder(SchemaSet((*CMS_FEEDS, TABLE_FEED)))
    plain = decoder.decode(Kind.SLOTS, "M01", game(1, None), NOW.timestamp(), "mqtt:slots/M01")
    numbered = decoder.decode(
        Kind.SLOTS, "M01", game(1, 7, "b1"), NOW.timestamp(), "mqtt:slots/M01"
    )
    assert not isinstance(plain, Rejection) and plain == numbered
    for bad in (0, "7", 1.5):
        body = json.loads(game(1, None))
        body["seq"] = bad
        got = decoder.decode(
            Kind.SLOTS, "M01", json.dumps(body).encode(), NOW.timestamp(), "mqtt:slots/M01"
        )
        assert isinstance(got, Rejection) and got.reason == "schema_violation", bad


def sample(metrics: Metrics, name: str, source: str) -> float | None:
    return metrics.registry.get_sample_value(name, {"source": source})


def test_the_ingest_counts_a_gap_per_source_and_logs_it_once(tmp_path: Path) -> None:
    key = tmp_path / "seed.key"
    metrics = Metrics()
    ing = ingest_with_key(metrics, key)
    for source in ("mqtt-slots", "mqtt-tables", "mqtt-players", "mqtt-points", "mqtt-tickets"):
        assert sample(metrics, "raps_ingest_gap_messages_total", source) == 0, source
    topic = Topics("raps/v1", SITE).slots("M01")
    with structlog.testing.capture_logs() as logs:
        ing.handle([_Item(topic, game(n, n)) for n in (1, 2, 3)])
        ing.handle([_Item(topic, game(n, n)) for n in (10, 11)])  # 4..9 never came
        ing.handle([_Item(topic, b'{"seq": 12, "broken')])  # not JSON: not numbered
        ing.handle([_Item(topic, game(13, 13).replace(b"1000", b"-5"))])  # refused, arrived
        ing.handle([_Item(topic, game(99, 99, "x" * 65))])  # a broken boot: not numbered
        ing.handle([_Item(topic, game(14, 14))])
    assert sample(metrics, "raps_ingest_gap_messages_total", "mqtt-slots") == 7  # 4..9, 12
    assert sample(metrics, "raps_ingest_last_gap_messages", "mqtt-slots") == 1
    assert sample(metrics, "raps_ingest_last_gap_timestamp_seconds", "mqtt-slots")
    said = [e for e in logs if e["event"].startswith("ingest gap")]
    assert [(e["after"], e["got"], e["missing"]) for e in said] == [(3, 10, 6), (11, 13, 1)]
    assert said[0]["source"] == "mqtt-slots" and said[0]["topic"] == topic


def ingest_with_key(metrics: Metrics, key: Path) -> MqttIngest:
    cfg = parse_config(floor_config_text(key.parent, SITE, 1883)).mqtt
    return MqttIngest(
        cfg, SITE, apply=lambda events, _label: [None] * len(events),
        reject=lambda _s, _r: None, link=lambda _up: None, clock=lambda: NOW,
        families=(*CMS_FEEDS, TABLE_FEED), gap=metrics.count_gap,
    )  # fmt: skip


# ---------------------------------------------------------- across a restart


def test_marks_come_back_newest_first_whatever_the_order_and_junk_is_ignored() -> None:
    gaps = SequenceGaps()
    for n in (1, 2, 3):
        gaps.observe("mqtt-slots", "a", msg(n, "b1"))
    gaps.observe("mqtt-slots", "b", msg(40))
    first = gaps.changed()
    assert sorted(r[:5] for r in first) == [["a", "", "b1", 3, None], ["b", "", None, 40, None]]
    assert gaps.changed() == []  # nothing new since
    gaps.observe("mqtt-slots", "a", msg(2, "b1"))  # a redelivery changes no mark
    assert gaps.changed() == []
    gaps.observe("mqtt-slots", "a", msg(4, "b1"))
    newer = gaps.changed()
    junk = [["a", "", "b1", 0, None, 9], ["a"], "x", ["a", "", 7, 3, None, 99]]
    again = SequenceGaps()
    assert again.restore([*newer, *first, *junk]) == 2  # older rows after newer ones lose
    assert again.observe("mqtt-slots", "a", msg(5, "b1")) == 0
    assert again.observe("mqtt-slots", "b", msg(43)) == 2
    assert sorted(map(tuple, again.state())) == sorted(map(tuple, again.changed()))


def service_in(folder: Path) -> Service:
    cfg = parse_config(floor_config_text(folder, SITE, 1883))
    key = SeedSealer(load_key(folder / "seed.key"))
    return Service(cfg, open_engine(cfg.storage.url), key, Metrics(), lambda: NOW)


def ingest_of(svc: Service) -> MqttIngest:
    ing = MqttIngest(svc.cfg.mqtt, SITE, svc.ingest_detailed, svc.reject, lambda _up: None,
                     svc.clock, known=svc.cfg.layout(), families=(*CMS_FEEDS, TABLE_FEED),
                     gap=svc.metrics.count_gap)  # fmt: skip
    svc.floorlog.marks.attach(ing.gaps)  # as raps.daemon does
    return ing


@pytest.mark.asyncio
async def test_a_gap_that_straddles_a_restart_is_counted(tmp_path: Path) -> None:
    """Where each stream was is written with the floor log, before any ack: a restart
    takes it up, so messages lost while the daemon was down count, and a message that
    was handled but never acknowledged comes again as a copy, not as a gap."""
    m1, m2 = (Topics("raps/v1", SITE).slots(m) for m in ("M01", "M02"))
    svc = service_in(tmp_path)
    await svc.start()
    ing = ingest_of(svc)
    ing.handle([_Item(m1, game(n, n)) for n in (1, 2, 3)])
    await svc.flush_events()
    await svc.snapshot_floor()  # every mark in the snapshot; the rows it covers go
    ing.handle([_Item(m1, game(n, n)) for n in (4, 5)] + [_Item(m2, game(1, 1, machine="M02"))])
    await svc.flush_events()
    refused = game(6, 6).replace(b"1000", b"-5")  # a dead letter: no event, but it came
    assert len(ing.handle([_Item(m1, refused)])) == 1
    await svc.flush_events()  # the marks alone: acknowledged only after this
    ing.handle([_Item(m1, game(7, 7))])  # handled, never flushed nor acknowledged
    await svc.engine.dispose()  # killed: no stop, no final snapshot

    again = service_in(tmp_path)
    await again.start()
    try:
        ing = ingest_of(again)
        ing.handle([_Item(m1, game(n, n)) for n in (7, 8)])  # 7 again, then in order
        ing.handle([_Item(m2, game(4, 4, machine="M02"))])  # 2 and 3 were lost meanwhile
        assert sample(again.metrics, "raps_ingest_gap_messages_total", "mqtt-slots") == 2
        assert ing.gaps.gaps == 1 and ing.applied == 3
    finally:
        await again.engine.dispose()


# ------------------------------------------------------- a real broker, a real daemon


def snippet_broker() -> PrivateMosquitto:
    """A private Mosquitto whose queues come from the shipped drop-in, as on Debian."""
    b = PrivateMosquitto()
    confd = b.dir / "conf.d"
    confd.mkdir()
    shutil.copy(SNIPPET, confd / "raps.conf")
    b.conf.write_text(
        f"listener {b.port} 127.0.0.1\nallow_anonymous true\n"
        f"persistence_location {b.dir}/\nlog_dest stderr\nlog_type error\nlog_type warning\n"
        f"include_dir {confd}\n"
    )
    return b


def default_broker() -> PrivateMosquitto:
    """A private Mosquitto with Mosquitto's defaults: no queue settings at all."""
    b = PrivateMosquitto()
    b.conf.write_text(
        f"listener {b.port} 127.0.0.1\nallow_anonymous true\nlog_dest stderr\nlog_type error\n"
    )
    return b


@pytest.fixture(params=["snippet", "defaults"])
def broker(request: pytest.FixtureRequest) -> Iterator[PrivateMosquitto]:
    b = snippet_broker() if request.param == "snippet" else default_broker()
    b.start()
    try:
        yield b
    finally:
        b.close()


async def publish(host: str, port: int, site: str, seqs: range, ts: datetime) -> None:
    """Games on M01 numbered `seqs` (seq 1 is the card-in), QoS 1, every one accepted."""
    topic = Topics("raps/v1", site).slots("M01")
    async with aiomqtt.Client(
        host, port, identifier=f"pub-{uuid.uuid4().hex[:8]}", max_inflight_messages=1000
    ) as client:
        client.pending_calls_threshold = 1_000_000
        sends = []
        for seq in seqs:
            body: dict[str, object]
            if seq == 1:
                body = {"type": "card_inserted", "card": "6004700000001"}
            else:
                body = {"type": "game_played", "wager": 1000}
            body |= {"event_id": f"e-{seq}", "ts": ts.isoformat(), "machine": "M01", "seq": seq}
            sends.append(client.publish(topic, json.dumps(body), qos=1))
            if len(sends) >= 1000:
                await asyncio.gather(*sends)
                sends = []
        await asyncio.gather(*sends)


def gap_total(url: str) -> float:
    text = httpx.get(f"{url}/metrics", timeout=5).text
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "raps_ingest_gap_messages_total" and s.labels["source"] == "mqtt-slots":
                return s.value
    raise AssertionError("raps_ingest_gap_messages_total{source=mqtt-slots} is not exported")


def test_a_backlog_for_an_offline_daemon_is_kept_or_its_loss_counted(
    broker: PrivateMosquitto, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    snippet = "snippet" in request.node.callspec.id
    site = f"g{uuid.uuid4().hex[:8]}"
    config = tmp_path / "raps.toml"
    config.write_text(
        floor_config_text(tmp_path, site, broker.port) + '\n[http]\nhost = "127.0.0.1"\nport = 0\n'
    )
    db = tmp_path / "raps.db"
    daemon = RapsDaemon(tmp_path, config)
    ts = datetime.now(UTC) - timedelta(seconds=30)
    try:
        daemon.spawn()
        daemon.wait_ready()
        asyncio.run(publish(broker.host, broker.port, site, range(1, 2), ts))
        wait_for(lambda: durable_events(db) == 1, 30, "the first message")
        daemon.stop()  # down: the broker queues for its persistent session
        asyncio.run(publish(broker.host, broker.port, site, range(2, 2 + BACKLOG), ts))
        if snippet:
            broker.restart()  # persistence: the queue survives the broker's restart
        daemon.spawn()
        daemon.wait_ready()
        url = json.loads(daemon.ready_file.read_text())["url"]
        live = 2 + BACKLOG  # published once the daemon is back: the gap shows at it
        asyncio.run(publish(broker.host, broker.port, site, range(live, live + 1), ts))

        if snippet:
            wait_for(lambda: durable_events(db) >= live, 60, "the whole backlog")
        else:
            wait_for(lambda: gap_total(url) > 0, 60, "the gap, seen at the live message")
            expected = live - int(gap_total(url))  # acknowledged once in the floor log
            wait_for(lambda: durable_events(db) >= expected, 30, f"{expected} events")
        received = durable_events(db) - 2  # minus the first and the live message
        missing = gap_total(url)
        if snippet:  # four lost while the daemon is down: the first message after counts
            daemon.stop()
            asyncio.run(publish(broker.host, broker.port, site, range(live + 5, live + 6), ts))
            daemon.spawn()
            daemon.wait_ready()
            url = json.loads(daemon.ready_file.read_text())["url"]
            wait_for(lambda: durable_events(db) >= live + 1, 30, "the message after the loss")
            assert gap_total(url) == 4
        daemon.stop()
    finally:
        if daemon.proc is not None and daemon.proc.poll() is None:
            daemon.kill9()
    if snippet:
        assert received == BACKLOG and missing == 0
    else:
        assert received < BACKLOG // 2, f"the defaults kept {received}: the test proves nothing"
        assert missing == BACKLOG - received, (received, missing)

"""MQTT ingest against real brokers, into a real Service (SQLite, journal, floor log).

Brokers (tests/mqtt_broker.py): the machine's Mosquitto at 127.0.0.1:1883 when it runs,
else one started for the run; a private Mosquitto (persistence on, queues sized for
10,000+ messages) for the tests that stop the daemon or restart the broker; the
embedded amqtt broker of the demo for a smoke test.  A missing broker fails, never skips.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import subprocess
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import aiomqtt
import pytest

from adapters.mqtt import MqttIngest, Topics
from adapters.mqtt.card_simulator import CardSessions, publish_all
from adapters.mqtt.feeds import deadletter_schema
from adapters.mqtt.ingest import Protocol
from adapters.tables.simulator import PitTerminals
from raps.broker import EmbeddedBroker
from raps.config import parse_config
from raps.daemon import INBOUND_FEEDS
from raps.metrics import Metrics
from raps.seal import SeedSealer, load_key
from raps.service import Service
from raps.store.database import open_engine
from selector.records import Actor
from tests.mqtt_broker import PrivateMosquitto, floor_config_text, shared_or_private

pytestmark = pytest.mark.asyncio
TZ = ZoneInfo("Africa/Johannesburg")
NOW = datetime(2026, 4, 25, 12, 0, tzinfo=TZ)
MARKETING = Actor("ann", "marketing")
logging.getLogger("mqtt").setLevel(logging.ERROR)


@pytest.fixture(scope="module")
def broker() -> Iterator[tuple[str, int]]:
    with shared_or_private() as where:
        yield where


def site_id() -> str:
    """A site of its own per test: tests share the machine's broker."""
    return f"t{uuid.uuid4().hex[:10]}"


async def eventually(check: Callable[[], bool], timeout: float = 30.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or check}")
        await asyncio.sleep(0.01)


def g(
    n: int, machine: str = "M01", minute: int = 0, wager: int = 1000, tag: str = "g"
) -> dict[str, Any]:
    """A game worth one point (1000 minor units) at machine, `minute` minutes before noon."""
    ts = NOW - timedelta(minutes=30 - minute, milliseconds=-n)
    return {
        "event_id": f"{tag}{n}",
        "ts": ts.isoformat(),
        "type": "game_played",
        "machine": machine,
        "wager": wager,
    }


def card_in(
    card: str, machine: str = "M01", minute: int = 0, eid: str | None = None
) -> dict[str, Any]:
    ts = (NOW - timedelta(minutes=31 - minute)).isoformat()
    return {
        "event_id": eid or f"in-{card}-{machine}-{minute}",
        "ts": ts,
        "type": "card_inserted",
        "machine": machine,
        "card": card,
    }


def player(card: str, minute: int = 0, exclusions: tuple[str, ...] = ()) -> dict[str, Any]:
    ts = (NOW - timedelta(minutes=40 - minute)).isoformat()
    return {
        "event_id": f"dir-{card}-{minute}",
        "ts": ts,
        "type": "player_upserted",
        "card": card,
        "tier": "queen",
        "display_name": "Thandi M.",
        "age_verified": True,
        "exclusions": list(exclusions),
    }


class Daemon:
    """The parts of the daemon the ingest needs: Service, MqttIngest, the flush loop."""

    def __init__(
        self,
        folder: Path,
        site: str,
        host: str,
        port: int,
        protocol: Protocol = "3.1.1",
        session_id: str | None = None,
        config_extra: str = "",
    ) -> None:
        self.folder = folder
        self.site = site
        text = floor_config_text(folder, site, port, session_id=session_id)
        text = text.replace('host = "127.0.0.1"', f'host = "{host}"') + config_extra
        self.cfg = parse_config(text)
        self.port = port
        self.protocol: Protocol = protocol
        self.links: list[bool] = []
        self.service: Service | None = None
        self.ingest: MqttIngest | None = None
        self.tasks: list[asyncio.Task[Any]] = []
        self.stopping = asyncio.Event()

    async def start(self, wait_connected: bool = True) -> Daemon:
        cfg = self.cfg
        sealer = SeedSealer(load_key(self.folder / "seed.key"))
        self.service = svc = Service(
            cfg, open_engine(cfg.storage.url), sealer, Metrics(), lambda: NOW
        )
        await svc.start()
        self.ingest = MqttIngest(
            cfg.mqtt,
            self.site,
            svc.ingest_detailed,
            svc.reject,
            self.links.append,
            lambda: NOW,
            port=self.port,
            known=cfg.layout(),
            families=INBOUND_FEEDS,
            protocol=self.protocol,
            backoff_initial=0.05,
            backoff_max=0.5,
        )
        self.tasks = [
            asyncio.create_task(self.ingest.run()),
            asyncio.create_task(self._every(cfg.storage.event_flush_seconds, svc.flush_events)),
        ]
        if wait_connected:
            await eventually(
                lambda: self.ingest is not None and self.ingest.connected, 20, "connect"
            )
        return self

    async def _every(self, seconds: float, step: Callable[[], Awaitable[None]]) -> None:
        """A periodic step that is never cancelled half-way through a database write."""
        while not self.stopping.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), seconds)
            with contextlib.suppress(Exception):
                await step()

    async def stop(self) -> None:
        """As the daemon stops: the sources first, then the service flushes and snapshots."""
        self.stopping.set()
        self.tasks[0].cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        if self.service is not None:
            await self.service.stop()

    @property
    def svc(self) -> Service:
        assert self.service is not None
        return self.service

    @property
    def ing(self) -> MqttIngest:
        assert self.ingest is not None
        return self.ingest

    def metric(self, name: str, **labels: str) -> float:
        value = self.svc.metrics.registry.get_sample_value(name, labels)
        return value or 0.0

    def points(self, card: str) -> float:
        return self.svc.floor.points("raps", card, NOW)


@contextlib.asynccontextmanager
async def publisher(
    host: str, port: int, protocol: Protocol = "3.1.1", timeout: float = 10.0
) -> AsyncIterator[aiomqtt.Client]:
    version = aiomqtt.ProtocolVersion.V5 if protocol == "5" else aiomqtt.ProtocolVersion.V311
    client = aiomqtt.Client(
        host,
        port,
        identifier=f"pub-{uuid.uuid4().hex[:8]}",
        protocol=version,
        max_inflight_messages=1000,
        timeout=timeout,
    )
    client.pending_calls_threshold = 1_000_000
    async with client:
        yield client


def slots(site: str, machine: str = "M01") -> str:
    return Topics("raps/v1", site).slots(machine)


# ---------------------------------------------------------------------- basics


async def test_applies_once_and_a_replayed_batch_changes_nothing(
    broker: tuple[str, int], tmp_path: Path
) -> None:
    host, port = broker
    site = site_id()
    d = await Daemon(tmp_path, site, host, port).start()
    try:
        topics = Topics("raps/v1", site)
        batch = [(topics.players, player("C1")), (slots(site), card_in("C1"))]
        batch += [(slots(site), g(i)) for i in range(50)]
        async with publisher(host, port) as pub:
            await publish_all(pub, batch)
            await eventually(lambda: d.ing.applied == 52, what="52 applied")
            assert d.points("C1") == 50
            assert d.links == [True]
            await publish_all(pub, batch)  # the same messages again
            await eventually(lambda: d.ing.duplicates == 52, what="52 duplicates")
        assert d.points("C1") == 50
        assert d.ing.applied == 52 and not d.ing.dead_letters
        assert d.metric("raps_events_ingested_total", source="mqtt-slots") == 51
        assert d.metric("raps_events_ingested_total", source="mqtt-players") == 1
        assert d.svc.floor.location("C1") is not None
    finally:
        await d.stop()
    assert d.links == [True, False]


async def test_exclusion_leaves_every_pool_before_the_next_pick(
    broker: tuple[str, int], tmp_path: Path
) -> None:
    host, port = broker
    site = site_id()
    d = await Daemon(tmp_path, site, host, port, session_id="s1").start()
    try:
        topics = Topics("raps/v1", site)
        seated = [(topics.players, player("C9")), (slots(site), card_in("C9"))]
        seated += [(slots(site), g(i, minute=29)) for i in range(10)]  # 10 points, just now
        rating = {
            "event_id": "r1",
            "ts": (NOW - timedelta(minutes=20)).isoformat(),
            "type": "table_rating_opened",
            "table": "T1",
            "seat": 2,
            "card": "C8",
            "average_bet": 100_000,
        }
        update = {
            **rating,
            "event_id": "r2",
            "type": "table_rating_updated",
            "minutes": 10,
            "ts": (NOW - timedelta(minutes=10)).isoformat(),
        }
        seated += [
            (topics.players, player("C8")),
            (topics.tables("T1"), rating),
            (topics.tables("T1"), update),
        ]
        async with publisher(host, port) as pub:
            await publish_all(pub, seated)
            await eventually(lambda: d.ing.applied == len(seated), what="seated")
            assert list(d.svc.floor.pool("raps", "slots")) == ["C9"]
            assert list(d.svc.floor.pool("raps", "tables")) == ["C8"]
            await d.svc.open("s1", MARKETING, "open-1")
            # both become self-excluded; the next picks must find nobody
            await publish_all(
                pub,
                [
                    (topics.players, player(c, minute=5, exclusions=("self_excluded",)))
                    for c in ("C9", "C8")
                ],
            )
            await eventually(lambda: d.ing.applied == len(seated) + 2, what="exclusions")
        for kind in ("slots", "tables"):
            result = await d.svc.draw("s1", MARKETING, f"draw-{kind}", kind)
            assert result.outcome.no_eligible, kind
        assert d.svc.floor.check("raps", "C9") == "self_excluded"
    finally:
        await d.stop()


async def test_late_place_events_go_to_the_dead_letters_as_stale(
    broker: tuple[str, int], tmp_path: Path
) -> None:
    host, port = broker
    site = site_id()
    d = await Daemon(tmp_path, site, host, port).start()
    dead: list[dict[str, Any]] = []
    topics = Topics("raps/v1", site)
    try:
        async with publisher(host, port) as pub:
            await pub.subscribe(topics.deadletter, qos=1)
            reader = asyncio.create_task(collect(pub, dead))
            out = {**card_in("C1", minute=5), "event_id": "out", "type": "card_removed"}
            await publish_all(pub, [(slots(site), card_in("C1", minute=0)), (slots(site), out)])
            await eventually(lambda: d.ing.applied == 2)
            await publish_all(pub, [(slots(site), card_in("C1", minute=2, eid="late-in"))])
            await eventually(lambda: len(dead) == 1, what="dead letter")
            reader.cancel()
        assert dead[0]["reason"] == "stale" and dead[0]["event_id"] == "late-in"
        assert d.svc.floor.location("C1") is None  # not put back at M01
        assert d.metric("raps_events_rejected_total", source="mqtt-slots", reason="stale") == 1
    finally:
        await d.stop()


async def collect(client: aiomqtt.Client, into: list[dict[str, Any]]) -> None:
    async for m in client.messages:
        assert isinstance(m.payload, bytes)
        into.append(json.loads(m.payload))


# ---------------------------------------------------------------- bad input


def bad_payloads(site: str, n: int) -> tuple[list[tuple[str, bytes]], Counter[str]]:
    """n bad messages of 10 kinds, round robin; returns them and the expected reasons."""
    topics = Topics("raps/v1", site)
    ok = g(0)
    future = {**ok, "ts": (NOW + timedelta(hours=1)).isoformat()}

    def js(base: dict[str, Any], **changes: Any) -> Callable[[int], bytes]:
        return lambda i: json.dumps({**base, **changes, "event_id": f"bad{i}"}).encode()

    seat = {"type": "table_rating_opened", "table": "T1", "seat": 9, "card": "C1"}
    kinds: list[tuple[str, str, Callable[[int], bytes]]] = [
        ("malformed_json", slots(site), lambda i: b'{"event_id": "x%d", "ts": ' % i),
        ("malformed_json", slots(site), lambda i: b"\xff\xfe\x00binary%d" % i),
        ("schema_violation", slots(site), js(ok, wager=-1)),
        ("schema_violation", slots(site), js(ok, machine=17)),
        ("unknown_type", slots(site), js(ok, type="jackpot")),
        ("wrong_topic", topics.points, js(ok)),
        ("topic_mismatch", slots(site, "M02"), js(ok)),
        ("unknown_machine", slots(site, "M77"), js(ok, machine="M77")),
        ("future_timestamp", slots(site), js(future)),
        ("unknown_seat", topics.tables("T1"), js({"ts": ok["ts"], "average_bet": 100}, **seat)),
    ]
    out = []
    expected: Counter[str] = Counter()
    for i in range(n):
        why, topic, make = kinds[i % len(kinds)]
        out.append((topic, make(i)))
        expected[why] += 1
    return out, expected


async def test_a_flood_of_bad_payloads_all_reaches_the_dead_letter_topic(
    broker: tuple[str, int], tmp_path: Path
) -> None:
    host, port = broker
    site = site_id()
    d = await Daemon(tmp_path, site, host, port).start()
    topics = Topics("raps/v1", site)
    dead: list[dict[str, Any]] = []
    bad, expected = bad_payloads(site, 1000)
    sent = {body for _, body in bad}
    try:
        async with publisher(host, port) as pub:
            await pub.subscribe(topics.deadletter, qos=1)
            reader = asyncio.create_task(collect(pub, dead))
            await publish_all(pub, bad)
            await eventually(lambda: len(dead) >= 1000, what="1000 dead letters")
            # still alive and applying
            await publish_all(pub, [(slots(site), g(1, tag="good"))])
            await eventually(lambda: d.ing.applied == 1, what="a good message after the flood")
            await asyncio.sleep(0.2)
            reader.cancel()
        assert len(dead) == 1000
        assert Counter(x["reason"] for x in dead) == expected
        schema = deadletter_schema()
        from jsonschema import Draft202012Validator

        for x in dead:
            Draft202012Validator(schema).validate(x)
            raw = (
                base64.b64decode(x["payload"])
                if x["encoding"] == "base64"
                else x["payload"].encode()
            )
            assert raw in sent
            assert x["detail"]
        assert Counter(dict(d.ing.dead_letters)) == expected
        for why, n in expected.items():
            total = sum(
                d.metric("raps_events_rejected_total", source=s, reason=why)
                for s in ("mqtt-slots", "mqtt-tables", "mqtt-points")
            )
            assert total == n, why
    finally:
        await d.stop()


# ------------------------------------------------------ persistence, restarts


async def test_daemon_stopped_while_10000_messages_are_published_applies_each_once(
    private_broker: PrivateMosquitto, tmp_path: Path
) -> None:
    """Stopped mid-stream (cancelled as SIGTERM does), restarted: every game counted once."""
    host, port = private_broker.host, private_broker.port
    site = site_id()
    d = await Daemon(tmp_path, site, host, port).start()
    async with publisher(host, port) as pub:
        await publish_all(pub, [(slots(site), card_in("C1"))])
        await eventually(lambda: d.ing.applied == 1)
        messages = [(slots(site), g(i)) for i in range(10_000)]

        async def paced() -> int:
            """About 2 s for the 10,000, so that the stop falls in the middle."""
            sent = 0
            for i in range(0, len(messages), 500):
                sent += await publish_all(pub, messages[i : i + 500], qos=1, in_flight=500)
                await asyncio.sleep(0.1)
            return sent

        stream = asyncio.create_task(paced())
        await eventually(lambda: d.ing.applied >= 1500, 60, "1,500 applied")
        await d.stop()  # the daemon goes down while the stream goes on
        first = d.ing.applied - 1
        assert not stream.done()
        assert await stream == 10_000
    assert 1500 <= first < 10_000

    d2 = await Daemon(tmp_path, site, host, port).start(wait_connected=False)
    try:
        assert d2.points("C1") == first  # the floor came back from the snapshot
        await eventually(lambda: d2.points("C1") >= 10_000, 60, "10,000 points")
        await asyncio.sleep(0.3)  # nothing more may arrive
        assert d2.points("C1") == 10_000
        assert first + d2.ing.applied == 10_000
        assert d2.ing.duplicates == 0 and not d2.ing.dead_letters
        assert d2.metric("raps_events_ingested_total", source="mqtt-slots") == 10_000 - first
    finally:
        await d2.stop()


async def test_mqtt5_session_survives_a_daemon_restart(
    private_broker: PrivateMosquitto, tmp_path: Path
) -> None:
    host, port = private_broker.host, private_broker.port
    site = site_id()
    d = await Daemon(tmp_path, site, host, port, protocol="5").start()
    await d.stop()
    async with publisher(host, port, protocol="5") as pub:
        await publish_all(
            pub, [(slots(site), card_in("C1"))] + [(slots(site), g(i)) for i in range(500)]
        )
    d2 = await Daemon(tmp_path, site, host, port, protocol="5").start(wait_connected=False)
    try:
        await eventually(lambda: d2.ing.applied >= 501, 30, "501 applied")
        assert d2.points("C1") == 500
    finally:
        await d2.stop()


async def test_broker_restarted_mid_stream_loses_nothing(
    private_broker: PrivateMosquitto, tmp_path: Path
) -> None:
    host, port = private_broker.host, private_broker.port
    site = site_id()
    total = 4000
    d = await Daemon(tmp_path, site, host, port).start()
    retries = 0
    try:

        async def publish_with_retries() -> None:
            """A paced publisher that retries each chunk until the broker acknowledged it."""
            nonlocal retries
            i = 0
            messages = [(slots(site), card_in("C1"))] + [(slots(site), g(n)) for n in range(total)]
            while i < len(messages):
                try:
                    async with publisher(host, port, timeout=1.0) as pub:
                        while i < len(messages):
                            chunk = messages[i : i + 100]
                            await publish_all(pub, chunk)
                            i += len(chunk)
                            await asyncio.sleep(0.03)
                except aiomqtt.MqttError:
                    retries += 1
                    await asyncio.sleep(0.1)  # then resend the unconfirmed chunk

        pub_task = asyncio.create_task(publish_with_retries())
        await eventually(lambda: d.ing.applied >= total // 3, 30, "a third applied")
        await asyncio.to_thread(private_broker.stop)  # SIGTERM: saves its persistence file
        await eventually(lambda: not d.ing.connected, 10, "ingest notices")
        await asyncio.sleep(0.3)
        await asyncio.to_thread(private_broker.start)
        await asyncio.wait_for(pub_task, 60)
        assert retries >= 1  # the publisher did see the broker go away mid-stream
        await eventually(lambda: d.ing.applied >= total + 1, 60, "all applied")
        await asyncio.sleep(0.3)
        assert d.ing.applied == total + 1
        assert d.points("C1") == total  # each game counted once, duplicates or not
        assert not d.ing.dead_letters
        assert d.ing.connects >= 2
        assert d.links[:3] == [True, False, True]
    finally:
        await d.stop()


# ------------------------------------------------------- other brokers, TLS


async def test_embedded_broker_smoke(tmp_path: Path) -> None:
    broker = EmbeddedBroker()
    await broker.start()
    site = site_id()
    d = Daemon(tmp_path, site, broker.host, broker.port, protocol="3.1.1")
    try:
        await d.start()
        topics = Topics("raps/v1", site)
        dead: list[dict[str, Any]] = []
        async with publisher(broker.host, broker.port) as pub:
            await pub.subscribe(topics.deadletter, qos=1)
            reader = asyncio.create_task(collect(pub, dead))
            good = [(topics.players, player("C1")), (slots(site), card_in("C1"))]
            good += [(slots(site), g(i)) for i in range(20)]
            await publish_all(pub, [*good, (slots(site), b"not json")])
            await eventually(lambda: d.ing.applied == 22 and len(dead) == 1, 20, "embedded")
            reader.cancel()
        assert d.points("C1") == 20
        assert dead[0]["reason"] == "malformed_json"
    finally:
        await d.stop()
        await broker.stop()


def _tls_files(folder: Path) -> tuple[Path, Path, Path]:
    """A throwaway CA and a server certificate for 127.0.0.1 (cryptography)."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    now = datetime.now(TZ)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(name("raps test CA"))
        .issuer_name(name("raps test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name("127.0.0.1"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    paths = folder / "ca.pem", folder / "server.pem", folder / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    for p in paths:
        p.chmod(0o644)
    return paths


async def test_tls_and_password_from_config(tmp_path: Path) -> None:
    b = PrivateMosquitto()
    ca, cert, key = _tls_files(b.dir)  # in the broker's folder: mosquitto drops root
    passwd = b.dir / "passwd"
    passwd.write_text("")
    subprocess.run(["mosquitto_passwd", "-b", str(passwd), "raps", "s3cret-pw"], check=True)
    passwd.chmod(0o644)
    conf = b.conf.read_text().replace("allow_anonymous true", "allow_anonymous false")
    tls = f"cafile {ca}\ncertfile {cert}\nkeyfile {key}\npassword_file {passwd}\n"
    b.conf.write_text(conf.replace("allow_anonymous false\n", "allow_anonymous false\n" + tls))
    b.start()
    site = site_id()

    def daemon(folder: Path, password: str) -> Daemon:
        folder.mkdir(exist_ok=True)
        d = Daemon(folder, site, "127.0.0.1", b.port)
        auth = f'username = "raps"\npassword = "{password}"\ntls = true\nca_file = "{ca}"\n'
        text = floor_config_text(folder, site, b.port)
        d.cfg = parse_config(text.replace('client_id = "raps-', auth + 'client_id = "raps-'))
        return d

    try:
        d = await daemon(tmp_path / "good", "s3cret-pw").start()
        try:
            import ssl

            client = aiomqtt.Client(
                "127.0.0.1",
                b.port,
                username="raps",
                password="s3cret-pw",
                tls_context=ssl.create_default_context(cafile=str(ca)),
            )
            async with client:
                await publish_all(client, [(slots(site), card_in("C1")), (slots(site), g(1))])
            await eventually(lambda: d.ing.applied == 2, 20, "applied over TLS")
        finally:
            await d.stop()
        # a wrong password never connects: the link stays down, nothing crashes
        bad = await daemon(tmp_path / "bad", "wrong").start(wait_connected=False)
        await asyncio.sleep(0.5)
        assert not bad.ing.connected and bad.links == []
        assert not bad.tasks[0].done()  # still retrying
        await bad.stop()
    finally:
        b.close()


# ---------------------------------------------------------------- simulators


async def test_simulators_feed_the_core_without_dead_letters(
    broker: tuple[str, int], tmp_path: Path
) -> None:
    host, port = broker
    site = site_id()
    d = await Daemon(tmp_path, site, host, port).start()
    topics = Topics("raps/v1", site)
    try:
        layout = d.cfg.layout()
        start = NOW - timedelta(hours=2)
        cards = CardSessions(topics, sorted(layout.machines), players=20, start=start, seed=3)
        pit = PitTerminals(
            topics,
            list(layout.tables.values()),
            [CardSessions.card(i) for i in range(20, 40)],
            start=start,
            seed=4,
        )
        messages = cards.directory() + list(cards.messages(300)) + list(pit.messages(200))
        types = Counter(p["type"] for _, p in messages)
        assert {
            "table_rating_opened",
            "table_rating_updated",
            "table_rating_closed",
            "card_inserted",
            "card_removed",
            "game_played",
            "player_upserted",
        } <= set(types)
        async with publisher(host, port) as pub:
            await publish_all(pub, messages)
        await eventually(
            lambda: (
                d.ing.applied + d.ing.duplicates + sum(d.ing.dead_letters.values()) >= len(messages)
            ),
            what="all simulated messages",
        )
        assert not d.ing.dead_letters, d.ing.dead_letters
        assert d.svc.floor.tracked_players >= 20
    finally:
        await d.stop()

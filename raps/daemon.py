"""`raps run`: one asyncio process holding the service, its HTTP server and sources."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import signal
import time
from collections.abc import Callable, Coroutine, Iterator
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI

from adapters.modbus.source import ModbusGateway
from adapters.mqtt import MqttIngest
from adapters.mqtt.feeds import CMS_FEEDS
from adapters.sas.config import simulated_channels
from adapters.sas.source import SasChannel
from adapters.tables.payloads import TABLE_FEED
from raps.broker import EmbeddedBroker
from raps.clock_offset import ENV as CLOCK_OFFSET_ENV
from raps.clock_offset import daemon_clock, utc_now
from raps.config import Config, HttpConfig
from raps.floorsim import FloorSimulator
from raps.forwarded import TrustedForwarding
from raps.gcpolicy import settle_after_start
from raps.logs import configure, get_logger
from raps.metrics import Metrics
from raps.mqtt_out import MqttPublisher
from raps.seal import SeedSealer, create_key_file, load_key
from raps.service import Service
from raps.signing import SigningKey, create_signing_key_file, load_signing_key
from raps.sources.simulated import SimulatedFloor
from raps.storage_health import StorageUnavailable, retry_delay
from raps.store.daemon_lock import DaemonLock
from raps.store.database import open_engine
from raps.web import create_app

TICK_SECONDS = 0.2
MQTT_IN = "mqtt-in"
# the payload families the MQTT ingest accepts: the CMS feeds and the pit's table ratings
INBOUND_FEEDS = (*CMS_FEEDS, TABLE_FEED)
GAUGE_SECONDS = 5.0


class _Server(uvicorn.Server):
    """uvicorn without its own signal handlers: the daemon stops it in order."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def http_server_config(app: FastAPI, http: HttpConfig) -> uvicorn.Config:
    """uvicorn's settings for the daemon.  X-Forwarded-For, -Proto and -Host are believed
    only from `http.trusted_proxies` (raps.forwarded): uvicorn's own default trusts the
    first two from 127.0.0.1, so any local process (or a proxy that passes the client's
    header on) could pick the address the sign-in rate limit counts, and nothing checks
    who sent the third, which the same-origin check compares with the Origin."""
    return uvicorn.Config(
        TrustedForwarding(app, http.trusted_proxies),
        host=http.host,
        port=http.port,
        log_level="warning",
        lifespan="off",
        access_log=False,
        proxy_headers=False,  # TrustedForwarding runs uvicorn's middleware itself
    )


class Daemon:
    def __init__(
        self,
        cfg: Config,
        *,
        create_key: bool = False,
        ready_file: Path | None = None,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.cfg = cfg
        self.create_key = create_key
        self.ready_file = ready_file
        self.clock = clock
        self.metrics = Metrics()
        self.log = get_logger(site=cfg.site.id)
        self.stopping = asyncio.Event()
        self.url = ""
        self.broker: EmbeddedBroker | None = None
        self.service: Service | None = None
        self.app: FastAPI | None = None
        self.started = asyncio.Event()
        self.writer = DaemonLock(cfg.storage.url)  # tells offline writers it is running

    def _sealer(self) -> SeedSealer:
        path = Path(self.cfg.credentials.seed_key_file)
        if not path.exists() and self.create_key:
            create_key_file(path)
            self.log.info("created a new seed key file", path=str(path))
        return SeedSealer(load_key(path))

    def _head_key(self) -> SigningKey:
        """The site's head-signing key (raps.heads), created with --create-key."""
        path = self.cfg.credentials.head_key_path()
        if not path.exists() and self.create_key:
            key = create_signing_key_file(path)
            self.log.info("created a new head key file", path=str(path), key_id=key.key_id)
        return load_signing_key(path, "head key")

    async def run(self) -> None:
        cfg = self.cfg
        t0 = time.monotonic()
        self.metrics.start_time.set(time.time())
        sealer, head_key = self._sealer(), self._head_key()
        publisher: MqttPublisher | None = None
        tasks: list[asyncio.Task[Any]] = []
        if cfg.mqtt.enabled and cfg.mqtt.embedded:
            self.broker = EmbeddedBroker(cfg.mqtt.host, cfg.mqtt.port)
            await self.broker.start()
            self.log.info("embedded MQTT broker", url=f"mqtt://{cfg.mqtt.host}:{self.broker.port}")
        if cfg.mqtt.enabled:
            port = self.broker.port if self.broker else None
            publisher = MqttPublisher(cfg.mqtt, self.metrics, port)
        engine = open_engine(cfg.storage.url)
        if not await self.writer.acquire():
            self.log.warning(
                "another process holds the database's writer lock (a second daemon, or a "
                "`raps schedule import`): only one should write its journal"
            )
        service = self.service = Service(
            cfg, engine, sealer, self.metrics, self.clock, publisher, head_key
        )
        await service.start()
        self.app = create_app(service, cfg)
        server = _Server(http_server_config(self.app, cfg.http))
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stopping.set)

        def spawn(coro: Coroutine[Any, Any, Any], name: str) -> None:
            tasks.append(asyncio.create_task(coro, name=name))

        spawn(server.serve(), "http")
        # a journal refused at start (raps.store.headmark): health, metrics and the
        # refusal only; no source, no write
        live = service.journal.refused is None
        if publisher is not None and live:
            spawn(publisher.run(), "mqtt-out")
            ingest = MqttIngest(
                cfg.mqtt,
                cfg.site.id,
                apply=service.ingest_detailed,
                reject=service.reject,
                link=self._mqtt_link,
                clock=self.clock,
                port=self.broker.port if self.broker else None,
                known=cfg.layout(),
                families=INBOUND_FEEDS,
                flush=service.flush_events,  # acknowledged once durable
                room=service.ingest_room,
                gap=self.metrics.count_gap,
            )
            # where each numbered stream was before this start: gaps across it count too
            streams = service.floorlog.marks.attach(ingest.gaps)
            self.log.info("ingest sequence marks restored", streams=streams)
            service.sources[MQTT_IN] = False
            spawn(ingest.run(), "mqtt-in")
        if cfg.floor.simulate is not None and live:
            sim_cfg = cfg.floor.simulate
            layout = cfg.layout()

            play_seed = sim_cfg.seed if sim_cfg.seed is not None else secrets.randbits(32)

            def make_sim(start: datetime) -> FloorSimulator:
                return FloorSimulator(
                    layout,
                    sim_cfg.players,
                    start,
                    seed=play_seed,
                    events_per_second=sim_cfg.events_per_second,
                    source=f"sim{int(start.timestamp())}",
                    # the same casino at every start: only the play differs when unseeded
                    directory_seed=None if sim_cfg.seed is not None else 0,
                    photo_base_url=sim_cfg.photo_base_url,
                )

            warmup = timedelta(seconds=sim_cfg.warmup_seconds)
            source = SimulatedFloor(service, make_sim, self.clock, warmup)
            spawn(source.run(), "simulator")
        feeds: list[SasChannel | ModbusGateway] = (
            [*self._sas_channels(service), *self._modbus_gateways(service)] if live else []
        )
        for channel in feeds:
            service.sources[channel.source] = False
            spawn(channel.run(), channel.source)
        periodic_from = len(tasks)  # tasks after this one stop between their steps
        if live:
            spawn(self._every(TICK_SECONDS, service.tick), "tick")
            spawn(self._every(cfg.storage.event_flush_seconds, service.flush_events), "flush")
            every = cfg.storage.snapshot_interval_seconds
            spawn(self._every(every, service.snapshot_floor), "snapshot")
        spawn(self._every(GAUGE_SECONDS, self._gauges), "gauges")
        while not server.started:
            if tasks[0].done():
                await tasks[0]  # the HTTP server failed to start: raise its error
            await asyncio.sleep(0.01)
        host, port = server.servers[0].sockets[0].getsockname()[:2]
        self.url = f"http://{host}:{port}"
        self.log.info("ready", url=self.url, startup_seconds=round(time.monotonic() - t0, 3))
        settle_after_start()
        self._write_ready(port)
        self.started.set()
        await self.stopping.wait()
        await self._stop(server, tasks[1:periodic_from], tasks[0], tasks[periodic_from:])

    def _sas_channels(self, service: Service) -> list[SasChannel]:
        """The configured SAS channels, plus simulated ones for a simulated floor."""
        cfg = self.cfg
        configs = list(cfg.sources.sas)
        sim = cfg.floor.simulate
        if sim is not None and sim.sas_machines:
            machines = sorted(cfg.layout().machines)[: sim.sas_machines]
            configs += simulated_channels(machines, prefix="simsas")
        state_dir = Path(cfg.sources.state_dir)
        channels = []
        for ch_cfg in configs:
            source = f"sas:{ch_cfg.name}"

            def link(name: str, up: bool, source: str = source) -> None:
                self.metrics.link_up.labels("sas", name).set(1 if up else 0)
                service.sources[source] = up

            state = None
            if ch_cfg.transport != "memory":
                state_dir.mkdir(parents=True, exist_ok=True)
                state = state_dir / f"{ch_cfg.name}.json"
            channels.append(
                SasChannel(
                    ch_cfg,
                    None,
                    emit=partial(service.ingest, source=source),
                    reject=partial(service.reject, source),
                    link=link,
                    clock=self.clock,
                    state_path=state,
                )
            )
        return channels

    def _modbus_gateways(self, service: Service) -> list[ModbusGateway]:
        gateways = []
        for gw_cfg in self.cfg.sources.modbus:
            source = f"modbus:{gw_cfg.name}"

            def link(name: str, up: bool, source: str = source) -> None:
                self.metrics.link_up.labels("modbus", name).set(1 if up else 0)
                service.sources[source] = up

            state_dir = Path(self.cfg.sources.state_dir)
            state_dir.mkdir(parents=True, exist_ok=True)
            gateways.append(
                ModbusGateway(
                    gw_cfg,
                    emit=partial(service.ingest, source=source),
                    reject=partial(service.reject, source),
                    link=link,
                    clock=self.clock,
                    state_path=state_dir / f"modbus-{gw_cfg.name}.json",
                )
            )
        return gateways

    def _mqtt_link(self, up: bool) -> None:
        self.metrics.link_up.labels("mqtt", "inbound").set(1 if up else 0)
        if self.service is not None:
            self.service.sources[MQTT_IN] = up

    async def _gauges(self) -> None:
        assert self.service is not None
        await self.service.probe_storage()
        self.service.update_pool_gauges()

    def _write_ready(self, port: int) -> None:
        if self.ready_file is None:
            return
        info = {
            "url": self.url,
            "port": port,
            "pid": __import__("os").getpid(),
            "mqtt_port": self.broker.port if self.broker else None,
        }
        tmp = self.ready_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(info))
        tmp.replace(self.ready_file)

    async def _every(self, seconds: float, step: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        """Run `step` every `seconds` until the daemon stops; never cut a step short (a
        cancelled database write can leave SQLite locked for the final snapshot).

        A storage outage is no task failure: the service logs it once per change
        (raps.storage_health), and the task retries less often while it lasts."""
        failures = 0  # storage failures in a row
        while not self.stopping.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), retry_delay(seconds, failures))
            if self.stopping.is_set():
                return
            try:
                await step()
                failures = 0
            except StorageUnavailable:
                failures += 1
            except Exception:
                failures = 0
                self.log.exception("periodic task failed", task=getattr(step, "__name__", "?"))

    async def _stop(
        self,
        server: uvicorn.Server,
        sources: list[asyncio.Task[Any]],
        http: asyncio.Task[Any],
        periodic: list[asyncio.Task[Any]],
    ) -> None:
        """SIGTERM: stop taking requests and events, finish the journal write, snapshot."""
        self.log.info("stopping")
        streams = getattr(self.app.state, "streams", None) if self.app else None
        if streams is not None:
            streams.close()  # end open dispatch screens' event streams now
        server.should_exit = True
        for t in sources:  # they acknowledge nothing they have not applied
            t.cancel()
        await asyncio.gather(*sources, return_exceptions=True)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(http, 10)
        await asyncio.gather(*periodic, return_exceptions=True)
        if self.service is not None:
            await self.service.stop()
        if self.broker is not None:
            await self.broker.stop()
        await self.writer.release()
        self.log.info("stopped")


def run(cfg: Config, *, create_key: bool = False, ready_file: Path | None = None) -> None:
    configure(cfg.logging.format, cfg.logging.level, cfg.site.id)
    clock = daemon_clock()
    if clock is not utc_now:
        get_logger(site=cfg.site.id).warning(
            "test hook: the clock is offset by a file", variable=CLOCK_OFFSET_ENV
        )
    asyncio.run(Daemon(cfg, create_key=create_key, ready_file=ready_file, clock=clock).run())

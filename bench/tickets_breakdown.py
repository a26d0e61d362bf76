"""Where a kiosk entry's time goes: the daemon's entry path in-process, without HTTP.

The kiosk round trips of bench/tickets_kiosk.py are timed from outside the daemon; this
runs the same Service and TicketDesk in this process, fed as `raps run` feeds them (the
simulated floor's events every 0.1 s, flush_events every 0.5 s, tick every 0.2 s,
pool gauges every 5 s), with 50 paced kiosk coroutines calling `TicketDesk.enter`
directly, and times its parts: the ledger's decision, the floor-log flush and the
journal commit (both under the desk's lock), and the event loop's lag (a 10 ms sleep
timed beside them).  The difference to the HTTP figures is the HTTP stack's share.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from collections.abc import Awaitable, Callable, Coroutine
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.harness import percentile, say, section
from bench.tickets_kiosk import DRAW, PACE, SIM_SEED, eligible_cards
from bench.tickets_setup import KIOSKS, daemon_config
from raps.config import parse_config
from raps.daemon import GAUGE_SECONDS, TICK_SECONDS
from raps.floorsim import FloorSimulator
from raps.metrics import Metrics
from raps.seal import KEY_BYTES, SeedSealer
from raps.service import Service
from raps.sources.simulated import CHUNK
from raps.store.database import open_engine
from selector.records import Actor
from selector.tickets import Channel


def _ms(values: list[float]) -> dict[str, float]:
    v = [x * 1000 for x in values] or [0.0]
    return {
        "n": len(values),
        "p50": round(percentile(v, 50), 3),
        "p95": round(percentile(v, 95), 3),
        "p99": round(percentile(v, 99), 3),
        "max": round(max(v), 3),
        "mean": round(statistics.fmean(v), 3),
    }


def _timed(parts: dict[str, list[float]], key: str, fn: Callable[..., Awaitable[Any]]) -> Any:
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return await fn(*args, **kwargs)
        finally:
            parts[key].append(time.perf_counter() - t0)

    return wrapper


async def _every(seconds: float, step: Callable[[], Any], stop: asyncio.Event) -> None:
    while not stop.is_set():
        await asyncio.sleep(seconds)
        result = step()
        if asyncio.iscoroutine(result):
            await result


async def breakdown(
    name: str, url: str, folder: Path, players: int, events_per_second: float, seconds: float
) -> dict[str, Any]:
    section(
        f"{name}: where an entry's time goes, in-process (TicketDesk.enter, no HTTP;"
        f" {KIOSKS} paced kiosks, {seconds:g} s, the floor at {events_per_second:g} events/s)"
    )
    now = datetime.now(UTC)
    text = daemon_config(url, folder, players, SIM_SEED, events_per_second, [], now)
    cfg = parse_config(text, "breakdown config")
    service = Service(cfg, open_engine(url), SeedSealer(bytes(KEY_BYTES)), Metrics(),
                      lambda: datetime.now(UTC))  # fmt: skip
    await service.start()
    sim = FloorSimulator(cfg.layout(), players, now - timedelta(seconds=30), seed=SIM_SEED,
                         events_per_second=events_per_second)  # fmt: skip
    service.ingest(sim.directory(), "cms")
    service.ingest(sim.events_until(datetime.now(UTC)), "sim")
    await service.flush_events()  # the start-up backlog, before anything is timed
    parts: dict[str, list[float]] = {"ledger": [], "floor_log": [], "journal": [], "lag": []}
    vars(service.floorlog)["append"] = _timed(parts, "floor_log", service.floorlog.append)
    vars(service.journal)["append"] = _timed(parts, "journal", service.journal.append)
    ledger = service.tickets.ledger
    real_enter = ledger.enter

    def enter(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return real_enter(*args, **kwargs)
        finally:
            parts["ledger"].append(time.perf_counter() - t0)

    vars(ledger)["enter"] = enter
    stop = asyncio.Event()

    async def floor() -> None:  # raps.sources.simulated.SimulatedFloor's loop, its chunks
        while not stop.is_set():
            events = sim.events_until(datetime.now(UTC))
            for i in range(0, len(events), CHUNK):
                service.ingest(events[i : i + CHUNK], "sim")
                await asyncio.sleep(0)
            await asyncio.sleep(0.1)

    async def lag() -> None:
        while not stop.is_set():
            t0 = time.perf_counter()
            await asyncio.sleep(0.01)
            parts["lag"].append(time.perf_counter() - t0 - 0.01)

    jobs: list[Coroutine[Any, Any, None]] = [
        floor(),
        lag(),
        _every(0.5, service.flush_events, stop),
        _every(TICK_SECONDS, service.tick, stop),
        _every(GAUGE_SECONDS, service.update_pool_gauges, stop),
    ]
    tasks = [asyncio.create_task(j) for j in jobs]
    cards = iter(eligible_cards(text, players)[0])
    latencies: list[float] = []
    actor = Actor("bench-kiosk", "kiosk")
    await asyncio.sleep(1.0)
    for v in parts.values():
        v.clear()

    async def kiosk(k: int, until: float) -> None:
        rng = random.Random(k)
        due = time.perf_counter() + rng.uniform(0, PACE)
        n = 0
        while due < until:
            wait = due - time.perf_counter()
            if wait > 0:
                await asyncio.sleep(wait)
            n += 1
            t0 = time.perf_counter()
            await service.tickets.enter(next(cards), DRAW, Channel.KIOSK, f"b{k}:{n}", actor,
                                        datetime.now(UTC))  # fmt: skip
            latencies.append(time.perf_counter() - t0)
            due += rng.uniform(0.5 * PACE, 1.5 * PACE)

    c0 = time.process_time()
    until = time.perf_counter() + seconds
    await asyncio.gather(*(kiosk(k, until) for k in range(KIOSKS)))
    cpu = time.process_time() - c0
    stop.set()
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await service.engine.dispose()
    out: dict[str, Any] = {"enter": _ms(latencies)}
    out.update({k: _ms(v) for k, v in parts.items()})
    out["cpu_ms_per_entry"] = round(1000 * cpu / max(1, len(latencies)), 3)
    labels = {
        "enter": "TicketDesk.enter, whole",
        "ledger": "ledger.enter (the rules)",
        "floor_log": "floor-log flush (under lock)",
        "journal": "journal commit (under lock)",
        "lag": "event-loop lag (10 ms sleep)",
    }
    say(f"    {'part (ms)':<32} {'n':>6} {'p50':>8} {'p95':>8} {'p99':>8} {'max':>8}")
    for key, label in labels.items():
        f = out[key]
        say(
            f"    {label:<32} {f['n']:>6} {f['p50']:>8.2f} {f['p95']:>8.2f} {f['p99']:>8.2f}"
            f" {f['max']:>8.2f}"
        )
    say(
        f"    (a floor-log flush writes nothing when another entry or the flush task has just"
        f" written it: its p50 is such a no-op); this process {out['cpu_ms_per_entry']:.2f} ms"
        " CPU per entry, the floor and its flushes included"
    )
    return out

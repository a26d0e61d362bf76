"""A simulated floor as a live source: the simulator paced by the daemon's clock."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime, timedelta

from raps.floorsim import FloorSimulator
from raps.service import Service

SOURCE = "simulator"
CHUNK = 5_000


class SimulatedFloor:
    """Feeds the service in real time; on start it catches up `warmup` of past play."""

    def __init__(
        self,
        service: Service,
        sim_factory: Callable[[datetime], FloorSimulator],
        clock: Callable[[], datetime],
        warmup: timedelta,
        period: float = 0.1,
    ) -> None:
        self.service = service
        self.clock = clock
        self.sim = sim_factory(clock() - warmup)
        self.period = period

    async def run(self) -> None:
        svc = self.service
        svc.ingest(self.sim.directory(), "cms")
        svc.sources[SOURCE] = True
        svc.metrics.link_up.labels("simulator", SOURCE).set(1)
        while True:
            events = self.sim.events_until(self.clock())
            for i in range(0, len(events), CHUNK):  # a long catch-up must not starve the API
                svc.ingest(events[i : i + CHUNK], SOURCE)
                await asyncio.sleep(0)
            await asyncio.sleep(self.period)

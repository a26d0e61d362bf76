"""A database outage under the daemon's periodic tasks: one line per state change (issue 16: 10).

The real `Daemon._every` loops run the service's tick, flush, snapshot and storage probe
while the SQLite file is taken away, with a RAPS winner and a stage winner whose claim
windows run out during the outage.  Each storage path says `down` once, `still down`
once after a minute, `up again` once; nothing logs a traceback or "periodic task
failed"; the timers retry with backoff, not every tick; and once the database is back
each overdue pick becomes a no-show exactly once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, MutableMapping
from pathlib import Path
from typing import Any

import pytest
import structlog
from sqlalchemy.engine import make_url

from raps import storage_health
from raps.daemon import Daemon
from raps.service import Service
from raps.storage_health import retry_delay
from selector.events import Tier
from selector.records import Actor
from selector.session import PickState
from tests.builders import Events
from tests.daemon_helpers import (
    CLAIM_SECONDS,
    SESSION,
    Clock,
    auth,
    card,
    client_for,
    floor_config,
    running_service,
    seat_players,
)

DRAW = "outage-draw"
STAGE = f"""
[[ticket_programs]]
id = "cash"
promotion = "raps"
tiers = ["jack"]
complimentary = {{ jack = 2 }}
[ticket_programs.period]
kind = "day_to_draw"
start_time = "08:00"
[ticket_programs.stage]
present_seconds = 90
prizes = [{{ kind = "cash", amount = 500000 }}]

[[ticket_draws]]
id = "{DRAW}"
program = "cash"
at = "2026-04-25 20:00"
opens = "2026-04-25 08:00"
closes = "2026-04-25 19:55"
winners = 1
"""
PATHS = ("database", "floor log", "floor snapshot", "journal")
REMINDED = ("database", "floor log", "journal")
MARKETING = Actor("ann", "marketing")
LOGS: list[Any] = []


def test_retries_back_off_to_a_cap_never_below_the_period() -> None:
    assert retry_delay(0.2, 0) == 0.2
    assert [retry_delay(0.2, n) for n in (1, 2, 3)] == [0.4, 0.8, 1.6]
    assert retry_delay(0.2, 50) == storage_health.RETRY_MAX_SECONDS
    assert retry_delay(60.0, 3) == 60.0  # the snapshot keeps its minute


def said(logs: list[MutableMapping[str, Any]], event: str) -> list[str]:
    """The storage paths that logged `<path> <event>`, in order."""
    return [e["storage"] for e in logs if e.get("event") == f"{e.get('storage')} {event}"]


async def until(check: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}: {LOGS[-20:]}"
        await asyncio.sleep(0.01)


async def pending_winners(service: Service) -> Events:
    """A RAPS pick and a stage pick, each waiting for its winner to present."""
    ev = seat_players(service, slots=[(card(1), "M01")])
    await service.open(SESSION, MARKETING, "open-1")
    drawn = await service.draw(SESSION, MARKETING, "draw-1", "slots")
    assert not drawn.outcome.no_eligible
    assert service.ingest([ev.player(card(2), tier=Tier.JACK, name="Lebo K.")], "test") == 1
    async with client_for(service, service.cfg) as client:
        body = {"request_id": "k-1", "card": card(2), "draw": DRAW}
        r = await client.post("/api/tickets/kiosk/entries", json=body, headers=auth("kiosk"))
        assert r.status_code == 200, r.text
        for step in ("open", "draw"):
            r = await client.post(f"/api/stage/draws/{DRAW}/{step}",
                                  json={"command_id": f"stage-{step}"},
                                  headers=auth("stage_host"))  # fmt: skip
            assert r.status_code == 200, r.text
    return ev


@pytest.mark.asyncio
async def test_an_outage_under_the_periodic_tasks_is_one_line_per_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(storage_health, "RETRY_MAX_SECONDS", 0.3)  # a short test
    url = f"sqlite:///{tmp_path / 'raps.db'}"
    cfg = floor_config(url, tmp_path, extra=STAGE)
    clock = Clock()
    db = Path(make_url(url).database or "")
    async with running_service(cfg, clock) as service:
        ev = await pending_winners(service)
        daemon = Daemon(cfg, clock=clock)
        daemon.service = service
        ticks = [0]

        async def tick() -> None:
            ticks[0] += 1
            await service.tick()

        steps: list[Callable[[], Coroutine[Any, Any, Any]]] = [
            tick, service.flush_events, service.snapshot_floor, daemon._gauges,
        ]  # fmt: skip
        sample = service.metrics.registry.get_sample_value
        with structlog.testing.capture_logs() as logs:
            LOGS[:] = [logs]
            tasks = [asyncio.create_task(daemon._every(0.02, step)) for step in steps]
            try:
                await service.flush_events()
                await service.engine.dispose()
                db.rename(db.with_suffix(".away"))
                db.mkdir()  # a directory where the database was: nothing can open it
                down_at, ticks[0] = time.monotonic(), 0
                clock.advance(CLAIM_SECONDS + 1)  # both winners' windows run out
                await until(lambda: set(said(logs, "down")) == set(PATHS) - {"floor log"},
                            "the database, the journal and the snapshots down")  # fmt: skip
                assert service.ingest([ev.game("M01", wager=100)], "test") == 1
                await until(lambda: set(said(logs, "down")) == set(PATHS), "the floor log down")
                clock.advance(61)
                # a snapshot first writes the floor log: while that fails, it is not tried
                await until(lambda: set(said(logs, "still down")) == set(REMINDED), "reminders")
                await asyncio.sleep(0.5)  # the tasks keep failing meanwhile: no new lines
                tries = ticks[0]
                elapsed = time.monotonic() - down_at
                db.rmdir()
                db.with_suffix(".away").rename(db)
                await until(lambda: set(said(logs, "up again")) == set(PATHS), "every path up")
                raps_pick = service.sessions[SESSION].picks[0]
                stage_pick = service.stage.sessions[DRAW].picks[0]
                await until(lambda: service.sessions[SESSION].picks[0].state
                            is PickState.NO_SHOW, "the RAPS no-show")  # fmt: skip
                await until(lambda: service.stage.sessions[DRAW].picks[0].state.value
                            == "no_show", "the stage no-show")  # fmt: skip
            finally:
                daemon.stopping.set()
                await asyncio.gather(*tasks)
        for event, paths in (("down", PATHS), ("still down", REMINDED), ("up again", PATHS)):
            assert sorted(said(logs, event)) == sorted(paths), (event, said(logs, event))
        assert not [e for e in logs if e.get("exc_info") or e["event"] == "periodic task failed"]
        storage_lines = [e for e in logs if e.get("storage")]
        assert len(storage_lines) == 2 * len(PATHS) + len(REMINDED), storage_lines
        # without backoff the tick would have tried every 0.02 s: 50 times a second
        assert 2 <= tries <= elapsed / 0.3 + 6, (tries, elapsed)
        assert raps_pick.card == card(1) and stage_pick.card == card(2)
        no_shows = [e.record["type"] for e in await service.journal.session_entries(SESSION)]
        assert no_shows.count("pick.no_show") == 1
        stage = [e.record["type"] for e in await service.journal.session_entries(f"draw:{DRAW}")]
        assert stage.count("draw.no_show") == 1, stage
        for path in ("database", "floor_log", "snapshot", "journal"):
            assert sample("raps_storage_outages_total", {"path": path}) == 1, path

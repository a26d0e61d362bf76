"""A start restores the sessions that are not closed before it is ready, and the closed
ones after (issue 20), on SQLite and PostgreSQL: which sessions are closed it learns from
the `session.closed` rows' columns, without reading their entries.

Meanwhile a closed session is closed: the gauges count it, the schedule refuses to change
it, a view or a command restores it first and is answered as for any closed session.  Its
checks run when it is restored: a tampered one still ends refused.  The columns are
outside the chain, so a forged `session.closed` row can only take a session out of play,
and one removed only makes it load at start, as an open session, with its checks.

The background restore is held at its first step by `Service.restore.pace` (a gate the
test opens): no sleeps.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from sqlalchemy import text

from raps.calendar_views import session_row
from raps.config import Config
from raps.metrics import Metrics
from raps.seal import SeedSealer
from raps.service import Service
from raps.store.database import open_engine
from selector.records import Actor
from selector.schedule import ScheduleError
from selector.session import SessionState
from tests.daemon_helpers import (
    SEED_KEY,
    SESSION,
    Clock,
    auth,
    card,
    client_for,
    floor_config,
    running_service,
    seat_players,
)

pytestmark = pytest.mark.asyncio
ADMIN = Actor("mia", "admin")
CLOSED = [f"R-{i}" for i in range(1, 5)]  # rehearsals: no window, any time
EXTRA = "".join(
    f'[[sessions]]\nid = "{sid}"\npromotion = "raps"\nstarts = "2026-04-25T12:00:00+02:00"\n'
    "quotas = { slots = 1, tables = 0 }\nrehearsal = true\n\n"
    for sid in CLOSED
)


@dataclass
class Env:
    cfg: Config
    clock: Clock
    tmp_path: Path


class Gate:
    """Service.restore.pace held shut: the background restore waits at its first step."""

    def __init__(self) -> None:
        self.opened = asyncio.Event()
        self.waiting = 0

    async def __call__(self) -> None:
        self.waiting += 1
        await self.opened.wait()


async def post(client: httpx.AsyncClient, sid: str, path: str, cid: str, **body: Any) -> Any:
    return await client.post(
        f"/api/sessions/{sid}/{path}", json={"command_id": cid, **body}, headers=auth("marketing")
    )


@pytest_asyncio.fixture
async def env(db_url: str, tmp_path: Path) -> AsyncIterator[Env]:
    """CLOSED run and closed (one pick each), SESSION open with one pick; no restart yet."""
    cfg = floor_config(db_url, tmp_path, extra=EXTRA, slots=2, tables=1)
    clock = Clock()
    async with running_service(cfg, clock) as service, client_for(service, cfg) as client:
        seat_players(service, slots=[(card(i), f"M0{i}") for i in range(1, 7)])
        for sid in [*CLOSED, SESSION]:
            assert (await post(client, sid, "open", f"{sid}-open")).status_code == 200
            r = await post(client, sid, "draw", f"{sid}-draw", kind="slots")
            assert r.status_code == 200, r.text
        for sid in CLOSED:
            r = await post(client, sid, "close", f"{sid}-close", force=True)
            assert r.status_code == 200, r.text
    yield Env(cfg, clock, tmp_path)


@asynccontextmanager
async def held(env: Env) -> AsyncIterator[tuple[Service, Gate]]:
    """A restarted service whose closed sessions' restore is held at its first step."""
    engine = open_engine(env.cfg.storage.url)
    service = Service(env.cfg, engine, SeedSealer(SEED_KEY), Metrics(), env.clock)
    gate = Gate()
    service.restore.pace = gate
    try:
        await service.start()
        yield service, gate
    finally:
        if service.restore.task is not None:
            service.restore.task.cancel()
            await asyncio.gather(service.restore.task, return_exceptions=True)
        await engine.dispose()


async def finish(service: Service, gate: Gate) -> None:
    gate.opened.set()
    assert service.restore.task is not None
    await service.restore.task


def gauge(service: Service, state: str, rehearsal: bool) -> float:
    labels = ("raps", state, str(rehearsal).lower())
    return float(service.metrics.sessions.labels(*labels)._value.get())


async def sql(service: Service, statement: str, **params: object) -> None:
    async with service.engine.begin() as conn:
        await conn.execute(text(statement), params)


async def edit_a_draw(service: Service, session_id: str) -> None:
    """An insider edits a session's draw in the database (and not its hash)."""
    await sql(
        service,
        "UPDATE journal SET record = record || ' ' WHERE session_id = :s AND type = 'pick.drawn'",
        s=session_id,
    )


async def test_open_sessions_before_ready_closed_ones_after(env: Env) -> None:
    async with held(env) as (service, gate):
        # ready: the open session whole, the closed ones known as closed, none read
        assert service.session(SESSION).state == SessionState.OPEN
        assert len(service.session(SESSION).picks) == 1
        assert set(service.deferred) == set(CLOSED) and not set(CLOSED) & set(service.sessions)
        assert all(d.state == SessionState.CLOSED for d in service.deferred.values())
        assert gauge(service, "closed", True) == len(CLOSED)
        assert gauge(service, "open", False) == 1
        row = session_row(service, service.planner.plan(CLOSED[0]))
        assert row["state"] == "closed" and row["changeable"] is False
        await asyncio.sleep(0)  # the restore's task runs up to the gate, and waits there
        assert gate.waiting == 1 and set(service.deferred) == set(CLOSED)

        await finish(service, gate)
        assert not service.deferred and not service.refused
        for sid in CLOSED:
            s = service.session(sid)
            assert s.state == SessionState.CLOSED and len(s.picks) == 1 and s.rehearsal
        assert gauge(service, "closed", True) == len(CLOSED)


async def test_a_closed_session_asked_for_first_is_answered_as_closed(env: Env) -> None:
    async with held(env) as (service, gate), client_for(service, env.cfg) as client:
        view = await client.get(f"/api/sessions/{CLOSED[0]}", headers=auth("marketing"))
        assert view.status_code == 200, view.text
        assert view.json()["state"] == "closed" and len(view.json()["picks"]) == 1
        assert CLOSED[0] in service.sessions and CLOSED[0] not in service.deferred

        listed = await client.get("/api/sessions", headers=auth("marketing"))
        states = {s["session_id"]: (s["state"], s["picks"]) for s in listed.json()}
        assert states[CLOSED[0]] == ("closed", 1) and states[CLOSED[1]] == ("closed", None)

        # a retried close is the close it was; a new draw is refused as in a closed session
        again = await post(client, CLOSED[1], "close", f"{CLOSED[1]}-close", force=True)
        assert again.status_code == 200 and again.json()["replayed"] is True, again.text
        draw = await post(client, CLOSED[2], "draw", "late-draw", kind="slots")
        assert draw.status_code == 409, draw.text
        assert CLOSED[3] in service.deferred  # all of it before the restore got there

        await finish(service, gate)
        assert not service.deferred and not service.refused
        assert set(CLOSED) <= set(service.sessions)


async def test_schedule_changes_to_a_closed_session_not_restored_yet_are_refused(
    env: Env,
) -> None:
    async with held(env) as (service, _gate):
        sid = CLOSED[0]
        assert sid in service.deferred
        with pytest.raises(ScheduleError):
            await service.planner.change(ADMIN, "c1", sid, {"name": "renamed"}, "why")
        with pytest.raises(ScheduleError):
            await service.planner.cancel(ADMIN, "c2", sid, "why")
        assert sid in service.deferred  # untouched: still closed, still to be restored
        assert service.planner.plan(sid).name != "renamed"


async def test_a_tampered_closed_session_is_refused_once_restored(env: Env) -> None:
    async with running_service(env.cfg, env.clock) as before:
        await edit_a_draw(before, CLOSED[0])
    async with held(env) as (service, gate), client_for(service, env.cfg) as client:
        assert CLOSED[0] in service.deferred and CLOSED[0] not in service.refused
        await finish(service, gate)
        assert CLOSED[0] not in service.sessions
        assert "hash does not match" in service.refused[CLOSED[0]]
        assert set(CLOSED[1:]) <= set(service.sessions)
        r = await post(client, CLOSED[0], "close", "after", force=True)
        assert r.status_code == 409 and "is refused" in r.json()["detail"], r.text


async def test_a_tampered_closed_session_asked_for_first_is_refused(env: Env) -> None:
    async with running_service(env.cfg, env.clock) as before:
        await edit_a_draw(before, CLOSED[0])
    async with held(env) as (service, _gate), client_for(service, env.cfg) as client:
        r = await client.get(f"/api/sessions/{CLOSED[0]}", headers=auth("marketing"))
        assert r.status_code == 409 and "is refused" in r.json()["detail"], r.text
        assert "hash does not match" in service.refused[CLOSED[0]]


async def test_a_forged_close_column_takes_an_open_session_out_of_play(env: Env) -> None:
    """The type column says an open session's draw is its close: the start defers it, and
    its records, once read, refuse it: never drawable on the column's word."""
    async with running_service(env.cfg, env.clock) as before:
        await sql(
            before,
            "UPDATE journal SET type = 'session.closed' WHERE session_id = :s AND type = "
            "'pick.drawn'",
            s=SESSION,
        )
    async with held(env) as (service, gate), client_for(service, env.cfg) as client:
        assert SESSION in service.deferred
        r = await post(client, SESSION, "draw", "on-the-column", kind="slots")
        assert r.status_code == 409, r.text
        assert "a column was edited" in service.refused[SESSION]
        await finish(service, gate)
        assert SESSION in service.refused and SESSION not in service.sessions


async def test_a_close_s_column_removed_loads_the_session_at_start(env: Env) -> None:
    async with running_service(env.cfg, env.clock) as before:
        await sql(
            before,
            "UPDATE journal SET type = 'pick.noted' WHERE session_id = :s AND type = "
            "'session.closed'",
            s=CLOSED[0],
        )
    async with held(env) as (service, _gate):
        assert CLOSED[0] not in service.deferred
        assert service.session(CLOSED[0]).state == SessionState.CLOSED  # its records say so


async def test_a_close_deleted_refuses_the_session_at_start(env: Env) -> None:
    """The close row deleted (its chain not rebuilt, the head mark intact): the session
    would read as open; the gap after its last entry refuses it."""
    async with running_service(env.cfg, env.clock) as before:
        await sql(
            before,
            "DELETE FROM journal WHERE session_id = :s AND type = 'session.closed'",
            s=CLOSED[0],
        )
    async with held(env) as (service, _gate):
        assert CLOSED[0] not in service.deferred and CLOSED[0] not in service.sessions
        assert "is missing" in service.refused[CLOSED[0]], service.refused
        assert set(CLOSED[1:]) <= set(service.deferred)


async def test_streams_are_found_by_prefix_exactly(env: Env) -> None:
    """The stage's streams by prefix (index ranges; bytewise on PostgreSQL whatever the
    database's collation): exactly the ids that start with it, in journal order."""
    names = ["stage:b", "stage;x", "stagex", "Stage:c", "stage:a", "proxies:1", "proxies"]
    async with running_service(env.cfg, env.clock) as service:
        at = env.clock().isoformat()
        await service.journal.append([
            {"type": "test.noted", "session_id": n, "at": at,
             "actor": {"user": "t", "role": "admin"}, "data": {}}
            for n in names
        ])  # fmt: skip
        assert await service.journal.session_ids("stage:") == ["stage:b", "stage:a"]
        found = await service.journal.session_ids("proxies:", "stage:")
        assert found == ["stage:b", "stage:a", "proxies:1"]
        every = await service.journal.session_ids()
        assert [n for n in every if n in names] == names

"""A live RAPS session is opened and drawn only inside its window (003: 18:00-19:00).

Outside it the daemon refuses with the window in the message; an admin may override
with a typed reason (003 rule 20: technical failure, rescheduling), which is journaled
before what it allowed and shown by `raps verify` as an exception, never silently.
Rehearsal sessions have no window: they are for training at any time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from raps.audit import check, read_database
from raps.config import Config, ConfigError
from raps.service import Service
from selector.records import Actor, Record
from tests.builders import NOON
from tests.daemon_helpers import (
    Clock,
    auth,
    card,
    client_for,
    floor_config,
    running_service,
    seat_players,
)

LIVE, LATER, TRAINING = "live-1200", "live-1400", "training"
SESSIONS = f"""
[[sessions]]
id = "{LIVE}"
promotion = "raps"
starts = "2026-04-25 12:00"
ends = "2026-04-25 12:30"
quotas = {{ slots = 3, tables = 0 }}

[[sessions]]
id = "{LATER}"
promotion = "raps"
starts = "2026-04-25 14:00"
ends = "2026-04-25 15:00"
quotas = {{ slots = 1, tables = 0 }}

[[sessions]]
id = "{TRAINING}"
promotion = "raps"
starts = "2026-04-25 14:00"
ends = "2026-04-25 15:00"
quotas = {{ slots = 1, tables = 0 }}
rehearsal = true
"""


@dataclass
class Env:
    cfg: Config
    clock: Clock
    service: Service
    client: httpx.AsyncClient
    n: int = 0

    async def post(
        self, sid: str, path: str, role: str = "marketing", **body: Any
    ) -> httpx.Response:
        self.n += 1
        body.setdefault("command_id", f"w-{self.n}")
        return await self.client.post(f"/api/sessions/{sid}/{path}", json=body,
                                      headers=auth(role))  # fmt: skip


@pytest_asyncio.fixture
async def env(db_url: str, tmp_path: Path) -> AsyncIterator[Env]:
    evening = ("2026-04-25T20:00:00+02:00", "2026-04-25T21:00:00+02:00")  # SESSION, apart
    cfg = floor_config(db_url, tmp_path, extra=SESSIONS, session_window=evening)
    clock = Clock()  # 12:05, inside LIVE's window
    async with running_service(cfg, clock) as service, client_for(service, cfg) as client:
        seat_players(service, slots=[(card(i), f"M0{i}") for i in range(1, 6)])
        yield Env(cfg, clock, service, client)


@pytest.mark.asyncio
async def test_inside_its_window_a_live_session_runs_as_usual(env: Env) -> None:
    assert (await env.post(LIVE, "open")).status_code == 200
    r = await env.post(LIVE, "draw", kind="slots")
    assert r.status_code == 200 and r.json()["pick"] is not None, r.text


@pytest.mark.asyncio
async def test_outside_it_open_and_draw_are_refused_naming_the_window(env: Env) -> None:
    r = await env.post(LATER, "open")  # 12:05: two hours early
    assert r.status_code == 409, r.text
    assert "only from Sat 25 Apr 2026 14:00 until 15:00" in r.json()["detail"]
    assert (await env.post(LIVE, "open")).status_code == 200
    env.clock.now = NOON.replace(minute=30)  # the window closes at 12:30
    r = await env.post(LIVE, "draw", kind="slots")
    assert r.status_code == 409 and "is drawn only from" in r.json()["detail"], r.text
    kinds = [e.record["type"] for e in await env.service.journal.session_entries(LIVE)]
    assert kinds == ["session.opened"]  # a refusal records nothing


@pytest.mark.asyncio
async def test_an_admin_overrides_with_a_reason_journaled_and_verify_shows_it(env: Env) -> None:
    assert (await env.post(LIVE, "open")).status_code == 200
    env.clock.now = NOON.replace(minute=40)  # the players are still on the floor
    reason = "SAS link down 12:10-12:35, draws resumed (rule 20)"
    r = await env.post(LIVE, "draw", kind="slots", override_reason=reason)
    assert r.status_code == 409 and "only an admin" in r.json()["detail"]  # marketing
    r = await env.post(LIVE, "draw", role="admin", kind="slots", override_reason=reason)
    assert r.status_code == 200 and r.json()["pick"] is not None, r.text
    records = [e.record for e in await env.service.journal.session_entries(LIVE)]
    assert [x["type"] for x in records] == [
        "session.opened",
        "session.override",
        "pick.requested",
        "pick.drawn",
    ]
    override = records[1]
    assert override["data"]["reason"] == reason and override["data"]["action"] == "drawn"
    assert override["actor"] == {"user": "ada", "role": "admin"}
    # the retry of the same command changes nothing, and needs no new override
    again = await env.post(LIVE, "draw", role="admin", kind="slots", command_id=f"w-{env.n}",
                           override_reason=reason)  # fmt: skip
    assert again.status_code == 200 and again.json()["pick"] == r.json()["pick"]
    close = await env.post(LIVE, "close", role="admin", force=True)
    assert close.status_code == 200, close.text
    report = check(*await read_database(env.cfg.storage.url), None, from_genesis=True)
    assert report.ok and report.exit_code == 3, report.lines()  # scripts see exceptions
    lines = report.lines()
    at = lines.index(f"session {LIVE}: OK (every pick recomputed)")
    assert lines[at + 1].startswith("  EXCEPTION: drawn at 2026-04-25T12:40:00+02:00 outside")
    assert "by ada (admin)" in lines[at + 1] and reason in lines[at + 1]
    assert lines[-1].startswith("RESULT: OK, WITH")  # closed late: an anomaly besides


@pytest.mark.asyncio
async def test_verify_finds_an_open_outside_the_window_that_no_override_allowed(env: Env) -> None:
    """The daemon refuses it, so a journal showing one was written by someone else: a
    session.opened at 12:05 for the 14:00-15:00 session, chained like any record."""
    forged = Record("session.opened", LATER, NOON.replace(minute=5), Actor("eve", "marketing"),
                    {"promotion_id": "raps", "rehearsal": False, "command_id": "x"})  # fmt: skip
    await env.service.journal.append([forged.to_dict()])
    report = check(*await read_database(env.cfg.storage.url), None, from_genesis=True)
    assert not report.ok and report.exit_code == 1
    assert (
        f"  session {LATER}: session.opened at 2026-04-25T12:05:00+02:00 is outside its "
        "scheduled window 2026-04-25T14:00:00+02:00 - 2026-04-25T15:00:00+02:00, with no "
        "override"
    ) in report.lines()


@pytest.mark.asyncio
async def test_a_rehearsal_runs_at_any_time(env: Env) -> None:
    assert (await env.post(TRAINING, "open")).status_code == 200  # 12:05, window 14:00
    r = await env.post(TRAINING, "draw", kind="slots")
    assert r.status_code == 200, r.text


def test_a_window_that_ends_before_it_starts_is_refused(tmp_path: Path) -> None:
    bad = SESSIONS.replace('ends = "2026-04-25 12:30"', 'ends = "2026-04-25 11:00"')
    with pytest.raises(ConfigError) as info:
        floor_config(f"sqlite:///{tmp_path / 'raps.db'}", tmp_path, extra=bad)
    assert [p.key for p in info.value.problems] == ["sessions[1].ends"]
    assert "must be after starts (2026-04-25 12:00)" in str(info.value)

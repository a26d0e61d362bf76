"""The schedule in the running daemon: sessions created, approved, rescheduled and
cancelled from the calendar page's API without a restart, journaled with who and why,
kept across a restart (the config does not undo them), exported and imported as TOML,
and shown to the inspector by `raps verify`."""

from __future__ import annotations

import tomllib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from raps.audit import check, read_database
from raps.config import Config, ConfigError
from raps.schedule_toml import export_toml, import_toml, read_document
from raps.service import Service
from tests.daemon_helpers import (
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
CALENDAR = """
[promotions.period]
first = "2026-04-18"
last = "2026-06-27"

[promotions.calendar]
dated = [{ dates = ["2026-05-02"], times = ["18:00"] }]
windows = { raps = { start = "at", end = "19:00" } }
"""
NEW = {
    "session_id": "extra-1215",
    "promotion_id": "raps",
    "name": "Extra session",
    "starts": "2026-04-25 12:00",
    "ends": "2026-04-25 12:45",
    "slots": 2,
    "tables": 0,
}


@dataclass
class Env:
    cfg: Config
    clock: Clock
    service: Service
    client: httpx.AsyncClient
    n: int = 0

    async def post(self, path: str, role: str = "marketing", **body: Any) -> httpx.Response:
        self.n += 1
        body.setdefault("command_id", f"sch-{self.n}")
        body.setdefault("reason", "test")
        return await self.client.post(path, json=body, headers=auth(role))

    async def session_cmd(self, sid: str, path: str, role: str = "marketing") -> httpx.Response:
        self.n += 1
        return await self.client.post(
            f"/api/sessions/{sid}/{path}",
            headers=auth(role),
            json={"command_id": f"s-{self.n}", "kind": "slots"},
        )


def config(db_url: str, tmp_path: Path) -> Config:
    return floor_config(db_url, tmp_path, extra=CALENDAR)


@pytest_asyncio.fixture
async def env(db_url: str, tmp_path: Path) -> AsyncIterator[Env]:
    cfg = config(db_url, tmp_path)
    clock = Clock()  # 12:05 on 25 April
    async with running_service(cfg, clock) as service, client_for(service, cfg) as client:
        seat_players(service, slots=[(card(i), f"M0{i}") for i in range(1, 6)])
        yield Env(cfg, clock, service, client)


async def test_marketing_creates_an_admin_approves_and_it_opens_without_a_restart(env: Env) -> None:
    r = await env.post("/api/schedule/sessions", **NEW)
    assert r.status_code == 200, r.text
    assert r.json()["session"]["status"] == "proposed"
    listed = {
        s["session_id"]
        for s in (await env.client.get("/api/sessions", headers=auth("marketing"))).json()
    }
    assert "extra-1215" in listed  # the handheld sees it at once
    r = await env.session_cmd("extra-1215", "open")
    assert r.status_code == 409 and "not approved yet" in r.json()["detail"], r.text
    r = await env.post("/api/schedule/sessions/extra-1215/approve", reason="ok")
    assert r.status_code == 403  # marketing does not approve its own session
    r = await env.post(
        "/api/schedule/sessions/extra-1215/approve",
        role="admin",
        reason="checked: the GM asked for it",
    )
    assert r.status_code == 200 and r.json()["session"]["status"] == "approved", r.text
    assert (await env.session_cmd("extra-1215", "open")).status_code == 200
    r = await env.session_cmd("extra-1215", "draw")
    assert r.status_code == 200 and r.json()["pick"] is not None, r.text
    assert env.service.session("extra-1215").rules.quotas["slots"] == 2
    r = await env.post("/api/schedule/sessions/extra-1215/change", changes={"slots": 3})
    assert r.status_code == 422 and "has opened" in r.json()["detail"]["detail"]
    r = await env.client.get("/api/schedule/sessions/extra-1215", headers=auth("security"))
    hist = r.json()["history"]
    assert [(h["type"], h["user"], h["role"]) for h in hist] == [
        ("session_added", "ann", "marketing"),
        ("session_approved", "ada", "admin"),
    ]
    assert hist[1]["reason"] == "checked: the GM asked for it"


async def test_bad_input_is_refused_naming_the_field_and_nothing_is_journaled(env: Env) -> None:
    head = env.service.journal.head
    cases = [
        ({**NEW, "ends": "2026-04-25 11:00"}, "ends", "must be after starts"),
        (
            {**NEW, "starts": "2026-07-01 12:00", "ends": "2026-07-01 13:00"},
            "starts",
            "outside the promotion's period",
        ),
        ({**NEW, "starts": "2026-04-25 12:20"}, "starts", "overlaps session"),  # after a create
        ({**NEW, "session_id": SESSION}, "session_id", "already exists"),
        ({**NEW, "starts": "25/04/2026"}, "starts", "YYYY-MM-DD HH:MM"),
        (
            {**NEW, "starts": "2026-04-26 12:00", "ends": "2026-04-26 12:45", "reason": " "},
            "reason",
            "say why",
        ),
    ]
    assert (
        await env.post("/api/schedule/sessions", **{**NEW, "session_id": "first"})
    ).status_code == 200
    head = env.service.journal.head
    for body, key, words in cases:
        r = await env.post("/api/schedule/sessions", **body)
        assert r.status_code == 422, (body, r.text)
        assert r.json()["detail"]["field"] == key and words in r.json()["detail"]["detail"], r.text
    r = await env.post("/api/schedule/sessions", **{**NEW, "slots": "two"})
    assert r.status_code == 422  # the schema's own refusal
    r = await env.post("/api/schedule/sessions", role="security", **NEW)
    assert r.status_code == 403
    assert env.service.journal.head == head


async def test_a_calendar_set_on_the_page_makes_its_sessions_and_an_impossible_one_is_refused(
    env: Env,
) -> None:
    cal = {
        "weekly": [
            {"weekdays": ["sat"], "times": ["18:00"], "first": "2026-05-09", "last": "2026-05-23"}
        ],
        "windows": {"raps": {"start": "at", "end": "19:00"}},
    }
    body = {
        "period": {"first": "2026-04-18", "last": "2026-06-27"},
        "calendar": cal,
        "calendar_sessions": {"window": "raps", "slots": 6, "tables": 4},
    }
    bad = {**body, "calendar": {**cal, "windows": {"raps": {"start": "at", "end": "17:00"}}}}
    r = await env.post("/api/schedule/promotions/raps", **bad)
    assert r.status_code == 422 and r.json()["detail"]["field"] == "calendar.weekly[0]", r.text
    r = await env.post("/api/schedule/promotions/raps", role="admin", **body)
    assert r.status_code == 200, r.text
    made = sorted(s for s in env.service.sessions if s.startswith("raps-2026"))
    assert made == ["raps-20260509-1800", "raps-20260516-1800", "raps-20260523-1800"]
    r = await env.client.get("/api/calendar?month=2026-05", headers=auth("ops"))
    items = r.json()["items"]
    assert [i["id"] for i in items if i["kind"] == "session"] == made
    assert r.json()["promotions"][0]["eligible"] == {"slots": 5}


async def test_the_month_shows_what_is_open_now_and_next(env: Env) -> None:
    r = await env.post("/api/schedule/sessions", role="admin", **NEW)
    assert r.status_code == 200
    month = (await env.client.get("/api/calendar?month=2026-04", headers=auth("security"))).json()
    now = {i["id"]: i["why"] for i in month["open_now"]}
    assert now == {"extra-1215": "in its window"}  # 12:05: inside 12:00-12:45
    assert (await env.session_cmd("extra-1215", "open", role="admin")).status_code == 200
    month = (await env.client.get("/api/calendar", headers=auth("security"))).json()
    assert month["month"] == "2026-04"
    assert {i["id"]: i["why"] for i in month["open_now"]} == {"extra-1215": "open"}
    assert [i["id"] for i in month["next"]][:1] == ["raps@2026-05-02 18:00"]  # no session yet
    r = await env.client.get("/api/calendar?month=April", headers=auth("security"))
    assert r.status_code == 422


async def test_the_schedule_survives_a_restart_and_the_config_does_not_undo_it(
    db_url: str, tmp_path: Path
) -> None:
    cfg, clock = config(db_url, tmp_path), Clock()
    async with running_service(cfg, clock) as service, client_for(service, cfg) as client:
        e = Env(cfg, clock, service, client)
        assert (await e.post("/api/schedule/sessions", **NEW)).status_code == 200
        r = await e.post(f"/api/schedule/sessions/{SESSION}/cancel", reason="the GM moved it")
        assert r.status_code == 200, r.text
        assert SESSION not in service.sessions
        head = service.journal.head
    async with running_service(cfg, clock) as service:
        assert service.journal.head == head  # nothing seeded again
        assert SESSION not in service.sessions  # cancelled stays cancelled
        assert service.planner.plan("extra-1215").status.value == "proposed"
        assert service.session("extra-1215").rules.quotas["slots"] == 2
    report = check(*await read_database(cfg.storage.url), None, from_genesis=True)
    assert report.ok, report.lines()
    changes = [x for x in report.lines() if x.startswith("  CHANGE: ")]
    assert (
        len(changes) == 2
        and "session_cancelled S-20260425-1200 by ann (marketing): 'the GM moved it'" in changes[1]
    )


async def test_export_and_import_as_toml_journal_who_and_why(env: Env, tmp_path: Path) -> None:
    assert (await env.post("/api/schedule/sessions", role="admin", **NEW)).status_code == 200
    r = await env.client.get("/api/schedule/export", headers=auth("auditor"))
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/toml")
    page = tomllib.loads(r.text)
    offline = tomllib.loads(await export_toml(env.cfg))
    assert offline == page
    assert [s["id"] for s in page["sessions"]] == [SESSION, "extra-1215"]
    assert page["sessions"][1]["starts"] == "2026-04-25 12:00"
    assert page["promotions"][0]["period"] == {"first": "2026-04-18", "last": "2026-06-27"}

    other = tmp_path / "other"
    other.mkdir()
    cfg2 = floor_config(f"sqlite:///{other / 'raps.db'}", other)
    path = tmp_path / "schedule.toml"
    path.write_text(r.text.replace('"Extra session"', '"Extra (site 2)"'), encoding="utf-8")
    n = await import_toml(cfg2, read_document(path), "copied from site 1", user="ada")
    assert n == 2  # the promotion's period and calendar, and the new session
    again = await import_toml(cfg2, read_document(path), "the same again", user="ada")
    assert again == 0
    async with running_service(cfg2, Clock()) as service:
        plan = service.planner.plan("extra-1215")
        assert (plan.name, plan.slots, plan.status.value) == ("Extra (site 2)", 2, "approved")
        rec = service.planner.schedule.records[-1]
        assert (rec.actor.user, rec.actor.role, rec.data["reason"]) == (
            "ada",
            "import",
            "copied from site 1",
        )
    path.write_text(
        '[[sessions]]\nid = "x"\npromotion = "raps"\nstarts = "2026-04-25 12:00"\ncolour = "red"\n',
        encoding="utf-8",
    )
    with pytest.raises(Exception, match=r"sessions\[0\]\.colour"):
        read_document(path)


async def test_a_config_whose_calendar_or_session_cannot_be_names_the_key(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'x.db'}"
    bad = CALENDAR.replace('end = "19:00"', 'end = "17:00"')
    with pytest.raises(ConfigError) as e:
        floor_config(url, tmp_path, extra=bad)
    assert "promotions[0].calendar.dated[0]" in str(e.value) and "before it starts" in str(e.value)
    late = (
        CALENDAR + '\n[[sessions]]\nid = "late"\npromotion = "raps"\n'
        'starts = "2026-07-04 18:00"\nends = "2026-07-04 19:00"\n'
    )
    with pytest.raises(ConfigError) as e:
        floor_config(url, tmp_path, extra=late)
    assert "sessions[1].starts" in str(e.value) and "outside the promotion's period" in str(e.value)

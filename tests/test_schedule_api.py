"""The schedule in the running daemon: sessions created, approved, rescheduled and
cancelled from the calendar page's API without a restart, journaled with who and why,
kept across a restart (the config does not undo them), exported and imported as TOML,
and shown to the inspector by `raps verify`."""

from __future__ import annotations

import tomllib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import pytest_asyncio

from raps.audit import check, read_database
from raps.config import Config, ConfigError
from raps.schedule_toml import export_toml, import_toml, read_document
from raps.store.daemon_lock import DaemonLock, DatabaseBusy
from tests.builders import NOON
from tests.daemon_helpers import (
    SESSION,
    Clock,
    CommandEnv,
    auth,
    card,
    client_for,
    floor_config,
    running_service,
    seat_players,
)

pytestmark = pytest.mark.asyncio
# draws at 11:00 and 12:00 on 25 April (SESSION holds the first) and 18:00 on 2 May
CALENDAR = """
[promotions.period]
first = "2026-04-18"
last = "2026-06-27"

[promotions.calendar]
dated = [
  { dates = ["2026-04-25"], times = ["11:00", "12:00"] },
  { dates = ["2026-05-02"], times = ["18:00"] },
]
windows = { raps = { start = "at", end = "+59m" } }
"""
MORNING = ("2026-04-25T11:00:00+02:00", "2026-04-25T11:59:00+02:00")  # SESSION's window
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
class Env(CommandEnv):
    prefix: str = "sch"

    async def session_cmd(self, sid: str, path: str, role: str = "marketing") -> httpx.Response:
        self.n += 1
        return await self.client.post(
            f"/api/sessions/{sid}/{path}",
            headers=auth(role),
            json={"command_id": f"s-{self.n}", "kind": "slots"},
        )


def config(db_url: str, tmp_path: Path) -> Config:
    return floor_config(db_url, tmp_path, extra=CALENDAR, session_window=MORNING)


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
            {**NEW, "starts": "2026-05-02 18:00", "ends": "2026-05-02 18:45", "reason": " "},
            "reason",
            "say why",
        ),
        (
            {**NEW, "starts": "2026-04-26 12:00", "ends": "2026-04-26 12:45"},
            "starts",
            "is not in a 'raps' window of the calendar of promotion 'raps' (nearest: Sat 25 Apr "
            "2026 12:00 or Sat 02 May 2026 18:00)",
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
        "dated": [{"dates": ["2026-04-25"], "times": ["11:00"]}],  # SESSION's: kept as it is
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


async def test_export_and_import_as_toml_propose_for_an_admin(env: Env, tmp_path: Path) -> None:
    assert (await env.post("/api/schedule/sessions", role="admin", **NEW)).status_code == 200
    r = await env.client.get("/api/schedule/export", headers=auth("auditor"))
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/toml")
    page = tomllib.loads(r.text)
    offline = tomllib.loads(await export_toml(env.cfg))
    assert offline == page
    assert [s["id"] for s in page["sessions"]] == [SESSION, "extra-1215"]
    assert page["sessions"][1]["starts"] == "2026-04-25 12:00"
    promo = page["promotions"][0]
    assert promo["period"] == {"first": "2026-04-18", "last": "2026-06-27"}
    assert (promo["threshold_points"], promo["window"]) == (50, {"start": "08:00", "end": "19:00"})

    other = tmp_path / "other"
    other.mkdir()
    cfg2 = floor_config(f"sqlite:///{other / 'raps.db'}", other)  # no calendar, SESSION at noon
    path = tmp_path / "schedule.toml"
    text = r.text.replace('"Extra session"', '"Extra (site 2)"')
    text = text.replace("threshold_points = 50", "threshold_points = 60")
    path.write_text(text, "utf-8")
    writer = DaemonLock(cfg2.storage.url)  # a daemon running on the database holds it
    assert await writer.acquire()
    with pytest.raises(DatabaseBusy, match="a daemon is running on this database"):
        await import_toml(cfg2, read_document(path), "copied from site 1", user="ada")
    await writer.release()
    done = await import_toml(cfg2, read_document(path), "copied from site 1", user="ada")
    assert [x.type for x in done.records] == [
        "schedule.session_changed",  # SESSION to 11:00-11:59, as on site 1
        "schedule.session_added",
        "schedule.promotion_proposed",  # who qualifies: 60 points
        "schedule.promotion_proposed",  # the period and calendar
    ]
    assert all((x.actor.user, x.actor.role) == ("ada", "import") for x in done.records)
    again = await import_toml(cfg2, read_document(path), "the same again", user="ada")
    assert again.records == []  # nothing differs from what waits
    async with running_service(cfg2, Clock()) as service, client_for(service, cfg2) as client:
        e2 = Env(cfg2, Clock(), service, client)
        plan = service.planner.plan("extra-1215")
        assert (plan.name, plan.slots, plan.status.value) == ("Extra (site 2)", 2, "proposed")
        assert service.planner.schedule.calendars == {}  # nothing applies unapproved
        assert service.floor.promotion("raps").threshold_points == 50
        r = await e2.post("/api/schedule/promotions/raps/approve", role="admin", reason="ok")
        assert r.status_code == 200, r.text
        assert service.floor.promotion("raps").threshold_points == 60  # at once
        assert "raps" in service.planner.schedule.calendars
        for sid in (SESSION, "extra-1215"):
            r = await e2.post(f"/api/schedule/sessions/{sid}/approve", role="admin", reason="ok")
            assert r.status_code == 200, r.text
        assert (await e2.session_cmd("extra-1215", "open", role="admin")).status_code == 200
    path.write_text(text.replace('"Extra (site 2)"', '"Extra, renamed"'), "utf-8")
    done = await import_toml(cfg2, read_document(path), "renamed", user="ada")
    assert done.opened == ["extra-1215"] and done.records == []  # left as it is, and said
    path.write_text(
        '[[sessions]]\nid = "x"\npromotion = "raps"\nstarts = "2026-04-25 12:00"\ncolour = "red"\n',
        encoding="utf-8",
    )
    with pytest.raises(Exception, match=r"sessions\[0\]\.colour"):
        read_document(path)


async def test_a_config_whose_calendar_or_session_cannot_be_names_the_key(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'x.db'}"
    bad = CALENDAR.replace('end = "+59m"', 'end = "10:00"')
    with pytest.raises(ConfigError) as e:
        floor_config(url, tmp_path, extra=bad, session_window=MORNING)
    assert "promotions[0].calendar.dated[0]" in str(e.value) and "before it starts" in str(e.value)
    late = (
        CALENDAR + '\n[[sessions]]\nid = "late"\npromotion = "raps"\n'
        'starts = "2026-07-04 18:00"\nends = "2026-07-04 19:00"\n'
    )
    with pytest.raises(ConfigError) as e:
        floor_config(url, tmp_path, extra=late, session_window=MORNING)
    assert "sessions[1].starts" in str(e.value) and "outside the promotion's period" in str(e.value)


async def test_every_live_session_of_a_config_has_a_window_on_the_calendar(tmp_path: Path) -> None:
    """A live `[[sessions]]` entry without `ends` takes its window from the calendar
    occurrence that holds its start; with neither, or off the calendar, it is refused."""
    url = f"sqlite:///{tmp_path / 'x.db'}"
    may = '\n[[sessions]]\nid = "may"\npromotion = "raps"\nstarts = "2026-05-02 18:00"\n'
    cfg = floor_config(url, tmp_path, extra=CALENDAR + may, session_window=MORNING)
    schedule = cfg.new_schedule()
    cfg.seed_schedule(schedule, NOON)
    plan = schedule.sessions["may"]
    assert (plan.starts.hour, plan.ends and plan.ends.strftime("%H:%M")) == (18, "18:59")
    with pytest.raises(ConfigError, match=r"sessions\[1\]\.ends: a live session needs the end"):
        floor_config(url, tmp_path, extra=may, session_window=MORNING)  # no calendar
    wednesday = may.replace("2026-05-02 18:00", "2026-04-29 10:00") + 'ends = "2026-04-29 11:00"\n'
    with pytest.raises(ConfigError, match=r"sessions\[1\]\.starts: Wed 29 Apr 2026 10:00-11:00 is"):
        floor_config(url, tmp_path, extra=CALENDAR + wednesday, session_window=MORNING)
    held = wednesday + 'off_calendar = "moved from 25 April: power failure (rule 20)"\n'
    cfg = floor_config(url, tmp_path, extra=CALENDAR + held, session_window=MORNING)
    assert cfg.sessions[1].off_calendar.startswith("moved from 25 April")


async def test_a_promotion_made_on_the_page_runs_once_approved_and_after_a_restart(
    db_url: str, tmp_path: Path
) -> None:
    cfg, clock = config(db_url, tmp_path), Clock()
    # the play window of the config's promotion: the day's points count at once
    new = {"name": "Slots sprint", "threshold_points": 10, "pool_kinds": ["slots"],
           "window": {"start": "08:00", "end": "19:00"}}  # fmt: skip
    async with running_service(cfg, clock) as service, client_for(service, cfg) as client:
        e = Env(cfg, clock, service, client)
        seat_players(service, slots=[(card(1), "M01")], points=20)
        r = await e.post("/api/schedule/promotions/sprint/definition", definition=new)
        assert r.status_code == 200 and r.json()["records"] == ["schedule.promotion_proposed"]
        bad = {**new, "areas_included": ["Pit 9"]}
        r = await e.post("/api/schedule/promotions/sprint/definition", definition=bad)
        assert r.status_code == 422 and r.json()["detail"]["field"] == "areas_included[0]"
        month = (await client.get("/api/calendar", headers=auth("admin"))).json()
        waiting = {p["id"]: p for p in month["promotions"]}["sprint"]
        assert (waiting["exists"], waiting["waiting"]["by"]) == (False, "ann")
        r = await e.post("/api/schedule/promotions/sprint/approve", reason="ok")
        assert r.status_code == 403  # marketing does not approve its own
        r = await e.post("/api/schedule/promotions/sprint/approve", role="admin", reason="ok")
        assert r.status_code == 200, r.text
        assert list(service.floor.pool("sprint", "slots")) == [card(1)]  # at once
        # who qualifies does not change under an open session's draws
        assert (await e.session_cmd(SESSION, "open", role="admin")).status_code == 409  # 11:00
        r = await e.client.post(
            f"/api/sessions/{SESSION}/open",
            headers=auth("admin"),
            json={"command_id": "o-1", "override_reason": "technical failure at 11:00"},
        )
        assert r.status_code == 200, r.text
        r = await e.post("/api/schedule/promotions/raps/definition", role="admin",
                         definition={"name": "RAPS", "threshold_points": 70})  # fmt: skip
        assert r.status_code == 422 and "is open" in r.json()["detail"]["detail"], r.text
    async with running_service(cfg, clock) as service:
        assert service.floor.promotion("sprint").threshold_points == 10
        assert "sprint" in {p.promotion_id for p in service.planner.promotions()}


async def test_a_session_off_the_calendar_needs_its_reason_and_verify_shows_it(env: Env) -> None:
    wed = {**NEW, "session_id": "wed", "starts": "2026-04-29 10:00", "ends": "2026-04-29 11:00"}
    r = await env.post("/api/schedule/sessions", **wed)
    assert r.status_code == 422 and r.json()["detail"]["field"] == "starts", r.text
    why = "the 25 April draw moved after a power failure (rule 20)"
    r = await env.post("/api/schedule/sessions", **wed, off_calendar=why)
    assert r.status_code == 200 and r.json()["session"]["status"] == "proposed", r.text
    assert r.json()["session"]["off_calendar"] == why
    r = await env.post("/api/schedule/sessions/wed/approve", role="admin", reason="agreed")
    assert r.status_code == 200, r.text
    report = check(*await read_database(env.cfg.storage.url), None, from_genesis=True)
    assert report.ok and report.exit_code == 3, report.lines()
    assert (
        "  EXCEPTION: session wed held off the calendar, 2026-04-29T10:00:00+02:00 - "
        f"2026-04-29T11:00:00+02:00: {why!r}; proposed by ann (marketing), approved by ada "
        "(admin)"
    ) in report.lines()


async def test_one_writer_at_a_time_holds_the_database_s_lock(db_url: str) -> None:
    """What a running daemon holds and `raps schedule import` asks for (SQLite: a file
    lock beside the database; PostgreSQL: a session advisory lock)."""
    daemon, other = DaemonLock(db_url), DaemonLock(db_url)
    assert await daemon.acquire()
    try:
        assert not await other.acquire()
    finally:
        await daemon.release()
    assert await other.acquire()
    await other.release()

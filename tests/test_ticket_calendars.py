"""Ticket programs' draw calendars managed in the running daemon: a draw added, moved or
cancelled, a rule changed, through the schedule's proposal and approval (marketing
proposes, an admin approves; journaled with who and why), the ticket plan's draws and
bins rebuilt without a restart, a draw with entries never moved or dropped, refusals
naming the field with nothing journaled, kept across a restart, exported and imported
as TOML, and listed by `raps verify`."""

from __future__ import annotations

import copy
import tomllib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from raps.audit import check, read_database
from raps.schedule_toml import import_toml, read_document
from selector.events import Tier
from tests.builders import NOON, SAST, Events
from tests.daemon_helpers import (
    Clock,
    CommandEnv,
    auth,
    card,
    client_for,
    floor_config,
    running_service,
)

pytestmark = pytest.mark.asyncio

# TEEDS draws at 20:00 on 25 April (today: the clock is 12:05) and 2 May, from a calendar
TICKETS = """
[[ticket_programs]]
id = "teeds"
promotion = "raps"
name = "TEEDS"
tiers = ["jack", "queen"]
rates = { jack = 50, queen = 100 }
complimentary = { jack = 2 }
[ticket_programs.period]
kind = "day_to_draw"
start_time = "08:00"

[[ticket_programs.calendars]]
id = "teeds-{at:%Y-%m-%d-%H%M}"
name = "TEEDS {at:%a %d %b %H:%M}"
winners = 5
[ticket_programs.calendars.calendar]
dated = [{ dates = ["2026-04-25", "2026-05-02"], times = ["20:00"] }]
windows = { entry = { start = "08:00", end = "-5m" }, proxy = { start = "08:00", end = "-15m" } }
"""
URL = "/api/schedule/ticket-calendars/teeds/0"
TONIGHT, MOVED, NEXT = "teeds-2026-04-25-2000", "teeds-2026-04-25-2100", "teeds-2026-05-02-2000"


@dataclass
class Env(CommandEnv):
    prefix: str = "tc"

    async def view(self, month: str = "2026-04") -> dict[str, Any]:
        r = await self.client.get("/api/calendar", params={"month": month}, headers=auth("admin"))
        assert r.status_code == 200, r.text
        return r.json()  # type: ignore[no-any-return]

    async def entry(self) -> dict[str, Any]:
        rows = (await self.view())["ticket_calendars"]
        return copy.deepcopy(rows[0]["entry"])  # type: ignore[no-any-return]

    def draws(self) -> list[str]:
        return [d.draw_id for d in self.service.tickets.plan.draws]

    def journaled(self) -> int:
        return len(self.service.planner.schedule.records)


@pytest_asyncio.fixture
async def env(db_url: str, tmp_path: Path) -> AsyncIterator[Env]:
    cfg = floor_config(db_url, tmp_path, extra=TICKETS)
    clock = Clock()
    async with running_service(cfg, clock) as service, client_for(service, cfg) as client:
        yield Env(cfg, clock, service, client)


def moved(entry: dict[str, Any], to: str) -> dict[str, Any]:
    entry["calendar"]["moved"] = [{"from": "2026-04-25 20:00", "to": to, "reason": "the show"}]
    return entry


def seat(env: Env, n: int, machine: str, points: int) -> str:
    ev, c = Events(NOON), card(n)
    batch: list[Any] = [ev.player(c, tier=Tier.JACK), ev.card_in(machine, c)]
    batch += [ev.game(machine, wager=1000) for _ in range(points)]
    assert env.service.ingest(batch, source="test") == len(batch)
    return c


async def kiosk(env: Env, c: str, request_id: str, draw: str) -> httpx.Response:
    body = {"request_id": request_id, "card": c, "draw": draw}
    return await env.client.post("/api/tickets/kiosk/entries", json=body, headers=auth("kiosk"))


async def test_marketing_moves_a_draw_an_admin_approves_and_the_plan_follows_at_once(
    env: Env,
) -> None:
    assert env.draws() == [TONIGHT, NEXT]  # the config's calendar, seeded at first start
    c = seat(env, 1, "M01", points=60)  # 1 ticket from today's points before the change
    r = await env.post(URL, entry=moved(await env.entry(), "2026-04-25 21:00"), reason="a show")
    assert r.status_code == 200, r.text
    assert r.json()["records"] == ["schedule.ticket_calendar_proposed"]
    assert env.draws() == [TONIGHT, NEXT]  # nothing applies unapproved
    row = (await env.view())["ticket_calendars"][0]
    assert (row["program_id"], row["index"], row["waiting"]["by"]) == ("teeds", 0, "ann")
    assert "moved" not in row["entry"]["calendar"]
    assert (await env.post(f"{URL}/approve", role="marketing")).status_code == 403

    r = await env.post(f"{URL}/approve", role="admin", reason="agreed with the GM")
    assert r.status_code == 200, r.text
    assert r.json()["records"] == [
        "schedule.ticket_calendar_approved",
        "schedule.ticket_calendar_set",
    ]
    assert env.draws() == [MOVED, NEXT]  # rebuilt without a restart
    draw = env.service.tickets.plan.draw(MOVED)
    assert draw.closes == datetime(2026, 4, 25, 20, 55, tzinfo=SAST)
    assert MOVED in env.service.stage.draws and TONIGHT not in env.service.stage.draws
    view = await env.view()
    tonight = [i for i in view["items"] if i["kind"] == "ticket_draw"]
    assert [(i["id"], i["calendar"]) for i in tonight] == [(MOVED, ["teeds", 0])]
    assert view["ticket_calendars"][0]["waiting"] is None

    got = await kiosk(env, c, "k-1", MOVED)  # points earned before the change still count
    assert got.status_code == 200, got.text
    assert got.json()["tickets"] == 3  # 1 from points, 2 complimentary

    # a draw with entries is neither moved nor dropped: refused, nothing journaled
    before = env.journaled()
    for to in ("2026-04-25 21:30", None):
        entry = await env.entry()
        if to is None:
            entry["calendar"]["dated"][0]["dates"] = ["2026-05-02"]  # 25 April dropped
            del entry["calendar"]["moved"]
        else:
            entry = moved(entry, to)
        r = await env.post(URL, role="admin", entry=entry)
        assert r.status_code == 422, r.text
        assert r.json()["detail"]["field"] == "calendar"
        assert (
            f"draw {MOVED} (Sat 25 Apr 2026 21:00) has tickets entered by 1 player(s)"
            in (r.json()["detail"]["detail"])
        )
    assert env.journaled() == before and env.draws() == [MOVED, NEXT]

    # the draw that has none may be cancelled, and a new one added: an admin's apply at once
    entry = await env.entry()
    entry["calendar"]["cancelled"] = [{"at": "2026-05-02 20:00", "reason": "a public holiday"}]
    entry["calendar"]["dated"].append({"dates": ["2026-05-03"], "times": ["14:00"]})
    r = await env.post(URL, role="admin", entry=entry, reason="2 May moves to Sunday 3 May")
    assert r.status_code == 200 and r.json()["records"] == ["schedule.ticket_calendar_set"]
    assert env.draws() == [MOVED, "teeds-2026-05-03-1400"]

    report = check(*await read_database(env.cfg.storage.url), None, from_genesis=True)
    assert report.ok, report.lines()
    changes = [x for x in report.lines() if x.startswith("  CHANGE: ") and "ticket_cal" in x]
    assert [c.split(" ", 4)[4] for c in changes] == [
        "ticket_calendar_proposed teeds[0] by ann (marketing): 'a show'",
        "ticket_calendar_approved teeds[0] by ada (admin): 'agreed with the GM'",
        "ticket_calendar_set teeds[0] by ada (admin): 'agreed with the GM'",
        "ticket_calendar_set teeds[0] by ada (admin): '2 May moves to Sunday 3 May'",
    ]


async def test_a_draw_open_on_stage_is_neither_moved_nor_cancelled(env: Env) -> None:
    r = await env.client.post(
        f"/api/stage/draws/{NEXT}/open", json={"command_id": "o-1"}, headers=auth("stage_host")
    )
    assert r.status_code == 200, r.text
    before = env.journaled()
    entry = await env.entry()
    entry["calendar"]["cancelled"] = [{"at": "2026-05-02 20:00", "reason": "a holiday"}]
    r = await env.post(URL, role="admin", entry=entry)
    assert r.status_code == 422, r.text
    assert r.json()["detail"] == {
        "field": "calendar",
        "detail": f"draw {NEXT} (Sat 02 May 2026 20:00) is open on stage: it cannot be dropped",
    }
    assert env.journaled() == before and env.draws() == [TONIGHT, NEXT]
    r = await env.post(URL, entry=moved(await env.entry(), "2026-04-25 21:00"))  # another draw
    assert r.status_code == 200, r.text  # proposed: the open draw stays as it is


async def test_bad_input_is_refused_naming_the_field_and_nothing_is_journaled(env: Env) -> None:
    before = env.journaled()
    entry = await env.entry()
    cases: list[tuple[str, dict[str, Any], str]] = [
        (URL, moved(copy.deepcopy(entry), "2026-04-25 25:00"), "calendar.moved[0].to"),
        # its entry window (08:00 until 5 minutes before) would end before it starts
        (URL, moved(copy.deepcopy(entry), "2026-04-25 08:00"), "calendar.moved[0]"),
        # one id for two draws of a day
        (
            URL,
            {
                **entry,
                "id": "teeds-{at:%Y-%m-%d}",
                "calendar": {
                    **entry["calendar"],
                    "dated": [{"dates": ["2026-04-25"], "times": ["20:00", "21:00"]}],
                },
            },
            "draw(teeds-2026-04-25).id",
        ),
        (URL, {**entry, "colour": "red"}, "colour"),
        (URL, {**entry, "winners": 0}, "winners"),
        (URL, {**entry, "id": "x-{day}"}, "id"),
        (URL, {k: v for k, v in entry.items() if k != "calendar"}, "calendar"),
        ("/api/schedule/ticket-calendars/nope/0", entry, "program_id"),
        ("/api/schedule/ticket-calendars/teeds/2", entry, "index"),
        (URL, entry, ""),  # nothing changes
    ]
    windowless = copy.deepcopy(entry)
    del windowless["calendar"]["windows"]["entry"]
    cases.append((URL, windowless, "calendar.windows"))
    dst = copy.deepcopy(entry)  # no DST in Johannesburg: a date the calendar cannot give
    dst["calendar"]["dated"][0]["dates"] = ["2026-02-30"]
    cases.append((URL, dst, "calendar.dated[0].dates[0]"))
    for path, body, field in cases:
        r = await env.post(path, role="admin", entry=body)
        assert r.status_code == 422, (field, r.text)
        assert r.json()["detail"]["field"].startswith(field), (field, r.json())
    assert env.journaled() == before and env.draws() == [TONIGHT, NEXT]
    r = await env.post(f"{URL}/approve", role="admin")
    assert r.status_code == 422 and r.json()["detail"]["field"] == "ticket_calendar"


async def test_the_calendars_survive_a_restart_and_the_config_does_not_undo_them(
    db_url: str, tmp_path: Path
) -> None:
    """Earning from a fixed start (000's car draws): one group of intervals whose first
    has ended by the restart, so the start's plan must leave the ledger fresh for the
    floor snapshot's points."""
    fixed = 'kind = "fixed_start_to_draw"\nstart = "2026-04-18 08:00"'
    extra = TICKETS.replace('kind = "day_to_draw"\nstart_time = "08:00"', fixed)
    assert extra != TICKETS
    cfg = floor_config(db_url, tmp_path, extra=extra)
    clock = Clock()
    async with running_service(cfg, clock) as service, client_for(service, cfg) as client:
        env = Env(cfg, clock, service, client)
        c = seat(env, 1, "M01", points=60)
        r = await env.post(URL, role="admin", entry=moved(await env.entry(), "2026-04-25 21:00"))
        assert r.status_code == 200, r.text
        assert (await kiosk(env, c, "k-1", MOVED)).json()["tickets"] == 3  # 1 + 2 free
        clock.now = datetime(2026, 4, 26, 12, 0, tzinfo=SAST)  # after the moved draw
        service.floor.advance(clock.now)
        await service.stop()  # the floor snapshot, with the points toward tickets
    async with running_service(cfg, clock) as service:
        assert [d.draw_id for d in service.tickets.plan.draws] == [MOVED, NEXT]
        assert service.tickets.ledger.entered(c, MOVED) == 3  # its bin's records restored
        assert service.tickets.ledger.points_milli(c, NEXT) == 60_000  # and the points
        assert MOVED in service.stage.draws


async def test_export_and_import_carry_the_ticket_calendars_as_proposals(
    env: Env, tmp_path: Path
) -> None:
    r = await env.post(URL, role="admin", entry=moved(await env.entry(), "2026-04-25 21:00"))
    assert r.status_code == 200, r.text
    r = await env.client.get("/api/schedule/export", headers=auth("admin"))
    page = tomllib.loads(r.text)
    [cal] = page["ticket_calendars"]
    assert (cal["program"], cal["id"]) == ("teeds", "teeds-{at:%Y-%m-%d-%H%M}")
    assert cal["calendar"]["moved"][0]["to"] == "2026-04-25 21:00"

    other = tmp_path / "other"
    other.mkdir()
    cfg2 = floor_config(f"sqlite:///{other / 'raps.db'}", other, extra=TICKETS)
    path = tmp_path / "schedule.toml"
    path.write_text(r.text, "utf-8")
    done = await import_toml(cfg2, read_document(path), "as on site 1", user="ada")
    assert [x.type for x in done.records] == ["schedule.ticket_calendar_proposed"]
    again = await import_toml(cfg2, read_document(path), "the same again", user="ada")
    assert again.records == []
    path.write_text(r.text.replace('to = "2026-04-25 21:00"', 'to = "2026-04-25 25:00"'), "utf-8")
    with pytest.raises(Exception, match=r"ticket_calendars\[0\]\.calendar\.moved\[0\]\.to"):
        await import_toml(cfg2, read_document(path), "broken", user="ada")
    async with running_service(cfg2, Clock()) as service, client_for(service, cfg2) as client:
        e2 = Env(cfg2, Clock(), service, client)
        assert e2.draws() == [TONIGHT, NEXT]  # proposed, not applied
        r = await e2.post(f"{URL}/approve", role="admin", reason="ok")
        assert r.status_code == 200, r.text
        assert e2.draws() == [MOVED, NEXT]

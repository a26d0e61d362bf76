"""The calendar page in Chromium, on the real daemon: marketing creates a promotion and a
session (a bad one refused naming its field), changes the session and proposes the new
promotion's period and calendar (an impossible one refused); an admin approves each,
and a session the calendar made is cancelled.  The daemon is killed with SIGKILL and
started again: the page and the API show everything as it was left, the calendar
document exactly as proposed, history and all; `raps verify` lists each change with
who and why."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from datetime import date, datetime, timedelta

import pytest
from playwright.sync_api import Browser, Page, expect

from bench.harness import raps_command
from tests import test_pages_browser as browser_test
from tests.daemon_helpers import cheap_hash
from tests.test_pages_browser import (  # noqa: F401  (chromium, chromium_path, daemon: fixtures)
    LIVE,
    MARKETING,
    PIN,
    RAPS,
    TZ,
    Daemon,
    chromium,
    chromium_path,
    daemon,
    sign_in,
)

ADMIN, ADMIN_PW = "ada", "admin-pw-8842"
SID = "cal-extra"


@pytest.fixture
def calendar_daemon(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Daemon]:
    def with_admin(text: str) -> str:
        admin = f"""
[[users]]
name = "{ADMIN}"
role = "admin"
password_hash = '{cheap_hash(ADMIN_PW)}'
"""
        # the pages test's live session runs now for three hours: this test schedules its own
        text = re.sub(rf'\[\[sessions\]\]\nid = "{LIVE}"\n(?:[a-z_]+ = [^\n]*\n)*', "", text)
        return browser_test.before_users(text, admin)

    yield browser_test.daemon_with_config(request, monkeypatch, with_admin)


def restart(d: Daemon) -> Daemon:
    """kill -9, then the same config again; the new daemon's URL."""
    d.proc.send_signal(signal.SIGKILL)
    d.proc.wait(timeout=20)
    ready = d.folder / "ready.json"
    ready.unlink()
    log = (d.folder / "daemon-2.log").open("wb")
    proc = subprocess.Popen(
        [RAPS, "run", "--config", str(d.folder / "raps.toml"), "--ready-file", str(ready)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while not ready.exists():
        assert proc.poll() is None, (d.folder / "daemon-2.log").read_text()
        assert time.monotonic() < deadline, "the daemon did not come back"
        time.sleep(0.05)
    d.proc = proc  # the fixture stops this one
    d.url = json.loads(ready.read_text())["url"]
    return d


def open_calendar(page: Page, url: str, user: str, secret: str, starts: datetime) -> None:
    """Sign in if asked to, on /calendar, and show the month of `starts` (with the month
    buttons: a second navigation to the same page while it loads would abort the first)."""
    page.goto(f"{url}/calendar")
    if "/login" in page.url:
        page.fill("#user", user)
        page.fill("#secret", secret)
        page.click("#submit")
    expect(page).to_have_url(re.compile(r"/calendar$"))
    expect(page.locator("#updated")).to_contain_text("Updated")
    today = datetime.now(TZ)
    if (starts.year, starts.month) != (today.year, today.month):
        page.click("#next")
    expect(page.locator("#month-name")).to_have_text(f"{starts:%B %Y}")


def item(page: Page) -> object:
    return page.locator(f'.item[data-id="{SID}"]')


def fill_new_session(page: Page, starts: datetime, ends: datetime, reason: str) -> None:
    page.click("#new-session")
    page.fill("#f-session_id", SID)
    page.fill("#f-name", "Extra Saturday session")
    page.fill("#f-starts", f"{starts:%Y-%m-%d %H:%M}")
    page.fill("#f-ends", f"{ends:%Y-%m-%d %H:%M}")
    page.fill("#f-slots", "2")
    page.fill("#f-tables", "1")
    page.fill("#f-reason", reason)
    page.click("#f-submit")


def sprint_calendar(day: date, end: str) -> dict[str, object]:
    return {
        "dated": [{"dates": [f"{day}"], "times": ["18:00"]}],
        "windows": {"raps": {"start": "at", "end": end}},
    }


def approve(page: Page, promotion: str, reason: str) -> None:
    page.click(f'.promo[data-promotion="{promotion}"] >> text=Approve changes')
    page.fill("#f-reason", reason)
    page.click("#f-submit")
    expect(page.locator("#toast")).to_contain_text("Changes approved")


def test_promotions_and_sessions_made_on_the_calendar_page_survive_a_kill_9(
    chromium: Browser,  # noqa: F811  (the fixture imported above)
    calendar_daemon: Daemon,
) -> None:
    d = calendar_daemon
    starts = (datetime.now(TZ) + timedelta(hours=2)).replace(second=0, microsecond=0)
    ends = starts + timedelta(hours=1)
    week = (starts + timedelta(days=7)).date()
    made = f"sprint-{week:%Y%m%d}-1800"
    errors: list[str] = []
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    try:
        mk = context.new_page()
        mk.on("pageerror", lambda e: errors.append(str(e)))
        open_calendar(mk, d.url, MARKETING, PIN, starts)

        # a promotion created on the page: proposed, nothing runs until an admin approves
        mk.click("#new-promotion")
        mk.fill("#f-promotion_id", "sprint")
        mk.fill("#f-name", "Slots sprint")
        mk.fill("#f-threshold_points", "10")
        mk.fill("#f-end", "07:00")
        mk.uncheck('#f-pool_kinds input[value="tables"]')
        mk.fill("#f-reason", "a slots-only sprint for the launch week")
        mk.click("#f-submit")
        expect(mk.locator("#d-error")).to_contain_text("window.end: must be after start 08:00")
        expect(mk.locator("#f-end")).to_have_class("invalid")
        mk.fill("#f-end", "19:00")
        mk.click("#f-submit")
        expect(mk.locator("#toast")).to_contain_text("Proposed: an admin approves it")
        sprint = mk.locator('.promo[data-promotion="sprint"]')
        expect(sprint).to_contain_text("NEW")
        expect(sprint).to_contain_text("WAITING: who qualifies")

        fill_new_session(mk, starts, starts - timedelta(hours=1), "extra session for the launch")
        expect(mk.locator("#d-error")).to_contain_text("ends: must be after starts")
        expect(mk.locator("#f-ends")).to_have_class("invalid")
        mk.fill("#f-ends", f"{ends:%Y-%m-%d %H:%M}")
        mk.click("#f-submit")
        expect(mk.locator("#toast")).to_contain_text("Session created")
        expect(item(mk)).to_contain_text("PROPOSED")  # type: ignore[arg-type]
        item(mk).click()  # type: ignore[attr-defined]
        mk.click("text=Change")
        mk.fill("#f-slots", "3")
        mk.fill("#f-reason", "one more slot prize (GM)")
        mk.click("#f-submit")
        expect(mk.locator("#toast")).to_contain_text("Change saved")
        assert d.api(f"/api/schedule/sessions/{SID}")["slots"] == 3

        ad = context.browser.new_context(viewport={"width": 1280, "height": 900}).new_page()  # type: ignore[union-attr]
        ad.on("pageerror", lambda e: errors.append(str(e)))
        open_calendar(ad, d.url, ADMIN, ADMIN_PW, starts)
        approve(ad, "sprint", "checked with compliance")
        expect(ad.locator('.promo[data-promotion="sprint"]')).not_to_contain_text("NEW")
        item(ad).click()  # type: ignore[attr-defined]
        ad.click("#d-actions >> text=Approve")
        ad.fill("#f-reason", "approved: within the promotion's rules")
        ad.click("#f-submit")
        expect(ad.locator("#toast")).to_contain_text("Approved")
        expect(item(ad)).not_to_contain_text("PROPOSED")  # type: ignore[arg-type]

        # marketing's calendar for the new promotion: refused when impossible, else proposed
        mk.reload()
        mk.click('.promo[data-promotion="sprint"] >> text=Period and calendar')
        mk.fill("#f-first", f"{starts.date() - timedelta(days=1)}")
        mk.fill("#f-last", f"{week + timedelta(days=7)}")
        mk.fill("#f-calendar", json.dumps(sprint_calendar(week, "17:00")))
        mk.fill("#f-calendar_sessions", json.dumps({"window": "raps", "slots": 2, "tables": 0}))
        mk.fill("#f-reason", "the Saturday after next")
        mk.click("#f-submit")
        expect(mk.locator("#d-error")).to_contain_text("ends (17:00) before it starts")
        mk.fill("#f-calendar", json.dumps(sprint_calendar(week, "19:00")))
        mk.click("#f-submit")
        expect(mk.locator("#toast")).to_contain_text("Calendar proposed: an admin approves it")
        promos = {p["id"]: p for p in d.api(f"/api/calendar?month={week:%Y-%m}")["promotions"]}
        assert promos["sprint"]["calendar"] is None  # nothing applies before the approval

        ad.reload()
        approve(ad, "sprint", "the launch week, as planned")
        assert d.api(f"/api/schedule/sessions/{made}")["status"] == "approved"
        open_calendar(ad, d.url, ADMIN, ADMIN_PW, datetime.combine(week, starts.timetz()))
        ad.locator(f'.item[data-id="{made}"]').click()
        ad.click("#d-actions >> text=Cancel session")
        ad.fill("#f-reason", "the sprint's Saturday moved to the app")
        ad.click("#f-submit")
        expect(ad.locator("#toast")).to_contain_text("Cancelled")
        ad.context.close()

        restart(d)
        page = context.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        open_calendar(page, d.url, MARKETING, PIN, starts)
        expect(item(page)).to_be_visible()  # type: ignore[arg-type]
        expect(item(page)).not_to_contain_text("PROPOSED")  # type: ignore[arg-type]
        expect(page.locator('.promo[data-promotion="sprint"]')).to_contain_text(
            "Qualify: 10 points 08:00-19:00"
        )
        item(page).click()  # type: ignore[attr-defined]
        hist = page.locator(".hist li")
        expect(hist).to_have_count(3)
        expect(hist.nth(1)).to_contain_text("changed (slots) by ann (marketing): one more slot")
        expect(hist.nth(2)).to_contain_text("approved by ada (admin)")
        assert d.api(f"/api/schedule/sessions/{SID}")["slots"] == 3
        assert d.api(f"/api/schedule/sessions/{made}")["state"] == "cancelled"
        sessions = {s["session_id"]: s for s in d.api("/api/sessions")}
        assert sessions[SID]["state"] == "scheduled"  # on the handheld, ready to open
        assert made not in sessions  # cancelled: off the handheld, after the kill -9 too
        promos = {p["id"]: p for p in d.api(f"/api/calendar?month={week:%Y-%m}")["promotions"]}
        assert promos["sprint"]["calendar"] == sprint_calendar(week, "19:00")  # as proposed
        assert promos["sprint"]["period"]["last"] == f"{week + timedelta(days=7)}"
        assert promos["sprint"]["definition"]["pool_kinds"] == ["slots"]
        assert promos["sprint"]["waiting"] is None
    finally:
        context.close()
    assert errors == []
    out = subprocess.run(
        [*raps_command(), "verify", f"sqlite:///{d.folder / 'raps.db'}"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    changes = [x for x in out.stdout.splitlines() if x.startswith("  CHANGE: ")]
    mine = [x for x in changes if SID in x]
    assert len(mine) == 3, out.stdout
    assert "session_approved cal-extra by ada (admin): " in mine[2]
    assert "approved: within the promotion's rules" in mine[2]
    logged = [re.match(r"  CHANGE: \S+ (\S+) (\S+) by", x) for x in changes]
    sprint_log = [m[1] for m in logged if m and m[2] == "sprint"]
    assert sprint_log == [
        "promotion_proposed",
        "promotion_approved",
        "promotion_added",
        "promotion_proposed",
        "promotion_approved",
        "promotion_set",
    ], out.stdout

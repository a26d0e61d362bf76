"""The calendar page in Chromium, on the real daemon: marketing creates a session (a bad
one is refused naming its field), changes it, an admin approves it; the daemon is
killed with SIGKILL and started again, and the page shows the session as it was left,
history and all; `raps verify` lists each change with who and why."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from bench.harness import raps_command
from tests import test_pages_browser as browser_test
from tests.daemon_helpers import cheap_hash
from tests.test_pages_browser import (  # noqa: F401  (chromium, chromium_path, daemon: fixtures)
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
    base: Callable[[Path], Path] = browser_test._config

    def with_admin(folder: Path) -> Path:
        path = base(folder)
        admin = f"""
[[users]]
name = "{ADMIN}"
role = "admin"
password_hash = '{cheap_hash(ADMIN_PW)}'
"""
        text = path.read_text()
        head, users = text.split("[[users]]", 1)
        path.write_text(head + admin + "\n[[users]]" + users)
        return path

    monkeypatch.setattr(browser_test, "_config", with_admin)
    yield request.getfixturevalue("daemon")


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


def test_sessions_made_on_the_calendar_page_survive_a_kill_9(
    chromium: Browser,  # noqa: F811  (the fixture imported above)
    calendar_daemon: Daemon,
) -> None:
    d = calendar_daemon
    starts = (datetime.now(TZ) + timedelta(hours=2)).replace(second=0, microsecond=0)
    ends = starts + timedelta(hours=1)
    errors: list[str] = []
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    try:
        mk = context.new_page()
        mk.on("pageerror", lambda e: errors.append(str(e)))
        open_calendar(mk, d.url, MARKETING, PIN, starts)
        expect(mk.locator("#new-session")).to_be_visible()

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
        item(ad).click()  # type: ignore[attr-defined]
        ad.click("#d-actions >> text=Approve")
        ad.fill("#f-reason", "approved: within the promotion's rules")
        ad.click("#f-submit")
        expect(ad.locator("#toast")).to_contain_text("Approved")
        expect(item(ad)).not_to_contain_text("PROPOSED")  # type: ignore[arg-type]

        # the promotion's period and calendar, set on the page: a session per occurrence
        week = (starts + timedelta(days=7)).date()
        ad.click('.promo[data-promotion="raps-test"] >> text=Period and calendar')
        ad.fill("#f-first", f"{starts.date() - timedelta(days=1)}")
        ad.fill("#f-last", f"{week + timedelta(days=7)}")
        ad.fill(
            "#f-calendar",
            json.dumps(
                {
                    "dated": [{"dates": [f"{week}"], "times": ["18:00"]}],
                    "windows": {"raps": {"start": "at", "end": "17:00"}},
                }
            ),
        )
        ad.fill("#f-calendar_sessions", json.dumps({"window": "raps", "slots": 2, "tables": 1}))
        ad.fill("#f-reason", "the Saturday after next, as marketing asked")
        ad.click("#f-submit")
        expect(ad.locator("#d-error")).to_contain_text("ends (17:00) before it starts")
        ad.fill(
            "#f-calendar",
            json.dumps(
                {
                    "dated": [{"dates": [f"{week}"], "times": ["18:00"]}],
                    "windows": {"raps": {"start": "at", "end": "19:00"}},
                }
            ),
        )
        ad.click("#f-submit")
        expect(ad.locator("#toast")).to_contain_text("Calendar saved")
        made = f"raps-test-{week:%Y%m%d}-1800"
        assert d.api(f"/api/schedule/sessions/{made}")["status"] == "approved"
        ad.context.close()

        restart(d)
        page = context.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        open_calendar(page, d.url, MARKETING, PIN, starts)
        expect(item(page)).to_be_visible()  # type: ignore[arg-type]
        expect(item(page)).not_to_contain_text("PROPOSED")  # type: ignore[arg-type]
        item(page).click()  # type: ignore[attr-defined]
        hist = page.locator(".hist li")
        expect(hist).to_have_count(3)
        expect(hist.nth(1)).to_contain_text("changed (slots) by ann (marketing): one more slot")
        expect(hist.nth(2)).to_contain_text("approved by ada (admin)")
        assert d.api(f"/api/schedule/sessions/{SID}")["slots"] == 3
        sessions = {s["session_id"]: s for s in d.api("/api/sessions")}
        assert sessions[SID]["state"] == "scheduled"  # on the handheld, ready to open
        assert made in sessions  # the calendar's session, after the kill -9 too
        promo = d.api(f"/api/calendar?month={week:%Y-%m}")["promotions"][0]
        assert promo["period"]["last"] == f"{week + timedelta(days=7)}"
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
    changes = [x for x in out.stdout.splitlines() if x.startswith("  CHANGE: ") and SID in x]
    assert len(changes) == 3, out.stdout
    assert "session_approved cal-extra by ada (admin): " in changes[2]
    assert "approved: within the promotion's rules" in changes[2]

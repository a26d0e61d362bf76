"""A ticket draw moved on the calendar page in Chromium, on the real daemon: marketing
moves a draw of a program's calendar (an impossible calendar refused, naming its
field), an admin approves, the draw is at its new time at once; after a kill -9 the page
and the API show it there, and `raps verify` lists each change with who and why."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest
from playwright.sync_api import Browser, expect

from bench.harness import raps_command
from tests import test_pages_browser as browser_test
from tests.daemon_helpers import cheap_hash
from tests.test_calendar_browser import ADMIN, ADMIN_PW, open_calendar, restart
from tests.test_pages_browser import (  # noqa: F401  (chromium, chromium_path, daemon: fixtures)
    MARKETING,
    PIN,
    TZ,
    Daemon,
    chromium,
    chromium_path,
    daemon,
)

DAY = (datetime.now(TZ) + timedelta(days=2)).replace(hour=20, minute=0, second=0, microsecond=0)
DRAW, MOVED = f"teeds-{DAY:%Y-%m-%d-%H%M}", f"teeds-{DAY:%Y-%m-%d}-2100"


@pytest.fixture
def ticket_daemon(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Daemon]:
    def with_tickets(text: str) -> str:
        extra = f"""
[[ticket_programs]]
id = "teeds"
promotion = "raps-test"
name = "TEEDS"
rates = {{ jack = 50 }}
tiers = ["jack"]
[ticket_programs.period]
kind = "day_to_draw"

[[ticket_programs.calendars]]
id = "teeds-{{at:%Y-%m-%d-%H%M}}"
name = "TEEDS {{at:%a %d %b %H:%M}}"
[ticket_programs.calendars.calendar]
dated = [{{ dates = ["{DAY:%Y-%m-%d}"], times = ["20:00"] }}]
windows = {{ entry = {{ start = "08:00", end = "-5m" }} }}

[[users]]
name = "{ADMIN}"
role = "admin"
password_hash = '{cheap_hash(ADMIN_PW)}'
"""
        return browser_test.before_users(text, extra)

    yield browser_test.daemon_with_config(request, monkeypatch, with_tickets)


def draws(d: Daemon) -> list[str]:
    items = d.api(f"/api/calendar?month={DAY:%Y-%m}")["items"]
    return [i["id"] for i in items if i["kind"] == "ticket_draw"]


def test_a_ticket_draw_moved_on_the_calendar_page_survives_a_kill_9(
    chromium: Browser,  # noqa: F811  (the fixture imported above)
    ticket_daemon: Daemon,
) -> None:
    d = ticket_daemon
    assert draws(d) == [DRAW]
    errors: list[str] = []
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    try:
        mk = context.new_page()
        mk.on("pageerror", lambda e: errors.append(str(e)))
        open_calendar(mk, d.url, MARKETING, PIN, DAY)
        row = mk.locator('.tcal[data-program="teeds"]')
        expect(row).to_contain_text("TEEDS #1")
        expect(row).to_contain_text("1 dated rule(s)")

        # an impossible calendar is refused, naming its field
        row.locator("text=Change").click()
        text = mk.locator("#f-entry").input_value()
        mk.fill("#f-entry", text.replace('"-5m"', '"07:00"'))
        mk.fill("#f-reason", "entries all day")
        mk.click("#f-submit")
        expect(mk.locator("#d-error")).to_contain_text("calendar.")
        expect(mk.locator("#d-error")).to_contain_text("ends (07:00) before it starts")
        mk.click("#d-actions >> text=Close")

        # marketing moves the draw an hour later: proposed, nothing moves yet
        mk.locator(f'.item[data-id="{DRAW}"]').click()
        mk.click("#d-actions >> text=Move draw")
        mk.fill("#f-to", f"{DAY:%Y-%m-%d} 21:00")
        mk.fill("#f-reason", "the show runs late")
        mk.click("#f-submit")
        expect(mk.locator("#toast")).to_contain_text("Proposed: an admin approves it")
        expect(row).to_contain_text("WAITING")
        expect(row).to_contain_text("proposed by")
        assert draws(d) == [DRAW]

        ad = context.browser.new_context(viewport={"width": 1280, "height": 900}).new_page()  # type: ignore[union-attr]
        ad.on("pageerror", lambda e: errors.append(str(e)))
        open_calendar(ad, d.url, ADMIN, ADMIN_PW, DAY)
        ad.locator('.tcal[data-program="teeds"] >> text=Approve').click()
        ad.fill("#f-reason", "agreed with the GM")
        ad.click("#f-submit")
        expect(ad.locator("#toast")).to_contain_text("Approved")
        expect(ad.locator(f'.item[data-id="{MOVED}"]')).to_be_visible()
        expect(ad.locator(f'.item[data-id="{DRAW}"]')).to_have_count(0)
        assert draws(d) == [MOVED]  # at once, no restart
        ad.context.close()

        restart(d)
        page = context.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        open_calendar(page, d.url, MARKETING, PIN, DAY)
        expect(page.locator(f'.item[data-id="{MOVED}"]')).to_be_visible()
        expect(page.locator('.tcal[data-program="teeds"]')).not_to_contain_text("WAITING")
        assert draws(d) == [MOVED]
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
    logged = [
        m.groups()
        for x in out.stdout.splitlines()
        if (m := re.match(r"  CHANGE: \S+ (ticket_calendar_\w+) (\S+) by (\S+)", x))
    ]
    assert logged == [
        ("ticket_calendar_proposed", "teeds[0]", "ann"),
        ("ticket_calendar_approved", "teeds[0]", ADMIN),
        ("ticket_calendar_set", "teeds[0]", ADMIN),
    ], out.stdout

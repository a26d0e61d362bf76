# ruff: noqa: F811  (the fixtures pages, chromium come from another module)
"""A winner's claim in Chromium on the real daemon (issue 15 items 4 and 6, issue 18's
"Add" items): the dispatch screen's "En route" with the officer's name and its ESCALATE
when nobody reached the winner in time, the handheld's "Security en route: <name>", its
"Absent - start countdown" (the countdown and the PA line only from then on) and an
admin's "Extend" with a reason; and a winner excluded while waiting, a red alert on the
handheld and the wall until the slot is drawn again.

The daemon is test_handheld_dispatch_browser's with one more session (claim_starts
"absent", a 4 s en-route limit), an admin, and an embedded MQTT broker through which the
test sends the casino system's exclusion.  Every wait is for a condition; no sleeps.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.daemon_helpers import cheap_hash
from tests.test_handheld_dispatch_browser import (  # noqa: F401  (fixtures)
    PHONE,
    WALL,
    Floor,
    _config,
    chromium,
    chromium_path,
    enter,
    pages,
    shot,
    winner,
)
from tests.test_pages_browser import AUDIT_TOKEN, MARKETING, PIN, SECURITY, SECURITY_PW, sign_in

CLAIM = "C1"  # the countdown starts at "absent"; nobody reached in 4 s escalates
LIMIT = 4
ADMIN, ADMIN_PW = "ada", "admin-pin-7788"


@pytest.fixture
def floor(tmp_path: Path) -> Iterator[Floor]:
    path = _config(tmp_path)
    head, users = path.read_text().split("[[users]]", 1)
    today = re.search(r'starts = "([^"]+)"', head)
    assert today
    extra = (
        f'\n[[sessions]]\nid = "{CLAIM}"\npromotion = "raps-test"\nstarts = "{today.group(1)}"\n'
        f'quotas = {{ slots = 2, tables = 0 }}\nclaim_seconds = 900\nclaim_starts = "absent"\n'
        f"max_en_route_seconds = {LIMIT}\nrehearsal = true\n"
        "\n[mqtt]\nenabled = true\nembedded = true\nport = 0\n"
    )
    admin = (
        f'\n[[users]]\nname = "{ADMIN}"\nrole = "admin"\n'
        f"password_hash = '{cheap_hash(ADMIN_PW)}'\n"
    )
    path.write_text(head + extra + admin + "\n[[users]]" + users)
    f = Floor(tmp_path)
    f.start()
    try:
        yield f
    finally:
        f.stop()


def journal(floor: Floor, sid: str) -> list[dict[str, Any]]:
    r = httpx.get(f"{floor.url}/api/sessions/{sid}/export",
                  headers={"Authorization": f"Bearer {AUDIT_TOKEN}"}, timeout=10)  # fmt: skip
    assert r.status_code == 200, r.text
    return [
        e["record"]
        for e in (json.loads(x) for x in r.text.splitlines()[1:])
        if e["record"]["session_id"] == sid
    ]


def test_en_route_escalate_absent_and_extend_across_the_two_screens(
    floor: Floor, pages: Callable[..., Page]
) -> None:
    wall = pages(**WALL)
    sign_in(wall, floor.url, "/dispatch", SECURITY, SECURITY_PW)
    hh = pages(**PHONE)
    sign_in(hh, floor.url, "/handheld", MARKETING, PIN)
    enter(hh, CLAIM)
    floor.open_and_draw(CLAIM, 1, 0)

    # drawn: no countdown anywhere yet, nobody on the way; the handheld says so
    card = wall.locator(f'.d-card[data-session="{CLAIM}"][data-pick="1"]')
    expect(card.locator(".d-claim-status")).to_have_text("Nobody on the way yet")
    expect(card.locator(".d-count small")).to_have_text("not started")
    expect(card.locator(".d-count .secs")).to_have_text("—")  # no number, never NaN
    expect(card.locator(".d-officer")).to_have_value(SECURITY)  # the signed-in officer
    w = winner(hh, 1)
    expect(w.locator(".w-wait")).to_have_text("Countdown starts at absent")
    expect(w.locator(".w-count")).to_have_count(0)
    expect(w.locator("[data-pa]")).to_have_count(0)  # the PA line comes with the countdown
    expect(w.locator(".w-claim")).to_have_text("Waiting for security")

    # nobody acknowledged within the limit: ESCALATE on the wall, once in the journal
    bar = wall.locator("#escalation")
    expect(bar).to_contain_text("not acknowledged", timeout=(LIMIT + 5) * 1000)
    expect(card).to_have_class(re.compile(r"\bescalated\b"))
    shot(wall, "dispatch-escalated", doc=True)

    # security goes en route from the wall, the officer named
    card.locator(".d-officer").fill("Sam Khumalo")
    card.locator('[data-action="en-route"]').click()
    expect(card.locator(".d-claim-status")).to_have_text("EN ROUTE: Sam Khumalo")
    expect(bar).not_to_contain_text("not acknowledged")
    expect(w.locator(".c-officer")).to_have_text("Security en route: Sam Khumalo")
    expect(w.locator(".w-claim")).to_contain_text("ESCALATED")  # the server's record

    # arrived, the winner is not there: the countdown and the PA line start now
    w.locator('[data-action="absent"]').click()
    expect(w.locator(".w-count")).to_be_visible()
    expect(w.locator("[data-pa]")).to_be_visible()
    expect(w.locator(".w-claim")).to_contain_text("Found absent")
    expect(w.locator(".w-claim")).to_contain_text("security: Sam Khumalo")
    secs = int(w.locator(".w-count .w-secs").inner_text())
    assert 880 <= secs <= 900, secs
    expect(card.locator(".d-claim-status")).to_have_text(
        "Winner absent · PA called · countdown running"
    )
    expect(card.locator(".d-count small")).to_have_text("seconds")
    expect(w.locator('[data-action="extend"]')).to_have_count(0)  # marketing: no Extend
    shot(hh, "handheld-absent", doc=True)

    # an admin extends once, with a reason
    boss = pages(**PHONE)
    sign_in(boss, floor.url, "/handheld", ADMIN, ADMIN_PW)
    enter(boss, CLAIM)
    b = winner(boss, 1)
    b.locator('[data-action="extend"]').click()
    go = b.locator('[data-action="extend-go"]')
    expect(go).to_be_disabled()
    b.locator(".w-extend-form input").fill("Winner paged, on the way down")
    b.locator(".w-extend-form select").select_option("60")
    go.click()
    expect(b.locator(".w-claim")).to_contain_text("extended +60 s by ada")
    expect(b.locator('[data-action="extend"]')).to_have_count(0)  # once
    expect(w.locator(".w-claim")).to_contain_text("extended +60 s by ada")
    later = int(w.locator(".w-count .w-secs").inner_text())
    assert later > secs + 30, (secs, later)

    steps = {r["type"]: r for r in journal(floor, CLAIM)}
    assert steps["pick.escalated"]["data"]["reason"] == "not_acknowledged"
    assert steps["pick.en_route"]["data"]["officer"] == "Sam Khumalo"
    assert steps["pick.en_route"]["actor"] == {"user": SECURITY, "role": "security"}
    assert steps["pick.absent"]["actor"] == {"user": MARKETING, "role": "marketing"}
    ext = steps["pick.extended"]
    assert (ext["data"]["seconds"], ext["data"]["reason"]) == (60, "Winner paged, on the way down")
    assert datetime.fromisoformat(ext["data"]["deadline"]) > datetime.fromisoformat(
        steps["pick.absent"]["data"]["deadline"]
    )


def publish_exclusion(floor: Floor, card: str) -> None:
    """The casino system self-excludes a card: a full directory entry on `players`."""
    ready = json.loads((floor.folder / "ready.json").read_text())
    payload = {
        "event_id": f"cms-dir-x-{card}",
        "ts": datetime.now().astimezone().isoformat(),
        "type": "player_upserted",
        "card": card,
        "tier": "jack",
        "display_name": "Excluded Winner",
        "age_verified": True,
        "exclusions": ["self_excluded"],
        "block_reason": None,
    }
    subprocess.run(
        ["mosquitto_pub", "-h", "127.0.0.1", "-p", str(ready["mqtt_port"]), "-q", "1",
         "-t", "raps/v1/browser-test/players", "-m", json.dumps(payload)],
        check=True, timeout=10,
    )  # fmt: skip


def test_an_excluded_winner_is_a_red_alert_on_both_screens_until_redrawn(
    floor: Floor, pages: Callable[..., Page]
) -> None:
    wall = pages(**WALL)
    sign_in(wall, floor.url, "/dispatch", SECURITY, SECURITY_PW)
    hh = pages(**PHONE)
    sign_in(hh, floor.url, "/handheld", MARKETING, PIN)
    enter(hh, "W1")
    floor.open_and_draw("W1", 1, 0)
    expect(winner(hh, 1)).to_be_visible()
    drawn = next(r for r in journal(floor, "W1") if r["type"] == "pick.drawn")
    publish_exclusion(floor, drawn["data"]["card"])

    alert = hh.locator('#excluded-alerts .x-alert[data-pick="1"]')
    expect(alert).to_be_visible(timeout=10_000)
    expect(alert.locator("strong")).to_have_text("#1 EXCLUDED · do not pay · redraw")
    expect(alert).to_contain_text("self excluded")
    expect(winner(hh, 1)).to_have_count(0)  # nothing left to verify or pay
    assert "excluded" in [c["cue"] for c in hh.evaluate("HHCues.log")]
    banner = wall.locator('#excluded .x-item[data-pick="1"]')
    expect(banner).to_be_visible()
    expect(banner).to_contain_text("EXCLUDED #1")
    expect(banner).to_contain_text("do not pay")
    shot(hh, "handheld-excluded", doc=True)
    shot(wall, "dispatch-excluded", doc=True)

    voided = [r for r in journal(floor, "W1") if r["type"] == "pick.voided"]
    assert voided[0]["actor"]["role"] == "exclusion"
    assert voided[0]["data"]["reason"] == "excluded: self_excluded"

    hh.click("#draw-slots")  # the redraw: the alerts go
    expect(winner(hh, 2)).to_be_visible()
    expect(hh.locator("#excluded-alerts")).to_be_hidden()
    expect(wall.locator("#excluded")).to_be_hidden()

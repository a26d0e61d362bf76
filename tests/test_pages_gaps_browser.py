# ruff: noqa: F811  (the fixtures pages, chromium come from another module)
"""Issue 18's last gaps, in Chromium on the real daemon (test_handheld_dispatch_browser's
floor, with an admin's token besides):

- any number of sessions: eight (and nine) sessions open at 1920x1080, the header's
  count names only the modes there are (never "null"), the clock, the connection badge
  and the map on screen;
- the map's badges never lie on one another, however crowded: every machine of a bank
  ringed at once on the wall's real map;
- the dispatch screen's offline shell: a reload with no network shows the last state
  under the STALE banner, and the screen catches up once the network is back;
- reads that never hang: the closed session's verification and the ticket draws' first
  read, their first answers held, are asked for again after their timeouts;
- the timing rules at real values: after an admin's extension of pick 1 the handheld and
  the wall list 2, 3, 1 (deadline order, not pick order), and a real 90 s claim's
  countdown, warning cue and levels with the time injected (HHCues.countdown, the very
  function the handheld's tick calls), no sleeps.

Every wait is for a condition with a timeout that is the spec.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.daemon_helpers import cheap_hash
from tests.test_handheld_dispatch_browser import (  # noqa: F401  (fixtures)
    BUSY,
    PHONE,
    SHORT,
    WALL,
    Floor,
    _config,
    _inside,
    chromium,
    chromium_path,
    enter,
    pages,
    shot,
)
from tests.test_handheld_extras_browser import LABELS
from tests.test_pages_browser import LIVE, MARKETING, PIN, SECURITY, SECURITY_PW, sign_in

ROOT = Path(__file__).resolve().parent.parent
STATIC = ROOT / "raps" / "static"
ADMIN_TOKEN = "admin-token-0123456789"
VIEW = {"x": 0.0, "y": 0.0, "width": 1920.0, "height": 1080.0}


@pytest.fixture
def floor(tmp_path: Path) -> Iterator[Floor]:
    """test_handheld_dispatch_browser's floor, with an admin who may extend a claim."""
    path = _config(tmp_path)
    admin = (
        f'\n[[users]]\nname = "ada"\nrole = "admin"\n'
        f"password_hash = '{cheap_hash('not-used-here')}'\n"
        f"api_token_hash = '{cheap_hash(ADMIN_TOKEN)}'\n"
    )
    path.write_text(path.read_text() + admin)
    f = Floor(tmp_path)
    f.start()
    try:
        yield f
    finally:
        f.stop()


def _on_the_wall(wall: Page) -> None:
    """The page is the screen's size; the clock, the badge, the tags and the map on it."""
    size = wall.evaluate("[document.body.scrollWidth, document.documentElement.scrollHeight]")
    assert size[0] <= 1920 and size[1] <= 1080, size
    for sel in ("#d-clock", "#d-conn", "#d-sessions", "#map svg"):
        box = wall.locator(sel).bounding_box()
        assert box and box["width"] > 0 and _inside(box, VIEW), (sel, box)


# ----------------------------------------------- 7. any number of sessions


def test_eight_and_nine_sessions_open_keep_the_header_whole(
    floor: Floor, pages: Callable[..., Page]
) -> None:
    wall = pages(**WALL)
    sign_in(wall, floor.url, "/dispatch", SECURITY, SECURITY_PW)
    eight = ["F1", *BUSY, *SHORT]  # every one a rehearsal
    assert len(eight) == 8
    for sid in eight:
        floor.api("POST", f"/api/sessions/{sid}/open", {"command_id": f"o-{sid}"})
    tags = wall.locator("#d-sessions .d-tag")
    # no LIVE session: the count names the rehearsals only (it once printed "null")
    expect(tags).to_have_text(["8 sessions open", "8 REHEARSAL"])
    expect(wall.locator("#d-sessions")).not_to_contain_text("null")
    expect(wall.locator("#d-conn")).to_have_text("LIVE")
    _on_the_wall(wall)
    # and with winners drawn in a few of them (cards, marks, a narrower map)
    for sid in ("W1", "W2", "Q1"):
        floor.api("POST", f"/api/sessions/{sid}/draw", {"command_id": f"d-{sid}", "kind": "slots"})
    expect(wall.locator(".d-card")).to_have_count(3)
    expect(wall.locator(".mark")).to_have_count(3)
    _on_the_wall(wall)
    # a live one besides: both modes counted, nothing else
    floor.api("POST", f"/api/sessions/{LIVE}/open", {"command_id": "o-live"})
    expect(tags).to_have_text(["9 sessions open", "1 LIVE", "8 REHEARSAL"])
    expect(wall.locator("#d-sessions")).not_to_contain_text("null")
    _on_the_wall(wall)
    shot(wall, "dispatch-nine-sessions-1920x1080")


# --------------------------------------- 10. badges never on one another


CROWD = """(bank) => {
  // every machine of one bank ringed at once: neighbours, the worst case for badges
  const ms = [...DMap.svg.querySelectorAll(`[data-machine][data-bank="${bank}"]`)];
  DMap.render(ms.map((m, i) => ({
    s: { session_id: 'crowd' }, label: 'Z' + (i + 1), critical: false,
    p: { pick: i + 1, location: { kind: 'slots', machine: m.dataset.machine } },
  })));
  return ms.length;
}"""


def test_badges_of_neighbouring_winners_never_lie_on_one_another(
    floor: Floor, pages: Callable[..., Page]
) -> None:
    wall = pages(**WALL)
    sign_in(wall, floor.url, "/dispatch", SECURITY, SECURITY_PW)
    # eighteen winners of five sessions: three columns of cards, the map squeezed
    for sid, slots, tables in (("W1", 3, 1), ("W2", 3, 1), ("W3", 3, 1), ("W4", 3, 1)):
        floor.open_and_draw(sid, slots, tables)
    floor.open_and_draw("F1", 1, 1)
    expect(wall.locator(".mark")).to_have_count(18)
    got = wall.evaluate(LABELS)
    assert got["marks"] == 18 and got["stacked"] == [] and got["overlaps"] == [], got
    assert got["small"] == [], got
    # the real map, every machine of its first bank ringed together
    bank = wall.locator("#map [data-machine][data-bank]").first.get_attribute("data-bank")
    assert wall.evaluate(CROWD, bank) >= 4
    got = wall.evaluate(LABELS)
    assert got["stacked"] == [] and got["overlaps"] == [] and got["small"] == [], got
    # a badge moved off its ring is tied to it by a line
    assert wall.locator("#map .mark-lead").count() >= 1
    shot(wall, "dispatch-crowded-badges-1920x1080")


# ----------------------------------------------- 12. dispatch offline


def _until(page: Page, what: str, js: str, value: Any, timeout: float = 10.0) -> None:
    """Wait until an asynchronous expression in the page gives `value`."""
    deadline = time.monotonic() + timeout
    while page.evaluate(js) != value:
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        page.wait_for_timeout(100)


SAVED_STATE = """async () => {
  const r = await (await caches.open('raps-data-dispatch-v1')).match('/dispatch/last-state');
  if (!r) return -1;
  const s = await r.json();
  return s.sessions.reduce((n, v) => n + v.picks.length, 0);
}"""


def test_a_dispatch_reload_offline_shows_the_last_state_stale(
    floor: Floor, pages: Callable[..., Page]
) -> None:
    worker = httpx.get(f"{floor.url}/dispatch-sw.js", timeout=10)  # public: a script
    assert worker.status_code == 200, worker.text
    assert worker.headers["content-type"].startswith("text/javascript")
    assert worker.headers["cache-control"] == "no-cache"
    wall = pages(**WALL)
    from_worker: list[str] = []
    wall.on("response", lambda r: from_worker.append(r.url)
            if r.from_service_worker and ("/api/stream" in r.url or r.request.method == "POST")
            else None)  # fmt: skip
    sign_in(wall, floor.url, "/dispatch", SECURITY, SECURITY_PW)
    wall.wait_for_function("() => navigator.serviceWorker.controller !== null")
    scope = wall.evaluate("navigator.serviceWorker.getRegistration().then(r => r.scope)")
    assert scope == f"{floor.url}/dispatch", scope
    floor.open_and_draw("W1", 2, 0)
    expect(wall.locator(".d-card")).to_have_count(2)
    # (wait_for_function takes a promise for a true value: evaluate awaits it)
    _until(wall, "the state kept with both picks", f"({SAVED_STATE})()", 2)
    # the floor map was read through the worker once it took control
    _until(wall, "the map kept", "caches.open('raps-data-dispatch-v1')"
           ".then(c => c.match('/api/floor.svg')).then(r => !!r)", True)  # fmt: skip

    wall.context.set_offline(True)
    wall.reload()
    # the last state, STALE, with when it was saved; the map from the saved copy
    expect(wall.locator(".d-card")).to_have_count(2)
    expect(wall.locator("#stale")).to_be_visible()
    expect(wall.locator("#stale")).to_contain_text("STALE")
    expect(wall.locator("#stale-age")).to_have_text(
        re.compile(r"offline · the last state, saved at \d\d:\d\d:\d\d · last update \d+ s ago")
    )
    expect(wall.locator("#d-conn")).to_have_text("RECONNECTING")
    expect(wall.locator(".mark")).to_have_count(2)
    shot(wall, "issue18-offline-dispatch")
    # a winner drawn meanwhile is shown once the network is back, and the screen is LIVE
    floor.api("POST", "/api/sessions/W1/draw", {"command_id": "d-late", "kind": "tables"})
    wall.context.set_offline(False)
    expect(wall.locator(".d-card")).to_have_count(3, timeout=15000)
    expect(wall.locator("#d-conn")).to_have_text("LIVE")
    expect(wall.locator("#stale")).to_be_hidden()
    assert from_worker == [], from_worker  # the stream and commands never via the worker


# ---------------------------------------------- 8 and Add. the timing rules


def test_an_extended_pick_comes_after_the_picks_whose_deadline_is_sooner(
    floor: Floor, pages: Callable[..., Page]
) -> None:
    wall = pages(**WALL)
    sign_in(wall, floor.url, "/dispatch", SECURITY, SECURITY_PW)
    floor.open_and_draw("W2", 3, 0)  # 900 s claims, drawn a few ms apart
    extend = {"command_id": "x-1", "seconds": 60, "reason": "winner in the lift"}
    r = httpx.post(f"{floor.url}/api/sessions/W2/picks/1/extend", json=extend, timeout=10,
                   headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})  # fmt: skip
    assert r.status_code == 200, r.text
    due = {p["pick"]: datetime.fromisoformat(p["deadline"]) for p in floor.session("W2")["picks"]}
    assert due[1] > due[3] > due[2], due
    hh = pages(**PHONE)
    sign_in(hh, floor.url, "/handheld", MARKETING, PIN)
    enter(hh, "W2")
    expect(hh.locator(".winner.pending")).to_have_count(3)
    order = hh.locator(".winner.pending").evaluate_all("cs => cs.map(c => Number(c.dataset.pick))")
    assert order == [2, 3, 1], "soonest deadline first, not pick order"
    expect(wall.locator(".d-card")).to_have_count(3)
    labels = wall.locator(".d-card").evaluate_all("cs => cs.map(c => c.dataset.label)")
    assert labels == ["#2", "#3", "#1"], labels


def _load(page: Page, *scripts: str) -> None:
    page.set_content("<!doctype html><html><body></body></html>")
    for name in scripts:
        page.add_script_tag(path=str(STATIC / name))


COUNTDOWN = """({ claim, from, to, step }) => {
  // a card's countdown ticked every `step` ms from `from` to `to` seconds after the draw
  // (the time injected: no clock is read), as the handheld's tick does
  const drawn = Date.parse('2026-05-30T18:00:00+02:00');
  const deadline = drawn + claim * 1000;
  const memo = {};
  const ticks = [];
  for (let t = from * 1000; t <= to * 1000; t += step) {
    const c = HHCues.countdown(deadline, drawn + t, claim, memo);
    ticks.push({ at: t / 1000, left: (deadline - drawn - t) / 1000, ...c });
  }
  return ticks;
}"""


def test_a_real_90_s_claim_warns_at_30_s_left_once(pages: Callable[..., Page]) -> None:
    page = pages()
    _load(page, "common.js", "handheld-cues.js", "handheld-claim.js")
    ticks: list[dict[str, Any]] = page.evaluate(
        COUNTDOWN, {"claim": 90, "from": 0, "to": 91, "step": 250}
    )
    cues = [t for t in ticks if t["cue"]]
    # one cue, on the first tick at 30 s left (60 s after the draw), not before
    assert [t["left"] for t in cues] == [30.0], cues
    assert ticks[0]["warnAt"] == 30 and ticks[0]["criticalAt"] == 10
    by_left = {t["left"]: t for t in ticks}
    assert by_left[90.0]["secs"] == 90 and by_left[90.0]["level"] == ""
    assert by_left[30.25]["level"] == "" and by_left[30.25]["secs"] == 31
    assert by_left[30.0]["level"] == "warn" and by_left[30.0]["secs"] == 30
    assert by_left[10.25]["level"] == "warn"
    assert by_left[10.0]["level"] == "critical"
    assert by_left[0.0]["secs"] == 0 and by_left[-1.0]["secs"] == 0
    # ticks a second apart (a phone that slept): still one cue, on the first at/below 30
    coarse = page.evaluate(COUNTDOWN, {"claim": 90, "from": 0, "to": 95, "step": 1300})
    assert len([t for t in coarse if t["cue"]]) == 1
    first = next(t for t in coarse if t["cue"])
    assert 28.7 < first["left"] <= 30, first
    # a card first seen with 20 s left gives no cue (it was never above the warning)
    late = page.evaluate(COUNTDOWN, {"claim": 90, "from": 70, "to": 91, "step": 250})
    assert not any(t["cue"] for t in late)
    # a shorter claim warns at a third and turns red at a sixth: 36 s -> 12 s and 6 s
    short = page.evaluate(COUNTDOWN, {"claim": 36, "from": 0, "to": 37, "step": 250})
    assert [t["left"] for t in short if t["cue"]] == [12.0]
    assert {t["left"]: t["level"] for t in short}[6.0] == "critical"


ORDER = """() => {
  const t0 = Date.parse('2026-05-30T18:00:00+02:00');
  const iso = (s) => new Date(t0 + s * 1000).toISOString();
  const picks = [
    // pick 1 drawn first, its 90 s countdown extended by an admin by 60 s
    { pick: 1, drawn_at: iso(0), deadline: iso(150) },
    { pick: 2, drawn_at: iso(5), deadline: iso(95) },
    { pick: 3, drawn_at: iso(9), deadline: iso(99) },
    // its countdown waits for "absent": after every running one, by draw time
    { pick: 4, drawn_at: iso(-30) },
    { pick: 5, drawn_at: iso(-60) },
  ];
  const order = (cmp) => [...picks].sort(cmp).map((p) => p.pick);
  return {
    handheld: order((a, b) => HHClaim.urgency(a) - HHClaim.urgency(b)),
    dispatch: order((a, b) => DClaim.sortKey(a).localeCompare(DClaim.sortKey(b))),
  };
}"""


def test_deadline_order_differs_from_pick_order_on_both_screens(
    pages: Callable[..., Page],
) -> None:
    page = pages()
    _load(page, "common.js", "handheld-claim.js", "dispatch-claim.js")
    got = page.evaluate(ORDER)
    assert got == {"handheld": [2, 3, 1, 5, 4], "dispatch": [2, 3, 1, 5, 4]}, got


# ------------------------------------------ 1. reads that never hang


def test_stalled_verification_and_ticket_draws_reads_are_asked_for_again(
    floor: Floor, pages: Callable[..., Page]
) -> None:
    """The closed session's verification read and the ticket draws' first read: their
    first answers never come (held by the test), the page gives them up after their
    timeouts and asks again, and the seed check shows.  (No worker: Playwright's routes
    see what the page itself fetches.)"""
    floor.api("POST", "/api/sessions/W1/open", {"command_id": "o-W1"})
    floor.api("POST", "/api/sessions/W1/close", {"command_id": "c-W1"})
    hh = pages(**PHONE, service_workers="block")
    held: list[Any] = []

    def hold_the_first(route: Any) -> None:
        if not held:
            held.append(route)  # never answered: a stalled connection
        else:
            route.continue_()

    hh.route("**/api/sessions/W1/verification", hold_the_first)
    draws: list[Any] = []  # the ticket draws' first read: held the same way

    def hold_the_first_list(route: Any) -> None:
        draws.append(route.request.url)
        if len(draws) > 1:
            route.continue_()

    hh.route("**/api/tickets/draws", hold_the_first_list)
    sign_in(hh, floor.url, "/handheld", MARKETING, PIN)
    enter(hh, "W1")
    expect(hh.locator("#sess-state")).to_contain_text("CLOSED")
    expect(hh.locator("#seed-check")).to_have_text(
        "✓ The revealed seed matches the commitment", timeout=12000
    )
    assert len(held) == 1
    # the held list read is given up after its timeout (8 s) and asked for again
    deadline = time.monotonic() + 15
    while len(draws) < 2:
        assert time.monotonic() < deadline, "the ticket draws were not asked for again"
        hh.wait_for_timeout(100)  # lets Playwright run the route handler meanwhile

"""The handheld and the dispatch screen on a busy night (issue 18), in Chromium.

The real daemon (`raps run`) on a small simulated floor, Debian's Chromium driven by
Playwright, both screens reaching the daemon through `Relay`, an asyncio TCP proxy in
this test that can hold every connection open while passing nothing (a stalled Wi-Fi
link: no error, no data) and can follow the daemon to a new port after a restart.

- a stalled command never freezes the handheld: within 2 s its own button says "No
  answer yet · retrying", every other button stays usable, the retry carries the same
  command id, and once the link flows the draw is made exactly once;
- the dispatch screen goes STALE within 3 s of a missed heartbeat, reconnects, and
  catches up;
- a daemon restart signs nobody out, and a sign-out stays one across a restart;
- 10 pending winners of 4 sessions all on the wall at 1920x1080, soonest first, the
  clock, the connection badge and the map on screen too;
- a fast double tap (120-150 ms) is no confirmation for No-show or Close session;
- a toast never lies over a button;
- the handheld lists the most urgent winner first and announces a claim-timer no-show.

Timing: every wait is for a condition, with a timeout that is the spec.  The double tap's
pause is input timing (how fast a thumb taps), not an assertion on elapsed time.

With RAPS_DOC_SCREENSHOTS=1 the final pages' screenshots are written to docs/screenshots/
(committed, shown in docs/pages.md); otherwise to test-artifacts/pages/.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from tests import test_pages_browser as base
from tests.daemon_helpers import cheap_hash
from tests.photo_server import photo_server
from tests.stall_relay import Relay
from tests.test_pages_browser import (  # noqa: F401  (chromium, chromium_path: fixtures)
    MARKETING,
    PIN,
    RAPS,
    REHEARSAL,
    REHEARSAL_CLAIM,
    SECURITY,
    SECURITY_PW,
    chromium,
    chromium_path,
    sign_in,
)

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts" / "pages"
DOC_SHOTS = ROOT / "docs" / "screenshots"
RUNNER_TOKEN = "runner-token-0123456789"
BUSY = ["W1", "W2", "W3", "W4"]  # rehearsal sessions with a long claim window
SHORT = ["Q1", "Q2", "Q3"]  # rehearsal sessions whose winners turn critical in the test
FULL_PROMOTION = "Full name draw (test)"  # its PA line names the winner in full
SHORT_CLAIM = 36  # seconds: critical at a sixth (6 s) left, 30 s after the draw
PHONE = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 2,
         "is_mobile": True, "has_touch": True}  # fmt: skip
TABLET = {"viewport": {"width": 820, "height": 1180}, "is_mobile": True, "has_touch": True}
WALL = {"viewport": {"width": 1920, "height": 1080}}
HHCUES_NO_SHOW = [300, 120, 300]  # the no-show cue's vibration (handheld-cues.js)


def wait_for(what: str, cond: Callable[[], bool], timeout: float = 10.0) -> None:
    """Wait for a condition outside the browser (the relay, the daemon's API)."""
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


# ------------------------------------------------------------------ the daemon


def _session(sid: str, promotion: str, starts: str, claim: float, slots: int = 3) -> str:
    return (
        f'\n[[sessions]]\nid = "{sid}"\npromotion = "{promotion}"\nstarts = "{starts}"\n'
        f"quotas = {{ slots = {slots}, tables = 1 }}\nclaim_seconds = {claim}\nrehearsal = true\n"
    )


def _config(folder: Path) -> Path:
    """test_pages_browser's floor and users, four busy sessions, three short ones, a
    promotion whose PA line says the full name, a runner's token, and the directory's
    photos (every simulated player has one on the tests' photo server)."""
    path = base._config(folder)
    head, users = path.read_text().split("[[users]]", 1)
    today = re.search(r'starts = "([^"]+)"', head)
    assert today
    starts = today.group(1)
    photos = photo_server().url
    head = head.replace(
        "[floor.simulate]\n", f'[floor.simulate]\nphoto_base_url = "{photos}/photos/"\n'
    )
    extra = (
        f'\n[directory]\nphoto_origins = ["{photos}"]\n'
        f'\n[[promotions]]\nid = "raps-full"\nname = "{FULL_PROMOTION}"\nthreshold_points = 1\n'
        f'window = {{ start = "00:00", end = "24:00" }}\nannounce_name = "full"\n'
        + _session("F1", "raps-full", starts, 900, slots=1)
        + "".join(_session(sid, "raps-test", starts, 900) for sid in BUSY)
        + "".join(_session(sid, "raps-test", starts, SHORT_CLAIM) for sid in SHORT)
    )
    runner = (
        f'\n[[users]]\nname = "rita"\nrole = "marketing"\n'
        f"password_hash = '{cheap_hash('not-used-here')}'\n"
        f"api_token_hash = '{cheap_hash(RUNNER_TOKEN)}'\n"
    )
    path.write_text(head + extra + runner + "\n[[users]]" + users)
    return path


@dataclass
class Floor:
    """The daemon process, restartable on the same database, behind a relay."""

    folder: Path
    url: str = ""
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        cfg = self.folder / "raps.toml"
        if not cfg.exists():
            _config(self.folder)
        ready = self.folder / "ready.json"
        ready.unlink(missing_ok=True)
        log = (self.folder / "daemon.log").open("ab")
        self.proc = subprocess.Popen(
            [RAPS, "run", "--config", str(cfg), "--ready-file", str(ready), "--create-key"],
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        log.close()
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert self.proc.poll() is None, (self.folder / "daemon.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "daemon did not become ready"
            time.sleep(0.05)
        self.url = json.loads(ready.read_text())["url"]

        def pools() -> set[str]:
            return {r["pool"] for r in self.api("GET", "/api/pools") if r["eligible"]}

        wait_for("both pools", lambda: pools() >= {"slots", "tables"}, 60)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def api(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        r = httpx.request(method, f"{self.url}{path}", json=body, timeout=10,
                          headers={"Authorization": f"Bearer {RUNNER_TOKEN}"})  # fmt: skip
        assert r.status_code == 200, r.text
        return r.json()

    def session(self, sid: str) -> dict[str, Any]:
        return dict(self.api("GET", f"/api/sessions/{sid}"))

    def open_and_draw(self, sid: str, slots: int, tables: int) -> None:
        self.api("POST", f"/api/sessions/{sid}/open", {"command_id": f"o-{sid}"})
        for i in range(slots + tables):
            kind = "slots" if i < slots else "tables"
            got = self.api("POST", f"/api/sessions/{sid}/draw",
                           {"command_id": f"d-{sid}-{i}", "kind": kind})  # fmt: skip
            assert got["pick"] is not None, got


@pytest.fixture
def floor(tmp_path: Path) -> Iterator[Floor]:
    f = Floor(tmp_path)
    f.start()
    try:
        yield f
    finally:
        f.stop()


@pytest.fixture
def relay(floor: Floor) -> Iterator[Relay]:
    r = Relay(floor.url)
    try:
        yield r
    finally:
        r.close()


@pytest.fixture
def pages(chromium: Browser) -> Iterator[Callable[..., Page]]:  # noqa: F811
    """New pages in their own contexts; no page may throw."""
    contexts: list[BrowserContext] = []
    errors: list[str] = []

    def new(**kw: Any) -> Page:
        ctx = chromium.new_context(**kw)
        contexts.append(ctx)
        page = ctx.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        return page

    try:
        yield new
    finally:
        for ctx in contexts:
            ctx.close()
    assert errors == [], errors


def shot(page: Page, name: str, doc: bool = False) -> None:
    """A screenshot in test-artifacts/pages/; a page for docs/pages.md goes to
    docs/screenshots/ instead when RAPS_DOC_SCREENSHOTS is set."""
    folder = DOC_SHOTS if doc and os.environ.get("RAPS_DOC_SCREENSHOTS") else ARTIFACTS
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"))


def enter(hh: Page, sid: str) -> None:
    hh.click(f'.session-item[data-session="{sid}"]')
    expect(hh.locator("#session")).to_have_attribute("data-session", sid)
    expect(hh.locator("#sess-id")).to_have_text(f"session {sid}")


def winner(hh: Page, pick: int) -> Any:
    return hh.locator(f'.winner[data-pick="{pick}"]')


# --------------------------------------------------------- 1. a stalled command


def test_a_stalled_command_never_freezes_the_handheld(
    floor: Floor, relay: Relay, pages: Callable[..., Page]
) -> None:
    hh = pages(**PHONE)
    sign_in(hh, relay.url, "/handheld", MARKETING, PIN)
    enter(hh, "W1")
    hh.click("#open-rehearsal-btn")
    hh.click("#draw-slots")
    expect(winner(hh, 1)).to_be_visible()
    verify = winner(hh, 1).locator('[data-action="verify"]')
    # the live stream may show the winner before the draw's own answer is in: wait for it
    expect(hh.locator("#draw-slots")).to_be_enabled()

    relay.stall()  # the link stays up and passes nothing
    hh.click("#draw-slots")
    # within 2 s the tapped button says so, and only it is off
    expect(hh.locator("#draw-slots .cmd-wait")).to_have_text("No answer yet · retrying",
                                                             timeout=2000)  # fmt: skip
    expect(hh.locator("#net-banner")).to_contain_text('retrying "draw a slot winner"')
    expect(hh.locator("#draw-slots")).to_be_disabled()
    for other in (verify, winner(hh, 1).locator('[data-action="no-show"]'),
                  hh.locator("#draw-tables"), hh.locator("#close-btn")):  # fmt: skip
        expect(other).to_be_enabled()
    shot(hh, "issue18-stalled-draw-handheld")

    # a read waits the same way: the ID check says so within 2 s and stays tappable
    check = winner(hh, 1).locator(".id-check")
    check.click()
    expect(check.locator(".cmd-wait")).to_have_text("No answer yet · retrying (tap to stop)",
                                                    timeout=2000)  # fmt: skip
    expect(check).to_be_enabled()
    # the other winner can be verified meanwhile: its own command, its own retry state
    verify.click()
    expect(verify.locator(".cmd-wait")).to_be_visible(timeout=2000)
    expect(hh.locator("#draw-tables")).to_be_enabled()
    # the stalled draw is given up after its timeout and sent again with the same id
    wait_for("a retried draw", lambda: len(relay.command_ids("/draw")) >= 3, 15)

    relay.flow()
    expect(winner(hh, 2)).to_be_visible(timeout=10000)
    expect(hh.locator('.winner.verified[data-pick="1"]')).to_be_visible(timeout=10000)
    expect(hh.locator("#net-banner")).to_be_hidden(timeout=10000)
    expect(hh.locator("#draw-slots")).to_be_enabled()
    ids = Counter(relay.command_ids("/draw"))
    # two draws were tapped: the first once, the stalled one sent again with its own id
    assert len(ids) == 2 and sorted(ids.values())[0] == 1 and max(ids.values()) >= 2, ids
    picks = floor.session("W1")["picks"]
    assert [p["pick"] for p in picks] == [1, 2], "the retried draw drew twice"
    assert picks[0]["state"] == "verified"

    # entering a session on a stalled link: the load banner says what waits within 2 s,
    # and the session shows once the link flows (no greyed page, no silent wait)
    hh.click("#back")
    # the list read afresh (W1 is open with two picks now), nothing still on its way
    expect(hh.locator('.session-item[data-session="W1"]')).to_contain_text("open")
    expect(hh.locator('.session-item[data-session="W1"]')).to_contain_text("2 picks")
    relay.stall()
    hh.click('.session-item[data-session="W2"]')
    expect(hh.locator("#load-banner")).to_have_text(
        "Loading the session: no answer yet · retrying", timeout=2000
    )
    expect(hh.locator("#sess-state")).to_have_text("Loading…")
    relay.flow()
    expect(hh.locator("#open-rehearsal-btn")).to_be_visible(timeout=10000)
    expect(hh.locator("#sess-state")).to_contain_text("SCHEDULED")
    expect(hh.locator("#load-banner")).to_be_hidden()


# ----------------------------------------------------- 2. dispatch goes stale


def test_dispatch_goes_stale_on_a_missed_heartbeat_and_catches_up(
    floor: Floor, relay: Relay, pages: Callable[..., Page]
) -> None:
    wall = pages(**WALL)
    sign_in(wall, relay.url, "/dispatch", SECURITY, SECURITY_PW)
    expect(wall.locator("#d-conn")).to_have_text("LIVE")
    floor.open_and_draw("W1", 1, 0)
    expect(base.dispatch_card(wall, "W1", 1)).to_be_visible()

    before = relay.requests("GET /api/stream")
    relay.stall()
    # the heartbeat comes every second: STALE within 3 s of the first one missed
    expect(wall.locator("#stale")).to_be_visible(timeout=4000)
    expect(wall.locator("#stale")).to_contain_text("STALE")
    expect(wall.locator("#d-conn")).to_have_text("RECONNECTING")
    expect(wall.locator("#stale-age")).to_have_text(re.compile(r"last update \d+ s ago"))
    # it tries a fresh stream (on a new connection or a kept-alive one)
    wait_for("a reconnect", lambda: relay.requests("GET /api/stream") > before)
    floor.api("POST", "/api/sessions/W1/draw", {"command_id": "late", "kind": "slots"})
    # a wall screen on a flowing link shows the new winner: the stalled one does not (it
    # is out of date, and says so)
    live = pages(**WALL)
    sign_in(live, floor.url, "/dispatch", SECURITY, SECURITY_PW)
    expect(base.dispatch_card(live, "W1", 2)).to_be_visible(timeout=15000)
    expect(base.dispatch_card(wall, "W1", 2)).to_have_count(0)
    expect(wall.locator("#stale")).to_be_visible()

    relay.flow()
    expect(base.dispatch_card(wall, "W1", 2)).to_be_visible(timeout=5000)
    expect(wall.locator("#d-conn")).to_have_text("LIVE")
    expect(wall.locator("#stale")).to_be_hidden()


# ----------------------------------------------------------- 3. a restart


def test_sign_ins_survive_a_restart_and_so_do_sign_outs(
    floor: Floor, relay: Relay, pages: Callable[..., Page]
) -> None:
    hh, wall = pages(**PHONE), pages(**WALL)
    sign_in(hh, relay.url, "/handheld", MARKETING, PIN)
    sign_in(wall, relay.url, "/dispatch", SECURITY, SECURITY_PW)
    expect(wall.locator("#d-conn")).to_have_text("LIVE")

    def restart() -> None:
        floor.stop()
        floor.start()
        relay.retarget(floor.url)

    restart()
    # the wall screen reconnects by itself and stays signed in
    expect(wall.locator("#d-conn")).to_have_text("LIVE", timeout=10000)
    expect(wall).to_have_url(re.compile(r"/dispatch$"))
    wall.reload()
    expect(wall.locator("#d-conn")).to_have_text("LIVE")
    # the handheld too: its next command goes through (the CSRF token still holds)
    enter(hh, "W2")
    hh.click("#open-rehearsal-btn")
    expect(hh.locator("#draw-box")).to_be_visible()
    hh.reload()
    expect(hh).to_have_url(re.compile(r"/handheld#W2$"))
    assert floor.session("W2")["state"] == "open"

    hh.click("#sign-out")
    expect(hh).to_have_url(re.compile(r"/login$"))
    restart()
    hh.goto(f"{relay.url}/handheld")
    expect(hh).to_have_url(re.compile(r"/login\?next="))  # signed out stays signed out
    wall.reload()
    expect(wall.locator("#d-conn")).to_have_text("LIVE")


# --------------------------------------- 4 and 7. every winner, every session


def _inside(box: Any, outer: Any) -> bool:
    """Whether a bounding box (Playwright's FloatRect, or a dict) lies within another."""
    return bool(
        box["x"] >= outer["x"] - 0.5
        and box["y"] >= outer["y"] - 0.5
        and box["x"] + box["width"] <= outer["x"] + outer["width"] + 0.5
        and box["y"] + box["height"] <= outer["y"] + outer["height"] + 0.5
    )


def test_ten_pending_winners_of_four_sessions_all_on_the_wall(
    floor: Floor, pages: Callable[..., Page]
) -> None:
    wall = pages(**WALL)
    sign_in(wall, floor.url, "/dispatch", SECURITY, SECURITY_PW)
    for sid, slots, tables in (("W1", 3, 0), ("W2", 2, 1), ("W3", 2, 0), ("W4", 1, 0)):
        floor.open_and_draw(sid, slots, tables)
    cards = wall.locator(".d-card")
    expect(cards).to_have_count(9)
    floor.api("POST", "/api/sessions/W4/draw", {"command_id": "w4-t", "kind": "tables"})
    expect(cards).to_have_count(10)
    expect(wall.locator("#more")).to_be_hidden()
    view = {"x": 0.0, "y": 0.0, "width": 1920.0, "height": 1080.0}
    section = wall.locator(".d-pending").bounding_box()
    assert section and _inside(section, view)
    for i in range(10):
        c = cards.nth(i)
        expect(c).to_be_visible()
        box = c.bounding_box()
        assert box and _inside(box, section), (i, box, section)
        px = c.locator(".d-spot").evaluate("e => parseFloat(getComputedStyle(e).fontSize)")
        assert float(px) >= 28, px  # read from across a room
    deadlines = [cards.nth(i).get_attribute("data-deadline") or "" for i in range(10)]
    assert deadlines == sorted(deadlines), "soonest deadline first"
    # the page never grows past the screen: the header, the clock, the badge, the map
    size = wall.evaluate("[document.body.scrollWidth, document.documentElement.scrollHeight]")
    assert size[0] <= 1920 and size[1] <= 1080, size
    for sel in ("#d-clock", "#d-conn", "#d-sessions", "#map svg"):
        box = wall.locator(sel).bounding_box()
        assert box and box["width"] > 0 and _inside(box, view), (sel, box)
    expect(wall.locator("#d-sessions")).to_contain_text("REHEARSAL")
    map_box = wall.locator("#map svg").bounding_box()
    assert map_box and map_box["width"] >= 400, map_box
    shot(wall, "dispatch-busy-1920x1080", doc=True)


FIT = """() => {
  const r = (e) => e.getBoundingClientRect();
  const within = (b, o) => b.top >= o.top - 0.5 && b.bottom <= o.bottom + 0.5
    && b.left >= o.left - 0.5 && b.right <= o.right + 0.5;
  const section = r(document.querySelector('.d-pending'));
  const cards = [...document.querySelectorAll('.d-card')];
  const shown = cards.filter((c) => !c.hidden);
  const more = document.getElementById('more');
  const bar = document.getElementById('escalation');
  const items = [...bar.querySelectorAll('.esc-item')];
  const escMore = bar.querySelector('.esc-more');
  const count = (el) => (el && !el.hidden
    ? Number((el.textContent.match(/\\+(\\d+)/) || [])[1]) : 0);
  return {
    cards: cards.length,
    shown: shown.length,
    clipped: shown.filter((c) => !within(r(c), section)).map((c) => c.dataset.label),
    more: count(more),
    order: cards.map((c) => c.dataset.deadline),
    labels: cards.map((c) => c.dataset.label),
    section: Math.round(section.height),
    critical: cards.filter((c) => c.classList.contains('critical')).map((c) => c.dataset.session),
    shownCritical: shown.filter((c) => c.classList.contains('critical')).length,
    bar: bar.classList.contains('on'),
    items: items.filter((i) => !i.hidden).length,
    itemsCut: items.filter((i) => !i.hidden && !within(r(i), r(bar))).map((i) => i.textContent),
    escMore: count(escMore),
    escMoreWhole: !escMore || escMore.hidden || within(r(escMore), r(bar)),
    page: [document.body.scrollWidth, document.documentElement.scrollHeight],
  };
}"""


def _fits(got: dict[str, Any], pending: int) -> None:
    """Every pending winner is either whole on the screen or counted in "+N more"."""
    assert got["cards"] == pending, got
    assert got["clipped"] == [], got
    assert got["shown"] + got["more"] == pending, got
    assert got["order"] == sorted(got["order"]), "soonest deadline first"
    assert got["page"][0] <= 1920 and got["page"][1] <= 1080, got


def test_critical_winners_refit_the_wall_and_the_escalate_bar_counts_the_rest(
    floor: Floor, pages: Callable[..., Page]
) -> None:
    """Ten winners of three short sessions turn critical together beside eight that
    wait longer: the ESCALATE bar appearing (and the resolved picks stepping aside)
    re-fits the cards (a ResizeObserver, not new data), all ten critical ones shown,
    each place in the bar whole and those past its height counted."""
    wall = pages(**WALL)
    sign_in(wall, floor.url, "/dispatch", SECURITY, SECURITY_PW)
    floor.open_and_draw("W1", 3, 1)
    floor.open_and_draw("W2", 3, 1)
    for sid in SHORT:  # opened first, drawn one after the other: close deadlines
        floor.api("POST", f"/api/sessions/{sid}/open", {"command_id": f"o-{sid}"})
    for sid, slots, tables in (("Q1", 3, 1), ("Q2", 3, 1), ("Q3", 1, 1)):
        for i in range(slots + tables):
            body = {"command_id": f"d-{sid}-{i}", "kind": "slots" if i < slots else "tables"}
            floor.api("POST", f"/api/sessions/{sid}/draw", body)
    expect(wall.locator(".d-card")).to_have_count(18)
    calm = wall.evaluate(FIT)
    _fits(calm, 18)
    assert not calm["bar"] and calm["more"] > 0, calm  # 18 do not fit: "+N more"
    # the short sessions' winners are the soonest: they come first
    assert calm["order"][:10] == sorted(calm["order"])[:10]
    # all ten critical at once (a sixth of 36 s before their deadlines)
    wall.wait_for_function(
        "() => [...document.querySelectorAll('.d-card[data-session^=Q]')]"
        ".filter((c) => c.classList.contains('critical')).length === 10",
        timeout=(SHORT_CLAIM + 5) * 1000,
    )
    hot = wall.evaluate(FIT)
    assert hot["bar"] and sorted(hot["critical"]) == ["Q1"] * 4 + ["Q2"] * 4 + ["Q3"] * 2, hot
    _fits(hot, 18)
    # the bar took room and the resolved picks gave theirs: the cards were fitted again
    # to the new space (none cut, the rest counted), every critical winner is shown
    assert hot["section"] != calm["section"] and hot["shownCritical"] == 10, (calm, hot)
    # the bar: every place whole (two and more of them), the rest counted
    assert hot["items"] >= 2 and hot["itemsCut"] == [] and hot["escMoreWhole"], hot
    assert hot["items"] + hot["escMore"] == 10, hot
    assert hot["escMore"] > 0, "ten places do not fit the bar: it says how many more"
    # sessions are lettered: the same pick number of two sessions never looks the same
    labels = hot["labels"]
    assert len(set(labels)) == 18 and {"#A1", "#B1", "#C1", "#D1", "#E1"} <= set(labels), labels
    shot(wall, "dispatch-critical-1920x1080", doc=True)  # (the first no-shows may follow)


# ----------------------------------------------------- 5. a fast double tap


def _fast_double_tap(page: Page, selector: str, gap_ms: int) -> float:
    """Two taps `gap_ms` apart (a thumb's double tap); the gap the page saw, in ms."""
    page.evaluate(
        """sel => { window.__taps = []; document.querySelector(sel).addEventListener(
             'click', () => window.__taps.push(performance.now()), { capture: true }); }""",
        selector,
    )
    box = page.locator(selector).bounding_box()
    assert box
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.touchscreen.tap(x, y)
    page.wait_for_timeout(gap_ms)  # input timing: how fast the second tap follows
    page.touchscreen.tap(x, y)
    taps = page.evaluate("window.__taps")
    assert len(taps) == 2, taps
    return float(taps[1] - taps[0])


def test_a_fast_double_tap_confirms_nothing(floor: Floor, pages: Callable[..., Page]) -> None:
    hh = pages(**PHONE)
    sign_in(hh, floor.url, "/handheld", MARKETING, PIN)
    enter(hh, "W3")
    hh.click("#open-rehearsal-btn")
    hh.click("#draw-slots")
    no_show = winner(hh, 1).locator('[data-action="no-show"]')
    no_show.scroll_into_view_if_needed()
    gap = _fast_double_tap(hh, '.winner[data-pick="1"] [data-action="no-show"]', 120)
    assert gap < 400, f"the taps were {gap:.0f} ms apart, not a fast double tap"
    # armed, visibly, and ready for a deliberate second tap only after the minimum gap
    expect(no_show).to_have_class(re.compile(r"\barmed\b"))
    expect(no_show).to_have_text("Tap again: no-show")
    assert floor.session("W3")["picks"][0]["state"] == "pending", "the double tap confirmed"
    no_show.click()
    expect(base.outcome(base.Screens(hh, hh), 1)).to_have_text("no-show")
    assert floor.session("W3")["picks"][0]["state"] == "no_show"

    close = hh.locator("#close-btn")
    close.scroll_into_view_if_needed()
    gap = _fast_double_tap(hh, "#close-btn", 150)
    assert gap < 400, gap
    expect(close).to_have_text("Tap again to close the session")
    assert floor.session("W3")["state"] == "open", "the double tap closed the session"
    shot(hh, "issue18-armed-close-handheld")
    close.click()
    expect(hh.locator("#sess-state")).to_contain_text("CLOSED")
    assert floor.session("W3")["seed"]


# --------------------------------------------- 6 and 8. toasts, order, no-show


def _covered_by_toast(page: Page) -> list[str]:
    """Visible buttons and links whose box the toast's box overlaps (rectangles: a point
    check at a button's centre cannot see a toast with pointer-events: none)."""
    return list(page.evaluate(
        """() => {
          const t = document.querySelector('#toast').getBoundingClientRect();
          // a button scrolled under the sticky header is under it, toast or no toast
          const head = document.querySelector('.hh-top');
          const h = head.getBoundingClientRect();
          const bad = [];
          for (const b of document.querySelectorAll('button, a')) {
            const r = b.getBoundingClientRect();
            if (!r.width || !r.height || b.closest('[hidden]')) continue;
            if (!head.contains(b) && r.top + r.height / 2 < h.bottom) continue;
            if (r.left < t.right && t.left < r.right && r.top < t.bottom && t.top < r.bottom) {
              bad.push(b.textContent.trim().slice(0, 40));
            }
          }
          return bad;
        }"""
    ))  # fmt: skip


def _header_with_toast(page: Page, anchor: str) -> dict[str, float]:
    """The sticky header's height, the toast's box and where `anchor` is on the screen."""
    return dict(page.evaluate(
        """(anchor) => {
          const r = (s) => document.querySelector(s).getBoundingClientRect();
          const t = r('#toast');
          return { header: r('.hh-top').height, anchorTop: r(anchor).top,
                   toastWidth: t.width, toastTop: t.top, toastBottom: t.bottom,
                   headerBottom: r('.hh-top').bottom };
        }""",
        anchor,
    ))  # fmt: skip


def test_toasts_never_cover_a_button_and_the_most_urgent_winner_comes_first(
    floor: Floor, pages: Callable[..., Page]
) -> None:
    hh = pages(**PHONE)
    hh.add_init_script(
        "window.__vibes = []; navigator.vibrate = (p) => { window.__vibes.push(p); return true; };"
    )
    sign_in(hh, floor.url, "/handheld", MARKETING, PIN)
    enter(hh, "W4")
    quiet = _header_with_toast(hh, "#back")  # no toast yet
    expect(hh.locator("#toast")).to_be_hidden()
    hh.click("#open-rehearsal-btn")
    for n in (1, 2, 3):
        hh.click("#draw-slots")
        expect(hh.locator("#toast")).to_have_text(f"Winner #{n} drawn")
        expect(winner(hh, n)).to_be_visible()
        assert _covered_by_toast(hh) == []
    order = hh.locator(".winner.pending").evaluate_all("cs => cs.map(c => Number(c.dataset.pick))")
    assert order == [1, 2, 3], "the soonest deadline (the first drawn) comes first"
    # a refusal at the bottom of the page, where the toast used to sit
    winner(hh, 1).locator('[data-action="verify"]').click()
    card = hh.locator('.winner.verified[data-pick="1"]')
    card.locator('[data-action="award"]').scroll_into_view_if_needed()
    card.locator('[data-action="award"]').click()
    expect(hh.locator("#toast")).to_have_text("Enter the envelope number")
    assert _covered_by_toast(hh) == []
    expect(hh.locator("#toast")).to_have_css("pointer-events", "none")

    # the claim timer's no-show is announced (a long toast), with its own vibration
    hh.evaluate("window.scrollTo(0, 0)")
    hh.click("#back")
    enter(hh, REHEARSAL)
    hh.click("#open-rehearsal-btn")
    hh.click("#draw-tables")
    expect(winner(hh, 1)).to_be_visible()
    anchor = "#back"  # below the sticky header: it moves if the header grows
    hh.wait_for_function("() => document.querySelector('#toast').hidden")
    before = _header_with_toast(hh, anchor)
    no_show = HHCUES_NO_SHOW
    assert no_show not in hh.evaluate("window.__vibes")
    expect(hh.locator("#toast")).to_contain_text("No-show: #1 Table 1",
                                                  timeout=(REHEARSAL_CLAIM + 4) * 1000)  # fmt: skip
    assert no_show in hh.evaluate("window.__vibes")
    # the header keeps its height (the page does not move under the thumb), and the
    # toast has the width of the screen inside it, covering no button or link
    during = _header_with_toast(hh, anchor)
    assert during["header"] == before["header"] == quiet["header"], (quiet, before, during)
    assert during["anchorTop"] == before["anchorTop"], (before, during)
    assert during["toastWidth"] >= 300, during
    assert during["headerBottom"] >= during["toastBottom"], during
    assert _covered_by_toast(hh) == []
    expect(winner(hh, 1)).to_have_count(0)


def test_the_final_pages_at_phone_tablet_and_wall_sizes(
    floor: Floor, pages: Callable[..., Page]
) -> None:
    floor.open_and_draw("W1", 2, 1)
    floor.open_and_draw("W2", 1, 0)
    for name, kw in (("handheld-390x844", PHONE), ("handheld-820x1180", TABLET)):
        hh = pages(**kw)
        sign_in(hh, floor.url, "/handheld", MARKETING, PIN)
        enter(hh, "W1")
        expect(winner(hh, 3)).to_be_visible()
        width = hh.evaluate("document.documentElement.scrollWidth")
        assert width <= kw["viewport"]["width"], (name, width)  # type: ignore[index]
        shot(hh, name, doc=True)
    wall = pages(**WALL)
    sign_in(wall, floor.url, "/dispatch", SECURITY, SECURITY_PW)
    expect(wall.locator(".d-card")).to_have_count(4)
    expect(wall.locator(".mark")).to_have_count(4)
    shot(wall, "dispatch-1920x1080", doc=True)

"""The handheld and the dispatch screen in a real browser (Debian's Chromium, Playwright).

The real daemon runs as a process (`raps run`) on a small simulated floor.  Marketing
signs in on a phone-sized handheld (390x844) and runs a rehearsal session and then a
live one from open to close: slot and table draws, verified, prize recorded, a no-show
by the claim timer and one by staff, a void with a reason, redraws, a draw whose answer
is lost on the way back (retried with the same command id: drawn once), close with the
seed revealed.  Security watches the dispatch screen (1920x1080) beside it, and every
pick must be on it within one second of the tap that drew it: the spec, measured from
the click with Playwright's waiting assertions, never a sleep.

Screenshots of both screens at every key step go to test-artifacts/pages/.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest
from playwright.sync_api import Browser, Page, Playwright, Route, expect, sync_playwright

from tests.apt import MissingPackage, ensure_binary
from tests.daemon_helpers import cheap_hash

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
RAPS = str(Path(sys.executable).parent / "raps")
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts" / "pages"
TZ = ZoneInfo("Africa/Johannesburg")

MARKETING, PIN = "ann", "4321"
SECURITY, SECURITY_PW = "sam", "watch-the-floor"
AUDIT_TOKEN = "auditor-token-0123456789"
REHEARSAL, LIVE = "R-today", "L-today"
REHEARSAL_CLAIM = 8  # seconds: short, so the claim timer's no-show happens in the test
SPEC = 1.0  # a pick or a resolution is on the dispatch screen within one second


# ------------------------------------------------------------------ the browser


def _ensure_chromium() -> str:
    """Debian's chromium; installed with apt when missing and we are root, else a failure."""
    try:
        return ensure_binary(CHROMIUM, ["chromium"], recommends=True)
    except MissingPackage as e:
        pytest.fail(str(e), pytrace=False)


@pytest.fixture(scope="session")
def chromium_path() -> str:
    return _ensure_chromium()


@pytest.fixture
def chromium(chromium_path: str) -> Iterator[Browser]:
    # Playwright's sync API runs an event loop of its own while it is open: it must be
    # closed before the next asyncio test of the session starts, so no session scope here
    with sync_playwright() as pw:
        browser = _launch(pw, chromium_path)
        try:
            yield browser
        finally:
            browser.close()


def _launch(pw: Playwright, path: str) -> Browser:
    return pw.chromium.launch(executable_path=path, headless=True, args=CHROMIUM_ARGS)


# ------------------------------------------------------------------- the daemon


@dataclass
class Daemon:
    url: str
    folder: Path
    proc: subprocess.Popen[bytes]

    def api(self, path: str) -> Any:
        r = httpx.get(f"{self.url}{path}", headers={"Authorization": f"Bearer {AUDIT_TOKEN}"})
        assert r.status_code == 200, r.text
        return r.json() if r.headers["content-type"].startswith("application/json") else r.text


def daemon_with_config(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, edit: Callable[[str], str]
) -> Daemon:
    """The `daemon` fixture's daemon on this module's config as `edit` rewrites its text
    (another page's tests add their sections, users or sessions)."""
    base = _config

    def edited(folder: Path) -> Path:
        path = base(folder)
        path.write_text(edit(path.read_text()))
        return path

    monkeypatch.setattr(sys.modules[__name__], "_config", edited)
    daemon: Daemon = request.getfixturevalue("daemon")
    return daemon


def before_users(text: str, extra: str) -> str:
    """A config's text with `extra` put before its first [[users]] table."""
    head, users = text.split("[[users]]", 1)
    return head + extra + "\n[[users]]" + users


def _config(folder: Path) -> Path:
    today = datetime.now(TZ).replace(microsecond=0)
    text = f"""
[site]
id = "browser-test"
name = "Golden Horse (test)"
timezone = "{TZ.key}"

[storage]
url = "sqlite:///{folder / "raps.db"}"
snapshot_interval_seconds = 3600

[credentials]
seed_key_file = "{folder / "seed.key"}"

[http]
host = "127.0.0.1"
port = 0

[floor]
idle_seconds = 3600

[floor.simulate]
machines = 60
tables = 8
players = 400
events_per_second = 40
seed = 7
warmup_seconds = 900

[[promotions]]
id = "raps-test"
name = "Bonus jackpot session (test)"
threshold_points = 1
window = {{ start = "00:00", end = "24:00" }}

[[sessions]]
id = "{REHEARSAL}"
promotion = "raps-test"
starts = "{today.isoformat()}"
quotas = {{ slots = 3, tables = 1 }}
claim_seconds = {REHEARSAL_CLAIM}
rehearsal = true

[[sessions]]
id = "{LIVE}"
promotion = "raps-test"
starts = "{today.isoformat()}"
ends = "{(today + timedelta(hours=3)).isoformat()}"
quotas = {{ slots = 1, tables = 1 }}

[[users]]
name = "{MARKETING}"
role = "marketing"
password_hash = '{cheap_hash(PIN)}'

[[users]]
name = "{SECURITY}"
role = "security"
password_hash = '{cheap_hash(SECURITY_PW)}'

[[users]]
name = "ivy"
role = "auditor"
password_hash = '{cheap_hash("not-used-here")}'
api_token_hash = '{cheap_hash(AUDIT_TOKEN)}'

[logging]
format = "json"
"""
    path = folder / "raps.toml"
    path.write_text(text)
    return path


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    cfg = _config(tmp_path)
    ready = tmp_path / "ready.json"
    log = (tmp_path / "daemon.log").open("wb")
    proc = subprocess.Popen(
        [RAPS, "run", "--config", str(cfg), "--ready-file", str(ready), "--create-key"],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    d: Daemon | None = None
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert proc.poll() is None, f"daemon exited: {(tmp_path / 'daemon.log').read_text()}"
            assert time.monotonic() < deadline, "daemon did not become ready"
            time.sleep(0.05)
        d = Daemon(json.loads(ready.read_text())["url"], tmp_path, proc)
        while True:  # the simulated floor has caught up when both pools have players
            pools = {r["pool"] for r in d.api("/api/pools") if r["eligible"]}
            if pools >= {"slots", "tables"}:
                break
            assert time.monotonic() < deadline, f"pools stayed empty: {pools}"
            time.sleep(0.2)
        yield d
    finally:
        if d is not None:
            proc = d.proc  # a test that restarted the daemon hands the new one back here
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()


# ---------------------------------------------------------------- the network


class Link:
    """A TCP relay between the wall screen and the daemon that the test can cut: every
    open connection drops and new ones are refused until it is restored (a pulled cable,
    a Wi-Fi access point rebooting)."""

    def __init__(self, upstream: str) -> None:
        host, port = upstream.removeprefix("http://").rsplit(":", 1)
        self.upstream = (host, int(port))
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        self.up = True
        self.open: list[socket.socket] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            if not self.up:
                client.close()
                continue
            upstream = socket.create_connection(self.upstream)
            with self.lock:
                self.open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        for x in (a, b):
            with contextlib.suppress(OSError):
                x.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        self.up = False
        with self.lock:
            for s in self.open:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()
            self.open.clear()

    def restore(self) -> None:
        self.up = True

    def close(self) -> None:
        self.cut()
        self.server.close()


# -------------------------------------------------------------------- the pages


@dataclass
class Screens:
    hh: Page
    dispatch: Page
    shots: list[Path] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    n: int = 0

    def snap(self, name: str) -> None:
        """Screenshots of both screens, and what they showed (checked for full cards)."""
        self.n += 1
        for label, page in (("handheld", self.hh), ("dispatch", self.dispatch)):
            path = ARTIFACTS / f"{self.n:02d}-{name}-{label}.png"
            page.screenshot(path=str(path), full_page=label == "handheld")
            self.shots.append(path)
            self.texts.append(page.content())

    def text(self) -> None:
        self.texts += [self.hh.content(), self.dispatch.content()]


def sign_in(page: Page, url: str, path: str, user: str, secret: str) -> None:
    page.goto(f"{url}{path}")
    expect(page).to_have_url(re.compile(r"/login\?next="))
    page.fill("#user", user)
    page.fill("#secret", secret)
    page.click("#submit")
    expect(page).to_have_url(re.compile(re.escape(path) + "$"))


def remaining(t0: float) -> float:
    """Milliseconds left of the one-second spec since t0 (never below a few ms)."""
    return max(5.0, (SPEC - (time.monotonic() - t0)) * 1000)


def dispatch_card(page: Page, session: str, pick: int) -> Any:
    return page.locator(f'.d-card[data-session="{session}"][data-pick="{pick}"]')


def draw(s: Screens, session: str, kind: str, expect_pick: int) -> dict[str, Any]:
    """Tap draw; the winner must be on the handheld and on the dispatch screen (with
    its spot marked on the map) within one second of the tap."""
    t0 = time.monotonic()
    s.hh.click(f"#draw-{kind}")
    card = dispatch_card(s.dispatch, session, expect_pick)
    expect(card).to_be_visible(timeout=remaining(t0))
    expect(s.dispatch.locator(f'.mark[data-pick="{expect_pick}"]')).to_have_count(
        1, timeout=remaining(t0)
    )
    winner = s.hh.locator(f'.winner[data-pick="{expect_pick}"]')
    expect(winner).to_be_visible(timeout=remaining(t0))
    # both screens show the same place, a first name and initial, and a masked card
    spot = winner.locator(".w-spot").inner_text()
    expect(card.locator(".d-spot")).to_have_text(spot)
    assert re.fullmatch(r"\S+ [A-Z]\.", winner.locator(".w-name").inner_text())
    assert re.fullmatch(r"Card \*+\d{4}", winner.locator(".w-card").inner_text())
    expect(winner.locator(".w-count .w-secs")).to_have_text(re.compile(r"^\d+$"))
    return {"spot": spot}


def gone_from_dispatch(s: Screens, session: str, pick: int, t0: float) -> None:
    """A resolution leaves the pending list (and the map) within one second."""
    expect(dispatch_card(s.dispatch, session, pick)).to_have_count(0, timeout=remaining(t0))
    expect(s.dispatch.locator(f'.mark[data-pick="{pick}"]')).to_have_count(0, timeout=1000)


def outcome(s: Screens, pick: int) -> Any:
    return s.hh.locator(f'#pick-list li[data-pick="{pick}"] .p-out')


def verify_and_award(
    s: Screens, session: str, pick: int, envelope: str, rand: str, kind: str
) -> None:
    t0 = time.monotonic()
    s.hh.locator(f'.winner[data-pick="{pick}"] [data-action="verify"]').click()
    gone_from_dispatch(s, session, pick, t0)
    expect(
        s.dispatch.locator(f'#history tr[data-pick="{pick}"][data-state="verified"]')
    ).to_be_visible(timeout=1000)
    card = s.hh.locator(f'.winner.verified[data-pick="{pick}"]')
    expect(card).to_be_visible()
    card.locator(f"#envelope-{pick}").fill(envelope)
    card.locator(f"#amount-{pick}").fill(rand)
    card.locator(f'[data-prize="{kind}"]').click()
    card.locator('[data-action="award"]').click()
    expect(outcome(s, pick)).to_contain_text(f"envelope {envelope}")
    expect(card).to_have_count(0)


def test_a_full_session_on_the_handheld_with_the_dispatch_screen_beside_it(
    chromium: Browser, daemon: Daemon
) -> None:
    if ARTIFACTS.exists():
        shutil.rmtree(ARTIFACTS)
    ARTIFACTS.mkdir(parents=True)
    url = daemon.url
    phone = chromium.new_context(
        viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True,
        has_touch=True,
    )  # fmt: skip
    wall = chromium.new_context(viewport={"width": 1920, "height": 1080})
    link = Link(url)  # the wall screen reaches the daemon through a link the test can cut
    errors: list[str] = []
    try:
        hh, dispatch = phone.new_page(), wall.new_page()
        for page in (hh, dispatch):
            page.on("pageerror", lambda e: errors.append(str(e)))
        s = Screens(hh, dispatch)

        # --- security signs in on the wall screen; marketing on the handheld
        sign_in(dispatch, link.url, "/dispatch", SECURITY, SECURITY_PW)
        expect(dispatch.locator("#d-conn")).to_have_text("LIVE")
        expect(dispatch.locator("#map svg [data-machine]")).to_have_count(60)
        expect(dispatch.locator("#none")).to_be_visible()
        sign_in(hh, url, "/handheld", MARKETING, PIN)
        expect(hh.locator(f'.session-item[data-session="{REHEARSAL}"]')).to_contain_text(
            "REHEARSAL"
        )
        expect(hh.locator(f'.session-item[data-session="{LIVE}"]')).to_contain_text("LIVE")
        s.snap("signed-in")

        # --- the rehearsal: clearly marked, opened with one tap
        hh.click(f'.session-item[data-session="{REHEARSAL}"]')
        expect(hh.locator("#mode-banner")).to_contain_text("REHEARSAL")
        expect(hh.locator('#counts [data-pool="slots"] .n')).to_have_text(re.compile(r"^[1-9]"))
        expect(hh.locator('#counts [data-pool="tables"] .n')).to_have_text(re.compile(r"^[1-9]"))
        s.snap("rehearsal-scheduled")
        hh.click("#open-rehearsal-btn")
        expect(hh.locator("#draw-box")).to_be_visible()
        expect(dispatch.locator("#d-sessions")).to_contain_text(f"{REHEARSAL} · REHEARSAL")

        # pick 1: a slot winner, verified, prize recorded
        draw(s, REHEARSAL, "slots", 1)
        expect(dispatch_card(dispatch, REHEARSAL, 1)).to_contain_text("REHEARSAL")
        s.snap("slot-winner")
        verify_and_award(s, REHEARSAL, 1, "E07", "500", "plus_play")
        expect(outcome(s, 1)).to_have_text("awarded R500 +Play, envelope E07")

        # pick 2: a table winner nobody claims: the countdown escalates, the claim timer
        # makes it a no-show, and the next table draw is a redraw into the same slot
        draw(s, REHEARSAL, "tables", 2)
        expect(hh.locator('.winner[data-pick="2"] .w-spot')).to_contain_text("Seat")
        expect(dispatch_card(dispatch, REHEARSAL, 2)).to_have_class(
            re.compile(r"\bcritical\b"), timeout=REHEARSAL_CLAIM * 1000
        )
        expect(dispatch.locator("#escalation")).to_contain_text("ESCALATE")
        s.snap("escalation")
        expect(outcome(s, 2)).to_have_text("no-show", timeout=(REHEARSAL_CLAIM + 3) * 1000)
        expect(dispatch_card(dispatch, REHEARSAL, 2)).to_have_count(0, timeout=1000)
        expect(dispatch.locator('#history tr[data-pick="2"][data-state="no_show"]')).to_be_visible(
            timeout=1000
        )
        expect(hh.locator("#draw-tables .draw-label")).to_have_text("Redraw TABLE winner")

        # pick 3: the redraw; voided with a reason
        draw(s, REHEARSAL, "tables", 3)
        winner = hh.locator('.winner[data-pick="3"]')
        winner.locator("button", has_text="Void…").click()
        winner.locator(".reasons button", has_text="Card played by someone else").click()
        t0 = time.monotonic()
        winner.locator('[data-action="void"]').click()
        gone_from_dispatch(s, REHEARSAL, 3, t0)
        expect(outcome(s, 3)).to_have_text("void: Card played by someone else")

        # pick 4: redrawn again; staff mark a no-show (two taps: it cannot be undone)
        draw(s, REHEARSAL, "tables", 4)
        no_show = hh.locator('.winner[data-pick="4"] [data-action="no-show"]')
        no_show.click()
        expect(no_show).to_have_text("Tap again: no-show")
        t0 = time.monotonic()
        no_show.click()
        gone_from_dispatch(s, REHEARSAL, 4, t0)
        expect(outcome(s, 4)).to_have_text("no-show")

        # pick 5: the draw's answer is lost on the way back; the handheld retries with
        # the same command id and the server answers with the first outcome
        lost = {"n": 0}

        def lose_the_answer(route: Route) -> None:
            if lost["n"] == 0:
                lost["n"] += 1
                route.fetch()  # the server draws...
                route.abort("connectionreset")  # ...and the phone never hears of it
            else:
                route.continue_()

        hh.route("**/api/sessions/*/draw", lose_the_answer)
        before = len(daemon.api(f"/api/sessions/{REHEARSAL}")["picks"])
        t0 = time.monotonic()
        hh.click("#draw-slots")
        expect(dispatch_card(dispatch, REHEARSAL, 5)).to_be_visible(timeout=remaining(t0))
        expect(hh.locator(".toast")).to_contain_text("nothing was done twice", timeout=5000)
        expect(hh.locator('.winner[data-pick="5"]')).to_be_visible()
        hh.unroute("**/api/sessions/*/draw")
        after = daemon.api(f"/api/sessions/{REHEARSAL}")["picks"]
        assert len(after) == before + 1, "the retried draw drew twice"
        assert lost["n"] == 1
        s.snap("retried-draw")
        verify_and_award(s, REHEARSAL, 5, "E08", "1000", "cash")

        # close: the seed is revealed, it matches the commitment, verification linked
        close = hh.locator("#close-btn")
        close.click()
        expect(close).to_have_text("Tap again to close the session")
        close.click()
        expect(hh.locator("#sess-state")).to_contain_text("CLOSED")
        expect(hh.locator("#seed")).to_have_text(re.compile(r"^[0-9a-f]{64}$"))
        expect(hh.locator("#seed-check")).to_have_text("✓ The revealed seed matches the commitment")
        expect(hh.locator("#verify-link")).to_have_attribute(
            "href", f"/api/sessions/{REHEARSAL}/verification"
        )
        expect(hh.locator("#pick-list li")).to_have_count(5)
        expect(dispatch.locator("#d-sessions")).to_contain_text("No session open")
        s.snap("rehearsal-closed")
        hh.locator("#pick-list").scroll_into_view_if_needed()
        hh.screenshot(path=str(ARTIFACTS / f"{s.n:02d}-rehearsal-summary-handheld-view.png"))

        # --- the live session: opened only with the typed confirmation
        hh.click("#back")
        hh.click(f'.session-item[data-session="{LIVE}"]')
        expect(hh.locator("#mode-banner")).to_contain_text("LIVE SESSION")
        expect(hh.locator("#open-live-btn")).to_be_disabled()
        hh.fill("#live-confirm", "live")
        expect(hh.locator("#open-live-btn")).to_be_enabled()
        s.snap("live-confirm")
        hh.click("#open-live-btn")
        expect(hh.locator("#draw-box")).to_be_visible()
        expect(dispatch.locator("#d-sessions")).to_contain_text(f"{LIVE} · LIVE")

        draw(s, LIVE, "slots", 1)
        expect(dispatch_card(dispatch, LIVE, 1)).to_contain_text("LIVE")

        # the wall screen loses its connection while a winner is drawn: it says so, and
        # when the network is back it reconnects by itself and shows the winner
        link.cut()
        expect(dispatch.locator("#d-conn")).to_have_text("RECONNECTING", timeout=3000)
        expect(dispatch.locator("#stale")).to_be_visible(timeout=5000)
        hh.click("#draw-tables")
        expect(hh.locator('.winner[data-pick="2"]')).to_be_visible()
        s.snap("dispatch-link-down")
        link.restore()
        t0 = time.monotonic()
        expect(dispatch_card(dispatch, LIVE, 2)).to_be_visible(timeout=5000)
        expect(dispatch.locator("#d-conn")).to_have_text("LIVE")
        expect(dispatch.locator("#stale")).to_be_hidden()
        assert time.monotonic() - t0 < 3.0, "the wall screen took too long to come back"
        s.snap("live-two-pending")
        verify_and_award(s, LIVE, 1, "L01", "2500", "cash")
        verify_and_award(s, LIVE, 2, "L02", "750.50", "voucher")
        expect(outcome(s, 2)).to_have_text(
            re.compile(r"^awarded R750[,.]50 voucher, envelope L02$")
        )
        expect(hh.locator("#draw-slots .draw-label")).to_have_text(
            "All slot winners drawn (1 of 1)"
        )
        close = hh.locator("#close-btn")
        close.click()
        expect(close).to_have_text("Tap again to close the session")  # the second tap counts
        close.click()
        expect(hh.locator("#seed-check")).to_have_text("✓ The revealed seed matches the commitment")
        expect(dispatch.locator("#history tr")).to_have_count(2)
        s.snap("live-closed")
        s.text()

        # --- the records: every action by the signed-in user, rehearsal kept apart
        full_cards: set[str] = set()
        for session, rehearsal in ((REHEARSAL, True), (LIVE, False)):
            lines = daemon.api(f"/api/sessions/{session}/export").splitlines()
            records = [json.loads(x)["record"] for x in lines[1:] if x]  # after the header
            assert {r["data"]["rehearsal"] for r in records} == {rehearsal}
            staff = [r for r in records if r["actor"]["role"] != "timer"]
            assert {(r["actor"]["user"], r["actor"]["role"]) for r in staff} == {
                (MARKETING, "marketing")
            }
            full_cards |= {r["data"]["card"] for r in records if "card" in r["data"]}
        timer = [r for r in records if r["actor"]["role"] == "timer"]
        assert timer == [], "the live session had no claim-timer no-show"
        assert full_cards
        for shown in s.texts:
            for c in full_cards:
                assert c not in shown, "a full card number was on a screen"
        assert not errors, errors
    finally:
        phone.close()
        wall.close()
        link.close()
    log = (daemon.folder / "daemon.log").read_text()
    for c in full_cards:
        assert c not in log, "a full card number was in the log"
    assert f'"{PIN}"' not in log and SECURITY_PW not in log

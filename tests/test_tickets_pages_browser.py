"""Draw tickets in a real browser (Debian's Chromium, Playwright): the kiosk's receipt on
an 80 mm thermal printer, and the marketing handheld's live view of the ticket draws.

The real daemon runs as a process (`raps run`), started by the fixture of
tests/test_pages_browser.py on its small simulated floor, with a ticket program added:
complimentary tickets for every tier, draws whose entry window is open now (the daemon
reads the real clock, so every time is written relative to now, in the site's zone), one
not open yet and one whose time has passed, and an e-Host kiosk with its own API token.

- The receipt: a kiosk entry made over HTTP, then the receipt page in Chromium with the
  kiosk's bearer token, 80 mm wide (302 CSS px at 96 dpi): receipt number, masked card,
  ticket count, verification code, nothing wider than the roll, its stylesheet applied
  (the pages' Content-Security-Policy admits no inline style), and printed to PDF as
  80 mm pages.
- The handheld (390x844): marketing opens the "Ticket draws" tab, sees the open draw's
  bin empty, kiosks enter players of every tier, and the counts per tier group follow
  within seconds (Playwright's waiting assertions, never a sleep); the session controls
  keep working beside it.

Screenshots go to test-artifacts/pages/tickets-*.png.  tests/test_pages_browser.py
empties that folder when it starts, so the shots are written again at the end of the
test session if it ran after this file.
"""

from __future__ import annotations

import re
import tomllib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, expect

from raps.floorsim import FloorSimulator, demo_layout
from tests import test_pages_browser as browser_test
from tests.daemon_helpers import cheap_hash
from tests.test_pages_browser import (  # noqa: F401  (chromium, chromium_path, daemon: fixtures)
    ARTIFACTS,
    MARKETING,
    PIN,
    REHEARSAL,
    TZ,
    Daemon,
    chromium,
    chromium_path,
    daemon,
    sign_in,
)

KIOSK, KIOSK_TOKEN = "ehost-07", "kiosk-token-ehost-07-0123456789"
PROGRAM = "cash"
OPEN_DRAW, SHARED_DRAW, LATER_DRAW, PAST_DRAW = "cash-1", "cash-2", "car", "morning"
OPEN_BIN = "cash-today"
COMPLIMENTARY = {"ten": 10, "jack": 20, "queen": 30, "king": 40, "ace": 50}
GROUPS = {"ten-jack": ("ten", "jack"), "queen": ("queen",), "king-ace": ("king", "ace")}
ROLL_PX = 302  # 80 mm at 96 CSS px per inch
MM_PER_PT = 25.4 / 72


# ------------------------------------------------------------------ the config


def _local(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%d %H:%M:%S")  # no offset: read in site.timezone


def _tickets_toml(promotion: str) -> str:
    now = datetime.now(TZ).replace(microsecond=0)
    h = timedelta(hours=1)
    draws = [  # (id, name, bin, at, opens, closes), relative to now
        (OPEN_DRAW, "Cash draw 1", OPEN_BIN, now + 2 * h, now - h, now + 2 * h - h / 12),
        (SHARED_DRAW, "Cash draw 2 · vault share", OPEN_BIN, now + 5 * h, now - h, now + 5 * h),
        (LATER_DRAW, "Car draw", None, now + 30 * h, now + 24 * h, now + 29 * h),
        (PAST_DRAW, "Morning cash draw", None, now - h, now - 5 * h, now - h - h / 12),
    ]
    comp = ", ".join(f"{t} = {n}" for t, n in COMPLIMENTARY.items())
    text = f"""
[[ticket_programs]]
id = "{PROGRAM}"
promotion = "{promotion}"
name = "Cash and car draws"
complimentary = {{ {comp} }}

[ticket_programs.period]
kind = "fixed_start_to_draw"
start = "{_local(now - 48 * h)}"
"""
    for draw_id, name, bin_id, at, opens, closes in draws:
        text += f"""
[[ticket_draws]]
id = "{draw_id}"
program = "{PROGRAM}"
name = "{name}"
at = "{_local(at)}"
opens = "{_local(opens)}"
closes = "{_local(closes)}"
winners = 3
{f'bin = "{bin_id}"' if bin_id else ""}
"""
    text += f"""
[[users]]
name = "{KIOSK}"
role = "kiosk"
api_token_hash = '{cheap_hash(KIOSK_TOKEN)}'
"""
    return text


@pytest.fixture
def ticket_daemon(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Daemon]:
    """The page tests' daemon, its config extended with the ticket program and a kiosk."""

    def with_tickets(text: str) -> str:
        return text + _tickets_toml(tomllib.loads(text)["promotions"][0]["id"])

    yield browser_test.daemon_with_config(request, monkeypatch, with_tickets)


@dataclass(frozen=True)
class Player:
    card: str
    tier: str


def eligible_players(d: Daemon) -> dict[str, list[Player]]:
    """The simulated directory (same config, same seed, same players), by tier: only the
    members a kiosk may enter (known, age verified, no exclusion)."""
    sim_cfg = tomllib.loads((d.folder / "raps.toml").read_text())["floor"]["simulate"]
    sim = FloorSimulator(
        demo_layout(sim_cfg["machines"], sim_cfg["tables"]),
        sim_cfg["players"],
        datetime.now(TZ),
        seed=sim_cfg["seed"],
    )
    by_tier: dict[str, list[Player]] = {t: [] for t in COMPLIMENTARY}
    for p in sim.players:
        if p.in_directory and p.age_verified and not p.exclusions:
            by_tier[p.tier.value].append(Player(p.card, p.tier.value))
    missing = [t for t, ps in by_tier.items() if len(ps) < 2]
    assert not missing, f"the simulated floor has too few players of tiers {missing}"
    return by_tier


def kiosk(d: Daemon) -> httpx.Client:
    return httpx.Client(base_url=d.url, headers={"Authorization": f"Bearer {KIOSK_TOKEN}"})


def enter(client: httpx.Client, player: Player, draw: str = OPEN_DRAW) -> dict[str, Any]:
    body = {"request_id": f"kiosk-07:{uuid.uuid4().hex}", "card": player.card, "draw": draw}
    r = client.post("/api/tickets/kiosk/entries", json=body)
    assert r.status_code == 200, r.text
    got: dict[str, Any] = r.json()
    assert got["tickets"] == COMPLIMENTARY[player.tier], got
    return got


def masked(card: str) -> str:
    return "*" * (len(card) - 4) + card[-4:]


# ------------------------------------------------------------------ screenshots

_SHOTS: dict[Path, bytes] = {}


@pytest.fixture(scope="session")
def _keep_shots() -> Iterator[None]:
    """test_pages_browser.py empties the artifacts folder when it starts: write this
    file's screenshots and PDF again at the end of the test session if they were removed."""
    yield
    for path, png in _SHOTS.items():
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(png)


def keep(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    _SHOTS[path] = data


def snap(page: Page, name: str, full_page: bool = True) -> None:
    keep(ARTIFACTS / f"tickets-{name}.png", page.screenshot(full_page=full_page))


def watch(page: Page, problems: list[str]) -> None:
    """Page errors and console errors (a style or script the CSP refused, say)."""
    page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))

    def console(msg: ConsoleMessage) -> None:
        if msg.type == "error":
            problems.append(f"console: {msg.text}")

    page.on("console", console)


# -------------------------------------------------------------------- the tests


def test_the_kiosk_receipt_prints_on_an_80_mm_roll(
    chromium: Browser,  # noqa: F811  (the fixture imported above)
    ticket_daemon: Daemon,
    _keep_shots: None,
) -> None:
    player = eligible_players(ticket_daemon)["queen"][0]
    with kiosk(ticket_daemon) as client:
        receipt = enter(client, player)
    number, code = receipt["receipt_no"], receipt["verification_code"]
    assert re.fullmatch(r"[A-Z2-7]{4}-[A-Z2-7]{4}", code), code

    context = chromium.new_context(
        viewport={"width": ROLL_PX, "height": 360},
        extra_http_headers={"Authorization": f"Bearer {KIOSK_TOKEN}"},
    )
    problems: list[str] = []
    try:
        page = context.new_page()
        watch(page, problems)
        answer = page.goto(f"{ticket_daemon.url}/tickets/receipts/{number}")
        assert answer is not None and answer.status == 200
        expect(page.locator("#receipt-no")).to_have_text(number)
        expect(page.locator("#card")).to_have_text(masked(player.card))
        expect(page.locator("#tickets")).to_have_text(f"{COMPLIMENTARY['queen']} tickets")
        expect(page.locator("#code")).to_have_text(code)
        assert player.card not in page.content(), "the full card number is on the receipt"
        # the print styles are applied (not refused by the Content-Security-Policy)
        expect(page.locator("dl")).to_have_css("display", "grid")
        expect(page.locator(".code")).to_have_css("border-top-style", "dashed")
        # nothing is wider than the roll: no sideways scrolling, no cut-off line
        width = page.evaluate(
            "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
        )
        assert width[0] <= width[1] == ROLL_PX, f"the receipt overflows the roll: {width}"
        wider = page.evaluate(
            """() => {
                 const edge = document.documentElement.clientWidth + 0.5;
                 return [...document.body.querySelectorAll('*')]
                   .filter((e) => e.getBoundingClientRect().right > edge)
                   .map((e) => e.id || e.tagName);
               }"""
        )
        assert wider == [], f"elements past the right edge: {wider}"
        snap(page, "receipt-80mm")

        pdf = page.pdf(width="80mm", print_background=True)
        keep(ARTIFACTS / "tickets-receipt-80mm.pdf", pdf)
        pages = re.findall(rb"/Type\s*/Page\b(?!s)", pdf)
        assert len(pages) >= 1, "the receipt printed no page"
        boxes = re.findall(rb"/MediaBox\s*\[\s*0\s+0\s+([\d.]+)\s+([\d.]+)\s*\]", pdf)
        assert boxes, "no page size in the PDF"
        for w, _h in boxes:
            assert abs(float(w) * MM_PER_PT - 80) < 0.5, f"a page is {float(w) * MM_PER_PT} mm wide"
        # one column: in print the body is the roll's printable width, one block under another
        page.emulate_media(media="print")
        body = page.evaluate("() => document.body.getBoundingClientRect().width")
        assert body <= ROLL_PX, body
        tops = page.evaluate(
            "() => ['h1', '#tickets', 'dl', '#draws', '.code']"
            ".map((s) => document.querySelector(s).getBoundingClientRect().top)"
        )
        assert tops == sorted(tops), f"the receipt is not one column: {tops}"
        assert not problems, problems
    finally:
        context.close()


def test_the_handheld_shows_the_entries_per_tier_live(
    chromium: Browser,  # noqa: F811  (the fixture imported above)
    ticket_daemon: Daemon,
    _keep_shots: None,
) -> None:
    players = eligible_players(ticket_daemon)
    phone = chromium.new_context(
        viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True,
        has_touch=True,
    )  # fmt: skip
    problems: list[str] = []
    try:
        hh = phone.new_page()
        watch(hh, problems)
        sign_in(hh, ticket_daemon.url, "/handheld", MARKETING, PIN)
        expect(hh.locator(f'.session-item[data-session="{REHEARSAL}"]')).to_be_visible()

        # the ticket tab: the open draw is selected, its bin still empty
        hh.click("#tab-tickets")
        expect(hh.locator("#tab-tickets")).to_have_attribute("aria-pressed", "true")
        expect(hh.locator("#choose")).to_be_hidden()
        draws = hh.locator("#tk-draws .tk-draw")
        expect(draws).to_have_count(4)
        expect(draws.nth(0)).to_have_attribute("data-draw", OPEN_DRAW)  # soonest first
        expect(draws.nth(3)).to_have_attribute("data-draw", PAST_DRAW)  # past: last
        selected = hh.locator(f'.tk-draw[data-draw="{OPEN_DRAW}"]')
        expect(selected).to_have_attribute("aria-pressed", "true")
        expect(selected).to_contain_text("ENTRY OPEN")
        expect(hh.locator(f'.tk-draw[data-draw="{LATER_DRAW}"]')).to_contain_text("NOT OPEN YET")
        expect(hh.locator(f'.tk-draw[data-draw="{PAST_DRAW}"]')).to_contain_text("ENTRY CLOSED")
        expect(hh.locator("#tk-title")).to_have_text("Cash draw 1")
        expect(hh.locator("#tk-window")).to_have_text(re.compile(r"^ENTRY OPEN\s*closes "))
        expect(hh.locator("#tk-shared")).to_contain_text("Same tickets as Cash draw 2")
        expect(hh.locator("#tk-players")).to_have_text("0")
        expect(hh.locator("#tk-tickets")).to_have_text("0")
        for group in GROUPS:
            row = hh.locator(f'#tk-tier-rows tr[data-group="{group}"]')
            expect(row.locator(".players")).to_have_text("0")
            expect(row.locator(".tickets")).to_have_text("0")
        expect(hh.locator("#tk-updated")).to_have_text(re.compile(r"^Updated \d\d:\d\d:\d\d"))
        snap(hh, "handheld-empty")

        # kiosks enter two players of every tier, into either draw of the bin
        entered = [p for tier in COMPLIMENTARY for p in players[tier][:2]]
        with kiosk(ticket_daemon) as client:
            for i, p in enumerate(entered):
                enter(client, p, OPEN_DRAW if i % 2 else SHARED_DRAW)
        want = {
            g: (2 * len(tiers), sum(2 * COMPLIMENTARY[t] for t in tiers))
            for g, tiers in GROUPS.items()
        }
        for group, (n, tickets) in want.items():
            row = hh.locator(f'#tk-tier-rows tr[data-group="{group}"]')
            expect(row.locator(".players")).to_have_text(str(n), timeout=10_000)
            expect(row.locator(".tickets")).to_have_text(str(tickets))
        expect(hh.locator("#tk-players")).to_have_text(str(len(entered)))
        expect(hh.locator("#tk-tickets")).to_have_text(str(2 * sum(COMPLIMENTARY.values())))
        expect(hh.locator('tr[data-group="ten-jack"] th small')).to_have_text("Ten 2 · Jack 2")
        snap(hh, "handheld-entries")

        # the other draw of the bin shows the same tickets; a later draw its own, empty bin
        hh.click(f'.tk-draw[data-draw="{SHARED_DRAW}"]')
        expect(hh.locator("#tk-title")).to_have_text("Cash draw 2 · vault share")
        expect(hh.locator("#tk-tickets")).to_have_text(str(2 * sum(COMPLIMENTARY.values())))
        hh.click(f'.tk-draw[data-draw="{LATER_DRAW}"]')
        expect(hh.locator("#tk-title")).to_have_text("Car draw")
        expect(hh.locator("#tk-window")).to_have_text(re.compile(r"^NOT OPEN YET\s*opens "))
        expect(hh.locator("#tk-players")).to_have_text("0")
        expect(hh.locator("#tk-title")).to_be_in_viewport()  # the tap shows its draw's bin
        snap(hh, "handheld-later-draw", full_page=False)

        # one more entry while the view is shown: it follows without a tap
        hh.click(f'.tk-draw[data-draw="{OPEN_DRAW}"]')
        expect(hh.locator("#tk-players")).to_have_text(str(len(entered)))
        late = next(p for tier in COMPLIMENTARY for p in players[tier][2:])
        with kiosk(ticket_daemon) as client:
            enter(client, late)
        expect(hh.locator("#tk-players")).to_have_text(str(len(entered) + 1), timeout=10_000)

        # the session controls are one tap away and work as before
        hh.click("#tab-sessions")
        expect(hh.locator("#tickets")).to_be_hidden()
        hh.click(f'.session-item[data-session="{REHEARSAL}"]')
        expect(hh.locator("#mode-banner")).to_contain_text("REHEARSAL")
        hh.click("#open-rehearsal-btn")
        expect(hh.locator("#draw-box")).to_be_visible()
        hh.click("#draw-slots")
        expect(hh.locator('.winner[data-pick="1"]')).to_be_visible()
        # on the ticket tab, the session tab says a winner is waiting
        hh.click("#tab-tickets")
        expect(hh.locator("#mode-banner")).to_be_hidden()
        expect(hh.locator("#tab-pending")).to_have_text("1")
        expect(hh.locator("#tk-players")).to_have_text(str(len(entered) + 1))
        snap(hh, "handheld-pending-badge", full_page=False)
        hh.click("#tab-sessions")
        expect(hh.locator("#tab-pending")).to_be_hidden()
        hh.locator('.winner[data-pick="1"] [data-action="verify"]').click()
        expect(hh.locator('.winner.verified[data-pick="1"]')).to_be_visible()

        shown = hh.content()
        for p in entered:
            assert p.card not in shown, "a full card number is on the handheld"
        assert not problems, problems
    finally:
        phone.close()

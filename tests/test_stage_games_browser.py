"""The stage games in Chromium, through the host's page (issue 19): a full Saturday
(the 15:00 podiums and bonus boxes, the 19:00 paddles, the 21:00 podiums and digit
safe) and the 20 Dec vault share, with the audience's screen beside it.

The real daemon runs as a process (tests/test_pages_browser.py's fixture and floor) with
four draws of one bin whose entries are open now (the daemon reads the real clock, so
every time is relative to now). The winners are drawn and presented over the API (the
page's draw steps are tests/test_stage_pages_browser.py's); every game is played by
tapping the host page at 1024x768: open, each contestant's choice (whoever's turn the
page shows), the two-tap closes that reveal and pay. At the safe, the first winner
forfeits R2,000 and types three codes on the keypad that the test knows are wrong (it
unseals the draw's seed with the daemon's own key file, as only an insider could); the
others decline. The screen (1920x1080, display token) shows the safe's value and its
stated odds, the reveals as they come, masked cards only, and the seed after a close.
At the end `raps verify` recomputes every game from its draw's seed.
"""

from __future__ import annotations

import sqlite3
import subprocess
import tomllib
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from bench.harness import raps_command
from raps.seal import SeedSealer, load_key
from selector.stagegames.derive import below, game_seed
from tests import test_pages_browser as browser_test
from tests.test_pages_browser import (  # noqa: F401  (chromium, chromium_path, daemon: fixtures)
    TZ,
    Daemon,
    chromium,
    chromium_path,
    daemon,
    sign_in,
)
from tests.test_stage_pages_browser import (
    HOST,
    HOST_PW,
    HOST_TOKEN,
    KIOSK_TOKEN,
    SCREEN_TOKEN,
    _stage_toml,
    eligible_players,
    no_full_cards,
    snap,
    watch,
)
from tests.test_stage_pages_browser import _keep_shots as _keep_shots  # the fixture

D15, D19, D21, D2130 = "games-1500", "games-1900", "games-2100", "games-2130"
WINNERS = {D15: 6, D19: 5, D21: 5, D2130: 5}
STEP = 5000  # ms for a page to show what a tap did


def _local(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%d %H:%M:%S")


def _games_toml() -> str:
    now = datetime.now(TZ).replace(microsecond=0)
    h = timedelta(hours=1)
    draws = "".join(
        f'[[ticket_draws]]\nid = "{d}"\nprogram = "games"\nname = "{d}"\nbin = "games-bin"\n'
        f'at = "{_local(now + (2 + i) * h)}"\nopens = "{_local(now - h)}"\n'
        f'closes = "{_local(now + h)}"\nwinners = {n}\n'
        for i, (d, n) in enumerate(WINNERS.items())
    )
    return f"""
[[ticket_programs]]
id = "games"
promotion = "raps-test"
name = "Turn up the heat (test)"
complimentary = {{ ten = 10, jack = 20, queen = 30, king = 40, ace = 50 }}
[ticket_programs.period]
kind = "fixed_start_to_draw"
start = "{_local(now - 48 * h)}"
[ticket_programs.stage]
win_limit = "per_day"
{draws}
[[stage.games]]
id = "bonus"
draws = ["{D15}"]
kind = "podium+bonus"
podiums = [{{ amount = 500000 }}, {{ amount = 400000 }}, {{ amount = 300000 }},
           {{ amount = 200000 }}, {{ kind = "bonus" }}, {{ kind = "bonus" }}]
[[stage.games]]
id = "paddles"
draws = ["{D19}"]
kind = "paddles"
paddles = [2, 2, 3, 3, 4]
reveals = [{", ".join(str(100_000 * (1 + i % 7)) for i in range(25))}]
[[stage.games]]
id = "safe"
draws = ["{D21}"]
kind = "podium+safe"
podiums = [{{ amount = 1000000 }}, {{ amount = 800000 }}, {{ amount = 700000 }},
           {{ amount = 600000 }}, {{ amount = 500000 }}]
[stage.games.safe_odds]
mode = "code"
digits = 3
tries = 3
[[stage.games]]
id = "vault"
draws = ["{D2130}"]
kind = "vault_share"
"""


@pytest.fixture
def games_daemon(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Daemon]:
    """The page tests' daemon with the stage's users and the Saturday's four draws."""

    def with_games(text: str) -> str:
        promotion = tomllib.loads(text)["promotions"][0]["id"]
        return text + _stage_toml(promotion) + _games_toml()

    yield browser_test.daemon_with_config(request, monkeypatch, with_games)


class Api:
    """The draws' steps the page test does not tap: entries, draws, presentations."""

    def __init__(self, d: Daemon) -> None:
        self.d = d
        self.host = httpx.Client(base_url=d.url, headers={"Authorization": f"Bearer {HOST_TOKEN}"},
                                 timeout=30)  # fmt: skip
        self.receipts: dict[str, str] = {}

    def enter(self, n: int) -> set[str]:
        players = [p for ps in eligible_players(self.d).values() for p in ps][:n]
        kiosk = {"Authorization": f"Bearer {KIOSK_TOKEN}"}
        with httpx.Client(base_url=self.d.url, headers=kiosk, timeout=30) as c:
            for p in players:
                body = {"request_id": uuid.uuid4().hex, "card": p.card, "draw": D15}
                r = c.post("/api/tickets/kiosk/entries", json=body)
                assert r.status_code == 200, r.text
                self.receipts[p.card] = r.json()["receipt_no"]
        return {p.card for p in players}

    def post(self, draw: str, path: str, **body: Any) -> dict[str, Any]:
        r = self.host.post(f"/api/stage/draws/{draw}/{path}",
                           json={"command_id": uuid.uuid4().hex, **body})  # fmt: skip
        assert r.status_code == 200, f"{path}: {r.status_code} {r.text}"
        got: dict[str, Any] = r.json()
        return got

    def winners(self, draw: str) -> None:
        self.post(draw, "open")
        for _ in range(WINNERS[draw]):
            p = self.post(draw, "draw")["picks"][-1]
            self.post(draw, f"picks/{p['number']}/present", presenter="winner", document="sa_id",
                      last_digits="1234", receipt=self.receipts[p["card"]])  # fmt: skip

    def safe_code(self, position: int) -> str:
        """The code of the safe's contestant at `position`: unsealed with the key file."""
        db = sqlite3.connect(self.d.folder / "raps.db")
        try:
            nonce, ciphertext = db.execute(
                "SELECT nonce, ciphertext FROM sealed_seeds WHERE session_id = ?", (f"draw:{D21}",)
            ).fetchone()
        finally:
            db.close()
        seed = SeedSealer(load_key(self.d.folder / "seed.key")).unseal(f"draw:{D21}", nonce,
                                                                       ciphertext)  # fmt: skip
        stream = f"stage:safe:{D21}"
        return f"{below(game_seed(seed, stream), stream, f'safe-code|{position}', 1000):03d}"


def shown_version(page: Page) -> int:
    return int(page.evaluate("() => Number(document.body.dataset.version || 0)"))


def tap(page: Page, target: Locator | str, confirm: bool = False) -> None:
    """Tap and wait until the page shows the answer (its view's version moved on); a
    confirmation tap for what cannot be undone (the first arms the button)."""
    b = page.locator(target).first if isinstance(target, str) else target
    before = shown_version(page)
    expect(b).to_be_enabled(timeout=STEP)
    b.click()
    if confirm:
        expect(b).to_contain_text("Tap again", timeout=STEP)
        b.click()
    page.wait_for_function(f"() => Number(document.body.dataset.version) > {before}",
                           timeout=STEP)  # fmt: skip


def game(page: Page, mechanic: str) -> Locator:
    return page.locator(f'.g-game[data-mechanic="{mechanic}"]')


def enter_draw(page: Page, draw: str) -> None:
    if page.locator("#draw").is_visible():
        page.click("#back")
    item = page.locator(f'.draw-item[data-draw="{draw}"]')
    expect(item).to_be_visible(timeout=STEP)
    item.click()
    expect(page.locator("#d-name")).to_have_text(draw, timeout=STEP)
    expect(page.locator("#game h2")).to_contain_text("Stage game", timeout=STEP)


def play_podium(page: Page) -> None:
    tap(page, '[data-action="open-podium"]')
    pod = game(page, "podium")
    while pod.locator(".g-turn").count():
        tap(page, pod.locator("button.g-cell:not([disabled])").last)
    tap(page, '[data-action="close-podium"]', confirm=True)
    expect(game(page, "podium")).to_have_attribute("data-state", "closed")


def test_a_saturday_and_the_vault_share_through_the_host_page(
    chromium: Browser,  # noqa: F811  (the fixture imported above)
    games_daemon: Daemon,
    _keep_shots: None,
) -> None:
    api = Api(games_daemon)
    cards = api.enter(26)
    tablet = chromium.new_context(viewport={"width": 1024, "height": 768})
    wall = chromium.new_context(viewport={"width": 1920, "height": 1080})
    problems: list[str] = []
    texts: list[str] = []
    try:
        page = tablet.new_page()
        watch(page, problems)
        sign_in(page, games_daemon.url, "/stage", HOST, HOST_PW)
        screen = wall.new_page()
        watch(screen, problems)

        # 15:00: six podiums, two unlock the boxes; both play, the first to three wins
        api.winners(D15)
        page.reload()
        enter_draw(page, D15)
        play_podium(page)
        tap(page, '[data-action="open-bonus"]')
        bonus = game(page, "bonus")
        for _ in range(2):
            tap(page, bonus.locator('[data-action="plays"]').first)
        box = 0
        while bonus.get_attribute("data-state") == "open":
            box += 1
            tap(page, bonus.locator(f'button.g-cell[data-box="{box}"]'))
            expect(bonus.locator(f'div.g-cell[data-box="{box}"]')).to_be_visible()
        snap(page, "games-bonus")
        tap(page, '[data-action="close-bonus"]', confirm=True)
        expect(game(page, "bonus")).to_have_attribute("data-state", "closed")
        expect(page.locator(".g-next")).to_contain_text("close the draw")
        api.post(D15, "close")

        # 19:00: paddles; each winner opens reveals until they keep one or run out
        api.winners(D19)
        enter_draw(page, D19)
        tap(page, '[data-action="open-paddles"]')
        paddles = game(page, "paddles")
        reveal = 0
        while paddles.get_attribute("data-state") == "open":
            paddle = paddles.locator("button.g-cell[data-paddle]:not([disabled])")
            if paddle.count():
                tap(page, paddle.first)
                continue
            reveal += 1
            tap(page, paddles.locator(f'button.g-cell[data-reveal="{reveal}"]'))
            stop = paddles.locator('[data-action="stop"]')
            if reveal % 2 and stop.count() and stop.is_enabled():
                tap(page, stop, confirm=True)  # happy with it (rule 115)
        tap(page, '[data-action="close-paddles"]', confirm=True)
        expect(game(page, "paddles")).to_have_attribute("data-state", "closed")
        api.post(D19, "close")

        # 21:00: the podiums, then the safe with its value and odds on the screen
        api.winners(D21)
        screen.goto(f"{games_daemon.url}/stage/screen#draw={D21}&token={SCREEN_TOKEN}")
        enter_draw(page, D21)
        play_podium(page)
        tap(page, '[data-action="open-safe"]')
        expect(page.locator(".g-safe-value").first).to_have_text("R100,000.00")
        expect(screen.locator(".sg-safe-value")).to_have_text("R100,000")
        expect(screen.locator(".sg-odds")).to_contain_text("3 in 1,000 per attempt")
        code = api.safe_code(1)
        tap(page, '[data-action="attempt"]', confirm=True)
        for guess in [f"{c:03d}" for c in range(1000) if f"{c:03d}" != code][:3]:
            for digit in guess:
                page.locator(f'.g-keypad button[data-key="{digit}"]').click()
            expect(page.locator("#safe-code")).to_have_value(guess)
            tap(page, '[data-action="guess"]')
            expect(screen.locator(".sg-chosen").first).to_contain_text(guess)
        snap(screen, "games-screen-safe", full_page=False)
        snap(page, "games-safe")
        for _ in range(4):
            tap(page, '[data-action="decline"]')
        tap(page, '[data-action="close-safe"]', confirm=True)
        expect(game(page, "safe")).to_have_attribute("data-state", "closed")
        expect(screen.locator(".sg-safe-value")).to_have_text("R120,000")
        expect(screen.locator(".sg-proof").first).to_contain_text("Seed")
        texts.append(screen.locator("body").inner_text())
        api.post(D21, "close")

        # 20 Dec 21:30: the vault shared among the draw's five winners
        api.winners(D2130)
        enter_draw(page, D2130)
        tap(page, '[data-action="share"]', confirm=True)
        expect(page.locator(".g-vault li")).to_have_count(5)
        expect(page.locator(".g-vault")).to_contain_text("R24,000.00")
        snap(page, "games-vault")
        api.post(D2130, "close")
        assert not problems, problems
    finally:
        tablet.close()
        wall.close()
        api.host.close()
    no_full_cards(texts, cards, "stage screen")
    db = f"sqlite:///{games_daemon.folder / 'raps.db'}"
    out = subprocess.run([*raps_command(), "verify", db], capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert out.returncode in (0, 3), out.stdout + out.stderr
    for line in (f"stage game stage:bonus:{D15}: OK", f"stage game stage:paddles:{D19}: OK",
                 f"stage game stage:safe:{D21}: OK", "stage prizes: OK"):  # fmt: skip
        assert line in out.stdout, out.stdout

# ruff: noqa: F811  (the fixtures floor, pages, chromium come from another module)
"""Issue 18, the rest, in Chromium on the real daemon: the dispatch history's resolution
time and who resolved, dispatch on a phone and a tablet, map labels read across a room,
the handheld's promotion name and hashes behind a disclosure, a reload while offline
(the service worker), the PA line, sound and vibration cues with a mute switch, the
end-of-session report (CSV checked against the journal export, printable) and the
identity check at verification (never on the wall).

The daemon, the relay-free floor and the page fixtures are test_handheld_dispatch_browser's.
Every wait is for a condition with a timeout that is the spec; no sleeps.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

import httpx
from playwright.sync_api import Page, expect

from tests.test_handheld_dispatch_browser import (  # noqa: F401  (fixtures)
    PHONE,
    TABLET,
    WALL,
    Floor,
    chromium,
    chromium_path,
    enter,
    floor,
    pages,
    shot,
    winner,
)
from tests.test_pages_browser import (
    AUDIT_TOKEN,
    MARKETING,
    PIN,
    REHEARSAL,
    REHEARSAL_CLAIM,
    SECURITY,
    SECURITY_PW,
    sign_in,
)

PROMOTION = "Bonus jackpot session (test)"  # the config's [[promotions]] name
RITA = "rita (marketing)"  # the runner's token: who acted, as the journal names it


def journal(floor: Floor, sid: str) -> list[dict[str, Any]]:
    """The session's records from the journal export (the auditor's token)."""
    r = httpx.get(f"{floor.url}/api/sessions/{sid}/export",
                  headers={"Authorization": f"Bearer {AUDIT_TOKEN}"}, timeout=10)  # fmt: skip
    assert r.status_code == 200, r.text
    lines = [json.loads(x) for x in r.text.splitlines()[1:]]
    return [e["record"] for e in lines if e["record"]["session_id"] == sid]


def as_bearer(floor: Floor, token: str, path: str) -> httpx.Response:
    return httpx.get(f"{floor.url}{path}", headers={"Authorization": f"Bearer {token}"}, timeout=10)


def cmd(floor: Floor, sid: str, path: str, cid: str, **body: Any) -> Any:
    return floor.api("POST", f"/api/sessions/{sid}/{path}", {"command_id": cid, **body})


# ------------------------------------------------------- 9. who resolved, when


def test_dispatch_history_shows_resolution_time_and_who_resolved(
    floor: Floor, pages: Callable[..., Page]
) -> None:
    floor.open_and_draw("W1", 3, 0)
    cmd(floor, "W1", "picks/1/verify", "v1")
    cmd(floor, "W1", "picks/2/no-show", "n2")
    cmd(floor, "W1", "picks/3/void", "x3", reason="Card played by someone else")
    wall = pages(**WALL)
    sign_in(wall, floor.url, "/dispatch", SECURITY, SECURITY_PW)
    rows = wall.locator("#history tr")
    expect(rows).to_have_count(3)
    expect(wall.locator("thead th")).to_have_text(
        ["#", "Pool", "Where", "Winner", "Outcome", "Drawn", "Resolved", "By"]
    )
    records = journal(floor, "W1")
    resolutions = {r["data"]["pick"]: r for r in records
                   if r["type"] in ("pick.verified", "pick.no_show", "pick.voided")}  # fmt: skip
    tz = wall.evaluate("RAPS.me.site.timezone")
    for pick in (1, 2, 3):
        rec = resolutions[pick]
        row = wall.locator(f'#history tr[data-pick="{pick}"]')
        at = wall.evaluate(
            "([iso, tz]) => new Date(iso)"
            ".toLocaleTimeString('en-GB', {timeZone: tz, hour12: false})",
            [rec["at"], tz],
        )
        expect(row.locator(".h-resolved")).to_have_text(at)
        who = f"{rec['actor']['user']} ({rec['actor']['role']})"
        assert who == RITA
        expect(row.locator(".h-by")).to_have_text(who)


def test_the_claim_timer_is_named_as_the_resolver(floor: Floor, pages: Callable[..., Page]) -> None:
    wall = pages(**WALL)
    sign_in(wall, floor.url, "/dispatch", SECURITY, SECURITY_PW)
    floor.open_and_draw(REHEARSAL, 0, 1)
    row = wall.locator('#history tr[data-pick="1"][data-state="no_show"]')
    expect(row).to_be_visible(timeout=(REHEARSAL_CLAIM + 5) * 1000)
    expect(row.locator(".h-by")).to_have_text("claim timer")
    timer = [r for r in journal(floor, REHEARSAL) if r["type"] == "pick.no_show"]
    assert timer[0]["actor"] == {"user": "system", "role": "timer"}


# --------------------------------------------- 10. phone, tablet, map labels


def test_dispatch_is_usable_on_a_phone_and_a_tablet(
    floor: Floor, pages: Callable[..., Page]
) -> None:
    floor.open_and_draw("W1", 2, 1)
    floor.open_and_draw("W2", 2, 0)
    for name, kw in (("dispatch-390x844", PHONE), ("dispatch-820x1180", TABLET)):
        width = kw["viewport"]["width"]  # type: ignore[index]
        page = pages(**kw)
        sign_in(page, floor.url, "/dispatch", SECURITY, SECURITY_PW)
        cards = page.locator(".d-card")
        expect(cards).to_have_count(5)
        expect(page.locator("#d-conn")).to_have_text("LIVE")
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        for sel in ("#d-clock", "#d-conn"):
            box = page.locator(sel).bounding_box()
            assert box and box["x"] >= 0 and box["x"] + box["width"] <= width, (sel, box)
        for i in range(5):
            c = cards.nth(i)
            c.scroll_into_view_if_needed()
            box = c.bounding_box()
            assert box and box["x"] >= 0 and box["x"] + box["width"] <= width + 0.5, (i, box)
            px = c.locator(".d-spot").evaluate("e => parseFloat(getComputedStyle(e).fontSize)")
            assert float(px) >= 24, px
        expect(page.locator("#more")).to_be_hidden()
        svg = page.locator("#map svg")
        svg.scroll_into_view_if_needed()
        box = svg.bounding_box()
        assert box and box["width"] >= width * 0.8 and box["height"] >= 250, box
        page.evaluate("window.scrollTo(0, 0)")
        shot(page, name, doc=True)


LABELS = """() => {
  const svg = document.querySelector('#map svg');
  const k = svg.getScreenCTM().a;
  const out = { small: [], shown: 0, overlaps: [], marks: 0 };
  const shown = (t) => !t.classList.contains('no-room')
    && getComputedStyle(t).display !== 'none';
  const all = '.area-label, .table-label, .bank-labels text, .mark-label';
  for (const t of svg.querySelectorAll(all)) {
    if (!shown(t)) continue;
    out.shown += 1;
    const px = parseFloat(getComputedStyle(t).fontSize) * k;
    if (px < 16) out.small.push([t.getAttribute('class'), t.textContent, px]);
  }
  const names = [...svg.querySelectorAll('.area-label')].filter(shown)
    .map((t) => [t.textContent, t.getBBox()]);
  for (const g of svg.querySelectorAll('.mark')) {
    out.marks += 1;
    const ring = g.querySelector('.ring');
    const badge = g.querySelector('.mark-badge');
    const at = (c, k) => +c.getAttribute(k);
    const circles = [[at(ring, 'cx'), at(ring, 'cy'), at(ring, 'r') * 1.6],
                     [at(badge, 'cx'), at(badge, 'cy'), at(badge, 'r')]];
    for (const [cx, cy, r] of circles) {
      for (const [name, b] of names) {
        const dx = Math.max(b.x - cx, 0, cx - (b.x + b.width));
        const dy = Math.max(b.y - cy, 0, cy - (b.y + b.height));
        if (Math.hypot(dx, dy) < r) out.overlaps.push([g.dataset.pick, name]);
      }
    }
  }
  return out;
}"""


def test_map_labels_are_readable_across_a_room_and_rings_clear_the_area_names(
    floor: Floor, pages: Callable[..., Page]
) -> None:
    wall = pages(**WALL)
    sign_in(wall, floor.url, "/dispatch", SECURITY, SECURITY_PW)
    floor.open_and_draw("W1", 3, 1)
    floor.open_and_draw("W2", 3, 1)
    expect(wall.locator(".mark")).to_have_count(8)
    got = wall.evaluate(LABELS)
    assert got["marks"] == 8 and got["shown"] >= 8, got
    assert got["small"] == [], got["small"]  # every label shown is >= 16 px at 1920
    assert got["overlaps"] == [], got["overlaps"]  # no ring (at its largest) on a name
    areas = wall.locator("#map .area-label:not(.no-room)")
    assert areas.count() >= 1
    # ten winners: the map narrows (three columns of cards), the rules still hold
    floor.open_and_draw("W3", 2, 0)
    expect(wall.locator(".mark")).to_have_count(10)
    got = wall.evaluate(LABELS)
    assert got["small"] == [] and got["overlaps"] == [], got


# ------------------------------------- 11. the promotion's name, hashes away


def test_the_handheld_header_names_the_promotion_and_keeps_hashes_for_the_audit(
    floor: Floor, pages: Callable[..., Page]
) -> None:
    hh = pages(**PHONE)
    sign_in(hh, floor.url, "/handheld", MARKETING, PIN)
    expect(hh.locator('.session-item[data-session="W1"] .s-id')).to_have_text(PROMOTION)
    enter(hh, "W1")
    expect(hh.locator("#sess-title")).to_have_text(PROMOTION)
    head = hh.locator(".sess-head").inner_text()
    assert "raps-test" not in head, head  # the promotion's id is not shown
    hh.click("#open-rehearsal-btn")
    expect(hh.locator("#draw-box")).to_be_visible()
    commitment = floor.session("W1")["commitment"]
    expect(hh.locator("#commitment")).to_have_text(commitment)  # there, but folded away
    expect(hh.locator("#commitment")).to_be_hidden()
    expect(hh.locator("#journal-head")).to_be_hidden()
    hh.locator("#proof-details summary").click()
    expect(hh.locator("#commitment")).to_be_visible()
    # the audit page shows it for every session
    audit = pages(viewport={"width": 1280, "height": 900})
    sign_in(audit, floor.url, "/audit", "ivy", "not-used-here")
    expect(audit.locator("#content")).to_contain_text(commitment)


# -------------------------------------------------- 12. a reload while offline


CACHED_PICKS = """async (path) => {
  const c = await caches.open('raps-shell-v1');
  const r = await c.match(location.origin + path);
  return r ? (await r.json()).picks.length : -1;
}"""


KEPT = """async () => {
  const out = [];
  for (const name of await caches.keys()) {
    for (const r of await (await caches.open(name)).keys()) out.push(r.url);
  }
  return out;
}"""


def test_the_pa_line_and_the_identity_check_at_verification(
    floor: Floor, pages: Callable[..., Page]
) -> None:
    wall = pages(**WALL)
    sign_in(wall, floor.url, "/dispatch", SECURITY, SECURITY_PW)
    hh = pages(**PHONE)
    sign_in(hh, floor.url, "/handheld", MARKETING, PIN)
    enter(hh, "W2")
    hh.click("#open-rehearsal-btn")
    hh.click("#draw-slots")
    hh.click("#draw-tables")
    expect(winner(hh, 2)).to_be_visible()
    drawn = {
        r["data"]["pick"]: r["data"] for r in journal(floor, "W2") if r["type"] == "pick.drawn"
    }
    view = {p["pick"]: p for p in floor.session("W2")["picks"]}
    for n, spot in ((1, "Bank {bank}, Machine {number}"), (2, "Table {table}, Seat {seat}")):
        loc = drawn[n]["location"]
        where = f"{loc['area']}, " + spot.format(**loc)
        pa = winner(hh, n).locator(".w-pa-text")
        expect(pa).to_have_text(
            f"Attention please: {view[n]['display_name']}, you are a {PROMOTION} winner! "
            f"Please go to {where} with your player card and ID within 900 seconds."
        )
    # the ID check: the directory's full name, as journaled with the pick
    full = drawn[1]["display_name"]  # the simulated directory's names are "Johan F."
    check = winner(hh, 1).locator(".id-check")
    check.click()
    expect(winner(hh, 1).locator(".w-id-name")).to_have_text(f"Full name{full}")
    expect(winner(hh, 1).locator(".w-id-out")).to_contain_text("the directory does not provide one")
    shot(hh, "issue18-id-check-handheld")
    winner(hh, 1).locator('[data-action="verify"]').click()
    expect(hh.locator('.winner.verified[data-pick="1"]')).to_be_visible()
    # never on the wall, and never for a role that does not verify
    expect(wall.locator(".d-card")).to_have_count(1)
    assert wall.locator(".w-id, .w-id-name").count() == 0
    assert "Full name" not in wall.content()
    path = "/api/sessions/W2/picks/2/identity"
    assert as_bearer(floor, AUDIT_TOKEN, path).status_code == 403
    wall_api = wall.evaluate(f"fetch('{path}').then(r => r.status)")
    assert wall_api == 403
    assert (
        as_bearer(floor, "runner-token-0123456789", path).json()["full_name"]
        == drawn[2]["display_name"]
    )
    # once the pick is resolved there is no ID check to make
    assert as_bearer(floor, "runner-token-0123456789", "/api/sessions/W2/picks/1/identity"
                     ).status_code == 200  # fmt: skip
    cmd(floor, "W2", "picks/2/no-show", "n2")
    assert as_bearer(floor, "runner-token-0123456789", path).status_code == 409


# ------------------------------------------------- Add: sound and vibration


CUE_SPY = """
window.__tones = 0; window.__vibes = [];
navigator.vibrate = (p) => { window.__vibes.push(p); return true; };
const start = OscillatorNode.prototype.start;
OscillatorNode.prototype.start = function (...a) {
  window.__tones += 1;
  return start.apply(this, a);
};
"""


def test_sound_and_vibration_cues_with_a_remembered_mute_switch(
    floor: Floor, pages: Callable[..., Page]
) -> None:
    hh = pages(**PHONE)
    hh.add_init_script(CUE_SPY)
    sign_in(hh, floor.url, "/handheld", MARKETING, PIN)
    enter(hh, REHEARSAL)
    expect(hh.locator("#mute")).to_have_attribute("aria-pressed", "false")
    hh.click("#open-rehearsal-btn")
    hh.click("#draw-tables")
    expect(winner(hh, 1)).to_be_visible()
    cues = "HHCues.log.map(c => c.cue)"
    hh.wait_for_function(f"() => {cues}.includes('winner')")
    # the warning at a third of this 8 s claim (30 s for a 90 s one), then the no-show
    hh.wait_for_function(f"() => {cues}.includes('warn')", timeout=(REHEARSAL_CLAIM + 2) * 1000)
    hh.wait_for_function(f"() => {cues}.includes('no_show')", timeout=(REHEARSAL_CLAIM + 4) * 1000)
    log = hh.evaluate("HHCues.log")
    assert [c["cue"] for c in log] == ["winner", "warn", "no_show"], log
    assert all(c["sound"] and c["vibrate"] for c in log), log  # Web Audio tones, vibration
    tones = hh.evaluate("window.__tones")
    assert tones == 2 + 3 + 2, tones  # each cue's own tones, synthesised on the page
    vibes = hh.evaluate("window.__vibes.length")

    hh.click("#mute")
    expect(hh.locator("#mute")).to_have_attribute("aria-pressed", "true")
    hh.reload()  # remembered on the device
    expect(hh.locator("#mute")).to_have_attribute("aria-pressed", "true")
    expect(hh.locator("#mute")).to_have_text("Muted")
    hh.click("#draw-tables")  # the redraw: a new winner, then a no-show, silently
    expect(winner(hh, 2)).to_be_visible()
    hh.wait_for_function(f"() => {cues}.includes('no_show')", timeout=(REHEARSAL_CLAIM + 4) * 1000)
    log = hh.evaluate("HHCues.log")
    assert log and all(c["muted"] and not c["sound"] and not c["vibrate"] for c in log), log
    assert hh.evaluate("window.__tones") == 0  # a reload: the count starts again
    assert hh.evaluate("window.__vibes.length") == 0, vibes


# --------------------------------------------- Add: the end-of-session report


def test_the_end_of_session_report_matches_the_journal(
    floor: Floor, pages: Callable[..., Page]
) -> None:
    floor.open_and_draw("W4", 3, 1)
    cmd(floor, "W4", "picks/1/verify", "v1")
    cmd(floor, "W4", "picks/1/award", "a1", amount=150000, kind="plus_play", envelope="E-17")
    cmd(floor, "W4", "picks/2/no-show", "n2")
    cmd(floor, "W4", "picks/3/void", "x3", reason="=HYPERLINK(1)")
    cmd(floor, "W4", "close", "c", force=True)
    records = journal(floor, "W4")

    page = pages(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    sign_in(page, floor.url, "/report", MARKETING, PIN)
    page.select_option("#r-session", "W4")
    expect(page.locator("#r-title")).to_have_text(f"{PROMOTION} · session W4")
    expect(page.locator("#r-rows tr")).to_have_count(4)
    expect(page.locator("#r-totals")).to_have_text("4 picks · prizes awarded: R1,500.00 +Play")
    with page.expect_download() as dl:
        page.click("#r-csv")
    assert dl.value.suggested_filename == "W4-report.csv"
    with open(dl.value.path(), encoding="utf-8", newline="") as f:
        text = f.read()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 4

    def same(a: str, b: str) -> bool:
        return datetime.fromisoformat(a) == datetime.fromisoformat(b)

    drawn = {r["data"]["pick"]: r for r in records if r["type"] == "pick.drawn"}
    first = {}
    last = {}
    for r in records:
        if r["type"] in ("pick.verified", "pick.no_show", "pick.voided", "pick.awarded"):
            n = r["data"]["pick"]
            if r["type"] != "pick.awarded":
                first.setdefault(n, r)
            last[n] = r
    outcome = {"pick.awarded": "awarded", "pick.no_show": "no_show", "pick.voided": "void"}
    who = lambda r: f"{r['actor']['user']} ({r['actor']['role']})"  # noqa: E731
    for row in rows:
        n = int(row["pick"])
        d = drawn[n]
        assert row["pool"] == d["data"]["kind"] and int(row["slot"]) == d["data"]["slot"]
        assert row["card"] == "*" * (len(d["data"]["card"]) - 4) + d["data"]["card"][-4:]
        assert d["data"]["card"] not in text  # never a full card number
        assert same(row["drawn_at"], d["at"]) and row["drawn_by"] == who(d) == RITA
        assert same(row["deadline"], d["data"]["deadline"])
        assert same(row["resolved_at"], first[n]["at"]) and row["resolved_by"] == who(first[n])
        assert row["outcome"] == outcome[last[n]["type"]]
        assert same(row["outcome_at"], last[n]["at"]) and row["outcome_by"] == who(last[n])
    by = {int(r["pick"]): r for r in rows}
    assert (by[1]["prize_amount"], by[1]["prize_kind"], by[1]["envelope"]) == (
        "1500.00",
        "plus_play",
        "E-17",
    )
    assert by[3]["void_reason"] == "'=HYPERLINK(1)"  # a spreadsheet never runs it
    assert by[4]["void_reason"] == "session closed"
    # printable: the page's controls are left off the paper
    page.emulate_media(media="print")
    expect(page.locator(".c-top")).to_be_hidden()
    expect(page.locator(".r-choose")).to_be_hidden()
    expect(page.locator("#r-rows tr")).to_have_count(4)
    assert page.pdf(format="A4")[:4] == b"%PDF"
    page.emulate_media(media="screen")
    shot(page, "issue18-report")
    # marketing, admin and the auditor; not security
    assert as_bearer(floor, AUDIT_TOKEN, "/api/sessions/W4/report.csv").text == text
    wall = pages(**WALL)
    sign_in(wall, floor.url, "/dispatch", SECURITY, SECURITY_PW)
    # once the wall screen is up (an evaluate during its load would race the navigation)
    expect(wall.locator("#d-conn")).to_have_text("LIVE")
    assert wall.evaluate("fetch('/api/sessions/W4/report').then(r => r.status)") == 403

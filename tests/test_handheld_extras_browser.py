# ruff: noqa: F811  (the fixtures floor, pages, chromium come from another module)
"""Issue 18, the rest, in Chromium on the real daemon: the dispatch history's resolution
time and who resolved (two sessions' picks told apart, in pages of whole rows), dispatch
on a phone and a tablet, map labels read across a room (badges lettered by session), the
handheld's promotion name, hashes behind a disclosure and its accessible details, a
reload while offline (the service worker's shell: the last state, the banner and the
queued command), the PA line as the promotion's announce_name says, sound and vibration
cues with a mute switch, the end-of-session report (CSV checked against the journal
export, printable) and the identity check at verification with the directory's photo
(never on the wall).

The daemon, the relay-free floor and the page fixtures are test_handheld_dispatch_browser's.
Every wait is for a condition with a timeout that is the spec; no sleeps.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

import httpx
from playwright.sync_api import Page, expect

from tests.photo_server import photo_server
from tests.test_handheld_dispatch_browser import (  # noqa: F401  (fixtures)
    FULL_PROMOTION,
    PHONE,
    RUNNER_TOKEN,
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
    """Two sessions' resolved picks (the same pick numbers) in one history: each row names
    its session, and past what fits the rows come in pages of whole rows, never clipped."""
    for sid in ("W1", "W2"):
        floor.open_and_draw(sid, 3, 1)
        cmd(floor, sid, "picks/1/verify", f"v1-{sid}")
        cmd(floor, sid, "picks/2/no-show", f"n2-{sid}")
        cmd(floor, sid, "picks/3/void", f"x3-{sid}", reason="Card played by someone else")
        cmd(floor, sid, "picks/4/verify", f"v4-{sid}")
    wall = pages(**WALL)
    sign_in(wall, floor.url, "/dispatch", SECURITY, SECURITY_PW)
    rows = wall.locator("#history tr")
    expect(rows).to_have_count(8)
    expect(wall.locator("thead th")).to_have_text(
        ["#", "Pool", "Where", "Winner", "Outcome", "Drawn", "Resolved", "By"]
    )
    tz = wall.evaluate("RAPS.me.site.timezone")
    letters = {}
    for sid in ("W1", "W2"):
        letters[sid] = wall.locator(f'#d-sessions .d-tag[data-session="{sid}"]').inner_text()[0]
        records = journal(floor, sid)
        resolving = ("pick.verified", "pick.no_show", "pick.voided")
        resolutions = {r["data"]["pick"]: r for r in records if r["type"] in resolving}
        for pick in (1, 2, 3, 4):
            rec = resolutions[pick]
            row = wall.locator(f'#history tr[data-session="{sid}"][data-pick="{pick}"]')
            # the same pick number of two sessions: each row says which session
            expect(row.locator(".h-pick")).to_have_text(f"#{letters[sid]}{pick} · {sid}")
            at = wall.evaluate(
                "([iso, tz]) => new Date(iso)"
                ".toLocaleTimeString('en-GB', {timeZone: tz, hour12: false})",
                [rec["at"], tz],
            )
            expect(row.locator(".h-resolved")).to_have_text(at)
            who = f"{rec['actor']['user']} ({rec['actor']['role']})"
            assert who == RITA
            expect(row.locator(".h-by")).to_have_text(who)
    assert sorted(letters.values()) == ["A", "B"], letters
    # more rows than fit: a page of whole rows at a time, every row on one of the pages
    seen: set[tuple[str, str]] = set()
    pages_seen = 0
    while True:
        visible = wall.evaluate(HISTORY_PAGE)
        assert visible["clipped"] == [], visible
        assert 0 < len(visible["rows"]) < 8, visible
        seen |= {tuple(r) for r in visible["rows"]}
        pages_seen += 1
        if len(seen) == 8 or pages_seen > 8:
            break
        wall.click("#history-next")
    assert len(seen) == 8 and pages_seen >= 2, (seen, pages_seen)
    more = wall.locator("#history-more")
    expect(more).to_have_text(re.compile(r"^\d+-8 of 8$"))  # the last page
    wall.click("#history-next")  # round to the first, the latest resolutions
    expect(more).to_have_text(re.compile(r"^1-\d+ of 8$"))
    # and the pages turn by themselves (every 8 s) on a wall no one touches
    expect(more).not_to_have_text(re.compile(r"^1-"), timeout=10000)


HISTORY_PAGE = """() => {
  const box = document.querySelector('.d-history').getBoundingClientRect();
  const rows = [...document.querySelectorAll('#history tr')].filter((r) => !r.hidden);
  return {
    rows: rows.map((r) => [r.dataset.session, r.dataset.pick]),
    clipped: rows.filter((r) => r.getBoundingClientRect().bottom > box.bottom + 0.5)
      .map((r) => r.dataset.pick),
  };
}"""


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
  const out = { small: [], shown: 0, overlaps: [], marks: 0, stacked: [] };
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
    const { pick, session } = g.dataset; // its ring lies under every badge
    const ring = svg.querySelector(`.ring[data-pick="${pick}"][data-session="${session}"]`);
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
  // no badge on another badge (winners at neighbouring machines, a squeezed map)
  const bs = [...svg.querySelectorAll('.mark-badge')].map((b) => [b.nextElementSibling
    .textContent, +b.getAttribute('cx'), +b.getAttribute('cy'), +b.getAttribute('r')]);
  bs.forEach(([a, x, y, r], i) => bs.slice(i + 1).forEach(([b, x2, y2, r2]) => {
    if (Math.hypot(x - x2, y - y2) < r + r2 - 1e-6) out.stacked.push([a, b]);
  }));
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
    # both sessions have picks 1-4: each badge carries its session's letter
    badges = wall.locator(".mark .mark-label").evaluate_all("ts => ts.map(t => t.textContent)")
    assert sorted(badges) == ["A1", "A2", "A3", "A4", "B1", "B2", "B3", "B4"], badges
    got = wall.evaluate(LABELS)
    assert got["marks"] == 8 and got["shown"] >= 8, got
    assert got["small"] == [], got["small"]  # every label shown is >= 16 px at 1920
    assert got["overlaps"] == [], got["overlaps"]  # no ring (at its largest) on a name
    assert got["stacked"] == [], got["stacked"]  # no badge on another
    areas = wall.locator("#map .area-label:not(.no-room)")
    assert areas.count() >= 1
    # ten winners: the map narrows (three columns of cards), the rules still hold
    floor.open_and_draw("W3", 2, 0)
    expect(wall.locator(".mark")).to_have_count(10)
    got = wall.evaluate(LABELS)
    assert got["small"] == [] and got["overlaps"] == [] and got["stacked"] == [], got


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
    # the name wraps between words on the phone, never inside one ("sessio / n")
    broken = hh.evaluate(WORDS_ON_ONE_LINE, "#sess-title")
    assert broken["lines"] >= 2 and broken["split"] == [], broken
    hh.click("#open-rehearsal-btn")
    expect(hh.locator("#draw-box")).to_be_visible()
    commitment = floor.session("W1")["commitment"]
    expect(hh.locator("#commitment")).to_have_text(commitment)  # there, but folded away
    expect(hh.locator("#commitment")).to_be_hidden()
    expect(hh.locator("#journal-head")).to_be_hidden()
    hh.locator("#proof-details summary").click()
    expect(hh.locator("#commitment")).to_be_visible()

    # a screen reader hears the countdown with its unit: a timer named in seconds
    hh.click("#draw-slots")
    card = winner(hh, 1)
    timer = card.get_by_role("timer")
    expect(timer).to_have_count(1)
    expect(timer).to_have_accessible_name(re.compile(r"^\d+ seconds left to claim$"))
    expect(timer.locator(".w-unit")).to_have_text("s")  # and the eye sees it too
    # the "Other reason" field is labelled, the reasons are a named group
    card.get_by_role("button", name="Void…").click()
    expect(hh.get_by_label("Other reason")).to_have_attribute("id", "void-other-1")
    expect(card.get_by_role("group", name="Why void this pick?")).to_have_count(1)
    # verified: the card's REHEARSAL tag and "ID seen" never overlap, at 390 px
    card.locator('[data-action="verify"]').click()
    verified = hh.locator('.winner.verified[data-pick="1"]')
    expect(verified.locator(".w-state")).to_have_text("✓ ID seen")
    expect(verified.locator(".w-tag")).to_have_text("REHEARSAL")
    tag = verified.locator(".w-tag").bounding_box()
    seen = verified.locator(".w-state").bounding_box()
    card_box = verified.bounding_box()
    assert tag and seen and card_box
    apart = tag["x"] + tag["width"] <= seen["x"] or tag["y"] + tag["height"] <= seen["y"]
    assert apart, (tag, seen)
    assert seen["x"] + seen["width"] <= card_box["x"] + card_box["width"], (seen, card_box)
    # the audit page shows the hashes for every session
    audit = pages(viewport={"width": 1280, "height": 900})
    sign_in(audit, floor.url, "/audit", "ivy", "not-used-here")
    expect(audit.locator("#content")).to_contain_text(commitment)


WORDS_ON_ONE_LINE = """(sel) => {
  const node = document.querySelector(sel).firstChild;
  const split = [];
  const tops = new Set();
  for (const m of node.textContent.matchAll(/\\S+/g)) {
    const range = document.createRange();
    range.setStart(node, m.index);
    range.setEnd(node, m.index + m[0].length);
    const rects = [...range.getClientRects()];
    rects.forEach((r) => tops.add(Math.round(r.top)));
    if (new Set(rects.map((r) => Math.round(r.top))).size > 1) split.push(m[0]);
  }
  return { split, lines: tops.size };
}"""


# -------------------------------------------------- 12. a reload while offline


SAVED_PICKS = """async (sid) => {
  const r = await (await caches.open('raps-data-v1')).match('/api/sessions/' + sid);
  return r ? (await r.json()).picks.length : -1;
}"""


def test_a_reload_offline_shows_the_last_state_and_the_queued_command(
    floor: Floor, pages: Callable[..., Page]
) -> None:
    """The service worker's offline shell: reload with no network, the page is there with
    the last state, the offline banner and the command still waiting; back online the
    command goes through once.  Commands never pass through the worker."""
    worker = httpx.get(f"{floor.url}/handheld-sw.js", timeout=10)  # public: a script
    assert worker.status_code == 200, worker.text
    assert worker.headers["content-type"].startswith("text/javascript")
    assert worker.headers["cache-control"] == "no-cache"
    hh = pages(**PHONE)
    posts: list[tuple[str, bool]] = []
    hh.on("response", lambda r: posts.append((r.url, r.from_service_worker))
          if r.request.method == "POST" else None)  # fmt: skip
    sign_in(hh, floor.url, "/handheld", MARKETING, PIN)
    enter(hh, "W3")
    hh.click("#open-rehearsal-btn")
    hh.wait_for_function("() => navigator.serviceWorker.controller !== null")
    scope = hh.evaluate("navigator.serviceWorker.getRegistration().then(r => r.scope)")
    assert scope == f"{floor.url}/handheld", scope
    hh.click("#draw-slots")
    expect(winner(hh, 1)).to_be_visible()
    # (a promise is a true value to wait_for_function: each poll reads, the next compares)
    hh.wait_for_function(f"() => {{ ({SAVED_PICKS})('W3').then(n => {{ window.__n = n; }});"
                         " return window.__n === 1; }")  # fmt: skip

    hh.context.set_offline(True)
    hh.click("#draw-slots")  # queued: no network
    expect(hh.locator("#net-banner")).to_contain_text('retrying "draw a slot winner"')
    hh.reload()
    expect(hh.locator("#offline-banner")).to_contain_text("Offline · the last state, saved at")
    expect(hh.locator("#sess-id")).to_have_text("session W3")
    expect(winner(hh, 1)).to_be_visible()  # the last state
    expect(hh.locator("#net-banner")).to_contain_text('retrying "draw a slot winner"')
    shot(hh, "issue18-offline-handheld")

    hh.context.set_offline(False)
    expect(winner(hh, 2)).to_be_visible(timeout=15000)
    expect(hh.locator("#offline-banner")).to_be_hidden(timeout=10000)
    expect(hh.locator("#net-banner")).to_be_hidden(timeout=10000)
    picks = floor.session("W3")["picks"]
    assert [p["pick"] for p in picks] == [1, 2], "the queued draw was drawn twice"
    assert posts and not any(sw for _, sw in posts), posts  # never through the worker
    # signing out leaves nothing of the session's answers on the device
    hh.click("#sign-out")
    expect(hh).to_have_url(re.compile(r"/login$"))
    assert hh.evaluate("caches.keys()").count("raps-data-v1") == 0


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
        # announce_name first_initial (the default): "Johan F."
        expect(pa).to_have_text(
            f"Attention please: {view[n]['display_name']}, you are a {PROMOTION} winner! "
            f"Please go to {where} with your player card and ID within 900 seconds."
        )
    # the ID check: the directory's full name (first name and surname, as journaled with
    # the pick), which the card itself never shows, and the directory's photo
    full = drawn[1]["display_name"]
    first, surname = full.split()
    assert len(surname) > 2 and view[1]["display_name"] == f"{first} {surname[0]}.", full
    check = winner(hh, 1).locator(".id-check")
    check.click()
    expect(winner(hh, 1).locator(".w-id-name")).to_have_text(f"Full name{full}")
    photo = winner(hh, 1).locator(".w-id-photo")
    expect(photo).to_have_attribute("src", "/api/sessions/W2/picks/1/photo")
    expect(photo).to_have_attribute("alt", f"Photo of {full}")
    hh.wait_for_function("() => document.querySelector('.w-id-photo').naturalWidth === 96")
    # fetched by the daemon from the directory's photo server, never by the phone
    card = floor.session("W2")["picks"][0]["card"][-4:]
    asked = [ua for path, ua in photo_server().asked if path.endswith(f"{card}.png")]
    assert asked and all(ua.startswith("python-httpx") for ua in asked), asked
    photo.scroll_into_view_if_needed()
    shot(hh, "issue18-id-check-handheld")
    winner(hh, 1).locator('[data-action="verify"]').click()
    expect(hh.locator('.winner.verified[data-pick="1"]')).to_be_visible()
    # never on the wall, and never for a role that does not verify
    expect(wall.locator(".d-card")).to_have_count(1)
    assert wall.locator(".w-id, .w-id-name, img").count() == 0
    assert "Full name" not in wall.content() and surname not in wall.content()
    for path in ("/api/sessions/W2/picks/2/identity", "/api/sessions/W2/picks/2/photo",
                 "/api/sessions/W2/picks/2/announcement"):  # fmt: skip
        assert as_bearer(floor, AUDIT_TOKEN, path).status_code == 403, path
        assert wall.evaluate(f"fetch('{path}').then(r => r.status)") == 403, path
    path = "/api/sessions/W2/picks/2/identity"
    got = as_bearer(floor, RUNNER_TOKEN, path).json()
    assert got["full_name"] == drawn[2]["display_name"] and got["photo_note"] is None, got
    photo_answer = as_bearer(floor, RUNNER_TOKEN, "/api/sessions/W2/picks/2/photo")
    assert photo_answer.headers["content-type"] == "image/png"
    assert photo_answer.headers["cache-control"] == "no-store"
    # once the pick is resolved there is no ID check to make
    assert as_bearer(floor, RUNNER_TOKEN, "/api/sessions/W2/picks/1/identity").status_code == 200
    cmd(floor, "W2", "picks/2/no-show", "n2")
    assert as_bearer(floor, RUNNER_TOKEN, path).status_code == 409
    assert as_bearer(floor, RUNNER_TOKEN, "/api/sessions/W2/picks/2/photo").status_code == 409

    # a promotion whose PA line says the full name ([[promotions]] announce_name = "full")
    enter_from_list(hh, "F1")
    hh.click("#open-rehearsal-btn")
    hh.click("#draw-slots")
    expect(winner(hh, 1)).to_be_visible()
    named = next(r["data"] for r in journal(floor, "F1") if r["type"] == "pick.drawn")
    said = f"Attention please: {named['display_name']}, you are a {FULL_PROMOTION} winner!"
    expect(winner(hh, 1).locator(".w-pa-text")).to_have_text(re.compile("^" + re.escape(said)))


def enter_from_list(hh: Page, sid: str) -> None:
    hh.evaluate("window.scrollTo(0, 0)")
    hh.click("#back")
    enter(hh, sid)


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
    shot(page, "report-1280x900", doc=True)
    # marketing, admin and the auditor; not security
    assert as_bearer(floor, AUDIT_TOKEN, "/api/sessions/W4/report.csv").text == text
    wall = pages(**WALL)
    sign_in(wall, floor.url, "/dispatch", SECURITY, SECURITY_PW)
    # once the wall screen is up (an evaluate during its load would race the navigation)
    expect(wall.locator("#d-conn")).to_have_text("LIVE")
    assert wall.evaluate("fetch('/api/sessions/W4/report').then(r => r.status)") == 403

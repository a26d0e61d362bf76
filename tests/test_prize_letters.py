"""Printable prize letters: the A4 page escapes whatever a name holds, and the PDF is a
real PDF that renders any name (Unicode font or Latin-1 fallback)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from raps.tickets.letters import CSS_HREF, latin1, letter_html, letter_pdf, unicode_font
from selector.records import Actor
from selector.session import Command
from selector.tickets.draw_rules import GOLD_REEF_ADD_ONS
from selector.tickets.prizes import Letter, PrizeLedger

SAST = ZoneInfo("Africa/Johannesburg")
AWARDED = datetime(2026, 4, 25, 19, 4, tzinfo=ZoneInfo("UTC"))  # 21:04 in Johannesburg
HOSTILE = '<script>alert("x")</script> & Co'
CSS = Path(__file__).resolve().parents[1] / "raps" / "static" / "public" / "letter.css"


def make_letter(name: str = "Zoë Ngcobo-Ş", *, collected: bool = False, **kw: object) -> Letter:
    ledger = PrizeLedger()
    letter = ledger.issue(
        Command("i1", Actor("thandi", "marketing"), AWARDED),
        draw_id="sat-cash", draw_name=str(kw.get("draw_name", "Saturday cash 21h00")),
        session_id="draw:sat-cash", pick=3, winner_card="7001234567", winner_name=name,
        prizes=[(500_000, "cash")], add_ons=GOLD_REEF_ADD_ONS, awarded_at=AWARDED,
        digest_hex="c3" * 32,
    )  # fmt: skip
    if collected:
        letter = ledger.collect(
            Command("k1", Actor("nomsa", "rewards"), AWARDED + timedelta(days=1)),
            letter.letter_no, document="sa_id", last_digits="087",
            signature={"kind": "typed", "text": "Z Ngcobo"},
        )  # fmt: skip
    return letter


def page(letter: Letter, site: str = "Gold Reef City", promo: str = "Turn up the heat") -> str:
    return letter_html(letter, site_name=site, promotion_name=promo)


def test_the_page_shows_the_letter() -> None:
    letter = make_letter()
    html = page(letter)
    assert html.startswith("<!doctype html>") and html.rstrip().endswith("</html>")
    assert f'<link rel="stylesheet" href="{CSS_HREF}">' in html
    assert '<b id="letter-no">PL-000001</b>' in html
    assert f'<b id="code">{letter.verification_code}</b>' in html
    assert "Gold Reef City" in html and "Turn up the heat" in html
    assert "Saturday cash 21h00" in html and "Sat 25 Apr 2026 21:04" in html  # site time
    assert "Zoë Ngcobo-Ş" in html
    assert "******4567" in html and "7001234567" not in html  # the card, masked
    for amount in ("R5,000.00", "R500.00", "R6,000.00"):
        assert amount in html
    assert "Tsogo Sun app registered" in html and "+Play" in html
    assert '<b id="collect-by">Sun 10 May 2026 21:04</b>' in html
    assert "a proxy or nominee cannot collect it" in html
    assert "within 15 days" in html and "forfeit" in html
    assert "Winner&#x27;s signature" in html and "Rewards Desk: name and signature" in html
    assert 'id="collected"' not in html
    # no script and no inline style: the pages' Content-Security-Policy refuses them
    assert "<script" not in html and "<style" not in html and "style=" not in html


def test_the_page_escapes_hostile_names() -> None:
    letter = make_letter(HOSTILE, draw_name=HOSTILE)
    html = page(letter, site=HOSTILE, promo=HOSTILE)
    assert "<script" not in html
    assert html.count("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; Co") >= 4
    html = letter_html(letter, site_name="s", promotion_name="p", css_href='x.css"><script>')
    assert "<script" not in html


def test_the_page_of_a_collected_letter_says_so() -> None:
    html = page(make_letter(collected=True))
    found = re.search(r'<p class="collected" id="collected">(.*?)</p>', html)
    assert found is not None
    assert "Sun 26 Apr 2026 21:04" in found.group(1) and "SA ID ending 087" in found.group(1)
    assert "nomsa" in found.group(1)


def test_the_page_in_another_time_zone() -> None:
    html = letter_html(make_letter(), site_name="s", promotion_name="p", tz="UTC")
    assert '<b id="collect-by">Sun 10 May 2026 19:04</b>' in html


def test_the_stylesheet_is_for_a4() -> None:
    css = CSS.read_text()
    assert re.search(r"@page\s*\{\s*size:\s*A4;\s*margin:\s*18mm;?\s*\}", css)
    assert css.count("{") == css.count("}")


def _is_pdf(data: bytes) -> None:
    assert data.startswith(b"%PDF-")
    assert data.rstrip().endswith(b"%%EOF")
    assert b"trailer" in data and b"startxref" in data
    assert b"/MediaBox [0 0 595.28 841.89]" in data  # A4 in points


def test_the_pdf_holds_the_letters_text() -> None:
    letter = make_letter()
    data = letter_pdf(letter, site_name="Gold Reef City", promotion_name="Turn up the heat",
                      use_unicode=False, compress=False)  # fmt: skip
    _is_pdf(data)
    for text in ("PL-000001", letter.verification_code, "R5,000.00", "R6,000.00",
                 "******4567", "Collect by Sun 10 May 2026 21:04", "PRIZE LETTER"):  # fmt: skip
        assert f"({text})".encode("latin-1") in data, text
    assert b"7001234567" not in data
    # Latin-1 keeps the e with diaeresis; S with cedilla loses its cedilla, not the letter
    assert "(Zoë Ngcobo-S)".encode("latin-1") in data


def test_the_pdf_renders_any_name_with_a_unicode_font() -> None:
    if unicode_font() is None:
        pytest.skip("no DejaVu Sans on this machine: the Latin-1 path is tested above")
    name = "Zoë Ngcobo-Ş 王小明 Ærøskøbing 😀"
    data = letter_pdf(make_letter(name), site_name="Gold Reef City", promotion_name="Heat",
                      compress=False)  # fmt: skip
    _is_pdf(data)
    assert b"/FontFile2" in data  # the TrueType font is embedded
    assert b"(Prize letter PL-000001)" in data  # the document's title
    compressed = letter_pdf(make_letter(name), site_name="Gold Reef City", promotion_name="Heat")
    _is_pdf(compressed)
    assert len(compressed) < len(data)


def test_the_pdf_never_crashes_on_a_name_in_latin1_mode() -> None:
    for name in ("王小明", "😀😀", "Ωμέγα", "Nguyễn Văn Đức", HOSTILE):
        _is_pdf(letter_pdf(make_letter(name), site_name="s", promotion_name="p",
                           use_unicode=False))  # fmt: skip


def test_the_same_letter_gives_the_same_pdf() -> None:
    a = letter_pdf(make_letter(collected=True), site_name="s", promotion_name="p")
    b = letter_pdf(make_letter(collected=True), site_name="s", promotion_name="p")
    assert a == b
    assert a != letter_pdf(make_letter(), site_name="s", promotion_name="p")


def test_latin1_replacement() -> None:
    assert latin1("Zoë Ngcobo-Ş") == "Zoë Ngcobo-S"
    assert latin1("王 😀") == "? ?"
    assert latin1("Nguyễn Đức") == "Nguyen ?uc"
    assert latin1("ﬁ") == "fi"  # a ligature decomposes
    assert latin1("a\u00a0b") == "a b"  # no-break space

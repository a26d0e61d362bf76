"""Printable prize letters: an A4 HTML page (styles: /static/public/letter.css) and a PDF.

Both show the same content, built once by `_content`: site and promotion, the letter
number and verification code (checkable against the journal), the draw, the winner and
masked card, each prize and add-on, the collect-by date in site time, the rules
reminder (seed 003 rules 11, 14, 17; seed 000 rules 16, 19) and signature lines.

Names come from the player directory and may hold anything: the page escapes every
value, and the PDF uses a Unicode TrueType font when the machine has one (DejaVu Sans)
or else replaces what Latin-1 cannot encode, so no name can break a letter.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from html import escape
from pathlib import Path
from zoneinfo import ZoneInfo

from fpdf import FPDF
from fpdf.enums import XPos, YPos
from fpdf.fonts import TTFFont

from raps.redact import mask_card
from selector.tickets.announcing import kind_label, money
from selector.tickets.prizes import Letter

DEFAULT_TZ = "Africa/Johannesburg"
CSS_HREF = "/static/public/letter.css"
_DOCUMENTS = {"sa_id": "SA ID", "driving_licence": "driving licence", "passport": "passport"}
# Unicode fonts looked for, regular and bold, in the places Linux distributions put them
_FONT_DIRS = (
    "/usr/share/fonts/truetype/dejavu",  # Debian, Ubuntu
    "/usr/share/fonts/dejavu-sans-fonts",  # Fedora
    "/usr/share/fonts/dejavu",
    "/usr/share/fonts/TTF",  # Arch
)
_FONT_FILES = ("DejaVuSans.ttf", "DejaVuSans-Bold.ttf")


@dataclass(frozen=True, slots=True)
class _Content:
    """What a letter says, as plain text; the HTML and the PDF lay it out."""

    title: str
    site: str
    promotion: str
    letter_no: str
    code: str
    details: tuple[tuple[str, str], ...]
    prizes: tuple[tuple[str, str], ...]
    total: str
    collect_by: str
    rules: tuple[str, ...]
    collected: str | None
    signatures: tuple[str, ...]
    footer: str


def _when(at: datetime, tz: str) -> str:
    return at.astimezone(ZoneInfo(tz)).strftime("%a %d %b %Y %H:%M")


def _content(letter: Letter, site_name: str, promotion_name: str, tz: str) -> _Content:
    cur = letter.currency
    prizes = [(kind_label(p.kind).capitalize(), money(p.amount, cur)) for p in letter.prizes]
    for a in letter.add_ons:
        prizes += [(f"{a.name} ({kind_label(p.kind)})", money(p.amount, cur)) for p in a.prizes]
    collect_by = _when(letter.collect_by, tz)
    days = letter.collect_days
    rules = (
        f"Collect this prize in person at the Rewards Desk by {collect_by}, within {days} "
        "days of the draw.",
        "Bring this letter and your identification: SA ID, driving licence or passport.",
        "Only the winner can collect and sign for the prize: a proxy or nominee cannot "
        "collect it or sign for it.",
        f"A prize not collected within {days} days is forfeit. Prizes are not transferable "
        "and cannot be exchanged.",
        "The desk checks the letter number and verification code against the draw's journal.",
    )
    collected = None
    c = letter.collection
    if c is not None:
        sig = "typed signature" if c.signature.kind == "typed" else "drawn signature"
        doc = _DOCUMENTS.get(c.document.value, c.document.value)
        collected = (
            f"Collected {_when(c.at, tz)} by the winner ({doc} ending {c.last_digits}, {sig}); "
            f"handed over by {c.by}."
        )
    return _Content(
        title=f"Prize letter {letter.letter_no}",
        site=site_name,
        promotion=promotion_name,
        letter_no=letter.letter_no,
        code=letter.verification_code,
        details=(
            ("Draw", letter.draw_name),
            ("Drawn", _when(letter.awarded_at, tz)),
            ("Winner", letter.winner_name),
            ("Card", mask_card(letter.winner_card)),
            ("Draw session", f"{letter.session_id}, pick {letter.pick}"),
            ("Issued", _when(letter.issued_at, tz)),
        ),
        prizes=tuple(prizes),
        total=money(letter.total, cur),
        collect_by=collect_by,
        rules=rules,
        collected=collected,
        signatures=(
            "Winner's signature",
            "Date",
            "ID document type and last digits",
            "Rewards Desk: name and signature",
        ),
        footer=f"{site_name} - {promotion_name} - {letter.letter_no} - code "
        f"{letter.verification_code}",
    )


# ------------------------------------------------------------------------ HTML


def letter_html(
    letter: Letter,
    *,
    site_name: str,
    promotion_name: str,
    css_href: str = CSS_HREF,
    tz: str = DEFAULT_TZ,
) -> str:
    """A complete page without script or inline style (the pages' CSP), for A4 print."""
    c = _content(letter, site_name, promotion_name, tz)
    e = escape
    details = "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in c.details)
    prizes = "".join(f'<tr><td>{e(k)}</td><td class="amount">{e(v)}</td></tr>' for k, v in c.prizes)
    rules = "".join(f"<li>{e(r)}</li>" for r in c.rules)
    signatures = "".join(
        f'<div class="sig"><div class="line"></div><span>{e(s)}</span></div>' for s in c.signatures
    )
    collected = (
        "" if c.collected is None else f'<p class="collected" id="collected">{e(c.collected)}</p>'
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<link rel="stylesheet" href="{e(css_href)}">
<title>{e(c.title)}</title>
</head>
<body>
<main class="letter">
<header>
<div class="site" id="site">{e(c.site)}</div>
<div class="promotion" id="promotion">{e(c.promotion)}</div>
<h1>Prize letter</h1>
</header>
<section class="ids">
<div><span class="label">Letter number</span><b id="letter-no">{e(c.letter_no)}</b></div>
<div><span class="label">Verification code</span><b id="code">{e(c.code)}</b></div>
</section>
<dl class="details" id="details">{details}</dl>
<table class="prizes" id="prizes">
<thead><tr><th>Prize</th><th class="amount">Amount</th></tr></thead>
<tbody>{prizes}</tbody>
<tfoot><tr><th>Total</th><th class="amount" id="total">{e(c.total)}</th></tr></tfoot>
</table>
<p class="collect-by">Collect by <b id="collect-by">{e(c.collect_by)}</b></p>
{collected}
<section class="rules"><h2>Collecting your prize</h2><ul>{rules}</ul></section>
<section class="signatures">{signatures}</section>
<footer>{e(c.footer)}</footer>
</main>
</body></html>
"""


# ------------------------------------------------------------------------- PDF


def unicode_font() -> tuple[Path, Path | None] | None:
    """The regular and (if there) bold DejaVu Sans files on this machine, or None."""
    for folder in _FONT_DIRS:
        regular = Path(folder, _FONT_FILES[0])
        if regular.is_file():
            bold = Path(folder, _FONT_FILES[1])
            return regular, bold if bold.is_file() else None
    return None


def printable_in(text: str, has: Callable[[str], bool]) -> str:
    """What a font can print of `text`: accents dropped where that helps ('Ş' -> 'S'
    in Latin-1), anything else '?'.  Never raises, whatever the name holds."""
    out: list[str] = []
    for ch in text:
        if ch.isprintable() and has(ch):
            out.append(ch)
            continue
        base = "".join(
            b
            for b in unicodedata.normalize("NFKD", ch)
            if b.isprintable() and not unicodedata.combining(b) and has(b)
        )
        out.append(base or "?")
    return "".join(out)


def latin1(text: str) -> str:
    """What a core PDF font (Latin-1) can print of `text`."""
    return printable_in(text, lambda ch: ord(ch) < 256)


class _Pdf:
    """An A4 page with 18 mm margins and one font family, Unicode or core."""

    def __init__(self, use_unicode: bool) -> None:
        pdf = FPDF(orientation="portrait", unit="mm", format="A4")
        pdf.set_margins(18, 18, 18)
        pdf.set_auto_page_break(auto=True, margin=18)
        fonts = unicode_font() if use_unicode else None
        if fonts is not None:
            regular, bold = fonts
            pdf.add_font("Letter", "", str(regular))
            pdf.add_font("Letter", "B", str(bold or regular))
            # glyphs both styles have: a missing one would print as an empty box
            covered: set[int] = set()
            for key in ("letter", "letterB"):
                f = pdf.fonts[key]
                cmap = set(f.cmap) if isinstance(f, TTFFont) else set()
                covered = cmap if key == "letter" else covered & cmap
            self.family = "Letter"
            self.clean: Callable[[str], str] = lambda t: printable_in(
                t, lambda ch: ord(ch) in covered
            )
        else:
            self.family, self.clean = "Helvetica", latin1
        self.pdf = pdf

    def font(self, size: float, bold: bool = False) -> None:
        self.pdf.set_font(self.family, "B" if bold else "", size)

    def line(self, text: str, size: float = 10, bold: bool = False, h: float = 6) -> None:
        self.font(size, bold)
        self.pdf.multi_cell(0, h, self.clean(text), align="L", new_x=XPos.LMARGIN, new_y=YPos.NEXT)

    def pair(self, label: str, value: str, label_w: float = 42) -> None:
        self.font(10, bold=True)
        self.pdf.cell(label_w, 6, self.clean(label))
        self.font(10)
        self.pdf.multi_cell(0, 6, self.clean(value), align="L", new_x=XPos.LMARGIN, new_y=YPos.NEXT)

    def rule(self, gap: float = 3) -> None:
        p = self.pdf
        p.ln(gap)
        p.line(p.l_margin, p.get_y(), p.w - p.r_margin, p.get_y())
        p.ln(gap)


def letter_pdf(
    letter: Letter,
    *,
    site_name: str,
    promotion_name: str,
    tz: str = DEFAULT_TZ,
    use_unicode: bool = True,
    compress: bool = True,
) -> bytes:
    """The letter as an A4 PDF; `use_unicode=False` and `compress=False` are for tests
    that read the page's text from the file (core fonts write text as plain strings)."""
    c = _content(letter, site_name, promotion_name, tz)
    doc = _Pdf(use_unicode)
    pdf = doc.pdf
    pdf.set_compression(compress)
    pdf.set_title(c.title)
    pdf.set_subject(f"{c.promotion}: {letter.draw_name}")
    pdf.set_author(c.site)
    pdf.set_creator("RAPS")
    pdf.set_creation_date(letter.issued_at)  # the same letter gives the same file
    pdf.add_page()

    doc.line(c.site, 16, bold=True, h=8)
    doc.line(c.promotion, 12)
    pdf.ln(2)
    doc.line("PRIZE LETTER", 20, bold=True, h=10)
    doc.rule()
    doc.pair("Letter number", c.letter_no)
    doc.pair("Verification code", c.code)
    doc.rule()
    for label, value in c.details:
        doc.pair(label, value)
    doc.rule()

    width = pdf.w - pdf.l_margin - pdf.r_margin
    doc.font(10, bold=True)
    pdf.cell(width - 45, 7, "Prize", border="B")
    pdf.cell(45, 7, "Amount", border="B", align="R", new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    for label, amount in c.prizes:
        doc.font(10)
        pdf.cell(width - 45, 7, doc.clean(label))
        pdf.cell(45, 7, doc.clean(amount), align="R", new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    doc.font(10, bold=True)
    pdf.cell(width - 45, 7, "Total", border="T")
    pdf.cell(45, 7, doc.clean(c.total), border="T", align="R",
             new_x=XPos.LMARGIN, new_y=YPos.NEXT)  # fmt: skip
    pdf.ln(3)
    doc.line(f"Collect by {c.collect_by}", 12, bold=True, h=8)
    if c.collected is not None:
        doc.line(c.collected, 10, bold=True)
    pdf.ln(2)
    doc.line("Collecting your prize", 11, bold=True, h=7)
    for r in c.rules:
        doc.line(f"- {r}", 9.5, h=5)

    pdf.ln(6)
    col = (width - 10) / 2
    for i in range(0, len(c.signatures), 2):
        if pdf.get_y() > pdf.h - pdf.b_margin - 22:
            pdf.add_page()
        pdf.ln(12)
        y = pdf.get_y()
        for j, label in enumerate(c.signatures[i : i + 2]):
            x = pdf.l_margin + j * (col + 10)
            pdf.line(x, y, x + col, y)
            pdf.set_xy(x, y + 1)
            doc.font(8.5)
            pdf.cell(col, 5, doc.clean(label))
        pdf.set_xy(pdf.l_margin, y + 6)

    pdf.ln(8)
    doc.font(8)
    pdf.multi_cell(0, 4, doc.clean(c.footer), new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    return bytes(pdf.output())

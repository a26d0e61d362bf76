"""The ticket routes: e-Host kiosks and the casino app enter tickets, players see where
they stand, staff watch the bins, and a receipt prints on an 80 mm thermal printer.

Kiosks and app integrations call with their own bearer token (a [[users]] entry with
role `kiosk` or `app`); neither role reaches any other route.  An entry carries a
`request_id` chosen by the caller, so a kiosk that lost the answer asks again and gets
the same receipt, never a second entry.  A refusal is 409 with its reason; an entry the
journal could not commit yet is 503, and the same request id may be retried.

No `from __future__ import annotations` here: FastAPI reads the routes' annotations,
which name dependencies defined inside register_ticket_routes.
"""

import math
from datetime import datetime
from fractions import Fraction
from html import escape
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException
from fastapi.responses import HTMLResponse, JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request

from raps.auth import APPS, KIOSKS, READERS, TICKET_DESKS, TICKET_VIEWERS
from raps.redact import mask_card, short_name
from raps.service import Service
from raps.tickets.desk import EntryResult, TicketRefused, TicketsUnavailable
from raps.web_context import WebContext
from selector.events import check_card
from selector.floor import decimal_ratio
from selector.records import Actor
from selector.tickets import Channel, DrawStatus

# refusals that name something that does not exist answer 404, the others 409
_NOT_FOUND = frozenset({"unknown_draw", "unknown_player"})


class EntryBody(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a misspelt field is a 422, not ignored

    request_id: str = Field(min_length=1, max_length=128)
    card: str = Field(min_length=1, max_length=64)
    draw: str = Field(min_length=1, max_length=128, description="a draw id or a bin id")


class AppEntryBody(EntryBody):
    # the app integration knows its member is registered on the app: app-bonus tickets.
    # A kiosk cannot say so (the member's word is no proof), so its body has no such field.
    app_registered: bool = True


def _card(card: str) -> str:
    """A card id as the floor takes it, or 422 (it never reaches the ledger otherwise)."""
    try:
        check_card("request", card)
    except ValueError as e:
        raise HTTPException(422, str(e)) from None
    return card


def draw_view(s: DrawStatus) -> dict[str, Any]:
    return {
        "draw_id": s.draw_id,
        "bin_id": s.bin_id,
        "program_id": s.program_id,
        "draw_at": s.draw_at.isoformat(),
        "earning": {"start": s.earning_start.isoformat(), "end": s.earning_end.isoformat()},
        "entry_window": {"opens": s.opens.isoformat(), "closes": s.closes.isoformat()},
        "entry_open": s.entry_open,
        "points": round(s.points, 3),
        "credited": s.credited,
        "entered": s.entered,
        "available": s.available,
        "bonus_due": s.bonus_due,
        "points_to_next_ticket": None if s.points_to_next is None else round(s.points_to_next, 3),
    }


def receipt_view(service: Service, result: EntryResult, replayed: bool) -> dict[str, Any]:
    e = result.entry
    b = service.tickets.plan.bins[e.bin_id]
    head = result.head
    return {
        "replayed": replayed,
        "receipt_no": e.receipt_no,
        "card": mask_card(e.card),
        "bin_id": e.bin_id,
        "draws": [
            {"draw_id": d.draw_id, "name": d.name or d.draw_id, "at": d.at.isoformat()}
            for d in b.draws
        ],
        "tickets": e.tickets,
        "entered_in_bin": service.tickets.ledger.entered(e.card, e.bin_id),
        "channel": e.channel.value,
        "at": e.at.isoformat(),
        "verification_code": result.code,
        "journal_seq": result.seq,
        "journal_head": {"seq": head.seq, "hash": head.hash} if head else None,
    }


def register_ticket_routes(app: FastAPI, web: WebContext) -> None:
    service = web.service
    desk = service.tickets
    Kiosk = Annotated[Actor, Depends(web.guard(KIOSKS))]
    App = Annotated[Actor, Depends(web.guard(APPS))]
    Desk = Annotated[Actor, Depends(web.guard(TICKET_DESKS))]
    Viewer = Annotated[Actor, Depends(web.guard(TICKET_VIEWERS))]
    Reader = Annotated[Actor, Depends(web.guard(READERS))]
    DeskPage = Annotated[Actor, Depends(web.guard(TICKET_DESKS, page=True))]

    @app.exception_handler(TicketRefused)
    async def _refused(_r: Request, e: TicketRefused) -> JSONResponse:
        status = 404 if e.reason in _NOT_FOUND else 409
        return JSONResponse({"reason": e.reason, "detail": e.detail}, status)

    @app.exception_handler(TicketsUnavailable)
    async def _unavailable(_r: Request, e: TicketsUnavailable) -> JSONResponse:
        return JSONResponse({"detail": str(e)}, 503)

    @app.get("/api/tickets/draws", tags=["tickets"])
    async def draws(_a: Viewer) -> list[dict[str, Any]]:
        """Every ticket draw with its entry window, bin and winners."""
        now = service.clock().timestamp()
        return [
            {
                "draw_id": d.draw_id,
                "name": d.name or d.draw_id,
                "bin_id": d.bin_id,
                "program_id": d.program_id,
                "at": d.at.isoformat(),
                "entry_window": {"opens": d.opens.isoformat(), "closes": d.closes.isoformat()},
                "entry_open": d.opens.timestamp() <= now < d.closes.timestamp(),
                "winners": d.winners,
            }
            for d in desk.plan.draws
        ]

    @app.get("/api/tickets/players/{card}", tags=["tickets"])
    async def standing(card: str, _a: Viewer, app_registered: bool = False) -> dict[str, Any]:
        """ "Am I qualified": points toward today's RAPS threshold and tickets per draw."""
        card = _card(card)
        profile = service.floor.profile(card)
        if profile is None:
            raise HTTPException(404, "the card is not in the player directory")
        now = service.clock()
        barred = desk.standing(card, app_registered).barred()
        return {
            "card": mask_card(card),
            "name": short_name(profile.display_name),
            "tier": profile.tier.value,
            "playing_now": service.floor.playing(card),
            "may_enter": barred is None,
            "barred": None if barred is None else barred.reason.value,
            "raps": [
                _raps_view(service, promo, card, now) for promo in service.planner.promotions()
            ],
            "draws": [draw_view(s) for s in desk.status(card, now, app_registered)],
        }

    async def enter(body: EntryBody, actor: Actor, channel: Channel) -> dict[str, Any]:
        card = _card(body.card)
        replayed = desk.has_request(body.request_id)
        registered = isinstance(body, AppEntryBody) and body.app_registered
        result = await desk.enter(
            card, body.draw, channel, body.request_id, actor, service.clock(), registered
        )
        return receipt_view(service, result, replayed)

    @app.post("/api/tickets/kiosk/entries", tags=["tickets"])
    async def kiosk_entry(body: EntryBody, actor: Kiosk) -> dict[str, Any]:
        """An e-Host kiosk activates a card's tickets into a draw and prints the receipt."""
        return await enter(body, actor, Channel.KIOSK)

    @app.post("/api/tickets/app/entries", tags=["tickets"])
    async def app_entry(body: AppEntryBody, actor: App) -> dict[str, Any]:
        """The casino app enters a member's tickets; only while the member plays (000 rule 7)."""
        return await enter(body, actor, Channel.APP)

    @app.get("/api/tickets/bins/{bin_id}", tags=["tickets"])
    async def bin_summary(bin_id: str, _a: Reader) -> dict[str, Any]:
        """Entries and tickets per tier in a bin (the handheld's draw view)."""
        try:
            return desk.bin_summary(bin_id)
        except KeyError:
            raise HTTPException(404, f"no draw or bin {bin_id!r}") from None

    @app.get("/api/tickets/receipts/{receipt_no}", tags=["tickets"])
    async def check_receipt(receipt_no: str, _a: Desk, code: str | None = None) -> dict[str, Any]:
        """A receipt as the journal holds it; with `code`, whether the printed code matches."""
        found = desk.receipt(receipt_no)
        if found is None:
            raise HTTPException(404, f"no receipt {receipt_no!r}")
        view = receipt_view(service, found, replayed=True)
        if code is not None:
            view["code_matches"] = code.strip().upper() == found.code
        return view

    @app.get("/tickets/receipts/{receipt_no}", tags=["tickets"], response_class=HTMLResponse)
    async def receipt_page(receipt_no: str, _a: DeskPage) -> HTMLResponse:
        """The receipt, print-styled for an 80 mm thermal printer."""
        found = desk.receipt(receipt_no)
        if found is None:
            raise HTTPException(404, f"no receipt {receipt_no!r}")
        return HTMLResponse(receipt_html(service, receipt_view(service, found, replayed=True)))


def _raps_view(service: Service, promo: Any, card: str, now: datetime) -> dict[str, Any]:
    points = service.floor.exact_points(promo.promotion_id, card, now)
    needed = max(Fraction(0), Fraction(*decimal_ratio(promo.threshold_points)) - points)
    return {
        "promotion_id": promo.promotion_id,
        "name": promo.name,
        "threshold_points": promo.threshold_points,
        # to the thousandth, today's rounded down and what is missing up: 49.9996 of 50
        # shows 49.999 today and 0.001 needed, never 50.0 and 0.0
        "points_today": math.floor(points * 1000) / 1000,
        "points_needed": math.ceil(needed * 1000) / 1000,
        "window": {
            "start": promo.window.start.isoformat(timespec="minutes"),
            "end": promo.window.end.isoformat(timespec="minutes"),
        },
        "eligible_now": service.floor.check(promo.promotion_id, card) == "eligible",
    }


# The receipt's styles, served as /static/public/receipt.css (raps.pages): the pages'
# Content-Security-Policy (style-src 'self') refuses an inline <style>, and the kiosk
# that prints the receipt is no signed-in page user.  The page is 80 mm wide with 4 mm
# margins (72 mm printable); the roll's length is the printer's: CSS cannot say "as long
# as the content" (`size: 80mm auto` is invalid and dropped).
RECEIPT_CSS = """\
@page { margin: 4mm; }
html { background: #fff; }
body {
  width: 72mm; max-width: 100%; margin: 0 auto; color: #000; background: #fff;
  font: 12px/1.35 "DejaVu Sans Mono", monospace; overflow-wrap: anywhere;
}
@media screen { body { padding: 4mm 0; } }
h1 { font-size: 15px; text-align: center; margin: 0 0 2mm; }
.big { font-size: 28px; font-weight: bold; text-align: center; margin: 2mm 0; }
.code {
  font-size: 18px; font-weight: bold; letter-spacing: 2px; text-align: center;
  border: 1px dashed #000; padding: 1mm; margin: 2mm 0;
}
.code small { display: block; font-size: 10px; font-weight: normal; letter-spacing: 0; }
dl { display: grid; grid-template-columns: auto 1fr; gap: 0 2mm; margin: 0; }
dt { font-weight: bold; }
dd { margin: 0; text-align: right; min-width: 0; }
p { margin: 2mm 0 0; }
ul { padding-left: 4mm; margin: 1mm 0; }
li { margin-bottom: 1mm; }
small { color: #000; }
.foot { border-top: 1px dashed #000; margin-top: 2mm; padding-top: 1mm; font-size: 10px; }
"""


def receipt_html(service: Service, r: dict[str, Any]) -> str:
    """A page without script for an 80 mm roll (styles: RECEIPT_CSS), 72 mm printable."""
    site = escape(service.cfg.site.name)
    draws = "".join(
        f"<li>{escape(d['name'])}<br><small>{escape(_local(d['at']))}</small></li>"
        for d in r["draws"]
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/static/public/receipt.css">
<title>Receipt {escape(r["receipt_no"])}</title>
</head>
<body>
<h1>{site}<br>Draw ticket receipt</h1>
<div class="big" id="tickets">{r["tickets"]} ticket{"s" if r["tickets"] != 1 else ""}</div>
<dl>
<dt>Receipt</dt><dd id="receipt-no">{escape(r["receipt_no"])}</dd>
<dt>Card</dt><dd id="card">{escape(r["card"])}</dd>
<dt>Entered</dt><dd>{escape(_local(r["at"]))}</dd>
<dt>In this draw</dt><dd>{r["entered_in_bin"]}</dd>
</dl>
<p><b>Valid for</b></p><ul id="draws">{draws}</ul>
<div class="code"><small>Verification code</small>
<span id="code">{escape(r["verification_code"])}</span></div>
<div class="foot">Journal entry {r["journal_seq"]}. If your name is called, come to the
stage at once with this receipt and your ID. Entries cannot be bought.</div>
</body></html>
"""


def _local(iso: str) -> str:
    return datetime.fromisoformat(iso).strftime("%a %d %b %Y %H:%M")

"""The stage routes: the host runs a ticket draw, the audience's screen follows it, the
Rewards desk takes proxy forms and hands over prizes against their letters.

| route | roles | |
| --- | --- | --- |
| GET /api/stage/draws | stage host, rewards desk, admin, auditor | every draw and its state |
| GET /api/stage/draws/{id} | stage host, admin | the host's view of a draw |
| POST /api/stage/draws/{id}/open, /draw, /close | stage host, admin | the draw's steps |
| POST .../picks/{n}/present, /no-show, /void, /award | stage host, admin | a winner's steps |
| POST .../picks/{n}/add-ons/{add_on} | stage host, admin | an add-on checked |
| GET, POST /api/stage/draws/{id}/proxies | proxy desks | proxy nominations |
| GET /api/stage/screen/{id} | stage screen, host, admin | the audience's view (long-poll) |
| GET /api/prizes, /api/prizes/{no} | prize readers | prizes and letters |
| POST /api/prizes/{no}/collect | rewards desk, admin | a prize handed over and signed for |
| POST /api/prizes/{no}/forfeit | rewards desk, admin | an overdue prize closed, with a reason |
| GET /prizes/{no}/letter, /letter.pdf | prize readers | the printable letter |

Every command carries a `command_id` chosen by the page: a retry after a lost reply
returns the first answer and changes nothing.  A refusal is 409 (404 for what does not
exist) with its `reason`; a commit the journal could not make is 503, retry-safe.

No `from __future__ import annotations` here: FastAPI reads the routes' annotations.
"""

import asyncio
import base64
import binascii
import hashlib
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, HTTPException, Response
from fastapi.responses import HTMLResponse, JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request

from raps.auth import PRIZE_READERS, PROXY_DESKS, REWARDS_DESKS, STAGE_HOSTS, STAGE_SCREENS
from raps.tickets.letters import letter_html, letter_pdf
from raps.tickets.stage import StageDesk, StageRefused, StageUnavailable
from raps.tickets.stage_views import (
    draws_list,
    host_view,
    letter_view,
    nomination_view,
    screen_view,
)
from raps.web_context import WebContext
from selector.records import Actor

LONG_POLL_SECONDS = 20.0
MAX_SIGNATURE_BYTES = 512 * 1024


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a misspelt field is a 422, not ignored

    command_id: str = Field(min_length=1, max_length=128)


class CloseBody(Body):
    force: bool = False


class PresentBody(Body):
    presenter: Literal["winner", "proxy"]
    document: Literal["sa_id", "driving_licence", "passport"]
    last_digits: str = Field(pattern=r"^[0-9]{2,4}$")
    receipt: str = Field(min_length=1, max_length=64)


class VoidBody(Body):
    reason: str = Field(min_length=1, max_length=200)


class AddOnBody(Body):
    verified: bool


class AwardBody(Body):
    source: Literal["position", "device"]
    amount: int | None = Field(default=None, ge=0)
    kind: Literal["cash", "plus_play", "voucher", "item"] | None = None
    ref: str = Field(default="", max_length=128)


class ProxyBody(Body):
    member: str = Field(min_length=1, max_length=64)
    name: str = Field(min_length=1, max_length=80)
    document: Literal["sa_id", "driving_licence", "passport"]
    last_digits: str = Field(pattern=r"^[0-9]{2,4}$")
    proxy_card: str | None = Field(default=None, min_length=1, max_length=64)


class Signature(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["typed", "drawn"]
    text: str | None = Field(default=None, min_length=1, max_length=120)
    png: str | None = Field(default=None, description="a data:image/png;base64 URL")


class ForfeitBody(Body):
    reason: str = Field(min_length=1, max_length=200)


class CollectBody(Body):
    document: Literal["sa_id", "driving_licence", "passport"]
    last_digits: str = Field(pattern=r"^[0-9]{2,4}$")
    signature: Signature


def _signature(sig: Signature) -> dict[str, str]:
    """A typed confirmation as text; a drawn signature as the SHA-256 of its PNG."""
    if sig.kind == "typed":
        if not sig.text or not sig.text.strip():
            raise HTTPException(422, "a typed signature needs its text")
        return {"kind": "typed", "text": sig.text.strip()}
    data = sig.png or ""
    prefix = "data:image/png;base64,"
    if not data.startswith(prefix):
        raise HTTPException(422, "a drawn signature is a data:image/png;base64 URL")
    try:
        raw = base64.b64decode(data[len(prefix) :], validate=True)
    except (binascii.Error, ValueError):
        raise HTTPException(422, "the signature is not valid base64") from None
    if not raw.startswith(b"\x89PNG\r\n\x1a\n") or len(raw) > MAX_SIGNATURE_BYTES:
        raise HTTPException(422, "the signature is not a PNG image (at most 512 KB)")
    return {"kind": "drawn", "sha256": hashlib.sha256(raw).hexdigest()}


def register_stage_routes(app: FastAPI, web: WebContext) -> None:
    service = web.service
    desk: StageDesk = service.stage
    tz = web.cfg.site.timezone
    Host = Annotated[Actor, Depends(web.guard(STAGE_HOSTS))]
    Screen = Annotated[Actor, Depends(web.guard(STAGE_SCREENS))]
    Proxies = Annotated[Actor, Depends(web.guard(PROXY_DESKS))]
    Rewards = Annotated[Actor, Depends(web.guard(REWARDS_DESKS))]
    Prizes = Annotated[Actor, Depends(web.guard(PRIZE_READERS))]
    PrizePage = Annotated[Actor, Depends(web.guard(PRIZE_READERS, page=True))]
    Lister = Annotated[Actor, Depends(web.guard(PRIZE_READERS | PROXY_DESKS))]

    @app.exception_handler(StageRefused)
    async def _refused(_r: Request, e: StageRefused) -> JSONResponse:
        return JSONResponse({"reason": e.code, "detail": str(e)}, e.status)

    @app.exception_handler(StageUnavailable)
    async def _unavailable(_r: Request, e: StageUnavailable) -> JSONResponse:
        return JSONResponse({"detail": str(e)}, 503)

    @app.get("/api/stage/draws", tags=["stage"])
    async def draws(_a: Lister) -> dict[str, Any]:
        """Every ticket draw, its state and its bin's size."""
        return {"draws": draws_list(desk), "server_time": service.clock().isoformat()}

    @app.get("/api/stage/draws/{draw_id}", tags=["stage"])
    async def host(draw_id: str, _a: Host) -> dict[str, Any]:
        """The host's view: bin, picks with full cards, proxies on file, announcements;
        as of the last commit (a command still writing is not shown)."""
        return await desk.settled(lambda: host_view(desk, draw_id))

    @app.post("/api/stage/draws/{draw_id}/open", tags=["stage"])
    async def open_draw(draw_id: str, body: Body, actor: Host) -> dict[str, Any]:
        """Open over the bin as entered: commits to a fresh seed, stores the bin once."""
        await desk.open(draw_id, actor, body.command_id)
        return host_view(desk, draw_id)

    @app.post("/api/stage/draws/{draw_id}/draw", tags=["stage"])
    async def draw_next(draw_id: str, body: Body, actor: Host) -> dict[str, Any]:
        """Draw the next winner (every ticket equally likely); one pending at a time."""
        started = asyncio.get_running_loop().time()
        await desk.draw(draw_id, actor, body.command_id)
        service.metrics.stage_pick_latency.observe(asyncio.get_running_loop().time() - started)
        return host_view(desk, draw_id)

    @app.post("/api/stage/draws/{draw_id}/close", tags=["stage"])
    async def close_draw(draw_id: str, body: CloseBody, actor: Host) -> dict[str, Any]:
        """Close and reveal the seed; `force` turns a pending winner into a no-show."""
        await desk.close(draw_id, actor, body.command_id, body.force)
        return host_view(desk, draw_id)

    @app.post("/api/stage/draws/{draw_id}/picks/{number}/present", tags=["stage"])
    async def present(draw_id: str, number: int, body: PresentBody, actor: Host) -> dict[str, Any]:
        """The winner or their proxy presented ID (type and last digits) and the receipt."""
        await desk.present(draw_id, actor, body.command_id, number, body.presenter,
                           body.document, body.last_digits, body.receipt)  # fmt: skip
        return host_view(desk, draw_id)

    @app.post("/api/stage/draws/{draw_id}/picks/{number}/no-show", tags=["stage"])
    async def no_show(draw_id: str, number: int, body: Body, actor: Host) -> dict[str, Any]:
        """Nobody came: the position is redrawn over the rest of the bin."""
        await desk.no_show(draw_id, actor, body.command_id, number)
        return host_view(desk, draw_id)

    @app.post("/api/stage/draws/{draw_id}/picks/{number}/void", tags=["stage"])
    async def void(draw_id: str, number: int, body: VoidBody, actor: Host) -> dict[str, Any]:
        """Void a winner with a reason (not once awarded); the position is free again."""
        await desk.void(draw_id, actor, body.command_id, number, body.reason)
        return host_view(desk, draw_id)

    @app.post("/api/stage/draws/{draw_id}/picks/{number}/add-ons/{add_on}", tags=["stage"])
    async def add_on(
        draw_id: str, number: int, add_on: str, body: AddOnBody, actor: Host
    ) -> dict[str, Any]:
        """The host checked an add-on (the app registered, active online): yes or no."""
        await desk.add_on(draw_id, actor, body.command_id, number, add_on, body.verified)
        return host_view(desk, draw_id)

    @app.post("/api/stage/draws/{draw_id}/picks/{number}/award", tags=["stage"])
    async def award(draw_id: str, number: int, body: AwardBody, actor: Host) -> dict[str, Any]:
        """Record the prize (the position's, or a device's reveal with its reference) and
        issue the winner's prize letter."""
        await desk.award(draw_id, actor, body.command_id, number, body.source,
                         body.amount, body.kind, body.ref)  # fmt: skip
        return host_view(desk, draw_id)

    @app.get("/api/stage/draws/{draw_id}/proxies", tags=["stage"])
    async def proxies(draw_id: str, _a: Proxies) -> dict[str, Any]:
        """The proxies nominated for a draw."""
        desk.stage_draw(draw_id)
        return {
            "draw_id": draw_id,
            "deadline": desk.draws[draw_id].proxy_deadline.isoformat(),
            "proxies": [nomination_view(n) for n in desk.proxies.nominations(draw_id)],
        }

    @app.post("/api/stage/draws/{draw_id}/proxies", tags=["stage"])
    async def nominate(draw_id: str, body: ProxyBody, actor: Proxies) -> dict[str, Any]:
        """A member's proxy form: one proxy per member, before the deadline."""
        await desk.nominate(draw_id, actor, body.command_id, body.member, body.name,
                            body.document, body.last_digits, body.proxy_card)  # fmt: skip
        nom = desk.proxies.proxy_for(draw_id, body.member)
        return {"draw_id": draw_id, "proxy": None if nom is None else nomination_view(nom)}

    @app.get("/api/stage/screen/{draw_id}", tags=["stage"])
    async def screen(draw_id: str, _a: Screen, after: int | None = None) -> dict[str, Any]:
        """The audience's view.  With `after` (the version last seen) the answer waits,
        up to 20 s, for something newer: the screen updates as soon as a pick commits."""
        desk.stage_draw(draw_id)
        if after is not None and after >= desk.version:
            q = desk.subscribe()
            try:
                async with asyncio.timeout(LONG_POLL_SECONDS):
                    while desk.version <= after:
                        await q.get()
            except TimeoutError:
                pass
            finally:
                desk.unsubscribe(q)
        return await desk.settled(lambda: screen_view(desk, draw_id))

    @app.get("/api/prizes", tags=["prizes"])
    async def prizes(_a: Prizes, state: str = "all") -> dict[str, Any]:
        """Prize letters: awaiting collection, overdue (past the window), collected."""
        now = service.clock()
        views = [letter_view(desk, letter, now) for letter in desk.prizes.letters()]
        if state != "all":
            views = [v for v in views if v["state"] == state]
        return {"prizes": views, "server_time": now.isoformat()}

    @app.get("/api/prizes/{letter_no}", tags=["prizes"])
    async def prize(letter_no: str, _a: Prizes) -> dict[str, Any]:
        letter = desk.prizes.letter(letter_no)
        if letter is None:
            raise HTTPException(404, f"no prize letter {letter_no!r}")
        return letter_view(desk, letter, service.clock())

    @app.post("/api/prizes/{letter_no}/collect", tags=["prizes"])
    async def collect(letter_no: str, body: CollectBody, actor: Rewards) -> dict[str, Any]:
        """The winner (never a proxy) collects the prize and signs for it."""
        letter = await desk.collect(letter_no, actor, body.command_id, body.document,
                                    body.last_digits, _signature(body.signature))  # fmt: skip
        return letter_view(desk, letter, service.clock())

    @app.post("/api/prizes/{letter_no}/forfeit", tags=["prizes"])
    async def forfeit(letter_no: str, body: ForfeitBody, actor: Rewards) -> dict[str, Any]:
        """Close an overdue prize (past its window, never collected) with a reason."""
        letter = await desk.forfeit(letter_no, actor, body.command_id, body.reason)
        return letter_view(desk, letter, service.clock())

    def _letter(letter_no: str) -> Any:
        letter = desk.prizes.letter(letter_no)
        if letter is None:
            raise HTTPException(404, f"no prize letter {letter_no!r}")
        return letter

    @app.get("/prizes/{letter_no}/letter", tags=["prizes"], response_class=HTMLResponse)
    async def letter_page(letter_no: str, _a: PrizePage) -> HTMLResponse:
        """The prize letter, print-styled for A4."""
        letter = _letter(letter_no)
        promo = desk.draws[letter.draw_id].program_name
        return HTMLResponse(
            letter_html(letter, site_name=desk.site_name, promotion_name=promo, tz=tz)
        )

    @app.get("/prizes/{letter_no}/letter.pdf", tags=["prizes"])
    async def letter_file(letter_no: str, _a: PrizePage) -> Response:
        """The prize letter as a PDF (A4)."""
        letter = _letter(letter_no)
        promo = desk.draws[letter.draw_id].program_name
        pdf = await asyncio.to_thread(
            letter_pdf, letter, site_name=desk.site_name, promotion_name=promo, tz=tz
        )
        return Response(
            pdf,
            media_type="application/pdf",
            headers={"content-disposition": f'inline; filename="{letter_no}.pdf"'},
        )

"""The daemon's HTTP server (FastAPI): health, metrics, the API, and the staff pages.

Programs call `/api` with a bearer token belonging to a configured user; people sign in
on `/login` and use the handheld, dispatch, ops, admin and audit pages with a cookie
(raps.auth, raps.pages).  Every route declares the roles it admits through one Guard
(the table is in raps.auth), and the OpenAPI document shows them as `x-roles`.  Only
/healthz, /readyz, /metrics (optionally behind its own bearer token) and the login page
are open.  Commands carry a `command_id` chosen by the caller, so a retry after a lost
connection returns the first answer instead of drawing again.
"""

import asyncio
import gc
import hmac
from collections.abc import Awaitable, Callable
from html import escape
from typing import Annotated, Any, Literal
from urllib.parse import quote

from fastapi import Depends, FastAPI, HTTPException, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, Field
from sqlalchemy import text
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from raps.audit import export_belongs
from raps.auth import (
    AUDITORS,
    READERS,
    RUNNERS,
    SIGNED_IN,
    AuthError,
    Public,
    publish_access,
    route_access,
)
from raps.body_limit import BodyLimits, invalid_request
from raps.claim_routes import register_claim_routes
from raps.config import Config
from raps.game_routes import register_game_routes
from raps.identity_routes import register_identity_routes
from raps.pages import register_pages
from raps.prize_report_routes import register_prize_report_routes
from raps.report_routes import register_report_routes
from raps.schedule_routes import register_schedule_routes
from raps.service import CommandResult, Service, UnknownSession
from raps.session_views import command_answer
from raps.stage_routes import register_stage_routes
from raps.storage_health import JournalUnavailable
from raps.store.journal import session_export
from raps.ticket_routes import register_ticket_routes
from raps.web_context import TokenUsers, WebContext
from raps.witness_client import WitnessDenied, WitnessUnavailable
from selector.records import Actor
from selector.session import SessionError, SessionState

__all__ = ["AUDITORS", "READERS", "RUNNERS", "TokenUsers", "create_app"]

LIVE_CONFIRMATION = "LIVE"
READY_PROBE_SECONDS = 2.0

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)


class CommandBody(BaseModel):
    command_id: str = Field(min_length=1, max_length=128)


class OpenBody(CommandBody):
    # a signed-in person opening a live session types this word (LIVE); programs need not
    confirm: str | None = Field(default=None, max_length=32)
    # an admin opening a live session outside its window types why (journaled)
    override_reason: str | None = Field(default=None, min_length=3, max_length=200)


class DrawBody(CommandBody):
    kind: Literal["slots", "tables"]
    override_reason: str | None = Field(default=None, min_length=3, max_length=200)


class AwardBody(CommandBody):
    amount: int = Field(ge=0)
    kind: Literal["cash", "plus_play", "voucher"]
    envelope: str = Field(min_length=1, max_length=32)


class VoidBody(CommandBody):
    reason: str = Field(min_length=1, max_length=200)


class CloseBody(CommandBody):
    force: bool = False


def _forbidden_page(detail: str) -> str:
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="icon" href="data:,"><link rel="stylesheet" href="/static/public/app.css">'
        "<title>Not for this role - RAPS</title></head>"
        '<body class="plain"><main class="notice"><h1>Not for your role</h1>'
        f"<p>{escape(detail)}.</p>"
        '<p><a class="button" href="/">My page</a> '
        '<a class="button secondary" href="/login">Sign in as someone else</a></p>'
        "</main></body></html>"
    )


class Gatekeeper:
    """ASGI middleware: security headers on every answer, and an early refusal of any
    request without credentials to a route that is not public (including unknown paths,
    and before a request body is parsed).  The route's own Guard then checks the role."""

    def __init__(self, app: ASGIApp, web: WebContext, fastapi_app: FastAPI) -> None:
        self.app = app
        self.web = web
        self.fastapi_app = fastapi_app

    def _is_public(self, scope: Scope) -> bool:
        for route in self.fastapi_app.router.routes:
            if isinstance(route, APIRoute):
                match, _ = route.matches(scope)
                if match == Match.FULL:
                    access = route_access(route)
                    return access is not None and access.roles is None
        return False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers: list[tuple[bytes, bytes]] = list(message.get("headers", []))
                names = {k.lower() for k, _ in headers}
                extra = [
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"),
                    (b"x-frame-options", b"DENY"),
                    (b"content-security-policy", CSP.encode()),
                ]
                if b"cache-control" not in names:
                    extra.append((b"cache-control", b"no-store"))
                message["headers"] = headers + extra
            await send(message)

        request = Request(scope)
        await self.web.sessions.ready()  # the sign-ins stored before a restart, once
        has_bearer = "authorization" in request.headers
        signed_in = self.web.sessions.get(request.cookies.get(self.web.cookie)) is not None
        if not (has_bearer or signed_in or self._is_public(scope)):
            path = scope["path"]
            response: Response
            wants_page = scope["method"] == "GET" and not path.startswith(("/api/", "/static/"))
            if wants_page and path != "/openapi.json":
                response = RedirectResponse(f"/login?next={_quote(path)}", 303)
            else:
                response = JSONResponse(
                    {"detail": "sign in first"}, 401, {"WWW-Authenticate": "Bearer"}
                )
            await response(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)


def _quote(path: str) -> str:
    return quote(path, safe="/")


def create_app(service: Service, cfg: Config) -> FastAPI:
    async def restored(request: Request) -> None:
        """A closed session a start deferred, restored before any route reads it (the
        routes name it in the path, the live stream in `session`)."""
        sid = request.path_params.get("session_id") or request.query_params.get("session")
        if sid:
            await service.ensure(sid)

    app = FastAPI(
        title="RAPS floor service",
        version="1",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,  # served below, to signed-in callers only
        dependencies=[Depends(restored)],
    )
    web = WebContext(service, cfg)
    app.state.web = web
    metrics_token = cfg.http.metrics_token.get_secret_value() if cfg.http.metrics_token else None

    def role(allowed: frozenset[str]) -> Callable[..., Awaitable[Actor]]:
        return web.guard(allowed)

    Runner = Annotated[Actor, Depends(role(RUNNERS))]
    Reader = Annotated[Actor, Depends(role(READERS))]
    Auditor = Annotated[Actor, Depends(role(AUDITORS))]
    SignedIn = Annotated[Actor, Depends(role(SIGNED_IN))]
    public = [Depends(Public())]

    @app.exception_handler(AuthError)
    async def _auth(request: Request, e: AuthError) -> Response:
        if e.page and e.status == 401:
            return RedirectResponse(f"/login?next={_quote(request.url.path)}", 303)
        if e.page and e.status == 403:
            return HTMLResponse(_forbidden_page(e.detail), e.status)
        headers = {"WWW-Authenticate": "Bearer"} if e.status == 401 else {}
        if e.retry_after is not None:
            headers["Retry-After"] = str(e.retry_after)
        return JSONResponse({"detail": e.detail}, e.status, headers)

    @app.exception_handler(UnknownSession)
    async def _unknown(_r: Request, e: UnknownSession) -> JSONResponse:
        return JSONResponse({"detail": f"no session {e.args[0]!r}"}, 404)

    @app.exception_handler(SessionError)
    async def _refused(_r: Request, e: SessionError) -> JSONResponse:
        return JSONResponse({"detail": str(e)}, 409)

    @app.exception_handler(JournalUnavailable)
    async def _journal(_r: Request, e: JournalUnavailable) -> JSONResponse:
        return JSONResponse({"detail": str(e)}, 503)

    @app.exception_handler(WitnessUnavailable)
    async def _no_witness(_r: Request, e: WitnessUnavailable) -> JSONResponse:
        return JSONResponse({"detail": str(e)}, 503)  # nothing drawn: draw again to retry

    @app.exception_handler(WitnessDenied)
    async def _witness_refused(_r: Request, e: WitnessDenied) -> JSONResponse:
        return JSONResponse({"detail": str(e)}, 409)

    @app.get("/healthz", tags=["health"], dependencies=public)
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", tags=["health"], dependencies=public)
    async def readyz() -> JSONResponse:
        ready, down = service.ready()
        storage = service.storage_ok and await storage_answers()
        ready = ready and storage
        service.metrics.ready.set(1 if ready else 0)
        body = {"ready": ready, "storage": storage, "sources_down": down}
        if service.journal.refused is not None:  # why it takes no entry (operations.md)
            body["journal_refused"] = service.journal.refused
        return JSONResponse(body, 200 if ready else 503)

    async def storage_answers() -> bool:
        """A round trip to the database: a quiet floor writes nothing that would fail."""
        try:
            async with asyncio.timeout(READY_PROBE_SECONDS), service.engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
        except Exception:
            # aiosqlite leaves the worker thread of a failed connect to the garbage
            # collector; collect now, while its event loop still runs to hear from it
            gc.collect()
            return False
        return True

    @app.get("/metrics", tags=["health"], response_class=PlainTextResponse, dependencies=public)
    async def metrics(request: Request) -> Response:
        if metrics_token is not None:
            given = request.headers.get("authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {metrics_token}".encode()):
                raise HTTPException(401, "metrics need the bearer token")
        service.update_pool_gauges()
        return Response(service.metrics.render(), media_type="text/plain; version=0.0.4")

    @app.get("/openapi.json", tags=["meta"])
    async def openapi(_a: SignedIn) -> JSONResponse:
        return JSONResponse(app.openapi())

    @app.get("/api/sessions", tags=["sessions"])
    async def sessions(_a: Reader) -> list[dict[str, Any]]:
        return [
            {
                "session_id": s.session_id,
                "promotion_id": s.promotion_id,
                "state": s.state.value,
                "rehearsal": s.rehearsal,
                "picks": len(s.picks),
                "starts": service.planner.plan(s.session_id).starts.isoformat(),
                "claim_seconds": s.rules.claim_seconds,
            }
            for s in service.sessions.values()
        ] + [  # closed, their records still being restored after a start: picks unknown
            {
                "session_id": d.session_id,
                "promotion_id": d.promotion_id,
                "state": d.state.value,
                "rehearsal": d.rehearsal,
                "picks": None,
                "starts": (plan := service.planner.plan(d.session_id)).starts.isoformat(),
                "claim_seconds": plan.claim_seconds,
            }
            for d in list(service.deferred.values())
        ]

    @app.get("/api/sessions/{session_id}", tags=["sessions"])
    async def session(session_id: str, _a: Reader) -> dict[str, Any]:
        return service.summary(session_id)

    @app.get("/api/pools", tags=["pools"])
    async def pools(_a: Reader) -> list[dict[str, Any]]:
        out = []
        for promo in service.planner.promotions():
            counts = service.floor.eligible_counts(promo.promotion_id)
            for (kind, area, tier), n in sorted(counts.items()):
                out.append(
                    {
                        "promotion_id": promo.promotion_id,
                        "pool": kind,
                        "area": area,
                        "tier": tier,
                        "eligible": n,
                    }
                )
        return out

    @app.get("/api/journal/head", tags=["journal"])
    async def head(_a: Reader) -> dict[str, Any]:
        """The head, and the same signed by the site's head key (raps.heads): what an
        inspector keeps to hold the journal to later (`raps verify --head FILE`)."""
        h = service.journal.head
        if h is None:
            return {"seq": 0, "hash": None, "signed": None}
        return {"seq": h.seq, "hash": h.hash, "signed": service.heads.head(h)}

    @app.get(
        "/api/sessions/{session_id}/export", tags=["journal"], response_class=PlainTextResponse
    )
    async def export(session_id: str, _a: Auditor) -> Response:
        service.session(session_id)
        lines = await session_export(service.journal, session_id, export_belongs(session_id))
        if lines is None:
            return Response("", media_type="application/x-ndjson")
        return Response("\n".join(lines) + "\n", media_type="application/x-ndjson")

    def answer(result: CommandResult) -> dict[str, Any]:
        return command_answer(result.outcome, result.head)

    @app.post("/api/sessions/{session_id}/open", tags=["commands"])
    async def open_(
        session_id: str, body: OpenBody, actor: Runner, request: Request
    ) -> dict[str, Any]:
        s = service.session(session_id)
        by_page = getattr(request.state, "web_session", None) is not None
        if (
            by_page
            and not s.rehearsal
            and s.state == SessionState.SCHEDULED
            and not s.answered(body.command_id)
            and (body.confirm or "").strip().upper() != LIVE_CONFIRMATION
        ):
            raise HTTPException(
                400, f"session {session_id} is live: type {LIVE_CONFIRMATION} to open it"
            )
        return answer(await service.open(session_id, actor, body.command_id, body.override_reason))

    @app.post("/api/sessions/{session_id}/draw", tags=["commands"])
    async def draw(session_id: str, body: DrawBody, actor: Runner) -> dict[str, Any]:
        return answer(
            await service.draw(session_id, actor, body.command_id, body.kind, body.override_reason)
        )

    @app.post("/api/sessions/{session_id}/picks/{pick}/verify", tags=["commands"])
    async def verify(
        session_id: str, pick: int, body: CommandBody, actor: Runner
    ) -> dict[str, Any]:
        return answer(await service.verify(session_id, actor, body.command_id, pick))

    @app.post("/api/sessions/{session_id}/picks/{pick}/award", tags=["commands"])
    async def award(session_id: str, pick: int, body: AwardBody, actor: Runner) -> dict[str, Any]:
        return answer(
            await service.award(
                session_id, actor, body.command_id, pick, body.amount, body.kind, body.envelope
            )
        )

    @app.post("/api/sessions/{session_id}/picks/{pick}/no-show", tags=["commands"])
    async def no_show(
        session_id: str, pick: int, body: CommandBody, actor: Runner
    ) -> dict[str, Any]:
        return answer(await service.no_show(session_id, actor, body.command_id, pick))

    @app.post("/api/sessions/{session_id}/picks/{pick}/void", tags=["commands"])
    async def void(session_id: str, pick: int, body: VoidBody, actor: Runner) -> dict[str, Any]:
        return answer(await service.void(session_id, actor, body.command_id, pick, body.reason))

    @app.post("/api/sessions/{session_id}/close", tags=["commands"])
    async def close(session_id: str, body: CloseBody, actor: Runner) -> dict[str, Any]:
        return answer(await service.close(session_id, actor, body.command_id, body.force))

    register_claim_routes(app, web)
    register_pages(app, web)
    register_ticket_routes(app, web)
    register_prize_report_routes(app, web)  # before /api/prizes/{letter_no} matches it
    register_stage_routes(app, web)
    register_game_routes(app, web)
    register_schedule_routes(app, web)
    register_report_routes(app, web)
    register_identity_routes(app, web)
    publish_access(app.routes)
    # inside the Gatekeeper: a stranger to a private route is refused before any body
    app.add_exception_handler(RequestValidationError, invalid_request)
    app.add_middleware(BodyLimits, routes=app.router.routes,
                       max_body_bytes=cfg.http.max_body_bytes,
                       max_upload_bytes=cfg.http.max_upload_bytes)  # fmt: skip
    app.add_middleware(Gatekeeper, web=web, fastapi_app=app)
    return app

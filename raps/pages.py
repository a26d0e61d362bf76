"""The staff pages and what they call besides the API: sign-in, live updates, the floor map.

Routes (roles from the table in raps.auth; every one is checked by its Guard):

| route | roles | |
| --- | --- | --- |
| GET /login, POST /login | public | the sign-in page and its form (JSON), rate-limited |
| POST /logout | signed in | ends the cookie session |
| GET / | signed in | redirects to the role's page |
| GET /handheld | marketing, admin | the marketing handheld |
| GET /dispatch | security, admin | the security dispatch wall screen |
| GET /ops | ops, admin | pools and health |
| GET /admin | admin | users and config |
| GET /audit | auditor, admin | journal export and verification data |
| GET /stage | stage host, admin | the stage host's page: run a ticket draw |
| GET /rewards | rewards desk, admin | the Rewards desk: prize letters, collection, proxies |
| GET /stage/screen | public | the audience's screen (its display token in the fragment) |
| GET /static/public/{name} | public | the login page's style and script, the receipt's style |
| GET /static/{name} | signed in | the other pages' scripts and styles |
| GET /handheld-sw.js | public | the handheld's offline shell (a service worker, scope /handheld) |
| GET /dispatch-sw.js | public | the dispatch offline shell (a service worker, scope /dispatch) |
| GET /report | marketing, admin, auditor | the end-of-session report (raps.report_routes) |
| GET /api/me | signed in | who am I, the CSRF token, the server's clock |
| GET /api/stream | marketing, security, admin | server-sent events: session summaries |
| GET /api/floor.svg | security, admin | the floor map (raps.floormap) |
| GET /api/sessions/{id}/verification | every staff role | commitment, seed, pool digests, head |
| GET /api/admin/users, /api/admin/config | admin | users and config, no secrets |
| POST /api/admin/users/{name}/sign-out | admin | ends a user's page sessions (lost handheld) |
"""

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Request, Response
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, StreamingResponse
from pydantic import BaseModel, Field
from sqlalchemy.engine import make_url

from raps.auth import (
    ADMINS,
    AUDITORS,
    CALENDAR_READERS,
    DISPATCHERS,
    OPERATORS,
    READERS,
    REPORT_READERS,
    REWARDS_DESKS,
    RUNNERS,
    SIGNED_IN,
    STAGE_HOSTS,
    WATCHERS,
    Public,
    home_for,
    safe_next,
    same_origin,
)
from raps.dispatch_views import with_resolutions
from raps.floormap import build_map, render_svg
from raps.logs import get_logger
from raps.ticket_routes import RECEIPT_CSS
from raps.web_context import WebContext
from selector.fairness import commitment
from selector.records import Actor

STATIC = Path(__file__).parent / "static"
# the live stream's heartbeat: a screen that hears nothing for 2.5 s knows it is out of
# date (a stalled connection raises no error) and reconnects
PING_SECONDS = 1.0
_CLOSE = "\x00close"
_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}

_VERIFY_KEYS = ("pick", "kind", "slot", "attempt", "state", "pool_size", "pool_digest")

PAGES: dict[str, tuple[str, frozenset[str]]] = {
    # path: (file in static/pages, roles)
    "/handheld": ("handheld.html", RUNNERS),
    "/dispatch": ("dispatch.html", DISPATCHERS),
    "/ops": ("ops.html", OPERATORS),
    "/admin": ("admin.html", ADMINS),
    "/audit": ("audit.html", AUDITORS),
    "/stage": ("stage.html", STAGE_HOSTS),
    "/rewards": ("rewards.html", REWARDS_DESKS),
    "/calendar": ("calendar.html", CALENDAR_READERS),
}


class LoginBody(BaseModel):
    user: str = Field(min_length=1, max_length=64)
    secret: str = Field(min_length=1, max_length=256)
    next: str | None = Field(default=None, max_length=512)


class StreamHub:
    """The open live-update streams; `close()` ends them all (the daemon stopping)."""

    def __init__(self) -> None:
        self.queues: set[asyncio.Queue[str]] = set()
        self.closed = False

    def close(self) -> None:
        self.closed = True
        for q in list(self.queues):
            with contextlib.suppress(asyncio.QueueFull):
                q.put_nowait(_CLOSE)


def _files(folder: Path, suffixes: tuple[str, ...]) -> dict[str, bytes]:
    if not folder.is_dir():
        return {}
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.suffix in suffixes}


def register_pages(app: FastAPI, web: WebContext) -> None:
    service, cfg = web.service, web.cfg
    log = get_logger(site=cfg.site.id)
    hub = StreamHub()
    app.state.streams = hub
    pages = _files(STATIC / "pages", (".html",))
    public_files = _files(STATIC / "public", (".js", ".css"))
    # the ticket receipt's styles: a kiosk prints it with its token, never signed in
    public_files["receipt.css"] = RECEIPT_CSS.encode()
    private_files = _files(STATIC, (".js", ".css"))
    # each page's worker is its own settings with the offline shell they share appended
    shared_shell = (STATIC / "worker" / "offline-shell.js").read_bytes()
    worker = (STATIC / "worker" / "handheld-sw.js").read_bytes() + shared_shell
    dispatch_worker = (STATIC / "worker" / "dispatch-sw.js").read_bytes() + shared_shell
    floor_svg: list[str] = []

    SignedIn = Annotated[Actor, Depends(web.guard(SIGNED_IN))]
    Watcher = Annotated[Actor, Depends(web.guard(WATCHERS))]
    Dispatcher = Annotated[Actor, Depends(web.guard(DISPATCHERS))]
    Reader = Annotated[Actor, Depends(web.guard(READERS))]
    Admin = Annotated[Actor, Depends(web.guard(ADMINS))]
    public = [Depends(Public())]
    public_page = [Depends(Public(page=True))]

    def html(name: str) -> HTMLResponse:
        return HTMLResponse(pages[name].decode())

    async def keep_sign_ins() -> None:
        """Write sign-ins and sign-outs to the database before answering (a restart
        then changes nothing); a failed write stays queued and is tried again."""
        try:
            await web.sessions.persist()
        except Exception as e:
            log.warning("sign-ins not stored yet; retried on the next change",
                        error=type(e).__name__)  # fmt: skip

    # ------------------------------------------------------------------ sign-in

    @app.get("/login", tags=["pages"], response_class=HTMLResponse, dependencies=public_page)
    async def login_page() -> HTMLResponse:
        return html("login.html")

    @app.get("/stage/screen", tags=["pages"], response_class=HTMLResponse,
             dependencies=public_page)  # fmt: skip
    async def stage_screen_page() -> HTMLResponse:
        # a shell without data: its script reads the draw and token from the fragment
        return html("stage-screen.html")

    @app.post("/login", tags=["auth"], dependencies=public)
    async def login(body: LoginBody, request: Request) -> Response:
        if not same_origin(request):
            raise HTTPException(403, "sign in from this server's own login page")
        address = request.client.host if request.client else "?"
        known = body.user in web.passwords.users
        wait = web.limiter.retry_after(body.user, address)
        if wait > 0:
            log.warning("sign-in refused: too many attempts", user=body.user if known else None,
                        address=address)  # fmt: skip
            return JSONResponse(
                {"detail": f"too many attempts; try again in {int(wait) + 1} s"},
                429,
                {"Retry-After": str(int(wait) + 1)},
            )
        user = await web.passwords.check(body.user, body.secret)
        if user is None:
            web.limiter.failed(body.user, address)
            # a name that is no user may be a password typed in the wrong box: never log it
            log.warning("sign-in failed", user=body.user if known else None, address=address)
            return JSONResponse({"detail": "wrong user name or PIN / password"}, 401)
        web.limiter.succeeded(body.user, address)
        web.sessions.end(request.cookies.get(web.cookie))
        token, _ = web.sessions.create(user.name, user.role)
        await keep_sign_ins()
        log.info("signed in", user=user.name, role=user.role, address=address)
        response = JSONResponse(
            {
                "user": user.name,
                "role": user.role,
                "next": safe_next(body.next, home_for(user.role)),
            }
        )
        response.set_cookie(
            web.cookie,
            token,
            max_age=int(web.sessions.lifetime),
            path="/",
            secure=cfg.http.secure_cookies,
            httponly=True,
            samesite="strict",
        )
        return response

    @app.post("/logout", tags=["auth"])
    async def logout(actor: SignedIn, request: Request) -> Response:
        web.sessions.end(request.cookies.get(web.cookie))
        await keep_sign_ins()
        log.info("signed out", user=actor.user, role=actor.role)
        response = JSONResponse({"next": "/login"})
        response.delete_cookie(web.cookie, path="/", secure=cfg.http.secure_cookies,
                               httponly=True, samesite="strict")  # fmt: skip
        return response

    # -------------------------------------------------------------------- pages

    page_guards = {path: web.guard(roles, page=True) for path, (_, roles) in PAGES.items()}

    SignedInPage = Annotated[Actor, Depends(web.guard(SIGNED_IN, page=True))]

    @app.get("/", tags=["pages"], response_class=RedirectResponse)
    async def home(actor: SignedInPage) -> RedirectResponse:
        return RedirectResponse(home_for(actor.role), 303)

    def add_page(path: str, file: str) -> None:
        async def page() -> HTMLResponse:
            return html(file)

        app.get(path, tags=["pages"], response_class=HTMLResponse,
                dependencies=[Depends(page_guards[path])], name=f"page{path.replace('/', '_')}",
                )(page)  # fmt: skip

    for path, (file, _) in PAGES.items():
        add_page(path, file)

    @app.get("/static/public/{name}", tags=["static"], dependencies=public)
    async def public_static(name: str) -> Response:
        return _static(public_files, name)

    @app.get("/static/{name}", tags=["static"])
    async def private_static(name: str, _a: SignedIn) -> Response:
        return _static(private_files, name)

    @app.get("/handheld-sw.js", tags=["static"], dependencies=public)
    async def handheld_worker() -> Response:
        # public: a script without data, which the browser checks for updates even
        # while no one is signed in; from the root, so it may take the scope /handheld
        # (docs/pages.md "Offline"); no-cache: a new version is seen at the next load
        return Response(worker, media_type=_TYPES[".js"], headers={"Cache-Control": "no-cache"})

    @app.get("/dispatch-sw.js", tags=["static"], dependencies=public)
    async def dispatch_worker_script() -> Response:
        # the same for the dispatch screen (scope /dispatch): the last state on a reload
        # with no network, with its STALE banner
        return Response(
            dispatch_worker, media_type=_TYPES[".js"], headers={"Cache-Control": "no-cache"}
        )

    @app.get("/report", tags=["pages"], response_class=HTMLResponse,
             dependencies=[Depends(web.guard(REPORT_READERS, page=True))])  # fmt: skip
    async def report_page() -> HTMLResponse:
        return html("report.html")

    # --------------------------------------------------------------- page APIs

    @app.get("/api/me", tags=["auth"])
    async def me(actor: SignedIn, request: Request) -> dict[str, Any]:
        ws = getattr(request.state, "web_session", None)
        return {
            "user": actor.user,
            "role": actor.role,
            "csrf_token": ws.csrf if ws is not None else None,
            "home": home_for(actor.role),
            "pages": [p for p, (_, roles) in PAGES.items() if actor.role in roles],
            "site": {"id": cfg.site.id, "name": cfg.site.name, "timezone": cfg.site.timezone},
            # the promotions' names (as the schedule has them), for headers, not raw ids
            "promotions": {k: f.name for k, f in service.planner.schedule.facts.items()},
            # how each promotion's PA line names a winner ([[promotions]] announce_name)
            "announce": {p.id: p.announce_name for p in cfg.promotion_entries},
            "now": service.clock().isoformat(),
        }

    def session_view(session_id: str) -> dict[str, Any]:
        view = service.summary(session_id)  # pick_view masks cards and shortens names
        s = service.session(session_id)
        view["starts"] = service.planner.plan(session_id).starts.isoformat()
        view["claim_seconds"] = s.rules.claim_seconds
        # when each pick was resolved and by whom, from the journal's actors (dispatch)
        return with_resolutions(view, s.records)

    def frame(session_id: str) -> str:
        data = {"now": service.clock().isoformat(), "session": session_view(session_id)}
        return f"event: summary\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"

    @app.get("/api/stream", tags=["live"], response_class=StreamingResponse)
    async def stream(_a: Watcher, session: str | None = None) -> StreamingResponse:
        """Server-sent events: every session's summary now, then a session's summary each
        time its journal grows (draws, resolutions, claim timer), within milliseconds; a
        `ping` heartbeat with the server's clock after each second without one."""
        if session is not None:
            service.session(session)  # 404 for an unknown session
        q = service.subscribe()
        hub.queues.add(q)

        async def events() -> AsyncIterator[str]:
            try:
                yield "retry: 1000\n\n"
                for sid in [session] if session else list(service.sessions):
                    yield frame(sid)
                while not hub.closed:
                    try:
                        batch = [await asyncio.wait_for(q.get(), PING_SECONDS)]
                    except TimeoutError:
                        now = json.dumps({"now": service.clock().isoformat()})
                        yield f"event: ping\ndata: {now}\n\n"
                        continue
                    while not q.empty():
                        batch.append(q.get_nowait())
                    if _CLOSE in batch:
                        break
                    for sid in dict.fromkeys(batch):
                        if session is None or sid == session:
                            yield frame(sid)
            finally:
                service.unsubscribe(q)
                hub.queues.discard(q)

        return StreamingResponse(
            events(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    @app.get("/api/floor.svg", tags=["live"], response_class=Response)
    async def floor_map(_a: Dispatcher) -> Response:
        if not floor_svg:
            floor_svg.append(render_svg(build_map(cfg)))
        return Response(
            floor_svg[0], media_type="image/svg+xml", headers={"Cache-Control": "private, no-cache"}
        )

    @app.get("/api/sessions/{session_id}/verification", tags=["journal"])
    async def verification(session_id: str, _a: Reader) -> dict[str, Any]:
        """What anyone may check of a session: the commitment and, after close, the seed
        that matches it, every pick's pool digest and size, and the journal head."""
        summary = service.summary(session_id)
        seed = summary["seed"]
        head = summary["journal_head"]
        return {
            "session_id": session_id,
            "promotion_id": summary["promotion_id"],
            "rehearsal": summary["rehearsal"],
            "state": summary["state"],
            "commitment": summary["commitment"],
            "seed": seed,
            "seed_matches_commitment": None
            if seed is None
            else commitment(bytes.fromhex(seed)) == summary["commitment"],
            "journal_head": head,
            "picks": [{k: p[k] for k in _VERIFY_KEYS} for p in summary["picks"]],
            "export": f"/api/sessions/{session_id}/export",
            "verify_command": f"raps verify {session_id}.jsonl"
            + (f" --head {head['seq']}:{head['hash']}" if head else ""),
        }

    @app.get("/api/admin/users", tags=["admin"])
    async def admin_users(_a: Admin) -> list[dict[str, Any]]:
        return [
            {
                "name": u.name,
                "role": u.role,
                "api_token": u.api_token_hash is not None,
                "signed_in": web.sessions.count(u.name),
            }
            for u in cfg.users
        ]

    @app.post("/api/admin/users/{name}/sign-out", tags=["admin"])
    async def admin_sign_out(name: str, actor: Admin) -> dict[str, Any]:
        if name not in web.passwords.users:
            raise HTTPException(404, f"no user {name!r}")
        ended = web.sessions.end_user(name)
        await keep_sign_ins()
        log.info("signed out by admin", user=name, by=actor.user, sessions=ended)
        return {"user": name, "ended": ended}

    @app.get("/api/admin/config", tags=["admin"])
    async def admin_config(_a: Admin) -> dict[str, Any]:
        return redacted_config(web)


def _static(files: dict[str, bytes], name: str) -> Response:
    body = files.get(name)
    if body is None:
        raise HTTPException(404, "no such file")
    suffix = name[name.rfind(".") :]
    headers = {"Cache-Control": "no-cache"}
    return Response(body, media_type=_TYPES[suffix], headers=headers)


def redacted_config(web: WebContext) -> dict[str, Any]:
    """The running configuration for the admin page: every secret left out."""
    cfg = web.cfg
    f = cfg.floor
    layout = cfg.layout()
    return {
        "source": cfg.source,
        "site": cfg.site.model_dump(),
        "storage": {
            "url": make_url(cfg.storage.url).render_as_string(hide_password=True),
            "snapshot_interval_seconds": cfg.storage.snapshot_interval_seconds,
            "event_flush_seconds": cfg.storage.event_flush_seconds,
        },
        "http": {
            "host": cfg.http.host,
            "port": cfg.http.port,
            "metrics_token": cfg.http.metrics_token is not None,
            "secure_cookies": cfg.http.secure_cookies,
            "session_minutes": cfg.http.session_minutes,
            "login_attempts": cfg.http.login_attempts,
            "login_window_seconds": cfg.http.login_window_seconds,
        },
        "mqtt": {
            "enabled": cfg.mqtt.enabled,
            "embedded": cfg.mqtt.embedded,
            "host": cfg.mqtt.host,
            "port": cfg.mqtt.port,
            "tls": cfg.mqtt.tls,
            "username": cfg.mqtt.username is not None,
            "topic_prefix": cfg.mqtt.topic_prefix,
        },
        "floor": {
            "simulated": f.simulate is not None,
            "positions": f.simulate is None and f.positioned,
            "machines": len(layout.machines),
            "tables": len(layout.tables),
            "areas": sorted(layout.areas()),
            "idle_seconds": f.idle_seconds,
        },
        "promotions": [
            {
                "id": p.id,
                "name": p.name or p.id,
                "threshold_points": p.threshold_points,
                "window": f"{p.window.start:%H:%M}-{p.window.end:%H:%M}",
                "tiers": list(p.tiers),
                "pool_kinds": list(p.pool_kinds),
                "areas_excluded": list(p.areas_excluded),
            }
            for p in cfg.promotion_entries
        ],
        "sessions": [
            {
                "id": s.id,
                "promotion": s.promotion,
                "starts": cfg.session_start(s).isoformat(),
                "quotas": {"slots": s.quotas.slots, "tables": s.quotas.tables},
                "claim_seconds": s.claim_seconds,
                "rehearsal": s.rehearsal,
            }
            for s in cfg.sessions
        ],
        "users": [{"name": u.name, "role": u.role} for u in cfg.users],
    }

"""The daemon's HTTP API (FastAPI): health, metrics, sessions and their commands.

Every `/api` route needs a bearer token belonging to a configured user, and checks
the user's role.  Commands carry a `command_id` chosen by the caller, so a retry
after a lost connection returns the first answer instead of drawing again.
"""

import hashlib
import hmac
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, HTTPException, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field

from raps.config import Config, check_secret
from raps.service import CommandResult, JournalUnavailable, Service, UnknownSession, pick_view
from raps.store.journal import export_lines, with_pools
from selector.records import Actor
from selector.session import SessionError

RUNNERS = frozenset({"marketing", "admin"})
READERS = frozenset({"marketing", "security", "ops", "admin", "auditor"})
AUDITORS = frozenset({"auditor", "admin"})

_bearer = HTTPBearer(auto_error=False)


class CommandBody(BaseModel):
    command_id: str = Field(min_length=1, max_length=128)


class DrawBody(CommandBody):
    kind: Literal["slots", "tables"]


class AwardBody(CommandBody):
    amount: int = Field(ge=0)
    kind: Literal["cash", "plus_play", "voucher"]
    envelope: str = Field(min_length=1, max_length=32)


class VoidBody(CommandBody):
    reason: str = Field(min_length=1, max_length=200)


class CloseBody(CommandBody):
    force: bool = False


class TokenUsers:
    """Resolves API tokens to users; a verified token is cached by its SHA-256."""

    def __init__(self, cfg: Config) -> None:
        self.users = [u for u in cfg.users if u.api_token_hash]
        self._cache: dict[bytes, Actor] = {}

    def resolve(self, token: str) -> Actor | None:
        key = hashlib.sha256(token.encode()).digest()
        actor = self._cache.get(key)
        if actor is not None:
            return actor
        for u in self.users:
            assert u.api_token_hash is not None
            if check_secret(token, u.api_token_hash):
                actor = self._cache[key] = Actor(u.name, str(u.role))
                return actor
        return None


def create_app(service: Service, cfg: Config) -> FastAPI:
    app = FastAPI(title="RAPS floor service", version="1", docs_url=None, redoc_url=None)
    users = TokenUsers(cfg)
    metrics_token = cfg.http.metrics_token.get_secret_value() if cfg.http.metrics_token else None

    def role(allowed: frozenset[str]) -> Callable[..., Awaitable[Actor]]:
        async def dependency(
            creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
        ) -> Actor:
            if creds is None or creds.scheme.lower() != "bearer":
                raise HTTPException(401, "sign in first", {"WWW-Authenticate": "Bearer"})
            actor = users.resolve(creds.credentials)
            if actor is None:
                raise HTTPException(401, "unknown token", {"WWW-Authenticate": "Bearer"})
            if actor.role not in allowed:
                raise HTTPException(403, f"role {actor.role} may not do this")
            return actor

        return dependency

    Runner = Annotated[Actor, Depends(role(RUNNERS))]
    Reader = Annotated[Actor, Depends(role(READERS))]
    Auditor = Annotated[Actor, Depends(role(AUDITORS))]

    @app.exception_handler(UnknownSession)
    async def _unknown(_r: Request, e: UnknownSession) -> JSONResponse:
        return JSONResponse({"detail": f"no session {e.args[0]!r}"}, 404)

    @app.exception_handler(SessionError)
    async def _refused(_r: Request, e: SessionError) -> JSONResponse:
        return JSONResponse({"detail": str(e)}, 409)

    @app.exception_handler(JournalUnavailable)
    async def _journal(_r: Request, e: JournalUnavailable) -> JSONResponse:
        return JSONResponse({"detail": str(e)}, 503)

    @app.get("/healthz", tags=["health"])
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", tags=["health"])
    async def readyz() -> JSONResponse:
        down = [name for name, up in service.sources.items() if not up]
        ready = service.storage_ok and not down
        service.metrics.ready.set(1 if ready else 0)
        body = {"ready": ready, "storage": service.storage_ok, "sources_down": down}
        return JSONResponse(body, 200 if ready else 503)

    @app.get("/metrics", tags=["health"], response_class=PlainTextResponse)
    async def metrics(request: Request) -> Response:
        if metrics_token is not None:
            given = request.headers.get("authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {metrics_token}".encode()):
                raise HTTPException(401, "metrics need the bearer token")
        service.update_pool_gauges()
        return Response(service.metrics.render(), media_type="text/plain; version=0.0.4")

    @app.get("/api/sessions", tags=["sessions"])
    async def sessions(_a: Reader) -> list[dict[str, Any]]:
        return [
            {
                "session_id": s.session_id,
                "promotion_id": s.promotion_id,
                "state": s.state.value,
                "rehearsal": s.rehearsal,
                "picks": len(s.picks),
            }
            for s in service.sessions.values()
        ]

    @app.get("/api/sessions/{session_id}", tags=["sessions"])
    async def session(session_id: str, _a: Reader) -> dict[str, Any]:
        return service.summary(session_id)

    @app.get("/api/pools", tags=["pools"])
    async def pools(_a: Reader) -> list[dict[str, Any]]:
        out = []
        for promo in cfg.promotions():
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
        h = service.journal.head
        return {"seq": h.seq, "hash": h.hash} if h else {"seq": 0, "hash": None}

    @app.get(
        "/api/sessions/{session_id}/export", tags=["journal"], response_class=PlainTextResponse
    )
    async def export(session_id: str, _a: Auditor) -> Response:
        service.session(session_id)
        span = await service.journal.session_range(session_id)
        if span is None:
            return Response("", media_type="application/x-ndjson")
        entries = await service.journal.entries(*span)
        lines = export_lines(entries, await with_pools(service.journal, entries))
        return Response("\n".join(lines) + "\n", media_type="application/x-ndjson")

    def answer(result: CommandResult) -> dict[str, Any]:
        o = result.outcome
        return {
            "replayed": o.replayed,
            "no_eligible": o.no_eligible,
            "pick": pick_view(o.pick) if o.pick is not None else None,
            "journal_head": {"seq": result.head.seq, "hash": result.head.hash}
            if result.head
            else None,
        }

    @app.post("/api/sessions/{session_id}/open", tags=["commands"])
    async def open_(session_id: str, body: CommandBody, actor: Runner) -> dict[str, Any]:
        return answer(await service.open(session_id, actor, body.command_id))

    @app.post("/api/sessions/{session_id}/draw", tags=["commands"])
    async def draw(session_id: str, body: DrawBody, actor: Runner) -> dict[str, Any]:
        return answer(await service.draw(session_id, actor, body.command_id, body.kind))

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

    return app

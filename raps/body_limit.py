"""Request-body limits, per route, before anything reads or parses a body.

Without one, a 200 MB body to the public /login was read whole into memory (issue 16).
`BodyLimits` is a pure ASGI middleware that picks each request's limit from the route it
is for (`http.max_body_bytes` for every route, `http.max_upload_bytes` for the few in
UPLOAD_ROUTES, or a route's own FastAPI `max_body_size`), answers 413 at once when the
declared Content-Length is over it, and otherwise hands the request to Starlette's
RequestBodyLimitMiddleware, which counts the bytes of a streamed (chunked) body as they
arrive and stops with 413 the moment they pass the limit: the body is never buffered
beyond the limit.  The server (uvicorn) reads and drops whatever the client still sends
after the answer, keeping the connection, so the client does see the 413 (closing at
once would reset the connection under the client's answer).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from fastapi import Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.datastructures import Headers
from starlette.middleware.body_limit import RequestBodyLimitMiddleware
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Receive, Scope, Send

# (method, route path) of the routes that take more than a command: the prize collection
# carries the winner's drawn signature, a PNG of up to 512 KB (raps.stage_routes) as base64
UPLOAD_ROUTES = frozenset({("POST", "/api/prizes/{letter_no}/collect")})


def too_large(limit: int) -> JSONResponse:
    return JSONResponse({"detail": f"request body too large: at most {limit} bytes"}, 413)


class BodyLimits:
    """ASGI middleware: each request's body limited to its route's size (see module)."""

    def __init__(
        self,
        app: ASGIApp,
        routes: Iterable[BaseRoute],
        max_body_bytes: int,
        max_upload_bytes: int,
        uploads: frozenset[tuple[str, str]] = UPLOAD_ROUTES,
    ) -> None:
        self.app = app
        self.default = max_body_bytes
        self._routes = routes
        self._upload = max_upload_bytes
        self._uploads = uploads
        self._table: list[tuple[re.Pattern[str], frozenset[str], int]] | None = None
        self._limiters: dict[int, RequestBodyLimitMiddleware] = {}

    def _build(self) -> list[tuple[re.Pattern[str], frozenset[str], int]]:
        """The routes whose limit is not the default (built on the first request, once
        every route is registered); a listed upload route that does not exist is a bug."""
        table = []
        found: set[tuple[str, str]] = set()
        for route in self._routes:
            if not isinstance(route, APIRoute):
                continue
            methods = frozenset(route.methods or ())
            own = getattr(route, "max_body_size", None)  # FastAPI >= 0.165, per route
            upload = {(m, route.path) for m in methods} & self._uploads
            found |= upload
            limit = own if own is not None else self._upload if upload else None
            if limit is not None and limit != self.default:
                table.append((route.path_regex, methods, limit))
        missing = self._uploads - found
        if missing:
            raise RuntimeError(f"upload routes not in the app: {sorted(missing)}")
        return table

    def limit_for(self, method: str, path: str) -> int:
        if self._table is None:
            self._table = self._build()
        for regex, methods, limit in self._table:
            if method in methods and regex.match(path):
                return limit
        return self.default

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope["method"], scope["path"])
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            # refused before routing, authentication or parsing: not one byte is read
            await too_large(limit)(scope, receive, send)
            return
        limiter = self._limiters.get(limit)
        if limiter is None:
            limiter = self._limiters[limit] = RequestBodyLimitMiddleware(self.app, limit)
        await limiter(scope, receive, send)


def _encodable(error: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: error[k] for k in ("type", "loc", "msg") if k in error}
    # bytes that are not UTF-8, say: left out rather than failing the answer
    with contextlib.suppress(UnicodeDecodeError, TypeError, ValueError):
        out["input"] = jsonable_encoder(error.get("input"))
    return out


async def invalid_request(_r: Request, e: Exception) -> Response:
    """FastAPI's 422 for a body or parameter that does not validate, in a form that always
    encodes: its own echoes the input, and a lone surrogate in it ({"user": "\\ud800"})
    made the answer itself fail, a 500.  ASCII JSON escapes such text instead."""
    assert isinstance(e, RequestValidationError)
    detail = [_encodable(err) for err in e.errors()]
    return Response(json.dumps({"detail": detail}, ensure_ascii=True), 422,
                    media_type="application/json")  # fmt: skip

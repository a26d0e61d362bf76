"""Forwarded headers believed only from the configured proxies (`http.trusted_proxies`).

uvicorn's ProxyHeadersMiddleware takes X-Forwarded-For and -Proto from the peers it
trusts and rewrites the client address; X-Forwarded-Host it leaves in the request for
anyone to set.  The sign-in and CSRF checks compare a request's Origin with its host or,
behind a TLS proxy, its X-Forwarded-Host (raps.auth.same_origin): believed from any
peer, a page on another site could send a forged X-Forwarded-Host that matches its own
Origin (a non-browser client always could).  `TrustedForwarding` drops X-Forwarded-Host
unless the peer is a configured proxy, then hands the request to uvicorn's middleware;
it must see the peer before that middleware replaces it with the forwarded client, so
the daemon wraps the app with it instead of switching on uvicorn's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

_FORWARDED_HOST = b"x-forwarded-host"


class TrustedForwarding:
    """The app behind uvicorn's proxy headers, with X-Forwarded-Host kept from trusted
    proxies only; no proxy configured (the default): no forwarded header is believed."""

    def __init__(self, app: ASGIApp, trusted: Sequence[str]) -> None:
        self.proxy = ProxyHeadersMiddleware(cast(Any, app), trusted_hosts=list(trusted))
        self.trusted = self.proxy.trusted_hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            client = scope.get("client")
            headers = scope["headers"]
            if (client is None or client[0] not in self.trusted) and any(
                name == _FORWARDED_HOST for name, _ in headers
            ):
                kept = [(name, value) for name, value in headers if name != _FORWARDED_HOST]
                scope = {**scope, "headers": kept}
        await self.proxy(cast(Any, scope), cast(Any, receive), cast(Any, send))

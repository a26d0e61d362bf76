"""Every route checks its roles: proved by walking the OpenAPI document.

Each operation carries the roles its Guard admits (`x-roles`, from the one table in
raps.auth) or `x-public`.  For every non-public operation: a caller with no credentials
is refused (401, or a redirect to the login page for a page), and a caller of every role
not listed is refused with 403 — signed in on a page (cookie and CSRF token) and with a
bearer token alike; a listed role gets past the check.  The public set is exactly
health, readiness, metrics and the login page (with its own stylesheet and script).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from raps.config import ROLES
from tests.daemon_helpers import SESSION, TOKENS, Clock, floor_config, running_service
from tests.web_helpers import serving, sign_in

pytestmark = pytest.mark.asyncio

PUBLIC = {
    ("get", "/healthz"),
    ("get", "/readyz"),
    ("get", "/metrics"),
    ("get", "/login"),
    ("post", "/login"),
    ("get", "/static/public/{name}"),
}
STATE_CHANGING_ROLES = {"marketing", "admin"}


def fill(path: str) -> str:
    name = "app.css" if path.startswith("/static/public") else "handheld.js"
    if path.startswith("/api/admin/users"):
        name = "nobody"  # signs no one out when a listed role gets through
    return path.replace("{session_id}", SESSION).replace("{pick}", "1").replace("{name}", name)


async def call(c: httpx.AsyncClient, method: str, url: str) -> httpx.Response:
    """The answer's status and headers only (a stream is left at once)."""
    kwargs: dict[str, Any] = {"json": {}} if method == "post" else {}
    async with c.stream(method.upper(), url, **kwargs) as r:
        return r


async def clients(url: str) -> AsyncIterator[dict[str, httpx.AsyncClient]]:
    out = {"anonymous": httpx.AsyncClient(base_url=url)}
    for role in ROLES:
        out[f"bearer:{role}"] = httpx.AsyncClient(
            base_url=url, headers={"Authorization": f"Bearer {TOKENS[role]}"}
        )
        out[f"cookie:{role}"] = c = httpx.AsyncClient(base_url=url)
        await sign_in(c, role)
    try:
        yield out
    finally:
        for c in out.values():
            await c.aclose()


async def test_every_non_public_endpoint_refuses_strangers_and_wrong_roles(
    tmp_path: Path,
) -> None:
    cfg = floor_config(f"sqlite:///{tmp_path / 'raps.db'}", tmp_path)
    async with running_service(cfg, Clock()) as service, serving(service, cfg) as (url, _):
        async for cs in clients(url):
            anon = await cs["anonymous"].get("/openapi.json")
            assert anon.status_code == 401
            spec = (await cs["cookie:ops"].get("/openapi.json")).json()
            public: set[tuple[str, str]] = set()
            checked = 0
            for path, ops in spec["paths"].items():
                for method, op in ops.items():
                    where = f"{method.upper()} {path}"
                    if op.get("x-public"):
                        assert "x-roles" not in op, where
                        public.add((method, path))
                        continue
                    roles = set(op["x-roles"])
                    assert roles and roles <= set(ROLES), where
                    if method != "get":
                        assert roles <= STATE_CHANGING_ROLES | {"security", "ops", "auditor"}
                    target = fill(path)

                    r = await call(cs["anonymous"], method, target)
                    if op.get("x-page"):
                        assert r.status_code == 303, where
                        assert r.headers["location"].startswith("/login?next="), where
                    else:
                        assert r.status_code == 401, (where, r.status_code)

                    for role in sorted(set(ROLES) - roles):
                        for how in ("cookie", "bearer"):
                            r = await call(cs[f"{how}:{role}"], method, target)
                            assert r.status_code == 403, (where, how, role, r.status_code)

                    for role in sorted(roles):  # a listed role gets past the check
                        r = await call(cs[f"bearer:{role}"], method, target)
                        assert r.status_code not in (401, 403), (where, role, r.status_code)
                    checked += 1
            assert public == PUBLIC
            assert checked >= 25, checked


async def test_the_roles_in_the_document_are_the_table_in_the_code(tmp_path: Path) -> None:
    """Spot checks that the document says what the issue asks: who runs, who watches."""
    cfg = floor_config(f"sqlite:///{tmp_path / 'raps.db'}", tmp_path)
    bearer = {"Authorization": f"Bearer {TOKENS['admin']}"}
    async with (
        running_service(cfg, Clock()) as service,
        serving(service, cfg) as (url, _),
        httpx.AsyncClient(base_url=url, headers=bearer) as admin,
    ):
        paths = (await admin.get("/openapi.json")).json()["paths"]

    def roles(method: str, path: str) -> list[str]:
        result: list[str] = paths[path][method]["x-roles"]
        return result

    for command in ("open", "draw", "close", "picks/{pick}/verify", "picks/{pick}/award",
                    "picks/{pick}/no-show", "picks/{pick}/void"):  # fmt: skip
        assert roles("post", f"/api/sessions/{{session_id}}/{command}") == ["admin", "marketing"]
    assert roles("get", "/dispatch") == ["admin", "security"]
    assert roles("get", "/api/stream") == ["admin", "marketing", "security"]
    assert roles("get", "/api/sessions/{session_id}/export") == ["admin", "auditor"]
    assert roles("get", "/ops") == ["admin", "ops"]
    assert roles("get", "/api/admin/config") == ["admin"]
    assert paths["/handheld"]["get"]["x-page"] is True

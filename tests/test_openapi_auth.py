"""Every route checks its roles: proved by walking the OpenAPI document.

Each operation carries the roles its Guard admits (`x-roles`, from the one table in
raps.auth) or `x-public`.  For every non-public operation: a caller with no credentials
is refused (401, or a redirect to the login page for a page), and a caller of every role
not listed is refused with 403 — signed in on a page (cookie and CSRF token) and with a
bearer token alike; a listed role gets past the check.  The kiosk and app roles have a
bearer token only: they cannot sign in on the pages, and no staff route admits them.  The
public set is exactly health, readiness, metrics and the login page (with its own
stylesheet and script).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from raps.auth import STAFF, Passwords
from raps.config import DEVICE_ROLES, ROLES, STAFF_ROLES
from tests.daemon_helpers import (
    DEVICE_TOKENS,
    DEVICE_USERS,
    SESSION,
    TOKENS,
    Clock,
    floor_config,
    running_service,
)
from tests.web_helpers import serving, sign_in

pytestmark = pytest.mark.asyncio

PUBLIC = {
    ("get", "/healthz"),
    ("get", "/readyz"),
    ("get", "/metrics"),
    ("get", "/login"),
    ("post", "/login"),
    ("get", "/static/public/{name}"),
    ("get", "/stage/screen"),  # the audience screen's shell: its data needs the display token
    ("get", "/handheld-sw.js"),  # the handheld's offline shell worker: a script, no data
    ("get", "/dispatch-sw.js"),  # the dispatch screen's offline shell worker: the same
}
STATE_CHANGING_ROLES = {"marketing", "admin", "stage_host", "rewards_desk"}
# the only state-changing routes a device may call: its own ticket entries
DEVICE_WRITES = {
    ("post", "/api/tickets/kiosk/entries"): {"kiosk"},
    ("post", "/api/tickets/app/entries"): {"app"},
}


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
        token = {**TOKENS, **DEVICE_TOKENS}[role]
        out[f"bearer:{role}"] = httpx.AsyncClient(
            base_url=url, headers={"Authorization": f"Bearer {token}"}
        )
    for role in STAFF_ROLES:  # kiosk and app cannot sign in on the pages
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
                    if (method, path) in DEVICE_WRITES:
                        assert roles == DEVICE_WRITES[(method, path)], where
                    elif method != "get":
                        assert roles <= STATE_CHANGING_ROLES | {"security", "ops", "auditor"}
                    target = fill(path)

                    r = await call(cs["anonymous"], method, target)
                    if op.get("x-page"):
                        assert r.status_code == 303, where
                        assert r.headers["location"].startswith("/login?next="), where
                    else:
                        assert r.status_code == 401, (where, r.status_code)

                    for role in sorted(set(ROLES) - roles):
                        for how in ("cookie", "bearer") if role in STAFF_ROLES else ("bearer",):
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


async def test_kiosk_and_app_accounts_have_no_staff_route_and_no_page_sign_in(
    tmp_path: Path,
) -> None:
    """The device roles get routes of their own (a later step); no staff route admits
    them: their tokens are known (403, not 401), and they cannot sign in on the pages,
    not even with their token as the secret."""
    cfg = floor_config(f"sqlite:///{tmp_path / 'raps.db'}", tmp_path)
    assert set(Passwords(cfg.users).users) == {u.name for u in cfg.users if u.role in STAFF}
    async with (
        running_service(cfg, Clock()) as service,
        serving(service, cfg) as (url, _),
        httpx.AsyncClient(base_url=url) as c,
    ):
        for role in DEVICE_ROLES:
            bearer = {"Authorization": f"Bearer {DEVICE_TOKENS[role]}"}
            for path in ("/api/me", "/api/sessions", "/api/pools", "/openapi.json", "/"):
                r = await c.get(path, headers=bearer)
                assert r.status_code == 403, (role, path, r.status_code)
                assert f"role {role} may not do this" in r.text
            login = {"user": DEVICE_USERS[role], "secret": DEVICE_TOKENS[role]}
            r = await c.post("/login", json=login)
            assert r.status_code == 401 and "set-cookie" not in r.headers

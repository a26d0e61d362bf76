"""Helpers for the page and auth tests: the app on a real socket, and signing in."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI

from raps.config import Config
from raps.service import Service
from raps.web import create_app

PASSWORDS = {"marketing": "pw-marketing", "security": "pw-security", "ops": "pw-ops",
             "auditor": "pw-auditor", "admin": "pw-admin", "stage_host": "pw-stage_host",
             "rewards_desk": "pw-rewards_desk"}  # fmt: skip
USER_OF = {"marketing": "ann", "security": "sam", "ops": "olly", "auditor": "ivy", "admin": "ada",
           "stage_host": "sue", "rewards_desk": "rita"}  # fmt: skip


@contextlib.asynccontextmanager
async def serving(service: Service, cfg: Config) -> AsyncIterator[tuple[str, FastAPI]]:
    """The app served by uvicorn on a free port (streams need a real server)."""
    app = create_app(service, cfg)
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off")
    )
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            await task
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", app
    finally:
        app.state.streams.close()  # what the daemon does before it stops the server
        server.should_exit = True
        await asyncio.wait_for(task, 10)


async def sign_in(client: httpx.AsyncClient, role: str) -> dict[str, Any]:
    """Sign in as the configured user of `role`; the client keeps the cookie and sends
    the CSRF token from then on.  Returns /api/me."""
    r = await client.post("/login", json={"user": USER_OF[role], "secret": PASSWORDS[role]})
    assert r.status_code == 200, r.text
    name = next(iter(r.cookies.keys()))
    client.headers["Cookie"] = f"{name}={r.cookies[name]}"  # also over plain http
    me = await client.get("/api/me")
    assert me.status_code == 200, me.text
    data: dict[str, Any] = me.json()
    client.headers["X-CSRF-Token"] = data["csrf_token"]
    return data

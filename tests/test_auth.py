"""Signing in to the pages: cookies, CSRF, the login rate limit, roles on pages, live updates.

The app runs in-process on the small listed floor of tests.daemon_helpers (users ann,
sam, olly, ivy, ada; password "pw-<role>"); streams run on a real socket.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from raps.auth import LoginLimiter, WebSessions, safe_next
from raps.config import Config
from raps.service import Service
from raps.web import create_app
from tests.daemon_helpers import (
    SESSION,
    Clock,
    auth,
    card,
    floor_config,
    running_service,
    seat_players,
    structlog_json,
)
from tests.web_helpers import PASSWORDS, USER_OF, serving, sign_in

pytestmark = pytest.mark.asyncio

SEATS = {card(i): f"M{i:02d}" for i in range(1, 4)}
TABLE_SEATS = [(card(20), "T1", 3)]


class Ticker:
    """A hand-moved monotonic clock for session expiry and the rate limit."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@dataclass
class Env:
    cfg: Config
    service: Service
    app: Any
    ticker: Ticker

    def client(self, address: str = "10.1.1.1", **headers: str) -> httpx.AsyncClient:
        transport = httpx.ASGITransport(app=self.app, raise_app_exceptions=False,
                                        client=(address, 40000))  # fmt: skip
        return httpx.AsyncClient(transport=transport, base_url="https://raps.test",
                                 headers=headers)  # fmt: skip


async def make_env(tmp_path: Path, **http: Any) -> AsyncIterator[Env]:
    cfg = floor_config(f"sqlite:///{tmp_path / 'raps.db'}", tmp_path)
    if http:
        cfg = cfg.model_copy(update={"http": cfg.http.model_copy(update=http)})
    async with running_service(cfg, Clock()) as service:
        seat_players(service, list(SEATS.items()), TABLE_SEATS)
        app = create_app(service, cfg)
        ticker = Ticker()
        web = app.state.web
        web.sessions.clock = ticker
        web.limiter.clock = ticker
        yield Env(cfg, service, app, ticker)


@pytest_asyncio.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    async for e in make_env(tmp_path):
        yield e


async def login(c: httpx.AsyncClient, user: str, secret: str, **extra: Any) -> httpx.Response:
    return await c.post("/login", json={"user": user, "secret": secret, **extra})


# ------------------------------------------------------------------ signing in


async def test_sign_in_gives_a_secure_http_only_same_site_cookie(env: Env) -> None:
    async with env.client() as c:
        r = await login(c, "ann", PASSWORDS["marketing"], next="/handheld#S-1")
        assert r.status_code == 200, r.text
        assert r.json() == {"user": "ann", "role": "marketing", "next": "/handheld#S-1"}
        cookie = r.headers["set-cookie"]
        assert cookie.startswith("__Host-raps=")
        for flag in ("HttpOnly", "Secure", "SameSite=strict", "Path=/", "Max-Age=43200"):
            assert flag.lower() in cookie.lower(), flag
        assert "Domain" not in cookie
        assert PASSWORDS["marketing"] not in r.text
        me = (await c.get("/api/me")).json()
        assert me["user"] == "ann" and me["role"] == "marketing" and len(me["csrf_token"]) > 30
        assert me["pages"] == ["/handheld", "/calendar"]
        page = await c.get("/handheld")
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        assert "default-src 'self'" in page.headers["content-security-policy"]
        assert page.headers["x-frame-options"] == "DENY"
        assert page.headers["cache-control"] == "no-store"
        home = await c.get("/")
        assert home.status_code == 303 and home.headers["location"] == "/handheld"


async def test_next_never_leaves_the_site() -> None:
    for bad in ("https://evil.example/", "//evil.example/x", "/\\evil", "", None):
        assert safe_next(bad, "/handheld") == "/handheld"
    assert safe_next("/dispatch", "/x") == "/dispatch"


async def test_a_wrong_secret_and_an_unknown_user_get_the_same_answer(env: Env) -> None:
    async with env.client() as c:
        wrong = await login(c, "ann", "pw-wrong")
        nobody = await login(c, "nobody", "pw-wrong")
        assert wrong.status_code == nobody.status_code == 401
        assert wrong.json() == nobody.json()
        assert "set-cookie" not in wrong.headers
        assert (await c.get("/api/me")).status_code == 401


async def test_sign_in_attempts_are_rate_limited_per_user_and_address(env: Env) -> None:
    attempts = env.cfg.http.login_attempts
    async with env.client("10.0.0.9") as c, env.client("10.0.0.10") as other:
        for _ in range(attempts):
            assert (await login(c, "ann", "pw-guess")).status_code == 401
        r = await login(c, "ann", PASSWORDS["marketing"])  # even the right PIN now waits
        assert r.status_code == 429
        assert 0 < int(r.headers["retry-after"]) <= env.cfg.http.login_window_seconds + 1
        # another user from that address, and ann from her own handheld, are not locked out
        assert (await login(c, "sam", PASSWORDS["security"])).status_code == 200
        assert (await login(other, "ann", PASSWORDS["marketing"])).status_code == 200
        env.ticker.t += env.cfg.http.login_window_seconds + 1
        assert (await login(c, "ann", PASSWORDS["marketing"])).status_code == 200


async def test_unknown_bearer_tokens_are_rate_limited_too(env: Env) -> None:
    async with env.client("10.2.2.2") as c:
        for i in range(env.cfg.http.login_attempts):
            r = await c.get("/api/sessions", headers={"Authorization": f"Bearer guess-{i}"})
            assert r.status_code == 401
        r = await c.get("/api/sessions", headers={"Authorization": "Bearer guess-x"})
        assert r.status_code == 429 and int(r.headers["retry-after"]) > 0
    async with env.client("10.2.2.3", **auth("ops")) as program:
        assert (await program.get("/api/sessions")).status_code == 200


async def test_an_address_is_limited_across_user_names() -> None:
    clock = Ticker()
    limiter = LoginLimiter(attempts=2, window_seconds=60, clock=clock)
    for i in range(8):  # 4 x the per-user limit over many names
        assert limiter.retry_after(f"user{i}", "10.9.9.9") == 0
        limiter.failed(f"user{i}", "10.9.9.9")
    assert limiter.retry_after("someone-new", "10.9.9.9") > 0
    assert limiter.retry_after("someone-new", "10.9.9.8") == 0
    clock.t += 61
    assert limiter.retry_after("someone-new", "10.9.9.9") == 0


async def test_the_login_form_refuses_other_sites_and_non_json(env: Env) -> None:
    async with env.client(Origin="https://evil.example") as c:
        assert (await login(c, "ann", PASSWORDS["marketing"])).status_code == 403
    async with env.client(**{"Sec-Fetch-Site": "cross-site"}) as c:
        assert (await login(c, "ann", PASSWORDS["marketing"])).status_code == 403
    async with env.client() as c:
        body = json.dumps({"user": "ann", "secret": PASSWORDS["marketing"]})
        r = await c.post("/login", content=body, headers={"Content-Type": "text/plain"})
        assert r.status_code == 422  # a cross-site HTML form cannot send JSON
    async with env.client(Origin="https://raps.test") as c:
        assert (await login(c, "ann", PASSWORDS["marketing"])).status_code == 200


async def test_sessions_expire_and_sign_out_ends_them(env: Env) -> None:
    async with env.client() as c:
        await sign_in(c, "security")
        assert (await c.get("/api/me")).status_code == 200
        env.ticker.t += env.cfg.http.session_minutes * 60 + 1
        assert (await c.get("/api/me")).status_code == 401
        page = await c.get("/dispatch")
        assert page.status_code == 303 and page.headers["location"] == "/login?next=/dispatch"
        await sign_in(c, "security")
        cookie = c.headers["Cookie"]
        assert (await c.post("/logout", json={})).status_code == 200
        assert (await c.get("/api/me", headers={"Cookie": cookie})).status_code == 401


async def test_web_sessions_stay_bounded() -> None:
    clock = Ticker()
    sessions = WebSessions(60, max_sessions=3, clock=clock)
    tokens = [sessions.create("ann", "marketing")[0] for _ in range(5)]
    assert sum(sessions.get(t) is not None for t in tokens) == 3
    assert sessions.get(tokens[-1]) is not None and sessions.get(tokens[0]) is None
    clock.t += 61
    assert sessions.get(tokens[-1]) is None
    assert sessions.get("x" * 1000) is None


# ------------------------------------------------------------------------ CSRF


async def test_cookie_commands_need_the_csrf_token_bearer_commands_do_not(env: Env) -> None:
    url = f"/api/sessions/{SESSION}/open"
    seeded = env.service.journal.head  # the schedule, seeded from the config at start
    async with env.client() as c:
        await sign_in(c, "marketing")
        token = c.headers.pop("X-CSRF-Token")
        r = await c.post(url, json={"command_id": "o1", "confirm": "LIVE"})
        assert r.status_code == 403 and "CSRF" in r.json()["detail"]
        r = await c.post(url, json={"command_id": "o1", "confirm": "LIVE"},
                         headers={"X-CSRF-Token": token[:-1] + "x"})  # fmt: skip
        assert r.status_code == 403
        for evil in ({"Origin": "https://evil.example"}, {"Sec-Fetch-Site": "cross-site"}):
            r = await c.post(url, json={"command_id": "o1", "confirm": "LIVE"},
                             headers={"X-CSRF-Token": token, **evil})  # fmt: skip
            assert r.status_code == 403, evil
        assert env.service.journal.head == seeded, "a refused command wrote"
        same_site = {"X-CSRF-Token": token, "Origin": "https://raps.test"}
        r = await c.post(url, json={"command_id": "o1", "confirm": "LIVE"}, headers=same_site)
        assert r.status_code == 200, r.text
    async with env.client(**auth("marketing")) as bearer:  # a program: no cookie, no CSRF
        r = await bearer.post(f"/api/sessions/{SESSION}/draw", json={"command_id": "d1",
                                                                     "kind": "slots"})  # fmt: skip
        assert r.status_code == 200, r.text


async def test_a_page_opens_a_live_session_only_with_the_typed_confirmation(env: Env) -> None:
    url = f"/api/sessions/{SESSION}/open"
    async with env.client() as c:
        await sign_in(c, "marketing")
        r = await c.post(url, json={"command_id": "o1"})
        assert r.status_code == 400 and "type LIVE" in r.json()["detail"]
        r = await c.post(url, json={"command_id": "o2", "confirm": "yes"})
        assert r.status_code == 400
        r = await c.post(url, json={"command_id": "o3", "confirm": " live "})
        assert r.status_code == 200, r.text
        r = await c.post(url, json={"command_id": "o3"})  # a retry replays, typed or not
        assert r.status_code == 200 and r.json()["replayed"] is True
    (rec,) = [e.record for e in await env.service.journal.session_entries(SESSION)]
    assert rec["type"] == "session.opened"
    assert rec["actor"] == {"user": "ann", "role": "marketing"}


# ---------------------------------------------------------------- pages, roles


async def test_pages_send_strangers_to_sign_in_and_refuse_other_roles(env: Env) -> None:
    async with env.client() as anon:
        for page in ("/", "/handheld", "/dispatch", "/ops", "/admin", "/audit"):
            r = await anon.get(page)
            assert r.status_code == 303, page
            assert r.headers["location"] == f"/login?next={page}"
        assert (await anon.get("/login")).status_code == 200
        assert (await anon.get("/static/public/app.css")).status_code == 200
        assert (await anon.get("/static/public/login.js")).status_code == 200
        assert (await anon.get("/static/handheld.js")).status_code == 401
        assert (await anon.get("/no/such/page")).status_code == 303
        assert (await anon.get("/api/no/such/thing")).status_code == 401
        assert (await anon.get("/openapi.json")).status_code == 401
        r = await anon.post(f"/api/sessions/{SESSION}/open", content=b"{not json")
        assert r.status_code == 401  # refused before the body is even read
    async with env.client() as c:
        await sign_in(c, "security")
        r = await c.get("/handheld")
        assert r.status_code == 403 and "role security" in r.text
        assert (await c.get("/dispatch")).status_code == 200
        assert (await c.get("/static/dispatch.js")).status_code == 200
        assert (await c.get("/static/../config.py")).status_code in (401, 404)
        assert (await c.get("/static/nope.js")).status_code == 404


async def test_the_floor_map_is_for_dispatch(env: Env) -> None:
    async with env.client() as c:
        await sign_in(c, "security")
        r = await c.get("/api/floor.svg")
        assert r.status_code == 200 and r.headers["content-type"].startswith("image/svg+xml")
        for m in env.cfg.layout().machines:
            assert f'data-machine="{m}"' in r.text
    async with env.client() as c:
        await sign_in(c, "ops")
        assert (await c.get("/api/floor.svg")).status_code == 403


async def test_admin_signs_a_lost_handheld_out(env: Env) -> None:
    async with env.client() as h1, env.client() as h2, env.client() as admin:
        await sign_in(h1, "marketing")
        await sign_in(h2, "marketing")
        await sign_in(admin, "admin")
        users = {u["name"]: u for u in (await admin.get("/api/admin/users")).json()}
        assert users["ann"]["signed_in"] == 2
        assert "password_hash" not in json.dumps(users)
        r = await admin.post("/api/admin/users/ann/sign-out", json={})
        assert r.json() == {"user": "ann", "ended": 2}
        assert (await h1.get("/api/me")).status_code == 401
        assert (await h2.get("/api/me")).status_code == 401
        assert (await admin.post("/api/admin/users/zed/sign-out", json={})).status_code == 404
        config = (await admin.get("/api/admin/config")).text
        assert "$argon2id$" not in config and "seed" not in config.lower().replace("seed_key", "")


async def test_logs_hold_who_signed_in_but_never_a_secret(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with structlog_json():
        async for env in make_env(tmp_path):
            async with env.client() as c:
                await login(c, "ann", "pw-typo-1234")
                await login(c, "pw-marketing-in-the-wrong-box", "x")
                await login(c, "ann", PASSWORDS["marketing"])
    err = capsys.readouterr().err
    lines = [json.loads(x) for x in err.splitlines() if x.startswith("{")]
    events = [(x["event"], x.get("user")) for x in lines if "sign" in x["event"]]
    assert events == [("sign-in failed", "ann"), ("sign-in failed", None), ("signed in", "ann")]
    for secret in ("pw-typo-1234", "pw-marketing", "wrong-box"):
        assert secret not in err


async def test_without_secure_cookies_the_cookie_is_plain(tmp_path: Path) -> None:
    async for env in make_env(tmp_path, secure_cookies=False):
        async with env.client() as c:
            r = await login(c, "ann", PASSWORDS["marketing"])
            cookie = r.headers["set-cookie"]
            assert cookie.startswith("raps_session=") and "secure" not in cookie.lower()
            assert "httponly" in cookie.lower() and "samesite=strict" in cookie.lower()


# ---------------------------------------------------------------- live updates


async def read_events(
    lines: AsyncIterator[str], until: Any, timeout: float
) -> list[dict[str, Any]]:
    """Summary events from an SSE stream's lines until `until(event)` holds."""
    got: list[dict[str, Any]] = []

    async def run() -> None:
        event = ""
        async for line in lines:
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: ") and event == "summary":
                got.append(json.loads(line[6:]))
                if until(got[-1]):
                    return

    await asyncio.wait_for(run(), timeout)
    return got


async def test_the_stream_shows_a_pick_at_once_masked(tmp_path: Path) -> None:
    async for env in make_env(tmp_path):
        async with (
            serving(env.service, env.cfg) as (url, _app),
            httpx.AsyncClient(base_url=url) as sec,
            httpx.AsyncClient(base_url=url, headers=auth("marketing")) as prog,
        ):
            await sign_in(sec, "security")
            async with sec.stream("GET", "/api/stream") as stream:
                assert stream.status_code == 200
                assert stream.headers["content-type"].startswith("text/event-stream")
                lines = stream.aiter_lines()
                first = await read_events(lines, lambda e: True, 5)
                assert first[0]["session"]["state"] == "scheduled"
                await prog.post(f"/api/sessions/{SESSION}/open", json={"command_id": "o"})
                t0 = time.monotonic()
                r = await prog.post(f"/api/sessions/{SESSION}/draw",
                                    json={"command_id": "d", "kind": "slots"})  # fmt: skip
                assert r.status_code == 200
                got = await read_events(lines, lambda e: bool(e["session"]["picks"]), 1.0)
                assert time.monotonic() - t0 < 1.0
                (pick,) = got[-1]["session"]["picks"]
                assert pick["state"] == "pending" and pick["card"].startswith("*")
                text = json.dumps(got)
                for c in SEATS:
                    assert c not in text
                assert "starts" in got[-1]["session"] and "now" in got[-1]


async def test_streams_are_for_watchers_only(tmp_path: Path) -> None:
    async for env in make_env(tmp_path):
        async with (
            serving(env.service, env.cfg) as (url, _app),
            httpx.AsyncClient(base_url=url) as c,
        ):
            await sign_in(c, "ops")
            assert (await c.get("/api/stream")).status_code == 403
            anon = await httpx.AsyncClient(base_url=url).get("/api/stream")
            assert anon.status_code == 401
            await sign_in(c, "security")
            assert (await c.get("/api/stream?session=nope")).status_code == 404


async def test_verification_data_after_close(env: Env) -> None:
    async with env.client(**auth("marketing")) as prog:
        base = f"/api/sessions/{SESSION}"
        await prog.post(f"{base}/open", json={"command_id": "o"})
        v = (await prog.get(f"{base}/verification")).json()
        assert v["seed"] is None and v["seed_matches_commitment"] is None and v["commitment"]
        await prog.post(f"{base}/draw", json={"command_id": "d", "kind": "slots"})
        await prog.post(f"{base}/close", json={"command_id": "c", "force": True})
        v = (await prog.get(f"{base}/verification")).json()
        assert v["seed_matches_commitment"] is True
        assert v["picks"][0]["pool_digest"] and "card" not in v["picks"][0]
        head = v["journal_head"]
        assert v["verify_command"].endswith(f"--head {head['seq']}:{head['hash']}")


async def test_roles_of_the_pages_match_the_issue() -> None:
    from raps.pages import PAGES

    assert {p: sorted(r) for p, (_, r) in PAGES.items()} == {
        "/handheld": ["admin", "marketing"],
        "/dispatch": ["admin", "security"],
        "/ops": ["admin", "ops"],
        "/admin": ["admin"],
        "/audit": ["admin", "auditor"],
        "/stage": ["admin", "stage_host"],
        "/rewards": ["admin", "rewards_desk"],
        "/calendar": ["admin", "auditor", "marketing", "ops", "security", "stage_host"],
    }
    assert set(USER_OF) == {
        "marketing", "security", "ops", "auditor", "admin", "stage_host", "rewards_desk"
    }  # fmt: skip

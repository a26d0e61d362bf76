"""The whole HTTP surface against hostile requests (issue 16, defects 5-7).

Every route of the app (its OpenAPI document, plus any route left out of it) is called on
a real socket (uvicorn, as the daemon runs it) with: a body over its limit (413, declared
or streamed), malformed and mistyped bodies (4xx, never a 500), and every known form of
open redirect in the sign-in's `next` (the browser always stays on the site).  Then the
client address the sign-in rate limit counts: X-Forwarded-For is believed from a
configured proxy only.  The last test signs in with Chromium behind such a `next`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import httpx
import pytest
import pytest_asyncio
import uvicorn
from fastapi import FastAPI
from fastapi.routing import APIRoute
from playwright.sync_api import Browser, Page, Route, expect, sync_playwright
from pydantic import ValidationError
from starlette.types import Message

from raps.auth import safe_next
from raps.body_limit import UPLOAD_ROUTES
from raps.config import Config, HttpConfig
from raps.daemon import http_server_config
from raps.web import create_app
from tests.daemon_helpers import Clock, auth, floor_config, running_service
from tests.test_pages_browser import MARKETING, PIN, RAPS, _config, _launch
from tests.test_pages_browser import chromium_path as chromium_path  # the fixture
from tests.web_helpers import PASSWORDS

BODY_LIMIT, UPLOAD_LIMIT = 4096, 16384  # small, so bodies over them are cheap to send
HOME = "/handheld"  # where ann (marketing) goes when `next` is refused

# Every way known to make a browser leave the site from `location.assign(next)`, or a
# server that decodes the path once more: controls and spaces a URL parser drops,
# backslashes read as slashes, protocol-relative and scheme-relative URLs, encodings.
REDIRECT_FORMS = [
    "/%09/evil.example/phish", "/%0A/evil.example", "/%0D/evil.example", "/%0D%0A/evil.example",
    "/\t/evil.example", "/\n/evil.example", "/\r/evil.example", "\t//evil.example",
    " //evil.example", "/ /evil.example", "/%20/evil.example", "/%00/evil.example",
    "/\x00/evil.example", "/\x7f/evil.example", "//evil.example", "///evil.example",
    "////evil.example", "/\\evil.example", "\\/evil.example", "\\\\evil.example",
    "/\\/evil.example", "/%5Cevil.example", "/%5c%5cevil.example", "/%2F%2Fevil.example",
    "/%2f/evil.example", "/%2F%5Cevil.example", "/%252F%252Fevil.example",
    "/%25252F%25252Fevil.example", "/.//evil.example", "/./%2F/evil.example",
    "/a/..//evil.example", "/..//evil.example", "https:evil.example", "https:/evil.example",
    "https://evil.example", "HTTPS://evil.example", "http://evil.example/x", "//evil.example@raps",
    "javascript:alert(1)", "JaVaScRiPt:alert(1)", "data:text/html,<script>1</script>",
    "evil.example", "%2F%2Fevil.example", "/\u3000/evil.example", "/\uff0f/evil.example",
    "/\u2215/evil.example", "/\u00a0/evil.example",
]  # fmt: skip
BROWSER_FORMS = ["/%09/evil.example/phish", "/%0A/evil.example", "/\\evil.example",
                 "//evil.example", "/%2F%2Fevil.example", "https:evil.example"]  # fmt: skip
SAME_SITE = ["/dispatch", "/handheld#S-1", "/handheld?session=S-1", "/audit?q=%2Fx", "/"]

MALFORMED: list[tuple[str, bytes]] = [  # (content type, body)
    ("application/json", b'{"command_id": '),
    ("application/json", b"\xff\xfe\xfa not utf-8"),
    ("application/json", b'{"command_id": "\\ud800", "user": "\\udfff", "secret": "\\ud800"}'),
    ("application/json", b'{"command_id": "x", "command_id": ["y"]}'),
    ("application/json", b"[]"),
    ("application/json", b"null"),
    ("application/json", b'"a string"'),
    ("application/json", b"1e999999"),
    ("application/json", b'{"command_id": 1e400, "amount": 1e400, "user": 7}'),
    ("application/json", b"[" * 1500 + b"]" * 1500),
    ("application/json", b""),
    ("text/plain", b'{"command_id": "c-1", "user": "ann", "secret": "pw"}'),
    ("application/x-www-form-urlencoded", b"command_id=c-1&user=ann&secret=pw"),
    ("multipart/form-data; boundary=b", b'--b\r\nContent-Disposition: form-data; name="x"'
                                        b"\r\n\r\n1\r\n--b--\r\n"),
    ("application/json; charset=utf-16", '{"command_id": "c-1"}'.encode("utf-16")),
    ("application/xml", b"<command_id>c-1</command_id>"),
]  # fmt: skip


# ------------------------------------------------------------------- the server


@contextlib.asynccontextmanager
async def served(app: FastAPI, http: HttpConfig) -> AsyncIterator[str]:
    """The app behind uvicorn with exactly the daemon's settings (raps.daemon)."""
    server = uvicorn.Server(http_server_config(app, http))
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            await task
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        app.state.streams.close()
        server.should_exit = True
        await asyncio.wait_for(task, 10)


def with_http(cfg: Config, **http: Any) -> Config:
    return cfg.model_copy(update={"http": cfg.http.model_copy(update=http)})


@pytest_asyncio.fixture
async def site(tmp_path: Path) -> AsyncIterator[tuple[str, FastAPI, Config]]:
    cfg = floor_config(f"sqlite:///{tmp_path / 'raps.db'}", tmp_path)
    cfg = with_http(cfg, max_body_bytes=BODY_LIMIT, max_upload_bytes=UPLOAD_LIMIT)
    async with running_service(cfg, Clock()) as service:
        app = create_app(service, cfg)
        async with served(app, cfg.http) as url:
            yield url, app, cfg


def every_route(app: FastAPI) -> list[tuple[str, str, bool]]:
    """(method, path, takes a body) of every route: the OpenAPI document's, and any
    route left out of it (each one an APIRoute, so none escapes the walk)."""
    routes: dict[tuple[str, str], bool] = {}
    for route in app.routes:
        assert isinstance(route, APIRoute), f"{route!r}: not an APIRoute, so not checked"
        for method in route.methods:
            routes[(method, route.path)] = route.body_field is not None
    spec = app.openapi()["paths"]
    documented = {(m.upper(), path) for path, ops in spec.items() for m in ops}
    assert documented <= routes.keys(), documented - routes.keys()
    return sorted((m, p, body) for (m, p), body in routes.items())


def fill(path: str) -> str:
    if path.startswith("/static/public"):
        return path.replace("{name}", "app.css")
    path = path.replace("{pick}", "1").replace("{number}", "1")
    return re.sub(r"\{[^}]+\}", "nobody", path)


def limit_of(method: str, path: str) -> int:
    return UPLOAD_LIMIT if (method, path) in UPLOAD_ROUTES else BODY_LIMIT


async def chunks(total: int, sent: list[int], size: int = 1024) -> AsyncIterator[bytes]:
    """A body without Content-Length (chunked), counting what was handed to the socket."""
    while sent[0] < total:
        sent[0] += size
        yield b"x" * size


# ------------------------------------------------------------- body size (6)


@pytest.mark.asyncio
async def test_every_route_answers_413_to_a_body_over_its_limit(
    site: tuple[str, FastAPI, Config],
) -> None:
    url, app, _ = site
    routes = every_route(app)
    assert len(routes) >= 40 and ("POST", "/login", True) in routes
    admin = httpx.AsyncClient(base_url=url, headers=auth("admin"), timeout=30)
    stranger = httpx.AsyncClient(base_url=url, timeout=30)
    async with admin, stranger:
        for method, path, takes_body in routes:
            limit, where = limit_of(method, path), f"{method} {path}"
            over = {"content": b"x" * (limit + 1), "headers": {"content-type": "application/json"}}
            async with admin.stream(method, fill(path), **over) as r:
                assert r.status_code == 413, (where, r.status_code)
                assert f"at most {limit} bytes" in (await r.aread()).decode(), where
            async with stranger.stream(method, fill(path), **over) as r:
                # refused first for not being signed in, or for the size: never read
                assert r.status_code in (303, 401, 413), (where, r.status_code)
            if not takes_body:
                continue
            sent = [0]  # streamed (chunked): counted as it arrives, cut at the limit
            r = await admin.request(method, fill(path), content=chunks(limit * 4, sent),
                                    headers={"content-type": "application/json"})  # fmt: skip
            assert r.status_code == 413, (where, r.status_code, r.text)
            # exactly the limit is not too large: the body is read, and refused as JSON
            r = await admin.request(method, fill(path), content=b"x" * limit,
                                    headers={"content-type": "application/json"})  # fmt: skip
            assert r.status_code == 422, (where, r.status_code)
        assert (await admin.get("/healthz")).status_code == 200


@pytest.mark.asyncio
async def test_a_streamed_body_over_the_limit_is_cut_off_unbuffered(
    site: tuple[str, FastAPI, Config],
) -> None:
    """200 MB without Content-Length to the public /login: 413, and the app took in at
    most the limit (plus the one chunk that crossed it) before answering."""
    url, app, _ = site
    total, chunk = 200 * 1024 * 1024, 64 * 1024
    pulled: list[int] = []
    answer: list[Message] = []
    more = [total]

    async def receive() -> Message:
        if not more[0]:
            return {"type": "http.disconnect"}
        more[0] -= chunk
        pulled.append(chunk)
        return {"type": "http.request", "body": b"x" * chunk, "more_body": more[0] > 0}

    async def send(message: Message) -> None:
        answer.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": "POST", "scheme": "http", "path": "/login", "raw_path": b"/login",
             "query_string": b"", "root_path": "", "server": ("127.0.0.1", 80),
             "client": ("10.9.8.7", 5555),
             "headers": [(b"host", b"raps.test"), (b"content-type", b"application/json"),
                         (b"transfer-encoding", b"chunked")]}  # fmt: skip
    await app(scope, receive, send)
    assert answer[0]["type"] == "http.response.start" and answer[0]["status"] == 413
    assert sum(pulled) <= BODY_LIMIT + chunk, sum(pulled)  # one chunk crossed it
    # the same over the socket: answered 413, and the server still serves
    sent = [0]
    async with httpx.AsyncClient(base_url=url, timeout=60) as c:
        r = await c.post("/login", content=chunks(50 * 1024 * 1024, sent, chunk),
                         headers={"content-type": "application/json"})  # fmt: skip
        assert r.status_code == 413
        assert (await c.get("/healthz")).status_code == 200


def test_the_limits_are_config_keys_with_safe_defaults() -> None:
    http = HttpConfig()
    assert (http.max_body_bytes, http.max_upload_bytes, http.trusted_proxies) == (
        65536,
        1 << 20,
        (),
    )
    # a drawn signature (a 512 KB PNG, base64) fits the upload limit
    assert http.max_upload_bytes > 512 * 1024 * 4 // 3 + 1024
    with pytest.raises(ValidationError, match="max_upload_bytes"):
        HttpConfig.model_validate({"max_body_bytes": 8192, "max_upload_bytes": 4096})
    with pytest.raises(ValidationError):
        HttpConfig.model_validate({"max_body_bytes": 10})
    for bad in ("*", "proxy.internal", "10.0.0.5/24", "300.1.1.1"):
        with pytest.raises(ValidationError, match="not an IP address or network"):
            HttpConfig.model_validate({"trusted_proxies": [bad]})
    ok = HttpConfig.model_validate({"trusted_proxies": ["10.0.0.5", "10.1.0.0/16", "::1"]})
    assert ok.trusted_proxies == ("10.0.0.5", "10.1.0.0/16", "::1")


# ------------------------------------------------------------ malformed bodies


@pytest.mark.asyncio
async def test_malformed_and_mistyped_bodies_get_a_4xx_never_a_500(
    site: tuple[str, FastAPI, Config],
) -> None:
    url, app, _ = site
    with_body = [(m, p) for m, p, body in every_route(app) if body]
    assert ("POST", "/login") in with_body and len(with_body) >= 20
    async with httpx.AsyncClient(base_url=url, headers=auth("admin"), timeout=30) as c:
        for method, path in with_body:
            for content_type, body in MALFORMED:
                r = await c.request(method, fill(path), content=body,
                                    headers={"content-type": content_type})  # fmt: skip
                where = (method, path, content_type, body[:40])
                assert 400 <= r.status_code < 500, (where, r.status_code, r.text[:300])
                assert r.headers["content-type"].startswith("application/json"), where
                json.loads(r.text)  # the answer itself is valid JSON
        assert (await c.get("/healthz")).status_code == 200


# ---------------------------------------------------------- open redirect (5)


@pytest.mark.asyncio
async def test_next_stays_on_the_site_in_every_known_form(
    site: tuple[str, FastAPI, Config],
) -> None:
    url, _, _ = site
    for form in [*REDIRECT_FORMS, "/" + "a" * 600]:  # and too long to be one of ours
        assert safe_next(form, HOME) == HOME, repr(form)
    for path in SAME_SITE:
        assert safe_next(path, HOME) == path, path
    async with httpx.AsyncClient(base_url=url, timeout=30) as c:
        for form in [*REDIRECT_FORMS, *SAME_SITE]:
            r = await c.post("/login", json={"user": "ann", "secret": PASSWORDS["marketing"],
                                             "next": form})  # fmt: skip
            assert r.status_code == 200, (form, r.text)
            want = form if form in SAME_SITE else HOME
            assert r.json()["next"] == want, (repr(form), r.json())
            page = await c.get(f"/login?next={quote(form, safe='')}")
            assert page.status_code == 200 and "location" not in page.headers, repr(form)
        # a stranger sent to sign in from an odd path: the page's `next` is refused too
        for odd in ("/%2F%2Fevil.example/x", "/%5Cevil.example", "/%09/evil.example"):
            r = await c.get(odd)
            assert r.status_code in (303, 404), (odd, r.status_code)
            if r.status_code == 404:
                continue
            location = r.headers["location"]
            assert location.startswith("/login?next="), location
            (target,) = parse_qs(urlsplit(location).query)["next"]
            r = await c.post("/login", json={"user": "ann", "secret": PASSWORDS["marketing"],
                                             "next": target})  # fmt: skip
            assert r.json()["next"] == HOME, (odd, target)


# ------------------------------------------------------ forwarded headers (7)


async def sign_in_from(c: httpx.AsyncClient, origin: str, forwarded_host: str) -> int:
    r = await c.post("/login", json={"user": "ann", "secret": "pw-guess"},
                     headers={"Origin": origin, "X-Forwarded-Host": forwarded_host})  # fmt: skip
    return r.status_code


async def failed_sign_in(c: httpx.AsyncClient, forwarded_for: str) -> int:
    r = await c.post("/login", json={"user": "ann", "secret": "pw-guess"},
                     headers={"X-Forwarded-For": forwarded_for})  # fmt: skip
    return r.status_code


@pytest.mark.asyncio
async def test_rotating_x_forwarded_for_does_not_escape_the_rate_limit(tmp_path: Path) -> None:
    """From a peer that is no configured proxy (here loopback, which uvicorn trusts by
    default) the header is ignored: every attempt counts against the peer itself."""
    cfg = floor_config(f"sqlite:///{tmp_path / 'raps.db'}", tmp_path)
    assert cfg.http.trusted_proxies == ()
    attempts = cfg.http.login_attempts
    async with running_service(cfg, Clock()) as service:
        app = create_app(service, cfg)
        async with served(app, cfg.http) as url, httpx.AsyncClient(base_url=url) as c:
            # another site's page naming itself as the forwarded host: not believed
            assert await sign_in_from(c, "https://evil.example", "evil.example") == 403
            for i in range(attempts):
                assert await failed_sign_in(c, f"203.0.113.{i}") == 401
            assert await failed_sign_in(c, "198.51.100.1") == 429
            assert await failed_sign_in(c, "198.51.100.2, 192.0.2.9") == 429


@pytest.mark.asyncio
async def test_a_configured_proxy_s_forwarded_address_is_honoured(tmp_path: Path) -> None:
    cfg = floor_config(f"sqlite:///{tmp_path / 'raps.db'}", tmp_path)
    cfg = with_http(cfg, trusted_proxies=("127.0.0.1",))
    attempts = cfg.http.login_attempts
    async with running_service(cfg, Clock()) as service:
        app = create_app(service, cfg)
        async with served(app, cfg.http) as url, httpx.AsyncClient(base_url=url) as c:
            # behind the proxy the browser's host arrives as X-Forwarded-Host
            assert await sign_in_from(c, "https://raps.example", "raps.example") == 401
            assert await sign_in_from(c, "https://evil.example", "raps.example") == 403
            for i in range(attempts + 2):  # each client behind the proxy counted apart
                assert await failed_sign_in(c, f"203.0.113.{i}") == 401
            for _ in range(attempts):  # one client: its own address reaches the limit
                assert await failed_sign_in(c, "198.51.100.7") == 401
            assert await failed_sign_in(c, "198.51.100.7") == 429
            # a client cannot pose as another by prepending: the proxy appends the peer
            assert await failed_sign_in(c, "203.0.113.200, 198.51.100.7") == 429
            assert await failed_sign_in(c, "198.51.100.8") == 401


# --------------------------------------------------------------- in Chromium


@contextlib.contextmanager
def raps_daemon(folder: Path) -> Iterator[str]:
    """`raps run` on the browser tests' small config; its URL once ready."""
    ready = folder / "ready.json"
    log = (folder / "daemon.log").open("wb")
    cmd = [RAPS, "run", "--config", str(_config(folder)), "--ready-file", str(ready)]
    proc = subprocess.Popen([*cmd, "--create-key"], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert proc.poll() is None, (folder / "daemon.log").read_text()
            assert time.monotonic() < deadline, "daemon did not become ready"
            time.sleep(0.05)
        yield json.loads(ready.read_text())["url"]
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()


def test_chromium_stays_on_the_site_after_sign_in(chromium_path: str, tmp_path: Path) -> None:
    """The real page, the real browser: signing in from a login link whose `next` points
    away lands on the user's own page, and the page's script refuses a bad `next` even
    if the server's answer carried one."""
    left: list[str] = []

    def sign_in_from(browser: Browser, login_url: str, forge: bool = False) -> Page:
        page = browser.new_context().new_page()  # a fresh browser profile each time
        page.on("request", lambda r: None if r.url.startswith(url) else left.append(r.url))
        if forge:
            page.route(re.compile(r".*/login$"), forged)
        page.goto(login_url)
        page.fill("#user", MARKETING)
        page.fill("#secret", PIN)
        page.click("#submit")
        return page

    def forged(route: Route) -> None:  # the answer of a server that let `next` through
        if route.request.method != "POST":
            route.continue_()
            return
        body = json.dumps({"user": MARKETING, "next": "/\t/evil.example"})
        route.fulfill(status=200, content_type="application/json", body=body)

    with raps_daemon(tmp_path) as url, sync_playwright() as pw:
        browser = _launch(pw, chromium_path)
        try:
            for form in BROWSER_FORMS:
                page = sign_in_from(browser, f"{url}/login?next={quote(form, safe='')}")
                expect(page).to_have_url(f"{url}{HOME}")
                page.context.close()
            page = sign_in_from(browser, f"{url}/login", forge=True)
            # the script went to "/" instead: on the site, and (no cookie) back to sign-in
            expect(page).to_have_url(re.compile(re.escape(f"{url}/login?next=")))
        finally:
            browser.close()
    assert left == [], left

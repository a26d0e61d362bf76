"""Who may call what: roles, page sign-in (cookie sessions), CSRF and the login rate limit.

Programs call the API with a bearer token (`Authorization: Bearer ...`); people sign in on
the login page and get a cookie.  Both resolve to an `Actor` (user, role) that every route
checks against the roles it declares (`Guard`), and that the journal records.

- Cookie sessions live in memory, keyed by the SHA-256 of a 256-bit random token, and
  every change is written to the database (raps.store.signins), so a restart signs nobody
  out; they expire `http.session_minutes` after sign-in (wall clock, across restarts).
  The cookie is `HttpOnly`, `SameSite=Strict`, `Path=/` and, by default, `Secure` with
  the `__Host-` prefix.
- CSRF: a state-changing request authenticated by the cookie must carry the session's
  token in `X-CSRF-Token` (synchronizer token; the page reads it from `/api/me`) and, when
  the browser sends one, an `Origin` of this very server.  A bearer token is not an ambient
  credential, so bearer requests need no CSRF token.
- Sign-in: the secret is checked with argon2id/scrypt (`check_secret`, slow on purpose) in
  a worker thread, two at a time; failures are counted per (user, address) and per address,
  and past `http.login_attempts` in `http.login_window_seconds` the answer is 429 without
  any check.  An unknown user costs the same check as a known one.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import secrets
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar
from urllib.parse import unquote, urlsplit

from fastapi import Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from raps.config import STAFF_ROLES, Config, UserConfig, check_secret, hash_secret
from raps.logs import get_logger
from selector.claims import EXTENDING_ROLES
from selector.records import Actor

# ---------------------------------------------------------------------------- roles
# The one table of who may do what.  Each route names one of these sets through its
# Guard; the app copies it into the OpenAPI document as `x-roles`.  The device roles
# (kiosk, app: raps.config.DEVICE_ROLES) are in none of them: they get routes of their own.

STAFF = frozenset(STAFF_ROLES)  # every person's role
RUNNERS = frozenset({"marketing", "admin"})  # run draw sessions
READERS = STAFF  # read sessions, pools and the journal head
WATCHERS = frozenset({"marketing", "security", "admin"})  # live session updates
DISPATCHERS = frozenset({"security", "admin"})  # the dispatch screen and floor map
# a winner's claim (raps.claim_routes): security goes en route (DISPATCHERS), marketing
# finds the winner absent (RUNNERS), an admin extends a countdown once
EXTENDERS = EXTENDING_ROLES  # the core checks the same roles (selector.claim_verify)
OPERATORS = frozenset({"ops", "admin"})  # pools and health page
AUDITORS = frozenset({"auditor", "admin"})  # journal export
REPORT_READERS = frozenset({"marketing", "admin", "auditor"})  # end-of-session reports
ADMINS = frozenset({"admin"})  # users and config
# the calendar page: everyone who plans, runs, watches or checks a draw; marketing and
# admins change the schedule (RUNNERS), an admin approves (ADMINS)
CALENDAR_READERS = frozenset({"marketing", "admin", "security", "ops", "auditor", "stage_host"})
SIGNED_IN = STAFF
# draw tickets (raps.ticket_routes): the device roles enter, staff look on
KIOSKS = frozenset({"kiosk"})  # e-Host kiosks: enter tickets, print receipts
APPS = frozenset({"app"})  # the casino app's integration: enter tickets while playing
TICKET_VIEWERS = frozenset({"kiosk", "app", "marketing", "admin"})  # a player's standing
TICKET_DESKS = frozenset({"kiosk", "marketing", "admin", "auditor"})  # receipts, checked
# ticket draws on stage (raps.stage_routes)
STAGE_HOSTS = frozenset({"stage_host", "admin"})  # open, draw, present, award, close
PROXY_DESKS = frozenset({"stage_host", "rewards_desk", "admin"})  # take proxy forms
STAGE_SCREENS = frozenset({"stage_screen", "stage_host", "admin"})  # the audience's view
REWARDS_DESKS = frozenset({"rewards_desk", "admin"})  # hand over prizes, letters
PRIZE_READERS = frozenset({"rewards_desk", "stage_host", "admin", "auditor"})  # prize lists

_R = TypeVar("_R")

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CSRF_HEADER = "x-csrf-token"


class AuthError(Exception):
    """Refused before the route runs: 401 (who are you?), 403 (not you, or no CSRF) or
    429 (too many unknown tokens from this address)."""

    def __init__(
        self, status: int, detail: str, *, page: bool = False, retry_after: int | None = None
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.page = page
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class Access:
    """What a route allows: its roles, or public; and whether it is a page (HTML)."""

    roles: frozenset[str] | None  # None: public
    page: bool = False


def cookie_name(secure: bool) -> str:
    # the __Host- prefix makes the browser refuse the cookie unless Secure, Path=/, no Domain
    return "__Host-raps" if secure else "raps_session"


# ------------------------------------------------------------------- web sessions


@dataclass(slots=True)
class WebSession:
    user: str
    role: str
    csrf: str  # derived from the cookie's token (csrf_for), so never stored
    expires: float  # the sessions' clock: wall-clock seconds by default
    created: float = field(default_factory=time.time)  # wall clock, for display only

    @property
    def actor(self) -> Actor:
        return Actor(self.user, self.role)


def csrf_for(token: str) -> str:
    """The CSRF token of a sign-in: an HMAC of the cookie's token, so that it survives a
    restart without being stored, and only the holder of the cookie can learn it."""
    return hmac.new(token.encode(), b"raps-csrf-v1", hashlib.sha256).hexdigest()


class SignInStore(Protocol):
    """Where sign-ins are kept across restarts (raps.store.signins.SignInStore)."""

    async def load(self, now: float) -> list[tuple[bytes, str, str, float, float]]: ...
    async def save(self, row: tuple[bytes, str, str, float, float]) -> None: ...
    async def delete(self, keys: list[bytes]) -> None: ...
    async def delete_user(self, user: str) -> None: ...


class WebSessions:
    """Signed-in browsers, in memory, keyed by the SHA-256 of their cookie token.

    With a `store` every change is queued and written by `persist()` (the sign-in and
    sign-out routes await it before they answer), and `ready()` loads the stored
    sign-ins once before the first request is checked: a restart signs nobody out,
    while a sign-out or an expiry stays one.
    """

    def __init__(
        self,
        lifetime_seconds: float,
        max_sessions: int = 10_000,
        clock: Callable[[], float] = time.time,
        store: SignInStore | None = None,
    ) -> None:
        self.lifetime = lifetime_seconds
        self.max_sessions = max_sessions
        self.clock = clock
        self.store = store
        self._by_hash: dict[bytes, WebSession] = {}
        self._writes: list[Callable[[SignInStore], Awaitable[None]]] = []
        self._loaded = store is None
        self._lock: asyncio.Lock | None = None

    @staticmethod
    def _key(token: str) -> bytes:
        return hashlib.sha256(token.encode()).digest()

    def _queue(self, write: Callable[[SignInStore], Awaitable[None]]) -> None:
        if self.store is not None:
            self._writes.append(write)

    async def ready(self) -> None:
        """Load the stored sign-ins, once (cheap after the first call)."""
        if self._loaded or self.store is None:
            return
        self._lock = self._lock or asyncio.Lock()
        async with self._lock:
            if self._loaded:
                return
            try:
                rows = await self.store.load(self.clock())
            except Exception as e:  # storage down: a later request loads them
                get_logger().warning("stored sign-ins not loaded yet", error=type(e).__name__)
                return
            for key, user, role, expires, created in rows:
                self._by_hash.setdefault(key, WebSession(user, role, "", expires, created))
            self._loaded = True

    async def persist(self) -> None:
        """Write the queued changes in order; one that fails stays queued for the next
        call (a sign-out is never forgotten), and the error is raised."""
        if self.store is None or not self._writes:
            return
        self._lock = self._lock or asyncio.Lock()
        async with self._lock:
            while self._writes:
                await self._writes[0](self.store)
                self._writes.pop(0)

    def create(self, user: str, role: str) -> tuple[str, WebSession]:
        """A new session (a fresh token on every sign-in: no fixation) and its token."""
        self.purge()
        if len(self._by_hash) >= self.max_sessions:  # drop the oldest, never grow unbounded
            oldest = min(self._by_hash, key=lambda k: self._by_hash[k].expires)
            del self._by_hash[oldest]
            self._queue(lambda st: st.delete([oldest]))
        token = secrets.token_urlsafe(32)
        ws = WebSession(user, role, csrf_for(token), self.clock() + self.lifetime)
        key = self._key(token)
        self._by_hash[key] = ws
        row = (key, user, role, ws.expires, ws.created)
        self._queue(lambda st: st.save(row))
        return token, ws

    def get(self, token: str | None) -> WebSession | None:
        if not token or len(token) > 256:
            return None
        key = self._key(token)
        ws = self._by_hash.get(key)
        if ws is None:
            return None
        if ws.expires <= self.clock():
            del self._by_hash[key]
            self._queue(lambda st: st.delete([key]))
            return None
        if not ws.csrf:  # loaded from the store: the CSRF token comes from the cookie
            ws.csrf = csrf_for(token)
        return ws

    def end(self, token: str | None) -> WebSession | None:
        if not token:
            return None
        key = self._key(token)
        ws = self._by_hash.pop(key, None)
        if ws is not None:
            self._queue(lambda st: st.delete([key]))
        return ws

    def end_user(self, user: str) -> int:
        """Sign a user out everywhere (a lost handheld); how many sessions ended."""
        keys = [k for k, ws in self._by_hash.items() if ws.user == user]
        for k in keys:
            del self._by_hash[k]
        self._queue(lambda st: st.delete_user(user))
        return len(keys)

    def count(self, user: str) -> int:
        now = self.clock()
        return sum(1 for ws in self._by_hash.values() if ws.user == user and ws.expires > now)

    def purge(self) -> None:
        now = self.clock()
        gone = [k for k, ws in self._by_hash.items() if ws.expires <= now]
        for k in gone:
            del self._by_hash[k]
        if gone:
            self._queue(lambda st: st.delete(gone))


# --------------------------------------------------------------------- rate limit


class LoginLimiter:
    """Failed sign-ins per (user, address) and per address within a sliding window."""

    def __init__(
        self,
        attempts: int,
        window_seconds: float,
        clock: Callable[[], float] = time.monotonic,
        per_address_factor: int = 4,
    ) -> None:
        self.attempts = attempts
        self.window = window_seconds
        self.clock = clock
        self.per_address = attempts * per_address_factor
        self._fails: dict[tuple[str, str], deque[float]] = {}

    def _recent(self, key: tuple[str, str]) -> deque[float]:
        q = self._fails.get(key)
        if q is None:
            return deque()
        cutoff = self.clock() - self.window
        while q and q[0] <= cutoff:
            q.popleft()
        if not q:
            del self._fails[key]
        return q

    def retry_after(self, user: str, address: str) -> float:
        """0 when a sign-in may be tried now, else the seconds to wait."""
        waits = []
        for key, limit in (
            ((user.lower(), address), self.attempts),
            (("", address), self.per_address),
        ):
            q = self._recent(key)
            if len(q) >= limit:
                waits.append(q[-limit] + self.window - self.clock())
        return max(0.0, *waits) if waits else 0.0

    def failed(self, user: str, address: str) -> None:
        now = self.clock()
        for key in ((user.lower(), address), ("", address)):
            self._fails.setdefault(key, deque()).append(now)
        if len(self._fails) > 100_000:  # a flood of names: forget the stalest
            for k in list(self._fails)[:50_000]:
                del self._fails[k]

    def succeeded(self, user: str, address: str) -> None:
        self._fails.pop((user.lower(), address), None)


class Passwords:
    """Checks a user's PIN or password without blocking the event loop.  Only staff sign
    in on the pages: a kiosk or app account is no user here (it has no password)."""

    def __init__(self, users: tuple[UserConfig, ...], concurrency: int = 2) -> None:
        self.users = {u.name: u for u in users if u.role in STAFF and u.password_hash}
        self._gate = asyncio.Semaphore(concurrency)
        self._dummy: str | None = None

    async def run(self, check: Callable[[], _R]) -> _R:
        """Run a slow secret check in a worker thread, at most `concurrency` at once."""
        async with self._gate:
            return await asyncio.to_thread(check)

    async def check(self, user: str, secret: str) -> UserConfig | None:
        u = self.users.get(user)
        async with self._gate:
            if u is None or u.password_hash is None:
                # spend the same work as for a real user, so timing tells nothing
                if self._dummy is None:
                    self._dummy = await asyncio.to_thread(hash_secret, secrets.token_hex(16))
                await asyncio.to_thread(check_secret, secret, self._dummy)
                return None
            ok = await asyncio.to_thread(check_secret, secret, u.password_hash)
        return u if ok else None


# -------------------------------------------------------------------- the checks


def same_origin(request: Request) -> bool:
    """False when the browser says the request comes from another site."""
    origin = request.headers.get("origin")
    if origin is not None:
        # behind a TLS proxy the browser's host may arrive as X-Forwarded-Host
        hosts = {request.headers.get("host"), request.headers.get("x-forwarded-host")}
        if origin == "null" or origin.split("://", 1)[-1] not in hosts:
            return False
    site = request.headers.get("sec-fetch-site")
    return site in (None, "same-origin", "none")


class Guard:
    """A route's access check, as a FastAPI dependency that returns the caller's Actor.

    Bearer first (exactly the API's behaviour for programs), else the sign-in cookie with
    CSRF on state-changing methods.  Raises AuthError; pages turn a 401 into a redirect
    to the login page.
    """

    def __init__(
        self,
        access: Access,
        sessions: WebSessions,
        resolve_token: Callable[[str, str], Awaitable[Actor | None]],
        cookie: str,
    ) -> None:
        assert access.roles is not None
        self.access = access
        self.roles: frozenset[str] = access.roles
        self.sessions = sessions
        self.resolve_token = resolve_token
        self.cookie = cookie

    async def __call__(self, request: Request) -> Actor:
        page = self.access.page
        header = request.headers.get("authorization")
        if header is not None:
            scheme, _, token = header.partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                raise AuthError(401, "sign in first", page=page)
            address = request.client.host if request.client else "?"
            actor = await self.resolve_token(token.strip(), address)
            if actor is None:
                raise AuthError(401, "unknown token", page=page)
        else:
            ws = self.sessions.get(request.cookies.get(self.cookie))
            if ws is None:
                raise AuthError(401, "sign in first", page=page)
            if request.method not in SAFE_METHODS:
                given = request.headers.get(CSRF_HEADER, "")
                if not (
                    same_origin(request) and hmac.compare_digest(given.encode(), ws.csrf.encode())
                ):
                    raise AuthError(403, "missing or wrong CSRF token", page=page)
            actor = ws.actor
            request.state.web_session = ws
        if actor.role not in self.roles:
            raise AuthError(403, f"role {actor.role} may not do this", page=page)
        return actor


class Public:
    """Marks a route as open to anyone (health, metrics, the login page)."""

    def __init__(self, page: bool = False) -> None:
        self.access = Access(None, page)

    async def __call__(self) -> None:
        return None


def route_access(route: APIRoute) -> Access | None:
    """The access a route declares through its Guard or Public dependency (None: none)."""
    found: list[Access] = []

    def walk(d: Dependant) -> None:
        if isinstance(d.call, Guard | Public):
            found.append(d.call.access)
        for sub in d.dependencies:
            walk(sub)

    walk(route.dependant)
    if len(found) > 1 and len({a.roles for a in found}) > 1:
        raise RuntimeError(f"{route.path}: more than one access rule")
    return found[0] if found else None


def publish_access(routes: list[Any]) -> None:
    """Copy each route's access into its OpenAPI operation (x-roles, x-public, x-page);
    a route that declares none is a bug and stops the app from being built."""
    for route in routes:
        if not isinstance(route, APIRoute):
            continue
        access = route_access(route)
        if access is None:
            raise RuntimeError(f"route {route.path} declares no roles")
        extra: dict[str, Any] = dict(route.openapi_extra or {})
        if access.roles is None:
            extra["x-public"] = True
        else:
            extra["x-roles"] = sorted(access.roles)
        if access.page:
            extra["x-page"] = True
        route.openapi_extra = extra


NEXT_MAX = 512
_NEXT_DECODINGS = 4  # %252F is %2F is /: decoded until it stops changing, at most this often


def _same_site_path(target: str) -> bool:
    """True for a path a browser resolves on this very origin, whatever it does with it.

    Browsers drop tabs and newlines anywhere in a URL and spaces and controls around it,
    and read a backslash as a slash, so `/%09/evil.example` (once decoded) and `/\\evil`
    are `//evil...`: another host.  Only printable ASCII is accepted (this server's own
    redirects percent-encode everything else), starting with exactly one slash and
    parsing with no scheme and no host.
    """
    if not target.startswith("/") or target[1:2] in ("/", "\\"):
        return False
    if any(not ("!" <= ch <= "~") or ch == "\\" for ch in target):
        return False
    parts = urlsplit(target)
    if parts.scheme or parts.netloc:
        return False
    # dot segments and empty ones could still make a `//host` path after resolution
    segments = parts.path.split("/")[1:]
    return not {".", ".."} & set(segments) and "" not in segments[:-1]


def safe_next(target: str | None, default: str) -> str:
    """A same-site path to go to after sign-in, else `default` (no open redirect): the
    target and each of its percent-decodings must be a same-site path."""
    if not target or len(target) > NEXT_MAX:
        return default
    form = target
    for _ in range(_NEXT_DECODINGS):
        if not _same_site_path(form):
            return default
        decoded = unquote(form)
        if decoded == form:
            return target
        form = decoded
    return default  # still changing: encoded deeper than any link of ours


def home_for(role: str) -> str:
    return {
        "marketing": "/handheld",
        "security": "/dispatch",
        "ops": "/ops",
        "admin": "/admin",
        "auditor": "/audit",
        "stage_host": "/stage",
        "rewards_desk": "/rewards",
    }.get(role, "/login")


def cookie_for(cfg: Config) -> str:
    return cookie_name(cfg.http.secure_cookies)

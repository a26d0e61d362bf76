"""What the API routes and the pages share: the service, the config and the sign-in
machinery (bearer tokens, cookie sessions, the login rate limiter).

Its own module so that raps.web (the API) and raps.pages (the pages) both depend on it
and not on each other.
"""

from __future__ import annotations

import hashlib

from raps.auth import (
    Access,
    AuthError,
    Guard,
    LoginLimiter,
    Passwords,
    WebSessions,
    cookie_for,
)
from raps.config import Config, check_secret
from raps.service import Service
from raps.store.signins import SignInStore
from selector.records import Actor

BEARER = "\x00bearer"  # the rate limiter's name for unknown bearer tokens (no user has it)


class TokenUsers:
    """Resolves API tokens to users; a verified token is cached by its SHA-256."""

    def __init__(self, cfg: Config) -> None:
        self.users = [u for u in cfg.users if u.api_token_hash]
        self._cache: dict[bytes, Actor] = {}

    def cached(self, token: str) -> Actor | None:
        return self._cache.get(hashlib.sha256(token.encode()).digest())

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


class WebContext:
    """What the routes share: the service, the config and the sign-in machinery."""

    def __init__(self, service: Service, cfg: Config) -> None:
        self.service = service
        self.cfg = cfg
        self.tokens = TokenUsers(cfg)
        # sign-ins are kept in the database: a restart signs nobody out
        self.sessions = WebSessions(
            cfg.http.session_minutes * 60.0, store=SignInStore(service.engine)
        )
        self.limiter = LoginLimiter(cfg.http.login_attempts, cfg.http.login_window_seconds)
        self.passwords = Passwords(cfg.users)
        self.cookie = cookie_for(cfg)

    async def resolve_token(self, token: str, address: str) -> Actor | None:
        """A bearer token's user: cached after its first check, which runs in a worker
        thread; unknown tokens count as failed sign-ins of the address (then 429)."""
        actor = self.tokens.cached(token)
        if actor is not None:
            return actor
        wait = self.limiter.retry_after(BEARER, address)
        if wait > 0:
            raise AuthError(429, "too many unknown tokens; try again later",
                            retry_after=int(wait) + 1)  # fmt: skip
        actor = await self.passwords.run(lambda: self.tokens.resolve(token))
        if actor is None:
            self.limiter.failed(BEARER, address)
        return actor

    def guard(self, roles: frozenset[str], *, page: bool = False) -> Guard:
        return Guard(Access(roles, page), self.sessions, self.resolve_token, self.cookie)

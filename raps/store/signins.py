"""Signed-in browsers in the database, so that a daemon restart signs nobody out.

raps.auth.WebSessions keeps the sign-ins in memory (every request reads them) and writes
each change here: a sign-in, a sign-out, an admin's "sign out everywhere", an expiry.
Rows hold the SHA-256 of the cookie's token, never the token, so the table gives nobody
a way in; the CSRF token is derived from the cookie's token and not stored either.
"""

from __future__ import annotations

from sqlalchemy import delete, insert, select
from sqlalchemy.ext.asyncio import AsyncEngine

from raps.store.schema import web_signins

# (token hash, user, role, expires, created): expires and created are wall-clock seconds
SignInRow = tuple[bytes, str, str, float, float]


class SignInStore:
    """The web_signins table (revision 0005)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def load(self, now: float) -> list[SignInRow]:
        """The sign-ins still valid at `now`; expired ones are deleted on the way."""
        async with self.engine.begin() as conn:
            await conn.execute(delete(web_signins).where(web_signins.c.expires <= now))
            rows = (await conn.execute(select(web_signins))).all()
        return [
            (bytes.fromhex(r.token_hash), r.user_name, r.role, r.expires, r.created) for r in rows
        ]

    async def save(self, row: SignInRow) -> None:
        key, user, role, expires, created = row
        async with self.engine.begin() as conn:
            await conn.execute(
                insert(web_signins).values(
                    token_hash=key.hex(), user_name=user, role=role, expires=expires,
                    created=created,
                )
            )  # fmt: skip

    async def delete(self, keys: list[bytes]) -> None:
        async with self.engine.begin() as conn:
            await conn.execute(
                delete(web_signins).where(web_signins.c.token_hash.in_([k.hex() for k in keys]))
            )

    async def delete_user(self, user: str) -> None:
        async with self.engine.begin() as conn:
            await conn.execute(delete(web_signins).where(web_signins.c.user_name == user))

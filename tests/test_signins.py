"""Sign-ins kept in the database (revision 0005): a new WebSessions over the same
database (a restart) knows every sign-in, never a signed-out or expired one, and the
CSRF token of a sign-in is the same after the restart although it is never stored."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from raps.auth import WebSessions
from raps.store.database import migrate, open_engine
from raps.store.schema import web_signins
from raps.store.signins import SignInStore

pytestmark = pytest.mark.asyncio


class Clock:
    def __init__(self) -> None:
        self.t = 1_800_000_000.0

    def __call__(self) -> float:
        return self.t


@pytest_asyncio.fixture
async def engine(tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    e = open_engine(f"sqlite:///{tmp_path / 'raps.db'}")
    await migrate(e)
    try:
        yield e
    finally:
        await e.dispose()


async def restarted(engine: AsyncEngine, clock: Clock) -> WebSessions:
    ws = WebSessions(60, clock=clock, store=SignInStore(engine))
    await ws.ready()
    return ws


async def test_sign_ins_survive_a_restart_sign_outs_and_expiry_too(engine: AsyncEngine) -> None:
    clock = Clock()
    first = await restarted(engine, clock)
    stay, s1 = first.create("ann", "marketing")
    leave, _ = first.create("sam", "security")
    lost_a, _ = first.create("bob", "marketing")
    lost_b, _ = first.create("bob", "marketing")
    await first.persist()
    first.end(leave)
    assert first.end_user("bob") == 2
    await first.persist()

    second = await restarted(engine, clock)
    again = second.get(stay)
    assert again is not None and (again.user, again.role) == ("ann", "marketing")
    assert again.csrf == s1.csrf  # derived from the cookie's token: the same after a restart
    assert second.get(leave) is None and second.get(lost_a) is None and second.get(lost_b) is None

    clock.t += 61  # past the lifetime: gone, and deleted from the table on the next load
    third = await restarted(engine, clock)
    assert third.get(stay) is None
    async with engine.connect() as conn:
        assert (await conn.execute(select(web_signins))).all() == []


async def test_the_table_holds_no_token(engine: AsyncEngine) -> None:
    ws = await restarted(engine, Clock())
    token, session = ws.create("ann", "marketing")
    await ws.persist()
    async with engine.connect() as conn:
        rows = (await conn.execute(select(web_signins))).all()
    assert len(rows) == 1
    text = repr(tuple(rows[0]))
    assert token not in text and session.csrf not in text and rows[0].user_name == "ann"

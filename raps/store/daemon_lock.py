"""One writer of a journal at a time: a lock the daemon holds on its database while it
runs, which an offline writer (`raps schedule import`) must take before it writes.

The journal is one hash chain; a second writer appending meanwhile would fail on the
chain's sequence at best.  So the import asks first and refuses with a clear message
when a daemon holds the database.  SQLite: an advisory `flock` on a file beside the
database (the kernel drops it when the holder dies, kill -9 included).  PostgreSQL: a
session-level advisory lock on a connection kept open for as long as it is held (the
server drops it when that connection goes).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from raps.store.database import open_engine

LOCK_KEY = 0x52415053_0001  # "RAPS", 1: the daemon's writer lock


class DatabaseBusy(RuntimeError):
    """Another process (a running daemon) holds the database's writer lock."""


class DaemonLock:
    """The writer lock of the database at `url`; `acquire()` never waits."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._fd: int | None = None
        self._engine: AsyncEngine | None = None
        self._conn: AsyncConnection | None = None

    def _path(self) -> Path | None:
        u = make_url(self.url)
        if u.get_backend_name() != "sqlite" or not u.database or u.database == ":memory:":
            return None
        return Path(u.database + ".writer-lock")

    async def acquire(self) -> bool:
        """Take the lock if nobody holds it; False if somebody does."""
        if make_url(self.url).get_backend_name() == "postgresql":
            return await self._acquire_postgres()
        path = self._path()
        if path is None:
            return True  # an in-memory database has no other writer
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    async def _acquire_postgres(self) -> bool:
        self._engine = open_engine(self.url)
        self._conn = await self._engine.connect()
        got = await self._conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": LOCK_KEY})
        held = bool(got.scalar())
        await self._conn.commit()  # the lock is the session's: no transaction is kept open
        if held:
            return True
        await self.release()
        return False

    async def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._fd, fcntl.LOCK_UN)
                os.close(self._fd)
            self._fd = None
        if self._conn is not None:
            with contextlib.suppress(Exception):
                await self._conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": LOCK_KEY})
                await self._conn.commit()
            with contextlib.suppress(Exception):
                await self._conn.close()
            self._conn = None
        if self._engine is not None:
            await self._engine.dispose()
            self._engine = None

"""Opening the database: URL dialects, SQLite pragmas, and Alembic migrations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config as AlembicConfig
from sqlalchemy import event
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


def async_url(url: str) -> str:
    """The async driver URL for a configured one (sqlite:/// or postgresql://)."""
    u = make_url(url)
    backend = u.get_backend_name()
    if backend == "sqlite":
        u = u.set(drivername="sqlite+aiosqlite")
        if u.database and u.database != ":memory:":
            Path(u.database).parent.mkdir(parents=True, exist_ok=True)
    elif backend == "postgresql":
        u = u.set(drivername="postgresql+asyncpg")
    else:
        raise ValueError(f"unsupported database {backend!r}: use sqlite or postgresql")
    return u.render_as_string(hide_password=False)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL lets readers run beside the writer; FULL makes each commit survive power loss,
    # which the journal promises before a pick is shown.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=5000")
    cursor.close()


def open_engine(url: str) -> AsyncEngine:
    # hide_parameters: errors and logs never quote a statement's values (card numbers).
    # No pre-ping: it costs round trips on every pick; a connection that died fails its
    # command cleanly (undone, 503) and the pool replaces it for the retry.
    engine = create_async_engine(
        async_url(url), hide_parameters=True, pool_recycle=3600, pool_pre_ping=False
    )
    if engine.dialect.name == "sqlite":
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
    return engine


def _upgrade(connection: Connection) -> None:
    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["connection"] = connection
    command.upgrade(cfg, "head")


async def migrate(engine: AsyncEngine) -> None:
    """Bring the schema to the newest revision (idempotent)."""
    async with engine.begin() as conn:
        await conn.run_sync(_upgrade)

"""raps.store.headmark: the newest head the daemon committed, and the journal it refuses.

The file is the daemon's memory across restarts: written after commits (the newest head
wins), read back only for the database it names. JournalStore.load_head holds the
journal to it: ahead moves the mark on, behind or different at the mark's entry is
refused, and a refused journal takes no entry.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from sqlalchemy.ext.asyncio import AsyncEngine

from raps.chain import Head
from raps.store.database import migrate, open_engine
from raps.store.headmark import DEFAULT_FILE, HeadMark, database_identity, mark_path
from raps.store.journal import JournalRewound, JournalStore
from tests.test_journal import fill, sql


def test_where_the_mark_lives() -> None:
    assert mark_path("sqlite:////srv/raps/raps.db", None) == Path("/srv/raps/raps.db.head")
    assert mark_path("sqlite+aiosqlite:///var/raps.db", None) == Path("var/raps.db.head")
    assert mark_path("sqlite:///:memory:", None) is None
    assert mark_path("postgresql://raps@db/raps", None) == Path(DEFAULT_FILE)
    assert mark_path("postgresql://raps@db/raps", "/var/lib/raps/h.json") == Path(
        "/var/lib/raps/h.json"
    )
    # the same database whichever driver or password names it; never the password
    same = database_identity("postgresql+asyncpg://raps:secret@db/raps")
    assert same == database_identity("postgresql://raps:other@db/raps")
    assert "secret" not in same


@pytest.mark.asyncio
async def test_the_newest_head_is_written_and_read_back_for_its_database(tmp_path: Path) -> None:
    path = tmp_path / "mark.json"
    mark = HeadMark(path, "sqlite:///a.db")
    for seq in (1, 2, 3):
        mark.advance(Head(seq, f"{seq:064x}"))
    mark.advance(Head(2, "f" * 64))  # never backwards
    await mark.flush()
    assert json.loads(path.read_text())["seq"] == 3
    again = HeadMark(path, "sqlite:///a.db")
    again.load()
    assert again.head == Head(3, f"{3:064x}")
    other = HeadMark(path, "sqlite:///b.db")  # another database: no mark, a new one
    other.load()
    assert other.head is None
    path.write_text("{not json")
    broken = HeadMark(path, "sqlite:///a.db")
    broken.load()  # logged, not raised: an unreadable mark refuses nothing
    assert broken.head is None


@pytest_asyncio.fixture
async def engine(tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    eng = open_engine(f"sqlite:///{tmp_path / 'raps.db'}")
    await migrate(eng)
    try:
        yield eng
    finally:
        await eng.dispose()


@pytest.mark.asyncio
async def test_the_journal_is_held_to_the_mark(engine: AsyncEngine, tmp_path: Path) -> None:
    url = str(engine.url).replace("+aiosqlite", "")
    refusals: list[str] = []
    store = JournalStore(engine, HeadMark.for_database(url, str(tmp_path / "m.json")))
    entries = await fill(store, "S-A")
    await store.settle()
    last = entries[-1]

    # ahead (written by another process, as `raps schedule import` does): moves the mark
    ahead = JournalStore(engine)
    await ahead.load_head()
    more = await fill(ahead, "S-B")
    mark = HeadMark.for_database(url, str(tmp_path / "m.json"))
    assert mark is not None and mark.head == Head(last.seq, last.hash)
    held = JournalStore(engine, mark, refusals.append)
    assert await held.load_head() == Head(more[-1].seq, more[-1].hash)
    await held.settle()

    # the same length, another entry there: refused, named, and nothing appended after
    sql(url, "UPDATE journal SET hash = ? WHERE seq = ?", "0" * 64, more[-1].seq)
    with pytest.raises(JournalRewound, match=f"journal entry {more[-1].seq} has hash 0000"):
        await held.load_head()
    assert refusals and refusals[0].startswith(f"journal entry {more[-1].seq} has hash")
    with pytest.raises(JournalRewound):
        await held.append([{**more[-1].record, "type": "late"}])

    # behind: refused by a daemon that starts on it
    sql(url, "DELETE FROM journal WHERE seq = ?", more[-1].seq)
    restarted = JournalStore(engine, HeadMark.for_database(url, str(tmp_path / "m.json")))
    with pytest.raises(JournalRewound, match=f"ends at entry {more[-1].seq - 1}, but this"):
        await restarted.load_head()

"""A start reads every scheduled session's journal in one pass (issue 20), and vouches
for no more than the entry-by-entry reads did, on SQLite and PostgreSQL.

`raps.store.journal_read.read_sessions` gives each wanted session its entries (as
`JournalStore.session_entries` returns them), the sealed seeds come in one query, and a
session's range is vouched for by the chain's breaks found in the same pass (as
`chain_break` says).  A session with a row the pass cannot vouch for (content edited,
a row filed under another session either way round, a record that is no record) is marked for the
entry-by-entry checks, which word its refusal; the others are not.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from raps.store.database import migrate, open_engine
from raps.store.journal import JournalStore
from raps.store.journal_read import read_sessions
from tests.test_journal import SESSION_A, SESSION_B, fill

pytestmark = pytest.mark.asyncio
OTHER = "stream:elsewhere"


@pytest_asyncio.fixture
async def store(db_url: str) -> AsyncIterator[JournalStore]:
    eng = open_engine(db_url)
    await migrate(eng)
    s = JournalStore(eng)
    await fill(s, SESSION_A)
    await fill(s, SESSION_B)
    try:
        yield s
    finally:
        await eng.dispose()


async def sql(engine: AsyncEngine, statement: str, **params: object) -> None:
    async with engine.begin() as conn:
        await conn.execute(text(statement), params)


async def first_seq(engine: AsyncEngine, session_id: str, type_: str) -> int:
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                text("SELECT min(seq) FROM journal WHERE session_id = :s AND type = :t"),
                {"s": session_id, "t": type_},
            )
        ).first()
    assert row is not None and row[0] is not None
    return int(row[0])


async def test_one_pass_reads_what_each_session_s_own_reads_return(store: JournalStore) -> None:
    read = await read_sessions(store.engine, [SESSION_A, SESSION_B, "never-opened"])
    assert read.suspect == set() and read.gaps == [] and read.links == []
    for sid in (SESSION_A, SESSION_B):
        own = await store.session_entries(sid)
        assert read.entries[sid] == own
        assert read.records[sid] == [e.record for e in own]
        assert read.links_ok(own[0].seq, own[-1].seq)
        assert await store.chain_break(own[0].seq, own[-1].seq) is None
    assert read.entries["never-opened"] == [] and read.records["never-opened"] == []
    seeds = await store.sealed_seeds()
    assert seeds == {sid: await store.sealed_seed(sid) for sid in (SESSION_A, SESSION_B)}


async def test_an_edited_record_marks_its_session_only(store: JournalStore) -> None:
    seq = await first_seq(store.engine, SESSION_A, "pick.drawn")
    # still the same JSON, not the same text: the hash does not match any more
    await sql(store.engine, "UPDATE journal SET record = record || ' ' WHERE seq = :seq", seq=seq)
    read = await read_sessions(store.engine, [SESSION_A, SESSION_B])
    assert read.suspect == {SESSION_A}
    with pytest.raises(Exception, match="hash does not match"):
        await store.session_entries(SESSION_A)


@pytest.mark.parametrize("column", [OTHER, SESSION_B])
async def test_a_row_filed_under_another_session_marks_the_session_it_names(
    store: JournalStore, column: str
) -> None:
    seq = await first_seq(store.engine, SESSION_A, "session.closed")
    await sql(store.engine, "UPDATE journal SET session_id = :c WHERE seq = :seq", c=column,
              seq=seq)  # fmt: skip
    read = await read_sessions(store.engine, [SESSION_A, SESSION_B])
    assert SESSION_A in read.suspect
    assert (SESSION_B in read.suspect) == (column == SESSION_B)
    assert SESSION_A in await store.misfiled([SESSION_A])


async def test_a_record_that_is_no_record_marks_its_session(store: JournalStore) -> None:
    seq = await first_seq(store.engine, SESSION_B, "session.opened")
    await sql(store.engine, "UPDATE journal SET record = '[1]' WHERE seq = :seq", seq=seq)
    read = await read_sessions(store.engine, [SESSION_A, SESSION_B])
    assert read.suspect == {SESSION_B}


SLOW_OK = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]


@settings(max_examples=25, deadline=None, suppress_health_check=SLOW_OK)
@given(data=st.data())
async def test_a_range_is_vouched_for_exactly_when_chain_break_finds_nothing(
    db_url: str, data: st.DataObject
) -> None:
    """Rows deleted anywhere (and hashes of others overwritten): for every range of the
    journal, links_ok agrees with chain_break."""
    eng = open_engine(db_url)
    try:
        await migrate(eng)
        await sql(eng, "DELETE FROM journal")
        await sql(eng, "DELETE FROM sealed_seeds")
        s = JournalStore(eng)
        entries = await fill(s, SESSION_A)
        n = len(entries)
        gone = data.draw(st.sets(st.integers(1, n), max_size=min(4, n - 1)))
        relinked = data.draw(st.sets(st.integers(1, n), max_size=2))
        for seq in gone:
            await sql(eng, "DELETE FROM journal WHERE seq = :seq", seq=seq)
        for seq in relinked - gone:
            await sql(eng, "UPDATE journal SET prev = :p WHERE seq = :seq", p="f" * 64, seq=seq)
        read = await read_sessions(eng, [SESSION_A])
        kept = [seq for seq in range(1, n + 1) if seq not in gone]
        # a session's range runs from one of its rows to another
        ranges = data.draw(st.lists(st.tuples(st.sampled_from(kept), st.sampled_from(kept)),
                                    min_size=5, max_size=15))  # fmt: skip
        for a, b in ranges:
            first, last = min(a, b), max(a, b)
            want = await s.chain_break(first, last) is None
            assert read.links_ok(first, last) == want, (first, last, gone, relinked)
    finally:
        await eng.dispose()

"""The journal: any one-byte change, deleted, reordered or forged entry, or truncated tail
is caught by `raps verify`, which names the first entry that no longer holds.

The journal under test is a real session's: a DrawSession run over a small floor with
awards, a staff no-show, a claim-timer no-show, voids, redraws and a forced close, its
records chained with `raps.chain.link`.  Property tests mutate that chain many ways and
require `raps.audit.check` to fail on the chain (not merely on a recomputed pick) and to
name the entry by its seq.  The storage tests run the same journal through
`JournalStore` on SQLite and on a real PostgreSQL, and through the `raps verify` and
`raps export` commands, tampering with rows by plain SQL as an insider would.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import re
import sqlite3
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
import pytest_asyncio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from raps import cli
from raps.audit import check, read_database, read_export
from raps.chain import GENESIS, Entry, Head, check_chain, entry_hash, link
from raps.store.database import migrate, open_engine
from raps.store.journal import JournalStore, export_lines, with_pools
from raps.store.schema import journal as journal_table
from selector.floor import Floor
from selector.promotion import EarnRules, Promotion
from selector.records import Actor
from selector.session import Command, DrawSession, Prize, PrizeKind
from tests.builders import Events, seated_slot_player, seated_table_player, small_layout
from tests.daemon_helpers import card

Rec = dict[str, Any]
SESSION_A = "S-20260425-1200"
SESSION_B = "S-20260425-1800"


# ------------------------------------------------------------------ a real session


class _Script:
    """Commands with unique ids and a clock that moves five seconds per command."""

    def __init__(self, session: DrawSession, start: datetime, actor: Actor) -> None:
        self.s, self.now, self.actor, self.n = session, start, actor, 0

    def cmd(self) -> Command:
        self.now += timedelta(seconds=5)
        self.n += 1
        return Command(f"{self.s.session_id}-c{self.n}", self.actor, self.now)

    def draw(self, kind: str) -> int:
        out = self.s.draw(self.cmd(), kind)
        assert out.pick is not None
        return out.pick.number


def session_commands(session_id: str, seed: bytes) -> list[list[Rec]]:
    """A full session's records grouped by the command (or timer expiry) that made them,
    as the daemon appends them; JSON round-tripped, as they come back from storage.

    Awards, a staff no-show and its redraw, a void and its redraw, two picks that the
    claim timer turns into no-shows, and a forced close that voids the last pending pick.
    One player's display name is not ASCII, so the journal's UTF-8 handling is exercised.
    """
    floor = Floor(small_layout(), [Promotion("raps")], EarnRules(), idle_seconds=3600)
    ev = Events()
    for i in range(1, 9):
        name = "Zoë K." if i == 3 else "Thandi M."
        seated_slot_player(floor, ev, card(i), f"M{i:02d}", name=name)
    for i in range(6):
        seated_table_player(floor, ev, card(100 + i), f"T{i // 3 + 1}", i % 3 + 1)
    s = DrawSession(session_id, "raps", floor)
    run = _Script(s, ev.now, Actor("ann", "marketing"))
    groups: list[list[Rec]] = []

    def step(action: Any) -> Any:
        start = len(s.records)
        out = action()
        groups.append([r.to_dict() for r in s.records[start:]])
        return out

    step(lambda: s.open(run.cmd(), seed))
    p1 = step(lambda: run.draw("slots"))
    step(lambda: s.verify(run.cmd(), p1))
    step(lambda: s.award(run.cmd(), p1, Prize(50_000, PrizeKind.CASH, "E07")))
    p2 = step(lambda: run.draw("slots"))
    step(lambda: s.no_show(run.cmd(), p2))
    p3 = step(lambda: run.draw("slots"))
    step(lambda: s.verify(run.cmd(), p3))
    p4 = step(lambda: run.draw("tables"))
    step(lambda: s.void(run.cmd(), p4, "wrong seat announced"))
    p5 = step(lambda: run.draw("tables"))
    step(lambda: s.verify(run.cmd(), p5))
    step(lambda: s.award(run.cmd(), p5, Prize(20_000, PrizeKind.PLUS_PLAY, "E12")))
    step(lambda: run.draw("slots"))
    step(lambda: run.draw("slots"))
    run.now += timedelta(seconds=91)
    step(lambda: s.expire(run.now))
    p8 = step(lambda: run.draw("slots"))
    step(lambda: s.verify(run.cmd(), p8))
    step(lambda: run.draw("tables"))
    step(lambda: s.close(run.cmd(), force=True))
    groups = [g for g in groups if g]
    as_json: list[list[Rec]] = json.loads(json.dumps(groups, ensure_ascii=False))
    return as_json


def seed_of(session_id: str) -> bytes:
    return hashlib.sha256(f"test_journal {session_id}".encode()).digest()


@functools.cache
def _journal() -> tuple[tuple[Entry, ...], str]:
    """The chained journal of one session (cached: the property tests run it many times)."""
    records = [r for g in session_commands(SESSION_A, seed_of(SESSION_A)) for r in g]
    return tuple(link(records, None)), json.dumps(records)


def journal() -> tuple[list[Entry], list[Rec]]:
    """The entries and (a fresh copy of) the records with their pools."""
    entries, records = _journal()
    return list(entries), json.loads(records)


def head_of(entries: Sequence[Entry]) -> Head:
    return Head(entries[-1].seq, entries[-1].hash)


def names_entry(message: str | None, seq: int) -> bool:
    """Whether a chain error names entry `seq` ('entry 12', 'expected seq 12' or
    'published head is 12')."""
    return message is not None and re.search(rf"\b(entry|seq|head is) {seq}\b", message) is not None


def assert_chain_fails_at(entries: list[Entry], records: list[Rec], seq: int,
                          head: Head | None = None) -> str:  # fmt: skip
    report = check(entries, records, head)
    assert not report.ok, "tampering went unnoticed"
    assert report.chain_error is not None, f"the chain held: {report.lines()}"
    assert names_entry(report.chain_error, seq), (seq, report.chain_error)
    assert "RESULT: FAILED" in report.lines()
    return report.chain_error


def test_the_journal_covers_every_record_type() -> None:
    """Guard for the fixture: the mutations below rely on a varied, honest journal."""
    entries, records = journal()
    types = {r["type"] for r in records}
    assert types >= {"session.opened", "pick.drawn", "pick.verified", "pick.awarded",
                     "pick.no_show", "pick.voided", "session.closed"}  # fmt: skip
    assert {r["data"]["by"] for r in records if r["type"] == "pick.no_show"} == {
        "staff", "claim_timer"}  # fmt: skip
    assert any(r["actor"] == {"user": "system", "role": "timer"} for r in records)
    assert any(not e.record_json.isascii() for e in entries)
    assert len(entries) >= 20


def test_the_honest_journal_verifies() -> None:
    entries, records = journal()
    report = check(entries, records, head_of(entries))
    assert report.ok, report.lines()
    assert report.sessions == {SESSION_A: []}
    assert report.picks == 9
    assert [e.seq for e in entries] == list(range(1, len(entries) + 1))
    assert entries[0].prev == GENESIS


def test_pools_are_outside_the_hash_but_their_digest_is_inside() -> None:
    """The pool snapshot is stored beside the chain: the hashed record holds its digest."""
    entries, records = journal()
    for e, r in zip(entries, records, strict=True):
        assert '"pool":' not in e.record_json
        if r["type"] == "pick.drawn":
            assert r["data"]["pool_digest"] in e.record_json


# ------------------------------------------------------------ mutations: properties

PROPERTY = settings(max_examples=60, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
N = len(_journal()[0])
FIELDS = ("record_json", "prev", "hash")


@PROPERTY
@given(
    index=st.integers(0, N - 1),
    field=st.sampled_from(FIELDS),
    where=st.floats(0, 1, exclude_max=True),
    mask=st.integers(1, 255),
)
def test_any_one_byte_change_is_detected(index: int, field: str, where: float, mask: int) -> None:
    """Flip one byte of an entry's record, previous hash or hash (as stored, UTF-8)."""
    entries, records = journal()
    e = entries[index]
    raw = bytearray(getattr(e, field).encode("utf-8"))
    raw[int(where * len(raw))] ^= mask
    changed: dict[str, Any] = {field: raw.decode("utf-8", errors="replace")}
    entries[index] = replace(e, **changed)
    assert getattr(entries[index], field) != getattr(e, field)
    assert_chain_fails_at(entries, records, e.seq)


@PROPERTY
@given(index=st.integers(1, N - 2))
def test_a_deleted_entry_is_detected(index: int) -> None:
    """Any entry but the first and the last: a missing last entry is a truncated tail
    (caught against the head, below); a missing first one only a database journal can
    show, since an export may start mid-chain (test_verify_detects_a_deleted_first_row)."""
    entries, records = journal()
    gone = entries.pop(index)
    records.pop(index)
    msg = assert_chain_fails_at(entries, records, gone.seq + 1)
    assert names_entry(msg, gone.seq)


@PROPERTY
@given(st.data())
def test_two_swapped_entries_are_detected(data: st.DataObject) -> None:
    i = data.draw(st.integers(1, N - 2), label="i")
    j = data.draw(st.integers(i + 1, N - 1), label="j")
    entries, records = journal()
    first = entries[i].seq
    entries[i], entries[j] = entries[j], entries[i]
    records[i], records[j] = records[j], records[i]
    assert_chain_fails_at(entries, records, first)


@PROPERTY
@given(keep=st.integers(0, N - 1))
def test_a_truncated_tail_is_detected_against_the_published_head(keep: int) -> None:
    """Cutting the tail leaves a valid chain; only the head kept elsewhere catches it."""
    entries, records = journal()
    head = head_of(entries)
    del entries[keep:]
    del records[keep:]
    assert check_chain(entries) is None  # on its own, a shorter chain is still a chain
    report = check(entries, records, head)
    assert not report.ok and report.chain_error is not None
    assert names_entry(report.chain_error, head.seq), report.chain_error
    if keep:
        assert names_entry(report.chain_error, keep), report.chain_error


def _forged(records: list[Rec], at: int) -> Rec:
    """A plausible record someone might slip in: an extra award of a drawn pick."""
    drawn = next(r for r in records if r["type"] == "pick.drawn")
    d = drawn["data"]
    return {"type": "pick.awarded", "session_id": drawn["session_id"], "at": drawn["at"],
            "actor": {"user": "mallory", "role": "marketing"},
            "data": {"promotion_id": d["promotion_id"], "rehearsal": False,
                     "command_id": f"forged-{at}", "pick": d["pick"], "kind": d["kind"],
                     "slot": d["slot"], "card": d["card"], "amount": 1_000_000,
                     "prize_kind": "cash", "envelope": "E99"}}  # fmt: skip


@PROPERTY
@given(at=st.integers(0, N - 1), rehash_tail=st.booleans())
def test_an_inserted_forged_entry_is_detected(at: int, rehash_tail: bool) -> None:
    """A forged entry slipped in before entry `at`, hashed correctly onto its predecessor.

    A careless forger stops there, and the next entry's seq gives it away.  A careful one
    also renumbers and rehashes every later entry, so the chain is whole again: then only
    the published head can catch it."""
    entries, records = journal()
    head = head_of(entries)
    forged_rec = _forged(records, at)
    new_records = [*records[:at], forged_rec, *records[at:]]
    before = Head(entries[at - 1].seq, entries[at - 1].hash) if at else None
    if rehash_tail:
        new_entries = [*entries[:at], *link(new_records[at:], before)]
        assert check_chain(new_entries) is None
        assert_chain_fails_at(new_entries, new_records, head.seq, head)
    else:
        (forged,) = link([forged_rec], before)
        new_entries = [*entries[:at], forged, *entries[at:]]
        assert_chain_fails_at(new_entries, new_records, entries[at].seq)


# ------------------------------------------------- mutations at the front of a journal


def test_a_swap_with_the_first_entry_is_detected() -> None:
    entries, records = journal()
    entries[0], entries[5] = entries[5], entries[0]
    records[0], records[5] = records[5], records[0]
    report = check(entries, records, None)
    assert not report.ok and report.chain_error is not None


def test_rewriting_the_whole_chain_is_caught_only_by_the_head() -> None:
    """An insider who edits an award and rehashes everything after it leaves a perfect
    chain: the published head is what makes that visible."""
    entries, records = journal()
    head = head_of(entries)
    k = next(i for i, r in enumerate(records) if r["type"] == "pick.awarded")
    records[k]["data"]["amount"] = 9_999_999
    forged = [*entries[:k], *link(records[k:], Head(entries[k - 1].seq, entries[k - 1].hash))]
    assert check(forged, records, None).ok
    assert_chain_fails_at(forged, records, head.seq, head)


def test_a_malformed_head_is_refused() -> None:
    with pytest.raises(ValueError, match="SEQ:SHA256HEX"):
        Head.parse("12:abc")
    entries, _ = journal()
    assert Head.parse(str(head_of(entries))) == head_of(entries)


# ------------------------------------------------------------------ JournalStore


async def fill(store: JournalStore, session_id: str) -> list[Entry]:
    """Append a session command by command, its sealed seed with the open (as the
    service does); returns every entry appended."""
    out: list[Entry] = []
    for i, group in enumerate(session_commands(session_id, seed_of(session_id))):
        sealed = (
            (session_id, group[0]["data"]["commitment"], b"n" * 12, b"c" * 48) if i == 0 else None
        )
        out += await store.append(group, sealed)
    return out


@pytest_asyncio.fixture
async def engine(db_url: str) -> AsyncIterator[AsyncEngine]:
    eng = open_engine(db_url)
    await migrate(eng)
    try:
        yield eng
    finally:
        await eng.dispose()


@pytest.mark.asyncio
async def test_append_and_read_back(engine: AsyncEngine) -> None:
    store = JournalStore(engine)
    assert await store.load_head() is None
    appended = await fill(store, SESSION_A)
    expected = list(link([r for g in session_commands(SESSION_A, seed_of(SESSION_A)) for r in g],
                         None))  # fmt: skip
    assert appended == expected
    assert store.head == head_of(expected)
    assert await store.entries() == expected
    assert await store.entries(3, 7) == expected[2:7]
    assert await store.entries(len(expected) + 1) == []
    sealed = await store.sealed_seed(SESSION_A)
    assert sealed == (b"n" * 12, b"c" * 48)
    assert await store.sealed_seed("no-such-session") is None


@pytest.mark.asyncio
async def test_the_head_survives_a_reopen(db_url: str, engine: AsyncEngine) -> None:
    store = JournalStore(engine)
    appended = await fill(store, SESSION_A)
    await engine.dispose()
    again = open_engine(db_url)
    try:
        reopened = JournalStore(again)
        assert await reopened.load_head() == head_of(appended)
        # the next append continues the chain where the old process left it
        more = await fill(reopened, SESSION_B)
        assert more[0].seq == appended[-1].seq + 1 and more[0].prev == appended[-1].hash
        assert check_chain(await reopened.entries()) is None
    finally:
        await again.dispose()


@pytest.mark.asyncio
async def test_a_failed_append_writes_nothing(engine: AsyncEngine) -> None:
    """Records, pools and the sealed seed go in one transaction: when any part fails
    (here the sealed seed, refused as a duplicate) nothing is written and the head stays."""
    store = JournalStore(engine)
    groups = session_commands(SESSION_A, seed_of(SESSION_A))
    await store.append(groups[0], (SESSION_A, "c" * 64, b"n" * 12, b"c" * 48))
    head = store.head
    draw = groups[1]
    assert draw[-1]["type"] == "pick.drawn"
    with pytest.raises(IntegrityError):
        await store.append(draw, (SESSION_A, "c" * 64, b"n" * 12, b"c" * 48))
    assert store.head == head
    assert await store.load_head() == head
    assert await store.pools([draw[-1]["data"]["pool_digest"]]) == {}
    # the same records (the pool requested, the winner) then append cleanly at the same
    # place in the chain
    first, *_ = await store.append(draw)
    assert first.seq == head.seq + 1 and first.prev == head.hash  # type: ignore[union-attr]


@pytest.mark.asyncio
async def test_pools_are_stored_once_per_digest(engine: AsyncEngine) -> None:
    """The same pool drawn from twice (in one append and across appends) is stored
    once, in the first pick's row, and reading it back gives the canonical card list."""
    store = JournalStore(engine)
    groups = session_commands(SESSION_A, seed_of(SESSION_A))
    drawn = next(r for g in groups for r in g if r["type"] == "pick.drawn")
    twin = json.loads(json.dumps(drawn))
    twin["data"]["pick"] += 100
    await store.append([groups[0][0], drawn, twin])
    await store.append([twin])
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                select(journal_table.c.seq, journal_table.c.pool_size).where(
                    journal_table.c.pool_digest.is_not(None)
                )
            )
        ).one()
    assert row.seq == 2  # the first pick.drawn entry of the first append
    assert row.pool_size == len(drawn["data"]["pool"])
    digest = drawn["data"]["pool_digest"]
    assert await store.pools([digest, digest]) == {digest: drawn["data"]["pool"]}
    records = await with_pools(store, await store.entries())
    assert [r["data"].get("pool") for r in records[1:]] == [drawn["data"]["pool"]] * 3


@pytest.mark.asyncio
async def test_session_ranges(engine: AsyncEngine) -> None:
    store = JournalStore(engine)
    a = await fill(store, SESSION_A)
    b = await fill(store, SESSION_B)
    assert await store.session_range(SESSION_A) == (1, len(a))
    assert await store.session_range(SESSION_B) == (len(a) + 1, len(a) + len(b))
    assert await store.session_range("S-none") is None
    assert await store.session_ids() == [SESSION_A, SESSION_B]


@pytest.mark.asyncio
async def test_an_export_reads_back_and_verifies(engine: AsyncEngine, tmp_path: Path) -> None:
    """export_lines -> file -> read_export gives the same entries and records, and the
    session verifies pick by pick from the file alone (second session: mid-chain)."""
    store = JournalStore(engine)
    await fill(store, SESSION_A)
    await fill(store, SESSION_B)
    first, last = await store.session_range(SESSION_B)  # type: ignore[misc]
    entries = await store.entries(first, last)
    records = await with_pools(store, entries)
    path = tmp_path / "export.jsonl"
    path.write_text("\n".join(export_lines(entries, records)) + "\n", encoding="utf-8")
    got_entries, got_records = read_export(path)
    assert got_entries == entries
    assert got_records == records
    report = check(got_entries, got_records, head_of(entries))
    assert report.ok, report.lines()
    assert report.sessions == {SESSION_B: []}
    assert report.first_seq == first


# ------------------------------------------------------------- raps verify / export


def sql(url: str, statement: str, *params: Any) -> None:
    """Run one statement as an insider with database access would (no daemon involved)."""
    if url.startswith("sqlite"):
        with sqlite3.connect(make_url(url).database or "") as conn:
            conn.execute(statement, params)
        return
    u = make_url(url)
    with psycopg.connect(host=u.host, port=u.port, user=u.username, dbname=u.database,
                         autocommit=True) as conn:  # fmt: skip
        conn.execute(statement.replace("?", "%s"), params)


def populated(url: str) -> list[Entry]:
    """A database holding two closed sessions; returns its entries."""

    async def go() -> list[Entry]:
        eng = open_engine(url)
        try:
            await migrate(eng)
            store = JournalStore(eng)
            return await fill(store, SESSION_A) + await fill(store, SESSION_B)
        finally:
            await eng.dispose()

    return asyncio.run(go())


def verify(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = cli.main(["verify", *argv])
    out = capsys.readouterr()
    return code, out.out + out.err


def row_record(entries: list[Entry], type_: str, nth: int = 0) -> Entry:
    return [e for e in entries if e.record["type"] == type_][nth]


def test_verify_accepts_an_honest_database(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    entries = populated(db_url)
    code, out = verify(capsys, db_url)
    # valid (not 1), with anomalies (3): the script marks a no-show 5 s after its draw
    assert code == 3, out
    assert f"journal: {len(entries)} entries" in out
    assert f"session {SESSION_A}: OK" in out and f"session {SESSION_B}: OK" in out
    assert "ANOMALY: pick 2 marked a no-show by ann (marketing) 5 s after the draw" in out
    assert out.rstrip().endswith("RESULT: OK, WITH 2 ANOMALY(IES) (see ANOMALY above)")
    code, out = verify(capsys, db_url, "--head", str(head_of(entries)))
    assert code == 3, out


def test_verify_names_a_row_changed_by_sql(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """An award amount raised in place: the row's own hash no longer matches."""
    entries = populated(db_url)
    e = row_record(entries, "pick.awarded", 1)
    tampered = e.record_json.replace('"amount":20000', '"amount":2000000')
    assert tampered != e.record_json
    sql(db_url, "UPDATE journal SET record = ? WHERE seq = ?", tampered, e.seq)
    code, out = verify(capsys, db_url)
    assert code == 1, out
    assert f"chain: FAILED: entry {e.seq}: hash does not match its content" in out


def test_verify_names_the_next_row_when_the_changed_row_is_rehashed(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    entries = populated(db_url)
    e = row_record(entries, "pick.awarded")
    tampered = e.record_json.replace('"amount":50000', '"amount":5000000')
    sql(db_url, "UPDATE journal SET record = ?, hash = ? WHERE seq = ?", tampered,
        entry_hash(e.seq, e.prev, tampered), e.seq)  # fmt: skip
    code, out = verify(capsys, db_url)
    assert code == 1, out
    assert f"entry {e.seq + 1}: previous-hash link broken" in out


def test_verify_names_a_deleted_row(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    entries = populated(db_url)
    k = entries[len(entries) // 3].seq
    sql(db_url, "DELETE FROM journal WHERE seq = ?", k)
    code, out = verify(capsys, db_url)
    assert code == 1, out
    assert f"entry {k + 1}: expected seq {k}" in out


def test_verify_detects_a_deleted_first_row(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A database journal starts at entry 1 from the genesis hash; a missing first row
    is a deleted entry like any other and must fail the chain, naming entry 1."""
    populated(db_url)
    sql(db_url, "DELETE FROM journal WHERE seq = 1")
    code, out = verify(capsys, db_url)
    assert code == 1, out
    assert "chain: FAILED" in out and names_entry(out.split("chain: ")[1], 1), out


def test_verify_detects_a_deleted_first_session(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Deleting a whole earlier session (a prefix of the journal) must not leave a
    database that verifies: its history is gone."""
    entries = populated(db_url)
    sql(db_url, "DELETE FROM journal WHERE session_id = ?", SESSION_A)
    code, out = verify(capsys, db_url, "--head", str(head_of(entries)))
    assert code == 1, out
    assert "chain: FAILED" in out and names_entry(out.split("chain: ")[1], 1), out


def test_verify_names_a_row_that_is_no_longer_json(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A one-byte edit can break the JSON itself (once the insider has dropped the index
    on the session each record names, which refuses rows that are no JSON): verify still
    says which entry."""
    entries = populated(db_url)
    e = row_record(entries, "pick.verified")
    sql(db_url, "DROP INDEX ix_journal_named_session")
    sql(db_url, "UPDATE journal SET record = ? WHERE seq = ?", e.record_json[:-1], e.seq)
    code, out = verify(capsys, db_url)
    assert code == 1, out
    assert f"entry {e.seq}" in out, out


def test_verify_names_a_row_whose_record_lost_its_shape(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Still JSON, but a one-byte change renamed a key ("data" -> "dbta"): the chain
    check must report the entry rather than the pick recomputation crash on it."""
    entries = populated(db_url)
    e = row_record(entries, "pick.drawn", 2)
    tampered = e.record_json.replace('"data":', '"dbta":')
    sql(db_url, "UPDATE journal SET record = ? WHERE seq = ?", tampered, e.seq)
    code, out = verify(capsys, db_url)
    assert code == 1, out
    assert f"entry {e.seq}: hash does not match its content" in out


def test_verify_names_the_pick_of_a_tampered_pool(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Pools sit beside the chain: editing one is caught by the pick recomputation."""
    entries = populated(db_url)
    e = row_record(entries, "pick.drawn")
    digest = e.record["data"]["pool_digest"]
    sql(db_url, "UPDATE journal SET pool_cards = ? WHERE pool_digest = ?",
        "\n".join(card(900 + i) for i in range(e.record["data"]["pool_size"])), digest)  # fmt: skip
    code, out = verify(capsys, db_url)
    assert code == 1, out
    assert "chain: OK" in out
    assert f"(pick {e.record['data']['pick']}): pool digest does not match" in out


def test_export_then_verify_the_file_against_the_head(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`raps export` writes a session; `raps verify FILE --head` accepts it whole and
    refuses it with its last lines cut off (which, without the head, would look like a
    session simply not closed yet)."""
    entries = populated(db_url)
    path = tmp_path / "s.jsonl"
    assert cli.main(["export", db_url, SESSION_B, "-o", str(path)]) == 0
    lines = path.read_text(encoding="utf-8").splitlines()
    head = head_of(entries)
    assert json.loads(lines[0]) == {
        "export": {"session_id": SESSION_B, "first": json.loads(lines[1])["seq"], "last": head.seq}
    }  # the header names the exported session
    assert json.loads(lines[-1])["hash"] == head.hash
    code, out = verify(capsys, str(path), "--head", str(head))
    assert code == 3, out  # valid; its early no-show is an anomaly
    assert f"session {SESSION_B}: OK" in out

    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[:-2]) + "\n", encoding="utf-8")
    code, out = verify(capsys, str(cut), "--head", str(head))
    assert code == 1, out
    assert f"published head is {head.seq}" in out
    assert names_entry(out, head.seq - 2), out
    code, out = verify(capsys, str(cut))
    assert code == 3 and "not closed yet" in out, out
    code, out = verify(capsys, str(cut), "--require-closed")
    assert code == 1 and f"NOT CLOSED: session {SESSION_B}" in out, out

    assert cli.main(["export", db_url, "S-none", "-o", str(tmp_path / "x")]) == 1
    code, out = verify(capsys, str(path), "--head", "nonsense")
    assert code == 2 and "SEQ:SHA256HEX" in out


def test_verify_reads_the_database_it_is_given(db_url: str) -> None:
    """read_database returns every entry with pools put back (the inspector's input)."""
    entries = populated(db_url)
    got, records = asyncio.run(read_database(db_url))
    assert got == entries
    assert all("pool" in r["data"] for r in records if r["type"] == "pick.drawn")
    assert check(got, records, head_of(entries)).ok

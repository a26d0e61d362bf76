"""The durable journal: chained entries, pool snapshots and sealed seeds in one database.

`append` writes a command's records, their pools and (at open) the sealed seed in
one transaction; it returns only after the commit, so a caller that shows a pick
after `append` returned shows only what is durable.  With a head mark (the daemon's),
`load_head` refuses a journal that went back behind the daemon's own last commit, or
holds another entry there, and from then on `append` takes nothing (raps.store.headmark).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from sqlalchemy import and_, bindparam, func, or_, select, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from raps.chain import GENESIS, Entry, Head, entry_hash, link
from raps.logs import get_logger
from raps.store.headmark import HeadMark
from raps.store.journal_read import parse_record
from raps.store.pools import PoolEncoder, rebuild
from raps.store.schema import journal, pool_snapshots, sealed_seeds


def _after_prefix(prefix: str) -> str:
    """The least string after every string that starts with `prefix` (non-empty)."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


_FILED_CHUNK = 500  # ids per query of `filed` (SQLite allows 32,766 parameters)

_ENTRY_COLUMNS = (
    "seq",
    "session_id",
    "type",
    "at",
    "record",
    "prev",
    "hash",
    "pool_digest",
    "pool_size",
    "pool_cards",
    "pool_base",
    "pool_delta",
)
_POOL_KEYS = ("digest", "size", "cards", "base", "delta")  # PoolEncoder rows, in column order
_NO_POOL = (None,) * len(_POOL_KEYS)


def _insert_sql(paramstyle: str) -> str:
    """INSERT of one journal row for the driver's positional parameter style."""
    n = len(_ENTRY_COLUMNS)
    if paramstyle == "qmark":
        marks = ["?"] * n
    elif paramstyle == "numeric_dollar":
        marks = [f"${i}" for i in range(1, n + 1)]
    elif paramstyle == "format":
        marks = ["%s"] * n
    else:
        raise ValueError(f"unsupported parameter style {paramstyle!r}")
    columns = ", ".join(_ENTRY_COLUMNS)  # constants only: nothing from input reaches the SQL
    return f"INSERT INTO journal ({columns}) VALUES ({', '.join(marks)})"  # noqa: S608


class JournalTampered(RuntimeError):
    """Entries read back that the chain does not vouch for: an edit outside the daemon."""


class JournalRewound(JournalTampered):
    """The journal's head is behind the daemon's last commit, or another entry is there."""


class JournalStore:
    def __init__(
        self,
        engine: AsyncEngine,
        mark: HeadMark | None = None,
        on_refused: Callable[[str], None] | None = None,
    ) -> None:
        self.engine = engine
        self.head: Head | None = None
        self.mark = mark
        self.refused: str | None = None  # why the journal takes no more entries
        self._on_refused = on_refused
        # told the head after each commit and each head read back (raps.heads.HeadFeed)
        self.committed: Callable[[Head], None] | None = None
        self._pools = PoolEncoder()
        insert = postgresql.insert if engine.dialect.name == "postgresql" else sqlite.insert
        self._insert_checkpoint = insert(pool_snapshots).on_conflict_do_nothing(
            index_elements=["digest"]
        )
        # the hottest statement: driver SQL with positional parameters, no compilation
        self._insert_entry = _insert_sql(engine.dialect.paramstyle)
        self._checkpoints: set[asyncio.Task[None]] = set()
        self._bases: set[asyncio.Task[None]] = set()  # pools stored in full after a start
        self.log = get_logger(component="journal")

    async def load_head(self) -> Head | None:
        async with self.engine.connect() as conn:
            row = (
                await conn.execute(
                    select(journal.c.seq, journal.c.hash).order_by(journal.c.seq.desc()).limit(1)
                )
            ).first()
        self.head = Head(row.seq, row.hash) if row else None
        if self.mark is not None:
            await self._hold_to_mark(self.head, self.mark)
        if self.head is not None and self.committed is not None:
            self.committed(self.head)
        return self.head

    async def _hold_to_mark(self, head: Head | None, mark: HeadMark) -> None:
        """Refuse a journal whose head went back behind the mark or differs at the mark's
        sequence number; a journal ahead of it (a commit that failed late and landed, a
        `raps schedule import` while the daemon was down) moves the mark on."""
        if self.refused is not None:
            raise JournalRewound(self.refused)
        have = mark.head
        problem: str | None = None
        if have is not None and (head is None or head.seq < have.seq):
            problem = (
                f"the journal ends at entry {head.seq if head else 0}, but this daemon "
                f"committed up to entry {have}"
            )
        elif have is not None and head is not None:
            there = head.hash if head.seq == have.seq else await self._hash_at(have.seq)
            if there != have.hash:
                problem = (
                    f"journal entry {have.seq} has hash {there}, not {have.hash}, which "
                    "this daemon committed"
                )
        if problem is not None:
            self.refused = (
                f"{problem}: the journal was cut back or rewritten outside the daemon, "
                "which takes no new entry until it is looked into (docs/operations.md, "
                "RapsJournalRewound)"
            )
            if self._on_refused is not None:
                self._on_refused(self.refused)
            raise JournalRewound(self.refused)
        if head is not None:
            mark.advance(head)

    async def _hash_at(self, seq: int) -> str | None:
        async with self.engine.connect() as conn:
            row = (await conn.execute(select(journal.c.hash).where(journal.c.seq == seq))).first()
        return str(row.hash) if row else None

    async def append(
        self,
        records: Sequence[dict[str, Any]],
        sealed: tuple[str, str, bytes, bytes] | None = None,
    ) -> list[Entry]:
        """Chain and commit records (with their pools, and a sealed seed at open).

        A pick's pool goes into the pick's own row unless that pool is already stored,
        so a pick is one INSERT; only an open adds a second (its sealed seed). Pools due for a
        checkpoint are stored in full afterwards, in their own transaction.
        """
        if self.refused is not None:
            raise JournalRewound(self.refused)
        entries = list(link(records, self.head))
        if not entries and sealed is None:
            return []
        if self._bases:  # a pick's delta starts from a pool stored after the start
            await asyncio.gather(*self._bases, return_exceptions=True)
        pools = [
            (r["data"]["pool_digest"], r["data"]["pool"])
            for r in records
            if "pool" in r.get("data", {})
        ]
        rows = self._pools.rows(pools)
        try:
            async with self.engine.begin() as conn:
                await self._write(conn, entries, records, sealed, rows)
        except BaseException:
            self._pools.forget()  # a delta's base must be durable: start again from full
            raise
        for digest, cards in self._pools.committed(pools, rows):
            task = asyncio.create_task(self._checkpoint(digest, cards))
            self._checkpoints.add(task)
            task.add_done_callback(self._checkpoints.discard)
        if entries:
            self.head = Head(entries[-1].seq, entries[-1].hash)
            if self.mark is not None:
                self.mark.advance(self.head)
            if self.committed is not None:
                self.committed(self.head)
        return entries

    def store_base(self, digest: str, cards: Sequence[str]) -> None:
        """Store a whole pool in the background (after a start, off the pick path), so that
        the first picks write only what changed since; they wait for it if it is not done."""
        task = asyncio.create_task(self._checkpoint(digest, cards))
        self._bases.add(task)
        task.add_done_callback(self._bases.discard)

    async def _checkpoint(self, digest: str, cards: Sequence[str]) -> None:
        """Store a pool in full beside the journal, so that later picks' deltas start
        from it; on failure the deltas simply chain on (up to MAX_DEPTH)."""
        row = {
            "digest": digest,
            "size": len(cards),
            "cards": "\n".join(cards),
            "base": None,
            "delta": None,
        }
        try:
            async with self.engine.begin() as conn:
                await conn.execute(self._insert_checkpoint, row)
        except Exception as e:
            self.log.warning("pool checkpoint failed", error=type(e).__name__)
            return
        self._pools.checkpointed(digest, cards)

    async def settle(self) -> None:
        """Wait for pool checkpoints and the head mark's write under way (before a stop,
        or in a test)."""
        while self._checkpoints or self._bases:
            await asyncio.gather(*self._checkpoints, *self._bases, return_exceptions=True)
        if self.mark is not None:
            await self.mark.flush()

    async def _write(
        self,
        conn: AsyncConnection,
        entries: Sequence[Entry],
        records: Sequence[dict[str, Any]],
        sealed: tuple[str, str, bytes, bytes] | None,
        pool_rows: Sequence[dict[str, Any]],
    ) -> None:
        if sealed is not None:
            session_id, commitment, nonce, ciphertext = sealed
            await conn.execute(
                sealed_seeds.insert().values(
                    session_id=session_id,
                    commitment=commitment,
                    nonce=nonce,
                    ciphertext=ciphertext,
                )
            )
        if entries:
            unstored = {p["digest"]: p for p in pool_rows}
            rows = []
            for e, r in zip(entries, records, strict=True):
                data = r.get("data", {})
                # the first entry that carries a pool not yet stored stores it
                pool = unstored.pop(data["pool_digest"], None) if "pool" in data else None
                rows.append(
                    (e.seq, r["session_id"], r["type"], r["at"], e.record_json, e.prev, e.hash)
                    + (_NO_POOL if pool is None else tuple(pool[k] for k in _POOL_KEYS))
                )
            # one row (a pick) goes as a plain execute, several as an executemany
            await conn.exec_driver_sql(self._insert_entry, rows[0] if len(rows) == 1 else rows)

    async def entries(self, first: int = 1, last: int | None = None) -> list[Entry]:
        q = select(journal.c.seq, journal.c.prev, journal.c.record, journal.c.hash).where(
            journal.c.seq >= first
        )
        if last is not None:
            q = q.where(journal.c.seq <= last)
        async with self.engine.connect() as conn:
            rows = (await conn.execute(q.order_by(journal.c.seq))).all()
        return [Entry(r.seq, r.prev, r.record, r.hash) for r in rows]

    async def session_entries(self, session_id: str) -> list[Entry]:
        """One session's entries in order (the index on session_id serves this)."""
        return (await self.session_records(session_id))[0]

    async def session_records(self, session_id: str) -> tuple[list[Entry], list[dict[str, Any]]]:
        """One session's entries in order and their records, each parsed once (the index
        on session_id serves this); JournalTampered when a row's hash does not match or
        its chained record names another session."""
        q = (
            select(journal.c.seq, journal.c.prev, journal.c.record, journal.c.hash)
            .where(journal.c.session_id == session_id)
            .order_by(journal.c.seq)
        )
        async with self.engine.connect() as conn:
            rows = (await conn.execute(q)).all()
        entries: list[Entry] = []
        records: list[dict[str, Any]] = []
        for seq, prev, text_, digest in rows:  # the column chose the rows; the record must agree
            if entry_hash(seq, prev, text_) != digest:
                raise JournalTampered(f"journal entry {seq}: hash does not match its content")
            try:
                rec = parse_record(text_)
            except ValueError as e:
                raise JournalTampered(f"journal entry {seq}: its record cannot be read") from e
            named = rec.get("session_id") if isinstance(rec, dict) else None
            if named != session_id:
                raise JournalTampered(
                    f"journal entry {seq}: its session_id column says {session_id!r}, its "
                    f"chained record says {named!r}"
                )
            entries.append(Entry(seq, prev, text_, digest))
            records.append(rec)
        return entries, records

    async def chain_break(self, first: int, last: int) -> str | None:
        """The first break in the chain's links from entry first - 1 to entry last (a row
        deleted, inserted or renumbered inside a session's range), or None. Reads each
        row's seq and hashes only: the session's own rows' contents are checked by
        session_entries, the links vouch for the rest."""
        lo = max(first - 1, 1)
        q = (
            select(journal.c.seq, journal.c.prev, journal.c.hash)
            .where(journal.c.seq >= lo, journal.c.seq <= last)
            .order_by(journal.c.seq)
        )
        async with self.engine.connect() as conn:
            rows = (await conn.execute(q)).all()
        expected, prev = lo, GENESIS if lo == 1 else None
        for r in rows:
            if r.seq != expected:
                return f"journal entry {expected} is missing: the chain goes on at {r.seq}"
            if prev is not None and r.prev != prev:
                return f"journal entry {r.seq} does not link to entry {r.seq - 1}"
            expected, prev = r.seq + 1, r.hash
        if expected <= last:
            return f"journal entry {expected} is missing: the session's entries end at {last}"
        return None

    def named_session(self) -> str:
        """SQL for the session a row's chained record names (migration 0006 indexes it)."""
        if self.engine.dialect.name == "sqlite":
            return "json_extract(record, '$.session_id')"
        return "((record::json) ->> 'session_id')"

    async def misfiled(self, session_ids: Iterable[str]) -> dict[str, str]:
        """Of these sessions, those with a row filed under another session's id or another
        session's row filed under theirs, and why: the rows a session is read back by must
        be the ones its chained records name. Indexed lookups, one pair per session."""
        named = self.named_session()
        theirs = text(
            f"SELECT seq, session_id FROM journal WHERE {named} = :sid "  # noqa: S608
            "AND session_id <> :sid ORDER BY seq LIMIT 1"
        )
        moved_in = text(
            f"SELECT seq, {named} FROM journal WHERE session_id = :sid "  # noqa: S608
            f"AND {named} <> :sid ORDER BY seq LIMIT 1"
        )
        out: dict[str, str] = {}
        for sid in session_ids:
            try:
                found = await self._misfiled_one(theirs, moved_in, sid)
            except DBAPIError as e:  # a row that is no JSON at all (its index gone too)
                found = f"the journal cannot be read as records ({type(e.orig).__name__})"
            if found is not None:
                out[sid] = found
        return out

    async def _misfiled_one(self, theirs: Any, moved_in: Any, sid: str) -> str | None:
        async with self.engine.connect() as conn:
            row = (await conn.execute(theirs, {"sid": sid})).first()
            if row is not None:
                return (
                    f"journal entry {row[0]} is filed under {row[1]!r} but its "
                    f"chained record belongs to {sid!r}"
                )
            row = (await conn.execute(moved_in, {"sid": sid})).first()
        if row is not None:
            return (
                f"journal entry {row[0]} is filed under {sid!r} but its "
                f"chained record belongs to {row[1]!r}"
            )
        return None

    async def columns(self) -> list[tuple[int, str, str]]:
        """(seq, session_id, type) of every entry, as its columns hold them (verify
        compares them with the chained records)."""
        q = select(journal.c.seq, journal.c.session_id, journal.c.type).order_by(journal.c.seq)
        async with self.engine.connect() as conn:
            return [(int(r.seq), r.session_id, r.type) for r in await conn.execute(q)]

    async def session_range(self, session_id: str) -> tuple[int, int] | None:
        async with self.engine.connect() as conn:
            row = (
                await conn.execute(
                    select(func.min(journal.c.seq), func.max(journal.c.seq)).where(
                        journal.c.session_id == session_id
                    )
                )
            ).first()
        if row is None or row[0] is None:
            return None
        return int(row[0]), int(row[1])

    async def closed_sessions(self) -> dict[str, int]:
        """The sessions with a `session.closed` row, by its `type` and `session_id`
        columns only (the index of migration 0008; no record is read): what a start defers
        (raps.session_loader). The columns are outside the chain, so this only says where
        to look: a session named here is restored and checked in full later."""
        j = journal.c
        q = select(j.session_id, j.seq).where(j.type == "session.closed")
        async with self.engine.connect() as conn:
            return {r.session_id: int(r.seq) for r in await conn.execute(q)}

    async def filed(self, session_ids: Iterable[str]) -> set[str]:
        """Of these sessions, those with a row filed under their id or a row whose chained
        record names them (indexed lookups, a few hundred ids a query): the others have
        no entry at all."""
        named = self.named_session()
        ids = sorted(set(session_ids))
        queries = [
            text(f"SELECT DISTINCT {col} FROM journal WHERE {col} IN :ids").bindparams(  # noqa: S608
                bindparam("ids", expanding=True)
            )
            for col in ("session_id", named)
        ]
        out: set[str] = set()
        async with self.engine.connect() as conn:
            for i in range(0, len(ids), _FILED_CHUNK):
                for q in queries:
                    try:
                        rows = await conn.execute(q, {"ids": ids[i : i + _FILED_CHUNK]})
                    except DBAPIError:  # a row that is no JSON at all: read them all
                        return set(ids)
                    out.update(r[0] for r in rows)
        return out

    async def session_ids(self, *prefixes: str) -> list[str]:
        """Every stream the journal holds, in the order each first appears; with
        `prefixes`, only those whose id starts with one of them: ranges of an index in
        bytewise order (SQLite's own; on PostgreSQL the COLLATE "C" one of migration
        0008), so a start finds its stage's streams without walking a year's sessions."""
        if not prefixes:
            return await self._session_ids(None)
        sid = journal.c.session_id
        if self.engine.dialect.name != "sqlite":
            sid = sid.collate("C")  # type: ignore[assignment]
        ranges = or_(*(and_(sid >= p, sid < _after_prefix(p)) for p in prefixes))
        return await self._session_ids(ranges)

    async def _session_ids(self, where: Any) -> list[str]:
        sid = journal.c.session_id
        q = select(sid, func.min(journal.c.seq).label("first"))
        if where is not None:
            q = q.where(where)
        async with self.engine.connect() as conn:
            rows = await conn.execute(q.group_by(sid).order_by("first"))
            return [r.session_id for r in rows]

    async def pools(self, digests: Sequence[str]) -> dict[str, list[str]]:
        """Pools by digest, rebuilt from their deltas; a missing one is left out."""
        rows: dict[str, Any] = {}
        asked: set[str] = set()
        wanted = set(digests)
        j = journal.c
        in_journal = select(
            j.pool_digest.label("digest"),
            j.pool_size.label("size"),
            j.pool_cards.label("cards"),
            j.pool_base.label("base"),
            j.pool_delta.label("delta"),
        )
        async with self.engine.connect() as conn:
            while wanted:  # the pools, then their bases, then theirs...
                asked |= wanted
                keys = sorted(wanted)
                for q in (
                    in_journal.where(j.pool_digest.in_(keys)),
                    select(pool_snapshots).where(pool_snapshots.c.digest.in_(keys)),
                ):
                    for r in await conn.execute(q):
                        rows.setdefault(r.digest, r._asdict())
                wanted = {r["base"] for r in rows.values() if r["base"]} - asked
        out: dict[str, list[str]] = {}
        for d in set(digests):
            try:
                out[d] = rebuild(rows, d)
            except (KeyError, ValueError, TypeError):
                continue  # missing or damaged: verify reports the pool as not matching
        return out

    async def sealed_seeds(self) -> dict[str, tuple[bytes, bytes]]:
        """Every sealed seed by session, in one query (a start unseals them all)."""
        q = select(sealed_seeds.c.session_id, sealed_seeds.c.nonce, sealed_seeds.c.ciphertext)
        async with self.engine.connect() as conn:
            rows = await conn.execute(q)
            return {r.session_id: (bytes(r.nonce), bytes(r.ciphertext)) for r in rows}

    async def sealed_seed(self, session_id: str) -> tuple[bytes, bytes] | None:
        async with self.engine.connect() as conn:
            row = (
                await conn.execute(
                    select(sealed_seeds.c.nonce, sealed_seeds.c.ciphertext).where(
                        sealed_seeds.c.session_id == session_id
                    )
                )
            ).first()
        return (bytes(row.nonce), bytes(row.ciphertext)) if row else None


async def with_pools(store: JournalStore, entries: Sequence[Entry]) -> list[dict[str, Any]]:
    """Records of entries with each pick's pool put back (as the core emitted them)."""
    records = [_parse(e) for e in entries]
    drawn = [r["data"] for r in records if r.get("type") == "pick.drawn"]
    pools = await store.pools([str(d.get("pool_digest")) for d in drawn])
    for d in drawn:
        d["pool"] = pools.get(str(d.get("pool_digest")), [])
    return records


def _parse(entry: Entry) -> dict[str, Any]:
    """An entry's record; a damaged one becomes an empty shell (the chain names it)."""
    try:
        rec = entry.record
    except ValueError:
        rec = None
    if not isinstance(rec, dict) or not isinstance(rec.get("data"), dict):
        return {"type": "damaged", "session_id": "", "data": {}}
    return rec


def export_lines(entries: Sequence[Entry], records: Sequence[dict[str, Any]]) -> list[str]:
    """JSON lines of an export: one chained entry per line, pools inline."""
    return [
        json.dumps(
            {"seq": e.seq, "prev": e.prev, "hash": e.hash, "record": r},
            separators=(",", ":"),
            ensure_ascii=False,
        )
        for e, r in zip(entries, records, strict=True)
    ]


async def session_export(
    store: JournalStore, session_id: str, belongs: Callable[[str], bool] = lambda _s: False
) -> list[str] | None:
    """A session's export: a header naming it, then its contiguous range of the chain,
    its own entries (and those of the streams that `belongs` to it: a draw's games)
    whole with pools inline; other streams' entries in between (the chain needs their
    links) as chain fields only, `{"seq", "prev", "hash", "stream"}`: no record, so no
    pool and no card of another session leaves with it. None for a session with no
    entries."""
    span = await store.session_range(session_id)
    if span is None:
        return None
    entries = await store.entries(*span)

    def whole(rec: dict[str, Any]) -> bool:
        stream = str(rec.get("session_id"))
        return stream == session_id or belongs(stream)

    own = [e for e in entries if whole(_parse(e))]
    records = iter(await with_pools(store, own))
    header = {"export": {"session_id": session_id, "first": span[0], "last": span[1]}}
    lines = [json.dumps(header, separators=(",", ":"))]
    for e in entries:
        rec = _parse(e)
        if whole(rec):
            lines += export_lines([e], [next(records)])
        else:
            chain = {"seq": e.seq, "prev": e.prev, "hash": e.hash, "stream": rec.get("session_id")}
            lines.append(json.dumps(chain, separators=(",", ":"), ensure_ascii=False))
    return lines

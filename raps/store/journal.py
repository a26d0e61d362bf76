"""The durable journal: chained entries, pool snapshots and sealed seeds in one database.

`append` writes a command's records, their pools and (at open) the sealed seed in
one transaction; it returns only after the commit, so a caller that shows a pick
after `append` returned shows only what is durable.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from raps.chain import Entry, Head, link
from raps.store.pools import PoolEncoder, rebuild
from raps.store.schema import journal, pool_snapshots, sealed_seeds


class JournalStore:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self.head: Head | None = None
        insert = postgresql.insert if engine.dialect.name == "postgresql" else sqlite.insert
        self._insert_pool = insert(pool_snapshots).on_conflict_do_nothing(index_elements=["digest"])
        self._pools = PoolEncoder()

    async def load_head(self) -> Head | None:
        async with self.engine.connect() as conn:
            row = (
                await conn.execute(
                    select(journal.c.seq, journal.c.hash).order_by(journal.c.seq.desc()).limit(1)
                )
            ).first()
        self.head = Head(row.seq, row.hash) if row else None
        return self.head

    async def append(
        self,
        records: Sequence[dict[str, Any]],
        sealed: tuple[str, str, bytes, bytes] | None = None,
    ) -> list[Entry]:
        """Chain and commit records (with their pools, and a sealed seed at open)."""
        entries = list(link(records, self.head))
        if not entries and sealed is None:
            return []
        pools = [
            (r["data"]["pool_digest"], r["data"]["pool"])
            for r in records
            if "pool" in r.get("data", {})
        ]
        rows = self._pools.rows(pools)
        try:
            async with self.engine.begin() as conn:
                if rows:
                    await conn.execute(self._insert_pool, rows)
                await self._write(conn, entries, records, sealed)
        except BaseException:
            self._pools.forget()  # a delta's base must be durable: start again from full
            raise
        self._pools.committed(pools, rows)
        if entries:
            self.head = Head(entries[-1].seq, entries[-1].hash)
        return entries

    async def _write(
        self,
        conn: AsyncConnection,
        entries: Sequence[Entry],
        records: Sequence[dict[str, Any]],
        sealed: tuple[str, str, bytes, bytes] | None,
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
            await conn.execute(
                journal.insert(),
                [
                    {
                        "seq": e.seq,
                        "session_id": r["session_id"],
                        "type": r["type"],
                        "at": r["at"],
                        "record": e.record_json,
                        "prev": e.prev,
                        "hash": e.hash,
                    }
                    for e, r in zip(entries, records, strict=True)
                ],
            )

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
        q = (
            select(journal.c.seq, journal.c.prev, journal.c.record, journal.c.hash)
            .where(journal.c.session_id == session_id)
            .order_by(journal.c.seq)
        )
        async with self.engine.connect() as conn:
            rows = (await conn.execute(q)).all()
        return [Entry(r.seq, r.prev, r.record, r.hash) for r in rows]

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

    async def session_ids(self) -> list[str]:
        async with self.engine.connect() as conn:
            rows = await conn.execute(
                select(journal.c.session_id, func.min(journal.c.seq).label("first"))
                .group_by(journal.c.session_id)
                .order_by("first")
            )
            return [r.session_id for r in rows]

    async def pools(self, digests: Sequence[str]) -> dict[str, list[str]]:
        """Pools by digest, rebuilt from their deltas; a missing one is left out."""
        rows: dict[str, Any] = {}
        asked: set[str] = set()
        wanted = set(digests)
        async with self.engine.connect() as conn:
            while wanted:  # the pools, then their bases, then theirs...
                asked |= wanted
                found = await conn.execute(
                    select(pool_snapshots).where(pool_snapshots.c.digest.in_(sorted(wanted)))
                )
                for r in found:
                    rows[r.digest] = r._asdict()
                wanted = {r["base"] for r in rows.values() if r["base"]} - asked
        out: dict[str, list[str]] = {}
        for d in set(digests):
            try:
                out[d] = rebuild(rows, d)
            except (KeyError, ValueError, TypeError):
                continue  # missing or damaged: verify reports the pool as not matching
        return out

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

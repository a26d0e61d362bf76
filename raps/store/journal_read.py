"""Every scheduled session's journal entries read in one pass: a start restores them all.

Entry by entry (`JournalStore.session_entries`, `chain_break`, `misfiled`) a start cost a
handful of queries per session, and a year's sessions made it minutes long (issue 20).
Here one ordered read of the journal gives, per wanted session, its entries and their
records (each entry's hash recomputed, each record parsed once), the positions where the
chain does not link (so a session's range is vouched for without a query of its own), and
the sessions with a row the fast path cannot vouch for: a hash that does not match, a
record that cannot be read, a row filed under one session whose chained record names
another (either way round).  Those, and only those, go through the entry-by-entry checks
again, which word why they are refused (raps.session_loader).
"""

from __future__ import annotations

import json
from bisect import bisect_left, bisect_right
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import msgspec
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from raps.chain import GENESIS, Entry, entry_hash
from raps.store.schema import journal

_CHUNK = 20_000


class _Named(msgspec.Struct):
    """The one field of a record read for rows of other sessions."""

    session_id: Any = None


_named = msgspec.json.Decoder(_Named)
_record = msgspec.json.Decoder()


def parse_record(text: str) -> Any:
    """json.loads, faster; the standard library decides what msgspec refuses (a number too
    large for it), so a record reads the same either way."""
    try:
        return _record.decode(text)
    except (msgspec.DecodeError, ValueError):
        return json.loads(text)


@dataclass
class SessionsRead:
    entries: dict[str, list[Entry]] = field(default_factory=dict)
    records: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    suspect: set[str] = field(default_factory=set)  # for the entry-by-entry checks
    gaps: list[tuple[int, int]] = field(default_factory=list)  # seqs missing, first..last
    links: list[int] = field(default_factory=list)  # rows not linked to the row before

    def links_ok(self, first: int, last: int) -> bool:
        """True when nothing breaks the chain from entry first - 1 to entry last, exactly
        when `JournalStore.chain_break(first, last)` finds nothing."""
        lo = max(first - 1, 1)
        ends = [g[1] for g in self.gaps]  # ascending, as the gaps are
        i = bisect_left(ends, lo)
        if i < len(self.gaps) and self.gaps[i][0] <= last:
            return False  # an entry missing inside the range
        j = bisect_right(self.links, lo)  # the range's first row is its anchor, not checked
        if j < len(self.links) and self.links[j] <= last:
            return False
        return not (lo == 1 and self.links[:1] == [1])  # the first entry links to genesis


async def read_sessions(
    engine: AsyncEngine,
    session_ids: Iterable[str],
    partition: int = _CHUNK,
    pace: Callable[[], Awaitable[None]] | None = None,
) -> SessionsRead:
    """The pass; `pace`, when given, is awaited after each partition of rows (a pass in
    the background yields to the event loop between them)."""
    wanted = set(session_ids)
    out = SessionsRead(entries={sid: [] for sid in wanted}, records={sid: [] for sid in wanted})
    entries, records, suspect = out.entries, out.records, out.suspect
    j = journal.c
    q = select(j.seq, j.prev, j.hash, j.session_id, j.record).order_by(j.seq)
    expected, last_hash = 1, GENESIS
    named_of = _named.decode
    async with engine.connect() as conn:
        result = await conn.stream(q)
        async for part in result.partitions(partition):
            if pace is not None:
                await pace()
            for seq, prev, digest, column, text in part:
                if seq != expected:  # rows missing (seq is the key: never below)
                    out.gaps.append((expected, seq - 1))
                elif prev != last_hash:
                    out.links.append(seq)  # a row that does not link to the one before
                expected, last_hash = seq + 1, digest
                if column in wanted:
                    if column in suspect:
                        continue
                    try:
                        rec = parse_record(text)
                    except ValueError:
                        suspect.add(column)
                        continue
                    named = rec.get("session_id") if isinstance(rec, dict) else None
                    if named != column or entry_hash(seq, prev, text) != digest:
                        suspect.add(column)
                        if isinstance(named, str) and named in wanted:
                            suspect.add(named)
                        continue
                    entries[column].append(Entry(seq, prev, text, digest))
                    records[column].append(rec)
                else:  # another stream's row must not hold a wanted session's record
                    try:
                        named = named_of(text).session_id
                    except (msgspec.DecodeError, ValueError):
                        continue  # damaged: its own stream's reader says so
                    if named != column and isinstance(named, str) and named in wanted:
                        suspect.add(named)
    return out

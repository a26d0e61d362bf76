"""Floor state across restarts: an event log plus periodic snapshots.

Every applied event gets the daemon's own sequence number; each flush appends its
events as one row (a batch), and a snapshot records the last sequence it includes.
A restart loads the newest snapshot and replays the events after it.  What a kill -9
can lose is the unflushed batch (at most `event_flush_seconds` of floor traffic);
docs/crash-recovery.md explains why that is safe for draws.  The stream marks of the
MQTT ingest (raps.store.marks) ride along: each flush writes the ones that changed in
its transaction, each snapshot holds them all, and loading the snapshot reads them back.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import zlib
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import orjson
from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.wire.codec import CodecError, event_from_dict, event_to_dict
from raps.store.marks import StreamMarks
from raps.store.schema import floor_event_batches, floor_marks, floor_snapshots
from selector.events import AnyFloorEvent


def _encode_snapshot(doc: dict[str, Any]) -> bytes:
    """orjson and zlib level 1: a quarter of json's and level 6's time, for the same size
    (0.76 MB against 0.75 MB at 50,000 players); zlib lets the loop run meanwhile."""
    return zlib.compress(orjson.dumps(doc), 1)


def _dumps(rows: list[dict[str, Any]]) -> str:
    """The batch's JSON: orjson, a fifth of json.dumps's time on the ingest's flush (issue
    20); json.dumps for what orjson refuses (an integer past 64 bits), so nothing is lost.
    Read back with json.loads, which reads both exactly (orjson would read a number past
    64 bits as a float)."""
    try:
        return orjson.dumps(rows).decode("utf-8")
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return json.dumps(rows, separators=(",", ":"))


class FloorLog:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self.marks = StreamMarks()

    async def last_seq(self) -> int:
        async with self.engine.connect() as conn:
            events = (await conn.execute(select(func.max(floor_event_batches.c.last_seq)))).scalar()
            newest = select(func.max(floor_snapshots.c.last_event_seq))
            snaps = (await conn.execute(newest)).scalar()
        return max(int(events or 0), int(snaps or 0))

    async def append(self, batch: Sequence[tuple[int, float, AnyFloorEvent]]) -> None:
        """One row for the whole batch (sequence numbers must be consecutive) and one for
        the stream marks that changed since the last append, in one transaction."""
        row: dict[str, Any] | None = None
        if batch:
            first, last = batch[0][0], batch[-1][0]
            if last - first + 1 != len(batch):
                raise ValueError("floor event batch sequence numbers must be consecutive")
            body = _dumps([event_to_dict(ev) for _, _, ev in batch])
            row = {"last_seq": last, "first_seq": first, "received_at": batch[-1][1],
                   "body": body}  # fmt: skip
        marks = self.marks.take()
        if row is None and marks is None:
            return
        try:
            async with self.engine.begin() as conn:
                if row is not None:
                    await conn.execute(floor_event_batches.insert().values(**row))
                if marks is not None:
                    body = json.dumps(marks[1], separators=(",", ":"))
                    await conn.execute(floor_marks.insert().values(gen=marks[0], body=body))
        except BaseException:
            self.marks.put_back(marks)  # written with the next append
            raise

    async def save_snapshot(
        self, taken_at: float, last_seq: int, snap: dict[str, Any], seen: Sequence[str] = ()
    ) -> None:
        gen, rows = self.marks.full()  # now: the snapshot covers the marks up to `gen`
        doc = {"floor": snap, "seen": list(seen), "marks": {"gen": gen, "rows": rows}}
        # half a second of JSON and zlib at 50,000 players: in a worker thread, so the
        # event loop (kiosk entries, draws) keeps its turns; `snap` is no longer touched
        body = await asyncio.to_thread(_encode_snapshot, doc)
        async with self.engine.begin() as conn:
            await conn.execute(
                floor_snapshots.insert().values(
                    taken_at=taken_at, last_event_seq=last_seq, body=body
                )
            )
            # older snapshots and the batches they fully cover are no longer needed
            older = floor_snapshots.c.last_event_seq < last_seq
            await conn.execute(delete(floor_snapshots).where(older))
            covered = floor_event_batches.c.last_seq <= last_seq
            await conn.execute(delete(floor_event_batches).where(covered))
            await conn.execute(delete(floor_marks).where(floor_marks.c.gen <= gen))

    async def latest_snapshot(self) -> tuple[int, dict[str, Any], list[str]] | None:
        """(last sequence included, Floor.snapshot() data, recent event ids) or None.

        Reads the stream marks back too (into `marks`, for the ingest to take up)."""
        async with self.engine.connect() as conn:
            row = (
                await conn.execute(
                    select(floor_snapshots.c.last_event_seq, floor_snapshots.c.body)
                    .order_by(floor_snapshots.c.last_event_seq.desc())
                    .limit(1)
                )
            ).first()
            written = (await conn.execute(select(floor_marks.c.gen, floor_marks.c.body))).all()
        for m in written:
            with contextlib.suppress(ValueError):  # a row that is not JSON marks nothing
                self.marks.load(int(m.gen), list(json.loads(m.body)))
        if row is None:
            return None
        doc = json.loads(zlib.decompress(row.body))
        saved = doc.get("marks") if isinstance(doc.get("marks"), dict) else {}
        self.marks.load(int(saved.get("gen", 0)), list(saved.get("rows", [])))
        if "floor" not in doc:  # written before migration 0002: the bare floor snapshot
            return int(row.last_event_seq), doc, []
        return int(row.last_event_seq), doc["floor"], list(doc.get("seen", []))

    async def events_after(
        self, seq: int, chunk: int = 200, refused: Callable[..., object] | None = None
    ) -> AsyncIterator[list[tuple[int, AnyFloorEvent]]]:
        """Logged (seq, event) after `seq`, in order, a few batches at a time.

        An event today's checks refuse (a row logged before a check existed: a lone
        surrogate in a display name, say) is skipped and handed to `refused` as
        `refused(seq=..., type=..., error=<reason code>)`; without `refused` it raises."""
        while True:
            async with self.engine.connect() as conn:
                rows = (
                    await conn.execute(
                        select(floor_event_batches.c.first_seq, floor_event_batches.c.last_seq,
                               floor_event_batches.c.body)
                        .where(floor_event_batches.c.last_seq > seq)
                        .order_by(floor_event_batches.c.last_seq)
                        .limit(chunk)
                    )
                ).all()  # fmt: skip
            if not rows:
                return
            out: list[tuple[int, AnyFloorEvent]] = []
            for r in rows:
                for i, d in enumerate(json.loads(r.body)):
                    n = r.first_seq + i
                    if n <= seq:
                        continue
                    try:
                        out.append((n, event_from_dict(d)))
                    except CodecError as e:
                        if refused is None:
                            raise
                        refused(seq=n, type=str(d.get("type")), error=e.reason)
            seq = rows[-1].last_seq
            yield out

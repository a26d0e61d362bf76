"""Floor state across restarts: an event log plus periodic snapshots.

Every applied event is appended (in batches) with the daemon's own sequence number;
a snapshot records the last sequence it includes.  A restart loads the newest
snapshot and replays the events after it.  What can be lost by a kill -9 is the
unflushed batch (at most `event_flush_seconds` of floor traffic); docs/operations
explains why that is safe for draws.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from raps.codec import event_from_dict, event_to_dict
from raps.store.schema import floor_events, floor_snapshots
from selector.events import AnyFloorEvent


class FloorLog:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def last_seq(self) -> int:
        async with self.engine.connect() as conn:
            events = (await conn.execute(select(func.max(floor_events.c.seq)))).scalar()
            snaps = (
                await conn.execute(select(func.max(floor_snapshots.c.last_event_seq)))
            ).scalar()
        return max(int(events or 0), int(snaps or 0))

    async def append(self, batch: Sequence[tuple[int, float, AnyFloorEvent]]) -> None:
        if not batch:
            return
        rows = [
            {"seq": seq, "received_at": at, "body": json.dumps(event_to_dict(ev))}
            for seq, at, ev in batch
        ]
        async with self.engine.begin() as conn:
            await conn.execute(floor_events.insert(), rows)

    async def save_snapshot(self, taken_at: float, last_seq: int, snap: dict[str, Any]) -> None:
        body = zlib.compress(json.dumps(snap, separators=(",", ":")).encode(), 6)
        async with self.engine.begin() as conn:
            await conn.execute(
                floor_snapshots.insert().values(
                    taken_at=taken_at, last_event_seq=last_seq, body=body
                )
            )
            # older snapshots and the events they cover are no longer needed
            await conn.execute(
                delete(floor_snapshots).where(floor_snapshots.c.last_event_seq < last_seq)
            )
            await conn.execute(delete(floor_events).where(floor_events.c.seq <= last_seq))

    async def latest_snapshot(self) -> tuple[int, dict[str, Any]] | None:
        async with self.engine.connect() as conn:
            row = (
                await conn.execute(
                    select(floor_snapshots.c.last_event_seq, floor_snapshots.c.body)
                    .order_by(floor_snapshots.c.last_event_seq.desc())
                    .limit(1)
                )
            ).first()
        if row is None:
            return None
        return int(row.last_event_seq), json.loads(zlib.decompress(row.body))

    async def events_after(
        self, seq: int, chunk: int = 20_000
    ) -> AsyncIterator[list[AnyFloorEvent]]:
        """Logged events after `seq`, in order, a chunk at a time."""
        while True:
            async with self.engine.connect() as conn:
                rows = (
                    await conn.execute(
                        select(floor_events.c.seq, floor_events.c.body)
                        .where(floor_events.c.seq > seq)
                        .order_by(floor_events.c.seq)
                        .limit(chunk)
                    )
                ).all()
            if not rows:
                return
            seq = rows[-1].seq
            yield [event_from_dict(json.loads(r.body)) for r in rows]

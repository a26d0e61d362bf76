"""Stream marks: where each numbered inbound stream was, kept with the floor log.

The MQTT ingest counts the messages a publisher numbered that never arrived
(adapters.mqtt.gaps).  Its memory of each stream used to be the running daemon's, so
the messages a broker dropped while the daemon was down — the very case gap counting is
for — went uncounted.  The marks of the streams that changed go to the database with
every floor-log flush, in the flush's own transaction: a message is acknowledged only
after that flush, so every acknowledged message's number is durable, and a restart
takes up each stream where the acknowledged ones left it.  (A number seen but not
acknowledged is durable too at worst: its redelivery is then taken for a copy, never
for a gap.)

Each write is one `floor_marks` row with a generation number; a floor snapshot holds
every mark and deletes the rows it covers.  A restart merges the snapshot's marks and
the rows after it, keeping each stream's newest (its change count `n`), so the order
the rows are read in, a write retried after a failure, or a row the snapshot also
covers, changes nothing.
"""

from __future__ import annotations

from typing import Any, Protocol

MarkRow = list[Any]  # [topic, source, boot, last, old_boot, n] (adapters.mqtt.gaps)


class MarkSource(Protocol):
    """What keeps marks in memory: the MQTT ingest's SequenceGaps."""

    def changed(self) -> list[MarkRow]: ...

    def state(self) -> list[MarkRow]: ...

    def restore(self, rows: list[MarkRow]) -> int: ...


def _key(row: MarkRow) -> tuple[Any, Any]:
    return (row[0], row[1]) if isinstance(row, list) and len(row) == 6 else ("", "")


def _newer(row: MarkRow, than: MarkRow | None) -> bool:
    return than is None or row[5] > than[5]


class StreamMarks:
    """The marks between the ingest (attached once it runs) and the floor log."""

    def __init__(self) -> None:
        self.source: MarkSource | None = None
        self.gen = 0  # of the last row taken for writing (persisted, so it keeps growing)
        self._pending: dict[tuple[Any, Any], MarkRow] = {}  # taken, write failed: again
        self._restored: dict[tuple[Any, Any], MarkRow] = {}  # until a source takes them

    def attach(self, source: MarkSource) -> int:
        """The ingest's marks from now on, starting where the last run left them."""
        restored = source.restore(list(self._restored.values()))
        self.source, self._restored = source, {}
        return restored

    def take(self) -> tuple[int, list[MarkRow]] | None:
        """The marks changed since the last take, numbered for writing (None: nothing)."""
        if self.source is not None:
            for row in self.source.changed():
                self._pending[_key(row)] = row  # newer than a row put back
        if not self._pending:
            return None
        self.gen += 1
        rows, self._pending = list(self._pending.values()), {}
        return self.gen, rows

    def put_back(self, taken: tuple[int, list[MarkRow]] | None) -> None:
        """A write failed: its marks go with the next one (unless newer ones came)."""
        for row in taken[1] if taken else ():
            if _newer(row, self._pending.get(_key(row))):
                self._pending[_key(row)] = row

    def full(self) -> tuple[int, list[MarkRow]]:
        """Every mark now, for a snapshot: it covers the rows taken up to `gen`."""
        if self.source is None:
            return self.gen, list(self._restored.values())
        return self.gen, self.source.state()

    def load(self, gen: int, rows: list[MarkRow]) -> None:
        """At start: marks read back (the snapshot's, then the rows written after it)."""
        self.gen = max(self.gen, gen)
        for row in rows:
            key = _key(row)
            if key == ("", "") or type(row[5]) is not int:
                continue  # not a mark: the ingest ignores it too
            if _newer(row, self._restored.get(key)):
                self._restored[key] = row

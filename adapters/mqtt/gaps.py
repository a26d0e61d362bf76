"""Ingest gaps: messages a publisher numbered that never arrived.

A broker may drop QoS 1 messages it holds for RAPS (Mosquitto's default
`max_queued_messages` of 1000 dropped 9,000 of 10,000 while the daemon was down) and
nothing downstream would show it.  Publishers that number their messages (the optional
`seq` field, with an optional `boot` id of their current run) let the ingest see the
holes.  The rules, per stream (one topic and the payload's `source`; docs/mqtt.md,
"Sequence numbers"):

- the first message of a stream ever seen sets where it is;
- `seq` one above the last: in order;  more than one above: a gap of the numbers
  between, counted and logged once;
- a new `boot` value starts a new sequence (a publisher restart): nothing is counted;
  a message of the stream's previous boot that comes late is ignored;
- without `boot`, `seq` 1 after a higher number is a publisher restart (it counts
  from 1 again): nothing is counted;
- any other number at or below the last is a redelivery or a late copy: ignored (it
  is applied as usual; the core drops duplicates by event id).

Where each stream is survives a restart: the daemon writes the streams that changed
with every floor-log flush, before the messages are acknowledged, and restores them at
start (`changed`, `state`, `restore`; raps.store.marks), so messages a broker dropped
while the daemon was down are counted too.  A stream's row is
`[topic, source, boot, last, old_boot, n]`; `n` counts the stream's changes, so of two
rows of one stream the one with the larger `n` is the newer, in whatever order they
are read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

# (source label, messages missing) each time a gap is seen
GapSink = Callable[[str, int], None]
MAX_STREAMS = 200_000  # machines x topics: far more than any floor; the memory is bounded
_SEQ_MAX = 9_007_199_254_740_991


# [topic, source, boot, last, old_boot, n]: one stream's mark (see the module docstring)
MarkRow = list[Any]


@dataclass(slots=True)
class _Stream:
    boot: str | None
    last: int
    old_boot: str | None = None
    n: int = 1  # changes so far: orders two marks of the stream


def _row(key: tuple[str, str], s: _Stream) -> MarkRow:
    return [key[0], key[1], s.boot, s.last, s.old_boot, s.n]


class SequenceGaps:
    """Per-stream sequence numbers of the inbound messages; see the module docstring."""

    def __init__(self, sink: GapSink | None = None) -> None:
        self.sink = sink
        self.streams: dict[tuple[str, str], _Stream] = {}
        self._changed: set[tuple[str, str]] = set()  # since the last `changed()`
        self.missing = 0  # in all, since start (tests, the benchmarks)
        self.gaps = 0
        self.restarts = 0
        self.log = structlog.get_logger("raps").bind(component="mqtt-in")

    def observe(self, label: str, topic: str, data: Mapping[str, Any]) -> int:
        """Note one received message's `seq` (and `boot`); returns the messages missing
        before it (0 when none).  Payloads without a valid `seq` are not numbered."""
        seq = data.get("seq")
        if type(seq) is float and seq.is_integer():
            seq = int(seq)
        if type(seq) is not int or not 1 <= seq <= _SEQ_MAX:
            return 0
        boot = data.get("boot")
        if boot is not None and not (isinstance(boot, str) and 0 < len(boot) <= 64):
            return 0  # a broken boot id: this message's number cannot be placed
        source = data.get("source")
        key = (topic, source if isinstance(source, str) else "")
        stream = self.streams.get(key)
        if stream is None:
            if len(self.streams) >= MAX_STREAMS:
                self.streams.clear()  # a flood of made-up topics: start over
            self.streams[key] = _Stream(boot, seq)
            self._changed.add(key)
            return 0
        if boot != stream.boot:
            if boot is not None and boot == stream.old_boot:
                return 0  # a late message of the run before the restart
            self.restarts += 1
            stream.old_boot, stream.boot, stream.last = stream.boot, boot, seq
            stream.n += 1
            self._changed.add(key)
            return 0
        if seq == stream.last + 1:
            stream.last = seq
            stream.n += 1
            self._changed.add(key)
            return 0
        if seq <= stream.last:
            if seq == 1 and boot is None and stream.last > 1:
                self.restarts += 1
                stream.last = 1
                stream.n += 1
                self._changed.add(key)
            return 0
        stream.n += 1
        self._changed.add(key)
        missing = seq - stream.last - 1
        self.log.warning(
            "ingest gap: messages numbered by the publisher never arrived",
            source=label, topic=topic, publisher=key[1] or None, boot=boot,
            after=stream.last, got=seq, missing=missing,
        )  # fmt: skip
        stream.last = seq
        self.missing += missing
        self.gaps += 1
        if self.sink is not None:
            try:
                self.sink(label, missing)
            except Exception:
                self.log.exception("gap callback failed")
        return missing

    # ------------------------------------------------------------ across restarts

    def changed(self) -> list[MarkRow]:
        """The marks of the streams that changed since the last call."""
        rows = [_row(k, self.streams[k]) for k in self._changed if k in self.streams]
        self._changed = set()
        return rows

    def state(self) -> list[MarkRow]:
        """Every stream's mark."""
        return [_row(k, s) for k, s in self.streams.items()]

    def restore(self, rows: Iterable[MarkRow]) -> int:
        """Take up the marks of an earlier run (the newest row of each stream wins);
        a row that is not a valid mark is ignored.  Returns the streams restored."""
        for row in rows:
            if not _valid(row):
                continue
            topic, source, boot, last, old_boot, n = row
            known = self.streams.get((topic, source))
            if known is None or n > known.n:
                self.streams[(topic, source)] = _Stream(boot, last, old_boot, n)
        return len(self.streams)


def _valid(row: object) -> bool:
    if not (isinstance(row, list) and len(row) == 6):
        return False
    topic, source, boot, last, old_boot, n = row
    texts = isinstance(topic, str) and isinstance(source, str)
    boots = all(b is None or (isinstance(b, str) and 0 < len(b) <= 64) for b in (boot, old_boot))
    numbers = all(type(x) is int and 1 <= x <= _SEQ_MAX for x in (last, n))
    return texts and boots and numbers

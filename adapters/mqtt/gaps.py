"""Ingest gaps: messages a publisher numbered that never arrived.

A broker may drop QoS 1 messages it holds for RAPS (Mosquitto's default
`max_queued_messages` of 1000 dropped 9,000 of 10,000 while the daemon was down) and
nothing downstream would show it.  Publishers that number their messages (the optional
`seq` field, with an optional `boot` id of their current run) let the ingest see the
holes.  The rules, per stream (one topic and the payload's `source`; docs/mqtt.md,
"Sequence numbers"):

- the first message of a stream since the daemon started sets where it is;
- `seq` one above the last: in order;  more than one above: a gap of the numbers
  between, counted and logged once;
- a new `boot` value starts a new sequence (a publisher restart): nothing is counted;
  a message of the stream's previous boot that comes late is ignored;
- without `boot`, `seq` 1 after a higher number is a publisher restart (it counts
  from 1 again): nothing is counted;
- any other number at or below the last is a redelivery or a late copy: ignored (it
  is applied as usual; the core drops duplicates by event id).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

# (source label, messages missing) each time a gap is seen
GapSink = Callable[[str, int], None]
MAX_STREAMS = 200_000  # machines x topics: far more than any floor; the memory is bounded
_SEQ_MAX = 9_007_199_254_740_991


@dataclass(slots=True)
class _Stream:
    boot: str | None
    last: int
    old_boot: str | None = None


class SequenceGaps:
    """Per-stream sequence numbers of the inbound messages; see the module docstring."""

    def __init__(self, sink: GapSink | None = None) -> None:
        self.sink = sink
        self.streams: dict[tuple[str, str], _Stream] = {}
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
            return 0
        if boot != stream.boot:
            if boot is not None and boot == stream.old_boot:
                return 0  # a late message of the run before the restart
            self.restarts += 1
            stream.old_boot, stream.boot, stream.last = stream.boot, boot, seq
            return 0
        if seq == stream.last + 1:
            stream.last = seq
            return 0
        if seq <= stream.last:
            if seq == 1 and boot is None and stream.last > 1:
                self.restarts += 1
                stream.last = 1
            return 0
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

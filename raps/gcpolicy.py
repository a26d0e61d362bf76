"""Garbage-collector settings for the daemon: a large live heap, fed at a high rate.

The floor keeps tens of thousands of long-lived objects (players, machines, pools,
recent event ids), and ingest allocates a few short-lived ones per message. With
CPython's default thresholds (700, 10, 10) the collections that keep walking the
long-lived ones cost MQTT ingest about a quarter of its CPU (bench/mqtt.py, QoS 0:
38.9 -> 26.1 us of CPU a message). Once started, the daemon moves what it has built out of
the collector's sight (gc.freeze) and collects young objects every 50,000 allocations
(a few MB at most); cycles are still collected, just less often.  While it builds its
state (`Service.start`, the closed sessions' restore after it) the collector is paused.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG_THRESHOLD = 50_000
OLDER_THRESHOLD = 20  # each older generation is collected after this many of the younger


def settle_after_start() -> None:
    """Collect once, freeze the start-up state, and raise the thresholds."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, OLDER_THRESHOLD, OLDER_THRESHOLD)


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic collector off while long-lived state is built (a start, a restore):
    collections walking what was just built, again and again as it grows, cost a start a
    third of its CPU (JSON parsing and record building most)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()

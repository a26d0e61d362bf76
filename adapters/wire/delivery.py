"""Handing event batches to the daemon, and logging bad input without flooding the log.

Every polling adapter (SAS loops, Modbus gateways) ends each poll cycle the same way:
a batch of FloorEvents goes to the daemon's emit callback, which may be plain or async,
and must never stop the poll loop when it fails; and a burst of the same bad frame is
logged once, with a count of what was held back.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from selector.events import AnyFloorEvent

BURST_SECONDS = 10.0


class BurstLog:
    """One log line per reason per burst, then a count of what was held back."""

    def __init__(self, log: Any, seconds: float = BURST_SECONDS) -> None:
        self.log = log
        self.seconds = seconds
        self._last: dict[str, float] = {}
        self._held: Counter[str] = Counter()

    def warn(self, reason: str, message: str, **context: Any) -> None:
        now = time.monotonic()
        if now - self._last.get(reason, -1e18) >= self.seconds:
            self._last[reason] = now
            held = self._held.pop(reason, 0)
            self.log.warning(message, reason=reason, suppressed=held, **context)
        else:
            self._held[reason] += 1


def deliver(
    emit: Callable[[list[AnyFloorEvent]], object],
    batch: list[AnyFloorEvent],
    pending: set[asyncio.Future[Any]],
    stats: Counter[str],
    log: Any,
) -> None:
    """Hand a batch to the daemon's emit callback, plain or async; an async one runs as a
    task kept in `pending` until done. A failing emit is counted and logged, never raised:
    the poll loop must go on."""
    try:
        result = emit(batch)
    except Exception:
        stats["emit_failed"] += 1
        log.exception("emit failed", events=len(batch))
        return
    if inspect.isawaitable(result):
        task = asyncio.ensure_future(result)
        pending.add(task)
        task.add_done_callback(pending.discard)

"""Storage outages, told once per change: down, still down once a minute, up again.

A database outage used to write two tracebacks per floor-log flush (every 0.2-0.5 s):
a wall of noise that hid what changed and when.  Each storage path (the database as
probed, the floor log as written) keeps one `Outage`; the service reports every
failure and success to it, and it writes one line when the path goes down, one a
minute while it stays down, and one when it is back, and counts the outages.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from prometheus_client import Counter

from raps.metrics import Metrics

REMIND_SECONDS = 60.0


class FloorLogUnavailable(RuntimeError):
    """A floor-log write failed; its events are kept for the next try (already logged)."""


class Outage:
    """Up/down state of one storage path; its log lines and its outage counter."""

    def __init__(
        self,
        what: str,
        log: Any,
        clock: Callable[[], datetime],
        outages: Counter,
        remind_seconds: float = REMIND_SECONDS,
    ) -> None:
        self.what = what
        self.log = log
        self.clock = clock
        self.outages = outages
        self.remind = remind_seconds
        self.down_since: datetime | None = None
        self._said: datetime | None = None
        self.failures = 0  # since the path went down

    @property
    def down(self) -> bool:
        return self.down_since is not None

    def failed(self, error: BaseException, **context: Any) -> None:
        """One failure: a line when the path goes down, then at most one a minute.

        Only the error's type is logged: a driver's message may quote the statement,
        and floor-log rows hold card numbers."""
        now = self.clock()
        self.failures += 1
        fields = {"storage": self.what, "error": type(error).__name__, **context}
        if self.down_since is None:
            self.down_since = self._said = now
            self.outages.inc()
            self.log.error(f"{self.what} down", **fields)
        elif self._said is None or (now - self._said).total_seconds() >= self.remind:
            self._said = now
            down = round((now - self.down_since).total_seconds(), 1)
            self.log.error(
                f"{self.what} still down", down_seconds=down, failures=self.failures, **fields
            )

    def ok(self, **context: Any) -> None:
        """A success: one line if the path was down."""
        if self.down_since is None:
            return
        down = round((self.clock() - self.down_since).total_seconds(), 1)
        self.log.info(
            f"{self.what} up again", storage=self.what, down_seconds=down,
            failures=self.failures, **context,
        )  # fmt: skip
        self.down_since = self._said = None
        self.failures = 0


class StorageHealth:
    """The service's storage paths: the database (probed) and the floor log (written)."""

    def __init__(self, metrics: Metrics, log: Any, clock: Callable[[], datetime]) -> None:
        self.metrics = metrics
        self.database = Outage("database", log, clock, metrics.storage_outages.labels("database"))
        self.floor_log = Outage(
            "floor log", log, clock, metrics.storage_outages.labels("floor_log")
        )

    def floor_log_written(self, backlog: int, error: BaseException | None = None) -> None:
        """After a floor-log write: its outcome, and the events still unwritten."""
        self.metrics.floor_log_backlog.set(backlog)
        if error is None:
            self.floor_log.ok()
        else:
            self.metrics.floor_log_failures.inc()
            self.floor_log.failed(error, backlog=backlog)

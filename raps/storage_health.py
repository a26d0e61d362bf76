"""Storage outages, told once per change: down, still down once a minute, up again.

A database outage used to write two tracebacks per floor-log flush and per claim-timer
tick (every 0.2-0.5 s): a wall of noise that hid what changed and when.  Each storage
path (the database as probed, the floor log and the floor snapshots as written, the
journal as committed by every desk) keeps one `Outage`; the service reports every
failure and success to it, and it writes one line when the path goes down, one a
minute while it stays down, and one when it is back, and counts the outages.

A failure already told to its `Outage` is raised as a `StorageUnavailable`: the
daemon's periodic tasks take it for what it is (no traceback) and retry with backoff
(`retry_delay`) while it lasts.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from prometheus_client import Counter

from raps.metrics import Metrics

REMIND_SECONDS = 60.0
# a periodic task that meets an outage waits twice as long after each failure, up to this
# (never less than its own period): a tick every 0.2 s tries about every 5 s meanwhile
RETRY_MAX_SECONDS = 5.0


class StorageUnavailable(RuntimeError):
    """A storage write or read failed and its `Outage` has been told (logged once a
    change): callers answer "try again", periodic tasks back off, nobody logs it again."""


class JournalUnavailable(StorageUnavailable):
    """The journal could not commit; the command had no effect (the outage is logged)."""


class FloorLogUnavailable(StorageUnavailable):
    """A floor-log write failed; its events are kept for the next try (already logged)."""


def retry_delay(period: float, failures: int) -> float:
    """How long a periodic task waits after `failures` storage failures in a row."""
    if failures <= 0:
        return period
    return max(period, min(period * 2.0**failures, RETRY_MAX_SECONDS))


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
    """The service's storage paths: the database (probed), the floor log and its
    snapshots (written) and the journal (committed by the service and its desks)."""

    def __init__(self, metrics: Metrics, log: Any, clock: Callable[[], datetime]) -> None:
        self.metrics = metrics

        def outage(what: str, path: str) -> Outage:
            return Outage(what, log, clock, metrics.storage_outages.labels(path))

        self.database = outage("database", "database")
        self.floor_log = outage("floor log", "floor_log")
        self.snapshot = outage("floor snapshot", "snapshot")
        self.journal = outage("journal", "journal")

    def floor_log_written(self, backlog: int, error: BaseException | None = None) -> None:
        """After a floor-log write: its outcome, and the events still unwritten."""
        self.metrics.floor_log_backlog.set(backlog)
        if error is None:
            self.floor_log.ok()
        else:
            self.metrics.floor_log_failures.inc()
            self.floor_log.failed(error, backlog=backlog)

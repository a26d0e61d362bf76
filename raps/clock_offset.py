"""A test hook: the daemon's clock stepped by an offset read from a file.

`raps run` reads the system clock.  Claim timers, points days and verify's "time went
backwards" check are about that clock jumping (an NTP step, a mis-set host), and
stepping the machine's own clock would step every process on it.  With the environment
variable RAPS_CLOCK_OFFSET_FILE naming a file, the daemon's clock (the one every part
of it is given) is the system clock plus the seconds written in that file (a float,
may be negative; a missing or unreadable file: the last offset read, 0 at first),
read again at most every 0.1 s.  bench/chaos.py's `clock_step` fault uses it.  Never
set it in production: the journal's times would be the file's.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

ENV = "RAPS_CLOCK_OFFSET_FILE"
RECHECK_SECONDS = 0.1


def utc_now() -> datetime:
    return datetime.now(UTC)


class OffsetClock:
    """The system clock plus the offset in `path` (see the module docstring)."""

    def __init__(self, path: Path, recheck: float = RECHECK_SECONDS) -> None:
        self.path = path
        self.recheck = recheck
        self.offset = 0.0
        self._next = 0.0

    def __call__(self) -> datetime:
        mono = time.monotonic()
        if mono >= self._next:
            self._next = mono + self.recheck
            # unreadable or half-written: keep the last offset, never jump to 0
            with contextlib.suppress(OSError, ValueError):
                self.offset = float(self.path.read_text("utf-8").strip() or 0)
        return datetime.now(UTC) + timedelta(seconds=self.offset)


def daemon_clock() -> Callable[[], datetime]:
    """The daemon's clock: the system's, or the test hook's when RAPS_CLOCK_OFFSET_FILE is set."""
    path = os.environ.get(ENV)
    return OffsetClock(Path(path)) if path else utc_now

"""Site-local days and qualifying windows, computed from epoch seconds.

Points count per player per *site-local* day and only inside a promotion's window
(08:00-19:00 Africa/Johannesburg in the seed).  Converting every event's timestamp
through zoneinfo would dominate ingest, so the bounds of the current day are cached
and only recomputed when an event falls outside them (day change, late event).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo


@dataclass(frozen=True, slots=True)
class QualifyingWindow:
    """Local time-of-day window [start, end) in a time zone; end 00:00 means midnight."""

    tz: str = "Africa/Johannesburg"
    start: time = time(8, 0)
    end: time = time(19, 0)

    def __post_init__(self) -> None:
        ZoneInfo(self.tz)  # raises for an unknown zone
        if self.end != time(0, 0) and self.end <= self.start:
            raise ValueError(f"window end {self.end} must be after start {self.start}")

    def bounds(self, day: date) -> tuple[float, float]:
        """Epoch seconds [start, end) of the window on a local day (DST-safe)."""
        zone = ZoneInfo(self.tz)
        start = datetime.combine(day, self.start, zone)
        end_day = day + timedelta(days=1) if self.end == time(0, 0) else day
        end = datetime.combine(end_day, self.end, zone)
        return start.timestamp(), end.timestamp()


class DayClock:
    """Maps epoch seconds to (local day ordinal, inside window?) with a one-day cache."""

    __slots__ = ("_day_end", "_day_start", "day", "win_end", "win_start", "window", "zone")

    def __init__(self, window: QualifyingWindow) -> None:
        self.window = window
        self.zone = ZoneInfo(window.tz)
        # the cached local day: its ordinal and bounds, and its window's bounds
        self.day = -1
        self._day_start = 0.0
        self._day_end = -1.0
        self.win_start = 0.0
        self.win_end = 0.0

    def local_day(self, epoch: float) -> date:
        return datetime.fromtimestamp(epoch, self.zone).date()

    def _load(self, epoch: float) -> None:
        day = self.local_day(epoch)
        midnight = datetime.combine(day, time(0, 0), self.zone)
        next_midnight = datetime.combine(day + timedelta(days=1), time(0, 0), self.zone)
        self.day = day.toordinal()
        self._day_start = midnight.timestamp()
        self._day_end = next_midnight.timestamp()
        self.win_start, self.win_end = self.window.bounds(day)

    def classify(self, epoch: float) -> tuple[int, bool]:
        """(local day ordinal, whether epoch lies inside that day's window)."""
        if not (self._day_start <= epoch < self._day_end):
            self._load(epoch)
        return self.day, self.win_start <= epoch < self.win_end

    def day_of(self, epoch: float) -> int:
        if not (self._day_start <= epoch < self._day_end):
            self._load(epoch)
        return self.day

    def pieces(self, start: float, end: float) -> list[tuple[int, float]]:
        """Seconds of [start, end) inside the window, per local day (oldest first).

        Play reported as a span (a table rating's minutes) counts only for its part inside
        the window.  Only the last three local days of the span are looked at: the floor
        keeps one day of points per window, so older days' parts could never count (and a
        bogus span of years costs no more than a long one).
        """
        out: list[tuple[int, float]] = []
        last = self.local_day(end)
        day = max(self.local_day(start), last - timedelta(days=2))
        while day <= last:
            win_start, win_end = self.window.bounds(day)
            lo, hi = max(win_start, start), min(win_end, end)
            if lo < hi:
                out.append((day.toordinal(), hi - lo))
            day += timedelta(days=1)
        return out

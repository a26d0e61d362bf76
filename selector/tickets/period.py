"""Earning periods: the stretch of site-local wall time whose points earn a draw's tickets.

A period rule maps a draw's time to an interval [start, end) in epoch seconds.  Bounds
are computed in the site's wall time and converted with zoneinfo, so "08:00" stays
08:00 across a DST change (a week that contains one is an hour shorter or longer).
The shapes are the seeds' (../shared/seeds/), all of them configuration:

- fixed_windows: consecutive windows of N days from an anchor, no roll-over between
  them (003 TEEDS: 7-day periods); a draw uses the window that contains it (cut at
  the draw) or the one before it;
- month_to_draw: from the 1st of the draw's month at a start time until the draw
  (000 Queen Thursdays, rules 49-52);
- fixed_start_to_draw: from one fixed moment until each draw (000 car draws, rule 71);
- day_to_draw: from a start time on the draw's day until the draw.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, time, timedelta
from enum import StrEnum
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

DEFAULT_TZ = "Africa/Johannesburg"
USES = ("containing", "previous")


class PeriodKind(StrEnum):
    FIXED_WINDOWS = "fixed_windows"
    MONTH_TO_DRAW = "month_to_draw"
    FIXED_START_TO_DRAW = "fixed_start_to_draw"
    DAY_TO_DRAW = "day_to_draw"


def zone_of(tz: str, field: str = "tz") -> ZoneInfo:
    """The zone, or a ValueError naming the field (zoneinfo raises a KeyError)."""
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"{field}: unknown time zone {tz!r}") from exc


def _wall(dt: datetime, zone: ZoneInfo) -> datetime:
    """Naive site-local wall time; a naive datetime already is one."""
    return dt if dt.tzinfo is None else dt.astimezone(zone).replace(tzinfo=None)


def _epoch(wall: datetime, zone: ZoneInfo) -> float:
    return wall.replace(tzinfo=zone).timestamp()


@dataclass(frozen=True, slots=True, kw_only=True)
class PeriodRule:
    """How a program's draws map to earning intervals; build it with the classmethods.

    `start` is the fixed_windows anchor or the fixed start; naive datetimes are site-local
    wall time in `tz`, aware ones are converted to it.
    """

    kind: PeriodKind
    tz: str = DEFAULT_TZ
    start: datetime | None = None
    days: int = 7
    last_end: datetime | None = None
    use: str = "containing"
    start_time: time = time(8, 0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", PeriodKind(self.kind))
        zone = zone_of(self.tz, "period.tz")
        anchored = self.kind in (PeriodKind.FIXED_WINDOWS, PeriodKind.FIXED_START_TO_DRAW)
        if anchored and self.start is None:
            raise ValueError(f"period.start is required for {self.kind.value}")
        if not anchored and self.start is not None:
            raise ValueError(f"period.start does not apply to {self.kind.value}")
        if self.kind is not PeriodKind.FIXED_WINDOWS:
            if self.last_end is not None:
                raise ValueError("period.last_end applies to fixed_windows only")
            return
        if self.days < 1:
            raise ValueError(f"period.days must be >= 1, not {self.days}")
        if self.use not in USES:
            raise ValueError(f"period.use must be one of {USES}, not {self.use!r}")
        assert self.start is not None
        if self.last_end is not None and _wall(self.last_end, zone) <= _wall(self.start, zone):
            raise ValueError("period.last_end must be after period.start")

    @classmethod
    def fixed_windows(
        cls,
        anchor: datetime,
        days: int = 7,
        *,
        last_end: datetime | None = None,
        use: str = "containing",
        tz: str = DEFAULT_TZ,
    ) -> PeriodRule:
        return cls(
            kind=PeriodKind.FIXED_WINDOWS, tz=tz, start=anchor, days=days, last_end=last_end,
            use=use,
        )  # fmt: skip

    @classmethod
    def month_to_draw(cls, start_time: time = time(8, 0), *, tz: str = DEFAULT_TZ) -> PeriodRule:
        return cls(kind=PeriodKind.MONTH_TO_DRAW, tz=tz, start_time=start_time)

    @classmethod
    def fixed_start_to_draw(cls, start: datetime, *, tz: str = DEFAULT_TZ) -> PeriodRule:
        return cls(kind=PeriodKind.FIXED_START_TO_DRAW, tz=tz, start=start)

    @classmethod
    def day_to_draw(cls, start_time: time = time(8, 0), *, tz: str = DEFAULT_TZ) -> PeriodRule:
        return cls(kind=PeriodKind.DAY_TO_DRAW, tz=tz, start_time=start_time)

    @property
    def exclusive(self) -> bool:
        """Whether two bins may not share points: fixed windows do not roll over."""
        return self.kind is PeriodKind.FIXED_WINDOWS

    def interval(self, draw_at: datetime) -> tuple[float, float]:
        """Epoch seconds [start, end) whose points earn tickets for a draw at `draw_at`."""
        if draw_at.tzinfo is None:
            raise ValueError("period: the draw time must be timezone-aware")
        zone = ZoneInfo(self.tz)
        t = draw_at.timestamp()
        wall = _wall(draw_at, zone)
        if self.kind is PeriodKind.FIXED_WINDOWS:
            start, end = self._window(t, wall, zone)
        elif self.kind is PeriodKind.MONTH_TO_DRAW:
            first = datetime.combine(wall.date().replace(day=1), self.start_time)
            start, end = _epoch(first, zone), t
        elif self.kind is PeriodKind.DAY_TO_DRAW:
            start, end = _epoch(datetime.combine(wall.date(), self.start_time), zone), t
        else:
            assert self.start is not None
            start, end = _epoch(_wall(self.start, zone), zone), t
        if end <= start:
            raise ValueError(
                f"period {self.kind.value}: the draw at {draw_at.isoformat()} leaves an empty"
                " earning period"
            )
        return start, end

    def _window(self, t: float, wall: datetime, zone: ZoneInfo) -> tuple[float, float]:
        assert self.start is not None
        anchor = _wall(self.start, zone)
        step = timedelta(days=self.days)

        def bound(k: int) -> float:
            return _epoch(anchor + k * step, zone)

        k = (wall - anchor) // step  # by wall time; the epochs settle ambiguous hours
        while k > 0 and t < bound(k):
            k -= 1
        while t >= bound(k + 1):
            k += 1
        if t < bound(0):
            raise ValueError(
                f"period fixed_windows: the draw at {wall.isoformat()} is before the anchor"
                f" {anchor.isoformat()}"
            )
        if self.use == "previous":
            if k == 0:
                raise ValueError(
                    f"period fixed_windows: the draw at {wall.isoformat()} is in the first"
                    " window, so it has no previous window to earn in"
                )
            k -= 1
        start, end = bound(k), bound(k + 1)
        if self.last_end is not None:
            end = min(end, _epoch(_wall(self.last_end, zone), zone))
        if self.use == "containing":
            end = min(end, t)  # points after the draw cannot count for it
        return start, end

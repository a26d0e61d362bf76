"""A promotion's calendar: its draw occurrences, from rules, dated lists and exceptions.

Seed 000 says it this way: every Wednesday of October to December 2025 at 13:00 and
20:00, except 22 October, moved to Tuesday 21 October; every Thursday at 20:00, except
23 October, moved to Sunday 26 October at 13:00; selected Saturdays at 15:00, 19:00 and
21:00; and 20 December at 21:30 only if the safe was not cracked.  Seed 003: RAPS
sessions 18:00-19:00 on four Saturdays.  A `Calendar` holds exactly that, and gives the
occurrences as aware date-times in the site's zone, each with its windows (a RAPS
session's 18:00-19:00, a ticket draw's entry window, the proxy deadline).

Times are site wall times: "13:00" stays 13:00 across a DST change.  A wall time the
clocks skip (a DST gap) is refused, naming it; a wall time they pass twice (the hour
after a change back) is its first passing.  Nothing here reads a clock.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo


class CalendarError(ValueError):
    """A calendar that cannot be: the message names the rule, exception or window."""


@dataclass(frozen=True, slots=True)
class Weekly:
    """Every `weekdays` (0 Monday .. 6 Sunday) from `first` to `last` (inclusive), at
    each of `times`."""

    weekdays: tuple[int, ...]
    times: tuple[time, ...]
    first: date
    last: date

    def wall_times(self) -> Iterable[datetime]:
        if self.last < self.first:
            raise CalendarError(f"weekly rule: last {self.last} is before first {self.first}")
        if not self.weekdays or any(not 0 <= d <= 6 for d in self.weekdays):
            raise CalendarError("weekly rule: weekdays must be 0 (Monday) to 6 (Sunday)")
        day = self.first
        while day <= self.last:
            if day.weekday() in self.weekdays:
                for t in self.times:
                    yield datetime.combine(day, t)
            day += timedelta(days=1)


@dataclass(frozen=True, slots=True)
class Dated:
    """Each of `dates` at each of `times` (the selected Saturdays of 000)."""

    dates: tuple[date, ...]
    times: tuple[time, ...]

    def wall_times(self) -> Iterable[datetime]:
        for d in self.dates:
            for t in self.times:
                yield datetime.combine(d, t)


@dataclass(frozen=True, slots=True)
class Moved:
    """One occurrence a rule gives, held at another time (000: 22 Oct to 21 Oct)."""

    original: datetime  # wall time, as the rule gives it
    to: datetime  # wall time
    reason: str


@dataclass(frozen=True, slots=True)
class Cancelled:
    original: datetime
    reason: str


@dataclass(frozen=True, slots=True)
class Conditional:
    """An occurrence that takes place only if `condition` holds when it is decided
    (000: 20 Dec 21:30 "if the safe has not been cracked")."""

    at: datetime  # wall time
    condition: str


@dataclass(frozen=True, slots=True)
class Edge:
    """A window's edge: a wall time on the occurrence's day ("08:00"), or an offset from
    the occurrence in elapsed time ("15 minutes before" is 15 real minutes, DST or not)."""

    at_time: time | None = None
    offset: timedelta | None = None

    def __post_init__(self) -> None:
        if (self.at_time is None) == (self.offset is None):
            raise CalendarError("a window edge is a time of day or an offset, not both")

    def resolve(self, occurrence: datetime, what: str) -> datetime:
        """The edge for an occurrence at aware `occurrence`, aware in the same zone."""
        tz = occurrence.tzinfo
        assert isinstance(tz, ZoneInfo)
        if self.offset is not None:
            return (occurrence.astimezone(UTC) + self.offset).astimezone(tz)
        assert self.at_time is not None
        return aware(datetime.combine(occurrence.date(), self.at_time), tz, what)


@dataclass(frozen=True, slots=True)
class Window:
    """A named window of every occurrence, [start, end): "raps" 18:00-19:00, "entry"
    08:00 until 5 minutes before, "proxy" until 15 minutes before."""

    name: str
    start: Edge
    end: Edge


@dataclass(frozen=True, slots=True)
class Occurrence:
    at: datetime  # aware, in the site's zone
    wall: datetime  # the same as the site's clocks show it
    windows: Mapping[str, tuple[datetime, datetime]] = field(default_factory=dict)
    moved_from: datetime | None = None  # the rule's wall time, when moved
    reason: str | None = None  # why it was moved
    condition: str | None = None  # a conditional occurrence's condition

    def window(self, name: str) -> tuple[datetime, datetime]:
        try:
            return self.windows[name]
        except KeyError:
            raise CalendarError(f"occurrences have no window {name!r}") from None


def aware(wall: datetime, tz: ZoneInfo, what: str) -> datetime:
    """A wall time in the zone; a time the clocks skip is refused, naming `what`."""
    first = wall.replace(tzinfo=tz, fold=0)
    back = first.astimezone(UTC).astimezone(tz).replace(tzinfo=None)
    if back != wall:
        raise CalendarError(
            f"{what}: {wall:%Y-%m-%d %H:%M} does not exist in {tz.key} (the clocks skip it); "
            "give another time"
        )
    return first


class Calendar:
    """The occurrences of one promotion's draws (or sessions) and their windows."""

    def __init__(
        self,
        tz: str,
        rules: Sequence[Weekly | Dated],
        *,
        moved: Sequence[Moved] = (),
        cancelled: Sequence[Cancelled] = (),
        conditional: Sequence[Conditional] = (),
        windows: Sequence[Window] = (),
        period: tuple[date, date] | None = None,
        names: Sequence[str] = (),
    ) -> None:
        self.zone = ZoneInfo(tz)
        self.windows = tuple(windows)
        self.period = period
        window_names = [w.name for w in self.windows]
        if len(set(window_names)) != len(window_names):
            raise CalendarError(f"windows: a name is used twice ({', '.join(window_names)})")
        given: dict[datetime, str] = {}
        for i, rule in enumerate(rules):
            name = names[i] if i < len(names) else f"rules[{i}]"
            try:
                walls = list(rule.wall_times())
            except CalendarError as e:
                raise CalendarError(f"{name}: {e}") from None
            for wall in walls:
                if wall in given:
                    raise CalendarError(
                        f"{name}: {wall:%a %d %b %Y %H:%M} is already given by {given[wall]}"
                    )
                given[wall] = name
        out: dict[datetime, Occurrence] = {}
        for wall in given:
            out[wall] = self._occurrence(wall, given[wall])
        for i, c in enumerate(cancelled):
            if c.original not in out:
                raise CalendarError(f"cancelled[{i}]: no rule gives {c.original:%Y-%m-%d %H:%M}")
            del out[c.original]
        for i, m in enumerate(moved):
            if m.original not in out or out[m.original].moved_from is not None:
                raise CalendarError(f"moved[{i}]: no rule gives {m.original:%Y-%m-%d %H:%M}")
            del out[m.original]
            self._add(out, m.to, f"moved[{i}]", moved_from=m.original, reason=m.reason)
        for i, cond in enumerate(conditional):
            if not cond.condition.strip():
                raise CalendarError(f"conditional[{i}]: the condition must be named")
            self._add(out, cond.at, f"conditional[{i}]", condition=cond.condition)
        if period is not None:
            for occ in out.values():
                if not period[0] <= occ.wall.date() <= period[1]:
                    raise CalendarError(
                        f"period: {occ.wall:%Y-%m-%d %H:%M} is outside the promotion's period "
                        f"{period[0]} to {period[1]}"
                    )
        self._occurrences = sorted(out.values(), key=lambda o: o.at)

    def _add(self, out: dict[datetime, Occurrence], wall: datetime, what: str,
             **extra: object) -> None:  # fmt: skip
        if wall in out:
            raise CalendarError(f"{what}: {wall:%a %d %b %Y %H:%M} already has an occurrence")
        occ = self._occurrence(wall, what)
        out[wall] = Occurrence(occ.at, occ.wall, occ.windows, **extra)  # type: ignore[arg-type]

    def _occurrence(self, wall: datetime, what: str) -> Occurrence:
        at = aware(wall, self.zone, what)
        spans: dict[str, tuple[datetime, datetime]] = {}
        for w in self.windows:
            start = w.start.resolve(at, f"{what} window {w.name!r} start")
            end = w.end.resolve(at, f"{what} window {w.name!r} end")
            if end <= start:
                raise CalendarError(
                    f"{what}: window {w.name!r} ends ({end:%H:%M}) before it starts "
                    f"({start:%H:%M}) on {wall:%Y-%m-%d}"
                )
            spans[w.name] = (start, end)
        return Occurrence(at, wall, spans)

    # ------------------------------------------------------------------ reading

    def occurrences(self, conditions: Mapping[str, bool] | None = None) -> list[Occurrence]:
        """Every occurrence in time order; a conditional one only if its condition holds
        in `conditions` (not yet decided: listed, with its `condition` to show)."""
        conditions = conditions or {}
        return [
            o for o in self._occurrences if o.condition is None or conditions.get(o.condition, True)
        ]

    def between(self, start: datetime, end: datetime) -> list[Occurrence]:
        """Occurrences at or after `start` and before `end` (aware date-times), found by
        bisection: a page showing one month costs that month, not the whole calendar."""
        lo = bisect_left(self._occurrences, start, key=lambda o: o.at)
        hi = bisect_left(self._occurrences, end, lo=lo, key=lambda o: o.at)
        return self._occurrences[lo:hi]

    def in_window(self, name: str, now: datetime) -> Occurrence | None:
        """The occurrence whose window `name` holds `now`, if any (a RAPS session may be
        opened and drawn only then)."""
        for o in self._occurrences:
            start, end = o.window(name)
            if start <= now < end:
                return o
        return None

    def next_after(self, now: datetime) -> Occurrence | None:
        found = self.upcoming(now, 1)
        return found[0] if found else None

    def upcoming(self, now: datetime, count: int) -> list[Occurrence]:
        """The next `count` occurrences after `now`."""
        i = bisect_right(self._occurrences, now, key=lambda o: o.at)
        return self._occurrences[i : i + count]

    def overlap(self, name: str) -> str | None:
        """Where window `name` of one occurrence runs into the next one's, or None: two
        RAPS sessions at once is no calendar (entry windows of draws sharing a bin, on
        the other hand, overlap on purpose)."""
        spans = sorted((o.window(name), o.wall) for o in self._occurrences)
        for ((_, end), wall), ((start, _), later) in pairwise(spans):
            if start < end:
                return (
                    f"the window of {wall:%Y-%m-%d %H:%M} runs until {end:%H:%M}, past the "
                    f"start of the next one ({later:%Y-%m-%d %H:%M})"
                )
        return None

"""A calendar as plain data (TOML, JSON, a journal record) and its reading into a `Calendar`.

The same document is written in the config (`[promotions.calendar]`), sent by the
calendar page and stored in the journal, so one strict reader serves all three and
names the field of any problem (``weekly[0].times[1]: ...``).  The shape::

    weekly      = [{ weekdays = ["wed"], times = ["13:00", "20:00"],
                     first = "2025-10-01", last = "2025-12-31" }]
    dated       = [{ dates = ["2026-04-25", "2026-05-02"], times = ["18:00"] }]
    moved       = [{ from = "2025-10-22 13:00", to = "2025-10-21 13:00", reason = "..." }]
    cancelled   = [{ at = "2025-11-05 20:00", reason = "..." }]
    conditional = [{ at = "2025-12-20 21:30", condition = "safe not cracked" }]
    windows     = { raps = { start = "at", end = "19:00" },
                    proxy = { start = "08:00", end = "-15m" } }

A window edge is a time of day ("19:00"), "at" (the occurrence itself) or an offset
from it ("-15m", "+1h", "-90s").  Dates and times may also be TOML's own types.

A calendar is a promotion's, not an almanac: it spans at most `MAX_SPAN_DAYS` from its
first occurrence to its last and holds at most `MAX_OCCURRENCES`, checked from the
rules' sizes before a single date is made (a 100-year weekly rule took a second and
84 MB under the journal lock).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping, Sequence
from datetime import date, datetime, time, timedelta
from typing import Any

from selector.calendar import (
    Calendar,
    CalendarError,
    Cancelled,
    Conditional,
    Dated,
    Edge,
    Moved,
    Weekly,
    Window,
)

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
KEYS = frozenset({"weekly", "dated", "moved", "cancelled", "conditional", "windows"})
_OFFSET = re.compile(r"([+-])(\d+)([smh])")
_UNIT = {"s": 1, "m": 60, "h": 3600}
_NAME = re.compile(r"[a-z][a-z0-9_-]*")
MAX_SPAN_DAYS = 3 * 366  # first to last occurrence
MAX_OCCURRENCES = 5_000


class SpecError(CalendarError):
    """A calendar document that cannot be read; `key` is the field's dotted path."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}" if key else message)
        self.key = key
        self.reason = message


def read_calendar(
    spec: Mapping[str, Any], tz: str, period: tuple[date, date] | None = None
) -> Calendar:
    """The calendar a document describes; a SpecError naming the field if it cannot be."""
    if not isinstance(spec, Mapping):
        raise SpecError("", "a calendar is a table of weekly, dated, moved, ... keys")
    unknown = sorted(set(spec) - KEYS)
    if unknown:
        raise SpecError(unknown[0], f"unknown key (keys: {', '.join(sorted(KEYS))})")
    rules: list[Weekly | Dated] = []
    names: list[str] = []
    for i, w in enumerate(_items(spec, "weekly")):
        key = f"weekly[{i}]"
        _only(w, key, {"weekdays", "times", "first", "last"})
        days = tuple(
            _weekday(d, f"{key}.weekdays[{j}]") for j, d in enumerate(_list(w, key, "weekdays"))
        )
        first, last = _date(w.get("first"), f"{key}.first"), _date(w.get("last"), f"{key}.last")
        if (last - first).days >= MAX_SPAN_DAYS:
            raise SpecError(
                f"{key}.last",
                f"the rule spans {(last - first).days + 1} days; a calendar spans at most "
                f"{MAX_SPAN_DAYS} days",
            )
        rules.append(Weekly(days, _times(w, key), first, last))
        names.append(key)
    for i, d in enumerate(_items(spec, "dated")):
        key = f"dated[{i}]"
        _only(d, key, {"dates", "times"})
        dates = tuple(_date(x, f"{key}.dates[{j}]") for j, x in enumerate(_list(d, key, "dates")))
        rules.append(Dated(dates, _times(d, key)))
        names.append(key)
    moved = []
    for i, m in enumerate(_items(spec, "moved")):
        key = f"moved[{i}]"
        _only(m, key, {"from", "to", "reason"})
        moved.append(
            Moved(
                _wall(m.get("from"), f"{key}.from"),
                _wall(m.get("to"), f"{key}.to"),
                _text(m.get("reason"), f"{key}.reason"),
            )
        )
    cancelled = []
    for i, c in enumerate(_items(spec, "cancelled")):
        key = f"cancelled[{i}]"
        _only(c, key, {"at", "reason"})
        cancelled.append(
            Cancelled(_wall(c.get("at"), f"{key}.at"), _text(c.get("reason"), f"{key}.reason"))
        )
    conditional = []
    for i, c in enumerate(_items(spec, "conditional")):
        key = f"conditional[{i}]"
        _only(c, key, {"at", "condition"})
        conditional.append(
            Conditional(
                _wall(c.get("at"), f"{key}.at"), _text(c.get("condition"), f"{key}.condition")
            )
        )
    windows = []
    raw_windows = spec.get("windows", {})
    if not isinstance(raw_windows, Mapping):
        raise SpecError("windows", "a table of named windows, like raps = { start, end }")
    for name, w in raw_windows.items():
        key = f"windows.{name}"
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise SpecError(key, "a window's name is lower-case letters, digits, '_' and '-'")
        if not isinstance(w, Mapping):
            raise SpecError(key, "a window is { start = ..., end = ... }")
        _only(w, key, {"start", "end"})
        windows.append(
            Window(name, _edge(w.get("start"), f"{key}.start"), _edge(w.get("end"), f"{key}.end"))
        )
    if not rules and not conditional:
        raise SpecError("", "a calendar needs at least one weekly or dated rule")
    _bounded(rules, names, len(moved) + len(conditional))
    try:
        calendar = Calendar(
            tz,
            rules,
            moved=moved,
            cancelled=cancelled,
            conditional=conditional,
            windows=windows,
            period=period,
            names=names,
        )
    except SpecError:
        raise
    except CalendarError as e:
        key, _, reason = str(e).partition(": ")
        if reason and re.fullmatch(r"[a-z_]+(\[\d+\])?(\.[a-z0-9_-]+)?", key):
            raise SpecError(key, reason) from None
        raise SpecError("", str(e)) from None
    every = calendar.occurrences()
    if every and (every[-1].wall.date() - every[0].wall.date()).days >= MAX_SPAN_DAYS:
        raise SpecError(
            "",
            f"it runs from {every[0].wall:%Y-%m-%d} to {every[-1].wall:%Y-%m-%d}; a calendar "
            f"spans at most {MAX_SPAN_DAYS} days",
        )
    return calendar


def _bounded(rules: Sequence[Weekly | Dated], names: Sequence[str], extra: int) -> None:
    """At most MAX_OCCURRENCES, counted from the rules' sizes before any is made."""
    total = extra
    for rule, name in zip(rules, names, strict=True):
        if isinstance(rule, Weekly):
            weeks = (rule.last - rule.first).days // 7 + 1
            total += weeks * len(set(rule.weekdays)) * len(rule.times)
        else:
            total += len(rule.dates) * len(rule.times)
        if total > MAX_OCCURRENCES:
            raise SpecError(
                name, f"the calendar would hold over {MAX_OCCURRENCES:,} occurrences (at most)"
            )


def _items(spec: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    value = spec.get(key, [])
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise SpecError(key, "a list of tables ([[...]] in TOML)")
    for i, item in enumerate(value):
        if not isinstance(item, Mapping):
            raise SpecError(f"{key}[{i}]", "a table, like { ... }")
    return list(value)


def _only(item: Mapping[str, Any], key: str, allowed: set[str]) -> None:
    unknown = sorted(set(item) - allowed)
    if unknown:
        raise SpecError(f"{key}.{unknown[0]}", f"unknown key (keys: {', '.join(sorted(allowed))})")
    missing = sorted(k for k in allowed - set(item) if k != "reason")
    if missing:
        raise SpecError(f"{key}.{missing[0]}", "missing")


def _list(item: Mapping[str, Any], key: str, field: str) -> list[Any]:
    value = item.get(field)
    if not isinstance(value, Sequence) or isinstance(value, str) or not value:
        raise SpecError(f"{key}.{field}", "a non-empty list")
    return list(value)


def _times(item: Mapping[str, Any], key: str) -> tuple[time, ...]:
    out = tuple(_time(t, f"{key}.times[{j}]") for j, t in enumerate(_list(item, key, "times")))
    if len(set(out)) != len(out):
        raise SpecError(f"{key}.times", "a time is given twice")
    return out


def _weekday(v: Any, key: str) -> int:
    if isinstance(v, str) and v.lower()[:3] in WEEKDAYS:
        return WEEKDAYS.index(v.lower()[:3])
    raise SpecError(key, f"a weekday ({', '.join(WEEKDAYS)}), not {v!r}")


def _time(v: Any, key: str) -> time:
    if isinstance(v, time):
        return v
    if isinstance(v, str):
        m = re.fullmatch(r"(\d{2}):(\d{2})", v)
        if m and int(m[1]) < 24 and int(m[2]) < 60:
            return time(int(m[1]), int(m[2]))
    raise SpecError(key, f'a time "HH:MM" from 00:00 to 23:59, not {v!r}')


def _date(v: Any, key: str) -> date:
    if isinstance(v, date) and not isinstance(v, datetime):
        return v
    if isinstance(v, str):
        try:
            return date.fromisoformat(v)
        except ValueError:
            pass
    raise SpecError(key, f'a date "YYYY-MM-DD", not {v!r}')


def _wall(v: Any, key: str) -> datetime:
    """A site wall time: no offset, the calendar's zone gives it."""
    if isinstance(v, str):
        with contextlib.suppress(ValueError):
            v = datetime.fromisoformat(v)
    if isinstance(v, datetime):
        if v.tzinfo is not None:
            raise SpecError(key, "a site wall time, without an offset (the site's zone applies)")
        return v
    raise SpecError(key, f'a date and time "YYYY-MM-DD HH:MM", not {v!r}')


def _text(v: Any, key: str) -> str:
    if v is None:
        return ""
    if not isinstance(v, str):
        raise SpecError(key, "text")
    return v


def _edge(v: Any, key: str) -> Edge:
    if v == "at":
        return Edge(offset=timedelta(0))
    if isinstance(v, str):
        m = _OFFSET.fullmatch(v)
        if m:
            seconds = int(m[2]) * _UNIT[m[3]]
            return Edge(offset=timedelta(seconds=-seconds if m[1] == "-" else seconds))
    try:
        return Edge(at_time=_time(v, key))
    except SpecError:
        raise SpecError(
            key, f'"HH:MM", "at" or an offset from the occurrence like "-15m", not {v!r}'
        ) from None


def write_period(period: tuple[date, date] | None) -> dict[str, str] | None:
    return (
        None if period is None else {"first": period[0].isoformat(), "last": period[1].isoformat()}
    )


def read_period(v: Any, key: str = "period") -> tuple[date, date] | None:
    """A promotion's period { first, last } (inclusive dates), or None."""
    if v is None:
        return None
    if not isinstance(v, Mapping):
        raise SpecError(key, "a table { first = YYYY-MM-DD, last = YYYY-MM-DD }")
    _only(v, key, {"first", "last"})
    first, last = _date(v["first"], f"{key}.first"), _date(v["last"], f"{key}.last")
    if last < first:
        raise SpecError(f"{key}.last", f"must not be before first ({first})")
    return first, last


def plain(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The document with TOML's dates and times as strings (for JSON and the journal)."""

    def conv(v: Any) -> Any:
        if isinstance(v, Mapping):
            return {k: conv(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [conv(x) for x in v]
        if isinstance(v, datetime):
            return v.strftime("%Y-%m-%d %H:%M")
        if isinstance(v, time):
            return v.strftime("%H:%M")
        if isinstance(v, date):
            return v.isoformat()
        return v

    return conv(spec)  # type: ignore[no-any-return]

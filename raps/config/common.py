"""Checks shared by several config sections: repeated ids, plain ids, "HH:MM" times, and
date-times read in the site's time zone."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, date, datetime, time
from typing import Any
from zoneinfo import ZoneInfo

_ITEM_ID = re.compile(r"[A-Za-z0-9._-]+")
_HHMM = re.compile(r"(\d{2}):(\d{2})")


def duplicates(
    section: str, ids: Sequence[str], what: str = "id", shown: str = ""
) -> list[tuple[str, str]]:
    """Problems for repeated ids; `shown` is the section's full path, for the message."""
    first: dict[str, int] = {}
    out: list[tuple[str, str]] = []
    for i, x in enumerate(ids):
        if x in first:
            see = f"{shown or section}[{first[x]}]"
            out.append((f"{section}[{i}].{what}", f"duplicate {what} {x!r} (see {see})"))
        first.setdefault(x, i)
    return out


def check_item_id(v: str) -> str:
    if not _ITEM_ID.fullmatch(v):
        raise ValueError(f"must be letters, digits, '.', '_' and '-' only, not {v!r}")
    return v


def parse_hhmm(v: Any, field: str) -> Any:
    if isinstance(v, time):
        return v
    if not isinstance(v, str):
        return v  # strict validation reports the type
    m = _HHMM.fullmatch(v)
    if m:
        hh, mm = int(m[1]), int(m[2])
        if hh == 24 and mm == 0 and field == "end":
            return time(0, 0)
        if hh < 24 and mm < 60:
            return time(hh, mm)
    upper = "24:00" if field == "end" else "23:59"
    raise ValueError(f'must be a time "HH:MM" from 00:00 to {upper}, not {v!r}')


def parse_datetime(v: Any) -> Any:
    """A quoted ISO 8601 date and time (or a TOML date-time) as a datetime; naive ones are
    site-local time, see `site_time`."""
    if isinstance(v, str):
        try:
            return datetime.fromisoformat(v)
        except ValueError:
            raise ValueError(
                f"must be an ISO 8601 date and time like '2026-04-25T18:00:00+02:00' "
                f"or '2026-04-25 18:00', not {v!r}"
            ) from None
    if isinstance(v, date) and not isinstance(v, datetime):
        raise ValueError(f"needs a time of day too, like '{v.isoformat()}T18:00:00'")
    return v


def site_time(dt: datetime, tz: str) -> datetime:
    """Always timezone-aware: a naive date-time is wall time in the site's zone (an
    ambiguous one takes its first occurrence)."""
    return dt.replace(tzinfo=ZoneInfo(tz)) if dt.tzinfo is None else dt


def missing_local_time(dt: datetime, tz: str) -> str | None:
    """The problem of a naive date-time that the site's clocks skip (a DST gap), or None."""
    if dt.tzinfo is not None:
        return None
    back = site_time(dt, tz).astimezone(UTC).astimezone(ZoneInfo(tz)).replace(tzinfo=None)
    if back == dt:
        return None
    return (
        f"{dt:%Y-%m-%d %H:%M} does not exist in {tz} "
        "(clocks change then); give another time or an explicit offset"
    )

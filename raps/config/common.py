"""Checks shared by several config sections: repeated ids, plain ids, "HH:MM" times."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import time
from typing import Any

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

"""A promotion's definition as plain data (TOML, the calendar page's JSON, a journal
record) and its strict reading into the core's `Promotion`, naming the field at fault.

The same document is what `[[promotions]]` says of who qualifies, what marketing types
on the calendar page and what `schedule.promotion_added` / `promotion_changed` records
hold, so the three cannot drift apart::

    name               = "Bonus jackpot session (RAPS)"
    threshold_points   = 50
    window             = { start = "08:00", end = "19:00" }   # "24:00": midnight
    tiers              = ["ten", "jack", "queen", "king", "ace"]
    areas_included     = ["Main Floor"]      # absent or null: every area
    areas_excluded     = ["Salon Prive"]
    pool_kinds         = ["slots", "tables"]
    min_active_seconds = 0
    witness_fallback   = false               # absent or null: the site's [witness] fallback

Every key but `name` has the config's default when absent.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping
from datetime import time
from typing import Any

from selector.calendar_spec import SpecError
from selector.events import PoolKind, Tier
from selector.promotion import Promotion
from selector.windows import QualifyingWindow

KEYS = (
    "name",
    "threshold_points",
    "window",
    "tiers",
    "areas_included",
    "areas_excluded",
    "pool_kinds",
    "min_active_seconds",
    "witness_fallback",
)
TIERS = tuple(t.value for t in Tier)
POOL_KINDS = tuple(k.value for k in PoolKind)
_HHMM = re.compile(r"(\d{2}):(\d{2})")
_MAX_POINTS = 10_000_000


def read_definition(
    promotion_id: str, doc: Mapping[str, Any], tz: str, areas: Collection[str] | None = None
) -> Promotion:
    """The core's Promotion a definition describes; a SpecError naming the field if it
    cannot be.  `areas`: the floor's (a misspelt area is refused), None: not checked."""
    if not isinstance(doc, Mapping):
        raise SpecError("", "a promotion is a table of name, threshold_points, window, ...")
    unknown = sorted(set(doc) - set(KEYS))
    if unknown:
        raise SpecError(unknown[0], f"unknown key (keys: {', '.join(KEYS)})")
    name = doc.get("name", "")
    if not isinstance(name, str) or not name.strip() or len(name) > 80 or not name.isprintable():
        raise SpecError("name", "1 to 80 printable characters")
    threshold = _number(doc.get("threshold_points", 50), "threshold_points", _MAX_POINTS)
    active = _number(doc.get("min_active_seconds", 0), "min_active_seconds", 86_400)
    start, end = _window(doc.get("window", {"start": "08:00", "end": "19:00"}))
    tiers = _choices(doc.get("tiers", TIERS), "tiers", TIERS)
    kinds = _choices(doc.get("pool_kinds", POOL_KINDS), "pool_kinds", POOL_KINDS)
    included = doc.get("areas_included")
    inside = None if included is None else _areas(included, "areas_included", areas)
    outside = _areas(doc.get("areas_excluded", ()), "areas_excluded", areas)
    fallback = doc.get("witness_fallback")
    if fallback is not None and not isinstance(fallback, bool):
        raise SpecError("witness_fallback", f"true, false or absent (the site's), not {fallback!r}")
    return Promotion(
        promotion_id=promotion_id,
        name=name.strip(),
        threshold_points=threshold,
        window=QualifyingWindow(tz=tz, start=start, end=end),
        tiers=frozenset(Tier(t) for t in tiers),
        areas_included=None if inside is None else frozenset(inside),
        areas_excluded=frozenset(outside),
        pool_kinds=frozenset(PoolKind(k) for k in kinds),
        min_active_seconds=active,
        witness_fallback=fallback,
    )


def write_definition(p: Promotion) -> dict[str, Any]:
    """The definition of a core Promotion, as `read_definition` reads it back."""
    end = "24:00" if p.window.end == time(0, 0) else f"{p.window.end:%H:%M}"
    doc: dict[str, Any] = {
        "name": p.name or p.promotion_id,
        "threshold_points": p.threshold_points,
        "window": {"start": f"{p.window.start:%H:%M}", "end": end},
        "tiers": [t for t in TIERS if Tier(t) in p.tiers],
        "areas_included": None if p.areas_included is None else sorted(p.areas_included),
        "areas_excluded": sorted(p.areas_excluded),
        "pool_kinds": [k for k in POOL_KINDS if PoolKind(k) in p.pool_kinds],
        "min_active_seconds": p.min_active_seconds,
    }
    if p.witness_fallback is not None:  # absent: the site's (definitions written before it)
        doc["witness_fallback"] = p.witness_fallback
    return doc


def _number(v: Any, key: str, most: float) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise SpecError(key, f"a number from 0 to {most:,.0f}, not {v!r}")
    if not 0 <= v <= most:
        raise SpecError(key, f"from 0 to {most:,.0f}")
    return float(v)


def _hhmm(v: Any, key: str, *, end: bool) -> time:
    m = _HHMM.fullmatch(v) if isinstance(v, str) else None
    if m and end and (m[1], m[2]) == ("24", "00"):
        return time(0, 0)
    if m and int(m[1]) < 24 and int(m[2]) < 60:
        return time(int(m[1]), int(m[2]))
    upper = "24:00" if end else "23:59"
    raise SpecError(key, f'a time "HH:MM" from 00:00 to {upper}, not {v!r}')


def _window(v: Any) -> tuple[time, time]:
    if not isinstance(v, Mapping) or set(v) != {"start", "end"}:
        raise SpecError("window", 'a table { start = "HH:MM", end = "HH:MM" }')
    start = _hhmm(v["start"], "window.start", end=False)
    end = _hhmm(v["end"], "window.end", end=True)
    if end != time(0, 0) and end <= start:
        raise SpecError("window.end", f'must be after start {start:%H:%M} ("24:00": midnight)')
    return start, end


def _strings(v: Any, key: str) -> list[str]:
    if isinstance(v, str) or not isinstance(v, list | tuple):
        raise SpecError(key, "a list")
    for i, x in enumerate(v):
        if not isinstance(x, str):
            raise SpecError(f"{key}[{i}]", "text")
    if len(set(v)) != len(v):
        raise SpecError(key, "an entry is given twice")
    return list(v)


def _choices(v: Any, key: str, allowed: tuple[str, ...]) -> list[str]:
    out = _strings(v, key)
    for i, x in enumerate(out):
        if x not in allowed:
            raise SpecError(f"{key}[{i}]", f"one of {', '.join(allowed)}, not {x!r}")
    if not out:
        raise SpecError(key, f"at least one of {', '.join(allowed)}")
    return out


def _areas(v: Any, key: str, known: Collection[str] | None) -> list[str]:
    out = _strings(v, key)
    for i, area in enumerate(out):
        if known is not None and area not in known:
            shown = ", ".join(repr(a) for a in sorted(known))
            raise SpecError(f"{key}[{i}]", f"no machine or table is in area {area!r} ({shown})")
    return out

"""Who did what to each pick, derived from a session's journal records (each record
names its actor): when a pick was resolved and by whom, for the dispatch history and
the end-of-session report.  Read-only; the core (selector/) is not involved."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from selector.records import Actor, Record

# a record that takes a pick out of "pending" (or, for an award, out of "verified")
RESOLVING = ("pick.verified", "pick.no_show", "pick.voided")
OUTCOME_TYPES = ("pick.verified", "pick.awarded", "pick.no_show", "pick.voided")


@dataclass(frozen=True, slots=True)
class Act:
    """One thing done to a pick: when, by whom."""

    type: str
    at: datetime
    actor: Actor
    data: dict[str, Any]


@dataclass(slots=True)
class PickActs:
    """A pick's life from the journal: drawn, first resolved, last outcome."""

    drawn: Act | None = None
    resolved: Act | None = None  # the first record that took it out of "pending"
    outcome: Act | None = None  # the record that gave it its current state


def actor_text(actor: Actor, data: dict[str, Any] | None = None) -> str:
    """How a report names who acted: "ann (marketing)", or "claim timer"."""
    if actor.user == "system":
        if actor.role == "timer" or (data is not None and data.get("by") == "claim_timer"):
            return "claim timer"
        return f"system ({actor.role})"
    return f"{actor.user} ({actor.role})"


def pick_acts(records: Sequence[Record]) -> dict[int, PickActs]:
    """Every pick's acts, by pick number, in journal order."""
    out: dict[int, PickActs] = {}
    for rec in records:
        if rec.type != "pick.drawn" and rec.type not in OUTCOME_TYPES:
            continue
        number = rec.data.get("pick")
        if not isinstance(number, int):
            continue
        act = Act(rec.type, rec.at, rec.actor, rec.data)
        acts = out.setdefault(number, PickActs())
        if rec.type == "pick.drawn":
            acts.drawn = act
            continue
        if acts.resolved is None and rec.type in RESOLVING:
            acts.resolved = act
        acts.outcome = act
    return out


def resolution(acts: PickActs | None) -> dict[str, Any]:
    """A pick's resolution as screens show it: the time and who ("claim timer")."""
    act = acts.resolved if acts else None
    if act is None:
        return {"resolved_at": None, "resolved_by": None}
    return {"resolved_at": act.at.isoformat(), "resolved_by": actor_text(act.actor, act.data)}


def with_resolutions(view: dict[str, Any], records: Sequence[Record]) -> dict[str, Any]:
    """A session summary (raps.session_views) with each pick's resolution time and who
    resolved it, for the dispatch history."""
    acts = pick_acts(records)
    view["picks"] = [{**p, **resolution(acts.get(p["pick"]))} for p in view["picks"]]
    return view

"""The claim's steps checked from a session's records alone (selector.claims): what
`verify_lifecycle` adds for a pick between its draw and its outcome.

- a pick's steps come in a legal order: en route and absent only while it is pending
  and nobody has found the winner absent; an extension only while its countdown runs,
  once; an escalation only before arrival, once, and not before its limit;
- every deadline is the one the session's rules give: at the draw (`claim_starts`
  "draw") or none until absent, then absent + `claim_seconds`; an extension's is the
  previous deadline plus its seconds;
- a claim-timer no-show comes at or after the deadline so derived, never before it,
  and never while the countdown has not started.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from selector.claims import (
    BEFORE_ARRIVAL,
    Claim,
    ClaimPhase,
    ClaimStart,
    absent_deadline,
    drawn_deadline,
    escalation_due,
)

_ENDED = ("pick.verified", "pick.no_show", "pick.voided")
_STEPS = ("pick.en_route", "pick.absent", "pick.extended", "pick.escalated")


@dataclass(slots=True)
class _Rules:
    starts: ClaimStart = ClaimStart.DRAW
    claim_seconds: float = 90.0
    max_en_route: float | None = None


@dataclass(slots=True)
class _Pick:
    drawn_at: datetime
    deadline: datetime | None
    claim: Claim
    pending: bool = True


def claim_mismatches(recs: list[dict[str, Any]]) -> list[tuple[int, int | None, str]]:
    """(record position, pick, what is wrong) for every claim step out of order or off
    its derived time, in journal order."""
    bad: list[tuple[int, int | None, str]] = []
    rules = _Rules()
    picks: dict[int, _Pick] = {}
    for i, r in enumerate(recs):
        t, d = r.get("type"), r.get("data") or {}
        try:
            if t == "session.opened":
                rules = _Rules(
                    ClaimStart(d.get("claim_starts", ClaimStart.DRAW)),
                    float(d.get("claim_seconds", 90.0)),
                    d.get("max_en_route_seconds"),
                )
                continue
            n = d.get("pick")
            if not isinstance(n, int) or not isinstance(t, str) or not t.startswith("pick."):
                continue
            at = datetime.fromisoformat(str(r.get("at")))
            if t == "pick.drawn":
                want = drawn_deadline(rules.starts, at, rules.claim_seconds)
                deadline = _when(d["deadline"]) if "deadline" in d else want  # as restore
                if deadline != want:
                    bad.append(
                        (i, n, f"drawn with deadline {_text(deadline)}, rules give {_text(want)}")
                    )
                picks[n] = _Pick(at, want, Claim())
                continue
            p = picks.get(n)
            if p is None:
                continue  # named by the recomputation ("never drawn")
            problem = _step(t, d, at, p, rules)
            if problem:
                bad.append((i, n, problem))
        except (KeyError, TypeError, ValueError) as e:
            bad.append((i, d.get("pick"), f"malformed {t!r} record: {e!r}"))
    return bad


def _step(t: str, d: dict[str, Any], at: datetime, p: _Pick, rules: _Rules) -> str | None:
    """What is wrong with one step of a drawn pick (and the pick moved on), or None."""
    claim = p.claim
    if t in _STEPS and not p.pending:
        return f"{t} for a pick no longer pending"
    if t == "pick.en_route":
        if claim.phase not in BEFORE_ARRIVAL:
            return "en route after the winner was found absent"
        if not str(d.get("officer") or "").strip():
            return "en route without an officer"
        claim.phase, claim.officer, claim.en_route_at = ClaimPhase.EN_ROUTE, d["officer"], at
    elif t == "pick.absent":
        if claim.phase not in BEFORE_ARRIVAL:
            return "found absent twice"
        want = absent_deadline(rules.starts, at, rules.claim_seconds, p.deadline)
        claim.phase, claim.absent_at = ClaimPhase.ABSENT, at
        got, p.deadline = _when(d.get("deadline")), want
        if got != want:
            return f"absent with deadline {_text(got)}, rules give {_text(want)}"
    elif t == "pick.extended":
        return _extended(d, p)
    elif t == "pick.escalated":
        due = escalation_due(claim, p.drawn_at, rules.max_en_route)
        if due is None:
            return "escalated with nothing to escalate (no limit, arrived, or escalated before)"
        claim.escalated_at = at
        if at < due:
            return f"escalated at {at.isoformat()}, before its limit ({due.isoformat()})"
    elif t == "pick.no_show" and d.get("by") == "claim_timer":
        p.pending = False
        if p.deadline is None:
            return "a claim-timer no-show before the countdown started"
        if at < p.deadline:
            return f"a claim-timer no-show at {at.isoformat()}, before {p.deadline.isoformat()}"
    elif t in _ENDED:
        p.pending = False
    return None


def _extended(d: dict[str, Any], p: _Pick) -> str | None:
    claim = p.claim
    if claim.extended_seconds is not None:
        return "the countdown extended a second time"
    if p.deadline is None:
        return "the countdown extended before it started"
    seconds = float(d["seconds"])
    if seconds <= 0:
        return f"an extension of {seconds} s"
    claim.extended_seconds = seconds
    want = p.deadline + timedelta(seconds=seconds)
    got, p.deadline = _when(d.get("deadline")), want
    if got != want:
        return f"extended to {_text(got)}, previous deadline + {seconds:g} s is {_text(want)}"
    return None


def _when(text: Any) -> datetime | None:
    return None if text is None else datetime.fromisoformat(str(text))


def _text(at: datetime | None) -> str:
    return "none" if at is None else at.isoformat()

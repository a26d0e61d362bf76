"""The claim's steps checked from a session's records alone (selector.claims): what
`verify_lifecycle` adds for a pick between its draw and its outcome.

- a pick's steps come in a legal order: en route and absent only while it is pending
  and nobody has found the winner absent; an extension only while its countdown runs,
  once; an escalation only before arrival, once, and not before its limit;
- every deadline is the one the session's rules give: at the draw (`claim_starts`
  "draw") or none until absent, then absent + `claim_seconds`; an extension's is the
  previous deadline plus its seconds;
- a claim-timer no-show comes at or after the deadline so derived, never before it,
  and never while the countdown has not started; a verification comes before it;
- an extension is an admin's (EXTENDING_ROLES), with a reason, of at most
  MAX_EXTENSION_SECONDS.

`claim_anomalies` names what an honest session does not show but that changes no
winner: a winner not reached within the en-route limit and never escalated.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from selector.claims import (
    BEFORE_ARRIVAL,
    EXTENDING_ROLES,
    MAX_EXTENSION_SECONDS,
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
    unescalated_noted: bool = False


def claim_mismatches(recs: list[dict[str, Any]]) -> list[tuple[int, int | None, str]]:
    """(record position, pick, what is wrong) for every claim step out of order or off
    its derived time, in journal order."""
    return _Walk(recs).bad


def claim_anomalies(recs: list[dict[str, Any]]) -> list[str]:
    """Claim steps an honest session shows and this one lacks (they change no winner)."""
    return _Walk(recs).anomalies


class _Walk:
    """One pass over a session's records, checking each claim step as it comes."""

    def __init__(self, recs: list[dict[str, Any]]) -> None:
        self.bad: list[tuple[int, int | None, str]] = []
        self.anomalies: list[str] = []
        self.rules = _Rules()
        self.picks: dict[int, _Pick] = {}
        for i, r in enumerate(recs):
            try:
                self._record(i, r)
            except (KeyError, TypeError, ValueError) as e:
                d = r.get("data") or {}
                self.bad.append((i, d.get("pick"), f"malformed {r.get('type')!r} record: {e!r}"))

    def _record(self, i: int, r: dict[str, Any]) -> None:
        t, d = r.get("type"), r.get("data") or {}
        if t == "session.opened":
            self.rules = _Rules(
                ClaimStart(d.get("claim_starts", ClaimStart.DRAW)),
                float(d.get("claim_seconds", 90.0)),
                d.get("max_en_route_seconds"),
            )
            return
        n = d.get("pick")
        if not isinstance(n, int) or not isinstance(t, str) or not t.startswith("pick."):
            return
        at = datetime.fromisoformat(str(r.get("at")))
        rules = self.rules
        if t == "pick.drawn":
            want = drawn_deadline(rules.starts, at, rules.claim_seconds)
            deadline = _when(d["deadline"]) if "deadline" in d else want  # as restore
            if deadline != want:
                self.bad.append(
                    (i, n, f"drawn with deadline {_text(deadline)}, rules give {_text(want)}")
                )
            self.picks[n] = _Pick(at, want, Claim())
            return
        p = self.picks.get(n)
        if p is None:
            return  # named by the recomputation ("never drawn")
        self._unescalated(n, t, at, p)
        problem = _step(t, d, at, p, rules, (r.get("actor") or {}).get("role"))
        if problem:
            self.bad.append((i, n, problem))

    def _unescalated(self, n: int, t: str, at: datetime, p: _Pick) -> None:
        """The claim timer escalates before anything later happens to the pick; a step
        strictly after the limit with no escalation before it means one went missing."""
        if not p.pending or t == "pick.escalated" or p.unescalated_noted:
            return
        due = escalation_due(p.claim, p.drawn_at, self.rules.max_en_route)
        if due is not None and due < at:
            p.unescalated_noted = True
            self.anomalies.append(
                f"pick {n} was not reached within {self.rules.max_en_route} s (limit at "
                f"{due.isoformat()}) and no escalation was journaled before its {t} at "
                f"{at.isoformat()}"
            )


def _step(
    t: str, d: dict[str, Any], at: datetime, p: _Pick, rules: _Rules, role: Any
) -> str | None:
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
        return _extended(d, p, role)
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
        if t == "pick.verified" and p.deadline is not None and at >= p.deadline:
            return (
                f"verified at {at.isoformat()}, after its countdown ran out at {_text(p.deadline)}"
            )
    return None


def _extended(d: dict[str, Any], p: _Pick, role: Any) -> str | None:
    claim = p.claim
    if claim.extended_seconds is not None:
        return "the countdown extended a second time"
    if p.deadline is None:
        return "the countdown extended before it started"
    if role not in EXTENDING_ROLES:
        return f"the countdown extended by {role!r}, not by {' or '.join(sorted(EXTENDING_ROLES))}"
    if not isinstance(d.get("reason"), str) or not d["reason"].strip():
        return "the countdown extended without a reason"
    seconds = float(d["seconds"])
    if not 0 < seconds <= MAX_EXTENSION_SECONDS:
        return f"an extension of {seconds:g} s (above 0, at most {MAX_EXTENSION_SECONDS:g} s)"
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

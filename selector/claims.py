"""A pending winner's claim: the steps the floor goes through between the draw and the ID.

Seed 003: "the winners will be located by the marketing team, accompanied by security.
Should the winner not be at the machine, they will be given 90 seconds to present
themselves."  On a large floor the walk alone can take longer than that, so the claim
of a pending pick has a phase:

    drawn ──en_route(officer)──▶ en_route ──absent──▶ absent (the countdown runs)
      └───────────────absent───────────────▶┘

- `en_route`: security acknowledges from the dispatch screen (or a patrol phone), with
  the officer's name; another officer may take it over while nobody has arrived;
- `absent`: marketing arrived and the winner is not there: the PA announcement is made;
- verify (the winner presents), no-show and void leave the claim from any phase.

When the claim countdown starts is the session's `claim_starts`: at the draw (the
default, and what every session before this did), or at `absent`, in which case the
pick has no deadline until then.  A winner not reached within `max_en_route_seconds`
(not acknowledged by then, or en route longer than that since the acknowledgement) is
escalated once, by the system (`pick.escalated`).  An admin may extend a running
countdown once per pick, with a reason (`pick.extended`, the new deadline).

Pure functions and a plain record of the claim; `selector.session` runs the commands
and journals them, `selector.claim_verify` checks them from the records.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum


class ClaimStart(StrEnum):
    """The moment a winner's claim countdown starts."""

    DRAW = "draw"
    ABSENT = "absent"


class ClaimPhase(StrEnum):
    DRAWN = "drawn"
    EN_ROUTE = "en_route"
    ABSENT = "absent"


# a step toward the winner is taken only before anyone has found them absent
BEFORE_ARRIVAL = (ClaimPhase.DRAWN, ClaimPhase.EN_ROUTE)
MAX_EXTENSION_SECONDS = 600.0  # one extension adds at most this much
EXTENDING_ROLES = frozenset({"admin"})  # who may extend a countdown (the supervisor's part)
MAX_OFFICER_CHARS = 80


class ClaimError(ValueError):
    """A claim step the rules refuse; the message says why."""


@dataclass(slots=True)
class Claim:
    """Where a pending pick's claim stands, as its records say."""

    phase: ClaimPhase = ClaimPhase.DRAWN
    officer: str | None = None
    en_route_at: datetime | None = None
    absent_at: datetime | None = None
    extended_seconds: float | None = None
    extended_reason: str | None = None
    extended_by: str | None = None
    escalated_at: datetime | None = None

    def to_dict(self) -> dict[str, object]:
        """What screens show of it (times as ISO 8601)."""
        iso = _iso
        return {
            "phase": self.phase.value,
            "officer": self.officer,
            "en_route_at": iso(self.en_route_at),
            "absent_at": iso(self.absent_at),
            "extended_seconds": self.extended_seconds,
            "extended_reason": self.extended_reason,
            "extended_by": self.extended_by,
            "escalated_at": iso(self.escalated_at),
        }


def _iso(at: datetime | None) -> str | None:
    return None if at is None else at.isoformat()


def drawn_deadline(starts: ClaimStart, drawn_at: datetime, claim_seconds: float) -> datetime | None:
    """The deadline a pick gets at its draw: none yet when the countdown starts at absent."""
    if starts == ClaimStart.ABSENT:
        return None
    return drawn_at + timedelta(seconds=claim_seconds)


def absent_deadline(
    starts: ClaimStart, at: datetime, claim_seconds: float, current: datetime | None
) -> datetime | None:
    """The deadline once the winner is found absent: the countdown starts now in absent
    mode; in draw mode it has been running since the draw and stays as it was."""
    if starts == ClaimStart.ABSENT:
        return at + timedelta(seconds=claim_seconds)
    return current


def escalation_due(
    claim: Claim, drawn_at: datetime, max_en_route_seconds: float | None
) -> datetime | None:
    """When a pick not yet reached escalates: `max_en_route_seconds` after the draw while
    nobody acknowledged it, after the acknowledgement once somebody did; None when there
    is no limit, nothing left to escalate (found absent) or it escalated already."""
    if (
        max_en_route_seconds is None
        or claim.escalated_at is not None
        or claim.phase not in BEFORE_ARRIVAL
    ):
        return None
    base = claim.en_route_at if claim.phase == ClaimPhase.EN_ROUTE else drawn_at
    assert base is not None
    return base + timedelta(seconds=max_en_route_seconds)


def escalation_reason(claim: Claim) -> str:
    return "en_route_too_long" if claim.phase == ClaimPhase.EN_ROUTE else "not_acknowledged"


def check_officer(claim: Claim, officer: str) -> str:
    """The officer's name, trimmed; refused before arrival is over or for the same one."""
    name = " ".join(officer.split())
    if not name:
        raise ClaimError("say which officer is on the way")
    if len(name) > MAX_OFFICER_CHARS or not name.isprintable():
        raise ClaimError(f"an officer's name is at most {MAX_OFFICER_CHARS} printable characters")
    if claim.phase not in BEFORE_ARRIVAL:
        raise ClaimError("the winner was already found absent: the countdown runs")
    if claim.phase == ClaimPhase.EN_ROUTE and claim.officer == name:
        raise ClaimError(f"{name} is already on the way")
    return name


def check_absent(claim: Claim) -> None:
    if claim.phase not in BEFORE_ARRIVAL:
        raise ClaimError("the winner was already found absent: the countdown runs")


def check_extension(
    claim: Claim, deadline: datetime | None, seconds: float, reason: str
) -> tuple[datetime, str]:
    """The new deadline and the trimmed reason of a supervisor's extension."""
    why = " ".join(reason.split())
    if not why:
        raise ClaimError("an extension needs a reason")
    if not 0 < seconds <= MAX_EXTENSION_SECONDS:
        raise ClaimError(f"an extension adds above 0 and at most {MAX_EXTENSION_SECONDS:.0f} s")
    if claim.extended_seconds is not None:
        raise ClaimError("the countdown was already extended once")
    if deadline is None:
        raise ClaimError("the countdown has not started: it starts when the winner is absent")
    return deadline + timedelta(seconds=seconds), why

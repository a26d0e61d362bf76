"""The crash soak's model of what the handheld was told (Command, SessionModel), its
Report, the invariant names and the helpers that compare picks and summaries; an
InvariantViolation is what every broken invariant raises."""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from bench.harness import wait_for

FILLED = ("pending", "verified", "awarded")
MASKED_CARD = re.compile(r"\*+[0-9]{4}")
KEEPS_DEADLINE = "a pending pick keeps its claim deadline across the restart"
EXPIRES_WHILE_DOWN = "a claim deadline that passed while down expires"


class InvariantViolation(AssertionError):
    """A crash-recovery invariant does not hold; the message names it and the evidence."""


def utc_now() -> datetime:
    return datetime.now(UTC)


def poll(what: str, probe: Callable[[], Any], timeout: float, interval: float = 0.05) -> Any:
    """Call `probe` until it returns something truthy; a timeout is a violation.

    A restarted daemon does some things a moment after it is ready (its claim timer
    ticks every 0.2 s), so checks of those wait with a deadline instead of sleeping.
    """
    result = wait_for(probe, timeout, interval)
    if not result:
        raise InvariantViolation(f"{what}: not within {timeout:.1f} s")
    return result


# --------------------------------------------------------------------- the model


@dataclass
class Command:
    """A handheld command: where it goes, its body (with its command id), what it does."""

    action: str  # open, draw, verify, award, no_show, void, close
    path: str
    body: dict[str, Any]
    pick: int | None = None

    @property
    def command_id(self) -> str:
        cid: str = self.body["command_id"]
        return cid


TARGET_STATE = {"verify": "verified", "award": "awarded", "no_show": "no_show", "void": "void"}
PICK_FIELDS = (
    "pick", "kind", "slot", "attempt", "card", "location", "display_name", "tier",
    "drawn_at", "deadline", "pool_size", "pool_digest",
)  # fmt: skip


@dataclass
class SessionModel:
    """What the handheld was told: every acknowledged outcome of one session."""

    session_id: str
    state: str = "scheduled"
    commitment: str | None = None
    picks: dict[int, dict[str, Any]] = field(default_factory=dict)
    draws: dict[str, int] = field(default_factory=dict)  # draw command id -> pick number
    acknowledged: set[str] = field(default_factory=set)  # ids answered 200
    refused: set[str] = field(default_factory=set)  # ids answered 409


@dataclass
class Report:
    """One database's soak, for the JSON line and the test's coverage assertions.

    `kills` counts the kill points and what each restart found (a floor snapshot or
    not, events replayed or not, the in-flight command committed or lost); `checks`
    counts every invariant that held.
    """

    database: str
    cycles: int = 0
    sessions: int = 0
    picks: int = 0
    failures: list[str] = field(default_factory=list)
    kills: Counter[str] = field(default_factory=Counter)
    checks: Counter[str] = field(default_factory=Counter)
    phases: dict[str, float] = field(default_factory=dict)  # seconds spent, by phase
    seconds: float = 0.0
    seed: int = 0

    def as_dict(self, with_checks: bool = True) -> dict[str, Any]:
        out = {
            "database": self.database,
            "cycles": self.cycles,
            "sessions": self.sessions,
            "picks": self.picks,
            "failures": self.failures,
            "kills": dict(sorted(self.kills.items())),
            "checks": dict(sorted(self.checks.items())),
            "phase_seconds": {k: round(v, 1) for k, v in sorted(self.phases.items())},
            "seconds": round(self.seconds, 1),
            "seed": self.seed,
        }
        if not with_checks:
            del out["checks"]
        return out


def sleep_until(moment: datetime) -> None:
    time.sleep(max(0.0, (moment - utc_now()).total_seconds()))


def mask(card: str) -> str:
    return "*" * (len(card) - 4) + card[-4:]


def same_pick(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Same draw: everything the pick was when drawn (its state may have moved on)."""
    return all(a.get(k) == b.get(k) for k in PICK_FIELDS)


def strip_head(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in summary.items() if k != "journal_head"}


def diff_summaries(before: dict[str, Any], after: dict[str, Any]) -> str:
    lines = []
    for k in before:
        if k not in ("picks", "journal_head") and before[k] != after.get(k):
            lines.append(f"{k}: {before[k]!r} -> {after.get(k)!r}")
    for p, q in zip(before["picks"], after["picks"], strict=False):
        changed = {k: (p[k], q.get(k)) for k in p if p[k] != q.get(k)}
        if changed:
            lines.append(f"pick {p['pick']}: {changed}")
    if len(before["picks"]) != len(after["picks"]):
        lines.append(f"{len(before['picks'])} picks -> {len(after['picks'])}")
    return "; ".join(lines)

"""Legacy bonus (long poll 8A) paid exactly once, or reported for a person to check.

Long poll 8A carries no transaction id: a machine that acted on it and whose ACK
was lost cannot be told from one that never heard it, and sending it again may
pay twice.  So a bonus is never sent again on a guess.  `BonusAttempt` is the
rule the poller follows, step by step:

1. **baseline**: read the legacy bonus meters (long poll 9A) of the tax status
   the bonus is paid under.
2. **send**: one 8A, no immediate repeat (the repeat is an implied NACK, which a
   machine may take as a new poll).
3. **confirm**: whatever the answer (ACK, NACK, busy, nothing, garbage, an event
   in its place), read the meters again.  Up by the amount: paid.  Unchanged: not
   paid, and only then may it be sent again (at most `max_sends` times).  A
   legacy bonus awarded exception (7C) with the same credits also confirms it.
4. Anything else (meters that cannot be read before the deadline, a partial
   change) is **unconfirmed**: never retried, recorded for a person.

A machine without long poll 9A (it NACKs it) gets one 8A; an ACK is then
confirmed by its 7C or ends unconfirmed.

`BonusBook` is the durable record: every step is appended to a JSON-lines file
and fsynced before the poller goes on (the "sending" line before the 8A is on
the wire), so an attempt open at a crash is reported unconfirmed at the next
start rather than paid again.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.sas.codec import LEGACY_BONUS_METERS

BASELINE, SEND, CONFIRM, DONE = "baseline", "send", "confirm", "done"
FINAL = frozenset({"paid", "nack", "busy", "not_paid", "not_sent", "unconfirmed"})
MAX_SENDS = 3


@dataclass(slots=True)
class BonusAttempt:
    """One bonus and where it stands; the poller does the I/O the step asks for."""

    bonus_id: str
    machine: str
    credits: int
    tax_status: int
    deadline: float  # loop time
    max_sends: int = MAX_SENDS
    step: str = BASELINE
    base: int | None = None  # the meter before the first send; None: no 9A on this machine
    sends: int = 0
    last_answer: str | None = None  # ack, nack, busy, none (nothing decodable), event
    outcome: str | None = None
    detail: str = ""

    @property
    def meter(self) -> str:
        """The 9A meter this bonus moves (deductible, non-deductible, wager match)."""
        return LEGACY_BONUS_METERS[self.tax_status if self.tax_status < 3 else 0]

    def baseline(self, meters: dict[str, int] | None) -> None:
        """The 9A read before the first send (None: the machine NACKs 9A)."""
        self.base = None if meters is None else meters[self.meter]
        self.step = SEND

    def sent(self, answer: str) -> None:
        """The machine's answer to one 8A: the next step is always a confirmation."""
        self.sends += 1
        self.last_answer = answer
        if self.base is None and answer in ("nack", "busy"):
            self._finish(answer, "refused; no legacy bonus meters to check")
        else:
            self.step = CONFIRM  # meters, or (without 9A) the 7C, decide

    def confirmed(self, meters: dict[str, int]) -> None:
        """The 9A read after a send: paid, not paid (may send again), or unclear."""
        assert self.base is not None
        delta = meters[self.meter] - self.base
        if delta == self.credits:
            self._finish("paid", "legacy bonus meter moved by the amount")
        elif delta == 0:
            if self.last_answer == "nack":
                self._finish("nack", "refused; meter unchanged")
            elif self.sends < self.max_sends:
                self.step = SEND  # confirmed not paid: a resend cannot pay twice
            else:
                self._finish("busy" if self.last_answer == "busy" else "not_paid",
                             f"meter unchanged after {self.sends} sends")  # fmt: skip
        else:
            self._finish("unconfirmed", f"meter moved by {delta}, the bonus is {self.credits}")

    def awarded(self, credits: int) -> bool:
        """A 7C (legacy bonus awarded) with its credits: confirms a bonus already sent."""
        if self.step in (SEND, CONFIRM) and self.sends and credits == self.credits:
            self._finish("paid", "legacy bonus awarded exception (7C)")
            return True
        return False

    def expire(self) -> None:
        """The deadline passed: never sent is harmless, sent and unchecked is for a person."""
        if self.sends:
            self._finish("unconfirmed", f"not confirmed within the deadline ({self.step})")
        else:
            self._finish("not_sent", f"the machine did not answer ({self.step})")

    def _finish(self, outcome: str, detail: str) -> None:
        self.outcome, self.detail, self.step = outcome, detail, DONE

    def record(self, action: str, **extra: Any) -> dict[str, Any]:
        """One line of the durable record."""
        return {
            "bonus": self.bonus_id,
            "machine": self.machine,
            "credits": self.credits,
            "tax_status": self.tax_status,
            "action": action,
            "step": self.step,
            "sends": self.sends,
            "base": self.base,
            "outcome": self.outcome,
            "detail": self.detail,
            **extra,
        }


class BonusBook:
    """Append-only JSON lines, fsynced at every line: the bonus attempts of one channel."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, rec: dict[str, Any]) -> None:
        line = json.dumps(rec, sort_keys=True, separators=(",", ":")) + "\n"
        with self.path.open("a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())

    def read(self) -> list[dict[str, Any]]:
        """Every readable line (a torn last line after a crash is skipped)."""
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and "bonus" in rec:
                out.append(rec)
        return out

    def open_attempts(self) -> list[dict[str, Any]]:
        """The last line of every bonus that has no final outcome: open at a crash."""
        last: dict[str, dict[str, Any]] = {}
        for rec in self.read():
            last[str(rec["bonus"])] = rec
        return [r for r in last.values() if r.get("outcome") not in FINAL]

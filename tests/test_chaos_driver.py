"""The chaos bench's handheld (bench/chaos_infra.py `Draws`) against a fake daemon.

A full chaos run once drew nothing for its last third: its sessions ran out and the
handheld sent `close` to the last, closed session over and over (each a 409, "session
s120 is closed, not open"), while every fault still printed "survived".  Here: a session
is closed once, a refused close of a session that is no longer open moves on, and when
the sessions run out the handheld says so and stops sending commands.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.chaos import sessions_for  # noqa: E402
from bench.chaos_infra import PICKS_PER_SESSION, Draws  # noqa: E402


class FakeHand:
    """The session commands as the daemon answers them (None: refused, like a 409)."""

    def __init__(self) -> None:
        self.states: dict[str, str] = {}
        self.picks: Counter[str] = Counter()
        self.sent: list[tuple[str, str]] = []
        self.refused: Counter[str] = Counter()
        self.lose_close_answer = False  # a kill -9 after the close was applied

    def command(self, session: str, path: str, **body: Any) -> dict[str, Any] | None:
        self.sent.append((session, path))
        state = self.states.get(session, "scheduled")
        verb = path.split("/")[-1]
        if verb == "open" and state == "scheduled":
            self.states[session] = "open"
            return {}
        if verb == "close" and state == "open":
            self.states[session] = "closed"
            return None if self.lose_close_answer else {}
        if verb == "draw" and state == "open":
            self.picks[session] += 1
            return {"pick": {"pick": self.picks[session]}}
        if verb in ("verify", "award", "void", "no-show") and state == "open":
            return {}
        self.refused[verb] += 1
        return None

    def state(self, session: str) -> str | None:
        return self.states.get(session, "scheduled")


def test_sessions_are_closed_once_and_the_handheld_stops_when_they_run_out() -> None:
    hand = FakeHand()
    draws = Draws(hand, 7, sessions=3)  # type: ignore[arg-type]
    for _ in range(200):
        draws.step()
    assert hand.states == {"s1": "closed", "s2": "closed", "s3": "closed"}
    closes = [s for s, p in hand.sent if p == "close"]
    assert sorted(closes) == ["s1", "s2", "s3"]  # once each, never again
    assert hand.refused["close"] == 0
    assert draws.errors == ["all 3 sessions used: no more draws"]
    sent = len(hand.sent)
    draws.step()
    assert len(hand.sent) == sent  # stopped: no command after the last session
    assert all(hand.picks[s] == PICKS_PER_SESSION for s in ("s1", "s2", "s3"))


def test_a_close_whose_answer_was_lost_is_not_sent_again() -> None:
    hand = FakeHand()
    hand.lose_close_answer = True  # applied, answer cut off: the state says closed
    draws = Draws(hand, 7, sessions=2)  # type: ignore[arg-type]
    for _ in range(100):
        draws.step()
    assert [s for s, p in hand.sent if p == "close"] == ["s1", "s2"]
    assert hand.states == {"s1": "closed", "s2": "closed"}


def test_a_full_run_has_sessions_for_every_fault() -> None:
    assert sessions_for(200) >= 2 * 200 and sessions_for(7) >= 2 * 7

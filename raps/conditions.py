"""The conditions a calendar occurrence may hang on, answered from the daemon's state.

000 rule 135: "On 20 December 2025, if the safe has not been cracked (throughout the
duration of the promotion), we will have a 21h30 draw".  A calendar names the condition
(`conditional = [{ at = "2025-12-20 21:30", condition = "safe not cracked" }]`); the
daemon answers it here: True (it holds: the occurrence takes place), False (it does
not: its draw is refused at open), None (nothing here knows it: staff decide).

The digit safe's state is the stage games': `safe_cracked` is a callable saying whether
the safe has been cracked in the promotion, which the daemon fills with the games'
ledger (`raps.games.desk.GameDesk.safe_cracked`).  Unfilled it answers "not cracked",
which is what the ledger says while no safe game has run.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

# the ways a calendar says it (spaces, '_' and '-' alike, any case)
SAFE_NOT_CRACKED = frozenset({"safe not cracked", "safe has not been cracked"})


def _words(condition: str) -> str:
    return re.sub(r"[\s_-]+", " ", condition.strip().lower()).removeprefix("the ").strip()


def _never_cracked() -> bool:
    return False


@dataclass
class Conditions:
    """`conditions(name)` -> True, False or None (unknown: people decide)."""

    safe_cracked: Callable[[], bool] = field(default=_never_cracked)

    def __call__(self, condition: str) -> bool | None:
        if _words(condition) in SAFE_NOT_CRACKED:
            return not self.safe_cracked()
        return None

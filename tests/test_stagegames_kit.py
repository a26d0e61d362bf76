"""Shared helpers for the stage-game tests (no tests here): commands with fresh ids and
a moving time, deterministic seeds, and the Gold Reef City prize tables (seed 000)."""

from __future__ import annotations

import hashlib
import itertools
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from selector.records import Actor
from selector.session import Command
from selector.stagegames.podium import BONUS, PodiumPrize

TZ = ZoneInfo("Africa/Johannesburg")
HOST = Actor("thandi", "stage_host")
SAT = date(2025, 10, 4)
_count = itertools.count(1)

# Thursday Queen draws: R40,000 across five podiums (rule 56; the split is made up)
THURSDAY_PODIUMS = [PodiumPrize(a) for a in (1_500_000, 1_000_000, 700_000, 500_000, 300_000)]
# 15:00: four cash podiums, two that unlock the bonus (rule 104; amounts made up)
PODIUMS_1500 = [PodiumPrize(a) for a in (500_000, 400_000, 300_000, 200_000)] + [
    PodiumPrize(0, BONUS),
    PodiumPrize(0, BONUS),
]
# 21:00: R5,000 to R10,000 each (rule 124)
PODIUMS_2100 = [PodiumPrize(a) for a in (1_000_000, 800_000, 700_000, 600_000, 500_000)]
# 19:00: 25 reveals (rule 116; amounts made up), paddles of 2, 3 or 4 (rule 113)
REVEALS = [100_000 * k for k in (1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 5, 5, 5, 5, 7, 7, 7,
                                 10, 10, 15, 20)]  # fmt: skip
PADDLES = [2, 2, 3, 3, 4]


def cmd(at: datetime | None = None) -> Command:
    n = next(_count)
    when = at or datetime(2025, 10, 4, 15, 0, tzinfo=TZ) + timedelta(seconds=n)
    return Command(f"cmd-{n}", HOST, when)


def seed(label: str) -> bytes:
    """A reproducible 32-byte seed (tests only; the daemon's come from secrets)."""
    return hashlib.sha256(f"raps-stagegames-tests/{label}".encode()).digest()


def cards(n: int, prefix: str = "600") -> list[str]:
    return [f"{prefix}{i:04d}" for i in range(1, n + 1)]

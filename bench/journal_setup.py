"""The journal benchmark's fixed set-up: its constants and targets, the daemon config,
the floor's players and events (10,000 eligible, one leaving and one arriving per
step), the clock the service is given, and logging as in production."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from raps.logs import configure
from selector.events import (
    AnyFloorEvent,
    CardInserted,
    CardRemoved,
    GamePlayed,
    PlayerUpserted,
    Tier,
)
from selector.records import Actor

PROMO = "raps"
PICK_SESSION = "bench-picks"
LIVE_SESSION = "live-1"
ELIGIBLE = 10_000
# Saturday 25 April 2026, 09:00 SAST: a RAPS session day
START = datetime(2026, 4, 25, 7, 0, tzinfo=UTC)
# the synthetic history is drawn on the day before, from 00:05 SAST, one session a second
HISTORY_START = datetime(2026, 4, 23, 22, 5, tzinfo=UTC)
HISTORY_PLAYERS = 12
HISTORY_PICKS = 6  # per session: open, 6 x (draw, verify, award), close = 20 records
RECORDS_PER_HISTORY_SESSION = 2 + 3 * HISTORY_PICKS
LIVE_PICKS = 6  # the live session: open, 6 draws, 3 verified and awarded = 13 records
LIVE_RECORDS = 1 + LIVE_PICKS + 2 * 3
STAFF = Actor("bench", "marketing")
WARMUP = 5
STEP_SECONDS = 0.02  # the bench clock moves this much before every pick
ROUNDS = 5  # rounds the p99 ratio is also given for (its spread)
FLUSH_EVERY = 25  # floor events are flushed (not timed) every this many steps

TARGET_RATIO = 1.5
TARGET_RESTART_S = 2.0
RESTART_RUNS = 5  # 2 with --quick
PROCESS_RUNS = 2  # 1 with --quick
QUICK_PICKS = 100  # --quick: alternated picks and bare commits per database
QUICK_ENTRIES = 5_000  # --quick: journal entries the restart reads (1M in full runs)


class FakeClock:
    """The service's clock, moved by the benchmark."""

    def __init__(self, at: datetime) -> None:
        self.now = at

    def __call__(self) -> datetime:
        return self.now

    def tick(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


# ------------------------------------------------------------------------ config


def config_text(
    url: str,
    key_file: Path,
    machines: int,
    sessions: Sequence[tuple[str, bool]],
) -> str:
    """A complete daemon config; sessions are (id, exclude_voided)."""
    parts = [
        f"""
[site]
id = "bench"
name = "RAPS journal benchmark"
timezone = "Africa/Johannesburg"

[storage]
url = "{url}"
snapshot_interval_seconds = 3600
event_flush_seconds = 0.5

[credentials]
seed_key_file = "{key_file}"

[http]
host = "127.0.0.1"
port = 0

[floor]
idle_seconds = 120

# the layout of {machines:,} slot machines; the simulator itself is all but idle
[floor.simulate]
machines = {machines}
tables = 0
players = 1
events_per_second = 0.001

[[promotions]]
id = "{PROMO}"
name = "Bonus jackpot session (RAPS), benchmark"
threshold_points = 50
window = {{ start = "00:00", end = "24:00" }}
pool_kinds = ["slots"]

[logging]
format = "json"
level = "info"
"""
    ]
    for sid, exclude_voided in sessions:
        parts.append(
            f"""
[[sessions]]
id = "{sid}"
promotion = "{PROMO}"
starts = "2026-04-25T09:00:00+02:00"
quotas = {{ slots = {HISTORY_PICKS}, tables = 0 }}
exclude_voided = {"true" if exclude_voided else "false"}
# many sessions at one time: rehearsals (live ones each need a window of their own);
# a pick costs the same
rehearsal = true
"""
        )
    return "".join(parts)


def quiet_logging() -> None:
    """Production logging (JSON lines at info) rendered to /dev/null: the cost stays in."""
    real = sys.stderr
    sink = open(os.devnull, "w")  # noqa: SIM115 - kept open for the whole run
    sys.stderr = sink
    try:
        configure("json", "info", "bench")
    finally:
        sys.stderr = real


# ------------------------------------------------------------------ floor events


def card_of(i: int) -> str:
    return f"9{i:09d}"


def spare_card(j: int) -> str:
    return f"95{j:08d}"


def machine_of(i: int) -> str:
    return f"M{i + 1:05d}"


def floor_events(n: int, at: datetime, prefix: str) -> list[AnyFloorEvent]:
    """n players, each carded in at machine i and with one R500 game: 50 points, eligible."""
    out: list[AnyFloorEvent] = []
    for i in range(n):
        card, machine = card_of(i), machine_of(i)
        out.append(
            PlayerUpserted(
                event_id=f"{prefix}p{i}", source="cms", ts=at, card=card, tier=Tier.JACK,
                display_name=f"Player {i}", age_verified=True,
            )
        )  # fmt: skip
        out.append(CardInserted(event_id=f"{prefix}c{i}", source="bench", ts=at, machine=machine,
                                card=card))  # fmt: skip
        out.append(GamePlayed(event_id=f"{prefix}g{i}", source="bench", ts=at, machine=machine,
                              wager=50_000))  # fmt: skip
    return out


class Rotation:
    """One player leaves, a new one arrives and qualifies at the same machine.

    The eligible pool stays at exactly n players but its content (and so its digest)
    changes at every step, so every pick's pool snapshot is a new row to write.
    """

    def __init__(self, n: int) -> None:
        self.n = n
        self.occupant = [card_of(i) for i in range(n)]
        self.j = 0

    def events(self, at: datetime) -> list[AnyFloorEvent]:
        j = self.j
        self.j += 1
        slot = (j * 7919) % self.n
        machine, old, new = machine_of(slot), self.occupant[slot], spare_card(j)
        self.occupant[slot] = new
        return [
            CardRemoved(event_id=f"r{j}o", source="bench", ts=at, machine=machine, card=old),
            PlayerUpserted(
                event_id=f"r{j}p",
                source="cms",
                ts=at,
                card=new,
                tier=Tier.QUEEN,
                display_name=f"Spare {j}",
                age_verified=True,
            ),
            CardInserted(event_id=f"r{j}c", source="bench", ts=at, machine=machine, card=new),
            GamePlayed(event_id=f"r{j}g", source="bench", ts=at, machine=machine, wager=50_000),
        ]

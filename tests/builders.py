"""Small builders shared by the core tests: a tiny floor and an event factory with a clock."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from selector.events import (
    AnyFloorEvent,
    CardInserted,
    CardRemoved,
    Exclusion,
    GamePlayed,
    MachineStatus,
    MachineStatusChanged,
    PlayerUpserted,
    PointsEarned,
    TableRatingClosed,
    TableRatingOpened,
    TableRatingUpdated,
    Tier,
)
from selector.floor import Floor
from selector.layout import FloorLayout, Machine, Table
from selector.promotion import EarnRules, Promotion
from selector.records import Actor
from selector.session import Command

SAST = ZoneInfo("Africa/Johannesburg")
# Saturday 25 April 2026, a RAPS session day of the seed; 12:00 local time
NOON = datetime(2026, 4, 25, 12, 0, tzinfo=SAST)
MARKETING = Actor("ann", "marketing")


def local(hour: int, minute: int = 0, second: int = 0, day: int = 25) -> datetime:
    return datetime(2026, 4, day, hour, minute, second, tzinfo=SAST)


def small_layout(machines: int = 30, tables: int = 4, seats: int = 7) -> FloorLayout:
    """Machines M01.. in 'Main Floor' (the last 5 in 'Salon Prive'), tables T1.. in 'Pit'."""
    ms = [
        Machine(
            f"M{i:02d}",
            "Salon Prive" if i > machines - 5 else "Main Floor",
            f"B{(i - 1) // 10 + 1}",
            str(i),
        )
        for i in range(1, machines + 1)
    ]
    ts = [Table(f"T{i}", "Pit", "blackjack", seats) for i in range(1, tables + 1)]
    return FloorLayout(ms, ts)


class Events:
    """Builds events with unique ids; `at` defaults to the builder's clock."""

    def __init__(self, start: datetime = NOON) -> None:
        self.now = start
        self._ids = itertools.count(1)

    def tick(self, seconds: float) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now

    def _head(self, at: datetime | None, source: str) -> dict[str, Any]:
        return {"event_id": f"e{next(self._ids)}", "source": source, "ts": at or self.now}

    def player(
        self,
        card: str,
        tier: Tier = Tier.JACK,
        name: str = "Thandi M.",
        age_verified: bool = True,
        exclusions: frozenset[Exclusion] = frozenset(),
        block_reason: str | None = None,
        at: datetime | None = None,
        photo_url: str | None = None,
    ) -> PlayerUpserted:
        return PlayerUpserted(
            **self._head(at, "cms"), card=card, tier=tier, display_name=name,
            age_verified=age_verified, exclusions=exclusions, block_reason=block_reason,
            photo_url=photo_url,
        )  # fmt: skip

    def card_in(self, machine: str, card: str, at: datetime | None = None) -> CardInserted:
        return CardInserted(**self._head(at, "smib"), machine=machine, card=card)

    def card_out(self, machine: str, card: str, at: datetime | None = None) -> CardRemoved:
        return CardRemoved(**self._head(at, "smib"), machine=machine, card=card)

    def game(
        self,
        machine: str,
        wager: int = 1000,
        at: datetime | None = None,
        span_start: datetime | None = None,
    ) -> GamePlayed:
        return GamePlayed(
            **self._head(at, "sas"), machine=machine, wager=wager, span_start=span_start
        )

    def rating_open(
        self, table: str, seat: int, card: str, bet: int = 10_000, at: datetime | None = None
    ) -> TableRatingOpened:
        return TableRatingOpened(
            **self._head(at, "pit"), table=table, seat=seat, card=card, average_bet=bet
        )

    def rating_update(
        self, table: str, seat: int, card: str, bet: int, minutes: float,
        at: datetime | None = None,
    ) -> TableRatingUpdated:  # fmt: skip
        return TableRatingUpdated(
            **self._head(at, "pit"), table=table, seat=seat, card=card, average_bet=bet,
            minutes=minutes,
        )  # fmt: skip

    def rating_close(
        self, table: str, seat: int, card: str, bet: int, minutes: float,
        at: datetime | None = None,
    ) -> TableRatingClosed:  # fmt: skip
        return TableRatingClosed(
            **self._head(at, "pit"), table=table, seat=seat, card=card, average_bet=bet,
            minutes=minutes,
        )  # fmt: skip

    def machine_status(
        self, machine: str, status: MachineStatus, at: datetime | None = None
    ) -> MachineStatusChanged:
        return MachineStatusChanged(**self._head(at, "sas"), machine=machine, status=status)

    def points(
        self,
        card: str,
        points: float,
        at: datetime | None = None,
        span_start: datetime | None = None,
    ) -> PointsEarned:
        return PointsEarned(
            **self._head(at, "cms"), card=card, points=points, span_start=span_start
        )


def seated_slot_player(
    floor: Floor, ev: Events, card: str, machine: str, points: int = 60, **player: Any
) -> None:
    """Directory entry, card in, and enough R10 games for `points` points (default rules)."""
    floor.apply(ev.player(card, **player))
    floor.apply(ev.card_in(machine, card))
    for _ in range(points):
        floor.apply(ev.game(machine, wager=1000))


def seated_table_player(
    floor: Floor, ev: Events, card: str, table: str, seat: int, points: int = 60, **player: Any
) -> None:
    """Directory entry and an open rating worth `points` points (R100 bet x minutes)."""
    floor.apply(ev.player(card, **player))
    floor.apply(ev.rating_open(table, seat, card))
    floor.apply(ev.rating_update(table, seat, card, bet=10_000, minutes=points))


def raps_floor(**promotion: Any) -> Floor:
    """A small floor with the seed's RAPS promotion (50 points, 08:00-19:00 SAST)."""
    return Floor(small_layout(), [Promotion("raps", **promotion)], EarnRules())


def command(cid: str, at: datetime, actor: Actor = MARKETING) -> Command:
    return Command(cid, actor, at)


__all__ = [
    "MARKETING",
    "NOON",
    "SAST",
    "AnyFloorEvent",
    "Events",
    "command",
    "local",
    "raps_floor",
    "seated_slot_player",
    "seated_table_player",
    "small_layout",
]

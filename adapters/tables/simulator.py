"""Pit terminals publishing table ratings over MQTT (for the demo and the tests).

Each seat of each table goes through rating sessions: table_rating_opened when a
carded player sits down, table_rating_updated every few minutes with the cumulative
average bet and minutes, table_rating_closed when they leave; a seat holds one rating
at a time and a card sits at one seat at a time.  Payloads go to
`{prefix}/{site}/tables/{table}/events`, built from FloorEvents through adapters.wire.codec.

`random.Random` with a seed: this simulates play; nothing here is used for a draw.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import aiomqtt

from adapters.mqtt.card_simulator import Message, publish_all, to_message
from adapters.mqtt.topics import Topics
from selector.events import TableRatingClosed, TableRatingOpened, TableRatingUpdated
from selector.layout import Table

BETS = (5_000, 10_000, 20_000, 50_000, 100_000)  # minor units


@dataclass
class _Rating:
    card: str
    opened: datetime
    bet: int
    updates_left: int


@dataclass
class PitTerminals:
    """Rating sessions at the seats of `tables`, on a simulated clock."""

    topics: Topics
    tables: Sequence[Table]
    cards: Sequence[str]
    start: datetime
    seed: int = 1
    step: timedelta = timedelta(seconds=20)
    occupancy: float = 0.6
    source: str = "pit"
    now: datetime = field(init=False)
    _rng: random.Random = field(init=False, repr=False)
    _n: int = field(init=False, default=0)
    _seats: dict[tuple[str, int], _Rating] = field(init=False, repr=False)
    _free: list[tuple[str, int]] = field(init=False, repr=False)
    _idle: list[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.tables or not self.cards:
            raise ValueError("pit terminals need tables and player cards")
        self.now = self.start
        self._rng = random.Random(self.seed)  # noqa: S311 - simulation, not a draw
        self._seats = {}
        self._free = [(t.table, s) for t in self.tables for s in range(1, t.seats + 1)]
        self._idle = list(self.cards)

    def _id(self) -> str:
        self._n += 1
        return f"{self.source}-{self.seed}-{self._n}"

    def messages(self, count: int) -> Iterator[Message]:
        """The next `count` rating messages, the clock advancing by `step` each."""
        rng = self._rng
        total = len(self._free) + len(self._seats)
        for _ in range(count):
            self.now += self.step
            busy = len(self._seats) / total
            if self._free and self._idle and (not self._seats or busy < self.occupancy):
                yield self._open()
                continue
            seat = rng.choice(list(self._seats))
            rating = self._seats[seat]
            if rating.updates_left > 0:
                rating.updates_left -= 1
                yield self._figures(TableRatingUpdated, seat, rating)
            else:
                del self._seats[seat]
                self._free.append(seat)
                self._idle.append(rating.card)
                yield self._figures(TableRatingClosed, seat, rating)

    def _open(self) -> Message:
        rng = self._rng
        seat = self._free.pop(rng.randrange(len(self._free)))
        card = self._idle.pop(rng.randrange(len(self._idle)))
        rating = self._seats[seat] = _Rating(card, self.now, rng.choice(BETS), rng.randrange(6))
        ev = TableRatingOpened(
            event_id=self._id(),
            source=self.source,
            ts=self.now,
            table=seat[0],
            seat=seat[1],
            card=card,
            average_bet=rating.bet,
        )
        return to_message(self.topics, ev)

    def _figures(self, cls: type[Any], seat: tuple[str, int], rating: _Rating) -> Message:
        minutes = round((self.now - rating.opened).total_seconds() / 60.0, 2)
        ev = cls(
            event_id=self._id(),
            source=self.source,
            ts=self.now,
            table=seat[0],
            seat=seat[1],
            card=rating.card,
            average_bet=rating.bet,
            minutes=minutes,
        )
        return to_message(self.topics, ev)

    async def run(
        self,
        client: aiomqtt.Client,
        clock: Callable[[], datetime],
        events_per_second: float = 2.0,
        qos: int = 1,
    ) -> None:
        """Publish ratings paced by the wall clock until cancelled."""
        self.now = clock()
        self.step = timedelta(seconds=1.0 / events_per_second)
        while True:
            due = int((clock() - self.now) / self.step)
            if due > 0:
                await publish_all(client, self.messages(due), qos)
            await asyncio.sleep(0.1)

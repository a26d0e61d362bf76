"""A card-session simulator: the casino system's side of the MQTT floor feed.

It publishes what a CMS or SMIB card reader would: the player directory (one
player_upserted per player on `{prefix}/{site}/players`), card sessions at slot machines
(card_inserted, a few game_played, card_removed on `.../slots/{machine}/events`) and,
now and then, an exclusion change (a player becomes self-excluded).  Every payload is
built from a FloorEvent through adapters.wire.codec, so it is exactly the documented wire format.

For the demo and the tests.  It uses `random.Random` with a seed because it simulates
behaviour; nothing here is used for a draw.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import aiomqtt

from adapters.mqtt.topics import Topics
from adapters.mqtt.validate import event_payload
from selector.events import (
    AnyFloorEvent,
    CardInserted,
    CardRemoved,
    Exclusion,
    GamePlayed,
    PlayerUpserted,
    Tier,
)

Message = tuple[str, dict[str, Any]]
NAMES = ("Thandi", "Sipho", "Lerato", "Johan", "Anele", "Naledi", "Ayesha", "Kagiso", "Musa")


def encode(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, separators=(",", ":")).encode("utf-8")


def to_message(topics: Topics, event: AnyFloorEvent) -> Message:
    """A FloorEvent as (topic, payload) in the documented wire format."""
    payload = event_payload(event)
    return topics.for_event(payload["type"], payload), payload


async def publish_all(
    client: aiomqtt.Client,
    messages: Iterable[tuple[str, dict[str, Any] | bytes]],
    qos: int = 1,
    in_flight: int = 200,
) -> int:
    """Publish in order, `in_flight` at a time (QoS 1: each confirmed); returns the count."""
    pending: list[asyncio.Task[None]] = []
    sent = 0
    for topic, payload in messages:
        body = payload if isinstance(payload, bytes) else encode(payload)
        pending.append(asyncio.ensure_future(client.publish(topic, body, qos=qos)))
        sent += 1
        if len(pending) >= in_flight:
            await asyncio.gather(*pending)
            pending.clear()
    await asyncio.gather(*pending)
    return sent


@dataclass
class _Seat:
    card: str
    machine: str
    games_left: int


@dataclass
class CardSessions:
    """Card sessions at slot machines plus the player directory, on a simulated clock."""

    topics: Topics
    machines: Sequence[str]
    players: int
    start: datetime
    seed: int = 1
    step: timedelta = timedelta(seconds=2)
    with_games: bool = True
    exclusion_rate: float = 0.002  # share of steps that self-exclude someone
    source_prefix: str = "cms"
    now: datetime = field(init=False)
    _rng: random.Random = field(init=False, repr=False)
    _n: int = field(init=False, default=0)
    _idle: list[str] = field(init=False, repr=False)
    _busy: dict[str, _Seat] = field(init=False, repr=False)
    _free: list[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.players < 1 or not self.machines:
            raise ValueError("the simulator needs players and machines")
        self.now = self.start
        self._rng = random.Random(self.seed)  # noqa: S311 - simulation, not a draw
        self._idle = [self.card(i) for i in range(self.players)]
        self._busy = {}
        self._free = list(self.machines)

    @staticmethod
    def card(i: int) -> str:
        return f"{7_000_000_000 + i:010d}"

    def _id(self) -> str:
        self._n += 1
        return f"{self.source_prefix}-{self.seed}-{self._n}"

    def directory(self) -> list[Message]:
        """One directory entry per player (tiers spread, all age-verified)."""
        tiers = list(Tier)
        out = []
        for i in range(self.players):
            ev = PlayerUpserted(
                event_id=self._id(),
                source=self.source_prefix,
                ts=self.now,
                card=self.card(i),
                tier=tiers[i % len(tiers)],
                display_name=f"{NAMES[i % len(NAMES)]} {chr(65 + i % 26)}.",
                age_verified=True,
            )
            out.append(to_message(self.topics, ev))
        return out

    def messages(self, count: int) -> Iterator[Message]:
        """The next `count` messages, the clock advancing by `step` each."""
        rng = self._rng
        for _ in range(count):
            self.now += self.step
            r = rng.random()
            if r < self.exclusion_rate:
                yield self._exclude()
            elif self._free and self._idle and (not self._busy or r < 0.3):
                yield self._card_in()
            elif self._busy:
                machine = rng.choice(list(self._busy))
                seat = self._busy[machine]
                if self.with_games and seat.games_left > 0:
                    seat.games_left -= 1
                    yield self._event(
                        GamePlayed, machine=machine, wager=rng.choice((100, 500, 1000, 2500))
                    )
                else:
                    yield self._card_out(machine)
            else:
                yield self._exclude()

    def _event(self, cls: type[Any], **fields: Any) -> Message:
        ev = cls(event_id=self._id(), source=self.source_prefix, ts=self.now, **fields)
        return to_message(self.topics, ev)

    def _card_in(self) -> Message:
        card = self._idle.pop(self._rng.randrange(len(self._idle)))
        machine = self._free.pop(self._rng.randrange(len(self._free)))
        self._busy[machine] = _Seat(card, machine, self._rng.randrange(3, 30))
        return self._event(CardInserted, machine=machine, card=card)

    def _card_out(self, machine: str) -> Message:
        seat = self._busy.pop(machine)
        self._free.append(machine)
        self._idle.append(seat.card)
        return self._event(CardRemoved, machine=machine, card=seat.card)

    def _exclude(self) -> Message:
        i = self._rng.randrange(self.players)
        ev = PlayerUpserted(
            event_id=self._id(),
            source=self.source_prefix,
            ts=self.now,
            card=self.card(i),
            tier=list(Tier)[i % 5],
            display_name=f"{NAMES[i % len(NAMES)]} {chr(65 + i % 26)}.",
            age_verified=True,
            exclusions=frozenset({Exclusion.SELF_EXCLUDED}),
        )
        return to_message(self.topics, ev)

    async def run(
        self,
        client: aiomqtt.Client,
        clock: Callable[[], datetime],
        events_per_second: float = 5.0,
        qos: int = 1,
    ) -> None:
        """Publish the directory, then sessions paced by the wall clock, until cancelled."""
        self.now = clock()
        await publish_all(client, self.directory(), qos)
        self.step = timedelta(seconds=1.0 / events_per_second)
        while True:
            due = int((clock() - self.now) / self.step)
            if due > 0:
                await publish_all(client, self.messages(due), qos)
            await asyncio.sleep(0.1)

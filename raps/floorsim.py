"""A simulated casino floor: layout, player directory and a stream of FloorEvents.

Used by `raps demo`, the tests and the benchmarks.  It uses `random.Random` with a
seed because it *simulates play*; no draw ever takes randomness from here.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeVar

from selector.events import (
    AnyFloorEvent,
    CardInserted,
    CardRemoved,
    Exclusion,
    GamePlayed,
    PlayerUpserted,
    TableRatingClosed,
    TableRatingOpened,
    TableRatingUpdated,
    Tier,
)
from selector.layout import FloorLayout, Machine, Table

SLOT_AREAS = ("Main Floor", "Main Floor", "Main Floor", "High Limit", "Smoking Terrace")
TABLE_AREAS = ("Pit 1", "Pit 2", "Pit 2", "Salon Prive")
PRIVATE_SALON = "Salon Prive"
FIRST_NAMES = (
    "Thandi", "Sipho", "Lerato", "Johan", "Anele", "Pieter", "Naledi", "Ayesha", "Kagiso",
    "Zanele", "Riaan", "Busi", "Mandla", "Priya", "Themba", "Karabo", "Elna", "Musa",
)  # fmt: skip
# one surname per initial: a player is "Johan F." on the screens and "Johan Ferreira" at
# the handheld's ID check (the same random draws as when the directory held initials)
SURNAMES = (
    "Abrahams", "Botha", "Cele", "Dlamini", "Erasmus", "Ferreira", "Govender", "Hendricks",
    "Isaacs", "Jacobs", "Khumalo", "Louw", "Molefe", "Naidoo", "Oosthuizen", "Pillay",
    "Qwabe", "Rossouw", "Sithole", "Tshabalala", "Uys", "Venter", "Williams", "Xaba",
    "Yende", "Zulu",
)  # fmt: skip
BETS = (20, 50, 100, 100, 200, 250, 500, 1000, 2500)  # minor units per game
TABLE_BETS = (5_000, 10_000, 20_000, 50_000, 100_000)
T = TypeVar("T")


def _take(items: list[T], i: int) -> T:
    """Remove items[i] in O(1) by moving the last item into its place."""
    item = items[i]
    items[i] = items[-1]
    items.pop()
    return item


def demo_layout(machines: int = 5000, tables: int = 300, seats: int = 7) -> FloorLayout:
    """A floor of `machines` slots in banks of 10 and `tables` tables, spread over areas."""
    ms = []
    for i in range(machines):
        area = SLOT_AREAS[(i // 50) % len(SLOT_AREAS)]
        ms.append(Machine(f"M{i + 1:05d}", area, f"{area[0]}{i // 10 + 1:03d}", f"{i + 1}"))
    ts = [
        Table(f"T{i + 1:03d}", TABLE_AREAS[i % len(TABLE_AREAS)], "blackjack", seats)
        for i in range(tables)
    ]
    return FloorLayout(ms, ts)


@dataclass(frozen=True, slots=True)
class SimPlayer:
    card: str
    tier: Tier
    display_name: str
    age_verified: bool
    exclusions: frozenset[Exclusion]
    in_directory: bool
    photo_url: str | None = None


class FloorSimulator:
    """Generates plausible floor traffic: card sessions, games and table ratings."""

    def __init__(
        self,
        layout: FloorLayout,
        players: int,
        start: datetime,
        seed: int = 1,
        events_per_second: float = 2000.0,
        source: str = "sim",
        occupancy: float = 0.6,
        directory_seed: int | None = None,
        photo_base_url: str | None = None,
    ) -> None:
        """`directory_seed` fixes who the players are (tier, name, exclusions) apart from
        how they play; without it the directory follows `seed`.  With `photo_base_url`
        every player has a photo, `<photo_base_url><card>.png`."""
        if players < 1:
            raise ValueError("the simulator needs at least one player")
        self.layout = layout
        self.rng = random.Random(seed)
        self.now = start
        self.step = timedelta(seconds=1.0 / events_per_second)
        self.source = source
        self.occupancy = occupancy
        self._n = 0
        who = self.rng if directory_seed is None else random.Random(directory_seed)
        self.players = [self._make_player(i, who, photo_base_url) for i in range(players)]
        self._idle = list(range(players))  # indexes of players not on the floor
        self.rng.shuffle(self._idle)
        self._free_machines = list(layout.machines)
        self._busy_machines: list[str] = []
        self._machine_player: dict[str, int] = {}
        self._free_seats = [
            (t.table, s) for t in layout.tables.values() for s in range(1, t.seats + 1)
        ]
        self._busy_seats: list[tuple[str, int]] = []
        self._seat_state: dict[tuple[str, int], tuple[int, int, float]] = {}

    @staticmethod
    def _make_player(i: int, rng: random.Random, photos: str | None = None) -> SimPlayer:
        r = rng.random()
        tiers = (Tier.TEN, Tier.JACK, Tier.QUEEN, Tier.KING, Tier.ACE)
        tier = tiers[min(4, int(rng.expovariate(1.2)))]
        exclusions: frozenset[Exclusion] = frozenset()
        if r < 0.01:
            exclusions = frozenset({Exclusion.SELF_EXCLUDED})
        elif r < 0.013:
            exclusions = frozenset({Exclusion.REFUSAL_OF_ENTRY})
        elif r < 0.018:
            exclusions = frozenset({Exclusion.STAFF_OR_ASSOCIATE})
        name = f"{rng.choice(FIRST_NAMES)} {SURNAMES[rng.randrange(26)]}"
        card = f"{6_000_000_000 + i * 7919 % 1_000_000_000:010d}"
        return SimPlayer(
            card=card,
            tier=tier,
            display_name=name,
            age_verified=rng.random() > 0.004,
            exclusions=exclusions,
            in_directory=rng.random() > 0.002,
            photo_url=None if photos is None else f"{photos}{card}.png",
        )

    def _id(self) -> str:
        self._n += 1
        return f"{self.source}-{self._n}"

    def directory(self) -> list[PlayerUpserted]:
        """Directory entries of every simulated player the casino system knows."""
        return [
            PlayerUpserted(
                event_id=self._id(),
                source="cms",
                ts=self.now,
                card=p.card,
                tier=p.tier,
                display_name=p.display_name,
                age_verified=p.age_verified,
                exclusions=p.exclusions,
                photo_url=p.photo_url,
            )
            for p in self.players
            if p.in_directory
        ]

    def events_until(self, until: datetime) -> list[AnyFloorEvent]:
        """Every event due up to `until`: how a real-time source catches up with the clock."""
        n = int((until - self.now) / self.step)
        return list(self.events(n)) if n > 0 else []

    def events(self, count: int) -> Iterator[AnyFloorEvent]:
        """The next `count` events, time advancing by 1/events_per_second each."""
        rng = self.rng
        for _ in range(count):
            self.now += self.step
            r = rng.random()
            if r < 0.90 and self._busy_machines:
                yield self._game()
            elif r < 0.96:
                # card sessions start and end so that about `occupancy` of machines are busy
                busy = len(self._busy_machines) / len(self.layout.machines)
                if busy < self.occupancy and self._idle:
                    yield self._card_in()
                elif self._busy_machines:
                    yield self._card_out()
                else:
                    yield self._game_uncarded()
            elif r < 0.97:
                seats = len(self._busy_seats) / max(
                    1, len(self._seat_state) + len(self._free_seats)
                )
                if seats < self.occupancy and self._idle and self._free_seats:
                    yield self._rating_open()
                elif self._busy_seats:
                    yield self._rating_update(close=True)
                else:
                    yield self._game_uncarded()
            elif self._busy_seats:
                yield self._rating_update(close=False)
            else:
                yield self._game_uncarded()

    def _return_idle(self, pi: int) -> None:
        """Put a player back among the idle at a random place, in O(1)."""
        idle = self._idle
        idle.append(pi)
        j = self.rng.randrange(len(idle))
        idle[j], idle[-1] = idle[-1], idle[j]

    def _game(self) -> GamePlayed:
        machine = self.rng.choice(self._busy_machines)
        return GamePlayed(
            event_id=self._id(),
            source=self.source,
            ts=self.now,
            machine=machine,
            wager=self.rng.choice(BETS),
            win=0 if self.rng.random() < 0.7 else 100,
        )

    def _game_uncarded(self) -> GamePlayed:
        machine = self.rng.choice(self._free_machines or self._busy_machines)
        return GamePlayed(
            event_id=self._id(), source=self.source, ts=self.now, machine=machine, wager=100
        )

    def _card_in(self) -> CardInserted:
        pi = self._idle.pop()
        mi = self.rng.randrange(len(self._free_machines))
        machine = _take(self._free_machines, mi)
        self._busy_machines.append(machine)
        self._machine_player[machine] = pi
        return CardInserted(
            event_id=self._id(),
            source=self.source,
            ts=self.now,
            machine=machine,
            card=self.players[pi].card,
        )

    def _card_out(self) -> CardRemoved:
        mi = self.rng.randrange(len(self._busy_machines))
        machine = _take(self._busy_machines, mi)
        self._free_machines.append(machine)
        pi = self._machine_player.pop(machine)
        self._return_idle(pi)
        return CardRemoved(
            event_id=self._id(),
            source=self.source,
            ts=self.now,
            machine=machine,
            card=self.players[pi].card,
        )

    def _rating_open(self) -> TableRatingOpened:
        pi = self._idle.pop()
        si = self.rng.randrange(len(self._free_seats))
        seat = _take(self._free_seats, si)
        self._busy_seats.append(seat)
        bet = self.rng.choice(TABLE_BETS)
        self._seat_state[seat] = (pi, bet, self.now.timestamp())
        return TableRatingOpened(
            event_id=self._id(),
            source="pit",
            ts=self.now,
            table=seat[0],
            seat=seat[1],
            card=self.players[pi].card,
            average_bet=bet,
        )

    def _rating_update(self, close: bool) -> TableRatingUpdated | TableRatingClosed:
        si = self.rng.randrange(len(self._busy_seats))
        seat = self._busy_seats[si]
        pi, bet, opened = self._seat_state[seat]
        minutes = max(0.0, (self.now.timestamp() - opened) / 60.0)
        card = self.players[pi].card
        if not close:
            return TableRatingUpdated(
                event_id=self._id(),
                source="pit",
                ts=self.now,
                table=seat[0],
                seat=seat[1],
                card=card,
                average_bet=bet,
                minutes=minutes,
            )
        _take(self._busy_seats, si)
        self._free_seats.append(seat)
        del self._seat_state[seat]
        self._return_idle(pi)
        return TableRatingClosed(
            event_id=self._id(),
            source="pit",
            ts=self.now,
            table=seat[0],
            seat=seat[1],
            card=card,
            average_bet=bet,
            minutes=minutes,
        )

"""Car draws: qualifying spots, the 21:00 finalists and the car (000 rules 66-72, 87).

Rules, as built:
- car draw days 25 Oct, 29 Nov and 27 Dec 2025, draws at 15:00, 19:00 and 21:00 (rules
  67-68; `CAR_DAYS`, `CAR_TIMES`; the schedule itself is config);
- 6 finalists per car draw (rule 69); spots are won at the cash draws of the prior
  Saturdays and at 15:00 and 19:00 on the day; the 21:00 finalist draw draws
  `finalists_needed()` = 6 - spots already held (rule 69), and should bar the spot
  holders (`holders()`) so that it fills them;
- a patron holds at most one spot per car draw: a further spot they win is replaced by
  `extra_spot_cash` (R5,000) cash (rule 70); a seventh spot is refused;
- `CarFinal`: the car's winner among the finalists is uniform, fixed at open from the
  seed (purpose "car-winner"), revealed on stage; the winner then chooses one of the
  vehicles on offer (~R380,000); a cash buy-back agreed with the dealership is recorded
  as agreed, never computed (rule 87).

Records: `car.qualified` {spot, card, source, position}, `car.extra_spot` {card, source,
position, amount} in the car draw's stream `car:<id>`; `car.won` and `car.vehicle` in
the final's game stream.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import date
from typing import Any

from selector.records import Record
from selector.session import Command, CommandConflict
from selector.stagegames.derive import below
from selector.stagegames.game import (
    Award,
    GameState,
    PrizeKind,
    StageError,
    StageGame,
    amount,
    card,
    cards_in_order,
)

QUALIFIED = "car.qualified"
EXTRA_SPOT = "car.extra_spot"
WON = "car.won"
VEHICLE = "car.vehicle"
FINALISTS = 6
CAR_DAYS = (date(2025, 10, 25), date(2025, 11, 29), date(2025, 12, 27))
CAR_TIMES = ("15:00", "19:00", "21:00")


class CarQualifiers:
    """The spots of one car draw, across the Saturdays that feed it."""

    def __init__(
        self, car_draw_id: str, finalists: int = FINALISTS, extra_spot_cash: int = 500_000
    ) -> None:
        self.car_draw_id = car_draw_id
        self.stream = f"car:{car_draw_id}"
        self.finalists = finalists
        self.extra_spot_cash = amount("extra spot cash", extra_spot_cash)
        self.spots: list[tuple[str, str]] = []  # (card, source draw), in the order won
        self.records: list[Record] = []
        self._done: dict[str, tuple[tuple[Any, ...], Award]] = {}

    def holders(self) -> list[str]:
        return [c for c, _ in self.spots]

    def finalists_needed(self) -> int:
        """How many the 21:00 finalist draw draws (rule 69)."""
        return self.finalists - len(self.spots)

    def qualify(self, cmd: Command, who: str, source: str, position: int) -> Award:
        """A draw's winner at `position` of draw `source` won a spot: a spot, or R5,000."""
        fingerprint = (who, source, position)
        prev = self._done.get(cmd.command_id)
        if prev is not None:
            if prev[0] != fingerprint:
                raise CommandConflict(f"command id {cmd.command_id!r} was used for another command")
            return prev[1]
        card(who)
        ref = f"{self.stream}:{source}#{position}"
        if who in self.holders():
            award = Award(source, position, who, self.extra_spot_cash, PrizeKind.CASH, ref)
            data = {"card": who, "source": source, "position": position,
                    "amount": self.extra_spot_cash}  # fmt: skip
            self.records.append(Record(EXTRA_SPOT, self.stream, cmd.at, cmd.actor, data))
        else:
            if self.finalists_needed() < 1:
                raise StageError(f"all {self.finalists} finalist spots are taken")
            self.spots.append((who, source))
            award = Award(source, position, who, 0, PrizeKind.CAR_SPOT, ref)
            data = {"spot": len(self.spots), "card": who, "source": source, "position": position}
            self.records.append(Record(QUALIFIED, self.stream, cmd.at, cmd.actor, data))
        self._done[cmd.command_id] = (fingerprint, award)
        return award

    @classmethod
    def replay(
        cls, car_draw_id: str, records: Iterable[Record], finalists: int = FINALISTS,
        extra_spot_cash: int = 500_000,
    ) -> CarQualifiers:  # fmt: skip
        """Rebuild from the stream; refuses a record the rules could not have made."""
        out = cls(car_draw_id, finalists, extra_spot_cash)
        for i, rec in enumerate(records):
            d = rec.data
            out.qualify(Command(f"replay:{i}", rec.actor, rec.at), d["card"], d["source"],
                        d["position"])  # fmt: skip
            if out.records[-1].to_dict() != rec.to_dict():
                raise StageError(f"record {i} of {out.stream} does not follow the rules")
        return out


class CarFinal(StageGame):
    """The car draw's final at 21:00: one of the finalists wins and picks a vehicle."""

    kind = "car"

    def __init__(
        self,
        game_id: str,
        draw_id: str,
        day: date,
        finalists: Sequence[str],
        vehicles: Sequence[str],
        car_value: int = 38_000_000,
    ) -> None:
        super().__init__(game_id, draw_id, day)
        self.finalists = cards_in_order(list(finalists))
        self.vehicles = tuple(vehicles)
        if not self.finalists or not self.vehicles:
            raise StageError("a car final needs finalists and vehicles on offer")
        self.car_value = amount("car value", car_value)
        self.winner: str | None = None
        self.vehicle: str | None = None
        self.buy_back: int | None = None
        self._index = 0

    @classmethod
    def from_config(cls, game_id: str, draw_id: str, day: date, c: Mapping[str, Any]) -> CarFinal:
        return cls(game_id, draw_id, day, c["finalists"], c["vehicles"], c["car_value"])

    def config(self) -> dict[str, Any]:
        return {
            "finalists": list(self.finalists),
            "vehicles": list(self.vehicles),
            "car_value": self.car_value,
        }

    def derive(self, seed: bytes) -> None:
        self._index = below(seed, self.game_id, "car-winner", len(self.finalists))

    def contents(self) -> dict[str, Any]:
        return {"winner_index": self._index}

    def reveal(self, cmd: Command) -> Record:
        def run() -> Record:
            self._require_open()
            if self.winner is not None:
                raise StageError("the car's winner is already revealed")
            self.winner = self.finalists[self._index]
            data = {"spot": self._index + 1, "card": self.winner}
            return self._emit(WON, cmd, data)

        return self._once(cmd, ("reveal",), run)

    def choose_vehicle(self, cmd: Command, vehicle: str, buy_back: int | None = None) -> Record:
        """The winner's vehicle; `buy_back` is the cash the dealership agreed, if taken."""

        def run() -> Record:
            self._require_open()
            if self.winner is None:
                raise StageError("reveal the car's winner first")
            if vehicle not in self.vehicles:
                raise StageError(f"{vehicle!r} is not a vehicle on offer")
            if buy_back is not None:
                amount("buy-back", buy_back)
            self.vehicle, self.buy_back = vehicle, buy_back
            self.state = GameState.FINISHED
            data = {"card": self.winner, "vehicle": vehicle, "buy_back": buy_back}
            return self._emit(VEHICLE, cmd, data)

        return self._once(cmd, ("vehicle", vehicle, buy_back), run)

    def awards(self) -> list[Award]:
        if self.winner is None or self.vehicle is None:
            return []
        ref = f"car:{self.game_id}:{self.vehicle}"
        spot = self._index + 1
        return [Award(self.draw_id, spot, self.winner, self.car_value, PrizeKind.CAR, ref)]

    def replay(self, rec: Record, cmd: Command) -> None:
        if rec.type == WON:
            self.reveal(cmd)
        elif rec.type == VEHICLE:
            self.choose_vehicle(cmd, rec.data["vehicle"], rec.data["buy_back"])
        else:
            raise StageError(f"a car final has no {rec.type!r} step")

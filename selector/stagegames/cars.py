"""Car draws: qualifying spots, the 21:00 finalists and the car (000 rules 66-72, 87).

Rules, as built:
- car draw days 25 Oct, 29 Nov and 27 Dec 2025, draws at 15:00, 19:00 and 21:00 (rules
  67-68); the days and draws are config (`config/seeds/gold-reef-city.toml`), checked
  against the seed by a test of the config, not here;
- 6 finalists per car draw (rule 69); spots are won at the cash draws of the prior
  Saturdays and at 15:00 and 19:00 on the day. Which cash-draw positions earn a spot is
  not in the seed: it is config, per draw and position (`sources`: draw id -> positions;
  a position not listed is refused); the 21:00 finalist draw draws
  `finalists_needed()` = 6 - spots already held (rule 69) and bars the spot holders
  (`holders()`): a holder is refused a spot from it (`final_draw`), never paid instead;
- a patron holds at most one spot per car draw: a further spot they win elsewhere is
  replaced by `extra_spot_cash` (R5,000) cash (rule 70); a seventh spot is refused;
- `CarFinal`: the car's winner among the finalists is uniform, fixed at open from the
  seed (purpose "car-winner"), revealed on stage; the winner then chooses one of the
  vehicles on offer (~R380,000); a cash buy-back agreed with the dealership is recorded
  as agreed, never computed (rule 87), in the game and in the car's prize record.

Records: `car.rules` {finalists, extra_spot_cash, final_draw, sources} (first, once),
`car.qualified` {spot, card, source, position}, `car.extra_spot` {card, source,
position, amount} in the car draw's stream `car-spots:<id>`, each with its command id;
`car.won` and `car.vehicle` in the final's game stream.
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

RULES = "car.rules"
QUALIFIED = "car.qualified"
EXTRA_SPOT = "car.extra_spot"
WON = "car.won"
VEHICLE = "car.vehicle"
FINALISTS = 6
SPOTS_PREFIX = "car-spots:"


def spots_stream(car_draw_id: str) -> str:
    return SPOTS_PREFIX + car_draw_id


class CarQualifiers:
    """The spots of one car draw, across the Saturdays that feed it."""

    def __init__(
        self,
        car_draw_id: str,
        finalists: int = FINALISTS,
        extra_spot_cash: int = 500_000,
        sources: Mapping[str, Sequence[int]] | None = None,
        final_draw: str | None = None,
    ) -> None:
        self.car_draw_id = car_draw_id
        self.stream = spots_stream(car_draw_id)
        if isinstance(finalists, bool) or not isinstance(finalists, int) or finalists < 1:
            raise StageError("a car draw has at least one finalist")
        self.finalists = finalists
        self.extra_spot_cash = amount("extra spot cash", extra_spot_cash)
        # draw id -> positions whose winner earns a spot (None: any draw, any position)
        self.sources = (
            None
            if sources is None
            else {d: tuple(sorted(set(ps))) for d, ps in sorted(sources.items())}
        )
        self.final_draw = final_draw
        self.spots: list[tuple[str, str]] = []  # (card, source draw), in the order won
        self.records: list[Record] = []
        self._done: dict[str, tuple[tuple[Any, ...], Award]] = {}

    def rules(self) -> dict[str, Any]:
        return {
            "finalists": self.finalists,
            "extra_spot_cash": self.extra_spot_cash,
            "final_draw": self.final_draw,
            "sources": None
            if self.sources is None
            else {d: list(ps) for d, ps in self.sources.items()},
        }

    def holders(self) -> list[str]:
        return [c for c, _ in self.spots]

    def finalists_needed(self) -> int:
        """How many the 21:00 finalist draw draws (rule 69)."""
        return self.finalists - len(self.spots)

    def earns(self, source: str, position: int) -> bool:
        """Whether the winner at `position` of draw `source` earns a spot (config)."""
        if self.sources is None:
            return True
        return position in self.sources.get(source, ())

    def qualify(self, cmd: Command, who: str, source: str, position: int) -> Award:
        """A draw's winner at `position` of draw `source` won a spot: a spot, or R5,000."""
        fingerprint = (who, source, position)
        prev = self._done.get(cmd.command_id)
        if prev is not None:
            if prev[0] != fingerprint:
                raise CommandConflict(f"command id {cmd.command_id!r} was used for another command")
            return prev[1]
        card(who)
        if not self.earns(source, position):
            raise StageError(f"position {position} of draw {source} earns no spot in "
                             f"car draw {self.car_draw_id}")  # fmt: skip
        if any(s == source and c == who for c, s in self.spots):
            raise StageError(f"{who} already qualified at draw {source}")
        ref = f"{self.stream}:{source}#{position}"
        new: list[Record] = []
        if not self.records:
            new.append(Record(RULES, self.stream, cmd.at, cmd.actor,
                              {"command_id": cmd.command_id, **self.rules()}))  # fmt: skip
        base = {"command_id": cmd.command_id}
        if who in self.holders():
            if source == self.final_draw:
                raise StageError(f"{who} holds a spot: the finalist draw bars them (rule 70)")
            award = Award(source, position, who, self.extra_spot_cash, PrizeKind.CASH, ref)
            data = {**base, "card": who, "source": source, "position": position,
                    "amount": self.extra_spot_cash}  # fmt: skip
            new.append(Record(EXTRA_SPOT, self.stream, cmd.at, cmd.actor, data))
        else:
            if self.finalists_needed() < 1:
                raise StageError(f"all {self.finalists} finalist spots are taken")
            self.spots.append((who, source))
            award = Award(source, position, who, 0, PrizeKind.CAR_SPOT, ref)
            data = {**base, "spot": len(self.spots), "card": who, "source": source,
                    "position": position}  # fmt: skip
            new.append(Record(QUALIFIED, self.stream, cmd.at, cmd.actor, data))
        self.records += new
        self._done[cmd.command_id] = (fingerprint, award)
        return award

    @classmethod
    def replay(cls, car_draw_id: str, records: Iterable[Record]) -> CarQualifiers:
        """Rebuild from the stream (its rules from its first record); refuses a record the
        rules could not have made."""
        recs = list(records)
        if not recs:
            return cls(car_draw_id)
        if recs[0].type != RULES:
            raise StageError(f"record 0 of {spots_stream(car_draw_id)} is not its rules")
        try:
            r = recs[0].data
            out = cls(car_draw_id, r["finalists"], r["extra_spot_cash"], r["sources"],
                      r["final_draw"])  # fmt: skip
        except (KeyError, TypeError) as e:
            raise StageError(f"record 0 of {spots_stream(car_draw_id)}: {e!r}") from e
        i = 1
        while i < len(recs):
            rec = recs[i]
            d = rec.data
            cid = d.get("command_id") or f"replay:{i}"
            before = len(out.records)
            try:
                out.qualify(Command(cid, rec.actor, rec.at), d["card"], d["source"],
                            d["position"])  # fmt: skip
            except (KeyError, TypeError, CommandConflict) as e:
                raise StageError(f"record {i} of {out.stream}: {e!r}") from e
            made = out.records[before:]
            if i == 1:
                made = made[1:]  # its rules record: compared below with record 0
                if out.records[0].to_dict() != recs[0].to_dict():
                    raise StageError(f"record 0 of {out.stream} does not follow the rules")
            if len(made) != 1 or made[0].to_dict() != rec.to_dict():
                raise StageError(f"record {i} of {out.stream} does not follow the rules")
            i += 1
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
        detail = (("buy_back", self.buy_back), ("vehicle", self.vehicle))
        return [Award(self.draw_id, spot, self.winner, self.car_value, PrizeKind.CAR, ref, detail)]

    def unrevealed(self) -> None:
        self._index = -1

    def adopt(self, rec: Record) -> None:
        if rec.type == WON and self._index == -1:
            spot = rec.data["spot"]
            if isinstance(spot, bool) or not isinstance(spot, int):
                raise StageError(f"the car's winner is at spot {spot!r}: not a spot")
            if not 1 <= spot <= len(self.finalists):
                raise StageError(f"spot {spot} is not one of the {len(self.finalists)} finalists")
            self._index = spot - 1

    def replay(self, rec: Record, cmd: Command) -> None:
        if rec.type == WON:
            self.reveal(cmd)
        elif rec.type == VEHICLE:
            self.choose_vehicle(cmd, rec.data["vehicle"], rec.data["buy_back"])
        else:
            raise StageError(f"a car final has no {rec.type!r} step")

"""The podium randomiser: winners, in the order drawn, pick a randomiser that names
their podium (000 rules 55-56 Queen Thursdays, 103 Saturday 15:00, 123-124 Saturday 21:00).

Why a derived table: which podium each randomiser leads to is a permutation of the
podiums fixed at open from the seed (purpose "podium"), so the host cannot move a prize
after a winner's choice. Prizes per podium are configured (e.g. R40,000 across 5 podiums
on Thursdays; R5,000-R10,000 each at 21:00; at 15:00 four cash podiums and two that
unlock the bonus feature, rule 104).

Commands: `choose(cmd, card, randomiser)`, by the next winner in draw order only.
Records: `podium.chosen` {position, card, randomiser, podium, prize}.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from selector.records import Record
from selector.session import Command
from selector.stagegames.derive import shuffle
from selector.stagegames.game import (
    Award,
    GameState,
    PrizeKind,
    StageError,
    StageGame,
    amount,
    cards_in_order,
    reveal_slot,
)

CHOSEN = "podium.chosen"
BONUS = "bonus"  # a podium that unlocks the 15:00 bonus feature instead of cash


@dataclass(frozen=True, slots=True)
class PodiumPrize:
    amount: int  # minor units; 0 for a bonus podium
    kind: str = PrizeKind.CASH.value  # "cash", "plus_play" or "bonus"

    def __post_init__(self) -> None:
        amount("podium prize", self.amount)
        if self.kind not in (PrizeKind.CASH.value, PrizeKind.PLUS_PLAY.value, BONUS):
            raise StageError(f"podium prize kind {self.kind!r} is not cash, plus_play or bonus")
        if self.kind == BONUS and self.amount:
            raise StageError("a bonus podium carries no amount: the bonus feature decides it")

    def to_dict(self) -> dict[str, Any]:
        return {"amount": self.amount, "kind": self.kind}

    @classmethod
    def of(cls, d: Mapping[str, Any]) -> PodiumPrize:
        return cls(d["amount"], d["kind"])


class PodiumGame(StageGame):
    """One draw's podiums; `final=False` when another game pays (the 21:00 safe)."""

    kind = "podium"

    def __init__(
        self,
        game_id: str,
        draw_id: str,
        day: date,
        podiums: Sequence[PodiumPrize],
        winners: Sequence[str],
        final: bool = True,
    ) -> None:
        super().__init__(game_id, draw_id, day)
        self.podiums = tuple(podiums)
        if not self.podiums:
            raise StageError("a podium game needs at least one podium")
        self.winners = cards_in_order(list(winners))
        if not 1 <= len(self.winners) <= len(self.podiums):
            raise StageError(f"{len(self.winners)} winners for {len(self.podiums)} podiums")
        self.final = final
        self._table: list[int] = []  # randomiser r (1-based) -> podium number (1-based)
        self.chosen: dict[int, tuple[str, int, int]] = {}  # position -> (card, rand, podium)

    @classmethod
    def from_config(cls, game_id: str, draw_id: str, day: date, c: Mapping[str, Any]) -> PodiumGame:
        podiums = [PodiumPrize.of(p) for p in c["podiums"]]
        return cls(game_id, draw_id, day, podiums, c["winners"], c["final"])

    def config(self) -> dict[str, Any]:
        return {
            "podiums": [p.to_dict() for p in self.podiums],
            "winners": list(self.winners),
            "final": self.final,
        }

    def derive(self, seed: bytes) -> None:
        self._table = shuffle(seed, self.game_id, "podium", range(1, len(self.podiums) + 1))

    def contents(self) -> dict[str, Any]:
        return {"randomisers": list(self._table)}

    def next_card(self) -> str | None:
        n = len(self.chosen)
        return self.winners[n] if n < len(self.winners) else None

    def free_randomisers(self) -> list[int]:
        taken = {r for _, r, _ in self.chosen.values()}
        return [r for r in range(1, len(self.podiums) + 1) if r not in taken]

    def choose(self, cmd: Command, card: str, randomiser: int) -> Record:
        def run() -> Record:
            self._require_open()
            expected = self.next_card()
            if card != expected:
                raise StageError(f"it is {expected!r}'s turn (the order drawn), not {card!r}")
            if randomiser not in self.free_randomisers():
                raise StageError(f"randomiser {randomiser} is not one still to choose")
            podium = self._table[randomiser - 1]
            position = len(self.chosen) + 1
            self.chosen[position] = (card, randomiser, podium)
            if len(self.chosen) == len(self.winners):
                self.state = GameState.FINISHED
            return self._emit(
                CHOSEN,
                cmd,
                {
                    "position": position,
                    "card": card,
                    "randomiser": randomiser,
                    "podium": podium,
                    "prize": self.podiums[podium - 1].to_dict(),
                },
            )

        return self._once(cmd, ("choose", card, randomiser), run)

    def prize_of(self, position: int) -> PodiumPrize:
        return self.podiums[self.chosen[position][2] - 1]

    def bonus_cards(self) -> list[str]:
        """The bonus feature's contestants, in the order drawn (rule 104)."""
        return [c for p, (c, _, _) in sorted(self.chosen.items()) if self.prize_of(p).kind == BONUS]

    def awards(self) -> list[Award]:
        if not self.final:
            return []
        out = []
        for position, (card, _, podium) in sorted(self.chosen.items()):
            prize = self.podiums[podium - 1]
            if prize.kind != BONUS:
                ref = f"podium:{self.game_id}#{podium}"
                out.append(
                    Award(self.draw_id, position, card, prize.amount, PrizeKind(prize.kind), ref)
                )
        return out

    def unrevealed(self) -> None:
        self._table = [0] * len(self.podiums)

    def adopt(self, rec: Record) -> None:
        if rec.type == CHOSEN:
            r, podium = rec.data["randomiser"], rec.data["podium"]
            pool = range(1, len(self.podiums) + 1)
            i = reveal_slot(self._table, pool, 0, r, podium, "randomiser")
            if i is not None:
                self._table[i] = podium

    def replay(self, rec: Record, cmd: Command) -> None:
        if rec.type != CHOSEN:
            raise StageError(f"a podium game has no {rec.type!r} step")
        self.choose(cmd, rec.data["card"], rec.data["randomiser"])

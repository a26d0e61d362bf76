"""The 15:00 bonus feature: two contestants open 12 boxes in turn (000 rules 104-107).

Rules, as built:
- the two winners whose podiums unlock the bonus (rule 104) play in the order drawn;
  each has a symbol (the podium's); each first accepts or declines (rule 107);
- 12 boxes (rule 106, configured); `needed` (3) of each contestant's symbol, the rest
  blank ("the first winner to reveal all three of their winning symbols", rule 105);
  which box holds what is a shuffle fixed at open (purpose "boxes");
- they open one box at a time, alternately, contestant 1 first (rule 105); a revealed
  symbol counts for its owner whoever opened it (the text says "reveal"; counting only
  one's own openings could leave a symbol nobody may claim, and the game could never
  end); the first to `needed` wins the jackpot (R10,000), the other the runner-up prize
  (R7,500);
- one declines: they get the consolation (R5,000), the other the jackpot; both decline:
  the consolation each (rule 107).

Records: `bonus.decided` {card, play}, `bonus.box` {turn, card, box, symbol, owner,
counts, winner}.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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

DECIDED = "bonus.decided"
BOX = "bonus.box"
BLANK = "blank"


@dataclass(frozen=True, slots=True)
class BonusRules:
    boxes: int = 12
    needed: int = 3
    symbols: tuple[str, str] = ("flame", "star")
    jackpot: int = 1_000_000  # R10,000.00
    runner_up: int = 750_000
    consolation: int = 500_000
    kind: str = PrizeKind.CASH.value

    def __post_init__(self) -> None:
        for name in ("jackpot", "runner_up", "consolation"):
            amount(name, getattr(self, name))
        if self.needed < 1 or self.boxes < 2 * self.needed:
            raise StageError(f"{self.boxes} boxes cannot hold {self.needed} of each symbol")
        s = tuple(self.symbols)
        if len(s) != 2 or s[0] == s[1] or BLANK in s or not all(s):
            raise StageError("two distinct, non-blank symbols are needed")
        object.__setattr__(self, "symbols", s)

    def to_dict(self) -> dict[str, Any]:
        return {
            "boxes": self.boxes,
            "needed": self.needed,
            "symbols": list(self.symbols),
            "jackpot": self.jackpot,
            "runner_up": self.runner_up,
            "consolation": self.consolation,
            "kind": self.kind,
        }

    @classmethod
    def of(cls, d: Mapping[str, Any]) -> BonusRules:
        return cls(**{**d, "symbols": tuple(d["symbols"])})


@dataclass(slots=True)
class _Play:
    opened: dict[int, str] = field(default_factory=dict)  # box -> symbol
    counts: list[int] = field(default_factory=lambda: [0, 0])
    winner: int | None = None  # contestant index


class BonusGame(StageGame):
    kind = "bonus"

    def __init__(
        self,
        game_id: str,
        draw_id: str,
        day: date,
        contestants: Sequence[str],
        positions: Sequence[int],
        rules: BonusRules | None = None,
    ) -> None:
        super().__init__(game_id, draw_id, day)
        self.contestants = cards_in_order(list(contestants))
        self.positions = tuple(positions)  # their positions in the ticket draw
        if len(self.contestants) != 2 or len(self.positions) != 2:
            raise StageError("the bonus feature has exactly two contestants (rule 104)")
        self.rules = rules or BonusRules()
        self.decisions: dict[str, bool] = {}
        self.play = _Play()
        self._boxes: list[str] = []

    @classmethod
    def from_config(cls, game_id: str, draw_id: str, day: date, c: Mapping[str, Any]) -> BonusGame:
        rules = BonusRules.of(c["rules"])
        return cls(game_id, draw_id, day, c["contestants"], c["positions"], rules)

    def config(self) -> dict[str, Any]:
        return {
            "contestants": list(self.contestants),
            "positions": list(self.positions),
            "rules": self.rules.to_dict(),
        }

    def derive(self, seed: bytes) -> None:
        self._boxes = shuffle(seed, self.game_id, "boxes", self._items())

    def contents(self) -> dict[str, Any]:
        return {"boxes": list(self._boxes)}

    def decide(self, cmd: Command, card: str, play: bool) -> Record:
        def run() -> Record:
            self._require_open()
            if card not in self.contestants:
                raise StageError(f"{card!r} is not a bonus contestant")
            if card in self.decisions:
                raise StageError(f"{card!r} has already decided")
            self.decisions[card] = bool(play)
            if len(self.decisions) == 2 and not all(self.decisions.values()):
                self.state = GameState.FINISHED  # a decline settles it (rule 107)
            return self._emit(DECIDED, cmd, {"card": card, "play": bool(play)})

        return self._once(cmd, ("decide", card, bool(play)), run)

    def turn(self) -> str | None:
        """Whose turn it is to open a box, once both have accepted."""
        if len(self.decisions) < 2 or not all(self.decisions.values()):
            return None
        if self.play.winner is not None:
            return None
        return self.contestants[len(self.play.opened) % 2]

    def open_box(self, cmd: Command, card: str, box: int) -> Record:
        def run() -> Record:
            self._require_open()
            expected = self.turn()
            if expected is None:
                raise StageError("no box may be opened now: both must accept first")
            if card != expected:
                raise StageError(f"it is {expected!r}'s turn, not {card!r}")
            if not 1 <= box <= self.rules.boxes or box in self.play.opened:
                raise StageError(f"box {box} is not one still closed")
            symbol = self._boxes[box - 1]
            self.play.opened[box] = symbol
            owner = self.rules.symbols.index(symbol) if symbol != BLANK else None
            if owner is not None:
                self.play.counts[owner] += 1
                if self.play.counts[owner] == self.rules.needed:
                    self.play.winner = owner
                    self.state = GameState.FINISHED
            return self._emit(
                BOX,
                cmd,
                {
                    "turn": len(self.play.opened),
                    "card": card,
                    "box": box,
                    "symbol": symbol,
                    "owner": None if owner is None else self.contestants[owner],
                    "counts": list(self.play.counts),
                    "winner": None
                    if self.play.winner is None
                    else self.contestants[self.play.winner],
                },
            )

        return self._once(cmd, ("box", card, box), run)

    def awards(self) -> list[Award]:
        if self.state not in (GameState.FINISHED, GameState.CLOSED):
            return []
        r = self.rules
        a, b = self.contestants
        if self.play.winner is not None:
            first = self.play.winner
            amounts = [r.runner_up, r.runner_up]
            amounts[first] = r.jackpot
        elif self.decisions[a] and not self.decisions[b]:
            amounts = [r.jackpot, r.consolation]
        elif self.decisions[b] and not self.decisions[a]:
            amounts = [r.consolation, r.jackpot]
        else:
            amounts = [r.consolation, r.consolation]
        kind = PrizeKind(r.kind)
        return [
            Award(self.draw_id, self.positions[i], c, amounts[i], kind, f"bonus:{self.game_id}")
            for i, c in enumerate(self.contestants)
        ]

    def _items(self) -> list[str]:
        r = self.rules
        items = [r.symbols[0]] * r.needed + [r.symbols[1]] * r.needed
        return items + [BLANK] * (r.boxes - 2 * r.needed)

    def unrevealed(self) -> None:
        self._boxes = [""] * self.rules.boxes

    def adopt(self, rec: Record) -> None:
        if rec.type == BOX:
            d = rec.data
            i = reveal_slot(self._boxes, self._items(), "", d["box"], d["symbol"], "box")
            if i is not None:
                self._boxes[i] = d["symbol"]

    def replay(self, rec: Record, cmd: Command) -> None:
        if rec.type == DECIDED:
            self.decide(cmd, rec.data["card"], rec.data["play"])
        elif rec.type == BOX:
            self.open_box(cmd, rec.data["card"], rec.data["box"])
        else:
            raise StageError(f"a bonus game has no {rec.type!r} step")

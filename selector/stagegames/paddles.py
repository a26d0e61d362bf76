"""The 19:00 paddles: each winner picks a paddle of 2, 3 or 4 chances and opens prize
reveals (000 rules 112-117).

Rules, as built:
- the winners come on stage one at a time in the order drawn (rule 113); each picks one
  of the paddles not yet taken; its number (2, 3 or 4) is the chances they have
  (rule 114); which paddle holds which number is a shuffle fixed at open ("paddles");
- 25 prize reveals (rule 116, configured), their prizes a shuffle fixed at open
  ("reveals"); the board is shared: a reveal opened by one winner stays open;
- a winner may stop after any reveal (rule 115); the prize is the last reveal opened,
  never a sum (rule 117), also when all chances are used (rule 115).

Records: `paddles.paddle` {position, card, paddle, chances}, `paddles.reveal` {position,
card, reveal, amount, chance, final}, `paddles.stopped` {position, card, amount}.
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

PADDLE = "paddles.paddle"
REVEAL = "paddles.reveal"
STOPPED = "paddles.stopped"
CHANCES = (2, 3, 4)


@dataclass(slots=True)
class _Turn:
    paddle: int | None = None
    chances: int = 0
    opened: list[int] = field(default_factory=list)  # reveal numbers, in order
    prize: int | None = None  # the last reveal's amount
    done: bool = False


class PaddleGame(StageGame):
    kind = "paddles"

    def __init__(
        self,
        game_id: str,
        draw_id: str,
        day: date,
        winners: Sequence[str],
        paddles: Sequence[int],
        reveals: Sequence[int],
        kind: str = PrizeKind.CASH.value,
    ) -> None:
        super().__init__(game_id, draw_id, day)
        self.winners = cards_in_order(list(winners))
        self.paddles = tuple(paddles)
        self.reveals = tuple(amount("reveal prize", a) for a in reveals)
        self.prize_kind = PrizeKind(kind)
        if any(c not in CHANCES for c in self.paddles):
            raise StageError(f"a paddle holds 2, 3 or 4 chances (rule 113), not {self.paddles}")
        if len(self.paddles) < len(self.winners):
            raise StageError("fewer paddles than winners")
        if sum(sorted(self.paddles)[-len(self.winners) :]) > len(self.reveals):
            raise StageError("the reveals could run out before every chance is used")
        self.turns = [_Turn() for _ in self.winners]
        self._paddles: list[int] = []
        self._reveals: list[int] = []

    @classmethod
    def from_config(cls, game_id: str, draw_id: str, day: date, c: Mapping[str, Any]) -> PaddleGame:
        return cls(game_id, draw_id, day, c["winners"], c["paddles"], c["reveals"], c["kind"])

    def config(self) -> dict[str, Any]:
        return {
            "winners": list(self.winners),
            "paddles": list(self.paddles),
            "reveals": list(self.reveals),
            "kind": self.prize_kind.value,
        }

    def derive(self, seed: bytes) -> None:
        self._paddles = shuffle(seed, self.game_id, "paddles", self.paddles)
        self._reveals = shuffle(seed, self.game_id, "reveals", self.reveals)

    def contents(self) -> dict[str, Any]:
        return {"paddles": list(self._paddles), "reveals": list(self._reveals)}

    def current(self) -> int | None:
        """The index of the winner on stage (the first not done, in the order drawn)."""
        return next((i for i, t in enumerate(self.turns) if not t.done), None)

    def _on_stage(self, card: str) -> _Turn:
        self._require_open()
        i = self.current()
        if i is None or self.winners[i] != card:
            who = None if i is None else self.winners[i]
            raise StageError(f"it is {who!r}'s turn (the order drawn), not {card!r}")
        return self.turns[i]

    def opened(self) -> set[int]:
        return {r for t in self.turns for r in t.opened}

    def opened_amounts(self) -> dict[int, int]:
        """The prize behind each reveal opened so far (the others stay hidden)."""
        return {r: self._reveals[r - 1] for t in self.turns for r in t.opened}

    def pick_paddle(self, cmd: Command, card: str, paddle: int) -> Record:
        def run() -> Record:
            turn = self._on_stage(card)
            if turn.paddle is not None:
                raise StageError(f"{card!r} already holds paddle {turn.paddle}")
            taken = {t.paddle for t in self.turns}
            if not 1 <= paddle <= len(self.paddles) or paddle in taken:
                raise StageError(f"paddle {paddle} is not one still on the table")
            turn.paddle = paddle
            turn.chances = self._paddles[paddle - 1]
            position = self.winners.index(card) + 1
            data = {"position": position, "card": card, "paddle": paddle, "chances": turn.chances}
            return self._emit(PADDLE, cmd, data)

        return self._once(cmd, ("paddle", card, paddle), run)

    def reveal(self, cmd: Command, card: str, reveal: int) -> Record:
        def run() -> Record:
            turn = self._on_stage(card)
            if turn.paddle is None:
                raise StageError(f"{card!r} must pick a paddle first")
            if not 1 <= reveal <= len(self.reveals) or reveal in self.opened():
                raise StageError(f"prize reveal {reveal} is not one still closed")
            turn.opened.append(reveal)
            turn.prize = self._reveals[reveal - 1]
            final = len(turn.opened) == turn.chances  # chances used: the last one stands
            if final:
                self._finish(turn)
            return self._emit(
                REVEAL,
                cmd,
                {
                    "position": self.winners.index(card) + 1,
                    "card": card,
                    "reveal": reveal,
                    "amount": turn.prize,
                    "chance": len(turn.opened),
                    "final": final,
                },
            )

        return self._once(cmd, ("reveal", card, reveal), run)

    def stop(self, cmd: Command, card: str) -> Record:
        """The winner is happy with the reveal they last opened (rule 115)."""

        def run() -> Record:
            turn = self._on_stage(card)
            if turn.prize is None:
                raise StageError(f"{card!r} has opened no reveal yet: nothing to keep")
            self._finish(turn)
            position = self.winners.index(card) + 1
            return self._emit(
                STOPPED, cmd, {"position": position, "card": card, "amount": turn.prize}
            )

        return self._once(cmd, ("stop", card), run)

    def _finish(self, turn: _Turn) -> None:
        turn.done = True
        if all(t.done for t in self.turns):
            self.state = GameState.FINISHED

    def awards(self) -> list[Award]:
        return [
            Award(
                self.draw_id,
                i + 1,
                self.winners[i],
                t.prize,
                self.prize_kind,
                f"paddles:{self.game_id}#{t.opened[-1]}",
            )
            for i, t in enumerate(self.turns)
            if t.done and t.prize is not None
        ]

    def unrevealed(self) -> None:
        self._paddles = [0] * len(self.paddles)
        self._reveals = [-1] * len(self.reveals)

    def adopt(self, rec: Record) -> None:
        d = rec.data
        if rec.type == PADDLE:
            i = reveal_slot(self._paddles, self.paddles, 0, d["paddle"], d["chances"], "paddle")
            if i is not None:
                self._paddles[i] = d["chances"]
        elif rec.type == REVEAL:
            i = reveal_slot(self._reveals, self.reveals, -1, d["reveal"], d["amount"],
                            "prize reveal")  # fmt: skip
            if i is not None:
                self._reveals[i] = d["amount"]

    def replay(self, rec: Record, cmd: Command) -> None:
        d = rec.data
        if rec.type == PADDLE:
            self.pick_paddle(cmd, d["card"], d["paddle"])
        elif rec.type == REVEAL:
            self.reveal(cmd, d["card"], d["reveal"])
        elif rec.type == STOPPED:
            self.stop(cmd, d["card"])
        else:
            raise StageError(f"a paddle game has no {rec.type!r} step")

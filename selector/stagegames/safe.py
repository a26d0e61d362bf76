"""The 21:00 digit safe: forfeit R2,000 of a podium prize to try to crack it
(000 rules 123-126).

Rules, as built:
- the draw's winners, in the order drawn, each hold their podium prize (R5,000-R10,000,
  rule 124: a `PodiumGame` with `final=False` decides it); each may decline (keep it
  all) or forfeit `forfeit` (R2,000) of it to try the safe (rule 125);
- the safe's odds are configured and stated (`SafeOdds.text`), in one of two forms:
  `code`: a code of `digits` digits, uniform in 0 .. 10^digits - 1, one per contestant
  (purpose "safe-code|<position>"), and `tries` distinct guesses (a repeated guess is
  refused, so the chance is exactly tries / 10^digits); or `chance`: a configured
  probability numerator/denominator realised by the seed (purpose
  "safe-chance|<position>": cracked when uniform(denominator) < numerator);
- the safe holds the progressive's value when the game opens (`selector.stagegames.
  ledger`, base R100,000 + R20,000 per 21:00 cash draw not won, rule 126); cracking it
  wins that value; once cracked, no one else tries in that draw (the safe is open).
  Which draws grow the safe is the ledger's rule (see its docstring).

Records: `safe.declined` {position, card, keep}, `safe.attempted` {position, card,
forfeit, keep}, `safe.guess` {position, card, code, try, correct}, `safe.spin`
{position, card, value, cracked}.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from fractions import Fraction
from typing import Any

from selector.records import Record
from selector.session import Command
from selector.stagegames.derive import below
from selector.stagegames.game import (
    Award,
    GameState,
    PrizeKind,
    StageError,
    StageGame,
    amount,
    cards_in_order,
)

DECLINED = "safe.declined"
ATTEMPTED = "safe.attempted"
GUESS = "safe.guess"
SPIN = "safe.spin"
CODE = "code"
CHANCE = "chance"
UNKNOWN = -1  # a hidden code or chance draw not revealed yet (checking an open game)


@dataclass(frozen=True, slots=True)
class SafeOdds:
    mode: str = CODE
    digits: int = 3
    tries: int = 3
    numerator: int = 1
    denominator: int = 100

    def __post_init__(self) -> None:
        if self.mode == CODE:
            if not 1 <= self.digits <= 12 or not 1 <= self.tries < 10**self.digits:
                raise StageError("a code safe needs 1-12 digits and fewer tries than codes")
        elif self.mode == CHANCE:
            if not 0 < self.numerator < self.denominator:
                raise StageError("a chance safe needs 0 < numerator < denominator")
        else:
            raise StageError(f"safe odds mode {self.mode!r} is not 'code' or 'chance'")

    @property
    def probability(self) -> Fraction:
        """The chance one attempt cracks the safe, exactly."""
        if self.mode == CODE:
            return Fraction(self.tries, 10**self.digits)
        return Fraction(self.numerator, self.denominator)

    def text(self) -> str:
        """The odds as the stage screen states them."""
        p = self.probability
        if self.mode == CODE:
            return (
                f"a {self.digits}-digit code, {self.tries} tries: "
                f"{p.numerator} in {p.denominator:,} per attempt"
            )
        return f"{p.numerator} in {p.denominator:,} per attempt"

    def to_dict(self) -> dict[str, Any]:
        if self.mode == CODE:
            return {"mode": CODE, "digits": self.digits, "tries": self.tries}
        return {"mode": CHANCE, "numerator": self.numerator, "denominator": self.denominator}

    @classmethod
    def of(cls, d: Mapping[str, Any]) -> SafeOdds:
        return cls(**d)


class SafeGame(StageGame):
    kind = "safe"

    def __init__(
        self,
        game_id: str,
        draw_id: str,
        day: date,
        winners: Sequence[str],
        podium_prizes: Sequence[int],
        safe_value: int,
        odds: SafeOdds | None = None,
        forfeit: int = 200_000,
    ) -> None:
        super().__init__(game_id, draw_id, day)
        self.winners = cards_in_order(list(winners))
        self.podium_prizes = tuple(amount("podium prize", a) for a in podium_prizes)
        if len(self.podium_prizes) != len(self.winners) or not self.winners:
            raise StageError("one podium prize per winner")
        self.safe_value = amount("safe value", safe_value)
        self.odds = odds or SafeOdds()
        self.forfeit = amount("forfeit", forfeit)
        self.keep: dict[int, int] = {}  # position -> cash kept after any forfeit
        self.trying: dict[int, list[str]] = {}  # position -> guesses so far
        self.cracked_by: int | None = None
        self._hidden: list[int] = []  # per position: the code, or the chance draw

    @classmethod
    def from_config(cls, game_id: str, draw_id: str, day: date, c: Mapping[str, Any]) -> SafeGame:
        return cls(
            game_id, draw_id, day, c["winners"], c["podium_prizes"], c["safe_value"],
            SafeOdds.of(c["odds"]), c["forfeit"],
        )  # fmt: skip

    def config(self) -> dict[str, Any]:
        return {
            "winners": list(self.winners),
            "podium_prizes": list(self.podium_prizes),
            "safe_value": self.safe_value,
            "odds": self.odds.to_dict(),
            "odds_text": self.odds.text(),
            "forfeit": self.forfeit,
        }

    def derive(self, seed: bytes) -> None:
        o = self.odds
        if o.mode == CODE:
            n, purpose = 10**o.digits, "safe-code"
        else:
            n, purpose = o.denominator, "safe-chance"
        self._hidden = [
            below(seed, self.game_id, f"{purpose}|{p}", n) for p in range(1, len(self.winners) + 1)
        ]

    def code_text(self, value: int) -> str:
        return f"{value:0{self.odds.digits}d}"

    def contents(self) -> dict[str, Any]:
        if self.odds.mode == CODE:
            return {"codes": [self.code_text(v) for v in self._hidden]}
        return {"values": list(self._hidden)}

    def current(self) -> int | None:
        """Position (1-based) of the winner deciding now, in the order drawn."""
        for p in range(1, len(self.winners) + 1):
            if p not in self.keep or (p in self.trying and not self._attempt_over(p)):
                return p
        return None

    def _attempt_over(self, p: int) -> bool:
        guesses = self.trying[p]
        if self.cracked_by == p:
            return True
        return len(guesses) >= (self.odds.tries if self.odds.mode == CODE else 1)

    def _on_stage(self, card: str) -> int:
        self._require_open()
        p = self.current()
        if p is None or self.winners[p - 1] != card:
            who = None if p is None else self.winners[p - 1]
            raise StageError(f"it is {who!r}'s turn (the order drawn), not {card!r}")
        return p

    def _maybe_finish(self) -> None:
        if self.current() is None:
            self.state = GameState.FINISHED

    def decline(self, cmd: Command, card: str) -> Record:
        def run() -> Record:
            p = self._on_stage(card)
            if p in self.keep:
                raise StageError(f"{card!r} is already trying the safe")
            self.keep[p] = self.podium_prizes[p - 1]
            self._maybe_finish()
            return self._emit(DECLINED, cmd, {"position": p, "card": card, "keep": self.keep[p]})

        return self._once(cmd, ("decline", card), run)

    def attempt(self, cmd: Command, card: str) -> Record:
        def run() -> Record:
            p = self._on_stage(card)
            if p in self.keep:
                raise StageError(f"{card!r} is already trying the safe")
            if self.cracked_by is not None:
                raise StageError("the safe was cracked in this draw: nobody else tries")
            prize = self.podium_prizes[p - 1]
            if prize < self.forfeit:
                raise StageError(f"a podium prize of {prize} cannot forfeit {self.forfeit}")
            self.keep[p] = prize - self.forfeit
            self.trying[p] = []
            data = {"position": p, "card": card, "forfeit": self.forfeit, "keep": self.keep[p]}
            return self._emit(ATTEMPTED, cmd, data)

        return self._once(cmd, ("attempt", card), run)

    def _trying(self, card: str) -> int:
        p = self._on_stage(card)
        if p not in self.trying:
            raise StageError(f"{card!r} has not forfeited to try the safe")
        return p

    def guess(self, cmd: Command, card: str, code: str) -> Record:
        def run() -> Record:
            if self.odds.mode != CODE:
                raise StageError("this safe is a configured chance: spin, do not guess")
            p = self._trying(card)
            digits = self.odds.digits
            if not (isinstance(code, str) and len(code) == digits and code.isdigit()):
                raise StageError(f"a guess is {digits} digits")
            if code in self.trying[p]:
                raise StageError(f"{code} was already tried: the odds count distinct guesses")
            self.trying[p].append(code)
            correct = code == self.code_text(self._hidden[p - 1])
            if correct:
                self.cracked_by = p
            self._maybe_finish()
            data = {
                "position": p,
                "card": card,
                "code": code,
                "try": len(self.trying[p]),
                "correct": correct,
            }
            return self._emit(GUESS, cmd, data)

        return self._once(cmd, ("guess", card, code), run)

    def spin(self, cmd: Command, card: str) -> Record:
        def run() -> Record:
            if self.odds.mode != CHANCE:
                raise StageError("this safe takes a code: guess, do not spin")
            p = self._trying(card)
            value = self._hidden[p - 1]
            cracked = value < self.odds.numerator
            self.trying[p].append(str(value))
            if cracked:
                self.cracked_by = p
            self._maybe_finish()
            data = {"position": p, "card": card, "value": value, "cracked": cracked}
            return self._emit(SPIN, cmd, data)

        return self._once(cmd, ("spin", card), run)

    @property
    def cracked(self) -> bool:
        return self.cracked_by is not None

    def awards(self) -> list[Award]:
        ref = f"safe:{self.game_id}"
        out = [
            Award(self.draw_id, p, self.winners[p - 1], keep, PrizeKind.CASH, f"podium:{ref}")
            for p, keep in sorted(self.keep.items())
        ]
        if self.cracked_by is not None:
            p = self.cracked_by
            out.append(
                Award(self.draw_id, p, self.winners[p - 1], self.safe_value, PrizeKind.SAFE, ref)
            )
        return out

    def unrevealed(self) -> None:
        self._hidden = [UNKNOWN] * len(self.winners)  # matches no guess, cracks no spin

    def adopt(self, rec: Record) -> None:
        d = rec.data
        o = self.odds
        if rec.type == GUESS and d["correct"] is True and o.mode == CODE:
            code = d["code"]
            if not (isinstance(code, str) and len(code) == o.digits and code.isdigit()):
                return  # the guess's own rule refuses it
            value, n = int(code), 10**o.digits
        elif rec.type == SPIN and o.mode == CHANCE:
            value, n = d["value"], o.denominator
        else:
            return  # a wrong guess says only that the code is another
        p = d["position"]
        if isinstance(p, bool) or not isinstance(p, int) or not 1 <= p <= len(self.winners):
            return
        if self._hidden[p - 1] != UNKNOWN:
            return
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < n:
            raise StageError(f"safe position {p} reveals {value!r}: not a draw below {n}")
        self._hidden[p - 1] = value

    def replay(self, rec: Record, cmd: Command) -> None:
        d = rec.data
        steps = {
            DECLINED: lambda: self.decline(cmd, d["card"]),
            ATTEMPTED: lambda: self.attempt(cmd, d["card"]),
            GUESS: lambda: self.guess(cmd, d["card"], d["code"]),
            SPIN: lambda: self.spin(cmd, d["card"]),
        }
        if rec.type not in steps:
            raise StageError(f"a safe game has no {rec.type!r} step")
        steps[rec.type]()

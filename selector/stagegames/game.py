"""What every stage game shares: open with a commitment, reveal the seed at close,
retry-safe commands, and the awards it hands to the prize ledger.

Why one base: the fairness story is the same for every mechanic (commit, derive, reveal),
so it lives once. A game's records are its journal stream (session id = game id):
`stage.opened` (kind, draw, day, config, inputs, commitment), one record per host
command (each carrying the command's inputs, so `selector.stagegames.verify` can re-run
the game from the revealed seed), and `stage.closed` (the seed and the whole hidden
table). Nothing here reads a clock or an RNG: time comes with each `Command`, the seed
comes into `open` (made by `derive.new_seed`, from `secrets`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date
from enum import StrEnum
from typing import Any, ClassVar, TypeVar

from selector.fairness import SEED_BYTES
from selector.records import Actor, Record
from selector.session import Command, CommandConflict
from selector.stagegames.derive import STAGE_V1

OPENED = "stage.opened"
CLOSED = "stage.closed"
T = TypeVar("T")


class StageError(ValueError):
    """A command the game's rules refuse; nothing was recorded."""


class PrizeKind(StrEnum):
    CASH = "cash"
    PLUS_PLAY = "plus_play"
    CAR = "car"
    CAR_SPOT = "car_spot"  # a car draw qualifying spot (amount 0): a win of the day
    SAFE = "safe"  # the cracked safe's progressive
    VAULT_SHARE = "vault_share"  # 20 Dec 21:30 share of an uncracked vault


class GameState(StrEnum):
    SCHEDULED = "scheduled"
    OPEN = "open"
    FINISHED = "finished"  # every contestant resolved; the seed is not yet revealed
    CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class Award:
    """One prize a game gives; the host posts it to the `PrizeLedger`."""

    draw_id: str
    position: int
    card: str
    amount: int  # minor units (cents)
    kind: PrizeKind
    ref: str  # the game and what decided it, e.g. "podium:sat-1500#3"

    def to_dict(self) -> dict[str, Any]:
        return {
            "draw_id": self.draw_id,
            "position": self.position,
            "card": self.card,
            "amount": self.amount,
            "kind": self.kind.value,
            "ref": self.ref,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Award:
        return cls(
            d["draw_id"], d["position"], d["card"], d["amount"], PrizeKind(d["kind"]), d["ref"]
        )


def amount(what: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise StageError(f"{what} must be an integer >= 0 (minor units), not {value!r}")
    return value


def card(value: object) -> str:
    if not isinstance(value, str) or not value or not value.isprintable() or " " in value:
        raise StageError(f"card {value!r} must be printable text without spaces")
    return value


def cards_in_order(values: object) -> tuple[str, ...]:
    """Contestants in the order they were drawn, each once."""
    if not isinstance(values, list | tuple):
        raise StageError("contestants must be a list of cards in the order drawn")
    out = tuple(card(c) for c in values)
    if len(set(out)) != len(out):
        raise StageError("a card appears twice among the contestants")
    return out


class StageGame:
    """The commit-reveal life of one game: scheduled -> open -> finished -> closed."""

    kind: ClassVar[str] = ""

    def __init__(self, game_id: str, draw_id: str, day: date) -> None:
        if not game_id or not game_id.isprintable() or " " in game_id:
            raise StageError("game id must be printable text without spaces")
        self.game_id = game_id
        self.draw_id = draw_id
        self.day = day
        self.state = GameState.SCHEDULED
        self.commitment: str | None = None
        self.records: list[Record] = []
        self._seed: bytes | None = None
        self._done: dict[str, tuple[tuple[Any, ...], Any]] = {}

    # -- for the mechanics ------------------------------------------------------------

    def config(self) -> dict[str, Any]:
        """The rules and inputs the game opened with (stored in `stage.opened`)."""
        raise NotImplementedError

    def derive(self, seed: bytes) -> None:
        """Fix the hidden contents from the seed (called once, at open)."""
        raise NotImplementedError

    def contents(self) -> dict[str, Any]:
        """The whole hidden table, as `stage.closed` reveals it."""
        raise NotImplementedError

    def awards(self) -> list[Award]:
        raise NotImplementedError

    def replay(self, rec: Record, cmd: Command) -> None:
        """Carry out the command a recorded step stands for (the verifier re-runs games)."""
        raise NotImplementedError

    # -- the shared life --------------------------------------------------------------

    def open(self, cmd: Command, seed: bytes) -> Record:
        def run() -> Record:
            if self.state is not GameState.SCHEDULED:
                raise StageError(f"game {self.game_id} is already {self.state.value}")
            if len(seed) != SEED_BYTES:
                raise StageError(f"seed must be {SEED_BYTES} bytes")
            self.derive(seed)
            self._seed = seed
            self.commitment = hashlib.sha256(seed).hexdigest()
            self.state = GameState.OPEN
            return self._emit(
                OPENED,
                cmd,
                {
                    "kind": self.kind,
                    "derivation": STAGE_V1,
                    "draw_id": self.draw_id,
                    "day": self.day.isoformat(),
                    "commitment": self.commitment,
                    "config": self.config(),
                },
            )

        return self._once(cmd, ("open", self.commitment_of(seed)), run)

    @staticmethod
    def commitment_of(seed: bytes) -> str:
        return hashlib.sha256(seed).hexdigest()

    def close(self, cmd: Command) -> Record:
        """Reveal the seed and the hidden table; only once every contestant is resolved."""

        def run() -> Record:
            if self.state is not GameState.FINISHED:
                raise StageError(f"game {self.game_id} is {self.state.value}, not finished")
            assert self._seed is not None
            self.state = GameState.CLOSED
            return self._emit(
                CLOSED,
                cmd,
                {
                    "seed": self._seed.hex(),
                    "contents": self.contents(),
                    "awards": [a.to_dict() for a in self.awards()],
                },
            )

        return self._once(cmd, ("close",), run)

    @property
    def revealed_seed(self) -> bytes | None:
        return self._seed if self.state is GameState.CLOSED else None

    def answered(self, command_id: str) -> bool:
        return command_id in self._done

    def _require_open(self) -> None:
        if self.state is not GameState.OPEN:
            raise StageError(f"game {self.game_id} is {self.state.value}, not open")

    def _emit(self, type_: str, cmd: Command, data: dict[str, Any]) -> Record:
        rec = Record(type_, self.game_id, cmd.at, cmd.actor, data)
        self.records.append(rec)
        return rec

    def _once(self, cmd: Command, fingerprint: tuple[Any, ...], run: Callable[[], T]) -> T:
        """A retried command (same id) returns its first outcome and changes nothing."""
        prev = self._done.get(cmd.command_id)
        if prev is not None:
            if prev[0] != fingerprint:
                raise CommandConflict(f"command id {cmd.command_id!r} was used for another command")
            out: T = prev[1]
            return out
        result = run()
        self._done[cmd.command_id] = (fingerprint, result)
        return result


def replay_command(rec: Record, n: int) -> Command:
    """The command a recorded step stands for, as the verifier re-issues it."""
    return Command(f"verify:{n}", Actor(rec.actor.user, rec.actor.role), rec.at)

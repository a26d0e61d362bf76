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
from collections.abc import Callable, Mapping, Sequence
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


class DrawGame(StrEnum):
    """What follows a ticket draw on stage (the config names one per draw)."""

    PODIUM = "podium"  # Thursday Queen draws: the podium randomiser pays (rules 55-56)
    PODIUM_BONUS = "podium+bonus"  # Saturday 15:00: podiums, two unlock the boxes (103-107)
    PADDLES = "paddles"  # Saturday 19:00 (rules 112-117)
    PODIUM_SAFE = "podium+safe"  # Saturday 21:00: podiums, then the digit safe (123-126)
    VAULT_SHARE = "vault_share"  # 20 Dec 21:30: an uncracked vault shared (rules 135-138)
    CAR_SPOTS = "car_spots"  # car day 15:00 and 19:00: each winner a qualifying spot (69-70)
    CAR_FINAL = "car_final"  # car day 21:00: the finalists drawn, then the car (69, 87)


class GameState(StrEnum):
    SCHEDULED = "scheduled"
    OPEN = "open"
    FINISHED = "finished"  # every contestant resolved; the seed is not yet revealed
    CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class Award:
    """One prize a game gives; the host posts it to the `StageLedger`."""

    draw_id: str
    position: int
    card: str
    amount: int  # minor units (cents)
    kind: PrizeKind
    ref: str  # the game and what decided it, e.g. "podium:sat-1500#3"
    # what else the prize record must say, as (name, value) pairs: the car's vehicle and
    # the buy-back agreed with the dealership (rule 87)
    detail: tuple[tuple[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out = {
            "draw_id": self.draw_id,
            "position": self.position,
            "card": self.card,
            "amount": self.amount,
            "kind": self.kind.value,
            "ref": self.ref,
        }
        if self.detail:
            out["detail"] = dict(self.detail)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Award:
        detail = tuple(sorted((d.get("detail") or {}).items()))
        return cls(
            d["draw_id"], d["position"], d["card"], d["amount"], PrizeKind(d["kind"]), d["ref"],
            detail,
        )  # fmt: skip


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

    def unrevealed(self) -> None:
        """Hidden contents not known yet (the seed is not revealed): every slot unknown."""
        raise NotImplementedError

    def adopt(self, rec: Record) -> None:
        """Take what a recorded step revealed as the hidden content behind it, so that
        re-issuing the step gives that reveal; refused (`StageError`) when the configured
        contents could not hide it. A slot out of range or already known is left for the
        step's own rules to refuse."""
        raise NotImplementedError

    # -- the shared life --------------------------------------------------------------

    def open(self, cmd: Command, seed: bytes, seed_from: str | None = None) -> Record:
        """Fix the hidden contents from `seed` and publish its commitment.

        `seed_from`: the journal stream of the ticket draw whose committed seed this
        game's seed is derived from (`derive.game_seed`); recorded, so `raps verify` can
        check the derivation once that draw's seed is revealed."""

        def run() -> Record:
            if self.state is not GameState.SCHEDULED:
                raise StageError(f"game {self.game_id} is already {self.state.value}")
            if len(seed) != SEED_BYTES:
                raise StageError(f"seed must be {SEED_BYTES} bytes")
            self.derive(seed)
            self._seed = seed
            self.commitment = hashlib.sha256(seed).hexdigest()
            self.state = GameState.OPEN
            data = {
                "kind": self.kind,
                "derivation": STAGE_V1,
                "draw_id": self.draw_id,
                "day": self.day.isoformat(),
                "commitment": self.commitment,
                "config": self.config(),
            }
            if seed_from is not None:
                data["seed_from"] = seed_from
            return self._emit(OPENED, cmd, data)

        return self._once(cmd, ("open", self.commitment_of(seed)), run)

    def open_unrevealed(self, opened: Record) -> None:
        """As `opened` opened it, its hidden contents unknown until the steps reveal them
        (`adopt`): for checking a game whose seed is not revealed yet. It cannot close."""
        if self.state is not GameState.SCHEDULED or opened.type != OPENED:
            raise StageError(f"game {self.game_id} cannot be opened from {opened.type}")
        self.unrevealed()
        self.commitment = str(opened.data.get("commitment"))
        self.state = GameState.OPEN
        self.records.append(opened)
        command_id = opened.data.get("command_id")
        if isinstance(command_id, str):
            self._done[command_id] = (("open", self.commitment), opened)

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
        """A record of the command, carrying its id: a retry after a restart is answered
        from the journal, and the verifier re-issues each step under its own id."""
        rec = Record(type_, self.game_id, cmd.at, cmd.actor, {"command_id": cmd.command_id,
                                                                **data})  # fmt: skip
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


def reveal_slot(
    table: Sequence[T], pool: Sequence[T], unknown: T, slot: object, value: object, what: str
) -> int | None:
    """Where a revealed `value` goes in a hidden `table` (a shuffle of `pool`, `unknown`
    in the slots not revealed yet): the index of `slot` (1-based), or None for a slot out
    of range or already known (the step's rules refuse it). Refused when the pool has no
    such value left: the configured contents could not have hidden it there."""
    if isinstance(slot, bool) or not isinstance(slot, int) or not 1 <= slot <= len(table):
        return None
    if table[slot - 1] != unknown:
        return None
    left = sum(1 for v in pool if v == value) - sum(1 for v in table if v == value)
    if isinstance(value, bool) or value == unknown or left <= 0:
        raise StageError(f"{what} {slot} reveals {value!r}: the configured contents have no "
                         "such value left to hide there")  # fmt: skip
    return slot - 1


def replay_command(rec: Record, n: int) -> Command:
    """The command a recorded step stands for (its own id), as restore and verify re-issue it."""
    command_id = rec.data.get("command_id")
    if not isinstance(command_id, str) or not command_id:
        command_id = f"verify:{n}"
    return Command(command_id, Actor(rec.actor.user, rec.actor.role), rec.at)

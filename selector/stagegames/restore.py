"""A stage game rebuilt from its journal stream: after a restart, or for the verifier.

Why by re-running: a game's state is the fold of its host commands, and every record
carries the command's inputs and id, so re-issuing each recorded step (under its own
command id) on a game re-opened with the same seed gives back exactly the state, the
hidden table and the answered command ids: a host's retry after a kill -9 gets the
first answer. A record the rules and the seed would not make again is refused
(`StageError` naming it), so a restored game is always one the verifier would pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import date
from typing import Any

from selector.records import Record
from selector.session import CommandConflict
from selector.stagegames.bonus import BonusGame
from selector.stagegames.cars import CarFinal
from selector.stagegames.derive import STAGE_V1
from selector.stagegames.game import CLOSED, OPENED, StageError, StageGame, replay_command
from selector.stagegames.paddles import PaddleGame
from selector.stagegames.podium import PodiumGame
from selector.stagegames.safe import SafeGame

GAMES: dict[str, Any] = {
    PodiumGame.kind: PodiumGame,
    BonusGame.kind: BonusGame,
    PaddleGame.kind: PaddleGame,
    SafeGame.kind: SafeGame,
    CarFinal.kind: CarFinal,
}


def as_records(records: Iterable[Record | Mapping[str, Any]]) -> list[Record]:
    return [r if isinstance(r, Record) else Record.from_dict(dict(r)) for r in records]


def reopen(opened: Record, seed: bytes) -> StageGame:
    """The game as its `stage.opened` record configured it, opened again with `seed`."""
    d = opened.data
    cls = GAMES.get(d.get("kind", ""))
    if opened.type != OPENED or cls is None or d.get("derivation") != STAGE_V1:
        raise StageError(f"not a stage game's opening: {opened.type} {d.get('kind')!r}")
    if StageGame.commitment_of(seed) != d.get("commitment"):
        raise StageError(f"{opened.session_id}: the seed does not match the commitment")
    game: StageGame = cls.from_config(
        opened.session_id, d["draw_id"], date.fromisoformat(d["day"]), d["config"]
    )
    game.open(replay_command(opened, 0), seed, d.get("seed_from"))
    if game.records[0].data != d:
        raise StageError(f"{opened.session_id}: the opening does not follow from its config")
    return game


def restore_game(records: Iterable[Record | Mapping[str, Any]], seed: bytes) -> StageGame:
    """Every recorded step re-issued on the re-opened game; refuses one that differs."""
    recs = as_records(records)
    if not recs:
        raise StageError("a game's stream is empty")
    try:
        game = reopen(recs[0], seed)
    except (KeyError, TypeError, ValueError) as e:
        raise StageError(f"{recs[0].session_id}: the game cannot be rebuilt: {e}") from e
    for i, rec in enumerate(recs[1:], 1):
        before = len(game.records)
        try:
            if rec.type == CLOSED:
                game.close(replay_command(rec, i))
            else:
                game.replay(rec, replay_command(rec, i))
        except (StageError, CommandConflict, KeyError, TypeError, ValueError) as e:
            raise StageError(f"{game.game_id} record {i} ({rec.type}): {e}") from e
        made = game.records[before:]
        if len(made) != 1 or made[0].to_dict() != rec.to_dict():
            raise StageError(f"{game.game_id} record {i} ({rec.type}) is not what the rules "
                             "and the seed make")  # fmt: skip
    return game

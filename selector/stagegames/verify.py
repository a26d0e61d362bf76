"""Recompute every stage game from its records and revealed seed; name every mismatch.

Why by re-running: every reveal is a function of the seed (derivation stage-v1) and of
the contestants' choices, which the records carry. The verifier checks the revealed
seed against the commitment published at open, rebuilds the game from its `stage.opened`
config, derives the hidden table again and compares it to the one `stage.closed`
reveals, then re-issues each recorded choice and compares what the rules and the seed
give (the podium behind a randomiser, a box's symbol, a paddle's chances, a reveal's
prize, a guess against the code, the car's winner) with what was recorded. A changed
reveal, a choice out of turn, a prize the rules do not give: each is named by record
position. `verify_ledger` replays the prize ledger and `verify_show` checks that every
closed game's awards are in it.
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
from selector.stagegames.game import CLOSED, OPENED, Award, StageError, StageGame, replay_command
from selector.stagegames.ledger import PrizeLedger, ProgressiveRules
from selector.stagegames.paddles import PaddleGame
from selector.stagegames.podium import PodiumGame
from selector.stagegames.safe import SafeGame
from selector.verify import Mismatch

GAMES: dict[str, Any] = {
    PodiumGame.kind: PodiumGame,
    BonusGame.kind: BonusGame,
    PaddleGame.kind: PaddleGame,
    SafeGame.kind: SafeGame,
    CarFinal.kind: CarFinal,
}


def _records(records: Iterable[Record | Mapping[str, Any]]) -> list[Record]:
    return [r if isinstance(r, Record) else Record.from_dict(dict(r)) for r in records]


def _diff(made: Mapping[str, Any], said: Mapping[str, Any]) -> str:
    keys = sorted(set(made) | set(said))
    parts = [
        f"{k}: the seed and the rules give {made.get(k)!r}, the record says {said.get(k)!r}"
        for k in keys
        if made.get(k) != said.get(k)
    ]
    return "; ".join(parts)


def _rebuild(recs: list[Record], bad: list[Mismatch]) -> tuple[StageGame, Record] | None:
    """The game re-opened with the revealed seed, or None (with the reason in `bad`)."""
    if not recs or recs[0].type != OPENED:
        bad.append(Mismatch(0, None, "the stream does not begin with stage.opened"))
        return None
    opened = recs[0].data
    cls = GAMES.get(opened.get("kind", ""))
    if cls is None or opened.get("derivation") != STAGE_V1:
        bad.append(Mismatch(0, None, f"unknown game kind or derivation: {opened}"))
        return None
    closed = recs[-1]
    if closed.type != CLOSED or len(recs) < 2:
        bad.append(Mismatch(len(recs) - 1, None, "the game is not closed: no seed revealed"))
        return None
    try:
        seed = bytes.fromhex(closed.data["seed"])
    except (KeyError, TypeError, ValueError):
        bad.append(Mismatch(len(recs) - 1, None, "the revealed seed is not hex"))
        return None
    if StageGame.commitment_of(seed) != opened.get("commitment"):
        bad.append(Mismatch(len(recs) - 1, None, "the revealed seed does not match the commitment"))
        return None
    try:
        day = date.fromisoformat(opened["day"])
        game: StageGame = cls.from_config(recs[0].session_id, opened["draw_id"], day,
                                          opened["config"])  # fmt: skip
        game.open(replay_command(recs[0], 0), seed)
    except (StageError, KeyError, TypeError, ValueError) as e:
        bad.append(Mismatch(0, None, f"the game cannot be rebuilt from its open: {e}"))
        return None
    if game.records[0].data != opened:
        bad.append(Mismatch(0, None, _diff(game.records[0].data, opened)))
    if game.contents() != closed.data.get("contents"):
        bad.append(
            Mismatch(len(recs) - 1, None, "the revealed hidden table is not the one the seed gives")
        )
    return game, closed


def verify_game(records: Iterable[Record | Mapping[str, Any]]) -> list[Mismatch]:
    """Every mismatch in one closed game's stream (empty: the game is as the seed says)."""
    recs = _records(records)
    bad: list[Mismatch] = []
    rebuilt = _rebuild(recs, bad)
    if rebuilt is None:
        return bad
    game, closed = rebuilt
    for i, rec in enumerate(recs[1:-1], 1):
        if rec.session_id != game.game_id:
            bad.append(Mismatch(i, None, f"record of another stream {rec.session_id!r}"))
            continue
        before = len(game.records)
        try:
            game.replay(rec, replay_command(rec, i))
        except (StageError, CommandConflict) as e:
            bad.append(Mismatch(i, None, f"{rec.type}: the rules refuse it: {e}"))
            continue
        except (KeyError, TypeError, ValueError) as e:
            bad.append(Mismatch(i, None, f"{rec.type}: malformed record ({e!r})"))
            continue
        made = game.records[before:]
        if len(made) != 1 or made[0].type != rec.type or made[0].data != rec.data:
            bad.append(Mismatch(i, None, f"{rec.type}: {_diff(made[-1].data, rec.data)}"))
    n = len(recs) - 1
    try:
        game.close(replay_command(closed, n))
    except StageError as e:
        bad.append(Mismatch(n, None, f"closed too early: {e}"))
        return bad
    awards = [a.to_dict() for a in game.awards()]
    if awards != closed.data.get("awards"):
        bad.append(Mismatch(n, None, f"the awards are not the rules': {awards}"))
    return bad


def verify_ledger(
    records: Iterable[Record | Mapping[str, Any]], rules: ProgressiveRules | None = None
) -> tuple[PrizeLedger | None, list[Mismatch]]:
    """The ledger replayed (so the safe's value recomputed), or the first record refused."""
    recs = _records(records)
    try:
        return PrizeLedger.replay(recs, rules), []
    except StageError as e:
        return None, [Mismatch(0, None, str(e))]


def verify_show(
    games: Mapping[str, Iterable[Record | Mapping[str, Any]]],
    ledger_records: Iterable[Record | Mapping[str, Any]],
    rules: ProgressiveRules | None = None,
) -> dict[str, list[Mismatch]]:
    """Every game (by stream), the ledger, and every closed game's awards in the ledger."""
    out: dict[str, list[Mismatch]] = {}
    wanted: list[tuple[str, Award]] = []
    for stream, recs in games.items():
        rs = _records(recs)
        out[stream] = verify_game(rs)
        if rs and rs[-1].type == CLOSED:
            wanted += [(stream, Award.from_dict(a)) for a in rs[-1].data.get("awards", [])]
    ledger, bad = verify_ledger(ledger_records, rules)
    if ledger is not None:
        posted = {e.award for e in ledger.entries}
        bad += [
            Mismatch(0, None, f"{stream}: award {a.to_dict()} is not in the ledger")
            for stream, a in wanted
            if a not in posted
        ]
    out["ledger"] = bad
    return out

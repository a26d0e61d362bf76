"""Recompute every stage game from its records and revealed seed; name every mismatch.

Why by re-running: every reveal is a function of the seed (derivation stage-v1) and of
the contestants' choices, which the records carry. The verifier checks the revealed
seed against the commitment published at open, rebuilds the game from its `stage.opened`
config, derives the hidden table again and compares it to the one `stage.closed`
reveals, then re-issues each recorded choice and compares what the rules and the seed
give (the podium behind a randomiser, a box's symbol, a paddle's chances, a reveal's
prize, a guess against the code, the car's winner) with what was recorded. A changed
reveal, a choice out of turn, a prize the rules do not give: each is named by record
position. `verify_open_game` checks a game not closed yet as far as it can without the
seed (the config, the turns, every choice; see its docstring).
`verify_ledger` replays the prize ledger and `verify_show` checks that every closed
game's awards are in it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import date
from typing import Any

from selector.records import Record
from selector.session import CommandConflict
from selector.stagegames.derive import STAGE_V1, game_seed
from selector.stagegames.game import CLOSED, OPENED, Award, StageError, StageGame, replay_command
from selector.stagegames.ledger import ProgressiveRules, StageLedger
from selector.stagegames.restore import GAMES, as_records, reopen
from selector.verify import Mismatch

__all__ = ["GAMES", "verify_game", "verify_ledger", "verify_open_game", "verify_show"]
_records = as_records


def _diff(made: Mapping[str, Any], said: Mapping[str, Any]) -> str:
    keys = sorted(set(made) | set(said))
    parts = [
        f"{k}: the seed and the rules give {made.get(k)!r}, the record says {said.get(k)!r}"
        for k in keys
        if made.get(k) != said.get(k)
    ]
    return "; ".join(parts)


def _rebuild(
    recs: list[Record], bad: list[Mismatch], draw_seed: bytes | None
) -> tuple[StageGame, Record] | None:
    """The game re-opened with the revealed seed, or None (with the reason in `bad`)."""
    if not recs or recs[0].type != OPENED:
        bad.append(Mismatch(0, None, "the stream does not begin with stage.opened"))
        return None
    opened = recs[0].data
    if opened.get("kind", "") not in GAMES:
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
    if draw_seed is not None and game_seed(draw_seed, recs[0].session_id) != seed:
        bad.append(Mismatch(len(recs) - 1, None, "the game's seed is not the one derived from "
                            f"its draw's seed ({opened.get('seed_from')})"))  # fmt: skip
    try:
        game = reopen(recs[0], seed)
    except (StageError, KeyError, TypeError, ValueError) as e:
        bad.append(Mismatch(0, None, f"the game cannot be rebuilt from its open: {e}"))
        return None
    if game.contents() != closed.data.get("contents"):
        bad.append(
            Mismatch(len(recs) - 1, None, "the revealed hidden table is not the one the seed gives")
        )
    return game, closed


def verify_game(
    records: Iterable[Record | Mapping[str, Any]], draw_seed: bytes | None = None
) -> list[Mismatch]:
    """Every mismatch in one closed game's stream (empty: the game is as the seed says).

    With `draw_seed` (the revealed seed of the draw named in `seed_from`) the game's seed
    must also be the one derived from it (`derive.game_seed`)."""
    recs = _records(records)
    bad: list[Mismatch] = []
    rebuilt = _rebuild(recs, bad, draw_seed)
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


def verify_open_game(records: Iterable[Record | Mapping[str, Any]]) -> list[Mismatch]:
    """Every mismatch in a game not closed yet, whose seed is not revealed.

    Without the seed no reveal can be recomputed, but everything else can: the game is
    rebuilt from its `stage.opened` config (which must be what that config opens), and
    each recorded step is re-issued with what it revealed taken as the hidden content
    behind it (refused when the configured contents could not hide it: a podium twice,
    a fourth star, a prize not among the reveals). So the turn order, the contestant
    acting, each choice in range and never twice, and what follows from a reveal
    (counts, chances used, the prize kept, who may still try) are checked now; whether
    each reveal is the one the seed fixed is checked once the game closes."""
    recs = _records(records)
    if not recs or recs[0].type != OPENED:
        return [Mismatch(0, None, "the stream does not begin with stage.opened")]
    opened = recs[0].data
    cls = GAMES.get(opened.get("kind", ""))
    if cls is None or opened.get("derivation") != STAGE_V1:
        return [Mismatch(0, None, f"unknown game kind or derivation: {opened}")]
    commitment = opened.get("commitment")
    if not isinstance(commitment, str) or len(commitment) != 64:
        return [Mismatch(0, None, "the opening commits to no seed (no SHA-256 commitment)")]
    try:
        day = date.fromisoformat(opened["day"])
        game: StageGame = cls.from_config(recs[0].session_id, opened["draw_id"], day,
                                          opened["config"])  # fmt: skip
    except (StageError, KeyError, TypeError, ValueError) as e:
        return [Mismatch(0, None, f"the game cannot be rebuilt from its open: {e}")]
    if game.config() != opened["config"]:
        return [Mismatch(0, None, "the opening does not follow from its config")]
    game.open_unrevealed(recs[0])
    bad: list[Mismatch] = []
    for i, rec in enumerate(recs[1:], 1):
        if rec.session_id != game.game_id:
            bad.append(Mismatch(i, None, f"record of another stream {rec.session_id!r}"))
            continue
        before = len(game.records)
        try:
            game.adopt(rec)
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
    return bad


def verify_ledger(
    records: Iterable[Record | Mapping[str, Any]], rules: ProgressiveRules | None = None
) -> tuple[StageLedger | None, list[Mismatch]]:
    """The ledger replayed (so the safe's value recomputed), or the first record refused."""
    recs = _records(records)
    try:
        return StageLedger.replay(recs, rules), []
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

"""`raps verify` on the stage games (issue 19): from an exported journal, every reveal
is recomputed from the game's seed and that seed from its draw's; the cross-checks name
a phantom prize, a safe offered at another value, contestants who are not the draw's
winners, a vault shared among others, an award or a letter that is not what the game
gave, and growth at a draw that does not count."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from raps.audit import check, export_focus, export_session, read_database, read_export
from raps.games.audit import check_stage
from tests.stage_games_kit import D19, D21, D2130, show

pytestmark = [pytest.mark.asyncio]
Rows = dict[str, list[dict[str, Any]]]


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[dict[str, Any]]]:
    """A 19:00 draw (paddles; its first winner earns a car spot), a 21:00 draw (podiums,
    the safe not cracked) and the 21:30 vault share."""
    import asyncio

    tmp = tmp_path_factory.mktemp("stage-verify")
    url = f"sqlite:///{tmp / 'raps.db'}"

    async def run() -> list[dict[str, Any]]:
        async with show(url, tmp, players=16) as s:
            await s.draw_all(D19)
            await s.paddles(D19)
            await s.ok(f"{D19}/close")
            await s.draw_all(D21)
            await s.podium(D21)
            await s.safe(D21)
            await s.ok(f"{D21}/close")
            await s.draw_all(D2130)
            await s.ok(f"{D2130}/vault/share")
            await s.ok(f"{D2130}/close")
        return (await read_database(url))[1]

    return url, asyncio.run(run())


def _by_session(records: list[dict[str, Any]]) -> Rows:
    out: Rows = {}
    for r in records:
        out.setdefault(str(r["session_id"]), []).append(copy.deepcopy(r))
    return out


def _tampered(records: list[dict[str, Any]], change: Callable[[Rows], None]) -> list[str]:
    rows = _by_session(records)
    assert check_stage(rows) is not None and check_stage(rows).ok  # type: ignore[union-attr]
    change(rows)
    rep = check_stage(rows)
    assert rep is not None and not rep.ok
    return rep.lines()


def _first(rows: list[dict[str, Any]], type_: str) -> dict[str, Any]:
    return next(r for r in rows if r["type"] == type_)


async def test_fairness_is_checked_on_an_exported_journal(
    journal: tuple[str, list[dict[str, Any]]], tmp_path: Path
) -> None:
    url, _ = journal
    for stream, expect in (
        (f"stage:safe:{D21}", f"stage game stage:safe:{D21}: OK"),
        (f"draw:{D21}", f"stage game stage:podium:{D21}: OK"),
        (f"draw:{D19}", f"stage game stage:paddles:{D19}: OK"),  # with a car spot paid
    ):
        path = tmp_path / f"{stream.replace(':', '_')}.jsonl"
        path.write_text("\n".join(await export_session(url, stream)) + "\n")
        entries, records = read_export(path)
        report = check(entries, records, None, focus=export_focus(path))
        assert report.ok, report.lines()
        line = next(x for x in report.lines() if x.startswith(expect))
        if stream.startswith("draw:"):  # the draw's seed is in its export: the derivation
            assert f"seed derived from {stream}'s" in line, line
        # a reveal changed in the file: refused (the chain breaks, and the game with it)
        lines = path.read_text().splitlines()
        for i, raw in enumerate(lines):
            row = json.loads(raw)
            if row.get("record", {}).get("type") in ("safe.guess", "paddles.reveal"):
                data = row["record"]["data"]
                data["correct" if "correct" in data else "amount"] = 1
                lines[i] = json.dumps(row)
                break
        path.write_text("\n".join(lines) + "\n")
        entries, records = read_export(path)
        assert not check(entries, records, None, focus=export_focus(path)).ok


async def test_the_cross_checks_name_what_no_game_gave(
    journal: tuple[str, list[dict[str, Any]]],
) -> None:
    _, records = journal
    safe, podium, ledger = f"stage:safe:{D21}", f"stage:podium:{D21}", "stage-prizes"

    def phantom(rows: Rows) -> None:
        extra = copy.deepcopy(_first(rows[ledger], "stage.prize"))
        entries = sum(1 for r in rows[ledger] if r["type"] == "stage.prize") + 5  # + shares
        extra["data"] |= {"card": "6009999999999999", "command_id": "forged", "amount": 1_000,
                          "entry": entries + 1, "ref": "nothing"}  # fmt: skip
        rows[ledger].append(extra)

    assert any("a phantom" in x for x in _tampered(records, phantom))

    def other_value(rows: Rows) -> None:
        rows[safe][0]["data"]["config"]["safe_value"] += 100
        rows[safe][-1]["data"]["awards"] = rows[safe][-1]["data"]["awards"]

    assert any("the ledger offered the safe at" in x for x in _tampered(records, other_value))

    def strangers(rows: Rows) -> None:
        for stream in (podium, safe):
            cfg = rows[stream][0]["data"]["config"]
            old = cfg["winners"][0]
            cfg["winners"][0] = "6008888888888888"
            for r in rows[stream]:
                if r["data"].get("card") == old:
                    r["data"]["card"] = "6008888888888888"
            for a in rows[stream][-1]["data"]["awards"]:
                if a["card"] == old:
                    a["card"] = "6008888888888888"

    assert any("are not the draw's verified winners" in x for x in _tampered(records, strangers))

    def shared_elsewhere(rows: Rows) -> None:
        share = _first(rows[ledger], "stage.vault_shared")
        share["data"]["shares"][0]["card"] = "6007777777777777"

    assert any("not the draw's verified winners" in x for x in _tampered(records, shared_elsewhere))

    def more_for_one(rows: Rows) -> None:
        award = _first(rows[f"draw:{D21}"], "draw.awarded")
        award["data"]["lines"][0]["amount"] += 100
        award["data"]["prize"]["amount"] += 100

    assert any("is not what the stage gave" in x for x in _tampered(records, more_for_one))

    def letter(rows: Rows) -> None:
        _first(rows["prizes"], "prize.letter")["data"]["prizes"][0]["amount"] += 100

    assert any(x.startswith("  letter PL-") for x in _tampered(records, letter))

    def grows_at_the_share(rows: Rows) -> None:
        grow = copy.deepcopy(_first(rows[ledger], "stage.safe_draw"))
        grow["data"] |= {"draw_id": D2130, "kind": "vault_share", "command_id": "forged"}
        at = next(i for i, r in enumerate(rows[ledger]) if r["type"] == "stage.vault_shared")
        rows[ledger].insert(at, grow)

    assert any("does not grow the safe" in x or "does not follow" in x
               for x in _tampered(records, grows_at_the_share))  # fmt: skip


async def test_a_game_not_closed_yet_is_replayed_without_its_seed(
    journal: tuple[str, list[dict[str, Any]]],
) -> None:
    """The 21:00 podiums as they stood before their close: no seed to check the reveals
    with yet, but the opened config, the turns, every choice and the contestants are."""
    _, records = journal
    podium = f"stage:podium:{D21}"
    full = _by_session(records)
    rows = {f"draw:{D21}": full[f"draw:{D21}"], podium: full[podium][:-1]}
    rep = check_stage(rows)
    assert rep is not None and rep.ok, rep.lines()
    assert rep.lines() == [
        f"stage game {podium}: not closed yet; 5 step(s) replayed against its opened config "
        "and turn order (its reveals are checked against its seed once it closes)"
    ]

    def out_of_turn(rows: Rows) -> None:
        rows[podium][1], rows[podium][2] = rows[podium][2], rows[podium][1]

    lines = _tampered_open(rows, out_of_turn)
    assert lines[0].startswith(f"stage game {podium}: FAILED, not closed yet"), lines
    assert lines[1].startswith("  record 1: podium.chosen: the rules refuse it: it is "), lines

    def stranger(rows: Rows) -> None:
        old = rows[podium][0]["data"]["config"]["winners"][0]
        rows[podium][0]["data"]["config"]["winners"][0] = "6008888888888888"
        next(r for r in rows[podium] if r["data"].get("card") == old)["data"]["card"] = (
            "6008888888888888"
        )

    assert any("not the draw's verified winners" in x for x in _tampered_open(rows, stranger))


def _tampered_open(rows: Rows, change: Callable[[Rows], None]) -> list[str]:
    rows = copy.deepcopy(rows)
    change(rows)
    rep = check_stage(rows)
    assert rep is not None and not rep.ok
    return rep.lines()

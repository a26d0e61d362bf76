"""docs/fairness.md is complete enough to verify from: tests/docs_verifier.py, written from
that page alone and importing nothing of the project, gives the same verdict as `raps
verify` on real exports of a witnessed daemon run (a RAPS session, one with an anomaly, a
ticket draw), honest and with edits an insider might make (each re-chained, so that only
the draw's own checks can catch it)."""

from __future__ import annotations

import ast
import copy
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from raps.cli import main as raps_main
from raps.signing import SigningKey
from raps.store.journal import session_export
from raps.witness.app import create_witness_app
from raps.witness.log import WitnessLog
from raps.witness_client import WitnessClient
from tests.daemon_helpers import (
    SESSION,
    Clock,
    Handheld,
    card,
    client_for,
    floor_config,
    running_service,
    seat_players,
)
from tests.docs_verifier import verify_export
from tests.test_stage_api import EVENING, LATE, STAGE, Env, enter

HERE = Path(__file__).resolve().parent
ALLOWED = {"__future__", "hashlib", "hmac", "json", "datetime", "typing", "cryptography", "sys"}
EARLY = "S-early"
TOKEN = "docs-verifier-token-0123456789abcdef"
Rows = list[dict[str, Any]]


def test_the_docs_verifier_imports_nothing_of_the_project() -> None:
    tree = ast.parse((HERE / "docs_verifier.py").read_text("utf-8"))
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            roots.add((node.module or "").split(".")[0])
    assert roots <= ALLOWED, roots - ALLOWED


async def _exports(tmp_path: Path) -> dict[str, Path]:
    """A witnessed run: a session (verify, award, a void and a redraw), one with an early
    staff no-show (an anomaly), and a ticket draw; each exported as `raps export` does."""
    extra = STAGE.format(limit="per_draw", EVENING=EVENING, LATE=LATE)
    extra += f'\n[[sessions]]\nid = "{EARLY}"\npromotion = "raps"\n'
    extra += 'starts = "2026-04-25T12:00:00+02:00"\nrehearsal = true\n'  # beside the live one
    extra += "quotas = { slots = 1, tables = 0 }\n"
    token_file = tmp_path / "witness.token"
    token_file.write_text(TOKEN, encoding="ascii")
    extra += f'\n[witness]\nurl = "http://witness.test"\ntoken_file = "{token_file}"\n'
    cfg = floor_config(f"sqlite:///{tmp_path / 'raps.db'}", tmp_path, extra=extra)
    log = WitnessLog(tmp_path / "witness.db", SigningKey(hashlib.sha256(b"docs").digest()))
    app = create_witness_app(log, (hashlib.sha256(TOKEN.encode()).hexdigest(),))
    assert cfg.witness is not None
    async with running_service(cfg, Clock()) as service, client_for(service, cfg) as client:
        witness = WitnessClient(cfg.witness, cfg.site.id, httpx.ASGITransport(app=app))
        service.witness = service.stage.witness = witness
        ev = seat_players(service, slots=[(card(i), f"M0{i}") for i in range(1, 6)],
                          tables=[(card(9), "T1", 1)])  # fmt: skip
        hh = Handheld(client)
        assert (await hh.post("open")).status_code == 200
        for path, body in [("draw", {"kind": "slots"}), ("picks/1/verify", {}),
                           ("picks/1/award", {"amount": 5000, "kind": "cash", "envelope": "E1"}),
                           ("draw", {"kind": "tables"}), ("picks/2/void", {"reason": "wrong seat"}),
                           ("draw", {"kind": "slots"}), ("close", {"force": True})]:  # fmt: skip
            r = await hh.post(path, **body)
            assert r.status_code == 200, (path, r.text)
        early = Handheld(client, EARLY)
        for path in ("open", "draw", "picks/1/no-show", "close"):
            r = await early.post(path, **({"kind": "slots"} if path == "draw" else {}))
            assert r.status_code == 200, (path, r.text)
        env = Env(cfg, Clock(), service, client, ev=ev)
        players = dict([await enter(env, i) for i in range(20, 24)])
        assert (await env.host("open")).status_code == 200
        drawn = (await env.host("draw")).json()["picks"][0]
        r = await env.host("picks/1/present", presenter="winner", document="sa_id",
                           last_digits="1234", receipt=players[drawn["card"]])  # fmt: skip
        assert r.status_code == 200, r.text
        assert (await env.host("draw")).status_code == 200
        assert (await env.host("close", force=True)).status_code == 200
        out = {}
        for sid in (SESSION, EARLY, DRAW):
            lines = await session_export(service.journal, sid)
            assert lines is not None
            path = tmp_path / f"{sid.replace(':', '_')}.jsonl"
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
            out[sid] = path
        await witness.aclose()
    log.close()
    return out


def rows_of(path: Path) -> tuple[str, Rows]:
    head, *rest = path.read_text("utf-8").splitlines()
    return head, [json.loads(line) for line in rest]


def rechain(rows: Rows) -> None:
    """The chain made whole again after an edit (docs/fairness.md "Reading an export")."""
    for k, row in enumerate(rows):
        if k:
            row["prev"] = rows[k - 1]["hash"]
        rec = row["record"]
        data = {key: v for key, v in rec["data"].items() if key != "pool"}
        body = json.dumps({**rec, "data": data}, sort_keys=True, separators=(",", ":"),
                          ensure_ascii=False)  # fmt: skip
        raw = f'{{"prev":"{row["prev"]}","seq":{row["seq"]},"record":{body}}}'
        row["hash"] = hashlib.sha256(raw.encode()).hexdigest()


def first(rows: Rows, type_: str, n: int = 0) -> dict[str, Any]:
    return [r["record"]["data"] for r in rows if r["record"]["type"] == type_][n]


def another_winner(r: Rows) -> None:
    d = first(r, "pick.drawn")
    d["card"] = next(c for c in d["pool"] if c != d["card"])


def signature_removed(r: Rows) -> None:
    first(r, "pick.drawn")["witness"]["signature"] = None


def request_renumbered(r: Rows) -> None:
    first(r, "pick.requested", 1)["request"] = 5


def card_slipped_in(r: Rows) -> None:
    d = first(r, "pick.drawn", 2)
    d["pool"] = sorted([*d["pool"], "6004709999999999"])
    d["pool_size"] += 1


def seed_swapped(r: Rows) -> None:
    first(r, "session.closed")["seed"] = "00" * 32


def time_edited(r: Rows) -> None:  # not rechained: the chain names it
    r[1]["record"]["at"] = "2026-04-25T12:00:01+02:00"


def no_show_removed(r: Rows) -> None:
    r.remove(next(x for x in r if x["record"]["type"] == "pick.no_show"))


def another_ticket(r: Rows) -> None:
    d = first(r, "draw.picked")
    d["ticket"] = (d["ticket"] + 1) % d["bin_total"]


def late_entry_slipped_in(r: Rows) -> None:
    first(r, "draw.requested", 1)["changes"].append(["6004709999999999", 50])


DRAW = f"draw:{EVENING}"
EDITS: dict[str, tuple[str, Callable[[Rows], None], bool]] = {
    "another winner": (SESSION, another_winner, True),
    "signature removed": (SESSION, signature_removed, True),
    "request renumbered": (SESSION, request_renumbered, True),
    "a card slipped into a pool": (SESSION, card_slipped_in, True),
    "the seed swapped": (SESSION, seed_swapped, True),
    "a time edited": (SESSION, time_edited, False),
    "a no-show removed": (EARLY, no_show_removed, True),
    "another ticket": (DRAW, another_ticket, True),
    "a late entry slipped in": (DRAW, late_entry_slipped_in, True),
}


@pytest.mark.asyncio
async def test_the_docs_verifier_agrees_with_raps_verify(tmp_path: Path) -> None:
    exports = await _exports(tmp_path)
    verdicts = {"OK": 0, "ANOMALIES": 3, "FAILED": 1}
    cases: list[tuple[str, Path]] = list(exports.items())
    for name, (sid, edit, again) in EDITS.items():
        head, rows = rows_of(exports[sid])
        rows = copy.deepcopy(rows)
        edit(rows)
        if again:
            rechain(rows)
        path = tmp_path / f"edit-{len(cases)}.jsonl"
        path.write_text("\n".join([head, *(json.dumps(r) for r in rows)]) + "\n", "utf-8")
        cases.append((name, path))
    seen = []
    for name, path in cases:
        ours, why = verify_export(str(path))
        theirs = raps_main(["verify", str(path)])
        assert verdicts[ours] == theirs, (name, ours, why, theirs)
        seen.append((name, ours))
    want = {SESSION: "OK", EARLY: "ANOMALIES", DRAW: "OK"}
    assert dict(seen) == {**want, **{name: "FAILED" for name in EDITS}}, seen

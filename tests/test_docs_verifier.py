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
from selector.events import Tier
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


class Hooked(httpx.AsyncBaseTransport):
    """The witness's transport, with a hook on the next signing request: it may change
    the floor meanwhile, or answer for the witness (a refusal, an outage)."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner
        self.next_sign: Callable[[], httpx.Response | None] | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        hook = self.next_sign if request.url.path == "/v1/sign" else None
        if hook is not None:
            self.next_sign = None
            answer = hook()
            if answer is not None:
                return answer
        return await self.inner.handle_async_request(request)


def _unreachable() -> httpx.Response:
    raise httpx.ConnectError("the witness's host is down (the test)")


async def _early_session(client: httpx.AsyncClient, hooked: Hooked, pull: Callable[[], None],
                         seat: Callable[[], None]) -> None:  # fmt: skip
    """EARLY (a promotion whose draws may fall back): an early staff no-show; a request
    the witness refuses, abandoned for a tables draw; a pick drawn while the witness is
    unreachable (its fallback); every slot player leaving while the witness signs (each
    winner's re-check fails, then no one is eligible); a pick drawn after it (the pick
    number the no_eligible did not use up)."""
    early = Handheld(client, EARLY)
    steps: list[tuple[str, dict[str, Any], int, Callable[[], httpx.Response | None] | None]] = [
        ("open", {}, 200, None),
        ("draw", {"kind": "slots"}, 200, None),
        ("picks/1/no-show", {}, 200, None),
        ("draw", {"kind": "slots"}, 409, lambda: httpx.Response(409, json={"detail": "no"})),
        ("draw", {"kind": "tables"}, 200, None),  # the slots request abandoned
        ("draw", {"kind": "slots"}, 200, _unreachable),  # drawn without the witness
        ("draw", {"kind": "slots"}, 200, pull),  # re-checks fail: no_eligible
    ]
    for path, body, status, hook in steps:
        hooked.next_sign = hook
        r = await early.post(path, **body)
        assert r.status_code == status, (path, r.text)
    seat()
    for path, body in [("draw", {"kind": "slots"}), ("close", {"force": True})]:
        r = await early.post(path, **body)
        assert r.status_code == 200, (path, r.text)


async def _exports(tmp_path: Path) -> dict[str, Path]:
    """A witnessed run: a session (verify, award, a void and a redraw), one with anomalies
    (`_early_session`: an early no-show, an abandoned request, a fallback pick, failed
    re-checks and a no_eligible), and a ticket draw; each exported as `raps export` does."""
    extra = STAGE.format(limit="per_draw", EVENING=EVENING, LATE=LATE)
    extra += '\n[[promotions]]\nid = "early"\nwitness_fallback = true\n'
    extra += f'\n[[sessions]]\nid = "{EARLY}"\npromotion = "early"\n'
    extra += 'starts = "2026-04-25T12:00:00+02:00"\nrehearsal = true\n'  # beside the live one
    extra += "quotas = { slots = 2, tables = 1 }\n"
    token_file = tmp_path / "witness.token"
    token_file.write_text(TOKEN, encoding="ascii")
    extra += f'\n[witness]\nurl = "http://witness.test"\ntoken_file = "{token_file}"\n'
    cfg = floor_config(f"sqlite:///{tmp_path / 'raps.db'}", tmp_path, extra=extra)
    log = WitnessLog(tmp_path / "witness.db", SigningKey(hashlib.sha256(b"docs").digest()))
    app = create_witness_app(log, (hashlib.sha256(TOKEN.encode()).hexdigest(),))
    assert cfg.witness is not None
    async with running_service(cfg, Clock()) as service, client_for(service, cfg) as client:
        hooked = Hooked(httpx.ASGITransport(app=app))
        assert service.witness is not None  # its policy: each promotion's own fallback
        witness = WitnessClient(cfg.witness, cfg.site.id, hooked, service.witness.policy)
        service.witness = service.stage.witness = witness
        slots = [(card(i), f"M0{i}") for i in range(1, 6)]
        ev = seat_players(service, slots=slots, tables=[(card(9), "T1", 1)])
        hh = Handheld(client)
        assert (await hh.post("open")).status_code == 200
        for path, body in [("draw", {"kind": "slots"}), ("picks/1/verify", {}),
                           ("picks/1/award", {"amount": 5000, "kind": "cash", "envelope": "E1"}),
                           ("draw", {"kind": "tables"}), ("picks/2/void", {"reason": "wrong seat"}),
                           ("draw", {"kind": "slots"}), ("close", {"force": True})]:  # fmt: skip
            r = await hh.post(path, **body)
            assert r.status_code == 200, (path, r.text)

        def pull() -> None:  # every slot player leaves their machine
            assert service.ingest([ev.card_out(m, c) for c, m in slots], "test") == len(slots)

        def seat() -> None:  # a player sits down and plays: slots have an eligible player
            plays = [ev.game("M07", wager=1000) for _ in range(60)]
            batch = [ev.player(card(7), tier=Tier.JACK), ev.card_in("M07", card(7)), *plays]
            assert service.ingest(batch, "test") == len(batch)

        await _early_session(client, hooked, pull, seat)
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


def recheck_removed(r: Rows) -> None:
    r.remove(next(x for x in r if x["record"]["type"] == "pick.recheck_failed"))


def no_eligible_removed(r: Rows) -> None:
    r.remove(next(x for x in r if x["record"]["type"] == "pick.no_eligible"))


def fallback_signed(r: Rows) -> None:  # a fallback pick given another's signature
    drawn = [x["record"]["data"] for x in r if x["record"]["type"] == "pick.drawn"]
    unsigned = next(d for d in drawn if d["witness"]["signature"] is None)
    unsigned["witness"]["signature"] = drawn[0]["witness"]["signature"]


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
    "a failed re-check removed": (EARLY, recheck_removed, True),
    "a no_eligible removed": (EARLY, no_eligible_removed, True),
    "a fallback pick signed": (EARLY, fallback_signed, True),
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
    _, why = verify_export(str(exports[EARLY]))  # what the docs alone make of EARLY
    assert any("abandoned" in w for w in why), why
    assert any("without the witness's signature" in w for w in why), why
    early = [r["record"] for r in rows_of(exports[EARLY])[1]]
    failed = [r["data"]["pick"] for r in early if r["type"] == "pick.recheck_failed"]
    none_left = first([{"record": r} for r in early], "pick.no_eligible")["pick"]
    drawn = [r["data"]["pick"] for r in early if r["type"] == "pick.drawn"]
    assert failed and set(failed) == {none_left} and drawn[-1] == none_left, early
    want = {SESSION: "OK", EARLY: "ANOMALIES", DRAW: "OK"}
    assert dict(seen) == {**want, **{name: "FAILED" for name in EDITS}}, seen

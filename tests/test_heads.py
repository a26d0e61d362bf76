"""Signed heads and commitments (issue 17 item 7): what an inspector captures outside
the casino, and how `raps verify --head FILE --site-key HEX` holds a journal to it.

- the daemon's MQTT messages after a commit: every draw event carries the signed head,
  the head is retained per session and site-wide, the commitment retained per session,
  each signed by the site's head key and checked from its public key alone;
- a journal cut back or rewritten after the inspector captured them fails with exit 1
  (the unsigned, overwritten head topic was all there was before), on SQLite and
  PostgreSQL; a forged signature or a capture from another key fails too;
- `raps keys public` prints the key the regulator pins.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from raps import cli
from raps.chain import Head, canonical_json
from raps.heads import COMMITMENT_TYPE, HEAD_TYPE, check_signed
from raps.signing import SigningKey, create_signing_key_file
from selector.signatures import valid
from tests.daemon_helpers import (
    SESSION,
    SITE,
    Clock,
    auth,
    card,
    client_for,
    floor_config,
    running_service,
    seat_players,
)
from tests.test_journal import sql

KEY = SigningKey(bytes(range(32)))


class Captured:
    """A publisher that keeps what it is given (the broker, as a subscriber sees it)."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, dict[str, Any], bool]] = []

    async def publish(self, topic: str, payload: dict[str, Any], retain: bool = False) -> None:
        self.messages.append((topic, json.loads(json.dumps(payload)), retain))

    def on(self, suffix: str) -> list[tuple[dict[str, Any], bool]]:
        return [(p, r) for t, p, r in self.messages if t.endswith(suffix)]


def signature_holds(obj: dict[str, Any], key: SigningKey = KEY) -> bool:
    body = {k: v for k, v in obj.items() if k != "signature"}
    return valid(key.public_hex, canonical_json(body).encode(), obj["signature"])


def verify(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = cli.main(["verify", *argv])
    out = capsys.readouterr()
    return code, out.out + out.err


async def draw_with_heads(db_url: str, tmp_path: Path) -> tuple[Captured, Any, Head]:
    """The real service with a head key and a publisher: open, draw; what it published,
    the API's head and the journal head."""
    cfg = floor_config(db_url, tmp_path)
    clock, mqtt = Clock(), Captured()
    async with (
        running_service(cfg, clock, publisher=mqtt, head_key=KEY) as service,
        client_for(service, cfg) as client,
    ):
        seat_players(service, slots=[(card(i), f"M0{i}") for i in range(1, 4)])
        for n, (path, body) in enumerate([("open", {}), ("draw", {"kind": "slots"})]):
            r = await client.post(f"/api/sessions/{SESSION}/{path}",
                                  json={"command_id": f"c-{n}", **body},
                                  headers=auth("marketing"))  # fmt: skip
            assert r.status_code == 200, r.text
        api = (await client.get("/api/journal/head", headers=auth("auditor"))).json()
        await service.journal.settle()
        assert service.journal.head is not None
        assert r.json()["journal_head"] == {
            "seq": service.journal.head.seq, "hash": service.journal.head.hash
        }  # fmt: skip
        opened = service.sessions[SESSION].records[0].data["commitment"]
        return mqtt, (api, opened), service.journal.head


def test_heads_and_commitments_are_signed_published_and_hold_the_journal(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mqtt, (api, opened), head = asyncio.run(draw_with_heads(db_url, tmp_path))
    events = mqtt.on(f"/draws/{SESSION}/events")
    assert [e["type"] for e, _ in events] == ["session.opened", "pick.requested", "pick.drawn"]
    assert all(not retained and signature_holds(e["head"]) for e, retained in events)
    last = events[-1][0]["head"]
    assert {k: last[k] for k in ("type", "site", "seq", "hash", "key_id")} == {
        "type": HEAD_TYPE, "site": SITE, "seq": head.seq, "hash": head.hash,
        "key_id": KEY.key_id,
    }  # fmt: skip
    assert mqtt.on(f"/draws/{SESSION}/head")[-1] == (last, True)
    site_wide = mqtt.on(f"/{SITE}/journal/head")
    assert site_wide[-1][1] and site_wide[-1][0]["seq"] == head.seq  # retained, the newest
    assert all(signature_holds(h) for h, _ in site_wide)
    (commitment, retained), = mqtt.on(f"/draws/{SESSION}/commitment")  # fmt: skip
    assert retained and signature_holds(commitment)
    assert (commitment["type"], commitment["commitment"]) == (COMMITMENT_TYPE, opened)
    assert api["signed"]["seq"] == head.seq and signature_holds(api["signed"])

    # what an inspector captured: every event line, the API's answer, the commitment
    capture = tmp_path / "capture.jsonl"
    lines = [json.dumps(e) for e, _ in events] + [json.dumps(api), json.dumps(commitment)]
    capture.write_text("\n".join(lines) + "\n")
    code, out = verify(capsys, db_url, "--head", str(capture), "--site-key", KEY.public_hex)
    assert code == 3, out  # valid; the session is still open (an anomaly)
    assert "heads: OK (4 signed by site test-casino, each in the journal)" in out, out

    # the tail cut after the capture: a valid chain, but not the one the heads signed
    sql(db_url, "DELETE FROM journal WHERE seq = ?", head.seq)
    code, out = verify(capsys, db_url, "--head", str(capture), "--site-key", KEY.public_hex)
    assert code == 1 and "chain: OK" in out, out
    assert (
        f"signed head {head.seq}:{head.hash[:16]}... is not in the journal, which ends at "
        f"entry {head.seq - 1}: it was cut back or rewritten" in out
    ), out

    # a capture checked with another key, and a forged signature, prove nothing
    other = create_signing_key_file(tmp_path / "other.key")
    code, out = verify(capsys, db_url, "--head", str(capture), "--site-key", other.public_hex)
    assert code == 1 and "not the site's signature" in out, out


def test_check_signed_names_each_problem() -> None:
    """On hand-made entries: a rewritten entry, a forged head, a commitment whose entry is
    not its session's open, heads of two sites, lines that hold nothing signed."""
    from raps.chain import link
    from raps.heads import HeadSigner

    records: list[dict[str, Any]] = [
        {"type": "session.opened", "session_id": "S", "at": "2026-04-25T18:00:00+02:00",
         "actor": {"user": "ann", "role": "marketing"}, "data": {"commitment": "c0"}},
        {"type": "pick.requested", "session_id": "S", "at": "2026-04-25T18:00:05+02:00",
         "actor": {"user": "ann", "role": "marketing"}, "data": {"pick": 1}},
    ]  # fmt: skip
    entries = list(link(records, None))
    signer = HeadSigner(KEY, "gh", Clock())
    good = signer.head(Head(2, entries[1].hash))
    rewritten = signer.head(Head(1, "ab" * 32))
    forged = {**good, "seq": 1}
    elsewhere = HeadSigner(KEY, "gr", Clock()).head(Head(1, entries[0].hash))
    from selector.records import Record

    opened = Record.from_dict(records[0])
    commitment = signer.commitment(opened, Head(1, entries[0].hash))
    wrong = signer.commitment(opened, Head(2, entries[1].hash))
    lines = [(1, good), (2, good), (3, {"head": rewritten}), (4, forged), (5, commitment),
             (6, wrong), (7, elsewhere), (8, {"seq": 1}), (9, ValueError("not JSON"))]  # fmt: skip
    rep = check_signed(lines, KEY.public_hex, entries, records)
    assert rep.checked == 6  # line 2 repeats line 1
    assert rep.problems == [
        f"line 3: signed head 1:{'ab' * 8}...: the journal's entry 1 is another one: it was "
        "rewritten",
        f"line 4: the signature does not match key {KEY.key_id}: not the site's signature",
        "line 6: signed commitment of S: its entry is not that session's open",
        "line 8: no signed head or commitment",
        "line 9: not JSON",
        "signed heads of more than one site: ['gh', 'gr']",
    ]
    # in a one-session export, another session's open is links only: noted, not failed
    opaque: list[dict[str, Any]] = [{"type": "context", "session_id": "S"}, records[1]]
    rep = check_signed([(1, commitment)], KEY.public_hex, entries, opaque)
    assert rep.problems == [] and rep.notes == [
        "line 1: signed commitment 1: another stream's entry here, its hash checked only"
    ]


def test_keys_public_prints_the_head_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = create_signing_key_file(tmp_path / "head.key")
    cfg = tmp_path / "raps.toml"
    cfg.write_text(
        f'[site]\nid = "gh"\n[credentials]\nseed_key_file = "{tmp_path / "seed.key"}"\n'
        '[floor.simulate]\nmachines = 2\ntables = 0\nplayers = 1\n[[promotions]]\nid = "raps"\n'
    )
    assert cli.main(["keys", "public", "--config", str(cfg)]) == 0
    out = capsys.readouterr()
    assert out.out == f"{key.public_hex}\n" and key.key_id in out.err
    (tmp_path / "head.key").unlink()
    assert cli.main(["keys", "public", "--config", str(cfg)]) == 1
    assert "cannot read the head key file" in capsys.readouterr().err


def test_a_file_of_heads_needs_the_site_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capture = tmp_path / "heads.jsonl"
    capture.write_text("{}\n")
    db = f"sqlite:///{tmp_path / 'raps.db'}"
    code, out = verify(capsys, db, "--head", str(capture))
    assert code == 2 and "needs --site-key HEX (raps keys public)" in out
    code, out = verify(capsys, db, "--head", str(capture), "--site-key", "12")
    assert code == 2 and "a public key is 64 hex digits" in out
    code, out = verify(capsys, db, "--head", str(tmp_path / "none.jsonl"))
    assert code == 2 and "--head is SEQ:SHA256HEX or a file of signed heads" in out

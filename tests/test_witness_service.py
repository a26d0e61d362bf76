"""The witness started for real (`raps witness run`, its own key, log and port) beside the
daemon's Service, on SQLite and PostgreSQL: a RAPS session and a ticket draw are witnessed
end to end and `raps verify` checks every signature against the pinned key and the
witness's own log; a witness that cannot be reached refuses the draw until it is back (the
same request then drawn), or, where the config allows, the pick goes unwitnessed and verify
reports it; and an insider who deletes the tail request to draw again is refused by the
witness and shown by its log.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from raps.audit import check, read_columns, read_database
from raps.config import Config
from raps.service import Service
from tests.builders import Events
from tests.daemon_helpers import (
    SESSION,
    Clock,
    Handheld,
    auth,
    card,
    client_for,
    floor_config,
    running_service,
    seat_players,
)
from tests.test_stage_api import EVENING, LATE, STAGE, Env, enter

pytestmark = pytest.mark.asyncio
ROOT = Path(__file__).resolve().parent.parent
SLOTS = [(card(i), f"M0{i}") for i in range(1, 6)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Witness:
    """A `raps witness` process: its folder, port, token and public key."""

    folder: Path
    port: int
    token: str
    proc: subprocess.Popen[bytes] | None = None
    public_key: str = ""

    @property
    def config(self) -> Path:
        return self.folder / "witness.toml"

    def start(self) -> None:
        self.folder.mkdir(exist_ok=True)
        digest = hashlib.sha256(self.token.encode()).hexdigest()
        self.config.write_text(
            f'[witness]\nhost = "127.0.0.1"\nport = {self.port}\n'
            f'database = "{self.folder / "witness.db"}"\nkey_file = "{self.folder / "key"}"\n'
            f'token_sha256 = ["{digest}"]\n[logging]\nlevel = "warning"\n',
            encoding="utf-8",
        )
        ready = self.folder / "ready.json"
        ready.unlink(missing_ok=True)
        log = (self.folder / "witness.log").open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "raps.cli", "witness", "run", "--config", str(self.config),
             "--create-key", "--ready-file", str(ready)],
            cwd=ROOT, stdout=log, stderr=log,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while not ready.exists():
            assert self.proc.poll() is None, (self.folder / "witness.log").read_text()
            assert time.monotonic() < deadline, "the witness did not start in 30 s"
            time.sleep(0.05)
        self.public_key = json.loads(ready.read_text())["public_key"]

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=30)

    def export(self, session_id: str) -> list[dict[str, Any]]:
        out = subprocess.run(
            [sys.executable, "-m", "raps.cli", "witness", "export", session_id,
             "--config", str(self.config)],
            cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
        return [json.loads(line) for line in out.stdout.splitlines()]

    def section(self, tmp: Path, fallback: bool = False) -> str:
        token_file = tmp / "witness.token"
        token_file.write_text(self.token + "\n", encoding="ascii")
        return (
            f'\n[witness]\nurl = "http://127.0.0.1:{self.port}"\ntoken_file = "{token_file}"\n'
            f"timeout_seconds = 2.0\nfallback = {'true' if fallback else 'false'}\n"
        )


@pytest.fixture
def witness(tmp_path: Path) -> Iterator[Witness]:
    w = Witness(tmp_path / "witness", _free_port(), secrets.token_urlsafe(32))
    w.start()
    yield w
    w.stop()


@dataclass
class Daemon:
    cfg: Config
    service: Service
    client: httpx.AsyncClient
    hh: Handheld
    ev: Events


@asynccontextmanager
async def daemon(
    db_url: str, tmp_path: Path, w: Witness, fallback: bool = False, own: bool | None = None
) -> AsyncIterator[Daemon]:
    """`fallback`: the site's `[witness] fallback`; `own`: the promotion's (None: none)."""
    extra = STAGE.format(limit="per_draw", EVENING=EVENING, LATE=LATE) + w.section(
        tmp_path, fallback
    )
    cfg = floor_config(db_url, tmp_path, extra=extra)
    promotions = tuple(
        p.model_copy(update={"witness_fallback": own}) for p in cfg.promotion_entries
    )
    cfg = cfg.model_copy(update={"promotion_entries": promotions})
    async with running_service(cfg, Clock()) as service, client_for(service, cfg) as client:
        ev = seat_players(service, slots=SLOTS)
        yield Daemon(cfg, service, client, Handheld(client), ev)


async def verify(d: Daemon, w: Witness, *streams: str, key: str | None = None) -> Any:
    url = d.cfg.storage.url
    entries, records = await read_database(url)
    log = [line for s in streams for line in w.export(s)]
    return check(entries, records, None, from_genesis=True, columns=await read_columns(url),
                 witness_key=key or w.public_key, witness_log=log)  # fmt: skip


async def test_a_session_and_a_ticket_draw_are_witnessed_end_to_end(
    db_url: str, tmp_path: Path, witness: Witness
) -> None:
    async with daemon(db_url, tmp_path, witness) as d:
        assert (await d.hh.post("open")).status_code == 200
        for _ in range(2):
            r = await d.hh.post("draw", kind="slots")
            assert r.status_code == 200, r.text
            n = r.json()["pick"]["pick"]
            assert (await d.hh.post(f"picks/{n}/verify")).status_code == 200
        assert (await d.hh.post("close", force=True)).status_code == 200
        env = Env(d.cfg, Clock(), d.service, d.client, ev=d.ev)
        for i in range(6, 10):
            await enter(env, i)
        assert (await env.host("open")).status_code == 200
        r = await env.host("draw")
        assert r.status_code == 200, r.text
        assert (await env.host("close", force=True)).status_code == 200
        report = await verify(d, witness, SESSION, f"draw:{EVENING}")
        assert report.ok and report.exit_code == 0, report.lines()
        recs = [e.record for e in await d.service.journal.session_entries(SESSION)]
        assert recs[0]["data"]["witness"]["public_key"] == witness.public_key
        drawn = [r["data"] for r in recs if r["type"] == "pick.drawn"]
        assert all(x["witness"]["signature"] for x in drawn) and len(drawn) == 2
        other = "11" * 32  # an inspector who pinned another key: tampering
        assert not (await verify(d, witness, SESSION, key=other)).ok


async def test_an_unreachable_witness_refuses_the_draw_until_it_is_back(
    db_url: str, tmp_path: Path, witness: Witness
) -> None:
    async with daemon(db_url, tmp_path, witness) as d:
        assert (await d.hh.post("open")).status_code == 200
        witness.stop()
        r = await d.hh.post("draw", kind="slots")
        assert r.status_code == 503 and "did not answer" in r.json()["detail"], r.text
        witness.start()  # the same key, log and port
        again = await d.hh.post("draw", kind="slots")
        assert again.status_code == 200, again.text
        recs = [e.record for e in await d.service.journal.session_entries(SESSION)]
        assert [r["data"]["request"] for r in recs if r["type"] == "pick.requested"] == [1]
        assert (await d.hh.post("close", force=True)).status_code == 200
        report = await verify(d, witness, SESSION)
        assert report.exit_code == 0, report.lines()


async def test_with_a_fallback_the_pick_goes_unwitnessed_and_is_an_anomaly(
    db_url: str, tmp_path: Path, witness: Witness
) -> None:
    async with daemon(db_url, tmp_path, witness, fallback=True) as d:
        assert (await d.hh.post("open")).status_code == 200
        witness.stop()
        r = await d.hh.post("draw", kind="slots")
        assert r.status_code == 200, r.text
        assert (await d.hh.post("close", force=True)).status_code == 200
        witness.start()
        report = await verify(d, witness, SESSION)
        assert report.ok and report.exit_code == 3, report.lines()
        assert any("without the witness's signature" in line for line in report.lines())


@pytest.mark.parametrize(("site", "own"), [(False, True), (True, False)])
async def test_a_promotion_s_own_fallback_setting_overrides_the_site_s(
    db_url: str, tmp_path: Path, witness: Witness, site: bool, own: bool
) -> None:
    """The RAPS session and the ticket draw of a promotion (`witness_fallback`) fall back,
    or not, as it says whatever `[witness] fallback` says; its choice is in each opening
    record, and verify holds the picks to it."""
    async with daemon(db_url, tmp_path, witness, fallback=site, own=own) as d:
        env = Env(d.cfg, Clock(), d.service, d.client, ev=d.ev)
        for i in range(6, 10):
            await enter(env, i)
        assert (await d.hh.post("open")).status_code == 200
        assert (await env.host("open")).status_code == 200
        for stream in (SESSION, f"draw:{EVENING}"):
            opened = (await d.service.journal.session_entries(stream))[0].record
            assert opened["data"]["witness"]["fallback"] is own, opened
        witness.stop()
        drawn = await d.hh.post("draw", kind="slots")
        picked = await env.host("draw")
        for r in (drawn, picked):
            if own:
                assert r.status_code == 200, r.text
            else:
                assert r.status_code == 503 and "did not answer" in r.json()["detail"], r.text
        witness.start()
        if not own:  # the requests were kept: drawn now, witnessed
            assert (await d.hh.post("draw", kind="slots")).status_code == 200
            assert (await env.host("draw")).status_code == 200
        assert (await d.hh.post("close", force=True)).status_code == 200
        assert (await env.host("close", force=True)).status_code == 200
        report = await verify(d, witness, SESSION, f"draw:{EVENING}")
        assert report.ok and report.exit_code == (3 if own else 0), report.lines()
        unwitnessed = [line for line in report.lines() if "without the witness's signature" in line]
        assert len(unwitnessed) == (2 if own else 0), report.lines()


# a trigger that vetoes every winner's commit: SQLite's, PostgreSQL's
VETO_SQLITE = (
    "CREATE TRIGGER veto BEFORE INSERT ON journal WHEN NEW.type = 'pick.drawn' "
    "BEGIN SELECT RAISE(ABORT, 'vetoed'); END",
)
VETO_POSTGRESQL = (
    "CREATE FUNCTION veto() RETURNS trigger LANGUAGE plpgsql AS "
    "$$ BEGIN RAISE EXCEPTION 'vetoed'; END $$",
    "CREATE TRIGGER veto BEFORE INSERT ON journal FOR EACH ROW "
    "WHEN (NEW.type = 'pick.drawn') EXECUTE FUNCTION veto()",
)


async def test_deleting_the_tail_request_to_draw_again_is_refused_and_shown(
    db_url: str, tmp_path: Path, witness: Witness
) -> None:
    """A trigger vetoes the winner's commit after the witness signed request 1; the DB
    admin deletes the request row (and, on the daemon's host, its head mark) and restarts
    the daemon to draw again: the witness refuses request 1 with another entry, and its log
    shows the request the journal lost."""
    url = db_url
    async with daemon(url, tmp_path, witness) as d:
        assert (await d.hh.post("open")).status_code == 200
        sqlite = d.service.engine.dialect.name == "sqlite"
        async with d.service.engine.begin() as conn:
            for sql in VETO_SQLITE if sqlite else VETO_POSTGRESQL:
                await conn.execute(text(sql))
        assert (await d.hh.post("draw", kind="slots")).status_code == 503
        async with d.service.engine.begin() as conn:
            await conn.execute(text("DROP TRIGGER veto" + ("" if sqlite else " ON journal")))
            await conn.execute(text("DELETE FROM journal WHERE type = 'pick.requested'"))
        # an insider on the daemon's host too: its head mark deleted, so the daemon does not
        # refuse the cut journal itself (raps.store.headmark); the witness still does
        await d.service.journal.settle()
        assert d.service.journal.mark is not None
        d.service.journal.mark.path.unlink()
    async with daemon(url, tmp_path, witness) as d:  # restarted on the edited journal
        r = await d.hh.post("draw", "cmd-again", kind="slots")
        assert r.status_code == 409 and "signed once" in r.json()["detail"], r.text
        report = await verify(d, witness, SESSION)
        assert not report.ok
        assert any("WITNESS LOG" in line and "request 1" in line for line in report.lines())
    assert os.path.exists(tmp_path / "witness" / "witness.db")


async def test_the_witness_process_refuses_a_big_body_before_its_token(witness: Witness) -> None:
    """`raps witness run` serves the app with its body limit: 413, not 401, not a read."""
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{witness.port}", timeout=30) as c:
        r = await c.post("/v1/sign", content=b" " * (1 << 20),
                         headers={"X-Forwarded-For": "203.0.113.9"})  # fmt: skip
        assert r.status_code == 413, r.text
        assert (await c.post("/v1/sign", json={})).status_code == 401


async def test_a_promotion_s_fallback_is_changed_through_its_definition(tmp_path: Path) -> None:
    """The calendar's definition API sets it (an admin's change applies at once): the
    next draw of the promotion opens with it. No witness needs to run for that."""
    w = Witness(tmp_path / "witness", _free_port(), "never-started-token")
    cfg = floor_config(f"sqlite:///{tmp_path / 'raps.db'}", tmp_path, extra=w.section(tmp_path))
    async with running_service(cfg, Clock()) as service, client_for(service, cfg) as client:
        assert service.witness is not None and service.witness.fallback("raps") is False
        body = {"command_id": "def-1", "reason": "the witness's host is across town",
                "definition": {"name": "RAPS", "witness_fallback": True}}  # fmt: skip
        r = await client.post("/api/schedule/promotions/raps/definition", json=body,
                              headers=auth("admin"))  # fmt: skip
        assert r.status_code == 200, r.text
        assert service.witness.fallback("raps") is True
        assert service.floor.promotion("raps").witness_fallback is True

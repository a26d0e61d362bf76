"""Ticket draws on stage under kill -9: a prize is recorded once, a pick is never redone.

The real daemon (`raps run`) runs as a subprocess on SQLite and on PostgreSQL with one
ticket draw whose entries are open now; a kiosk enters players (complimentary tickets),
then the stage host runs the draw over HTTP: open, draw, present, award, for every
winner. The daemon is killed with SIGKILL (a start costs seconds, so each kill is chosen,
KILLS): once between two commands (the kiosk's entries, then the draw opened by the
restarted daemon), and once while each kind of host command that follows is in flight:
a draw, a presentation, an award by position, an award from a device, the close (its
answer lost, committed or not: the kill lands after a delay drawn from a seeded
generator, RAPS_STAGE_CRASH_SEED=N repeats it). After each restart the host's page does
what it does after a lost reply: it sends the same command id again.

Checked after every restart:
- a retried command returns the first answer: the same pick (number, card, ticket), the
  same letter number; the journal holds each command's records once;
- every award has exactly one prize letter, in the commit after it, naming the winner;
- the draw's picks follow one another (numbers 1, 2, ...), nobody wins twice;
and at the end, with the draw closed, `raps verify DB_URL` exits 0 with the draw and the
prize letters recomputed ("draw <id>: OK", "prizes: OK").
"""

from __future__ import annotations

import os
import random
import secrets
import subprocess
import threading
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import argon2
import httpx

from bench.harness import raps_command
from bench.soak_daemon import DatabasePeek
from raps.floorsim import FloorSimulator, demo_layout
from tests.test_tickets_crash import Daemon

TZ = ZoneInfo("Africa/Johannesburg")
DRAW = "stage-crash"
WINNERS = 4
SIM_SEED = 4242
PLAYERS = 120
ENTRANTS = 12
_CHEAP = argon2.PasswordHasher(time_cost=1, memory_cost=64, parallelism=1)
# where the kills land: (host command, winner's position or 0, how); every other command
# runs undisturbed, and test_kill9_never_redoes_a_pick_nor_records_a_prize_twice asserts
# that each of these kills happened
KILLS = (
    ("open", 0, "between"),
    ("draw", 1, "in_flight"),
    ("present", 1, "in_flight"),
    ("award", 1, "in_flight"),  # by position
    ("award", 2, "in_flight"),  # from a device
    ("close", 0, "in_flight"),
)


def _local(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%d %H:%M:%S")


def write_config(folder: Path, db_url: str, tokens: dict[str, str]) -> None:
    now = datetime.now(TZ).replace(microsecond=0)
    h = timedelta(hours=1)
    text = f"""
[site]
id = "stage-crash"
name = "Stage crash test"
timezone = "{TZ.key}"

[storage]
url = "{db_url}"
snapshot_interval_seconds = 1.0
event_flush_seconds = 0.2

[credentials]
seed_key_file = "{(folder / "seed.key").resolve()}"

[http]
host = "127.0.0.1"
port = 0

[floor.simulate]
machines = 20
tables = 2
players = {PLAYERS}
events_per_second = 20
warmup_seconds = 120
seed = {SIM_SEED}

[[promotions]]
id = "stage-crash"
threshold_points = 5

[[ticket_programs]]
id = "cash"
promotion = "stage-crash"
complimentary = {{ ten = 1, jack = 2, queen = 3, king = 4, ace = 5 }}
[ticket_programs.period]
kind = "fixed_start_to_draw"
start = "{_local(now - 24 * h)}"
[ticket_programs.stage]
prizes = [{{ kind = "cash", amount = 100000 }}, {{ kind = "device" }}]

[[ticket_draws]]
id = "{DRAW}"
program = "cash"
at = "{_local(now + 2 * h)}"
opens = "{_local(now - h)}"
closes = "{_local(now + h)}"
winners = {WINNERS}

[[users]]
name = "ehost-01"
role = "kiosk"
api_token_hash = '{_CHEAP.hash(tokens["kiosk"])}'

[[users]]
name = "sue"
role = "stage_host"
password_hash = '{_CHEAP.hash(secrets.token_urlsafe(12))}'
api_token_hash = '{_CHEAP.hash(tokens["host"])}'

[logging]
format = "json"
level = "info"
"""
    (folder / "raps.toml").write_text(text, encoding="utf-8")


def entrants() -> list[str]:
    """Cards of the simulated directory that may enter (in it, adults, not excluded)."""
    sim = FloorSimulator(demo_layout(20, 2), PLAYERS, datetime.now(TZ), seed=SIM_SEED)
    ok = [p.card for p in sim.players if p.in_directory and p.age_verified and not p.exclusions]
    return ok[:ENTRANTS]


class StageCrash:
    def __init__(self, folder: Path, db_url: str, seed: int) -> None:
        self.folder, self.db_url, self.seed = folder, db_url, seed
        self.rng = random.Random(seed)
        self.tokens = {"kiosk": secrets.token_urlsafe(24), "host": secrets.token_urlsafe(24)}
        write_config(folder, db_url, self.tokens)
        self.peek = DatabasePeek(db_url)
        self.daemon: Daemon | None = None
        self.started = 0
        self.kills = 0
        self.receipts: dict[str, str] = {}
        self.answers: dict[str, dict[str, Any]] = {}  # command id -> the first answer seen
        self.n = 0
        self.killed: list[tuple[str, int, str]] = []  # the KILLS entries that happened

    def start(self, create_key: bool = False) -> None:
        self.started += 1
        self.daemon = Daemon(self.folder, self.started)
        self.daemon.spawn(create_key=create_key)
        self.daemon.wait_ready()

    def client(self, who: str) -> httpx.Client:
        assert self.daemon is not None
        headers = {"Authorization": f"Bearer {self.tokens[who]}"}
        return httpx.Client(base_url=self.daemon.url, headers=headers, timeout=20)

    def kill_and_restart(self) -> None:
        assert self.daemon is not None
        self.daemon.kill9()
        self.kills += 1
        self.check_journal()
        self.start()

    def host(self, path: str, command_id: str, **body: Any) -> httpx.Response:
        with self.client("host") as c:
            return c.post(
                f"/api/stage/draws/{DRAW}/{path}", json={"command_id": command_id, **body}
            )

    def command(self, path: str, position: int = 0, **body: Any) -> dict[str, Any]:
        """One host command; a kill (KILLS) may land before or during it, and the page's
        retry (the same command id) must then give the answer the first try would have."""
        self.n += 1
        cid = f"cmd-{self.n}"
        kind = path.rsplit("/", 1)[-1]
        how = next((h for k, p, h in KILLS if (k, p) == (kind, position)), "none")
        if how != "none":
            self.killed.append((kind, position, how))
        if how == "between":
            self.kill_and_restart()
        if how == "in_flight":
            killer = threading.Timer(self.rng.uniform(0.0, 0.03), self._kill_quietly)
            killer.start()
            try:
                r: httpx.Response | None = self.host(path, cid, **body)
            except httpx.HTTPError:
                r = None  # the answer is lost; it may or may not be committed
            killer.join()
            self.check_journal()
            self.start()
            if r is not None and r.status_code == 200:
                self.answers[cid] = r.json()
        r = self.host(path, cid, **body)
        assert r.status_code == 200, (path, r.status_code, r.text)
        got: dict[str, Any] = r.json()
        again = self.host(path, cid, **body)  # and once more: a replay changes nothing
        assert again.status_code == 200 and _same(again.json(), got), (path, again.text)
        first = self.answers.setdefault(cid, got)
        assert _same(first, got), f"{path}: a retry after a kill answered differently"
        return got

    def _kill_quietly(self) -> None:
        assert self.daemon is not None
        self.daemon.kill9()
        self.kills += 1

    def check_journal(self) -> None:
        """While the daemon is down: one letter per award, right after it; picks in order."""
        rows = [e.record for e in self.peek.entries()]
        draw = [r for r in rows if r["session_id"] == f"draw:{DRAW}"]
        prizes = [r for r in rows if r["session_id"] == "prizes"]
        awarded = [r["data"]["pick"] for r in draw if r["type"] == "draw.awarded"]
        letters = [r["data"]["pick"] for r in prizes if r["type"] == "prize.letter"]
        assert sorted(awarded) == sorted(letters) and len(set(letters)) == len(letters), (
            awarded,
            letters,
        )
        picks = [r["data"]["pick"] for r in draw if r["type"] == "draw.picked"]
        assert picks == list(range(1, len(picks) + 1)), picks
        won = [r["data"]["card"] for r in draw if r["type"] == "draw.awarded"]
        assert len(set(won)) == len(won), won
        # a draw is two records under its command id: its bin (draw.requested), its winner
        ids = [
            r["data"].get("command_id")
            for r in draw
            if r["type"] not in ("draw.no_show", "draw.requested")
        ]
        assert len(ids) == len(set(ids)), "a command journaled twice"
        asked = [r["data"]["pick"] for r in draw if r["type"] == "draw.requested"]
        assert len(asked) == len(set(asked)), "a bin requested twice for one pick"

    def run(self) -> None:
        self.start(create_key=True)
        with self.client("kiosk") as k:
            for i, c in enumerate(entrants()):
                r = k.post("/api/tickets/kiosk/entries",
                           json={"request_id": f"k-{i}", "card": c, "draw": DRAW})  # fmt: skip
                assert r.status_code == 200, r.text
                self.receipts[c] = r.json()["receipt_no"]
        self.command("open")
        for position in range(1, WINNERS + 1):
            view = self.command("draw", position)
            pick = view["picks"][-1]
            assert pick["position"] == position and pick["state"] == "pending"
            n = pick["number"]
            self.command(f"picks/{n}/present", position, presenter="winner", document="sa_id",
                         last_digits="12", receipt=self.receipts[pick["card"]])  # fmt: skip
            if position == 1:
                view = self.command(f"picks/{n}/award", position, source="position")
            else:
                view = self.command(f"picks/{n}/award", position, source="device",
                                    amount=50000 * n, kind="cash", ref=f"box-{n}")  # fmt: skip
            assert view["picks"][-1]["letter_no"], view["picks"][-1]
        self.command("close")
        assert self.daemon is not None
        self.daemon.kill9()
        self.check_journal()
        out = subprocess.run(
            [*raps_command(), "verify", self.db_url], capture_output=True, text=True, timeout=120
        )
        assert out.returncode == 0, out.stdout + out.stderr
        assert f"draw {DRAW}: OK ({WINNERS} pick(s)" in out.stdout, out.stdout
        assert f"prizes: OK ({WINNERS} letter(s)" in out.stdout, out.stdout


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two answers for one command: the same draw state, whatever the clock said."""
    keys = ("number", "position", "attempt", "card", "tickets", "state", "letter_no")
    picks_a = [{k: p.get(k) for k in keys} for p in a.get("picks", [])]
    picks_b = [{k: p.get(k) for k in keys} for p in b.get("picks", [])]
    return picks_a == picks_b and a.get("commitment") == b.get("commitment")


def test_kill9_never_redoes_a_pick_nor_records_a_prize_twice(db_url: str, tmp_path: Path) -> None:
    seed = int(os.environ.get("RAPS_STAGE_CRASH_SEED", secrets.randbelow(1 << 30)))
    print(f"RAPS_STAGE_CRASH_SEED={seed}")
    run = StageCrash(tmp_path, db_url, seed)
    try:
        run.run()
    finally:
        if run.daemon is not None:
            run.daemon.kill9()
    print(f"{run.kills} kills over {run.n} host commands, {run.started} daemon starts")
    assert run.killed == list(KILLS), run.killed  # each chosen kill, in order
    assert run.kills == len(KILLS) and run.started == len(KILLS) + 1

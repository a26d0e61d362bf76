"""A stage game under kill -9: the safe's value and every reveal survive, one letter per
award, and `raps verify` passes (issue 19).

The real daemon (`raps run`) runs a Saturday 21:00 draw (3 winners) whose entries are
open now, on SQLite and on PostgreSQL. The draw's winners are drawn and verified, then
the podium randomiser and the digit safe are played over HTTP while the daemon is killed
with SIGKILL twice (lean: a start costs seconds): with a guess at the safe in flight,
and with the safe's close in flight (the one append that pays everyone), each after a
delay drawn from a seeded generator
(RAPS_STAGE_GAMES_CRASH_SEED=N repeats it), so the answer is lost and the command
committed or not. After each restart the host's page resends the same command id.

Checked: a retry answers what the first try did (the same reveal, the same turn); while
the daemon is down, the journal's safe value (the ledger replayed) is the one the safe
was offered at, every award has one letter and no command is journaled twice; at the
end `raps verify DB_URL` recomputes both games from the draw's seed and the ledger.
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

import httpx

from bench.harness import raps_command
from bench.soak_daemon import DatabasePeek
from selector.records import Record
from selector.stagegames.ledger import StageLedger
from tests.test_stage_crash import _CHEAP, TZ, _local, entrants
from tests.test_tickets_crash import Daemon

DRAW = "sat-2100"
WINNERS = 3


def write_config(folder: Path, db_url: str, tokens: dict[str, str]) -> None:
    now = datetime.now(TZ).replace(microsecond=0)
    h = timedelta(hours=1)
    text = f"""
[site]
id = "stage-games-crash"
timezone = "{TZ.key}"
[storage]
url = "{db_url}"
[credentials]
seed_key_file = "{(folder / "seed.key").resolve()}"
[http]
host = "127.0.0.1"
port = 0
[floor.simulate]
machines = 20
tables = 2
players = 120
events_per_second = 20
warmup_seconds = 120
seed = 4242
[[promotions]]
id = "heat"
threshold_points = 5
[[ticket_programs]]
id = "sat"
promotion = "heat"
complimentary = {{ ten = 1, jack = 2, queen = 3, king = 4, ace = 5 }}
[ticket_programs.period]
kind = "fixed_start_to_draw"
start = "{_local(now - 24 * h)}"
[[ticket_draws]]
id = "{DRAW}"
program = "sat"
at = "{_local(now + 2 * h)}"
opens = "{_local(now - h)}"
closes = "{_local(now + h)}"
winners = {WINNERS}
[[stage.games]]
id = "safe"
draws = ["{DRAW}"]
kind = "podium+safe"
podiums = [{{ amount = 1000000 }}, {{ amount = 700000 }}, {{ amount = 500000 }}]
[stage.games.safe_odds]
mode = "code"
digits = 1
tries = 3
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
"""
    (folder / "raps.toml").write_text(text, encoding="utf-8")


class GamesCrash:
    def __init__(self, folder: Path, db_url: str, seed: int) -> None:
        self.folder, self.db_url = folder, db_url
        self.rng = random.Random(seed)
        self.tokens = {"kiosk": secrets.token_urlsafe(24), "host": secrets.token_urlsafe(24)}
        write_config(folder, db_url, self.tokens)
        self.peek = DatabasePeek(db_url)
        self.daemon: Daemon | None = None
        self.started = self.kills = self.n = 0
        self.receipts: dict[str, str] = {}
        self.answers: dict[str, dict[str, Any]] = {}
        self.offered: int | None = None  # the safe's value when it was offered

    def start(self, create_key: bool = False) -> None:
        self.started += 1
        self.daemon = Daemon(self.folder, self.started)
        self.daemon.spawn(create_key=create_key)
        self.daemon.wait_ready()

    def host(self, path: str, command_id: str, **body: Any) -> httpx.Response:
        assert self.daemon is not None
        headers = {"Authorization": f"Bearer {self.tokens['host']}"}
        with httpx.Client(base_url=self.daemon.url, headers=headers, timeout=20) as c:
            return c.post(f"/api/stage/draws/{DRAW}/{path}",
                          json={"command_id": command_id, **body})  # fmt: skip

    def command(self, path: str, how: str = "none", **body: Any) -> dict[str, Any]:
        self.n += 1
        cid = f"cmd-{self.n}"
        if how == "in_flight":
            assert self.daemon is not None
            killer = threading.Timer(self.rng.uniform(0.0, 0.03), self.daemon.kill9)
            killer.start()
            try:
                r: httpx.Response | None = self.host(path, cid, **body)
            except httpx.HTTPError:
                r = None  # the answer is lost; committed or not
            killer.join()
            self.kills += 1
            self.check_journal()
            self.start()
            if r is not None and r.status_code == 200:
                self.answers[cid] = r.json()
        r = self.host(path, cid, **body)
        assert r.status_code == 200, (path, r.status_code, r.text)
        got: dict[str, Any] = r.json()
        first = self.answers.setdefault(cid, got)
        assert _same(first, got), f"{path}: a retry after a kill answered differently"
        return got

    def check_journal(self) -> None:
        rows = [e.record for e in self.peek.entries()]
        draw = [r for r in rows if r["session_id"] == f"draw:{DRAW}"]
        letters = [r["data"]["pick"] for r in rows if r["type"] == "prize.letter"]
        awarded = [r["data"]["pick"] for r in draw if r["type"] == "draw.awarded"]
        assert sorted(awarded) == sorted(letters) and len(set(letters)) == len(letters)
        ledger_rows = [Record.from_dict(r) for r in rows if r["session_id"] == "stage-prizes"]
        if ledger_rows:
            ledger = StageLedger.replay(ledger_rows)
            if self.offered is not None and ledger.grew(DRAW) is None:
                assert ledger.safe_value == self.offered  # a kill changes nothing
            elif self.offered is not None:  # the close committed: grown once, or paid out
                assert ledger.safe_value in (self.offered + 2_000_000, 10_000_000)
        for stream in {r["session_id"] for r in rows if r["session_id"].startswith("stage:")}:
            ids = [r["data"]["command_id"] for r in rows if r["session_id"] == stream]
            assert len(ids) == len(set(ids)), f"{stream}: a command journaled twice"

    def run(self) -> None:
        self.start(create_key=True)
        headers = {"Authorization": f"Bearer {self.tokens['kiosk']}"}
        assert self.daemon is not None
        with httpx.Client(base_url=self.daemon.url, headers=headers, timeout=20) as k:
            for i, c in enumerate(entrants()):
                r = k.post("/api/tickets/kiosk/entries",
                           json={"request_id": f"k-{i}", "card": c, "draw": DRAW})  # fmt: skip
                assert r.status_code == 200, r.text
                self.receipts[c] = r.json()["receipt_no"]
        self.command("open")
        for _ in range(WINNERS):
            pick = self.command("draw")["picks"][-1]
            self.command(f"picks/{pick['number']}/present", presenter="winner",
                         document="sa_id", last_digits="12",
                         receipt=self.receipts[pick["card"]])  # fmt: skip
        self.command("games/podium/open")
        for r in (3, 1, 2):
            self.command("games/podium/choose", randomiser=r)
        self.command("games/podium/close")
        view = self.command("games/safe/open")
        self.offered = view["game"]["games"][1]["value"]
        for code in ("1", "2", "3"):  # the first winner tries three codes
            if code == "1":
                self.command("games/safe/attempt")
            view = self.command("games/safe/guess", how="in_flight" if code == "1" else "none",
                                code=code)  # fmt: skip
            if view["game"]["games"][1]["turn"] is None or \
                    view["game"]["games"][1]["turn"]["position"] != 1:  # fmt: skip
                break
        while (turn := view["game"]["games"][1]["turn"]) is not None:
            view = self.command("games/safe/decline" if not turn["trying"] else "games/safe/spin")
        self.command("games/safe/close", how="in_flight")
        self.command("close")
        assert self.daemon is not None
        self.daemon.kill9()
        self.check_journal()
        out = subprocess.run([*raps_command(), "verify", self.db_url], capture_output=True,
                             text=True, timeout=120)  # fmt: skip
        assert out.returncode == 0, out.stdout + out.stderr
        for line in (f"stage game stage:podium:{DRAW}: OK", f"stage game stage:safe:{DRAW}: OK",
                     "stage prizes: OK", f"draw {DRAW}: OK"):  # fmt: skip
            assert line in out.stdout, out.stdout


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two answers for one command: the same draw and the same game, reveals included."""
    keys = ("number", "position", "card", "state", "letter_no")
    picks = [[{k: p.get(k) for k in keys} for p in x.get("picks", [])] for x in (a, b)]
    return picks[0] == picks[1] and a.get("game") == b.get("game")


def test_kill9_mid_game_keeps_the_safe_and_the_reveals(db_url: str, tmp_path: Path) -> None:
    seed = int(os.environ.get("RAPS_STAGE_GAMES_CRASH_SEED", secrets.randbelow(1 << 30)))
    print(f"RAPS_STAGE_GAMES_CRASH_SEED={seed}")
    run = GamesCrash(tmp_path, db_url, seed)
    try:
        run.run()
    finally:
        if run.daemon is not None:
            run.daemon.kill9()
    print(f"{run.kills} kills over {run.n} host commands, {run.started} daemon starts")
    assert run.kills == 2 and run.started == 3

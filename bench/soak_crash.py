"""Crash soak: kill -9 the RAPS daemon at random points of open sessions, restart, check.

Run from the repository root:

    .venv/bin/python bench/soak_crash.py                  # 200 kill cycles on each database
    .venv/bin/python bench/soak_crash.py --quick          # 10 cycles on each database
    .venv/bin/python bench/soak_crash.py --cycles 500 --db sqlite
    .venv/bin/python bench/soak_crash.py --db postgresql --pg-url postgresql://raps@db/soak

PostgreSQL: a throwaway database is created on the server named by --pg-url, or by
RAPS_TEST_PG_HOST / RAPS_TEST_PG_PORT (default 127.0.0.1:5432, user postgres), and
dropped afterwards.

The daemon runs as a real subprocess (`raps run --config ... --ready-file ...`) on a
simulated floor; this driver plays a marketing handheld against its HTTP API and kills
it with SIGKILL between commands, while a command is in flight, or while it is starting
up again.  After every kill it checks the database while the daemon is down, restarts
it, and checks what the restarted daemon says (docs/crash-recovery.md lists every
invariant).  tests/test_crash_recovery.py runs this same driver for 20 cycles per
database.

Progress goes to standard output; the last line is one JSON object with the cycles
run, the failures and how many times each invariant was checked.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import re
import secrets
import signal
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import argon2  # noqa: E402
import httpx  # noqa: E402

from raps.chain import Entry, Head, check_chain  # noqa: E402
from raps.config import hash_secret  # noqa: E402
from raps.seal import SeedSealer, load_key  # noqa: E402
from selector.fairness import commitment as commit_to  # noqa: E402

# A small floor whose pools fill within seconds. The simulated source back-fills
# WARMUP_SECONDS of play on every start, blocking the daemon's loop meanwhile, so
# rate x warm-up is kept small (9,000 events) to keep each restart short.
MACHINES = 200
TABLES = 20
PLAYERS = 1500
EVENTS_PER_SECOND = 30
WARMUP_SECONDS = 300
THRESHOLD_POINTS = 5
# Short enough that pending picks run out while the daemon is down (a restart takes
# about 3 s), long enough that picks drawn just before a kill are still pending after it.
CLAIM_SECONDS = 6.0
QUOTAS = {"slots": 40, "tables": 20}
# Short lives need short intervals: a restart then loads a snapshot and replays the
# events flushed after it (the first life replays from the log alone).
SNAPSHOT_SECONDS = 0.5
FLUSH_SECONDS = 0.2
TICK_SLACK = 1.0  # the daemon's claim-timer tick runs every 0.2 s; this is generous
START_TIMEOUT = 60.0
FILLED = ("pending", "verified", "awarded")
MASKED_CARD = re.compile(r"\*+[0-9]{4}")
KEEPS_DEADLINE = "a pending pick keeps its claim deadline across the restart"
EXPIRES_WHILE_DOWN = "a claim deadline that passed while down expires"


class InvariantViolation(AssertionError):
    """A crash-recovery invariant does not hold; the message names it and the evidence."""


def utc_now() -> datetime:
    return datetime.now(UTC)


def poll(what: str, probe: Callable[[], Any], timeout: float, interval: float = 0.05) -> Any:
    """Call `probe` until it returns something truthy; a timeout is a violation.

    A restarted daemon does some things a moment after it is ready (its claim timer
    ticks every 0.2 s), so checks of those wait with a deadline instead of sleeping.
    """
    deadline = time.monotonic() + timeout
    while True:
        result = probe()
        if result:
            return result
        if time.monotonic() > deadline:
            raise InvariantViolation(f"{what}: not within {timeout:.1f} s")
        time.sleep(interval)


# --------------------------------------------------------------------------- config


def write_config(
    folder: Path,
    db_url: str,
    token: str,
    session_ids: list[str],
    claim_seconds: float,
    quotas: dict[str, int] | None = None,
) -> Path:
    """A daemon config like raps.demo.demo_config, tuned for many short lives."""
    quotas = quotas or QUOTAS
    sessions = "\n".join(
        f"""
[[sessions]]
id = "{sid}"
promotion = "crash-soak"
starts = "2026-01-01T18:00:00+02:00"
quotas = {{ slots = {quotas["slots"]}, tables = {quotas["tables"]} }}
claim_seconds = {claim_seconds}
"""
        for sid in session_ids
    )
    text = f"""
[site]
id = "crash-soak"
name = "RAPS crash soak"
timezone = "Africa/Johannesburg"

[storage]
url = "{db_url}"
snapshot_interval_seconds = {SNAPSHOT_SECONDS}
event_flush_seconds = {FLUSH_SECONDS}

[credentials]
seed_key_file = "{(folder / "seed.key").resolve()}"

[http]
host = "127.0.0.1"
port = 0

[mqtt]
enabled = false

[floor.simulate]
machines = {MACHINES}
tables = {TABLES}
players = {PLAYERS}
events_per_second = {EVENTS_PER_SECOND}
warmup_seconds = {WARMUP_SECONDS}

[[promotions]]
id = "crash-soak"
name = "Crash soak promotion"
threshold_points = {THRESHOLD_POINTS}
window = {{ start = "00:00", end = "24:00" }}
{sessions}

[[users]]
name = "soak-marketing"
role = "marketing"
password_hash = '{hash_secret(secrets.token_urlsafe(16))}'
api_token_hash = '{_CHEAP_HASH.hash(token)}'

[logging]
format = "json"
level = "info"
"""
    path = folder / "raps.toml"
    path.write_text(text, encoding="utf-8")
    return path


# A real argon2id hash with small costs for the API token: every restarted daemon checks
# the token once, and `hash_secret`'s production costs take ~0.6 s per check on a busy
# CI box (a minute over a soak). The format, validation and check are the production ones.
_CHEAP_HASH = argon2.PasswordHasher(time_cost=1, memory_cost=64, parallelism=1)


def raps_command() -> list[str]:
    """The `raps` entry point of the running interpreter's environment."""
    script = Path(sys.executable).with_name("raps")
    return [str(script)] if script.exists() else [sys.executable, "-m", "raps.cli"]


# --------------------------------------------------------------------------- daemon


class DaemonProcess:
    """One `raps run` subprocess: started, waited for, and killed with SIGKILL."""

    def __init__(self, config: Path, folder: Path, token: str, number: int) -> None:
        self.config = config
        self.folder = folder
        self.token = token
        self.number = number
        self.ready_file = folder / "ready.json"
        self.log_path = folder / "logs" / f"daemon-{number:04d}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.client: httpx.Client | None = None
        self.spawned_at = 0.0
        self.ready_at = utc_now()

    def spawn(self, create_key: bool = False) -> None:
        self.ready_file.unlink(missing_ok=True)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        cmd = [*raps_command(), "run", "--config", str(self.config)]
        cmd += ["--ready-file", str(self.ready_file)]
        if create_key:
            cmd.append("--create-key")
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=self.folder
            )
        self.spawned_at = time.monotonic()

    def ready(self) -> bool:
        """Whether the ready file is there; a daemon that died instead is an error."""
        assert self.proc is not None
        if self.ready_file.exists():
            return True
        if self.proc.poll() is not None:
            raise InvariantViolation(
                f"daemon exited with {self.proc.returncode} before it was ready:\n"
                + self.log_tail()
            )
        return False

    def wait_ready(self) -> None:
        poll(f"daemon {self.number} ready file", self.ready, START_TIMEOUT)
        info = json.loads(self.ready_file.read_text())
        assert self.proc is not None
        if info["pid"] != self.proc.pid:
            raise InvariantViolation(f"ready file names pid {info['pid']}, not {self.proc.pid}")
        self.url = info["url"]
        self.ready_at = utc_now()
        self.client = self.new_client()

    def new_client(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {self.token}"}, timeout=20
        )

    def kill9(self) -> None:
        """SIGKILL: no handler runs, no snapshot, no flush; exactly a crash."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait(timeout=30)
        if self.client is not None:
            self.client.close()
            self.client = None

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def log_events(self) -> list[dict[str, Any]]:
        out = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            with contextlib.suppress(json.JSONDecodeError):
                item = json.loads(line)
                if isinstance(item, dict):
                    out.append(item)
        return out

    # ---------------------------------------------------------------- API calls

    def get(self, path: str) -> Any:
        assert self.client is not None
        r = self.client.get(path)
        if r.status_code != 200:
            raise InvariantViolation(f"GET {path}: {r.status_code} {r.text}")
        return r.json()

    def post(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        assert self.client is not None
        r = self.client.post(path, json=body)
        return r.status_code, r.json()


# ------------------------------------------------------------------ the database


class DatabasePeek:
    """Reads the daemon's database while the daemon is down, without changing it.

    SQLite is opened read-only (a normal connection would checkpoint and remove the
    WAL on close, tidying up the very crash state the restart must cope with).
    """

    def __init__(self, db_url: str) -> None:
        self.db_url = db_url
        u = urlsplit(db_url)
        self.sqlite = u.scheme.startswith("sqlite")
        if self.sqlite:
            self.path = Path(db_url.split(":///", 1)[1])
        else:
            self.conninfo = urlunsplit(("postgresql", u.netloc, u.path, u.query, ""))

    @contextlib.contextmanager
    def _connect(self) -> Iterator[Any]:
        if self.sqlite:
            lite = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=10)
            try:
                yield lite
            finally:
                lite.close()
        else:
            import psycopg

            with psycopg.connect(self.conninfo, autocommit=True) as pg:
                yield pg

    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if not self.sqlite:
            sql = sql.replace("?", "%s")
        with self._connect() as conn:
            return [tuple(r) for r in conn.execute(sql, params).fetchall()]

    def entries(self) -> list[Entry]:
        return [
            Entry(int(seq), prev, record, digest)
            for seq, prev, record, digest in self.rows(
                "SELECT seq, prev, record, hash FROM journal ORDER BY seq"
            )
        ]

    def sealed(self, session_id: str) -> tuple[bytes, bytes] | None:
        rows = self.rows(
            "SELECT nonce, ciphertext FROM sealed_seeds WHERE session_id = ?", (session_id,)
        )
        return (bytes(rows[0][0]), bytes(rows[0][1])) if rows else None

    def unsnapshotted(self) -> int:
        """Floor event rows logged after the newest snapshot (0 without a snapshot).

        The log is a row per flushed batch since migration 0002, a row per event before.
        """
        table, seq = (
            ("floor_event_batches", "last_seq")
            if "floor_event_batches" in self.tables()
            else ("floor_events", "seq")
        )
        newest = "(SELECT max(last_event_seq) FROM floor_snapshots)"
        return int(self.rows(f"SELECT count(*) FROM {table} WHERE {seq} > {newest}")[0][0])

    def floor_snapshots(self) -> int:
        return int(self.rows("SELECT count(*) FROM floor_snapshots")[0][0])

    def tables(self) -> list[str]:
        if self.sqlite:
            sql = "SELECT name FROM sqlite_master WHERE type = 'table'"
        else:
            sql = (
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = 'public' AND table_type = 'BASE TABLE'"
            )
        return [r[0] for r in self.rows(sql)]

    def seed_places(self, seed: bytes, raw_files: bool) -> list[str]:
        """Where the seed is stored in plain text, as hex or as its raw bytes.

        Every row of every table is searched (journal hits are named by record type).
        SQLite with `raw_files`: every byte of the database files too (main file and
        WAL), which also covers freed pages and old WAL frames.
        """
        needle = seed.hex()
        places = [
            f"journal {seq} ({kind})"
            for seq, kind in self.rows(
                "SELECT seq, type FROM journal WHERE lower(record) LIKE ?", (f"%{needle}%",)
            )
        ]
        for table in self.tables():
            if table == "journal":
                continue
            if self.sqlite:
                cols = [r[1] for r in self.rows(f'PRAGMA table_info("{table}")')]
                where = " OR ".join(
                    f'instr(lower(CAST("{c}" AS TEXT)), ?) OR instr(CAST("{c}" AS BLOB), ?)'
                    for c in cols
                )
                params: tuple[Any, ...] = (needle, seed) * len(cols)
                n = self.rows(f'SELECT count(*) FROM "{table}" WHERE {where}', params)[0][0]
            else:  # a row as text shows bytea as hex, so this finds raw bytes as well
                n = self.rows(
                    f'SELECT count(*) FROM "{table}" t WHERE strpos(lower(t::text), ?) > 0',
                    (needle,),
                )[0][0]
            if n:
                places.append(f"{n} row(s) of {table}")
        if self.sqlite and raw_files:
            for suffix in ("", "-wal"):
                f = Path(str(self.path) + suffix)
                data = f.read_bytes() if f.exists() else b""
                if seed in data or needle.encode() in data.lower():
                    places.append(f"bytes of {f.name}")
        return places


def create_pg_database(base_url: str | None) -> tuple[str, Callable[[], None]]:
    """A throwaway PostgreSQL database and the function that drops it."""
    import psycopg

    if base_url:
        u = urlsplit(base_url)
        admin = urlunsplit(("postgresql", u.netloc, "/postgres", u.query, ""))
    else:
        host = os.environ.get("RAPS_TEST_PG_HOST", "127.0.0.1")
        port = os.environ.get("RAPS_TEST_PG_PORT", "5432")
        admin = f"postgresql://postgres@{host}:{port}/postgres"
    name = f"raps_soak_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin, autocommit=True, connect_timeout=5) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    u = urlsplit(admin)

    def drop() -> None:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return urlunsplit(("postgresql", u.netloc, f"/{name}", u.query, "")), drop


# --------------------------------------------------------------------- the model


@dataclass
class Command:
    """A handheld command: where it goes, its body (with its command id), what it does."""

    action: str  # open, draw, verify, award, no_show, void, close
    path: str
    body: dict[str, Any]
    pick: int | None = None

    @property
    def command_id(self) -> str:
        cid: str = self.body["command_id"]
        return cid


TARGET_STATE = {"verify": "verified", "award": "awarded", "no_show": "no_show", "void": "void"}
PICK_FIELDS = (
    "pick", "kind", "slot", "attempt", "card", "location", "display_name", "tier",
    "drawn_at", "deadline", "pool_size", "pool_digest",
)  # fmt: skip


@dataclass
class SessionModel:
    """What the handheld was told: every acknowledged outcome of one session."""

    session_id: str
    state: str = "scheduled"
    commitment: str | None = None
    picks: dict[int, dict[str, Any]] = field(default_factory=dict)
    draws: dict[str, int] = field(default_factory=dict)  # draw command id -> pick number
    acknowledged: set[str] = field(default_factory=set)  # ids answered 200
    refused: set[str] = field(default_factory=set)  # ids answered 409


@dataclass
class Report:
    """One database's soak, for the JSON line and the test's coverage assertions.

    `kills` counts the kill points and what each restart found (a floor snapshot or
    not, events replayed or not, the in-flight command committed or lost); `checks`
    counts every invariant that held.
    """

    database: str
    cycles: int = 0
    sessions: int = 0
    picks: int = 0
    failures: list[str] = field(default_factory=list)
    kills: Counter[str] = field(default_factory=Counter)
    checks: Counter[str] = field(default_factory=Counter)
    phases: dict[str, float] = field(default_factory=dict)  # seconds spent, by phase
    seconds: float = 0.0
    seed: int = 0

    def as_dict(self, with_checks: bool = True) -> dict[str, Any]:
        out = {
            "database": self.database,
            "cycles": self.cycles,
            "sessions": self.sessions,
            "picks": self.picks,
            "failures": self.failures,
            "kills": dict(sorted(self.kills.items())),
            "checks": dict(sorted(self.checks.items())),
            "phase_seconds": {k: round(v, 1) for k, v in sorted(self.phases.items())},
            "seconds": round(self.seconds, 1),
            "seed": self.seed,
        }
        if not with_checks:
            del out["checks"]
        return out


# -------------------------------------------------------------------- the soak


class CrashSoak:
    """Drives one database through `cycles` kill -9 / restart cycles and checks each.

    Sessions are used `cycles_per_session` cycles each, then closed, verified offline
    (`raps verify`, `raps export`) and the next one opened, so a long soak does not run
    out of quota or of players.  The first broken invariant raises InvariantViolation.
    """

    def __init__(
        self,
        folder: Path,
        db_url: str,
        cycles: int,
        *,
        seed: int | None = None,
        cycles_per_session: int = 25,
        claim_seconds: float = CLAIM_SECONDS,
        say: Callable[[str], None] = lambda line: print(line, flush=True),
    ) -> None:
        self.folder = folder
        self.db_url = db_url
        self.cycles = cycles
        self.seed = seed if seed is not None else secrets.randbits(32)
        self.rng = random.Random(self.seed)
        self.claim_seconds = claim_seconds
        self.say = say
        n_sessions = max(1, math.ceil(cycles / cycles_per_session))
        self.per_session = math.ceil(cycles / n_sessions)
        self.session_ids = [f"soak-{i + 1:03d}" for i in range(n_sessions)]
        self.token = secrets.token_urlsafe(24)
        self.config = write_config(folder, db_url, self.token, self.session_ids, self.claim_seconds)
        self.db = DatabasePeek(db_url)
        self.sealer: SeedSealer | None = None
        self.winners: set[str] = set()  # full cards of every winner, from the journal
        self.report = Report("sqlite" if self.db.sqlite else "postgresql", seed=self.seed)
        self.daemon: DaemonProcess | None = None
        self.started = 0
        self.n = 0
        self.head = Head(0, "")
        self.model = SessionModel(self.session_ids[0])
        self.in_flight: Command | None = None
        self.in_flight_committed = False
        self.killed_at = utc_now()
        self.session_checks: Counter[str] = Counter()
        self.latencies: list[float] = []
        self.schedule = ["idle", "in_flight", "startup"]
        self.rng.shuffle(self.schedule)

    # ---------------------------------------------------------------- plumbing

    def check(self, name: str, ok: bool, detail: str | Callable[[], str] = "") -> None:
        """Count one invariant check; a failed one raises with the evidence."""
        if not ok:
            text = detail() if callable(detail) else detail
            raise InvariantViolation(
                f"[{self.report.database}, seed {self.seed}, cycle {self.report.cycles}, "
                f"session {self.model.session_id}] {name}: {text}"
            )
        self.report.checks[name] += 1

    def next_id(self) -> str:
        self.n += 1
        return f"c{self.n}-{secrets.token_hex(3)}"

    @property
    def d(self) -> DaemonProcess:
        assert self.daemon is not None
        return self.daemon

    def start_daemon(self, create_key: bool = False) -> DaemonProcess:
        self.started += 1
        self.daemon = DaemonProcess(self.config, self.folder, self.token, self.started)
        self.daemon.spawn(create_key=create_key)
        return self.daemon

    def kill(self, how: str) -> None:
        self.killed_at = utc_now()
        self.d.kill9()
        self.report.kills[how] += 1

    # --------------------------------------------------------------- the soak

    def run(self) -> Report:
        t0 = time.monotonic()
        try:
            self.start_daemon(create_key=True)
            self.d.wait_ready()
            self.wait_pools()
            for i, sid in enumerate(self.session_ids):
                self.model = SessionModel(sid)
                todo = min(self.per_session, self.cycles - self.report.cycles)
                if todo <= 0:
                    break
                self.session_checks = Counter(self.report.checks)
                for j in range(todo):
                    self.cycle(j, todo)
                with self.timed("close and verify"):
                    self.finish_session()
                self.report.sessions = i + 1
            self.check_logs()
        finally:
            if self.daemon is not None:
                self.daemon.kill9()
            self.report.seconds = time.monotonic() - t0
        return self.report

    @contextlib.contextmanager
    def timed(self, phase: str) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            spent = time.monotonic() - started
            self.report.phases[phase] = self.report.phases.get(phase, 0.0) + spent

    def seen_this_session(self, check: str) -> int:
        return self.report.checks[check] - self.session_checks[check]

    def cycle(self, j: int, total: int) -> None:
        """Some acknowledged commands, one kill -9 at a random point, restart, check.

        The first three cycles of a session use each kind of kill once (in random
        order); the last two make sure that a pending pick crosses a restart and that
        a claim deadline passes while the daemon is down, if chance has not done so.
        """
        rng = self.rng
        with self.timed("commands"):
            for _ in range(rng.randint(1, 4)):
                self.send(self.choose())
        if j < len(self.schedule):
            mode = self.schedule[j]
        else:
            mode = rng.choices(["idle", "in_flight", "startup"], [35, 55, 10])[0]
        hold_until: datetime | None = None
        if j == total - 2 and not self.seen_this_session(KEEPS_DEADLINE):
            mode = "draw_then_kill"
        elif j == total - 1 and not self.seen_this_session(EXPIRES_WHILE_DOWN):
            mode = "hold_down"
        self.in_flight = None
        with self.timed("kill"):
            if mode == "in_flight":
                self.kill_in_flight(self.choose())
            elif mode == "draw_then_kill":
                self.send(self.draw_command())
                self.kill("between_commands")
            elif mode == "hold_down":
                hold_until = self.next_deadline()
                self.kill("between_commands")
            else:
                if j < len(self.schedule) and mode == "idle":
                    # once per session: a snapshot and events flushed after it, so that
                    # the restart takes the snapshot + replay path for sure
                    poll("floor events flushed after a snapshot", self.db.unsnapshotted, 20)
                else:
                    time.sleep(rng.uniform(0, 0.6))
                self.kill("between_commands")
        self.report.cycles += 1
        with self.timed("checks while down"):
            self.check_while_down()
        with self.timed("held down"):
            if hold_until is not None:  # a longer outage: the claim deadline passes meanwhile
                _sleep_until(hold_until)
        if mode == "startup":
            with self.timed("killed while starting"):
                self.start_daemon()
                time.sleep(rng.uniform(0.2, 2.0))  # ready comes after about 2 s
                starting = not self.d.ready_file.exists()
                self.kill("during_startup" if starting else "just_after_ready")
                self.check_while_down(first=False)
        with self.timed("restart"):
            self.start_daemon()
            self.d.wait_ready()
        with self.timed("checks after restart"):
            self.check_after_restart()
        if self.report.cycles % 5 == 0 or self.report.cycles == self.cycles:
            self.say(
                f"  {self.report.database}: cycle {self.report.cycles}/{self.cycles}, "
                f"session {self.model.session_id}, {len(self.model.picks)} picks, "
                f"journal head {self.head.seq}"
            )

    # ------------------------------------------------------------- commands

    def draw_command(self) -> Command:
        m = self.model
        body = {"command_id": self.next_id(), "kind": self.rng.choice(["slots", "tables"])}
        return Command("draw", f"/api/sessions/{m.session_id}/draw", body)

    def next_deadline(self) -> datetime | None:
        """The earliest deadline of a pending pick (drawing one if there is none), + 0.2 s."""
        soon = utc_now() + timedelta(seconds=0.5)
        for _ in range(10):
            deadlines = [
                datetime.fromisoformat(p["deadline"])
                for p in self.model.picks.values()
                if p["state"] == "pending" and datetime.fromisoformat(p["deadline"]) > soon
            ]
            if deadlines:
                return min(deadlines) + timedelta(seconds=0.2)
            self.send(self.draw_command())
        return None  # quotas full or pools empty: no long outage this time

    def choose(self) -> Command:
        """A plausible next handheld command given what the model knows."""
        m = self.model
        sid = m.session_id
        base = f"/api/sessions/{sid}"
        cid = self.next_id()
        if m.state == "scheduled":
            return Command("open", f"{base}/open", {"command_id": cid})
        pending = [n for n, p in m.picks.items() if p["state"] == "pending"]
        verified = [n for n, p in m.picks.items() if p["state"] == "verified"]
        options: list[tuple[str, int]] = [("draw", 45)]
        if pending:
            options += [("verify", 25), ("no_show", 6), ("void", 5)]
        if verified:
            options += [("award", 20), ("void", 3)]
        action = self.rng.choices([o for o, _ in options], [w for _, w in options])[0]
        if action == "draw":
            kind = self.rng.choice(["slots", "slots", "tables"])
            return Command("draw", f"{base}/draw", {"command_id": cid, "kind": kind})
        if action in ("verify", "no_show"):
            n = self.rng.choice(pending)
            path = "no-show" if action == "no_show" else "verify"
            return Command(action, f"{base}/picks/{n}/{path}", {"command_id": cid}, n)
        if action == "award":
            n = self.rng.choice(verified)
            body = {
                "command_id": cid,
                "amount": self.rng.choice([50_000, 100_000, 200_000]),
                "kind": self.rng.choice(["cash", "plus_play", "voucher"]),
                "envelope": f"E{n:03d}",
            }
            return Command("award", f"{base}/picks/{n}/award", body, n)
        n = self.rng.choice(pending + verified)
        body = {"command_id": cid, "reason": "card played by a companion"}
        return Command("void", f"{base}/picks/{n}/void", body, n)

    def send(self, cmd: Command) -> tuple[int, dict[str, Any]]:
        started = time.perf_counter()
        status, body = self.d.post(cmd.path, cmd.body)
        self.latencies.append(time.perf_counter() - started)
        self.acknowledge(cmd, status, body)
        return status, body

    def acknowledge(self, cmd: Command, status: int, body: dict[str, Any]) -> None:
        """Learn from an answer the handheld received: it is now a promise to keep."""
        m = self.model
        if status == 409:
            m.refused.add(cmd.command_id)
            return
        self.check("command answered 200 or 409", status == 200, f"{cmd.path}: {status} {body}")
        m.acknowledged.add(cmd.command_id)
        self.see_head(body.get("journal_head"), f"answer to {cmd.command_id}")
        pick = body.get("pick")
        if cmd.action == "open":
            m.state = "open"
        elif cmd.action == "close":
            m.state = "closed"
        elif cmd.action == "draw":
            if pick is None:
                self.check("no pick only when no one is eligible", body["no_eligible"], str(body))
                return
            n = pick["pick"]
            known = m.picks.get(n)
            if known is not None:
                self.check(
                    "a replayed draw returns the same pick",
                    body["replayed"] and same_pick(known, pick),
                    lambda: f"{cmd.command_id}: had {known}, got {pick}",
                )
            else:
                self.check(
                    "a new pick takes the next number",
                    n == len(m.picks) + 1,
                    f"pick {n} after {len(m.picks)} picks",
                )
                m.picks[n] = dict(pick)
            m.draws[cmd.command_id] = n
        else:
            assert cmd.pick is not None and pick is not None
            target = TARGET_STATE[cmd.action]
            self.check(
                "a pick command leaves the pick in its new state",
                pick["state"] == target and pick["pick"] == cmd.pick,
                lambda: f"{cmd.action} {cmd.pick}: {pick}",
            )
            known = m.picks[cmd.pick]
            self.check("the pick is the same pick", same_pick(known, pick), f"{known} / {pick}")
            known.update(state=pick["state"], prize=pick["prize"], void_reason=pick["void_reason"])

    def see_head(self, head: dict[str, Any] | None, where: str) -> None:
        """The journal head only moves forward; the same seq always has the same hash."""
        if head is None:
            return
        seq, digest = int(head["seq"]), head["hash"]
        self.check(
            "journal head never goes backwards",
            seq > self.head.seq or (seq == self.head.seq and digest == self.head.hash),
            f"{where}: head {seq}:{digest} after {self.head}",
        )
        self.head = Head(seq, digest)

    def kill_in_flight(self, cmd: Command) -> None:
        """Send a command from a thread and SIGKILL the daemon 0-50 ms later."""
        client = self.d.new_client()
        result: dict[str, Any] = {}

        def go() -> None:
            try:
                r = client.post(cmd.path, json=cmd.body)
                result["answer"] = (r.status_code, r.json())
            except (httpx.HTTPError, json.JSONDecodeError) as e:
                result["error"] = e

        thread = threading.Thread(target=go, daemon=True)
        # 0-50 ms. A command takes 5-20 ms and is committed shortly before it is
        # answered, so half of the kills aim at 40-110 % of a recent command's time:
        # those land inside the commit or between the commit and the answer.
        if self.latencies and self.rng.random() < 0.5:
            typical = statistics.median(self.latencies[-20:])
            delay = min(0.05, typical * self.rng.uniform(0.4, 1.1))
        else:
            delay = self.rng.uniform(0.0, 0.05)
        thread.start()
        time.sleep(delay)
        self.kill("command_in_flight")
        thread.join(timeout=30)
        client.close()
        if "answer" in result:  # the answer beat the kill: it was acknowledged
            self.report.kills["in_flight_answered_first"] += 1
            self.acknowledge(cmd, *result["answer"])
        else:
            self.in_flight = cmd

    # ----------------------------------------------------------- while down

    def check_while_down(self, first: bool = True) -> None:
        """The database as the crash left it: the chain, every acknowledged record, the seed."""
        m = self.model
        entries = self.db.entries()
        error = check_chain(entries, self.head if self.head.seq else None)
        self.check("journal chain intact at the kill", error is None, str(error))
        records = [e.record for e in entries]
        mine = [r for r in records if r["session_id"] == m.session_id]
        journaled = {r["data"]["command_id"] for r in mine if "command_id" in r["data"]}
        missing = m.acknowledged - journaled
        self.check(
            "every acknowledged command is in the journal",
            not missing,
            f"answered but not journaled: {sorted(missing)}",
        )
        allowed = m.acknowledged | ({self.in_flight.command_id} if self.in_flight else set())
        phantom = journaled - allowed
        self.check(
            "the journal holds no command nobody sent", not phantom, f"unknown: {sorted(phantom)}"
        )
        drawn = [r["data"] for r in mine if r["type"] == "pick.drawn"]
        numbers = [d["pick"] for d in drawn]
        self.check(
            "journaled pick numbers are 1..n",
            numbers == list(range(1, len(numbers) + 1)),
            str(numbers),
        )
        cards = [d["card"] for d in drawn]
        self.check(
            "no player drawn twice in a session",
            len(cards) == len(set(cards)),
            lambda: str(Counter(cards).most_common(3)),
        )
        for d in drawn:
            known = m.picks.get(d["pick"])
            if known is not None:
                self.check(
                    "journaled pick matches what the handheld was shown",
                    known["deadline"] == d["deadline"]
                    and known["card"] == mask(d["card"])
                    and (known["slot"], known["attempt"]) == (d["slot"], d["attempt"]),
                    lambda d=d, known=known: f"{d} / {known}",  # type: ignore[misc]
                )
        self.winners.update(cards)
        self.in_flight_committed = self.in_flight is not None and (
            self.in_flight.command_id in journaled
        )
        if first:
            snapshots = self.db.floor_snapshots()
            self.report.kills[f"down_with{'' if snapshots else 'out'}_floor_snapshot"] += 1
        if self.in_flight is not None and first:
            self.report.kills[
                "in_flight_committed" if self.in_flight_committed else "in_flight_lost"
            ] += 1
        self.check_seed_at_rest(mine)

    def check_seed_at_rest(self, records: list[dict[str, Any]]) -> None:
        """While a session is open its seed exists only sealed; after close, only revealed."""
        m = self.model
        sealed = self.db.sealed(m.session_id)
        opened = [r for r in records if r["type"] == "session.opened"]
        if not opened:
            self.check("no sealed seed before open", sealed is None, "a seed is sealed already")
            return
        self.check("one session.opened record", len(opened) == 1, str(len(opened)))
        self.check("the opened session's seed is sealed", sealed is not None, "no sealed seed")
        assert sealed is not None
        if self.sealer is None:
            self.sealer = SeedSealer(load_key(self.folder / "seed.key"))
        seed = self.sealer.unseal(m.session_id, *sealed)
        committed = opened[0]["data"]["commitment"]
        self.check("the sealed seed is the committed seed", commit_to(seed) == committed, committed)
        if m.commitment is not None:
            self.check(
                "the commitment never changes",
                committed == m.commitment,
                f"{committed} != {m.commitment}",
            )
        closed = any(r["type"] == "session.closed" for r in records)
        places = self.db.seed_places(seed, raw_files=not closed)
        if closed:
            allowed = [p for p in places if p.endswith("(session.closed)")]
            self.check(
                "after close the seed is only in the session.closed record",
                len(allowed) == 1 and len(places) == 1,
                str(places),
            )
        else:
            self.check(
                "an open session's seed is nowhere in the database in plain text",
                not places,
                str(places),
            )

    # ----------------------------------------------------------- after restart

    def check_after_restart(self) -> None:
        d = self.d
        m = self.model
        started = [e for e in d.log_events() if e.get("event") == "service started"]
        if started:
            key = "replayed" if started[0].get("floor_events_replayed") else "not_replayed"
            self.report.kills[f"restart_floor_events_{key}"] += 1
        head = d.get("/api/journal/head")
        self.see_head(head, "GET /api/journal/head after restart")
        summary = self.settled_summary()
        extra = self.compare(summary, allow_extra=self.in_flight is not None)
        self.note_timers(summary)
        self.check_pools()
        if self.in_flight is not None:
            self.retry_in_flight(self.in_flight, extra, summary)
            self.in_flight = None
        draws = [cid for cid, n in m.draws.items() if n in m.picks]
        if draws:
            self.retry_draw(self.rng.choice(draws))

    def compare(self, summary: dict[str, Any], allow_extra: bool) -> dict[str, Any] | None:
        """The restarted daemon's session against the model; returns an extra pick, if any."""
        m = self.model
        picks = summary["picks"]
        numbers = [p["pick"] for p in picks]
        self.check(
            "pick numbers are 1..n with no gap or duplicate",
            numbers == list(range(1, len(picks) + 1)),
            str(numbers),
        )
        self.check(
            "no acknowledged pick is lost, and at most the in-flight draw is added",
            len(m.picks) <= len(picks) <= len(m.picks) + (1 if allow_extra else 0),
            f"{len(picks)} picks, {len(m.picks)} acknowledged",
        )
        expected_state = m.state
        if self.in_flight is not None and self.in_flight.action == "open":
            expected_state = summary["state"] if summary["state"] in ("scheduled", "open") else "?"
        self.check(
            "the session state survives",
            summary["state"] == expected_state,
            f"{summary['state']} != {expected_state}",
        )
        if m.commitment is None:  # only our own open can have made one
            m.commitment = summary["commitment"]
        if m.commitment is not None:
            self.check(
                "the commitment is unchanged",
                summary["commitment"] == m.commitment,
                f"{summary['commitment']} != {m.commitment}",
            )
        now = utc_now()
        for p in picks:
            self.check("API shows masked cards only", bool(MASKED_CARD.fullmatch(p["card"])),
                       p["card"])  # fmt: skip
            known = m.picks.get(p["pick"])
            if known is None:
                continue
            self.check(
                "an acknowledged pick keeps its card, slot, attempt, pool and deadline",
                same_pick(known, p),
                lambda p=p, known=known: f"{known} / {p}",  # type: ignore[misc]
            )
            self.check_state(known, p, now)
        for kind, quota in summary["quotas"].items():
            filled = [p["slot"] for p in picks if p["kind"] == kind and p["state"] in FILLED]
            self.check(
                "quotas are never exceeded",
                len(filled) <= quota and len(set(filled)) == len(filled),
                f"{kind}: slots {filled}, quota {quota}",
            )
        return picks[len(m.picks)] if len(picks) > len(m.picks) else None

    def check_state(self, known: dict[str, Any], actual: dict[str, Any], now: datetime) -> None:
        """A pick's state is what was acknowledged, or a no-show its claim timer made."""
        n = actual["pick"]
        deadline = datetime.fromisoformat(known["deadline"])
        in_flight = self.in_flight
        if in_flight is not None and in_flight.pick == n:
            allowed = {known["state"], TARGET_STATE[in_flight.action]}
        else:
            allowed = {known["state"]}
        if "pending" in allowed:
            allowed.add("no_show")
        self.check(
            "a pick's state is what was acknowledged (or its timer's no-show)",
            actual["state"] in allowed,
            f"pick {n}: {actual['state']}, expected one of {sorted(allowed)}",
        )
        if actual["state"] == known["state"]:
            self.check(
                "an envelope prize and a void reason survive",
                (actual["prize"], actual["void_reason"])
                == (known.get("prize"), known.get("void_reason")),
                lambda: f"pick {n}: {actual} / {known}",
            )
        if (
            actual["state"] == "no_show"
            and "no_show" not in {known["state"]}
            and (in_flight is None or in_flight.action != "no_show" or in_flight.pick != n)
        ):
            self.check(
                "a claim timer never fires before the deadline",
                deadline <= now,
                f"pick {n}: no_show at {now.isoformat()}, deadline {known['deadline']}",
            )

    def settled_summary(self) -> dict[str, Any]:
        """The session once the restarted claim timer has caught up with the clock.

        Pending picks whose deadline passed while the daemon was down must become
        no-shows (the daemon's tick runs every 0.2 s); waiting for that is a poll with a
        deadline, and a pick still pending well after its deadline is a violation.
        """
        m = self.model

        def settled() -> dict[str, Any] | None:
            summary: dict[str, Any] = self.d.get(f"/api/sessions/{m.session_id}")
            # no slack: a pick whose deadline passed just before the kill, between two
            # ticks, is still pending until the restarted daemon's first tick; wait for it
            now = utc_now().timestamp()
            overdue = [
                p["pick"]
                for p in summary["picks"]
                if p["state"] == "pending"
                and datetime.fromisoformat(p["deadline"]).timestamp() < now
            ]
            return None if overdue else summary

        summary: dict[str, Any] = poll(
            "pending picks past their deadline become no_show after a restart", settled, 10.0
        )
        return summary

    def note_timers(self, summary: dict[str, Any]) -> None:
        """Timers across the restart: kept when not due, fired when due while down."""
        m = self.model
        for p in summary["picks"]:
            known = m.picks.get(p["pick"])
            if known is None or known["state"] != "pending":
                continue
            deadline = datetime.fromisoformat(known["deadline"])
            if p["state"] == "no_show":
                if self.killed_at <= deadline <= self.d.ready_at:
                    self.report.checks[EXPIRES_WHILE_DOWN] += 1
                known["state"] = "no_show"
            elif p["state"] == "pending":
                self.check(
                    KEEPS_DEADLINE,
                    p["deadline"] == known["deadline"] and deadline > self.killed_at,
                    f"{p} / {known}",
                )

    def check_pools(self) -> None:
        """The floor is back (snapshot + replayed events): both pools have players."""

        def filled() -> bool:
            pools = self.d.get("/api/pools")
            totals = Counter[str]()
            for row in pools:
                totals[row["pool"]] += row["eligible"]
            return totals["slots"] > 0 and totals["tables"] > 0

        poll("both pools have eligible players after a restart", filled, 10.0)
        self.report.checks["both pools have eligible players after a restart"] += 1

    def retry_in_flight(
        self, cmd: Command, extra: dict[str, Any] | None, summary: dict[str, Any]
    ) -> None:
        """The handheld retries the command it never heard back about: exactly once."""
        committed = self.in_flight_committed
        status, body = self.d.post(cmd.path, cmd.body)
        if status == 409:
            self.check(
                "a refused retry had not committed before the kill",
                not committed,
                f"{cmd.command_id} is journaled, yet the retry was refused: {body}",
            )
            self.model.refused.add(cmd.command_id)
            self.report.checks["in-flight command retried: refused now"] += 1
            return
        self.check("in-flight retry answered", status == 200, f"{status} {body}")
        self.check(
            "an in-flight command that committed replays, one that did not runs now",
            body["replayed"] == committed,
            f"{cmd.action} {cmd.command_id}: journaled={committed}, answer {body}",
        )
        if cmd.action == "draw":
            pick = body["pick"]
            if committed and pick is not None:
                self.check(
                    "the committed in-flight draw is the extra pick",
                    extra is not None and same_pick(extra, pick),
                    f"extra {extra}, retry {pick}",
                )
            else:
                self.check(
                    "an in-flight draw that did not commit left no pick",
                    extra is None,
                    str(extra),
                )
        self.acknowledge(cmd, status, body)
        again_status, again = self.d.post(cmd.path, cmd.body)
        self.check(
            "a second retry replays the same outcome",
            again_status == 200
            and again["replayed"]
            and (again["pick"] or {}).get("pick") == (body["pick"] or {}).get("pick"),
            f"{again_status} {again} after {body}",
        )
        name = "replayed" if committed else "performed once"
        self.report.checks[f"in-flight command retried: {name}"] += 1
        after = self.d.get(f"/api/sessions/{self.model.session_id}")
        grown = len(after["picks"]) - len(summary["picks"])
        self.check(
            "retrying never creates a second pick",
            grown == (1 if cmd.action == "draw" and not committed and body["pick"] else 0),
            f"{grown} new pick(s) after retrying {cmd.action}",
        )

    def retry_draw(self, command_id: str) -> None:
        m = self.model
        n = m.draws[command_id]
        known = m.picks[n]
        body = {"command_id": command_id, "kind": known["kind"]}
        status, answer = self.d.post(f"/api/sessions/{m.session_id}/draw", body)
        self.check(
            "retrying an acknowledged draw replays the same pick",
            status == 200 and answer["replayed"] and same_pick(known, answer["pick"]),
            lambda: f"{command_id} (pick {n}): {status} {answer}",
        )

    def wait_pools(self) -> None:
        self.check_pools()

    # ---------------------------------------------------------- end of session

    def finish_session(self) -> None:
        """Close, kill -9 once more, and check the closed session offline."""
        m = self.model
        if m.state == "scheduled":
            self.send(self.choose())
        cmd = Command(
            "close",
            f"/api/sessions/{m.session_id}/close",
            {"command_id": self.next_id(), "force": True},
        )
        status, body = self.send(cmd)
        self.check("close is accepted", status == 200, str(body))
        before = self.d.get(f"/api/sessions/{m.session_id}")
        self.check("closed", before["state"] == "closed", before["state"])
        seed = bytes.fromhex(before["seed"])
        self.check(
            "the revealed seed matches the commitment made at open",
            commit_to(seed) == before["commitment"] == m.commitment,
            f"{before['commitment']} / {m.commitment}",
        )
        self.kill("after_close")
        self.check_while_down()
        self.start_daemon()
        self.d.wait_ready()
        after = self.d.get(f"/api/sessions/{m.session_id}")
        self.check(
            "a closed session survives a kill -9 unchanged",
            strip_head(after) == strip_head(before),
            lambda: diff_summaries(before, after),
        )
        self.report.picks += len(after["picks"])
        head = self.d.get("/api/journal/head")
        self.see_head(head, "head after close")
        self.verify_offline(Head(int(head["seq"]), head["hash"]))

    def verify_offline(self, head: Head) -> None:
        """`raps verify` on the database, and on an export checked against the head."""
        sid = self.model.session_id
        raps = raps_command()
        done = subprocess.run(
            [*raps, "verify", self.db_url], capture_output=True, text=True, timeout=120
        )
        self.check(
            "raps verify DB_URL passes",
            done.returncode == 0 and "RESULT: OK" in done.stdout
            and f"session {sid}: OK" in done.stdout,
            f"exit {done.returncode}\n{done.stdout}{done.stderr}",
        )  # fmt: skip
        export = self.folder / f"{sid}.jsonl"
        done = subprocess.run(
            [*raps, "export", self.db_url, sid, "-o", str(export)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        self.check("raps export", done.returncode == 0, done.stderr)
        done = subprocess.run(
            [*raps, "verify", str(export), "--head", str(head)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        self.check(
            "raps verify EXPORT --head SEQ:HASH passes",
            done.returncode == 0 and "RESULT: OK" in done.stdout,
            f"exit {done.returncode}\n{done.stdout}{done.stderr}",
        )
        records = [json.loads(line)["record"] for line in export.read_text().splitlines()]
        self.winners.update(r["data"]["card"] for r in records if r["type"] == "pick.drawn")
        self.check_logs()

    def check_logs(self) -> None:
        """No daemon log line ever holds a seed or a winner's full card number."""
        logs = sorted((self.folder / "logs").glob("daemon-*.log"))
        text = "\n".join(p.read_text(errors="replace") for p in logs)
        seeds = [
            json.loads(r[0])["data"]["seed"]
            for r in self.db.rows("SELECT record FROM journal WHERE type = 'session.closed'")
        ]
        leaked = [s for s in seeds if s in text or s.upper() in text]
        self.check("no seed in the daemon logs", not leaked, f"{len(leaked)} seed(s) logged")
        cards = [c for c in self.winners if c in text]
        self.check("no winner's full card number in the logs", not cards,
                   f"{len(cards)} card(s), e.g. {mask(cards[0]) if cards else ''}")  # fmt: skip


def _sleep_until(moment: datetime) -> None:
    time.sleep(max(0.0, (moment - utc_now()).total_seconds()))


def mask(card: str) -> str:
    return "*" * (len(card) - 4) + card[-4:]


def same_pick(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Same draw: everything the pick was when drawn (its state may have moved on)."""
    return all(a.get(k) == b.get(k) for k in PICK_FIELDS)


def strip_head(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in summary.items() if k != "journal_head"}


def diff_summaries(before: dict[str, Any], after: dict[str, Any]) -> str:
    lines = []
    for k in before:
        if k not in ("picks", "journal_head") and before[k] != after.get(k):
            lines.append(f"{k}: {before[k]!r} -> {after.get(k)!r}")
    for p, q in zip(before["picks"], after["picks"], strict=False):
        changed = {k: (p[k], q.get(k)) for k in p if p[k] != q.get(k)}
        if changed:
            lines.append(f"pick {p['pick']}: {changed}")
    if len(before["picks"]) != len(after["picks"]):
        lines.append(f"{len(before['picks'])} picks -> {len(after['picks'])}")
    return "; ".join(lines)


# ------------------------------------------------------------------------- main


def run_one(
    database: str, cycles: int, seed: int | None, pg_url: str | None, folder: Path
) -> Report:
    drop: Callable[[], None] | None = None
    if database == "sqlite":
        db_url = f"sqlite:///{(folder / 'raps.db').resolve()}"
    else:
        db_url, drop = create_pg_database(pg_url)
    soak = CrashSoak(folder, db_url, cycles, seed=seed)
    print(f"{database}: {cycles} kill -9 cycles (seed {soak.seed}) in {folder}", flush=True)
    try:
        soak.run()
    except InvariantViolation as e:
        soak.report.failures.append(str(e))
        print(f"{database}: FAILED: {e}", flush=True)
    finally:
        if drop is not None:
            drop()
    return soak.report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=200, help="kill cycles per database")
    parser.add_argument("--quick", action="store_true", help="10 cycles per database")
    parser.add_argument("--db", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument("--seed", type=int, help="seed of the random kill points")
    parser.add_argument("--pg-url", help="PostgreSQL server URL to create a database on")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args(argv)
    cycles = 10 if args.quick else args.cycles
    databases = ["sqlite", "postgresql"] if args.db == "both" else [args.db]
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="raps-soak-"))
    reports = []
    t0 = time.monotonic()
    try:
        for database in databases:
            folder = base / database
            folder.mkdir()
            reports.append(run_one(database, cycles, args.seed, args.pg_url, folder))
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    checks: Counter[str] = Counter()
    for r in reports:
        checks.update(r.checks)
    summary = {
        "cycles": sum(r.cycles for r in reports),
        "failures": sum(len(r.failures) for r in reports),
        "databases": [r.as_dict(with_checks=False) for r in reports],
        "invariants_checked": dict(sorted(checks.items())),
        "seconds": round(time.monotonic() - t0, 1),
    }
    print(json.dumps(summary, separators=(",", ":")))
    return 1 if summary["failures"] else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The daemon under the crash soak: its config (a small simulated floor tuned for many
short lives), the `raps run` process driven over its HTTP API, and a read-only look
at its database while it is down (SQLite or a throwaway PostgreSQL database)."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import argon2
import httpx

from bench.harness import RapsProcess
from bench.soak_model import InvariantViolation, utc_now
from raps.chain import Entry
from raps.config import hash_secret

# A small floor whose pools fill within seconds. The simulated source back-fills
# WARMUP_SECONDS of play on every start, blocking the daemon's loop meanwhile, so
# rate x warm-up is kept small (9,000 events) to keep each restart short.
MACHINES = 200
TABLES = 20
PLAYERS = 1500
EVENTS_PER_SECOND = 30
WARMUP_SECONDS = 300
THRESHOLD_POINTS = 5
# Long enough that picks drawn just before a kill are still pending after the restart,
# even on a loaded machine (a restart takes about 3 s, 10 s seen at a load average of 6);
# the soak holds the daemon down past a deadline once per session to see one run out.
CLAIM_SECONDS = 20.0
QUOTAS = {"slots": 40, "tables": 20}
# Short lives need short intervals: a restart then loads a snapshot and replays the
# events flushed after it (the first life replays from the log alone).
SNAPSHOT_SECONDS = 0.5
FLUSH_SECONDS = 0.2
TICK_SLACK = 1.0  # the daemon's claim-timer tick runs every 0.2 s; this is generous
START_TIMEOUT = 60.0


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
rehearsal = true  # any time, side by side (live sessions each need a window of their own)
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


# --------------------------------------------------------------------------- daemon


class DaemonProcess(RapsProcess):
    """One `raps run` subprocess: started, waited for, and killed with SIGKILL."""

    def __init__(self, config: Path, folder: Path, token: str, number: int) -> None:
        super().__init__(
            config,
            folder / "ready.json",
            folder / "logs" / f"daemon-{number:04d}.log",
            cwd=folder,
            name=f"daemon {number}",
            fail=InvariantViolation,
        )
        self.folder = folder
        self.token = token
        self.number = number
        self.url = ""
        self.client: httpx.Client | None = None
        self.spawned_at = 0.0
        self.ready_at = utc_now()

    def spawn(self, create_key: bool = False) -> None:
        super().spawn(create_key)
        self.spawned_at = time.monotonic()

    def wait_ready(self) -> None:
        self.wait_until_ready(START_TIMEOUT, 0.05)
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
        super().kill9()
        if self.client is not None:
            self.client.close()
            self.client = None

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

"""What the chaos bench and the alerts test share: a private PostgreSQL, the daemon's
config, a numbered MQTT publisher and a marketing handheld.

- `PrivatePostgres`: a cluster of our own (initdb -A trust + pg_ctl as the postgres
  user, STACK.md), on a free port, that the faults stop, restart, cut connections of,
  and fill the disk of: as root its data directory is on a small tmpfs of its own, and a
  ballast file fills it (a real disk full); otherwise a trigger makes floor-log writes
  fail with "No space left on device" (the simulated one).
- `chaos_config`: a listed floor (MQTT machines M01-M04 fed by `Publisher`, SAS machines
  M05-M08 on a simulated in-memory loop), the database on that cluster, the private
  broker, rehearsal sessions, a ticket draw open now, a marketing and a kiosk token.
- `Publisher`: card-ins and games for one card per MQTT machine, QoS 1, every message
  numbered (`seq`, `boot`); a message counts as published once the broker acknowledged
  it, and a publish that failed is sent again with the same event id.
- `Handheld`: draw commands over the API, remembering every command that was answered
  (thread-safe); `Draws`: the chaos bench's handheld user in a thread of their own.

Shared by bench/chaos.py and tests/test_alerts_fire.py; both import it as
`bench.chaos_infra` with the repository root on sys.path.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import aiomqtt
import httpx

from raps.config import hash_secret

MQTT_MACHINES = ("M01", "M02", "M03", "M04")
PICKS_PER_SESSION = 4  # of the slot quota's 6: a session never runs out before it is closed
SAS_MACHINES = ("M05", "M06", "M07", "M08")
TICKET_DRAW = "chaos-draw"
TZ = ZoneInfo("Africa/Johannesburg")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _pg_bin(name: str) -> str:
    installed = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"), reverse=True)
    found = shutil.which(name) or next((str(p) for p in installed), None)
    if found is None:
        raise RuntimeError(f"PostgreSQL's {name} is not installed (apt-get install postgresql)")
    return found


def _as_postgres() -> list[str]:
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


SMALL_DISK = "256m"  # the data directory's own filesystem (as root): room to fill


class PrivatePostgres:
    """A throwaway PostgreSQL cluster on a free port: started, stopped, restarted.

    With `small_disk` (and root, which mounting needs) its data directory is on a tmpfs
    of its own (`SMALL_DISK`): `fill_disk` fills it with a ballast file, a disk as full
    as a real one, and frees it again.  Without, `fill_disk` falls back to a trigger
    that refuses floor-log writes with the same error.
    """

    def __init__(self, small_disk: bool = False) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="raps-chaos-pg-"))
        self.disk: Path | None = None
        if os.geteuid() == 0:
            if small_disk:
                self.disk = self.base / "disk"
                self.disk.mkdir()
                opts = f"size={SMALL_DISK},mode=0700"
                subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "raps-chaos", str(self.disk)],
                               check=True, capture_output=True)  # fmt: skip
                shutil.chown(self.disk, "postgres", "postgres")
            shutil.chown(self.base, "postgres", "postgres")
        self.data = (self.disk or self.base) / "data"
        self.ballast = (self.disk or self.base) / "ballast"
        self.port = free_port()
        self.dbname = "raps"
        subprocess.run([*_as_postgres(), _pg_bin("initdb"), "-A", "trust", "-U", "postgres",
                        "-D", str(self.data)], check=True, capture_output=True)  # fmt: skip

    @property
    def disk_mode(self) -> str:
        """How `fill_disk` fills the disk: "tmpfs" (a real full filesystem) or "trigger"."""
        return "tmpfs" if self.disk is not None else "trigger"

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{self.dbname}"

    def _ctl(self, *args: str) -> None:
        subprocess.run([*_as_postgres(), _pg_bin("pg_ctl"), "-D", str(self.data), *args],
                       check=True, capture_output=True, timeout=60)  # fmt: skip

    def start(self) -> None:
        # small WAL: the tmpfs has room for the data and a ballast to fill the rest
        opts = (f"-p {self.port} -k {self.base} -c listen_addresses=127.0.0.1 "
                "-c min_wal_size=32MB -c max_wal_size=64MB")  # fmt: skip
        self._ctl("-o", opts, "-l", str(self.base / "log"), "-w", "start")

    def running(self) -> bool:
        done = subprocess.run([*_as_postgres(), _pg_bin("pg_ctl"), "-D", str(self.data),
                               "status"], capture_output=True, timeout=30)  # fmt: skip
        return done.returncode == 0

    def stop(self) -> None:
        self._ctl("-m", "fast", "-w", "stop")

    def restart(self) -> None:
        self.stop()
        self.start()

    def sql(self, statement: str, dbname: str | None = None) -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(host="127.0.0.1", port=self.port, user="postgres",
                             dbname=dbname or self.dbname, autocommit=True) as conn:  # fmt: skip
            cur = conn.execute(statement.encode())
            return list(cur.fetchall()) if cur.description else []

    def create_database(self) -> None:
        self.sql(f'CREATE DATABASE "{self.dbname}"', dbname="postgres")

    def kill_connections(self) -> int:
        """Terminate every connection to the daemon's database (its pool reconnects)."""
        rows = self.sql(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            f"WHERE datname = '{self.dbname}' AND pid <> pg_backend_pid()",
            dbname="postgres",
        )
        return int(rows[0][0])

    def fill_disk(self, on: bool) -> None:
        """The database's disk full (`on`) or freed again; see the class docstring.

        Freed, PostgreSQL goes on by itself, or, had it stopped (a checkpoint or WAL
        write that failed is a PANIC), is started again as its service manager would."""
        if self.disk is None:
            self.fail_floor_log(on)
            return
        if on:
            free = shutil.disk_usage(self.disk).free
            with self.ballast.open("wb", buffering=0) as f:
                with contextlib.suppress(OSError):
                    os.posix_fallocate(f.fileno(), 0, max(0, free - (1 << 20)))
                f.seek(0, os.SEEK_END)
                for chunk in (1 << 16, 1 << 12, 1):  # then the last bytes: as full as it gets
                    with contextlib.suppress(OSError):
                        while True:
                            f.write(b"\0" * chunk)
        else:
            self.ballast.unlink(missing_ok=True)
            deadline = time.monotonic() + 20
            while not self.running():
                if time.monotonic() > deadline:
                    self.start()
                    break
                time.sleep(0.2)

    def fail_floor_log(self, on: bool) -> None:
        """The disk is full for the floor log: a trigger aborts every batch INSERT."""
        if on:
            self.sql(
                "CREATE OR REPLACE FUNCTION raps_chaos_full() RETURNS trigger AS $$ BEGIN "
                "RAISE EXCEPTION 'could not extend file: No space left on device'; END "
                "$$ LANGUAGE plpgsql"
            )
            self.sql("CREATE TRIGGER raps_chaos_full BEFORE INSERT ON floor_event_batches "
                     "FOR EACH ROW EXECUTE FUNCTION raps_chaos_full()")  # fmt: skip
        else:
            self.sql("DROP TRIGGER IF EXISTS raps_chaos_full ON floor_event_batches")

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.stop()
        if self.disk is not None:
            subprocess.run(["umount", "-l", str(self.disk)], capture_output=True)
        shutil.rmtree(self.base, ignore_errors=True)


def chaos_config(
    folder: Path, site: str, db_url: str, mqtt_port: int, token: str, kiosk_token: str,
    sessions: int = 4, games_per_minute: float = 120.0, claim_seconds: int = 600,
    idle_seconds: int = 120, ticket_rate: int = 1,
) -> str:  # fmt: skip
    """The daemon's TOML (see the module docstring); `ticket_rate` points per ticket."""
    now_local = datetime.now(TZ).replace(microsecond=0)

    def at(hours: float) -> str:
        return (now_local + timedelta(hours=hours)).isoformat(timespec="seconds")

    parts = [
        f'[site]\nid = "{site}"\ntimezone = "{TZ.key}"\n',
        f'[storage]\nurl = "{db_url}"\nevent_flush_seconds = 0.2\n',
        f'[credentials]\nseed_key_file = "{folder / "seed.key"}"\n',
        f'[http]\nhost = "127.0.0.1"\nport = 0\nmetrics_token = "{token}"\n',
        f'[mqtt]\nenabled = true\nhost = "127.0.0.1"\nport = {mqtt_port}\n'
        f'client_id = "raps-{site}"\n',
        f'[sources]\nstate_dir = "{folder / "sas-state"}"\n',
    ]
    parts.append(f"[floor]\nidle_seconds = {idle_seconds}\n")
    for m in (*MQTT_MACHINES, *SAS_MACHINES):
        parts.append(f'[[floor.machines]]\nid = "{m}"\narea = "Main Floor"\nbank = "B1"\n'
                     f'number = "{m[1:]}"\n')  # fmt: skip
    parts.append('[[floor.tables]]\nid = "T1"\narea = "Pit 1"\nseats = 7\n')
    parts.append('[[sources.sas]]\nname = "loop1"\ntransport = "memory"\n')
    for i, m in enumerate(SAS_MACHINES, start=1):
        parts.append(f'[[sources.sas.machines]]\naddress = {i}\nmachine = "{m}"\n'
                     "denomination = 10\n")  # fmt: skip
    # a game lasts 0.2 s (the default 2.5 s held a machine to 24 games a minute)
    parts.append(f"[sources.sas.simulate]\ngames_per_minute = {games_per_minute}\n"
                 "game_seconds = 0.2\nseed = 7\n")  # fmt: skip
    parts.append(
        '[[promotions]]\nid = "chaos"\nthreshold_points = 1\n'
        'window = { start = "00:00", end = "24:00" }\n'
    )
    for n in range(1, sessions + 1):
        parts.append(f'[[sessions]]\nid = "s{n}"\npromotion = "chaos"\nstarts = "{at(0)}"\n'
                     f"claim_seconds = {claim_seconds}\nrehearsal = true\n")  # fmt: skip
    parts.append(
        '[[ticket_programs]]\nid = "chaos-tickets"\npromotion = "chaos"\n'
        f"rates = {{ ten = {ticket_rate}, jack = {ticket_rate}, queen = {ticket_rate}, "
        f"king = {ticket_rate}, ace = {ticket_rate} }}\n"
        "complimentary = { ten = 1, jack = 2, queen = 3, king = 4, ace = 5 }\n"
        f'[ticket_programs.period]\nkind = "fixed_start_to_draw"\nstart = "{at(-24)}"\n'
        f'[[ticket_draws]]\nid = "{TICKET_DRAW}"\nprogram = "chaos-tickets"\n'
        f'at = "{at(6)}"\nopens = "{at(-1)}"\ncloses = "{at(5)}"\n'
    )
    parts.append(f'[[users]]\nname = "ops"\nrole = "marketing"\npassword_hash = '
                 f'"{hash_secret(token)}"\napi_token_hash = "{hash_secret(token)}"\n')  # fmt: skip
    parts.append(f'[[users]]\nname = "kiosk"\nrole = "kiosk"\n'
                 f'api_token_hash = "{hash_secret(kiosk_token)}"\n')  # fmt: skip
    parts.append('[logging]\nformat = "json"\nlevel = "info"\n')
    return "\n".join(parts)


def card_of(machine: str) -> str:
    return f"60047{machine[1:]:0>5}0001"


@dataclass
class Publisher:
    """Numbered MQTT traffic for the MQTT machines; see the module docstring."""

    host: str
    port: int
    site: str
    boot: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    games: dict[str, int] = field(default_factory=dict)  # acknowledged by the broker
    seq: dict[str, int] = field(default_factory=dict)
    made: dict[str, int] = field(default_factory=dict)  # games numbered so far
    pending: list[tuple[str, str, str | None]] = field(default_factory=list)
    failures: int = 0

    def _topic(self, machine: str | None) -> str:
        base = f"raps/v1/{self.site}"
        return f"{base}/slots/{machine}/events" if machine else f"{base}/players"

    async def connect(self) -> aiomqtt.Client:
        client = aiomqtt.Client(self.host, self.port, identifier=f"pub-{self.boot}",
                                max_inflight_messages=200)  # fmt: skip
        client.pending_calls_threshold = 1_000_000
        await client.__aenter__()
        return client

    def _queue(self, machine: str | None, body: dict[str, Any]) -> None:
        key = machine or "players"
        n = self.seq.get(key, 0) + 1
        self.seq[key] = n
        body = {**body, "seq": n, "boot": self.boot}
        self.pending.append((self._topic(machine), json.dumps(body), machine))

    def directory(self) -> None:
        ts = datetime.now(UTC).isoformat()
        for i, m in enumerate(MQTT_MACHINES):
            self._queue(None, {"event_id": f"dir-{self.boot}-{m}", "ts": ts,
                               "type": "player_upserted", "card": card_of(m),
                               "tier": ("ten", "jack", "queen", "king")[i],
                               "display_name": f"Chaos P{i}", "age_verified": True})  # fmt: skip
            self._queue(m, {"event_id": f"in-{self.boot}-{m}", "ts": ts, "type": "card_inserted",
                            "machine": m, "card": card_of(m)})  # fmt: skip

    def games_round(self) -> None:
        """One game per MQTT machine, queued."""
        ts = datetime.now(UTC).isoformat()
        for m in MQTT_MACHINES:
            n = self.made.get(m, 0) + 1
            self.made[m] = n
            self._queue(m, {"event_id": f"g-{self.boot}-{m}-{n}", "ts": ts,
                            "type": "game_played", "machine": m, "wager": 1000})  # fmt: skip

    async def flush(self, client: aiomqtt.Client) -> bool:
        """Publish what is queued; False when some failed (kept for the next try, same
        event ids: the daemon drops a copy that did arrive as a duplicate)."""
        todo, self.pending = self.pending, []
        results = await asyncio.gather(
            *(client.publish(topic, body, qos=1, timeout=5) for topic, body, _ in todo),
            return_exceptions=True,
        )
        for item, result in zip(todo, results, strict=True):
            if isinstance(result, BaseException):
                self.pending.append(item)
            elif item[2] is not None and '"game_played"' in item[1]:
                self.games[item[2]] = self.games.get(item[2], 0) + 1
        if self.pending:
            self.failures += 1
        return not self.pending


class Handheld:
    """Marketing's draw commands over the API; every answered command id is remembered."""

    def __init__(self, url: str, token: str) -> None:
        self.client = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"},
                                   timeout=15)  # fmt: skip
        self.answered: dict[str, str] = {}  # command id -> session id
        self.refused = 0
        self.n = 0
        self.inflight = 0  # commands sent and not answered yet
        self.refusals: Counter[str] = Counter()  # why, by command and HTTP status
        self.refusal_texts: dict[str, str] = {}  # by the same key: the last answer's text
        self._lock = threading.Lock()

    def rebase(self, url: str) -> None:
        self.client.base_url = httpx.URL(url)

    def command(self, session: str, path: str, **body: Any) -> dict[str, Any] | None:
        """One command with a new id; its answer, or None (an error or no answer)."""
        with self._lock:
            self.n += 1
            cid = f"{session}-c{self.n}-{int(time.time() * 1000)}"
        self.inflight += 1
        try:
            r = self.client.post(f"/api/sessions/{session}/{path}",
                                 json={**body, "command_id": cid})  # fmt: skip
        except httpx.HTTPError as e:
            self.refused += 1
            self.refusals[f"{path.split('/')[-1]}: {type(e).__name__}"] += 1
            return None
        finally:
            self.inflight -= 1
        if not r.is_success:
            self.refused += 1
            key = f"{path.split('/')[-1]}: {r.status_code}"
            self.refusals[key] += 1
            self.refusal_texts[key] = f"{session}: {r.text[:160]}"
            return None
        with self._lock:
            self.answered[cid] = session
        data: dict[str, Any] = r.json()
        return data

    def answered_ids(self) -> dict[str, str]:
        """A copy of the answered commands (the draws thread adds to them)."""
        with self._lock:
            return dict(self.answered)

    def state(self, session: str) -> str | None:
        """The session's state (scheduled, open, closed), or None without an answer."""
        summary = self.summary(session)
        return None if summary is None else str(summary.get("state"))

    def summary(self, session: str) -> dict[str, Any] | None:
        """The session as GET /api/sessions/{id} shows it, or None without an answer."""
        try:
            r = self.client.get(f"/api/sessions/{session}")
        except httpx.HTTPError:
            return None
        data: dict[str, Any] = r.json() if r.is_success else {}
        return data or None

    def wait_inbound(self, seconds: float) -> None:
        """Until the daemon's MQTT ingest is subscribed (its link gauge says so)."""
        deadline = time.monotonic() + seconds
        up = 'raps_source_link_up{kind="mqtt",name="inbound"} 1.0'
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if up in self.client.get("/metrics").text.splitlines():
                    return
            time.sleep(0.05)
        raise RuntimeError(f"the daemon's MQTT ingest was not subscribed in {seconds} s")

    def points(self, card: str) -> float | None:
        try:
            r = self.client.get(f"/api/tickets/players/{card}")
        except httpx.HTTPError:
            return None
        if not r.is_success:
            return None
        return float(r.json()["raps"][0]["points_today"])


class Draws(threading.Thread):
    """The marketing handheld in its own thread: one command after another (opening
    sessions, drawing, settling each pick, closing), while the faults land; `pause()`
    waits until the command in flight has its answer (or none)."""

    def __init__(self, hand: Handheld, seed: int, sessions: int) -> None:
        super().__init__(daemon=True, name="draws")
        self.hand = hand
        self.rng = random.Random(seed)
        self.sessions = sessions
        self.session = 0
        self.closed = 0  # the last session known closed
        self.picks: list[int] = []
        self.stop = threading.Event()
        self.paused = threading.Event()
        self.idle = threading.Event()
        self.errors: list[str] = []
        self.exhausted = False

    def run(self) -> None:
        while not self.stop.is_set():
            if self.paused.is_set():
                self.idle.set()
                self.stop.wait(0.02)
                continue
            try:
                self.step()
            except Exception as e:  # reported by the driver
                self.errors.append(f"{type(e).__name__}: {e}")
            self.stop.wait(self.rng.uniform(0.05, 0.4))

    def pause(self, timeout: float = 60.0) -> bool:
        self.idle.clear()
        self.paused.set()
        return not self.is_alive() or self.idle.wait(timeout)

    def resume(self) -> None:
        self.paused.clear()

    @property
    def sid(self) -> str:
        return f"s{self.session}"

    def _next_session(self) -> bool:
        """Close the session (forced) and open the next; False when the close was refused
        (tried again on the next step) or no session is left (then the handheld stops)."""
        if self.session and self.closed != self.session:
            # refused: closed already (a close whose answer a kill cut off), never opened,
            # or still open (an outage: closed on the next step)
            closing = self.hand.command(self.sid, "close", force=True)
            if closing is None and self.hand.state(self.sid) in (None, "open"):
                return False
            self.closed = self.session
        if self.session >= self.sessions:
            if not self.exhausted:
                self.exhausted = True
                self.errors.append(f"all {self.sessions} sessions used: no more draws")
            return False
        self.session += 1
        self.picks = []
        self.hand.command(self.sid, "open")
        return True

    def step(self) -> None:
        """One command (a pick's draw and its outcome: a few)."""
        hand = self.hand
        if self.exhausted:
            return
        if self.session == 0 or len(self.picks) >= PICKS_PER_SESSION:
            self._next_session()
            return
        answer = hand.command(self.sid, "draw", kind="slots")
        pick = (answer or {}).get("pick")
        if answer is not None and pick is None:
            self.picks.append(0)  # nobody left: the session is done
            return
        if pick is None:  # refused: an open refused during a fault, or settled picks
            state = hand.state(self.sid)
            if state == "scheduled":
                hand.command(self.sid, "open")
            elif state is not None and state != "open":
                self.picks = [0] * PICKS_PER_SESSION  # done: the next session
            return
        n = int(pick["pick"])
        self.picks.append(n)
        outcome = self.rng.choice(("verify", "no-show", "void"))
        if outcome == "verify":
            if hand.command(self.sid, f"picks/{n}/verify") is not None:
                hand.command(self.sid, f"picks/{n}/award", amount=10_000, kind="cash",
                             envelope=f"E{n}")  # fmt: skip
        elif outcome == "void":
            hand.command(self.sid, f"picks/{n}/void", reason="chaos")
        else:
            hand.command(self.sid, f"picks/{n}/no-show")

    def pending_pick(self) -> tuple[str, int] | None:
        """While paused: a pick drawn and left pending (session, number), or None."""
        done = self.session == 0 or len(self.picks) >= PICKS_PER_SESSION
        if done and not self._next_session():
            return None
        if self.hand.state(self.sid) == "scheduled":
            self.hand.command(self.sid, "open")
        pick = (self.hand.command(self.sid, "draw", kind="slots") or {}).get("pick")
        if pick is None:
            return None
        self.picks.append(int(pick["pick"]))
        return self.sid, int(pick["pick"])


def to_local_midnight() -> float:
    """Seconds until the site's next midnight: a points day must not change under a step."""
    now = datetime.now(TZ)
    midnight = (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    return (midnight - now).total_seconds()

"""Helpers for the daemon tests: a tiny listed floor, a hand-driven clock, a running Service,
an in-process HTTP client, and realistic ways to break the database under a running service.

The floor is small on purpose (10 machines, 2 tables) so each test seats exactly the players
it needs through `service.ingest` (the same path live telemetry takes) and therefore knows
every pool.  Card numbers are 16 digits, like real loyalty cards, so a test can tell a full
card number from its masked form.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import argon2
import httpx
import psycopg
import structlog
from sqlalchemy import text
from sqlalchemy.engine import make_url

from raps.config import Config, parse_config
from raps.logs import configure
from raps.metrics import Metrics
from raps.seal import SeedSealer
from raps.service import Service
from raps.store.database import open_engine
from raps.web import create_app
from selector.events import Tier
from tests.builders import NOON, Events

SITE = "test-casino"
SESSION = "S-20260425-1200"
PROMOTION = "raps"
CLAIM_SECONDS = 90
SLOT_QUOTA = 2
TABLE_QUOTA = 1
METRICS_TOKEN = "metrics-token-0123456789abcdef"

# bearer tokens of the configured users, by role
TOKENS = {
    "marketing": "tok-marketing-ann",
    "security": "tok-security-sam",
    "ops": "tok-ops-olly",
    "auditor": "tok-auditor-ivy",
    "admin": "tok-admin-ada",
    "stage_host": "tok-stage-host-sue",
    "rewards_desk": "tok-rewards-desk-rita",
}
USERS = {"marketing": "ann", "security": "sam", "ops": "olly", "auditor": "ivy", "admin": "ada",
         "stage_host": "sue", "rewards_desk": "rita"}  # fmt: skip
# the programs' API accounts (an e-Host kiosk, a casino-app integration, the stage's
# audience screen): a token, no password
DEVICE_TOKENS = {"kiosk": "tok-kiosk-ehost-01", "app": "tok-app-casino",
                 "stage_screen": "tok-stage-screen-1"}  # fmt: skip
DEVICE_USERS = {"kiosk": "ehost-01", "app": "casino-app", "stage_screen": "stage-screen-1"}

# Real argon2id hashes, with small costs: the production defaults of `hash_secret` take
# ~0.4 s per check on a CI box, and every fresh app checks each token once.  The format
# (and therefore the config validation and `check_secret`) is exactly the production one.
_CHEAP = argon2.PasswordHasher(time_cost=1, memory_cost=64, parallelism=1)


def cheap_hash(secret: str) -> str:
    """An argon2id hash that `check_secret` verifies in about a millisecond."""
    return _CHEAP.hash(secret)


_HASHES = {role: (cheap_hash(f"pw-{role}"), cheap_hash(tok)) for role, tok in TOKENS.items()}
_DEVICE_HASHES = {role: cheap_hash(tok) for role, tok in DEVICE_TOKENS.items()}


def card(n: int) -> str:
    """A 16-digit loyalty card number; its last four digits are n."""
    return f"600470{n:010d}"


def masked(card_number: str) -> str:
    return "*" * (len(card_number) - 4) + card_number[-4:]


def floor_config(db_url: str, tmp_path: Path, **options: Any) -> Config:
    """`floor_config_text` (see there), read as the daemon reads it."""
    return parse_config(floor_config_text(db_url, tmp_path, **options), source="test config")


def floor_config_text(
    db_url: str,
    tmp_path: Path,
    *,
    metrics_token: str | None = None,
    slots: int = SLOT_QUOTA,
    tables: int = TABLE_QUOTA,
    claim_seconds: int = CLAIM_SECONDS,
    extra: str = "",
    session_window: tuple[str, str] = ("2026-04-25T12:00:00+02:00", "2026-04-25T19:00:00+02:00"),
) -> str:
    """A complete config (every value an ordinary config key) with an explicit floor.

    Machines M01..M08 are on the Main Floor in banks B1 (M01-M04) and B2 (M05-M08),
    M09-M10 in the Salon Prive; tables T1, T2 are in the Pit.  The idle limit is an
    hour so players seated at noon stay active while a test moves its clock.  `extra` is
    more TOML (ticket programs and draws, say), appended before the users.  The live
    session SESSION is held from noon until 19:00 (`session_window`): the clock starts
    at 12:05.
    """
    machines = "\n".join(
        f'[[floor.machines]]\nid = "M{i:02d}"\n'
        f'area = "{"Salon Prive" if i > 8 else "Main Floor"}"\n'
        f'bank = "B{(i - 1) // 4 + 1}"\nnumber = {100 + i}\n'
        for i in range(1, 11)
    )
    tables_toml = "\n".join(
        f'[[floor.tables]]\nid = "T{i}"\narea = "Pit"\ngame_type = "blackjack"\nseats = 7\n'
        for i in (1, 2)
    )
    users = "\n".join(
        f'[[users]]\nname = "{USERS[role]}"\nrole = "{role}"\n'
        f"password_hash = '{pw}'\napi_token_hash = '{tok}'\n"
        for role, (pw, tok) in _HASHES.items()
    )
    users += "".join(  # kiosk and app: an API token only
        f'\n[[users]]\nname = "{DEVICE_USERS[role]}"\nrole = "{role}"\napi_token_hash = \'{tok}\'\n'
        for role, tok in _DEVICE_HASHES.items()
    )
    http = f'metrics_token = "{metrics_token}"\n' if metrics_token else ""
    text_ = f"""
[site]
id = "{SITE}"
name = "Test casino"
timezone = "Africa/Johannesburg"

[storage]
url = "{db_url}"
head_mark_file = "{tmp_path / "journal-head.json"}"

[credentials]
seed_key_file = "{tmp_path / "seed.key"}"

[http]
host = "127.0.0.1"
port = 0
{http}
[floor]
idle_seconds = 3600
{machines}
{tables_toml}
[[promotions]]
id = "{PROMOTION}"
threshold_points = 50

[[sessions]]
id = "{SESSION}"
promotion = "{PROMOTION}"
starts = "{session_window[0]}"
ends = "{session_window[1]}"
quotas = {{ slots = {slots}, tables = {tables} }}
claim_seconds = {claim_seconds}
{extra}
{users}
[logging]
format = "json"
"""
    return text_


@dataclass
class Clock:
    """The service's clock, moved only by the test."""

    now: datetime = field(default_factory=lambda: NOON + timedelta(minutes=5))

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now


def seat_players(
    service: Service,
    slots: Sequence[tuple[str, str]] = (),
    tables: Sequence[tuple[str, str, int]] = (),
    points: int = 60,
    name: str = "Thandi M.",
) -> Events:
    """Seat qualified players through `service.ingest`: slot players as (card, machine),
    table players as (card, table, seat), each with `points` points earned at noon."""
    ev = Events(NOON)
    batch: list[Any] = []
    for c, machine in slots:
        batch += [ev.player(c, tier=Tier.JACK, name=name), ev.card_in(machine, c)]
        batch += [ev.game(machine, wager=1000) for _ in range(points)]
    for c, table, seat in tables:
        batch += [ev.player(c, tier=Tier.QUEEN, name=name), ev.rating_open(table, seat, c)]
        batch.append(ev.rating_update(table, seat, c, bet=10_000, minutes=points))
    applied = service.ingest(batch, source="test")
    assert applied == len(batch), "the seating events must all apply"
    return ev


SEED_KEY = secrets.token_bytes(32)


@asynccontextmanager
async def running_service(cfg: Config, clock: Clock, **options: Any) -> AsyncIterator[Service]:
    """A started Service on the config's database (migrated), disposed afterwards;
    `options`: Service's own (publisher, head_key)."""
    engine = open_engine(cfg.storage.url)
    service = Service(cfg, engine, SeedSealer(SEED_KEY), Metrics(), clock, **options)
    try:
        await service.start()
        yield service
    finally:
        if service.restore.task is not None:  # the closed sessions' restore, if still running
            service.restore.task.cancel()
            await asyncio.gather(service.restore.task, return_exceptions=True)
        await engine.dispose()


def client_for(service: Service, cfg: Config) -> httpx.AsyncClient:
    """An HTTP client talking to the app in-process; app errors come back as 500s."""
    transport = httpx.ASGITransport(app=create_app(service, cfg), raise_app_exceptions=False)
    return httpx.AsyncClient(transport=transport, base_url="http://raps.test")


def auth(role: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS.get(role) or DEVICE_TOKENS[role]}"}


@dataclass
class CommandEnv:
    """A started service, its config and clock, and an HTTP client to it; `post` gives
    every command its own id (`prefix`-N) and a reason."""

    cfg: Config
    clock: Clock
    service: Service
    client: httpx.AsyncClient
    n: int = 0
    prefix: str = "cmd"

    async def post(self, path: str, role: str = "marketing", **body: Any) -> httpx.Response:
        self.n += 1
        body.setdefault("command_id", f"{self.prefix}-{self.n}")
        body.setdefault("reason", "test")
        return await self.client.post(path, json=body, headers=auth(role))


class Handheld:
    """The marketing handheld: commands with fresh ids, as the page sends them."""

    def __init__(self, client: httpx.AsyncClient, session_id: str = SESSION) -> None:
        self.client = client
        self.sid = session_id
        self.n = 0

    def next_id(self) -> str:
        self.n += 1
        return f"cmd-{self.n}"

    async def post(
        self, path: str, command_id: str | None = None, role: str = "marketing", **body: Any
    ) -> httpx.Response:
        body["command_id"] = command_id or self.next_id()
        return await self.client.post(f"/api/sessions/{self.sid}/{path}", json=body,
                                      headers=auth(role))  # fmt: skip

    async def summary(self, role: str = "marketing") -> dict[str, Any]:
        r = await self.client.get(f"/api/sessions/{self.sid}", headers=auth(role))
        assert r.status_code == 200, r.text
        data: dict[str, Any] = r.json()
        return data


# ------------------------------------------------------------------ breaking storage


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


async def reject_journal_writes(service: Service) -> None:
    """The database refuses every new journal row (as a full disk or a failing volume
    would), while reads keep working: a trigger aborts INSERTs into `journal`."""
    async with service.engine.begin() as conn:
        if service.engine.dialect.name == "sqlite":
            await conn.execute(text(
                "CREATE TRIGGER raps_test_fail BEFORE INSERT ON journal "
                "BEGIN SELECT RAISE(ABORT, 'disk I/O error (simulated)'); END"
            ))  # fmt: skip
        else:
            await conn.execute(text(
                "CREATE FUNCTION raps_test_fail() RETURNS trigger LANGUAGE plpgsql AS "
                "$$ BEGIN RAISE EXCEPTION 'could not extend file: No space left on device'; "
                "END $$"
            ))  # fmt: skip
            await conn.execute(text(
                "CREATE TRIGGER raps_test_fail BEFORE INSERT ON journal "
                "FOR EACH ROW EXECUTE FUNCTION raps_test_fail()"
            ))  # fmt: skip


async def accept_journal_writes(service: Service) -> None:
    """Undo `reject_journal_writes`: the volume is healthy again."""
    async with service.engine.begin() as conn:
        await conn.execute(text("DROP TRIGGER raps_test_fail" + (
            "" if service.engine.dialect.name == "sqlite" else " ON journal"
        )))  # fmt: skip


async def take_storage_down(service: Service, url: str) -> None:
    """The database goes away entirely, reads included.

    PostgreSQL: the database is dropped with its connections terminated (what a failed
    server or a lost network looks like to the pool).  SQLite: the file is gone and its
    path can no longer be opened, and the pooled connections are closed (a lost volume).
    """
    if is_sqlite(url):
        path = Path(make_url(url).database or "")
        await service.engine.dispose()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        path.mkdir()  # a directory where the database file was: it cannot be opened
        return
    u = make_url(url)
    with psycopg.connect(host=u.host, port=u.port, user=u.username, dbname="postgres",
                         autocommit=True) as conn:  # fmt: skip
        conn.execute(f'DROP DATABASE "{u.database}" WITH (FORCE)')


@contextmanager
def structlog_json(site: str = SITE) -> Iterator[None]:
    """The daemon's own log setup (JSON lines on stderr) for the length of a block, then
    structlog's defaults again, so no later test writes to a stream pytest has closed."""
    configure(fmt="json", level="info", site=site)
    try:
        yield
    finally:
        structlog.reset_defaults()
        structlog.contextvars.clear_contextvars()

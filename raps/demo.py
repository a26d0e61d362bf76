"""`raps demo`: the daemon on embedded defaults, a simulated floor and a live session.

It writes a demo config under var/demo/ (SQLite database, a generated seed key, an
in-process MQTT broker, a simulated floor of 500 machines and 40 tables, 32 of them
also speaking SAS to the real poller over the in-memory transport), starts the
daemon, prints the URLs of its API, /healthz and /metrics, and then plays a
marketing user through a rehearsal bonus jackpot session over the HTTP API: draws,
a no-show after the claim window, a void, envelope prizes, close, and the
verification of every pick from the journal.  Nothing is canned: the floor is
simulated live and the seed is new on every run.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx

from raps.audit import check, read_database
from raps.config import Config, hash_secret, parse_config
from raps.daemon import Daemon
from raps.logs import configure

TZ = ZoneInfo("Africa/Johannesburg")
CLAIM_SECONDS = 20  # shorter than the seed's 90 s so the demo shows a no-show quickly
ENVELOPES = (50_000, 100_000, 200_000, 500_000)


def demo_config(
    folder: Path, token: str, session_id: str, now: datetime, pins: dict[str, str] | None = None
) -> Config:
    """A complete config for the demo; every value here is an ordinary config key."""
    pins = pins or {}
    db = (folder / "raps.db").resolve()
    text = f"""
[site]
id = "demo"
name = "RAPS demo casino"
timezone = "{TZ.key}"

[storage]
url = "sqlite:///{db}"
snapshot_interval_seconds = 30

[credentials]
seed_key_file = "{(folder / "seed.key").resolve()}"

[http]
host = "127.0.0.1"
port = 0

[mqtt]
enabled = true
embedded = true
port = 0

[floor.simulate]
machines = 500
tables = 40
players = 4000
events_per_second = 150
# 32 of the machines also play through simulated SAS machines and the real SAS poller
sas_machines = 32

[[promotions]]
id = "raps-demo"
name = "Bonus jackpot session (RAPS), demo rules"
threshold_points = 20
window = {{ start = "00:00", end = "24:00" }}
areas_excluded = ["Salon Prive"]

[[sessions]]
id = "{session_id}"
promotion = "raps-demo"
starts = "{now.isoformat(timespec="seconds")}"
claim_seconds = {CLAIM_SECONDS}
rehearsal = true

[[users]]
name = "demo-marketing"
role = "marketing"
password_hash = "{hash_secret(pins.get("demo-marketing", secrets.token_urlsafe(16)))}"
api_token_hash = "{hash_secret(token)}"

[[users]]
name = "demo-security"
role = "security"
password_hash = "{hash_secret(pins.get("demo-security", secrets.token_urlsafe(16)))}"

[logging]
format = "console"
level = "warning"
"""
    return parse_config(text, source="demo config")


class DemoMarketing:
    """A marketing user working the handheld, as HTTP calls against the daemon."""

    def __init__(self, client: httpx.AsyncClient, session_id: str) -> None:
        self.client = client
        self.sid = session_id
        self.n = 0

    async def call(self, path: str, **body: Any) -> dict[str, Any]:
        self.n += 1
        body["command_id"] = f"demo-{self.n}"
        r = await self.client.post(f"/api/sessions/{self.sid}/{path}", json=body)
        r.raise_for_status()
        data: dict[str, Any] = r.json()
        return data

    async def run(self, say: Any) -> None:
        await self.call("open")
        summary = (await self.client.get(f"/api/sessions/{self.sid}")).json()
        say(f"\nrehearsal session {self.sid} open; commitment {summary['commitment']}")
        for kind, quota in (("slots", 6), ("tables", 4)):
            filled = 0
            while filled < quota:
                answer = await self.call("draw", kind=kind)
                pick = answer["pick"]
                if pick is None:
                    say(f"  {kind}: no eligible player yet; waiting")
                    await asyncio.sleep(5)
                    continue
                loc = pick["location"]
                where = (
                    f"{loc['area']} bank {loc['bank']} machine {loc['number']}"
                    if kind == "slots"
                    else f"{loc['area']} table {loc['table']} seat {loc['seat']}"
                )
                head = answer["journal_head"]
                say(
                    f"  pick {pick['pick']:2} {kind:6} slot {pick['slot']}: "
                    f"{pick['display_name']} ({pick['tier']}, {pick['card']}) at {where}; "
                    f"pool {pick['pool_size']}, digest {pick['pool_digest'][:12]}..., "
                    f"journal head {head['seq']}"
                )
                number = pick["pick"]
                if number == 3:
                    say(f"      does not present: claim timer runs out after {CLAIM_SECONDS} s")
                    await asyncio.sleep(CLAIM_SECONDS + 1)
                    continue
                if kind == "tables" and pick["slot"] == 2 and pick["attempt"] == 0:
                    await self.call(f"picks/{number}/void", reason="card played by a companion")
                    say("      void: card played by a companion; redraw")
                    continue
                await asyncio.sleep(1)
                await self.call(f"picks/{number}/verify")
                amount = ENVELOPES[secrets.randbelow(len(ENVELOPES))]
                await self.call(f"picks/{number}/award", amount=amount, kind="cash",
                                envelope=f"E{number:02d}")  # fmt: skip
                say(f"      verified; envelope E{number:02d}: R{amount // 100:,} cash")
                filled += 1
        await self.call("close")
        summary = (await self.client.get(f"/api/sessions/{self.sid}")).json()
        say(f"session closed; revealed seed {summary['seed']}")


async def run_demo(folder: Path, duration: float | None = None) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.now(TZ)
    token = secrets.token_urlsafe(24)
    session_id = f"demo-{now:%Y%m%d-%H%M%S}"
    pins = {user: f"{secrets.randbelow(10**6):06d}" for user in ("demo-marketing", "demo-security")}
    cfg = demo_config(folder, token, session_id, now, pins)
    configure(cfg.logging.format, cfg.logging.level, cfg.site.id)
    daemon = Daemon(cfg, create_key=True)
    runner = asyncio.create_task(daemon.run())
    started = asyncio.create_task(daemon.started.wait())
    await asyncio.wait({runner, started}, return_when=asyncio.FIRST_COMPLETED)
    if runner.done():
        await runner  # failed to start: raise its error
    url = daemon.url
    print(f"RAPS demo daemon running on a simulated floor (database {folder}/raps.db)")
    print(f"  API        {url}/api/sessions   (Authorization: Bearer {token})")
    print(f"  handheld   {url}/handheld   (sign in: demo-marketing, PIN {pins['demo-marketing']})")
    print(f"  dispatch   {url}/dispatch   (sign in: demo-security, PIN {pins['demo-security']})")
    print(f"  OpenAPI    {url}/openapi.json   (signed in, or with the bearer token)")
    print(f"  health     {url}/healthz   {url}/readyz")
    print(f"  metrics    {url}/metrics")
    if daemon.broker is not None:
        print(f"  MQTT       mqtt://127.0.0.1:{daemon.broker.port}/raps/v1/demo/draws/#")
    code = 0
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {token}"},
                                 timeout=30) as client:  # fmt: skip
        while not (await client.get("/readyz")).is_success:
            await asyncio.sleep(0.5)
        await asyncio.sleep(5)  # let the floor play a little
        await DemoMarketing(client, session_id).run(print)
    report = check(*await read_database(cfg.storage.url), None, from_genesis=True)
    for line in report.lines():
        print(line)
    code = 0 if report.ok else 1
    print(f"\nThe daemon keeps running: {url}/metrics  (Ctrl-C stops it)")
    if duration is not None:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(runner), duration)
        daemon.stopping.set()
    await runner
    return code


def main(folder: Path, duration: float | None) -> int:
    return asyncio.run(run_demo(folder, duration))

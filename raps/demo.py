"""`raps demo`: the daemon on embedded defaults, a simulated floor and rehearsal sessions.

It writes a demo config under var/demo/ (SQLite database, a generated seed key, an
in-process MQTT broker, a simulated floor of 500 machines and 40 tables, 32 of them
also speaking SAS to the real poller over the in-memory transport), starts the
daemon and plays a marketing user through a rehearsal bonus jackpot session over the
HTTP API: draws, a no-show after the claim window, a void, envelope prizes, close, and
the verification of every pick from the journal.  Nothing is canned: the floor is
simulated live and the seed is new on every run.

Every draw is witnessed: the demo starts a real witness process (`raps witness run`, its
own key, log and port under var/demo/witness/) and the daemon asks it to sign each
request; the verification at the end checks every signature against the witness's key
and its own log.

Then it leaves something for a person to do: a second rehearsal session is open on the
handheld, and a ticket draw whose bin an e-Host kiosk has just filled is open for the
stage host; the last thing printed is every page's URL with a user (and PIN) for every
role (marketing, security, stage host, Rewards desk, ops, admin, auditor), so it does
not scroll away.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import secrets
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx

from raps.audit import check, read_database, read_witness_log
from raps.config import Config, hash_secret, parse_config
from raps.daemon import Daemon
from raps.floorsim import FloorSimulator
from raps.logs import configure

TZ = ZoneInfo("Africa/Johannesburg")
CLAIM_SECONDS = 20  # shorter than the seed's 90 s so the demo shows a no-show quickly
ENVELOPES = (50_000, 100_000, 200_000, 500_000)
STAGE_DRAW = "demo-stage"
DEVICES = ("kiosk", "stage_screen", "stage_host")  # the API tokens the demo itself uses
ENTRANTS = 40  # players the demo's kiosk enters into the ticket draw
# the people of the demo, by role: the user name, and the page they start on
PEOPLE = {
    "marketing": ("demo-marketing", "/handheld"),
    "security": ("demo-security", "/dispatch"),
    "stage_host": ("demo-stage", "/stage"),
    "rewards_desk": ("demo-rewards", "/rewards"),
    "ops": ("demo-ops", "/ops"),
    "admin": ("demo-admin", "/admin"),
    "auditor": ("demo-auditor", "/audit"),
}


def _local(dt: datetime) -> str:
    return dt.astimezone(TZ).strftime("%Y-%m-%d %H:%M:%S")


def _people(pins: dict[str, str], tokens: dict[str, str]) -> str:
    """Users for every role; the demo script calls the API as marketing and stage host."""
    out = []
    for role, (name, _) in PEOPLE.items():
        pin = pins.get(name, secrets.token_urlsafe(16))
        extra = f'api_token_hash = "{hash_secret(tokens[role])}"\n' if role in tokens else ""
        out.append(f'[[users]]\nname = "{name}"\nrole = "{role}"\n'
                   f'password_hash = "{hash_secret(pin)}"\n{extra}')  # fmt: skip
    return "\n".join(out)


def demo_config(
    folder: Path,
    token: str,
    session_id: str,
    now: datetime,
    pins: dict[str, str] | None = None,
    devices: dict[str, str] | None = None,
    sim_seed: int = 1,
    witness: str = "",
) -> Config:
    """A complete config for the demo; every value here is an ordinary config key.

    `devices`: the API tokens of the demo's e-Host kiosk ("kiosk"), stage screen
    ("stage_screen") and stage host script ("stage_host"); `sim_seed`: the simulated
    floor's, so the demo knows its players; `witness`: the `[witness]` section (TOML) of
    the demo's witness process, or "" (draws unwitnessed).
    """
    pins = pins or {}
    devices = devices or {r: secrets.token_urlsafe(24) for r in DEVICES}
    db = (folder / "raps.db").resolve()
    h = timedelta(hours=1)
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
seed = {sim_seed}
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

# yours: a rehearsal session left for the handheld, with the seed's 90 s to present
[[sessions]]
id = "{session_id}-yours"
promotion = "raps-demo"
starts = "{now.isoformat(timespec="seconds")}"
claim_seconds = 90
rehearsal = true

# a ticket draw for the stage: complimentary tickets by tier, entered by the demo's kiosk
[[ticket_programs]]
id = "demo-tickets"
promotion = "raps-demo"
name = "Demo ticket draws"
complimentary = {{ ten = 5, jack = 10, queen = 15, king = 20, ace = 25 }}
[ticket_programs.period]
kind = "fixed_start_to_draw"
start = "{_local(now - h)}"
[ticket_programs.stage]
prizes = [{{ kind = "cash", amount = 500000 }}, {{ kind = "device" }}]
[[ticket_programs.stage.add_ons]]
id = "app"
name = "Casino app registered"
requires = "app_registered"
prizes = [{{ amount = 50000, kind = "cash" }}]

[[ticket_draws]]
id = "{STAGE_DRAW}"
program = "demo-tickets"
name = "Demo ticket draw"
at = "{_local(now + 2 * h)}"
opens = "{_local(now - h)}"
closes = "{_local(now + h)}"
winners = 5

{_people(pins, {"marketing": token, "stage_host": devices["stage_host"]})}
[[users]]
name = "demo-kiosk"
role = "kiosk"
api_token_hash = "{hash_secret(devices["kiosk"])}"

[[users]]
name = "demo-screen"
role = "stage_screen"
api_token_hash = "{hash_secret(devices["stage_screen"])}"

{witness}
[logging]
format = "console"
level = "warning"
"""
    return parse_config(text, source="demo config")


class DemoWitness:
    """A real `raps witness` process for the demo, with its own key, log and token."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder / "witness"
        self.token = secrets.token_urlsafe(32)
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.public_key = ""

    def start(self) -> str:
        """Start it; returns the daemon's `[witness]` section for it."""
        self.folder.mkdir(parents=True, exist_ok=True)
        config = self.folder / "witness.toml"
        digest = hashlib.sha256(self.token.encode()).hexdigest()
        config.write_text(
            f'[witness]\nhost = "127.0.0.1"\nport = 0\n'
            f'database = "{(self.folder / "witness.db").resolve()}"\n'
            f'key_file = "{(self.folder / "witness.key").resolve()}"\n'
            f'token_sha256 = ["{digest}"]\n[logging]\nformat = "console"\nlevel = "warning"\n',
            encoding="utf-8",
        )
        ready = self.folder / "ready.json"
        ready.unlink(missing_ok=True)
        # our own interpreter and the demo's own paths: nothing from input reaches the command
        self.proc = subprocess.Popen(  # noqa: S603
            [sys.executable, "-m", "raps.cli", "witness", "run", "--config", str(config),
             "--create-key", "--ready-file", str(ready)],
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while not ready.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the demo's witness did not start")
            time.sleep(0.05)
        info = json.loads(ready.read_text(encoding="utf-8"))
        self.url, self.public_key = info["url"], info["public_key"]
        token_file = self.folder / "daemon.token"
        token_file.write_text(self.token + "\n", encoding="ascii")
        token_file.chmod(0o600)
        return (
            f'[witness]\nurl = "{self.url}"\ntoken_file = "{token_file.resolve()}"\n'
            f'public_key = "{self.public_key}"\n'
        )

    def log(self, session_id: str) -> list[dict[str, Any]]:
        """The witness's log of a draw, as its operator exports it."""
        out = self.folder / "export.jsonl"
        subprocess.run(  # noqa: S603 (our interpreter, the demo's own session id and paths)
            [sys.executable, "-m", "raps.cli", "witness", "export", session_id, "--config",
             str(self.folder / "witness.toml"), "-o", str(out)],
            check=False, capture_output=True, timeout=60,
        )  # fmt: skip
        return read_witness_log(out) if out.exists() else []

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)


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


async def enter_tickets(
    url: str, token: str, cfg: Config, now: datetime, seed: int
) -> list[tuple[str, str]]:
    """The demo's e-Host kiosk enters directory players into the stage's ticket draw:
    (card, receipt number) of each entry."""
    sim_cfg = cfg.floor.simulate
    assert sim_cfg is not None
    sim = FloorSimulator(cfg.layout(), sim_cfg.players, now, seed=seed)
    cards = [p.card for p in sim.players if p.in_directory and p.age_verified and not p.exclusions]
    entered: list[tuple[str, str]] = []
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {token}"},
                                 timeout=30) as kiosk:  # fmt: skip
        for i, card in enumerate(cards[:ENTRANTS]):
            body = {"request_id": f"demo-kiosk-{i}", "card": card, "draw": STAGE_DRAW}
            r = await kiosk.post("/api/tickets/kiosk/entries", json=body)
            if r.is_success:
                entered.append((card, r.json()["receipt_no"]))
    return entered


async def open_for_you(url: str, marketing: str, host: str, session_id: str) -> None:
    """Open the rehearsal session and the ticket draw left for a person to run."""
    for who, path in ((marketing, f"/api/sessions/{session_id}-yours/open"),
                      (host, f"/api/stage/draws/{STAGE_DRAW}/open")):  # fmt: skip
        async with httpx.AsyncClient(base_url=url, timeout=30,
                                     headers={"Authorization": f"Bearer {who}"}) as c:  # fmt: skip
            r = await c.post(path, json={"command_id": f"demo-open-{path}"})
            r.raise_for_status()


def your_turn(url: str, session_id: str, pins: dict[str, str], screen_token: str) -> list[str]:
    """The block printed last: what a person can open, and who to sign in as."""
    lines = ["", "== Your turn: the daemon keeps running (Ctrl-C stops it) ==", ""]
    for _role, (name, page) in PEOPLE.items():
        lines.append(f"  {url}{page:<10} sign in as {name:<15} PIN {pins[name]}")
    lines += [
        "",
        f"  handheld: rehearsal session {session_id}-yours is open: draw, verify, award, close",
        f"  stage:    ticket draw {STAGE_DRAW} is open over the bin the demo's kiosk filled:",
        "            draw a winner, present them (any ID's last digits, and the receipt of",
        "            the winner's card from the list above), award, then collect it on /rewards",
        f"  calendar: {url}/calendar (all but the Rewards desk): this month's sessions and draws;",
        "            marketing proposes a session or a promotion there, the admin approves it,",
        "            and it runs at once, without a restart",
        f"  audience screen: {url}/stage/screen#draw={STAGE_DRAW}&token={screen_token}",
        f"  metrics {url}/metrics   health {url}/healthz {url}/readyz   OpenAPI {url}/openapi.json",
    ]
    return lines


async def run_demo(folder: Path, duration: float | None = None) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.now(TZ)
    token = secrets.token_urlsafe(24)
    devices = {r: secrets.token_urlsafe(24) for r in DEVICES}
    sim_seed = secrets.randbits(31)
    session_id = f"demo-{now:%Y%m%d-%H%M%S}"
    pins = {name: f"{secrets.randbelow(10**6):06d}" for name, _ in PEOPLE.values()}
    witness = DemoWitness(folder)
    try:
        cfg = demo_config(folder, token, session_id, now, pins, devices, sim_seed, witness.start())
        return await _run(cfg, folder, witness, token, devices, sim_seed, session_id, pins, now,
                          duration)  # fmt: skip
    finally:
        witness.stop()


async def _run(
    cfg: Config,
    folder: Path,
    witness: DemoWitness,
    token: str,
    devices: dict[str, str],
    sim_seed: int,
    session_id: str,
    pins: dict[str, str],
    now: datetime,
    duration: float | None,
) -> int:
    configure(cfg.logging.format, cfg.logging.level, cfg.site.id)
    daemon = Daemon(cfg, create_key=True)
    runner = asyncio.create_task(daemon.run())
    started = asyncio.create_task(daemon.started.wait())
    await asyncio.wait({runner, started}, return_when=asyncio.FIRST_COMPLETED)
    if runner.done():
        await runner  # failed to start: raise its error
    url = daemon.url
    print(f"RAPS demo daemon running on a simulated floor (database {folder}/raps.db)")
    print(f"  witness    {witness.url}   (key {witness.public_key}, its own process)")
    print(f"  API        {url}/api/sessions   (Authorization: Bearer {token})")
    if daemon.broker is not None:
        print(f"  MQTT       mqtt://127.0.0.1:{daemon.broker.port}/raps/v1/demo/draws/#")
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {token}"},
                                 timeout=30) as client:  # fmt: skip
        while not (await client.get("/readyz")).is_success:
            await asyncio.sleep(0.5)
        await asyncio.sleep(5)  # let the floor play a little
        await DemoMarketing(client, session_id).run(print)
    entered = await enter_tickets(url, devices["kiosk"], cfg, now, sim_seed)
    await open_for_you(url, token, devices["stage_host"], session_id)
    print(
        f"\nthe demo's e-Host kiosk entered {len(entered)} players into ticket draw "
        f"{STAGE_DRAW}; their receipts (card: receipt), what a winner brings to the stage:"
    )
    for i in range(0, len(entered), 3):
        print("  " + "   ".join(f"{c}: {r}" for c, r in entered[i : i + 3]))
    log = witness.log(session_id)
    report = check(
        *await read_database(cfg.storage.url), None, from_genesis=True,
        witness_key=witness.public_key, witness_log=log,
    )  # fmt: skip
    for line in report.lines():
        print(line)
    code = 0 if report.ok else 1
    for line in your_turn(url, session_id, pins, devices["stage_screen"]):
        print(line)
    if duration is not None:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(runner), duration)
        daemon.stopping.set()
    await runner
    return code


def main(folder: Path, duration: float | None) -> int:
    return asyncio.run(run_demo(folder, duration))

"""Chaos: the daemon under steady MQTT and SAS load with draws running, faults at random.

Run from the repository root:

    .venv/bin/python bench/chaos.py --quick        # one fault of each kind, under 60 s
    .venv/bin/python bench/chaos.py                # 200 faults
    .venv/bin/python bench/chaos.py --faults 500 --seed 7

What runs (all private, on free ports, removed afterwards; bench/chaos_infra.py):
a PostgreSQL cluster, a Mosquitto (persistence on), `raps run` on them with a listed
floor: four MQTT machines fed by a numbered publisher (a game per machine every 50 ms,
QoS 1) and four SAS machines on a simulated in-memory loop; a marketing handheld opens
rehearsal sessions and draws, verifies, awards and closes between the faults.

Faults, chosen at random and repeated: `kill9` (SIGKILL of the daemon, restarted),
`broker_restart` (Mosquitto stopped and started), `pg_kill` (every connection of the
daemon's database terminated), `pg_restart` (PostgreSQL stopped and started),
`storage_fail` (floor-log writes refused for a second or two: a trigger raising "No space
left on device", the simulated disk full).  `clock_step` is skipped: `raps run` takes no
injected clock (it reads the system clock; stepping that would step the whole machine's).

After each fault, with the publisher paused until the broker acknowledged all it sent:
every acknowledged game is applied exactly once (each card's points, 1 per game, equal
the games the broker acknowledged for it: fewer is a loss, more a double), every command
the daemon answered is in the journal exactly once (by command id), and `raps verify`
of the database says OK.  Progress lines as it goes; the last line is one JSON object
with the figures and the targets met.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.chaos_infra import (  # noqa: E402
    MQTT_MACHINES,
    Handheld,
    PrivatePostgres,
    Publisher,
    card_of,
    chaos_config,
)
from bench.harness import RapsProcess, print_result, raps_command, say, section, start_clock  # noqa: E402
from tests.mqtt_broker import PrivateMosquitto  # noqa: E402

KINDS = ("kill9", "broker_restart", "pg_kill", "pg_restart", "storage_fail")
SKIPPED = {"clock_step": "raps run takes no injected clock (it reads the system clock)"}
SITE = "chaos"
SETTLE_SECONDS = 45.0
SESSIONS = 60

VALID = (0, 3)  # raps verify's exit codes for a journal that verifies


class Load(threading.Thread):
    """The MQTT publisher in its own event loop: a round of games every 50 ms, reconnecting
    after a broker restart; `pause()` waits until everything sent was acknowledged."""

    def __init__(self, pub: Publisher) -> None:
        super().__init__(daemon=True, name="mqtt-load")
        self.pub = pub
        self.stop = threading.Event()
        self.paused = threading.Event()
        self.idle = threading.Event()
        self.error: str | None = None

    def run(self) -> None:
        try:
            asyncio.run(self._run())
        except Exception as e:  # reported by the driver
            self.error = f"{type(e).__name__}: {e}"

    async def _run(self) -> None:
        self.pub.directory()
        while not self.stop.is_set():
            try:
                client = await self.pub.connect()
            except Exception:
                await asyncio.sleep(0.2)
                continue
            try:
                while not self.stop.is_set():
                    if not self.paused.is_set():
                        self.idle.clear()
                        self.pub.games_round()
                    if not await self.pub.flush(client):
                        break  # the broker went away: reconnect, send the rest again
                    if self.paused.is_set():
                        self.idle.set()
                    await asyncio.sleep(0.05)
            finally:
                with contextlib.suppress(Exception):
                    await client.__aexit__(None, None, None)
            await asyncio.sleep(0.2)

    def pause(self, timeout: float = 30.0) -> bool:
        self.idle.clear()
        self.paused.set()
        return self.idle.wait(timeout)

    def resume(self) -> None:
        self.paused.clear()


class Chaos:
    def __init__(self, folder: Path, seed: int) -> None:
        self.folder = folder
        self.rng = random.Random(seed)
        self.pg = PrivatePostgres()
        self.broker = PrivateMosquitto()
        self.token, self.kiosk = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        self.daemon: RapsProcess | None = None
        self.hand: Handheld | None = None
        self.load: Load | None = None
        self.session = 0
        self.picks: list[int] = []
        self.faults: Counter[str] = Counter()
        self.survived = 0
        self.lost = 0
        self.doubled = 0
        self.missing_commands = 0
        self.twice_commands = 0
        self.verify_failures = 0
        self.restart_seconds: list[float] = []
        self.problems: list[str] = []

    # ------------------------------------------------------------------ set-up

    def start(self) -> None:
        self.pg.start()
        self.pg.create_database()
        self.broker.start()
        config = self.folder / "raps.toml"
        config.write_text(chaos_config(self.folder, SITE, self.pg.url, self.broker.port,
                                       self.token, self.kiosk, sessions=SESSIONS))  # fmt: skip
        self.daemon = RapsProcess(config, self.folder / "ready.json", self.folder / "daemon.log",
                                  cwd=self.folder, name="raps run")  # fmt: skip
        self._spawn(create_key=True)
        self.load = Load(Publisher(self.broker.host, self.broker.port, SITE))
        self.load.start()

    def _spawn(self, create_key: bool = False) -> None:
        assert self.daemon is not None
        t0 = time.monotonic()
        self.daemon.spawn(create_key=create_key)
        self.daemon.wait_until_ready(90, 0.05)
        self.restart_seconds.append(time.monotonic() - t0)
        url = json.loads(self.daemon.ready_file.read_text())["url"]
        if self.hand is None:
            self.hand = Handheld(url, self.token)
        else:
            self.hand.rebase(url)

    def sas_events(self) -> float:
        """SAS events the running daemon applied since its last start (the SAS load)."""
        assert self.hand is not None
        with contextlib.suppress(Exception):
            text = self.hand.client.get("/metrics").text
            return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                       if line.startswith("raps_events_ingested_total{")
                       and 'source="sas' in line)  # fmt: skip
        return 0.0

    def close(self) -> None:
        if self.load is not None:
            self.load.stop.set()
            self.load.join(10)
        if self.daemon is not None:
            self.daemon.stop()
        self.broker.close()
        self.pg.close()

    # ------------------------------------------------------------------ draws

    def draws(self, commands: int) -> None:
        """A few handheld commands: open a session, draw, settle each pick, close it."""
        hand = self.hand
        assert hand is not None
        for _ in range(commands):
            sid = f"s{self.session}"
            if self.session == 0 or len(self.picks) >= 4:
                if self.session:
                    hand.command(sid, "close", force=True)
                if self.session >= SESSIONS:
                    return
                self.session += 1
                self.picks = []
                hand.command(f"s{self.session}", "open")
                continue
            answer = hand.command(sid, "draw", kind="slots")
            pick = (answer or {}).get("pick")
            if answer is not None and pick is None:
                self.picks.append(0)  # nobody left: the session is done
                continue
            if pick is None:  # refused: an open refused during a fault, or settled picks
                state = hand.state(sid)
                if state == "scheduled":
                    hand.command(sid, "open")
                elif state is not None and state != "open":
                    self.picks = [0] * 4  # done: the next session
                continue
            n = int(pick["pick"])
            self.picks.append(n)
            outcome = self.rng.choice(("verify", "no-show", "void"))
            if outcome == "verify":
                if hand.command(sid, f"picks/{n}/verify") is not None:
                    hand.command(sid, f"picks/{n}/award", amount=10_000, kind="cash",
                                 envelope=f"E{n}")  # fmt: skip
            elif outcome == "void":
                hand.command(sid, f"picks/{n}/void", reason="chaos")
            else:
                hand.command(sid, f"picks/{n}/no-show")

    # ------------------------------------------------------------------ faults

    def inject(self, kind: str) -> None:
        assert self.daemon is not None
        if kind == "kill9":
            time.sleep(self.rng.uniform(0.0, 0.5))  # somewhere in the stream
            self.daemon.kill9()
            self._spawn()
        elif kind == "broker_restart":
            self.broker.restart()
        elif kind == "pg_kill":
            self.pg.kill_connections()
            self.draws(2)  # commands right after the cut
        elif kind == "pg_restart":
            self.pg.stop()
            self.draws(1)  # refused: the database is down
            time.sleep(self.rng.uniform(0.2, 1.5))
            self.pg.start()
        elif kind == "storage_fail":
            self.pg.fail_floor_log(True)
            time.sleep(self.rng.uniform(1.0, 2.0))
            self.pg.fail_floor_log(False)
        else:
            raise ValueError(kind)

    # ------------------------------------------------------------------ checks

    def check(self) -> list[str]:
        """The invariants after a fault (see the module docstring); what is wrong."""
        load, hand = self.load, self.hand
        assert load is not None and hand is not None
        wrong: list[str] = []
        if load.error:
            wrong.append(f"the publisher failed: {load.error}")
        if not load.pause():
            wrong.append("the broker did not acknowledge the publisher's messages in 30 s")
        try:
            wrong += self._points()
            wrong += self._journal()
            done = subprocess.run([*raps_command(), "verify", self.pg.url],
                                  capture_output=True, text=True, timeout=120)  # fmt: skip
            if done.returncode not in VALID:  # 3: valid, with anomalies (early no-shows)
                self.verify_failures += 1
                tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
                wrong.append(f"raps verify failed: {' | '.join(tail)}")
        finally:
            load.resume()
        return wrong

    def _points(self) -> list[str]:
        """Each card's points equal its acknowledged games, within SETTLE_SECONDS."""
        hand, load = self.hand, self.load
        assert hand is not None and load is not None
        want = {m: load.pub.games.get(m, 0) for m in MQTT_MACHINES}
        deadline = time.monotonic() + SETTLE_SECONDS
        got: dict[str, float | None] = {}
        while True:
            got = {m: hand.points(card_of(m)) for m in MQTT_MACHINES}
            if all(g is not None and round(g) == want[m] for m, g in got.items()):
                return []
            if any(g is not None and round(g) > want[m] for m, g in got.items()):
                break
            if time.monotonic() > deadline:
                break
            time.sleep(0.1)
        out = []
        for m in MQTT_MACHINES:
            g = got.get(m)
            have = -1 if g is None else round(g)
            if have < want[m]:
                self.lost += want[m] - max(have, 0)
                out.append(f"{m}: {want[m]} games acknowledged, {have} applied (lost)")
            elif have > want[m]:
                self.doubled += have - want[m]
                out.append(f"{m}: {want[m]} games acknowledged, {have} applied (twice)")
        return out

    def _journal(self) -> list[str]:
        """Every answered command in the journal exactly once: its command id there, and
        none of its records twice (a draw is two records, pick.requested and pick.drawn)."""
        hand = self.hand
        assert hand is not None
        seen: Counter[str] = Counter()
        records: Counter[tuple[str, str]] = Counter()
        for (record,) in self.pg.sql("SELECT record FROM journal"):
            rec = json.loads(record)
            cid = (rec.get("data") or {}).get("command_id")
            if cid:
                seen[cid] += 1
                records[(cid, str(rec.get("type")))] += 1
        out = []
        missing = [c for c in hand.answered if seen[c] == 0]
        repeated = {cid for (cid, _), n in records.items() if n > 1}
        twice = [c for c in hand.answered if c in repeated]
        if missing:
            out.append(f"{len(missing)} answered commands not in the journal: {missing[:3]}")
        if twice:
            out.append(f"{len(twice)} answered commands journaled twice: {twice[:3]}")
        self.missing_commands = len(missing)  # the state now, not a sum over checks
        self.twice_commands = len(twice)
        return out

    # ------------------------------------------------------------------ the run

    def run(self, plan: list[str]) -> None:
        for i, kind in enumerate(plan, start=1):
            self.draws(self.rng.randint(1, 4))
            t0 = time.monotonic()
            try:
                self.inject(kind)
            except Exception as e:
                self.problems.append(f"fault {i} {kind}: injecting failed: {e}")
                say(f"fault {i:>4}/{len(plan)} {kind:<15} INJECTION FAILED: {e}")
                continue
            self.faults[kind] += 1
            wrong = self.check()
            took = time.monotonic() - t0
            assert self.hand is not None and self.load is not None
            games = sum(self.load.pub.games.values())
            if wrong:
                self.problems += [f"fault {i} {kind}: {w}" for w in wrong]
                say(f"fault {i:>4}/{len(plan)} {kind:<15} LOST/WRONG: {'; '.join(wrong)}")
            else:
                self.survived += 1
                say(f"fault {i:>4}/{len(plan)} {kind:<15} survived in {took:4.1f} s: "
                    f"{games} games applied once, {len(self.hand.answered)} answered "
                    "commands journaled once, raps verify OK")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="one fault of each kind")
    parser.add_argument("--faults", type=int, default=200)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else secrets.randbits(32)
    rng = random.Random(seed)
    if args.quick:
        plan = list(KINDS)
        rng.shuffle(plan)
    else:
        plan = [rng.choice(KINDS) for _ in range(args.faults)]
    start_clock()
    section(f"chaos: {len(plan)} faults, seed {seed}")
    for kind, why in SKIPPED.items():
        say(f"skipped fault kind {kind}: {why}")
    t0 = time.monotonic()
    sas = 0.0
    with tempfile.TemporaryDirectory(prefix="raps-chaos-") as tmp:
        chaos = Chaos(Path(tmp), seed)
        try:
            chaos.start()
            chaos.run(plan)
            sas = chaos.sas_events()
        finally:
            chaos.close()
    seconds = time.monotonic() - t0
    assert chaos.load is not None and chaos.hand is not None
    injected = sum(chaos.faults.values())
    lost = chaos.lost + chaos.missing_commands
    target_faults = len(KINDS) if args.quick else 200
    clean = lost == 0 and chaos.doubled == 0 and chaos.twice_commands == 0
    targets: dict[str, Any] = {
        "faults_survived": {
            "target": f">= {target_faults}",
            "met": chaos.survived >= target_faults,
        },
        "lost": {"target": "0", "met": clean},
        "verify": {"target": "OK after every fault", "met": chaos.verify_failures == 0},
    }
    if args.quick:
        targets["seconds"] = {"target": "< 60", "met": seconds < 60}
    result: dict[str, Any] = {
        "bench": "chaos",
        "quick": args.quick,
        "seed": seed,
        "faults": injected,
        "faults_survived": chaos.survived,
        "by_kind": dict(chaos.faults),
        "skipped_kinds": SKIPPED,
        "games_acknowledged": sum(chaos.load.pub.games.values()),
        "publish_retries": chaos.load.pub.failures,
        "sas_events_since_last_start": sas,
        "commands_answered": len(chaos.hand.answered),
        "commands_refused": chaos.hand.refused,
        "lost_messages": chaos.lost,
        "doubled_messages": chaos.doubled,
        "commands_missing": chaos.missing_commands,
        "commands_twice": chaos.twice_commands,
        "verify_failures": chaos.verify_failures,
        "restart_seconds_max": round(max(chaos.restart_seconds, default=0.0), 2),
        "problems": chaos.problems[:10],
        "seconds": round(seconds, 1),
        "targets": targets,
        "met": all(t["met"] for t in targets.values()),
    }
    print_result(result)
    return 0 if result["met"] else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""Chaos: the daemon under steady MQTT and SAS load with draws running, faults at random.

Run from the repository root:

    .venv/bin/python bench/chaos.py --quick        # one fault of each kind, under 60 s
    .venv/bin/python bench/chaos.py                # 200 faults
    .venv/bin/python bench/chaos.py --faults 500 --seed 7

What runs (all private, on free ports, removed afterwards; bench/chaos_infra.py):
a PostgreSQL cluster (as root, its data directory on a small tmpfs of its own), a
Mosquitto (persistence on), `raps run` on them with a listed floor: four MQTT machines
fed by a numbered publisher (a game per machine every 50 ms, QoS 1) and four SAS
machines on a simulated in-memory loop; a marketing handheld, in a thread of its own,
opens rehearsal sessions and draws, verifies, awards, voids and closes one command after
another while the faults land, so a kill -9 or an outage meets commands in flight.

Faults, chosen at random and repeated: `kill9` (SIGKILL of the daemon, restarted),
`broker_restart` (Mosquitto stopped and started), `pg_kill` (every connection of the
daemon's database terminated), `pg_restart` (PostgreSQL stopped and started),
`disk_full` (the database's filesystem filled by a ballast file for a second or two,
then freed; without root a trigger raising "No space left on device", the simulated
one), `clock_step` (the daemon's clock stepped forward past a pending pick's claim
window, or back: the RAPS_CLOCK_OFFSET_FILE test hook, raps/clock_offset.py).

After each fault, with the publisher and the handheld paused (the publisher until the
broker acknowledged all it sent): every acknowledged game is applied exactly once (each
card's points, 1 per game, equal the games the broker acknowledged for it: fewer is a
loss, more a double), every command the daemon answered is in the journal exactly once
(by command id), and `raps verify` of the database says OK (exit 0, or 3: valid with
anomalies).  A forward clock step must turn the pending pick into a no-show (its claim
timer, on the stepped clock); after a backward one the pick must still be pending, and
once a command lands behind the step, `raps verify` must report the journal's time going
backwards as an anomaly (exit 3), not as a broken journal.  Progress lines as it goes;
the last line is one JSON object with the figures and the targets met.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import secrets
import statistics
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
    Draws,
    Handheld,
    PrivatePostgres,
    Publisher,
    card_of,
    chaos_config,
    to_local_midnight,
)
from bench.harness import RapsProcess, print_result, raps_command, say, section, start_clock  # noqa: E402
from raps.clock_offset import ENV as CLOCK_OFFSET_ENV  # noqa: E402
from tests.mqtt_broker import PrivateMosquitto  # noqa: E402

KINDS = ("kill9", "broker_restart", "pg_kill", "pg_restart", "disk_full", "clock_step")
SITE = "chaos"
SETTLE_SECONDS = 45.0
PROGRESS_SECONDS = 30.0  # for a command answered and SAS events applied since the last fault
READY_SECONDS = 240.0  # a start on a loaded 2-core machine took over 90 s
# points per ticket: at 1, every game was a journaled credit (37,000 by fault 82 of a full
# run), and raps verify, which reads the whole journal after every fault, slowed the run
TICKET_RATE = 50
CLAIM_SECONDS = 120  # a forward clock step of a little more ends a pending pick's window
IDLE_SECONDS = 3600  # MQTT players stay active on a clock up to MAX_OFFSET ahead
MAX_OFFSET = 1800.0  # the daemon's clock is never more than this ahead, never behind

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
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(_quiet_disconnects)  # a broker restart is the point
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


def _quiet_disconnects(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """aiomqtt leaves a future with the disconnection error unread: not worth a report."""
    if type(context.get("exception")).__name__ not in ("MqttError", "MqttCodeError"):
        loop.default_exception_handler(context)


def sessions_for(faults: int) -> int:
    """Rehearsal sessions enough for a run of `faults` (a full run used about one a fault;
    when they run out the handheld stops and every later fault is flagged)."""
    return 20 + 3 * faults


class Chaos:
    def __init__(self, folder: Path, seed: int, sessions: int = 40) -> None:
        self.folder = folder
        self.seed = seed
        self.sessions = sessions
        self.rng = random.Random(seed)
        self.pg = PrivatePostgres(small_disk=True)
        self.broker = PrivateMosquitto()
        self.token, self.kiosk = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        self.offset_file = folder / "clock-offset"
        self.offset = 0.0
        self.daemon: RapsProcess | None = None
        self.hand: Handheld | None = None
        self.load: Load | None = None
        self.draws: Draws | None = None
        self.faults: Counter[str] = Counter()
        self.survived = 0
        self.lost = 0
        self.doubled = 0
        self.missing_commands = 0
        self.twice_commands = 0
        self.verify_failures = 0
        self.kills_mid_command = 0
        self.clock_steps: Counter[str] = Counter()
        self.backwards_reported = 0
        self.expect_backwards = False
        self.restart_seconds: list[float] = []
        self.startup_seconds: list[float] = []  # the daemon's own figure (its "ready" line)
        self.replayed: list[int] = []  # floor events replayed at each start
        self.slow_starts = 0  # starts not ready in READY_SECONDS (killed and started again)
        self.problems: list[str] = []
        self.starts = 0  # daemon starts (the SAS counter starts at 0 with each)
        self.sas_applied = 0.0  # SAS events applied over the whole run
        self.sas_mark = (0, 0.0)  # (start, counter) at the last check
        self.answered_mark = 0  # commands answered at the last check
        self.stalls = 0  # faults after which no command was answered, or no SAS event applied

    # ------------------------------------------------------------------ set-up

    def start(self) -> None:
        self.pg.start()
        self.pg.create_database()
        self.broker.start()
        self._set_offset(0.0)
        config = self.folder / "raps.toml"
        config.write_text(chaos_config(self.folder, SITE, self.pg.url, self.broker.port,
                                       self.token, self.kiosk, sessions=self.sessions,
                                       claim_seconds=CLAIM_SECONDS,
                                       idle_seconds=IDLE_SECONDS,
                                       ticket_rate=TICKET_RATE))  # fmt: skip
        self.daemon = RapsProcess(config, self.folder / "ready.json", self.folder / "daemon.log",
                                  cwd=self.folder, name="raps run",
                                  env={CLOCK_OFFSET_ENV: str(self.offset_file)})  # fmt: skip
        self._spawn(create_key=True)
        # a new broker holds no session for the daemon yet: what is published before its
        # receiver subscribed would reach nobody (after this, the session keeps it)
        assert self.hand is not None
        self.hand.wait_inbound(READY_SECONDS)
        self.load = Load(Publisher(self.broker.host, self.broker.port, SITE))
        self.load.start()
        assert self.hand is not None
        self.draws = Draws(self.hand, self.rng.randrange(2**32), self.sessions)
        self.draws.start()

    def _spawn(self, create_key: bool = False) -> None:
        """Start the daemon and wait until it is ready: on a loaded machine a start can
        take minutes, and one that is not ready in READY_SECONDS is killed and started
        again (twice at most), so no later fault meets a daemon that is not there."""
        assert self.daemon is not None
        t0 = time.monotonic()
        for attempt in range(3):
            self.daemon.spawn(create_key=create_key)
            try:
                self.daemon.wait_until_ready(READY_SECONDS, 0.05)
                break
            except RuntimeError:
                self.slow_starts += 1
                if attempt == 2:
                    raise
                self.daemon.kill9()
        self.starts += 1
        self.restart_seconds.append(time.monotonic() - t0)
        for event in self.daemon.log_events():  # what the start cost, as the daemon says
            if event.get("event") == "ready":
                self.startup_seconds.append(float(event.get("startup_seconds") or 0))
            elif event.get("event") == "service started":
                self.replayed.append(int(event.get("floor_events_replayed") or 0))
        url = json.loads(self.daemon.ready_file.read_text())["url"]
        if self.hand is None:
            self.hand = Handheld(url, self.token)
        else:
            self.hand.rebase(url)

    def _set_offset(self, seconds: float) -> None:
        """The daemon's clock: the system's plus `seconds` (written whole, then renamed)."""
        tmp = self.offset_file.with_suffix(".tmp")
        tmp.write_text(f"{seconds:.3f}")
        tmp.replace(self.offset_file)
        self.offset = seconds

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
        for worker in (self.draws, self.load):
            if worker is not None:
                worker.stop.set()
                worker.join(20)
        if self.daemon is not None:
            self.daemon.stop()
        self.broker.close()
        self.pg.close()

    # ------------------------------------------------------------------ faults

    def inject(self, kind: str) -> list[str]:
        """Inject one fault (the draws and the load go on meanwhile); what went wrong."""
        assert self.daemon is not None and self.hand is not None
        if kind == "kill9":  # mostly while a command is in flight, else anywhere
            until = time.monotonic() + (2.0 if self.rng.random() < 0.7 else 0.0)
            while not self.hand.inflight and time.monotonic() < until:
                time.sleep(0.001)
            time.sleep(self.rng.uniform(0.0, 0.01))
            if self.hand.inflight:
                self.kills_mid_command += 1
            self.daemon.kill9()
            self._spawn()
        elif kind == "broker_restart":
            self.broker.restart()
        elif kind == "pg_kill":
            self.pg.kill_connections()
            time.sleep(0.5)  # commands right after the cut
        elif kind == "pg_restart":
            self.pg.stop()
            time.sleep(self.rng.uniform(0.5, 2.0))  # commands refused: the database is down
            self.pg.start()
        elif kind == "disk_full":
            self.pg.fill_disk(True)
            time.sleep(self.rng.uniform(1.0, 2.0))
            self.pg.fill_disk(False)
        elif kind == "clock_step":
            return self.clock_step()
        else:
            raise ValueError(kind)
        return []

    def clock_step(self) -> list[str]:
        """Step the daemon's clock past a pending pick's window, or back before it."""
        draws, hand = self.draws, self.hand
        assert draws is not None and hand is not None
        if not draws.pause():
            return ["the handheld did not pause for the clock step in 60 s"]
        limit = min(MAX_OFFSET, to_local_midnight() - 300)
        # forward and back in turn (back only from a clock that is ahead)
        forward = self.offset + CLAIM_SECONDS + 60 <= limit and (
            self.offset < 60 or self.clock_steps["back"] >= self.clock_steps["forward"]
        )
        if not forward and self.offset < 60:
            self.clock_steps["skipped_near_midnight"] += 1
            return []
        got = draws.pending_pick()
        if forward:
            self._set_offset(self.offset + CLAIM_SECONDS + self.rng.uniform(5.0, 60.0))
        else:
            self._set_offset(self.rng.uniform(0.0, self.offset / 2))
        self.clock_steps["forward" if forward else "back"] += 1
        if got is None:
            return []  # no pick to watch (no session left, or the draw was refused)
        sid, n = got
        if forward:  # the claim timer runs on the stepped clock: a no-show within seconds
            deadline = time.monotonic() + 15
            while (state := self._pick_state(sid, n)) != "no_show":
                if time.monotonic() > deadline:
                    return [f"{sid} pick {n}: {state} 15 s after the clock stepped past its "
                            "claim window (the claim timer did not fire)"]  # fmt: skip
                time.sleep(0.1)
            return []
        time.sleep(1.0)  # a tick or five on the stepped-back clock
        state = self._pick_state(sid, n)
        if state != "pending":
            return [f"{sid} pick {n}: {state} after the clock stepped back (its window is open)"]
        if hand.command(sid, f"picks/{n}/verify") is not None:
            self.expect_backwards = True  # journaled before the record it follows
        return []

    def _pick_state(self, sid: str, n: int) -> str | None:
        assert self.hand is not None
        summary = self.hand.summary(sid) or {}
        for pick in summary.get("picks", []):
            if pick.get("pick") == n:
                return str(pick.get("state"))
        return None

    # ------------------------------------------------------------------ checks

    def check(self) -> list[str]:
        """The invariants after a fault (see the module docstring); what is wrong."""
        load, hand, draws = self.load, self.hand, self.draws
        assert load is not None and hand is not None and draws is not None
        draws.resume()  # a clock step leaves it paused: it must have its chance to answer
        wrong: list[str] = self._progress()
        if load.error:
            wrong.append(f"the publisher failed: {load.error}")
        if draws.errors:
            wrong.append(f"the handheld failed: {draws.errors[-1]}")
            draws.errors.clear()
        if not draws.pause():
            wrong.append("the handheld's command in flight had no end in 60 s")
        if not load.pause():
            wrong.append("the broker did not acknowledge the publisher's messages in 30 s")
        try:
            wrong += self._points()
            wrong += self._journal()
            wrong += self._verify()
        finally:
            load.resume()
            draws.resume()
        return wrong

    def _progress(self) -> list[str]:
        """Since the previous fault's check, at least one command answered and SAS events
        applied (waited for up to PROGRESS_SECONDS): a handheld that only meets refusals,
        or a SAS loop whose games are all dropped, must not pass as "survived"."""
        hand = self.hand
        assert hand is not None
        deadline = time.monotonic() + PROGRESS_SECONDS
        while True:
            answered = len(hand.answered_ids())
            sas = self.sas_events()
            start, before = self.sas_mark
            base = before if start == self.starts else 0.0  # a restart's counter is new
            if (answered > self.answered_mark and sas > base) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        self.sas_applied += max(0.0, sas - base)
        self.sas_mark = (self.starts, max(sas, base))
        wrong = []
        if answered <= self.answered_mark:
            refusals = dict(hand.refusals.most_common(2))
            last = [hand.refusal_texts.get(k, "") for k in refusals]
            wrong.append(f"no command answered since the previous fault (refusals {refusals}: "
                         f"{last})")  # fmt: skip
        if sas <= base:
            wrong.append(f"no SAS event applied since the previous fault ({sas:.0f} since start)")
        self.answered_mark = answered
        self.stalls += bool(wrong)
        return wrong

    def _verify(self) -> list[str]:
        done = subprocess.run([*raps_command(), "verify", self.pg.url],
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        if done.returncode not in VALID:  # 3: valid, with anomalies (early no-shows)
            self.verify_failures += 1
            tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
            return [f"raps verify failed (exit {done.returncode}): {' | '.join(tail)}"]
        if self.expect_backwards:
            if done.returncode != 3 or "went backwards" not in done.stdout:
                self.verify_failures += 1
                return ["raps verify did not report the journal's time going backwards "
                        f"(exit {done.returncode})"]  # fmt: skip
            self.backwards_reported += 1
            self.expect_backwards = False
        return []

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
        none of its records twice (a draw is two records, pick.requested and pick.drawn; a
        forced close voids each pending pick, a pick.voided per pick, then closes)."""
        hand = self.hand
        assert hand is not None
        seen: Counter[str] = Counter()
        records: Counter[tuple[str, str, object]] = Counter()
        for (record,) in self.pg.sql("SELECT record FROM journal"):
            rec = json.loads(record)
            cid = (rec.get("data") or {}).get("command_id")
            if cid:
                seen[cid] += 1
                records[(cid, str(rec.get("type")), rec["data"].get("pick"))] += 1
        answered = hand.answered_ids()
        out = []
        missing = [c for c in answered if seen[c] == 0]
        repeated = {cid for (cid, _, _), n in records.items() if n > 1}
        twice = [c for c in answered if c in repeated]
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
            time.sleep(self.rng.uniform(0.2, 1.0))  # the load and the draws run meanwhile
            t0 = time.monotonic()
            try:
                wrong = self.inject(kind)
            except Exception as e:
                self.problems.append(f"fault {i} {kind}: injecting failed: {e}")
                say(f"fault {i:>4}/{len(plan)} {kind:<15} INJECTION FAILED: {e}")
                if self.draws is not None:
                    self.draws.resume()
                if kind == "kill9":  # no daemon: nothing after this would mean anything
                    say("the daemon could not be started again: the run stops here")
                    return
                continue
            self.faults[kind] += 1
            wrong += self.check()
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
    if args.quick:  # each kind once, and the clock back after its step forward
        plan = list(KINDS)
        rng.shuffle(plan)
        plan.append("clock_step")
    else:
        plan = [rng.choice(KINDS) for _ in range(args.faults)]
    start_clock()
    section(f"chaos: {len(plan)} faults, seed {seed}")
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="raps-chaos-") as tmp:
        chaos = Chaos(Path(tmp), seed, sessions_for(len(plan)))
        try:
            chaos.start()
            chaos.run(plan)
        finally:
            chaos.close()
    seconds = time.monotonic() - t0
    assert chaos.load is not None and chaos.hand is not None
    injected = sum(chaos.faults.values())
    lost = chaos.lost + chaos.missing_commands
    target_faults = len(plan) if args.quick else 200
    clean = lost == 0 and chaos.doubled == 0 and chaos.twice_commands == 0
    targets: dict[str, Any] = {
        "faults_survived": {
            "target": f">= {target_faults}",
            "met": chaos.survived >= target_faults,
        },
        "lost": {"target": "0", "met": clean},
        "verify": {"target": "OK after every fault", "met": chaos.verify_failures == 0},
        "progress": {
            "target": "commands answered and SAS events applied between faults",
            "met": chaos.stalls == 0,
        },
    }
    if args.quick:
        targets["seconds"] = {"target": "< 60", "met": seconds < 60}
    top_refusals = chaos.hand.refusals.most_common(4)
    result: dict[str, Any] = {
        "bench": "chaos",
        "quick": args.quick,
        "seed": seed,
        "faults": injected,
        "faults_survived": chaos.survived,
        "by_kind": dict(chaos.faults),
        "disk_full_mode": chaos.pg.disk_mode,
        "clock_steps": dict(chaos.clock_steps),
        "time_backwards_reported": chaos.backwards_reported,
        "kills_mid_command": chaos.kills_mid_command,
        "games_acknowledged": sum(chaos.load.pub.games.values()),
        "publish_retries": chaos.load.pub.failures,
        "sas_events_applied": round(chaos.sas_applied),
        "stalls": chaos.stalls,
        "commands_answered": len(chaos.hand.answered),
        "sessions_used": chaos.draws.session if chaos.draws else 0,
        "sessions": chaos.sessions,
        "commands_refused": chaos.hand.refused,
        "refusals": dict(chaos.hand.refusals.most_common(8)),
        "refusal_texts": {k: chaos.hand.refusal_texts.get(k, "") for k, _ in top_refusals},
        "lost_messages": chaos.lost,
        "doubled_messages": chaos.doubled,
        "commands_missing": chaos.missing_commands,
        "commands_twice": chaos.twice_commands,
        "verify_failures": chaos.verify_failures,
        "restart_seconds_max": round(max(chaos.restart_seconds, default=0.0), 2),
        "restart_seconds_median": round(statistics.median(chaos.restart_seconds or [0.0]), 2),
        "startup_seconds_max": round(max(chaos.startup_seconds, default=0.0), 2),
        "floor_events_replayed_max": max(chaos.replayed, default=0),
        "slow_starts": chaos.slow_starts,
        "problems": chaos.problems[:10],
        "seconds": round(seconds, 1),
        "targets": targets,
        "met": all(t["met"] for t in targets.values()),
    }
    print_result(result)
    return 0 if result["met"] else 1


if __name__ == "__main__":
    raise SystemExit(main())

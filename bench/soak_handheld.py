"""The crash soak's state and the marketing handheld's side of it: the commands it
sends, what their answers promise (the model), the journal head it has seen, and the
kills, between commands or with a command in flight."""

from __future__ import annotations

import contextlib
import json
import math
import random
import secrets
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from bench import harness
from bench.soak_daemon import CLAIM_SECONDS, DaemonProcess, DatabasePeek, write_config
from bench.soak_model import (
    TARGET_STATE,
    Command,
    InvariantViolation,
    Report,
    SessionModel,
    same_pick,
    utc_now,
)
from raps.chain import Head
from raps.seal import SeedSealer


class Handheld:
    """State of one database's soak, and the commands the handheld sends.

    CrashSoak (bench/soak_crash.py) drives it; RecoveryChecks (bench/soak_checks.py)
    checks what the daemon kept across each kill.
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
        say: Callable[[str], None] = harness.say,
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

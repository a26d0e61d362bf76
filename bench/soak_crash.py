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
invariant).  tests/test_crash_recovery.py runs this same driver for 6 cycles per
database (the fewest that cover every kind of kill).

Progress goes to standard output; the last line is one JSON object with the cycles
run, the failures and how many times each invariant was checked.

This file has the command line and the outline of a soak (CrashSoak.run, cycle,
finish_session); the rest is in bench/: soak_model.py (what the handheld was told, the
report), soak_daemon.py (the daemon's config, process and database), soak_handheld.py
(the commands and kills) and soak_checks.py (the invariants).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.harness import print_result, raps_command, say  # noqa: E402
from bench.soak_checks import RecoveryChecks  # noqa: E402
from bench.soak_daemon import DaemonProcess, DatabasePeek, create_pg_database, write_config  # noqa: E402
from bench.soak_model import (  # noqa: E402
    EXPIRES_WHILE_DOWN,
    KEEPS_DEADLINE,
    Command,
    InvariantViolation,
    Report,
    SessionModel,
    diff_summaries,
    poll,
    sleep_until,
    strip_head,
)
from raps.chain import Head  # noqa: E402
from selector.fairness import commitment as commit_to  # noqa: E402

# what tests/test_crash_recovery.py uses of this file, besides CrashSoak
__all__ = [
    "CrashSoak",
    "DaemonProcess",
    "DatabasePeek",
    "diff_summaries",
    "poll",
    "raps_command",
    "strip_head",
    "write_config",
]


# -------------------------------------------------------------------- the soak


class CrashSoak(RecoveryChecks):
    """Drives one database through `cycles` kill -9 / restart cycles and checks each.

    Sessions are used `cycles_per_session` cycles each, then closed, verified offline
    (`raps verify`, `raps export`) and the next one opened, so a long soak does not run
    out of quota or of players.  The first broken invariant raises InvariantViolation.
    """

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

    def cycle(self, j: int, total: int) -> None:
        """Some acknowledged commands, one kill -9 at a random point, restart, check.

        The first three cycles of a session use each kind of kill once (in random
        order); the last three make sure that a pending pick crosses a restart (two
        tries) and that a claim deadline passes while the daemon is down, if chance has
        not done so.
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
        if total - 3 <= j < total - 1 and not self.seen_this_session(KEEPS_DEADLINE):
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
                sleep_until(hold_until)
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
    say(f"{database}: {cycles} kill -9 cycles (seed {soak.seed}) in {folder}")
    try:
        soak.run()
    except InvariantViolation as e:
        soak.report.failures.append(str(e))
        say(f"{database}: FAILED: {e}")
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
    print_result(summary)
    return 1 if summary["failures"] else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Crash recovery: the real daemon, killed with SIGKILL at random points, restarted, checked.

Each test starts `raps run` as a subprocess on SQLite and on a real PostgreSQL (the
`db_url` fixture), plays a marketing handheld over the HTTP API and kills the daemon
between commands, while a command is in flight and while it is starting up. The driver
and every invariant live in bench/soak_crash.py and the bench/soak_*.py modules it imports;
soak_crash.py is also the long soak command (docs/crash-recovery.md); here it runs 6
kill cycles per database, the fewest that cover every kind of kill point: a session's
first three cycles use each kind of kill once (idle, in flight, during start-up) and its
last three make a pending pick cross a restart and a claim deadline pass while the daemon
is down (CrashSoak.cycle). RAPS_SOAK_CYCLES=N runs longer.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sqlite3
import subprocess
import sys
import time
import zlib
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parent.parent
# first three cycles: each kind of kill once; last three: a pending pick across a restart
# (two tries) and a deadline passing while down; fewer would leave a kind out
MIN_CYCLES = 6
CYCLES = int(os.environ.get("RAPS_SOAK_CYCLES", str(MIN_CYCLES)))


def _load_soak() -> ModuleType:
    """Load the soak driver from its file, once, as the soak command runs it."""
    name = "raps_bench_soak_crash"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / "soak_crash.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


soak = _load_soak()


def _seed() -> int | None:
    """RAPS_SOAK_SEED replays the same random choices (kill timing still varies)."""
    value = os.environ.get("RAPS_SOAK_SEED")
    return int(value) if value else None


def test_kill9_at_random_points_keeps_every_acknowledged_outcome(
    db_url: str, tmp_path: Path
) -> None:
    """CYCLES kill -9 cycles in one open session, then close, restart, and verify offline.

    The driver raises at the first broken invariant with the evidence, the database,
    the cycle and the random seed. What it checks: docs/crash-recovery.md.
    """
    assert CYCLES >= MIN_CYCLES, f"RAPS_SOAK_CYCLES={CYCLES}: {MIN_CYCLES} cover every kill"
    run = soak.CrashSoak(
        tmp_path, db_url, CYCLES, seed=_seed(), cycles_per_session=CYCLES, say=print
    )
    report = run.run()
    print(report.as_dict())
    assert report.cycles == CYCLES
    assert report.sessions == 1
    assert not report.failures
    # every kind of kill point happened at least once (the driver schedules each once)
    for how in ("between_commands", "command_in_flight", "after_close"):
        assert report.kills[how] >= 1, (how, report.kills)
    assert report.kills["during_startup"] + report.kills["just_after_ready"] >= 1
    # the floor came back from a snapshot plus the events logged after it
    assert report.kills["down_with_floor_snapshot"] >= 1, report.kills
    assert report.kills["restart_floor_events_replayed"] >= 1, report.kills
    checks = report.checks
    for name in (
        "every acknowledged command is in the journal",
        "an acknowledged pick keeps its card, slot, attempt, pool and deadline",
        "a pending pick keeps its claim deadline across the restart",
        "a claim deadline that passed while down expires",
        "retrying an acknowledged draw replays the same pick",
        "an open session's seed is nowhere in the database in plain text",
        "after close the seed is only in the session.closed record",
        "a closed session survives a kill -9 unchanged",
        "raps verify DB_URL passes",
        "raps verify EXPORT --head SEQ:HASH passes",
        "no seed in the daemon logs",
        "no winner's full card number in the logs",
        "both pools have eligible players after a restart",
    ):
        assert checks[name] >= 1, (name, dict(checks))
    # a kill during a command either beat its answer (then the retry is checked) or came
    # just after it; which one is a race, so at least one of the two must have happened
    retried = [k for k in checks if k.startswith("in-flight command retried")]
    assert retried or report.kills.get("in_flight_answered_first", 0) >= 1, (
        report.kills,
        dict(checks),
    )


def _wait_until(moment: datetime) -> None:
    time.sleep(max(0.0, (moment - datetime.now(UTC)).total_seconds()))


def test_no_show_shown_at_a_refused_command_is_journaled_and_survives_a_restart(
    db_url: str, tmp_path: Path
) -> None:
    """A no-show the daemon shows must be in the journal, so a restart cannot undo it.

    Every command first runs the claim timer (docs/core.md). When the command is then
    refused, e.g. a verify that arrives just after the deadline and before the 0.2 s
    tick, the timer's no-show is still applied in memory and shown. It must be
    journaled too: otherwise a kill -9 and restart bring the pick back as pending, and
    a redraw into the freed slot makes `raps verify` report the quota as exceeded in
    an honest session. Three tries at the deadline (each a race with the tick that
    the command usually wins); every try must hold.
    """
    token = "crash-recovery-test-token-0123456789"
    sid = "deadline-race"
    config = soak.write_config(tmp_path, db_url, token, [sid], 1.5, {"slots": 1, "tables": 1})
    daemon = soak.DaemonProcess(config, tmp_path, token, 1)
    base = f"/api/sessions/{sid}"
    problems: list[str] = []
    try:
        daemon.spawn(create_key=True)
        daemon.wait_ready()
        assert daemon.post(f"{base}/open", {"command_id": "open"})[0] == 200
        shown_no_show: set[int] = set()
        for attempt in range(3):
            status, answer = _draw_when_eligible(daemon, base, f"draw-{attempt}")
            assert status == 200 and answer["pick"] is not None, answer
            pick = answer["pick"]
            _wait_until(datetime.fromisoformat(pick["deadline"]))
            status, refused = daemon.post(
                f"{base}/picks/{pick['pick']}/verify", {"command_id": f"verify-{attempt}"}
            )
            assert status == 409, refused  # too late: the claim window has run out
            state = {p["pick"]: p["state"] for p in daemon.get(base)["picks"]}
            assert state[pick["pick"]] == "no_show", state
            shown_no_show.add(pick["pick"])
        assert daemon.post(f"{base}/close", {"command_id": "close", "force": True})[0] == 200
        before = daemon.get(base)
        daemon.kill9()

        records = [e.record for e in soak.DatabasePeek(db_url).entries()]
        journaled = {r["data"]["pick"] for r in records if r["type"] == "pick.no_show"}
        lost = sorted(shown_no_show - journaled)
        if lost:
            problems.append(
                f"picks {lost} were shown as no_show (claim timer) but the journal has no "
                f"pick.no_show for them; journal: "
                + ", ".join(f"{r['type']}({r['data'].get('pick', '')})" for r in records)
            )

        daemon = soak.DaemonProcess(config, tmp_path, token, 2)
        daemon.spawn()
        daemon.wait_ready()
        after = daemon.get(base)
        if soak.strip_head(after) != soak.strip_head(before):
            problems.append(
                "the closed session changed across kill -9: " + soak.diff_summaries(before, after)
            )
        done = subprocess.run(
            [*soak.raps_command(), "verify", db_url], capture_output=True, text=True, timeout=120
        )
        if done.returncode != 0 or "RESULT: OK" not in done.stdout:
            problems.append(f"raps verify exit {done.returncode}: {done.stdout.strip()}")
    finally:
        daemon.kill9()
    assert not problems, "\n".join(problems)


def _draw_when_eligible(
    daemon: Any, base: str, command_id: str, timeout: float = 20.0
) -> tuple[int, dict[str, Any]]:
    """Draw once the simulated floor has filled the slots pool (a poll with a deadline)."""
    deadline = time.monotonic() + timeout
    n = 0
    while True:
        n += 1
        status, answer = daemon.post(f"{base}/draw", {"command_id": f"{command_id}-{n}",
                                                       "kind": "slots"})  # fmt: skip
        if answer.get("pick") is not None or time.monotonic() > deadline:
            return status, answer
        time.sleep(0.2)


def test_a_floor_snapshot_written_before_migration_0002_still_restores(
    db_url: str, tmp_path: Path
) -> None:
    """Upgrading across migration 0002 as its docstring says must leave a startable daemon.

    The procedure is: stop the old daemon (its stop takes a floor snapshot), upgrade,
    start. The old daemon's snapshot body is the bare `Floor.snapshot()` document; since
    0002 a body is `{"floor": ..., "seen": [...]}`. This test takes a snapshot from the
    running daemon, writes it back in the old form (exactly what an old daemon left), and
    restarts: the daemon must come up with its floor, not stop on the old document.
    """
    token = "crash-recovery-test-token-0123456789"
    config = soak.write_config(tmp_path, db_url, token, ["upgrade"], 90)
    peek = soak.DatabasePeek(db_url)
    daemon = soak.DaemonProcess(config, tmp_path, token, 1)
    try:
        daemon.spawn(create_key=True)
        daemon.wait_ready()
        soak.poll("a floor snapshot", peek.floor_snapshots, 20)
        daemon.kill9()
        newest, body = peek.rows(
            "SELECT id, body FROM floor_snapshots ORDER BY last_event_seq DESC LIMIT 1"
        )[0]
        doc = json.loads(zlib.decompress(bytes(body)))
        old_form = zlib.compress(json.dumps(doc.get("floor", doc)).encode())
        _write(db_url, "UPDATE floor_snapshots SET body = ? WHERE id = ?", (old_form, newest))

        daemon = soak.DaemonProcess(config, tmp_path, token, 2)
        daemon.spawn()
        daemon.wait_ready()
        pools = daemon.get("/api/pools")
        assert {row["pool"] for row in pools if row["eligible"]} == {"slots", "tables"}
    finally:
        daemon.kill9()


def _write(db_url: str, sql: str, params: tuple[Any, ...]) -> None:
    """One write to the test's own database while its daemon is down."""
    peek = soak.DatabasePeek(db_url)
    if peek.sqlite:
        lite = sqlite3.connect(peek.path)
        try:
            with lite:  # commits
                lite.execute(sql, params)
        finally:
            lite.close()
    else:
        with psycopg.connect(peek.conninfo, autocommit=True) as pg:
            pg.execute(sql.replace("?", "%s"), params)

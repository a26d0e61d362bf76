"""bench/chaos.py --quick, as CI runs it: one fault of each kind, and the clock back again.

The whole stack (a private PostgreSQL, as root on a small filesystem of its own, a
private Mosquitto, `raps run`) under MQTT, SAS and handheld load, a kill -9, a broker
restart, connections cut, PostgreSQL restarted, its disk full, the daemon's clock stepped
forward and back (issue 16).  Every fault survived: no acknowledged message lost or
applied twice, every answered command journaled once, `raps verify` valid after each,
the claim timers on the stepped clock, the time going backwards reported as an anomaly,
commands answered and SAS games applied between every two faults.
The bench's own time target (< 60 s) holds on a quiet machine only, so it is not asserted
here; its figures are printed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_chaos_quick_survives_every_kind_of_fault() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "chaos.py"), "--quick"],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    lines = done.stdout.strip().splitlines()
    assert lines, done.stderr[-3000:]
    result = json.loads(lines[-1])
    print(lines[-1])  # the figures, in the test's output
    kinds = {"kill9", "broker_restart", "pg_kill", "pg_restart", "disk_full", "clock_step"}
    assert set(result["by_kind"]) == kinds, result
    assert result["faults_survived"] == result["faults"] == len(kinds) + 1, result["problems"]
    targets = result["targets"]
    assert targets["lost"]["met"] and targets["verify"]["met"], result
    assert result["lost_messages"] == result["doubled_messages"] == 0
    assert result["commands_missing"] == result["commands_twice"] == 0
    if "skipped_near_midnight" not in result["clock_steps"]:  # 8 minutes of the day
        assert result["clock_steps"] == {"forward": 1, "back": 1}, result["clock_steps"]
        assert result["time_backwards_reported"] == 1
    assert result["commands_answered"] > 0 and result["games_acknowledged"] > 0
    # commands answered and SAS games applied between every two faults, across restarts
    assert targets["progress"]["met"] and result["stalls"] == 0, result["problems"]
    assert result["sas_events_applied"] > result["faults"], result
    assert result["disk_full_mode"] == ("tmpfs" if os.geteuid() == 0 else "trigger")
    assert done.returncode in (0, 1), done.stderr[-3000:]  # 1: only the time target missed
    if done.returncode == 1:
        assert not targets["seconds"]["met"], result

"""The daemon as a process: starts from a config file, refuses a bad one, stops on SIGTERM.

These run the real `raps run` command, because what systemd sees (exit codes, what
is written before exit) is the contract being tested.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
import pytest

from raps.config import hash_secret

RAPS = str(Path(sys.executable).parent / "raps")
TOKEN = "lifecycle-test-token-0123456789"


def write_config(folder: Path, db_url: str, extra: str = "") -> Path:
    """A simulated floor and a live session whose window holds the test's hour."""
    cfg = folder / "raps.toml"
    now = datetime.now(ZoneInfo("Africa/Johannesburg"))
    cfg.write_text(f"""
[site]
id = "lifecycle"
timezone = "Africa/Johannesburg"

[storage]
url = "{db_url}"
snapshot_interval_seconds = 3600

[credentials]
seed_key_file = "{folder / "seed.key"}"

[http]
port = 0

[floor.simulate]
machines = 50
tables = 5
players = 300
events_per_second = 100
warmup_seconds = 60

[[promotions]]
id = "raps"
threshold_points = 1
window = {{ start = "00:00", end = "24:00" }}

[[sessions]]
id = "S1"
promotion = "raps"
starts = "{now - timedelta(hours=1):%Y-%m-%dT%H:%M}"
ends = "{now + timedelta(hours=2):%Y-%m-%dT%H:%M}"

[[users]]
name = "ann"
role = "marketing"
password_hash = "{hash_secret("pin-1234")}"
api_token_hash = "{hash_secret(TOKEN)}"

[logging]
format = "json"
{extra}
""")
    return cfg


def wait_ready(
    ready: Path, proc: subprocess.Popen[bytes], timeout: float = 60
) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready.exists():
            info: dict[str, object] = json.loads(ready.read_text())
            return info
        if proc.poll() is not None:
            raise AssertionError(f"daemon exited early with {proc.returncode}")
        time.sleep(0.05)
    raise AssertionError("daemon did not become ready")


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], dict[str, object], Path]]:
    cfg = write_config(tmp_path, f"sqlite:///{tmp_path / 'raps.db'}")
    ready = tmp_path / "ready.json"
    log = (tmp_path / "daemon.log").open("wb")
    proc = subprocess.Popen(
        [RAPS, "run", "--config", str(cfg), "--ready-file", str(ready), "--create-key"],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        yield proc, wait_ready(ready, proc), tmp_path
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()


def test_sigterm_finishes_cleanly_and_keeps_the_floor(
    daemon: tuple[subprocess.Popen[bytes], dict[str, object], Path],
) -> None:
    proc, info, folder = daemon
    url = str(info["url"])
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert httpx.get(f"{url}/healthz").json() == {"status": "ok"}
    opened = httpx.post(f"{url}/api/sessions/S1/open", json={"command_id": "o1"}, headers=auth)
    assert opened.status_code == 200
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
    lines = [json.loads(x) for x in (folder / "daemon.log").read_text().splitlines() if x]
    events = [x["event"] for x in lines]
    assert "stopping" in events and events[-1] == "stopped"
    assert all(x.get("site") == "lifecycle" for x in lines)
    # the stop took a floor snapshot: a restart has the floor without replaying from zero
    import sqlite3

    with sqlite3.connect(folder / "raps.db") as db:
        snaps = db.execute("select count(*) from floor_snapshots").fetchone()[0]
        opened_rows = db.execute("select count(*) from journal where type='session.opened'")
        assert opened_rows.fetchone()[0] == 1
    assert snaps == 1


def test_restart_resumes_the_open_session(
    daemon: tuple[subprocess.Popen[bytes], dict[str, object], Path],
) -> None:
    proc, info, folder = daemon
    url = str(info["url"])
    auth = {"Authorization": f"Bearer {TOKEN}"}
    httpx.post(f"{url}/api/sessions/S1/open", json={"command_id": "o1"}, headers=auth)
    before = httpx.get(f"{url}/api/sessions/S1", headers=auth).json()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    ready = folder / "ready.json"
    ready.unlink()
    again = subprocess.Popen(
        [RAPS, "run", "--config", str(folder / "raps.toml"), "--ready-file", str(ready)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        url = str(wait_ready(ready, again)["url"])
        after = httpx.get(f"{url}/api/sessions/S1", headers=auth).json()
        assert after["state"] == "open"
        assert after["commitment"] == before["commitment"]
        retry = httpx.post(f"{url}/api/sessions/S1/open", json={"command_id": "o1"}, headers=auth)
        assert retry.json()["replayed"] is True
    finally:
        again.send_signal(signal.SIGTERM)
        assert again.wait(timeout=30) == 0


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ("[bogus]\nx = 1\n", "bogus: unknown key"),
        ("[mqtt]\nport = 99999\n", "mqtt.port"),
    ],
)
def test_bad_config_stops_the_start_naming_file_and_key(
    tmp_path: Path, extra: str, expected: str
) -> None:
    cfg = write_config(tmp_path, f"sqlite:///{tmp_path / 'raps.db'}", extra)
    run = subprocess.run([RAPS, "run", "--config", str(cfg)], capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    assert run.returncode == 2
    assert str(cfg) in run.stderr
    assert expected in run.stderr


def test_missing_seed_key_is_a_clear_error(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, f"sqlite:///{tmp_path / 'raps.db'}")
    run = subprocess.run([RAPS, "run", "--config", str(cfg)], capture_output=True, text=True,
                         timeout=60, env={**os.environ})  # fmt: skip
    assert run.returncode != 0
    assert "seed key" in run.stderr
    assert "Traceback" not in run.stderr


def test_missing_head_key_is_a_clear_error(tmp_path: Path) -> None:
    """Heads are signed (raps.heads): a daemon with its seed key but no head key stops at
    start, naming the file and the first-setup option."""
    from raps.seal import create_key_file

    cfg = write_config(tmp_path, f"sqlite:///{tmp_path / 'raps.db'}")
    create_key_file(tmp_path / "seed.key")
    run = subprocess.run([RAPS, "run", "--config", str(cfg)], capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    assert run.returncode == 2, run.stderr
    assert f"cannot read the head key file {tmp_path / 'head.key'}" in run.stderr
    assert "--create-key" in run.stderr and "Traceback" not in run.stderr

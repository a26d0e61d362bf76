"""Shared fixtures: a real PostgreSQL for the storage tests, on either database.

PostgreSQL: the server at 127.0.0.1:5432 (trust auth) when one runs, else a throwaway
cluster started with initdb/pg_ctl for this test run.  A missing PostgreSQL is a
failure, never a skip: the storage suite must run on both databases.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.mqtt_broker import PrivateMosquitto

PG_HOST = os.environ.get("RAPS_TEST_PG_HOST", "127.0.0.1")
PG_PORT = int(os.environ.get("RAPS_TEST_PG_PORT", "5432"))


def _pg_up(host: str, port: int) -> bool:
    try:
        with psycopg.connect(host=host, port=port, user="postgres", dbname="postgres",
                             connect_timeout=3):  # fmt: skip
            return True
    except psycopg.Error:
        return False


def _pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for candidate in sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"), reverse=True):
        return str(candidate)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _throwaway_cluster() -> tuple[str, int, subprocess.Popen[bytes] | None, Path]:
    """initdb + pg_ctl start on a free port, as the postgres user when run as root."""
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if not (initdb and pg_ctl):
        pytest.fail("PostgreSQL is not running and initdb/pg_ctl are not installed "
                    "(apt-get install postgresql)", pytrace=False)  # fmt: skip
    base = Path(tempfile.mkdtemp(prefix="raps-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(base, "postgres", "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    port = _free_port()
    data, sock = base / "data", base
    subprocess.run([*as_user, initdb, "-A", "trust", "-U", "postgres", "-D", str(data)],
                   check=True, capture_output=True)  # fmt: skip
    opts = f"-p {port} -k {sock} -c listen_addresses=127.0.0.1 -c fsync=on"
    subprocess.run([*as_user, pg_ctl, "-D", str(data), "-o", opts, "-l", str(base / "log"),
                    "-w", "start"], check=True, capture_output=True)  # fmt: skip
    return "127.0.0.1", port, None, base


@pytest.fixture
def private_broker() -> Iterator[PrivateMosquitto]:
    """A Mosquitto of one's own (persistence on, large queues): for tests that stop or
    kill the daemon, its receiver or the broker (tests/mqtt_broker.py)."""
    b = PrivateMosquitto()
    b.start()
    try:
        yield b
    finally:
        b.close()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[tuple[str, int]]:
    if _pg_up(PG_HOST, PG_PORT):
        yield PG_HOST, PG_PORT
        return
    host, port, _, base = _throwaway_cluster()
    try:
        yield host, port
    finally:
        as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        pg_ctl = _pg_bin("pg_ctl")
        subprocess.run([*as_user, str(pg_ctl), "-D", str(base / "data"), "-m", "immediate",
                        "stop"], capture_output=True)  # fmt: skip
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def pg_url(pg_server: tuple[str, int]) -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test, dropped afterwards."""
    host, port = pg_server
    name = f"raps_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(host=host, port=port, user="postgres", dbname="postgres",
                         autocommit=True) as conn:  # fmt: skip
        conn.execute(f'CREATE DATABASE "{name}"')
    yield f"postgresql://postgres@{host}:{port}/{name}"
    with psycopg.connect(host=host, port=port, user="postgres", dbname="postgres",
                         autocommit=True) as conn:  # fmt: skip
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The same storage test on SQLite (a file) and on a real PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'raps.db'}"
    url: str = request.getfixturevalue("pg_url")
    return url


# ------------------------------------------------------------ the longest tests first

# The longest tests (seconds, call and set-up, on the 2-CPU machine under load; the
# suite's --durations), by test function under tests/: parameters alike. Any test may be
# added; one that is renamed only loses its place at the front.
LONGEST: dict[str, float] = {
    "test_crash_recovery.py::test_kill9_at_random_points_keeps_every_acknowledged_outcome": 160,
    "test_stage_crash.py::test_kill9_never_redoes_a_pick_nor_records_a_prize_twice": 160,
    "test_chaos_quick.py::test_chaos_quick_survives_every_kind_of_fault": 130,
    "test_tickets_crash.py::test_kill9_never_loses_nor_doubles_a_ticket_entry": 100,
    "test_properties.py::test_random_floors_and_commands_keep_the_rules": 70,
    "test_ingest_durable.py::test_kill9_mid_drain_loses_no_acknowledged_message": 66,
    "test_demo.py::test_the_demo_leaves_an_open_rehearsal_and_prints_who_to_sign_in_as_last": 55,
    "test_schedule_cli.py::"
    "test_the_000_seed_s_ticket_calendars_go_out_and_come_back_as_proposals": 49,
    "test_ingest_gaps.py::test_a_backlog_for_an_offline_daemon_is_kept_or_its_loss_counted": 44,
    "test_mqtt_decode_structs.py::test_fast_path_gives_what_the_reference_path_gives": 43,
    "test_mqtt_decode_structs.py::test_structs_agree_with_the_schemas_on_mutated_payloads": 42,
    "test_crash_recovery.py::"
    "test_no_show_shown_at_a_refused_command_is_journaled_and_survives_a_restart": 30,
    "test_stage_games_crash.py::test_kill9_mid_game_keeps_the_safe_and_the_reveals": 26,
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist, start each worker's share with some of the LONGEST tests.

    `--dist worksteal` hands worker k the k-th contiguous block of the collected tests
    (block sizes as below) and an idle worker later steals the second half of the
    longest queue, so a long test collected late in a block (say tests/test_tickets_*)
    ran last and the suite waited for it alone. Here every block starts with its share
    of LONGEST (longest first, each to the block with the least so far) and the other
    tests follow in their collected order. Only the order changes; every test runs.
    """
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    if workers < 2 or len(items) < workers:
        return

    def seconds(item: pytest.Item) -> float:
        return LONGEST.get(item.nodeid.split("[")[0].removeprefix("tests/"), 0.0)

    longest = sorted((i for i in items if seconds(i)), key=seconds, reverse=True)
    chosen = {id(i) for i in longest}
    rest = iter([i for i in items if id(i) not in chosen])
    sizes, left = [], len(items)
    for k in range(workers):  # as xdist's WorkStealingScheduling.check_schedule splits
        sizes.append(left // (workers - k))
        left -= sizes[-1]
    heads: list[list[pytest.Item]] = [[] for _ in range(workers)]
    loads = [0.0] * workers
    for item in longest:
        k = min((k for k in range(workers) if len(heads[k]) < sizes[k]), key=lambda k: loads[k])
        heads[k].append(item)
        loads[k] += seconds(item)
    items[:] = [
        item
        for k in range(workers)
        for item in [*heads[k], *(next(rest) for _ in range(sizes[k] - len(heads[k])))]
    ]

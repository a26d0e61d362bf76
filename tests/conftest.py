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

"""What the benchmarks share: printing, latency figures, the final JSON line, PostgreSQL,
and a `raps run` daemon process.

- `say` / `section`: progress lines, flushed; a section header tells how long the run
  has been going (from `start_clock()`).
- `percentile` / `summary_ms`: nearest-rank percentiles and a p50/p99/max/mean summary.
- `print_result`: the last line every benchmark prints, one compact JSON object.
- `PgServer` / `pg_server`: the PostgreSQL server at host:port (trust auth), else a
  throwaway cluster started with initdb/pg_ctl; databases made for a run and dropped.
- `RapsProcess`: one `raps run --config ... --ready-file ...` subprocess, its output
  in a log file: started, waited for until its ready file appears, stopped or killed.

The benchmarks import this as `bench.harness`, with the repository root on sys.path
(each entry script puts it there).  psycopg is imported only where PostgreSQL is used.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import psycopg

ROOT = Path(__file__).resolve().parent.parent

T = TypeVar("T")

# ---------------------------------------------------------------------- printing

_started = time.perf_counter()


def start_clock() -> None:
    """The moment section headers count from (the start of the run)."""
    global _started
    _started = time.perf_counter()


def say(line: str = "") -> None:
    print(line, flush=True)


def section(title: str) -> None:
    say(f"\n== {title} == [{time.perf_counter() - _started:.1f} s into the run]")


def print_result(result: dict[str, Any]) -> None:
    """The benchmark's last line: one JSON object with every figure and target."""
    print(json.dumps(result, separators=(",", ":")), flush=True)


def version_of(dist: str) -> str:
    """The installed version of a distribution, or "?"."""
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "?"


# ----------------------------------------------------------------------- figures


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty sample."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def summary_ms(values: Sequence[float]) -> dict[str, float | int]:
    """p50/p99/max/mean of seconds, in milliseconds."""
    return {
        "p50": round(percentile(values, 50) * 1000, 3),
        "p99": round(percentile(values, 99) * 1000, 3),
        "max": round(max(values) * 1000, 3),
        "mean": round(statistics.fmean(values) * 1000, 3),
        "n": len(values),
    }


def wait_for(probe: Callable[[], T], timeout: float, interval: float) -> T | None:
    """Call `probe` until it returns something truthy and return that; None after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        result = probe()
        if result:
            return result
        if time.monotonic() > deadline:
            return None
        time.sleep(interval)


# -------------------------------------------------------------------- PostgreSQL


@dataclass
class PgServer:
    host: str
    port: int
    cluster: Path | None = None  # a throwaway cluster to stop at the end
    created: list[str] = field(default_factory=list)

    def connect(
        self, dbname: str = "postgres", autocommit: bool = True, **kwargs: Any
    ) -> psycopg.Connection:
        import psycopg

        return psycopg.connect(
            host=self.host,
            port=self.port,
            user="postgres",
            dbname=dbname,
            autocommit=autocommit,
            **kwargs,
        )

    def up(self) -> bool:
        """Whether the server answers (within 3 s)."""
        import psycopg

        try:
            with self.connect(connect_timeout=3):
                return True
        except psycopg.Error:
            return False

    def url(self, dbname: str) -> str:
        return f"postgresql://postgres@{self.host}:{self.port}/{dbname}"

    def create(self, purpose: str, template: str | None = None) -> str:
        """A new database (a copy of `template` when given; it must have no connection)."""
        name = f"raps_bench_{purpose}_{uuid.uuid4().hex[:10]}"
        copy = f' TEMPLATE "{template}"' if template else ""
        with self.connect() as conn:
            conn.execute(f'CREATE DATABASE "{name}"{copy}')
        self.created.append(name)
        return name

    def drop_all(self) -> None:
        import psycopg

        for name in self.created:
            with contextlib.suppress(psycopg.Error), self.connect() as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self.created.clear()

    def stop(self) -> None:
        if self.cluster is None:
            return
        pg_ctl = _pg_bin("pg_ctl")
        subprocess.run(
            [*_as_postgres(), str(pg_ctl), "-D", str(self.cluster / "data"), "-m", "fast", "stop"],
            capture_output=True,
            check=False,
        )
        shutil.rmtree(self.cluster, ignore_errors=True)


def _pg_bin(name: str) -> str | None:
    """A PostgreSQL server program: on PATH, else the newest /usr/lib/postgresql/*/bin."""
    installed = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"), reverse=True)
    return shutil.which(name) or next((str(p) for p in installed), None)


def _as_postgres() -> list[str]:
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


def pg_server(host: str, port: int) -> PgServer:
    """The server at host:port (trust auth), else a throwaway cluster (initdb + pg_ctl)."""
    running = PgServer(host, port)
    if running.up():
        return running
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if not (initdb and pg_ctl):
        raise SystemExit(
            f"PostgreSQL is not running at {host}:{port} and initdb/pg_ctl are not installed"
        )
    base = Path(tempfile.mkdtemp(prefix="raps-bench-pg-"))
    if os.geteuid() == 0:
        shutil.chown(base, "postgres", "postgres")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free: int = s.getsockname()[1]
    data = base / "data"
    subprocess.run([*_as_postgres(), initdb, "-A", "trust", "-U", "postgres", "-D", str(data)],
                   check=True, capture_output=True)  # fmt: skip
    opts = f"-p {free} -k {base} -c listen_addresses=127.0.0.1 -c fsync=on"
    subprocess.run([*_as_postgres(), pg_ctl, "-D", str(data), "-o", opts, "-l",
                    str(base / "log"), "-w", "start"], check=True, capture_output=True)  # fmt: skip
    return PgServer("127.0.0.1", free, cluster=base)


# ------------------------------------------------------------------------ daemon


def raps_command() -> list[str]:
    """The `raps` entry point of the running interpreter's environment."""
    script = Path(sys.executable).with_name("raps")
    return [str(script)] if script.exists() else [sys.executable, "-m", "raps.cli"]


class RapsProcess:
    """One `raps run --config C --ready-file R` subprocess, stdout and stderr in a log file.

    `fail` is the exception raised when the daemon dies before it is ready, or is not
    ready in time; `name` starts the timeout's message.
    """

    def __init__(
        self,
        config: Path,
        ready_file: Path,
        log_path: Path,
        *,
        cwd: Path,
        command: Sequence[str] | None = None,
        name: str = "daemon",
        fail: type[Exception] = RuntimeError,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.config = config
        self.env = {**os.environ, **env} if env else None  # more environment variables
        self.ready_file = ready_file
        self.log_path = log_path
        self.cwd = cwd
        self.command = list(command) if command is not None else raps_command()
        self.name = name
        self.fail = fail
        self.proc: subprocess.Popen[bytes] | None = None

    def spawn(self, create_key: bool = False) -> None:
        self.ready_file.unlink(missing_ok=True)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        cmd = [*self.command, "run", "--config", str(self.config)]
        cmd += ["--ready-file", str(self.ready_file)]
        if create_key:
            cmd.append("--create-key")
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=self.cwd, env=self.env
            )

    def ready(self) -> bool:
        """Whether the ready file is there; a daemon that died instead is an error."""
        assert self.proc is not None
        if self.ready_file.exists():
            return True
        if self.proc.poll() is not None:
            raise self.fail(
                f"daemon exited with {self.proc.returncode} before it was ready:\n"
                + self.log_tail()
            )
        return False

    def wait_until_ready(self, timeout: float, interval: float) -> None:
        if not wait_for(self.ready, timeout, interval):
            raise self.fail(f"{self.name} ready file: not within {timeout:.1f} s")

    def stop(self, timeout: float = 30) -> None:
        """SIGTERM (the daemon's own shutdown), then SIGKILL if it is not gone in time."""
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def kill9(self) -> None:
        """SIGKILL: no handler runs, no snapshot, no flush; exactly a crash."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait(timeout=30)

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def log_events(self) -> list[dict[str, Any]]:
        """The JSON log lines, in order (other lines are skipped)."""
        out = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            with contextlib.suppress(json.JSONDecodeError):
                item = json.loads(line)
                if isinstance(item, dict):
                    out.append(item)
        return out

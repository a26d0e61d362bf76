"""Real Mosquitto brokers for the MQTT tests and the benchmark.

- `shared_or_private()`: the machine's Mosquitto at 127.0.0.1:1883 when one answers,
  else a private one started for this run.
- `PrivateMosquitto`: `mosquitto -c CONF` on a free port, persistence on in a temporary
  directory, queues large enough for 10,000+ messages held for an offline client
  (Mosquitto's default `max_queued_messages` is 1000: a daemon that is down longer
  than that loses QoS 1 messages; docs/mqtt.md says what to set in production).
  Tests that restart the broker, or that hold more than 1000 messages for an
  offline client, always use a private broker.

A missing `mosquitto` binary is installed from Debian (`apt-get install mosquitto`)
when running as root; otherwise it is a failure, never a skip: the issue's tests must
run against a real broker.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from tests.apt import MissingPackage, ensure_binary

SHARED_HOST = "127.0.0.1"
SHARED_PORT = 1883


class BrokerUnavailable(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def mosquitto_binary() -> str:
    """The mosquitto executable; installs Debian's package when root and missing."""
    try:
        return ensure_binary("mosquitto", ["mosquitto", "mosquitto-clients"])
    except MissingPackage as e:
        raise BrokerUnavailable(str(e)) from None


class PrivateMosquitto:
    """A Mosquitto of our own: free port, persistence on, restartable on the same port."""

    def __init__(self, port: int | None = None, max_queued: int = 200_000, extra: str = "") -> None:
        self.binary = mosquitto_binary()
        self.host = "127.0.0.1"
        self.port = port or free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="raps-mosquitto-"))
        self.conf = self.dir / "mosquitto.conf"
        self.log = self.dir / "mosquitto.log"
        self.proc: subprocess.Popen[bytes] | None = None
        if os.geteuid() == 0:
            # mosquitto drops root privileges to the 'mosquitto' user when it exists
            with contextlib.suppress(KeyError, LookupError, OSError):
                shutil.chown(self.dir, "mosquitto", "mosquitto")
        self.conf.write_text(
            f"listener {self.port} 127.0.0.1\n"
            "allow_anonymous true\n"
            "persistence true\n"
            f"persistence_location {self.dir}/\n"
            "autosave_interval 3600\n"
            f"max_queued_messages {max_queued}\n"
            "max_inflight_messages 100\n"
            "log_dest stderr\n"
            "log_type error\n"
            "log_type warning\n" + extra
        )

    def start(self, timeout: float = 10.0) -> None:
        if self.proc is not None and self.proc.poll() is None:
            return
        out = self.log.open("ab")
        self.proc = subprocess.Popen(
            [self.binary, "-c", str(self.conf)], stdout=out, stderr=subprocess.STDOUT
        )
        out.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BrokerUnavailable(
                    f"mosquitto exited with {self.proc.returncode}: {self.log.read_text()[-2000:]}"
                )
            if port_open(self.host, self.port):
                return
            time.sleep(0.02)
        raise BrokerUnavailable(f"mosquitto did not listen on port {self.port} in {timeout} s")

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM: Mosquitto writes its persistence file and exits."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def restart(self) -> None:
        self.stop()
        self.start()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> PrivateMosquitto:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def private_mosquitto(max_queued: int = 200_000) -> Iterator[PrivateMosquitto]:
    broker = PrivateMosquitto(max_queued=max_queued)
    broker.start()
    try:
        yield broker
    finally:
        broker.close()


@contextlib.contextmanager
def shared_or_private() -> Iterator[tuple[str, int]]:
    """(host, port) of the machine's Mosquitto when it runs, else of a private one."""
    if port_open(SHARED_HOST, SHARED_PORT):
        yield SHARED_HOST, SHARED_PORT
        return
    with private_mosquitto() as broker:
        yield broker.host, broker.port


# ----------------------------------------------------------- a real service


def floor_config_text(
    folder: Path,
    site: str,
    port: int,
    machines: int = 4,
    tables: int = 2,
    seats: int = 7,
    session_id: str | None = None,
    session_starts: str = "2026-04-25T18:00:00+02:00",
) -> str:
    """TOML for a tiny listed floor (M01.., T1..), SQLite in `folder`, window all day.

    One point per R10 wagered (1000 minor units); threshold 5 points.  The seed and
    head key files are created when missing.
    """
    from raps.seal import create_key_file
    from raps.signing import create_signing_key_file

    key = folder / "seed.key"
    if not key.exists():
        create_key_file(key)
    if not (folder / "head.key").exists():  # the signed heads' key, beside the seed key
        create_signing_key_file(folder / "head.key")
    parts = [
        f'[site]\nid = "{site}"\ntimezone = "Africa/Johannesburg"\n',
        f'[storage]\nurl = "sqlite:///{folder / "raps.db"}"\nevent_flush_seconds = 0.2\n',
        f'[credentials]\nseed_key_file = "{key}"\n',
        f'[mqtt]\nenabled = true\nhost = "127.0.0.1"\nport = {port}\nclient_id = "raps-{site}"\n',
    ]
    for i in range(1, machines + 1):
        parts.append(
            f'[[floor.machines]]\nid = "M{i:02d}"\narea = "Main Floor"\n'
            f'bank = "B1"\nnumber = "{i}"\n'
        )
    for i in range(1, tables + 1):
        parts.append(f'[[floor.tables]]\nid = "T{i}"\narea = "Pit 1"\nseats = {seats}\n')
    parts.append(
        '[[promotions]]\nid = "raps"\nthreshold_points = 5\n'
        'window = { start = "00:00", end = "24:00" }\n'
    )
    if session_id:
        parts.append(
            f'[[sessions]]\nid = "{session_id}"\npromotion = "raps"\n'
            f'starts = "{session_starts}"\nrehearsal = true\n'
        )
    return "\n".join(parts)

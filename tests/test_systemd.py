"""The systemd units in systemd/: they verify cleanly, keep their hardening score, and say
what docs/systemd.md says they say.

`systemd-analyze verify` reports unknown keys and bad values as warnings with exit 0, so
any output on stderr is a failure. The units start /opt/raps/venv/bin/raps, which does not
exist on a test machine: each test works on a copy in a temporary folder whose ExecStart
points at this virtualenv's `raps` script (there after `pip install -e .`). `User=raps`
needs no such rewrite: verify (systemd 252) does not look the user up, so the test does
not create it. The template unit is checked as an instance, raps-sas-agent@loop1.service.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.apt import MissingPackage, ensure_binary

ROOT = Path(__file__).resolve().parent.parent
UNITS = ROOT / "systemd"
DAEMON = UNITS / "raps.service"
AGENT = UNITS / "raps-sas-agent@.service"
WITNESS = UNITS / "raps-witness.service"
INSTALLED_RAPS = "/opt/raps/venv/bin/raps"

# Measured with systemd 252 (Debian 12): raps.service 1.1, raps-sas-agent@loop1.service 1.3
# (docs/systemd.md). The margin absorbs rounding and scoring changes between systemd
# versions; a lost hardening line is also caught by test_hardening_lines below.
DAEMON_MAX_EXPOSURE = 1.3
AGENT_MAX_EXPOSURE = 1.5
WITNESS_MAX_EXPOSURE = 1.3

HARDENING = {
    "NoNewPrivileges": "yes",
    "CapabilityBoundingSet": "",
    "AmbientCapabilities": "",
    "ProtectSystem": "strict",
    "ProtectHome": "yes",
    "PrivateTmp": "yes",
    "DevicePolicy": "closed",
    "PrivateUsers": "yes",
    "PrivateIPC": "yes",
    "PrivateMounts": "yes",
    "ProtectKernelTunables": "yes",
    "ProtectKernelModules": "yes",
    "ProtectKernelLogs": "yes",
    "ProtectControlGroups": "yes",
    "ProtectClock": "yes",
    "ProtectHostname": "yes",
    "ProtectProc": "invisible",
    "RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
    "RestrictNamespaces": "yes",
    "RestrictRealtime": "yes",
    "RestrictSUIDSGID": "yes",
    "RemoveIPC": "yes",
    "KeyringMode": "private",
    "LockPersonality": "yes",
    "MemoryDenyWriteExecute": "yes",
    "SystemCallArchitectures": "native",
    "SystemCallErrorNumber": "EPERM",
    "UMask": "0077",
    "User": "raps",
    "Group": "raps",
    "Type": "exec",
    "Restart": "on-failure",
    "RestartSec": "2s",
    "KillSignal": "SIGTERM",
    "TimeoutStopSec": "30",
}


def _ensure_systemd_tools() -> None:
    """systemd-analyze, -sysusers and -tmpfiles come with Debian's systemd package."""
    try:
        ensure_binary("systemd-analyze", ["systemd"])
    except MissingPackage as e:
        pytest.fail(str(e), pytrace=False)


@pytest.fixture(scope="module")
def systemd_tools() -> Iterator[None]:
    _ensure_systemd_tools()
    yield


def _venv_raps() -> Path:
    candidates = [Path(sys.executable).parent / "raps"]
    found = shutil.which("raps")
    if found:
        candidates.append(Path(found))
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path.absolute()
    pytest.fail("no `raps` script next to the interpreter: run `pip install -e .` first")


def _testable_copy(unit: Path, folder: Path, name: str) -> Path:
    """The unit under `name` in `folder`, ExecStart pointing at an existing raps script."""
    text = unit.read_text(encoding="utf-8")
    assert f"ExecStart={INSTALLED_RAPS} " in text, f"{unit.name}: ExecStart moved"
    copy = folder / name
    copy.write_text(
        text.replace(f"ExecStart={INSTALLED_RAPS} ", f"ExecStart={_venv_raps()} "),
        encoding="utf-8",
    )
    return copy


def _directives(unit: Path) -> dict[str, list[str]]:
    """Every `Key=value` of a unit file (comments and section headers left out)."""
    found: dict[str, list[str]] = {}
    for raw in unit.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line[0] in "#;[":
            continue
        key, _, value = line.partition("=")
        found.setdefault(key.strip(), []).append(value.strip())
    return found


def _verify(copy: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["systemd-analyze", "verify", str(copy)],
        cwd=copy.parent,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _exposure(copy: Path) -> float:
    done = subprocess.run(
        ["systemd-analyze", "security", "--offline=yes", "--no-pager", str(copy)],
        cwd=copy.parent,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", done.stderr
    match = re.search(
        rf"Overall exposure level for {re.escape(copy.name)}: (\d+\.\d+)", done.stdout
    )
    assert match, f"no exposure line in:\n{done.stdout}"
    return float(match.group(1))


UNIT_CASES = [
    pytest.param(DAEMON, "raps.service", id="raps.service"),
    pytest.param(AGENT, "raps-sas-agent@loop1.service", id="raps-sas-agent@loop1.service"),
    pytest.param(WITNESS, "raps-witness.service", id="raps-witness.service"),
]


@pytest.mark.parametrize(("unit", "name"), UNIT_CASES)
def test_verify_prints_nothing(systemd_tools: None, tmp_path: Path, unit: Path, name: str) -> None:
    done = _verify(_testable_copy(unit, tmp_path, name))
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", f"systemd-analyze verify {name}:\n{done.stderr}"
    assert done.stdout == "", done.stdout


def test_verify_check_catches_a_typo(systemd_tools: None, tmp_path: Path) -> None:
    """The stderr rule is what catches mistakes: verify itself exits 0 on them."""
    copy = _testable_copy(DAEMON, tmp_path, "raps.service")
    text = copy.read_text(encoding="utf-8")
    copy.write_text(text.replace("ProtectSystem=strict", "ProtectSytem=strict"), "utf-8")
    done = _verify(copy)
    assert "ProtectSytem" in done.stderr


@pytest.mark.parametrize(
    ("unit", "name", "limit"),
    [
        pytest.param(DAEMON, "raps.service", DAEMON_MAX_EXPOSURE, id="raps.service"),
        pytest.param(AGENT, "raps-sas-agent@loop1.service", AGENT_MAX_EXPOSURE, id="sas-agent"),
        pytest.param(WITNESS, "raps-witness.service", WITNESS_MAX_EXPOSURE, id="witness"),
    ],
)
def test_security_exposure(
    systemd_tools: None, tmp_path: Path, unit: Path, name: str, limit: float
) -> None:
    score = _exposure(_testable_copy(unit, tmp_path, name))
    assert score <= limit, f"{name}: exposure {score} > {limit}: hardening regressed"


@pytest.mark.parametrize(
    "unit", [DAEMON, AGENT, WITNESS], ids=["raps.service", "sas-agent", "witness"]
)
def test_hardening_lines(unit: Path) -> None:
    d = _directives(unit)
    user = "raps-witness" if unit == WITNESS else "raps"  # the witness's own user
    for key, value in {**HARDENING, "User": user, "Group": user}.items():
        assert d.get(key) == [value], f"{unit.name}: {key}={d.get(key)}, expected {value!r}"
    assert d["SystemCallFilter"] == ["@system-service", "~@privileged @resources"]
    assert "WatchdogSec" not in d, "WatchdogSec needs sd_notify (Type=notify)"
    assert "StartLimitIntervalSec" in d and "StartLimitBurst" in d
    assert "DynamicUser" not in d, "a fixed user: see docs/systemd.md"
    for doc in d["Documentation"]:
        assert not doc.startswith("man:"), "Documentation=man: fails verify"


def test_daemon_lines() -> None:
    d = _directives(DAEMON)
    assert d["ExecStart"] == [f"{INSTALLED_RAPS} run --config /etc/raps/raps.toml"]
    assert d["PrivateDevices"] == ["yes"]
    assert "DeviceAllow" not in d
    assert "SupplementaryGroups" not in d
    assert d["StateDirectory"] == ["raps"]
    assert d["ConfigurationDirectory"] == ["raps"]
    assert d["LoadCredential"] == [
        "seed-key:/etc/raps/seed.key",
        "head-key:/etc/raps/head.key",
    ]


def test_witness_lines() -> None:
    """Its own user, state and key: nothing of the daemon's (docs/fairness.md)."""
    d = _directives(WITNESS)
    assert d["ExecStart"] == [
        f"{INSTALLED_RAPS} witness run --config /etc/raps-witness/witness.toml"
    ]
    assert d["StateDirectory"] == ["raps-witness"] and d["PrivateDevices"] == ["yes"]
    assert d["LoadCredential"] == ["witness-key:/etc/raps-witness/witness.key"]
    assert _bytes(d["MemoryHigh"][0]) < _bytes(d["MemoryMax"][0])


def _bytes(value: str) -> int:
    """A systemd size (1536M, 1G; base 1024) in bytes."""
    units = {"K": 1, "M": 2, "G": 3, "T": 4}
    if value[-1:] in units:
        return int(value[:-1]) * 1024 ** units[value[-1]]
    return int(value)


def test_daemon_memory_is_capped() -> None:
    """A backstop below the body limits (issue 16: a 200 MB body took the daemon to 1 GB,
    six to 2.7 GB): reclaim from MemoryHigh=, killed (and restarted) at MemoryMax=."""
    d = _directives(DAEMON)
    assert len(d.get("MemoryHigh", [])) == 1 and len(d.get("MemoryMax", [])) == 1, d
    high, cap = _bytes(d["MemoryHigh"][0]), _bytes(d["MemoryMax"][0])
    assert 512 * 1024**2 <= high < cap <= 2 * 1024**3, (high, cap)
    assert d["Restart"] == ["on-failure"], "an OOM kill must bring the daemon back"


def test_agent_lines() -> None:
    d = _directives(AGENT)
    assert d["ExecStart"] == [f"{INSTALLED_RAPS} sas-agent --config /etc/raps/sas-agent-%i.toml"]
    assert d["PrivateDevices"] == ["no"]
    assert d["DeviceAllow"] == ["char-ttyS rw", "char-ttyUSB rw"]
    assert d["SupplementaryGroups"] == ["dialout"]
    assert "LoadCredential" not in d, "the agent draws nothing: it gets no seed key"


def test_nothing_reads_what_proc_subset_hides() -> None:
    """ProcSubset=pid hides /proc/stat and /proc/meminfo: process_* metrics would be empty.

    prometheus_client's ProcessCollector (and psutil's system figures) read them and, under
    systemd, would silently export nothing. Whoever adds one removes ProcSubset=pid from
    both units and from HARDENING (the score stays 1.1 / 1.3: see docs/systemd.md).
    """
    if not any("ProcSubset" in _directives(unit) for unit in (DAEMON, AGENT)):
        return
    hidden = ("ProcessCollector", "PROCESS_COLLECTOR", "psutil", "/proc/stat", "/proc/meminfo")
    offenders = [
        f"{path.relative_to(ROOT)}: {word}"
        for folder in ("raps", "selector", "adapters")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for word in hidden
        if word in path.read_text(encoding="utf-8")
    ]
    assert not offenders, (
        "remove ProcSubset=pid from systemd/*.service and from HARDENING here: "
        + ", ".join(offenders)
    )


def test_sysusers_and_tmpfiles(systemd_tools: None, tmp_path: Path) -> None:
    """Applied to an empty root: a nologin 'raps' user, /etc/raps and /var/lib/raps (and the
    witness's own user and folders)."""
    (tmp_path / "etc").mkdir()
    for cmd in (
        [
            "systemd-sysusers",
            f"--root={tmp_path}",
            str(UNITS / "raps.sysusers.conf"),
            str(UNITS / "raps-witness.sysusers.conf"),
        ],
        [
            "systemd-tmpfiles",
            f"--root={tmp_path}",
            "--create",
            str(UNITS / "raps.tmpfiles.conf"),
            str(UNITS / "raps-witness.tmpfiles.conf"),
        ],
    ):
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
    users = {
        line.split(":")[0]: line.split(":")
        for line in (tmp_path / "etc/passwd").read_text().splitlines()
    }
    raps = users["raps"]
    assert raps[5] == "/var/lib/raps" and raps[6].endswith("nologin")
    assert int(raps[2]) < 1000, "a system user"
    conf, state = (tmp_path / "etc/raps").stat(), (tmp_path / "var/lib/raps").stat()
    assert (conf.st_mode & 0o7777, conf.st_uid, conf.st_gid) == (0o750, 0, int(raps[3]))
    assert (state.st_mode & 0o7777, state.st_uid) == (0o700, int(raps[2]))
    witness = users["raps-witness"]
    assert witness[2] != raps[2] and witness[5] == "/var/lib/raps-witness"
    wstate = (tmp_path / "var/lib/raps-witness").stat()
    assert (wstate.st_mode & 0o7777, wstate.st_uid) == (0o700, int(witness[2]))


MDWE_PROBE = textwrap.dedent(
    """
    import ctypes, sys
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(65, 1, 0, 0, 0) != 0:  # PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN
        sys.exit(77)
    import asyncio, hashlib, mmap, sqlite3
    try:
        mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        sys.exit("W+X mapping was allowed: MDWE not in force")
    except OSError:
        pass
    import raps.cli, selector.verify
    for name in ("pydantic", "sqlalchemy", "aiosqlite", "asyncpg", "psycopg", "fastapi",
                 "uvicorn", "prometheus_client", "aiomqtt", "structlog", "cryptography"):
        try:
            __import__(name)
        except ImportError:
            pass
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        AESGCM(bytes(32)).encrypt(bytes(12), b"seed", b"session")
    except ImportError:
        pass
    cmp = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)(lambda a, b: 0)
    arr = (ctypes.c_int * 3)(3, 1, 2)
    libc.qsort(arr, 3, ctypes.sizeof(ctypes.c_int), cmp)
    sqlite3.connect(":memory:").execute("select 1")
    async def main():
        server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.close()
        server.close()
        await server.wait_closed()
    asyncio.run(main())
    print("ok")
    """
)


def test_python_stack_runs_with_memory_deny_write_execute() -> None:
    """MemoryDenyWriteExecute=yes is safe for CPython (no JIT) and the daemon's libraries.

    The kernel's PR_SET_MDWE (Linux 6.3+) is the same rule systemd enforces (newer systemd
    uses it for MemoryDenyWriteExecute=): no mapping may become writable and executable.
    """
    done = subprocess.run(
        [sys.executable, "-c", MDWE_PROBE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if done.returncode == 77:
        pytest.skip("kernel without PR_SET_MDWE (Linux < 6.3)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"

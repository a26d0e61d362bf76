"""Debian packages the tests need (servers, tools, a browser), installed when missing.

A missing package is installed as root with apt-get (after `apt-get update`), else the
caller fails with what to install: never a skip.  Test workers run in parallel, and a
second apt-get fails on dpkg's lock, so installs queue on one file lock and each worker
looks again after taking it (the first one may have installed the package meanwhile).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

LOCK = Path(tempfile.gettempdir()) / "raps-tests-apt.lock"


class MissingPackage(RuntimeError):
    """The binary is missing and could not be installed here; the message says why."""


def _find(binary: str) -> str | None:
    if os.sep in binary:
        return binary if Path(binary).exists() else None
    return shutil.which(binary) or next(
        (str(p) for d in ("/usr/sbin", "/usr/bin") if (p := Path(d) / binary).exists()), None
    )


def ensure_binary(binary: str, packages: Sequence[str], *, recommends: bool = False) -> str:
    """The path of `binary` (a name on PATH or an absolute path), installing `packages`."""
    found = _find(binary)
    if found:
        return found
    if os.geteuid() != 0:
        raise MissingPackage(f"{binary} is missing: apt-get install {' '.join(packages)} (as root)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    with LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = _find(binary)
        if found:
            return found
        for cmd in (
            ["apt-get", "update", "-q"],
            [
                "apt-get",
                "install",
                "-y",
                "-q",
                *([] if recommends else ["--no-install-recommends"]),
                *packages,
            ],
        ):
            done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
            if done.returncode != 0:
                raise MissingPackage(f"{' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
    found = _find(binary)
    if not found:
        raise MissingPackage(f"apt-get install {' '.join(packages)} provided no {binary}")
    return found

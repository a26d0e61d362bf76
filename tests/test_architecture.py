"""The house's floors, checked: import contracts hold, and a breach is named.

`make test` runs `lint-imports` over the tree itself; these tests show that the contracts
in pyproject.toml really catch what they are meant to, by planting one bad import in a
copy of the tree and reading the report, and that no module grows past what a newcomer
reads at once without saying why.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT = Path(sys.executable).with_name("lint-imports")
PACKAGES = ("selector", "adapters", "raps")
# modules longer than this say in their docstring why they are one module
MAX_LINES = 600
LONG_REASON = "Long on purpose:"


def lint(tree: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT), "--no-logo", "--no-cache"],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the packages and pyproject.toml, to plant bad imports in."""
    out = tmp_path_factory.mktemp("tree")
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, out / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", out / "pyproject.toml")
    return out


def test_the_contracts_hold_on_the_tree() -> None:
    result = lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "bad_import", "contract"),
    [
        ("adapters/mqtt/topics.py", "import raps.service", "Floors: raps (the daemon)"),
        ("selector/fairness.py", "import adapters.wire.codec", "Floors: raps (the daemon)"),
        ("selector/windows.py", "import random", "The core does no I/O"),
        ("selector/floor.py", "import sqlalchemy", "The core does no I/O"),
        ("adapters/modbus/poller.py", "import adapters.sas.codec", "Adapters: each source"),
        ("adapters/wire/codec.py", "import adapters.mqtt.topics", "Adapters: each source"),
        ("raps/metrics.py", "import raps.web", "No import cycles between the daemon"),
    ],
)
def test_a_planted_import_breaks_its_contract_by_name(
    tree: Path, module: str, bad_import: str, contract: str
) -> None:
    path = tree / module
    original = path.read_text("utf-8")
    try:
        path.write_text(original + f"\n{bad_import}  # planted by the test\n", "utf-8")
        result = lint(tree)
    finally:
        path.write_text(original, "utf-8")
    assert result.returncode != 0, result.stdout
    broken = result.stdout.split("Broken contracts", 1)[-1]
    assert contract in broken, result.stdout


def _docstring(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text("utf-8"))) or ""


def test_no_module_grows_past_600_lines_without_saying_why() -> None:
    folders = [*PACKAGES, "bench", "dashboards"]
    too_long = []
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            lines = path.read_text("utf-8").count("\n")
            if lines > MAX_LINES and LONG_REASON not in _docstring(path):
                too_long.append(f"{path.relative_to(ROOT)}: {lines} lines")
    assert not too_long, f"split these or say '{LONG_REASON} ...' in the docstring: {too_long}"

"""`raps schedule export` and `raps schedule import` as an operator runs them: the real
command in a subprocess, on a config file and its database, with the daemon stopped.

Export writes the schedule as TOML (exit 0); import proposes what a file changes, with
the reason, and says how many changes it proposed (exit 0); a file with a wrong key, or
one whose schedule cannot be, is refused (exit 1) naming the entry and key, and nothing
is journaled.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.daemon_helpers import SESSION, floor_config_text

RAPS = str(Path(sys.executable).parent / "raps")
CALENDAR = """
[promotions.period]
first = "2026-04-18"
last = "2026-06-27"

[promotions.calendar]
dated = [{ dates = ["2026-04-25"], times = ["11:00", "12:00"] }]
windows = { raps = { start = "at", end = "+59m" } }
"""
MORNING = ("2026-04-25T11:00:00+02:00", "2026-04-25T11:59:00+02:00")
NEW_SESSION = """
[[sessions]]
id = "noon-extra"
promotion = "raps"
name = "Noon extra"
starts = "2026-04-25 12:00"
ends = "2026-04-25 12:45"
quotas = { slots = 2, tables = 0 }
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "raps.toml"
    text = floor_config_text(
        f"sqlite:///{tmp_path / 'raps.db'}", tmp_path, extra=CALENDAR, session_window=MORNING
    )
    path.write_text(text, encoding="utf-8")
    return path


def raps(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [RAPS, "schedule", *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def export(config: Path) -> dict[str, object]:
    done = raps("export", "--config", str(config), cwd=config.parent)
    assert done.returncode == 0, done.stderr
    return tomllib.loads(done.stdout)


def test_export_then_import_with_a_reason_proposes_the_changes(config: Path) -> None:
    out = config.parent / "schedule.toml"
    done = raps("export", "--config", str(config), "-o", str(out), cwd=config.parent)
    assert done.returncode == 0, done.stderr
    text = out.read_text("utf-8")
    assert text.startswith("# raps schedule export, ")
    page = tomllib.loads(text)
    assert [s["id"] for s in page["sessions"]] == [SESSION]  # type: ignore[index]
    assert page["sessions"][0]["starts"] == "2026-04-25 11:00"  # type: ignore[index]
    assert page["promotions"][0]["period"] == {"first": "2026-04-18", "last": "2026-06-27"}  # type: ignore[index]

    out.write_text(text + NEW_SESSION, "utf-8")
    args = ("import", str(out), "--config", str(config), "--user", "ada")
    done = raps(*args, "--reason", "the GM's extra draw", cwd=config.parent)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "raps schedule import: 1 change(s) proposed; an admin approves them on the calendar page"
    ]
    after = export(config)
    assert [s["id"] for s in after["sessions"]] == [SESSION, "noon-extra"]  # type: ignore[index]

    done = raps(*args, "--reason", "the same again", cwd=config.parent)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "raps schedule import: nothing differs; nothing journaled"

    missing = raps("import", str(out), "--config", str(config), cwd=config.parent)
    assert missing.returncode == 2 and "--reason" in missing.stderr  # a reason is required


def test_a_bad_file_is_refused_with_exit_1_naming_the_key_and_nothing_is_journaled(
    config: Path,
) -> None:
    before = export(config)
    bad = config.parent / "bad.toml"
    cases = [
        (NEW_SESSION + 'colour = "red"\n', "sessions[0].colour"),
        # outside the promotion's period (18 April - 27 June)
        (NEW_SESSION.replace("2026-04-25", "2026-07-04"), "sessions[0].starts"),
        # the calendar's window ends before it starts
        (CALENDAR.replace('end = "+59m"', 'end = "10:00"').replace(
            "[promotions.", '[[promotions]]\nid = "raps"\n[promotions.', 1
        ), "promotions[0].calendar"),
    ]  # fmt: skip
    for text, key in cases:
        bad.write_text(text, "utf-8")
        args = ("import", str(bad), "--config", str(config), "--reason", "try")
        done = raps(*args, cwd=config.parent)
        assert done.returncode == 1, (key, done.stdout, done.stderr)
        assert done.stderr.startswith("raps schedule import: "), done.stderr
        assert key in done.stderr, (key, done.stderr)
        assert "proposed" not in done.stdout
    assert export(config) == before  # nothing was journaled
    wrong_config = raps("export", "--config", str(bad), cwd=config.parent)
    assert wrong_config.returncode == 2  # the daemon's config itself: as `raps run`


def test_the_000_seed_s_ticket_calendars_go_out_and_come_back_as_proposals(
    tmp_path: Path,
) -> None:
    """Gold Reef City's draw calendars (000) in the file: the 22 October draw moved to
    Tuesday 21 October, exported; moved to 14:00 in the file, proposed; an impossible
    time refused with exit 1, naming the entry and key."""
    seed = Path(__file__).resolve().parent.parent / "config" / "seeds" / "gold-reef-city.toml"
    config = tmp_path / "raps.toml"
    config.write_text(
        seed.read_text("utf-8")
        .replace("sqlite:///var/gold-reef-city.db", f"sqlite:///{tmp_path / 'grc.db'}")
        .replace("var/seed.key", str(tmp_path / "seed.key")),
        "utf-8",
    )
    page = export(config)
    cals = page["ticket_calendars"]
    assert [c["program"] for c in cals] == [  # type: ignore[union-attr, index]
        "wed-cash", "wed-cash", "queen-thu", "car", "sat-cash", "sat-cash", "sat-cash",
    ]  # fmt: skip
    wed = cals[0]  # type: ignore[index]
    assert wed["calendar"]["moved"] == [  # type: ignore[index]
        {"from": "2025-10-22 13:00", "to": "2025-10-21 13:00", "reason": "rule 4"}
    ]
    out = tmp_path / "schedule.toml"
    done = raps("export", "--config", str(config), "-o", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    text = out.read_text("utf-8")
    moved = 'to = "2025-10-21 13:00"'
    assert text.count(moved) == 1
    args = ("import", str(out), "--config", str(config), "--reason", "the 21st at 14:00")
    out.write_text(text.replace(moved, 'to = "2025-10-21 25:00"'), "utf-8")
    done = raps(*args, cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "ticket_calendars[0].calendar.moved[0].to" in done.stderr
    out.write_text(text.replace(moved, 'to = "2025-10-21 14:00"'), "utf-8")
    done = raps(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "1 change(s) proposed" in done.stdout
    assert export(config)["ticket_calendars"] == cals  # proposed: nothing applies unapproved

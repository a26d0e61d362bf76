"""`make demo` as a newcomer sees it: the scripted rehearsal runs, then the block of what
to do next is the last thing printed (every page's URL, a user and PIN for every role)
and the second rehearsal session is open for the handheld.

The demo runs as its own process (it configures logging for the whole process), with
the claim window shortened so its scripted no-show takes seconds, not twenty.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from raps.demo import PEOPLE, STAGE_DRAW

RUN = """
import sys
from pathlib import Path
import raps.demo as demo
demo.CLAIM_SECONDS = 3
sys.exit(demo.main(Path(sys.argv[1]), float(sys.argv[2])))
"""


def test_the_demo_leaves_an_open_rehearsal_and_prints_who_to_sign_in_as_last(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(tmp_path / "demo"), "1"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.rstrip().splitlines()
    start = lines.index("== Your turn: the daemon keeps running (Ctrl-C stops it) ==")
    block = lines[start:]
    # the transcript's verification came before (its anomalies: the sessions left open)
    assert any(x.startswith("RESULT: OK") for x in lines[:start]), lines[:start]
    url = re.search(r"(http://127\.0\.0\.1:\d+)/metrics", block[-1])
    assert url is not None, block[-1]  # the block is the very last thing printed
    for _role, (name, page) in PEOPLE.items():
        assert any(
            re.fullmatch(rf"  {re.escape(url[1] + page)}\s+sign in as {name}\s+PIN \d{{6}}", x)
            for x in block
        ), (name, block)
    session = re.search(r"handheld: rehearsal session (\S+) is open", "\n".join(block))
    assert session is not None and f"ticket draw {STAGE_DRAW} is open" in "\n".join(block)
    # the transcript's own verification, just before: both are open, nothing failed
    assert (
        f"session {session[1]}: not closed yet; seed unrevealed, its steps checked only"
        in (lines[:start])
    )
    assert (
        f"draw {STAGE_DRAW}: not closed yet; seed unrevealed, chain checked only" in (lines[:start])
    )

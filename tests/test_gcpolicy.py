"""The daemon's collector settings: start-up state frozen, young collections rarer.

Checked in a fresh interpreter, so this test process keeps its own settings.
"""

from __future__ import annotations

import json
import subprocess
import sys

from raps.gcpolicy import OLDER_THRESHOLD, YOUNG_THRESHOLD

PROBE = """
import gc, json
from raps.gcpolicy import settle_after_start
before = (gc.get_threshold(), gc.get_freeze_count())
state = [[i] for i in range(10_000)]  # long-lived containers, built at start-up
settle_after_start()
print(json.dumps({"before": before, "after": [gc.get_threshold(), gc.get_freeze_count()],
                  "enabled": gc.isenabled(), "young": gc.get_count()[0]}))
"""


def test_settling_freezes_what_start_up_built_and_raises_the_thresholds() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=60
    )
    got = json.loads(out.stdout)
    (threshold_before, frozen_before) = got["before"]
    threshold_after, frozen_after = got["after"]
    assert threshold_before == [700, 10, 10] and frozen_before == 0  # CPython's defaults
    assert threshold_after == [YOUNG_THRESHOLD, OLDER_THRESHOLD, OLDER_THRESHOLD]
    assert frozen_after >= 10_000  # the start-up state is out of the collector's sight
    assert got["enabled"] and got["young"] < 100  # still collecting, from a clean slate

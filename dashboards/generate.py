"""Generate the RAPS Grafana dashboards and the alert rules' unit tests.

    .venv/bin/python dashboards/generate.py          # (re)write the generated files
    .venv/bin/python dashboards/generate.py --check  # exit 1 when a committed file is stale

What it writes, next to this file:

- raps-floor-ingest.json, raps-pools.json, raps-draws.json, raps-tickets.json,
  raps-service.json: Grafana dashboards, built with grafana-foundation-sdk (pinned
  `1769699379!11.6.0`).
- prometheus/alerts_test.yml: `promtool test rules` cases for prometheus/alerts.yml. The
  cases (series, times, expected labels and values) are in raps_dashboards/alert_cases.py;
  the expected annotations are rendered from alerts.yml itself, so a runbook edit needs
  no test edit.

Every query filters on the `site` target label that the scrape config adds
(`{site=~"$site"}`); the daemon's own metrics carry no site label. The data source is the
`datasource` variable (type prometheus). tests/test_dashboards.py checks that the committed
files equal this script's output, that every expression passes `promtool check rules`, and
that every metric used exists in a real daemon's /metrics.

This file is the entry point: it knows the files and runs the command line. What goes
in them is the package raps_dashboards/ next to it: panels.py the shared helpers, one
module a dashboard (floor_ingest.py, pools.py, draws.py, tickets.py, service.py),
alert_cases.py and alerts_tests.py the alert rule tests. The package is imported from
this file's folder, which is why that folder is appended to sys.path before the imports
below: Python puts it first itself when this file runs as a script, but not when the file
is loaded by its path (as tests/test_dashboards.py does, under the name
raps_dashboards_generate). Appended, it shadows no installed module; inside the package
the modules import each other relatively.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent))  # for raps_dashboards (see above)

from grafana_foundation_sdk.models import dashboard as dm
from raps_dashboards import alerts_tests, draws, floor_ingest, panels, pools, service, tickets

HERE = Path(__file__).resolve().parent
ALERTS = HERE / "prometheus" / "alerts.yml"
ALERTS_TEST = HERE / "prometheus" / "alerts_test.yml"

DASHBOARDS: dict[str, Callable[[], dm.Dashboard]] = {
    "raps-floor-ingest.json": floor_ingest.build,
    "raps-pools.json": pools.build,
    "raps-draws.json": draws.build,
    "raps-tickets.json": tickets.build,
    "raps-service.json": service.build,
}


def outputs() -> dict[Path, str]:
    """Every generated file and its content."""
    files = {HERE / name: panels.dashboard_json(build()) for name, build in DASHBOARDS.items()}
    files[ALERTS_TEST] = alerts_tests.alerts_test_yaml(ALERTS)
    return files


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="only check the committed files")
    args = parser.parse_args(argv)
    stale = []
    for path, text in outputs().items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        if args.check:
            stale.append(path)
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(HERE.parent)}")
    for path in stale:
        print(
            f"stale: {path.relative_to(HERE.parent)} (run dashboards/generate.py)", file=sys.stderr
        )
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""prometheus/alerts_test.yml: the alert cases with their annotations as Prometheus renders them.

The expected annotations come from alerts.yml itself (render_template expands the Go
template subset they use), so a runbook edit needs no test edit.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import yaml

from . import GENERATED
from .alert_cases import ALERT_CASES

_TEMPLATE = re.compile(r"\{\{\s*(.*?)\s*\}\}")


def _go_float(v: float) -> str:
    """Go's %v of a float64, for the values used here."""
    if v == int(v) and abs(v) < 1e21:
        return str(int(v))
    return repr(v)


def _humanize_duration(v: float) -> str:
    """Prometheus' humanizeDuration for the positive values these tests use."""
    if not v > 0:
        raise ValueError(f"humanizeDuration of {v} is not implemented here")
    if v >= 1:
        whole = int(v)
        days, rest = divmod(whole, 86_400)
        hours, rest = divmod(rest, 3_600)
        minutes, seconds = divmod(rest, 60)
        if days:
            return f"{days}d {hours}h {minutes}m {seconds}s"
        if hours:
            return f"{hours}h {minutes}m {seconds}s"
        if minutes:
            return f"{minutes}m {seconds}s"
        return f"{v:.4g}s"
    prefix = ""
    for p in ("m", "u", "n", "p"):
        if abs(v) >= 1:
            break
        prefix, v = p, v * 1000
    return f"{v:.4g}{prefix}s"


def render_template(text: str, labels: dict[str, str], value: float) -> str:
    """Expand the Go template subset the alert annotations use, as Prometheus would."""

    def one(m: re.Match[str]) -> str:
        e = m.group(1)
        if e.startswith("$labels."):
            return labels[e.removeprefix("$labels.")]
        if e == "$value":
            return _go_float(value)
        if e == "$value | humanizePercentage":
            return f"{value * 100:.4g}%"
        if e == "$value | humanizeDuration":
            return _humanize_duration(value)
        if e == '$value | printf "%.0f"':
            return f"{value:.0f}"
        raise ValueError(f"template {{{{ {e} }}}} is not supported by the test generator")

    return _TEMPLATE.sub(one, text)


def _parse_series(spec: dict[str, str]) -> list[dict[str, str]]:
    return [{"series": s, "values": v} for s, v in spec.items()]


def alerts_test_yaml(alerts: Path) -> str:
    """The text of alerts_test.yml, for the rules file `alerts` (prometheus/alerts.yml)."""
    rules = {
        r["alert"]: r
        for g in yaml.safe_load(alerts.read_text(encoding="utf-8"))["groups"]
        for r in g["rules"]
        if "alert" in r
    }
    missing = sorted(set(rules) - {c.alert for c in ALERT_CASES})
    if missing:
        raise ValueError(f"alert rules without a unit test case: {missing}")
    out = [
        "# promtool test rules dashboards/prometheus/alerts_test.yml",
        f"# {GENERATED}",
        "# Each test: the alert fires for the broken site(s) and not for the healthy one(s),",
        "# and not before its `for` has elapsed.",
        "rule_files:",
        "  - alerts.yml",
        "evaluation_interval: 1m",
        "tests:",
    ]
    for case in ALERT_CASES:
        rule = rules[case.alert]
        checks: list[dict[str, Any]] = [
            {"eval_time": t, "alertname": case.alert, "exp_alerts": []} for t in case.quiet_at
        ]
        expected = []
        for f in case.fires:
            labels = {**f.labels, **rule.get("labels", {})}
            annotations = {
                k: render_template(str(v), labels, f.value)
                for k, v in rule.get("annotations", {}).items()
            }
            expected.append({"exp_labels": labels, "exp_annotations": annotations})
        checks.append({"eval_time": case.fires_at, "alertname": case.alert, "exp_alerts": expected})
        checks.sort(key=lambda c: int(str(c["eval_time"]).removesuffix("m")))
        test = {
            "interval": "1m",
            "input_series": _parse_series(case.series),
            "alert_rule_test": checks,
        }
        out.extend(
            textwrap.wrap(
                f"{case.alert}: {case.why}", 90, initial_indent="  # ", subsequent_indent="  #   "
            )
        )
        body = yaml.safe_dump([test], sort_keys=False, width=10_000, allow_unicode=True)
        out.extend("  " + line if line else line for line in body.splitlines())
    return "\n".join(out) + "\n"

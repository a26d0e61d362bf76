"""The operations dashboards and alert rules under dashboards/.

Without a Grafana server, the dashboards are checked offline:

- the committed JSON (and prometheus/alerts_test.yml) is what dashboards/generate.py writes;
- every dashboard loads with grafana-foundation-sdk, with Prometheus queries in its panels;
- every PromQL expression of every panel, annotation and variable passes
  `promtool check rules` (as a recording rule, template variables substituted);
- the alert rules pass `promtool check rules` and their unit tests (`promtool test rules`),
  and the example scrape config passes `promtool check config`;
- every metric a dashboard or rule uses is in the /metrics of a real `raps run` daemon that
  has run a draw session and taken a kiosk's ticket entry (labelled series only appear once
  used, but for those the daemon exports at 0 from its start);
- docs/operations.md explains every panel and every alert.

promtool comes from Debian's prometheus package: installed here when missing (as root),
otherwise the test fails. It never skips.
"""

from __future__ import annotations

import importlib.util
import json
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from raps.config import hash_secret
from selector.tickets import RefusalReason
from tests.apt import MissingPackage, ensure_binary

ROOT = Path(__file__).resolve().parents[1]
DASHBOARDS = ROOT / "dashboards"
PROMETHEUS = DASHBOARDS / "prometheus"
PROVISIONING = DASHBOARDS / "provisioning"
OPERATIONS_DOC = ROOT / "docs" / "operations.md"
DASHBOARD_FILES = sorted(DASHBOARDS.glob("*.json"))

# Concrete values for Grafana's template variables, so each query is plain PromQL.
VARIABLE_VALUES = {
    "site": "golden-horse",
    "promotion": "raps-golden-horse",
    "bin": "metrics-draw",
    "datasource": "prometheus",
    "__interval": "5m",
    "__rate_interval": "1m",
    "__range": "6h",
}
_VARIABLE = re.compile(r"\$\{(\w+)(?::[^}]*)?\}|\[\[(\w+)\]\]|\$(\w+)")
_LABEL_VALUES = re.compile(
    r"^\s*label_values\(\s*(?:(?P<selector>.+?)\s*,\s*)?(?P<label>\w+)\s*\)\s*$"
)

# Words that are not metric names where a name could stand (aggregations take "by (...)"
# before their parenthesis).
PROMQL_KEYWORDS = frozenset(
    [
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "offset",
        "bool",
        "and",
        "or",
        "unless",
        "inf",
        "nan",
        "sum",
        "min",
        "max",
        "avg",
        "group",
        "stddev",
        "stdvar",
        "count",
        "count_values",
        "bottomk",
        "topk",
        "quantile",
    ]
)


# ------------------------------------------------------------------------------ helpers


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "raps_dashboards_generate", DASHBOARDS / "generate.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def dashboard_json(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def all_panels(dash: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in dash.get("panels", []):
        yield panel
        yield from panel.get("panels", [])  # panels inside collapsed rows


def dashboard_exprs(dash: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, PromQL) of every panel target, annotation and query variable."""
    found: list[tuple[str, str]] = []
    for panel in all_panels(dash):
        for target in panel.get("targets", []):
            found.append(
                (f"panel {panel['id']} {panel.get('title')!r} {target['refId']}", target["expr"])
            )
    for ann in dash.get("annotations", {}).get("list", []):
        if ann.get("expr"):
            found.append((f"annotation {ann['name']!r}", ann["expr"]))
    for var in dash.get("templating", {}).get("list", []):
        if var["type"] != "query":
            continue
        query = var["query"] if isinstance(var["query"], str) else var["query"]["query"]
        m = _LABEL_VALUES.match(query)
        assert m, (
            f"variable {var['name']}: only label_values(...) queries are expected, got {query!r}"
        )
        if m["selector"]:
            found.append((f"variable {var['name']}", m["selector"]))
    return found


def substitute(expr: str) -> str:
    def one(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2) or m.group(3)
        assert name in VARIABLE_VALUES, f"no test value for template variable ${name} in {expr!r}"
        return VARIABLE_VALUES[name]

    return _VARIABLE.sub(one, expr)


def metric_names(expr: str) -> set[str]:
    """Metric names a PromQL expression reads (a small lexer: enough for these queries)."""
    s = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # string literals
    s = re.sub(r"\{[^}]*\}", " ", s)  # label matchers
    s = re.sub(r"\[[^\]]*\]", " ", s)  # ranges and subqueries
    s = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", r" \1 ", s)
    names = set()
    for m in re.finditer(r"(?<![\w:.])([A-Za-z_:][\w:]*+)(?!\s*\()", s):
        if m.group(1).lower() not in PROMQL_KEYWORDS:
            names.add(m.group(1))
    return names


def alert_rules() -> list[dict[str, Any]]:
    doc = yaml.safe_load((PROMETHEUS / "alerts.yml").read_text(encoding="utf-8"))
    return [rule for group in doc["groups"] for rule in group["rules"]]


def all_exprs() -> list[tuple[str, str]]:
    """(where, PromQL with variables substituted) of every dashboard and every rule."""
    found = [
        (f"{path.name}: {where}", substitute(expr))
        for path in DASHBOARD_FILES
        for where, expr in dashboard_exprs(dashboard_json(path))
    ]
    found += [(f"alerts.yml: {rule['alert']}", rule["expr"]) for rule in alert_rules()]
    return found


def run(cmd: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=120)


# ----------------------------------------------------------------------------- promtool


@pytest.fixture(scope="session")
def promtool() -> str:
    """promtool, from Debian's prometheus package; installed when missing (as root)."""
    try:
        return ensure_binary("promtool", ["prometheus"])
    except MissingPackage as e:
        pytest.fail(str(e), pytrace=False)


def test_dashboard_queries_pass_promtool(promtool: str, tmp_path: Path) -> None:
    exprs = all_exprs()
    dashboard_only = [(w, e) for w, e in exprs if not w.startswith("alerts.yml")]
    assert len(dashboard_only) > 40, "the dashboards lost their queries"
    rules = [
        {"record": f"raps_dashboard:query_{i}", "expr": expr, "labels": {"where": where[:200]}}
        for i, (where, expr) in enumerate(dashboard_only)
    ]
    path = tmp_path / "dashboard_queries.yml"
    path.write_text(
        yaml.safe_dump({"groups": [{"name": "dashboards", "rules": rules}]}, width=10_000)
    )
    done = run([promtool, "check", "rules", str(path)])
    assert done.returncode == 0, f"promtool check rules:\n{done.stdout}\n{done.stderr}"
    assert f"SUCCESS: {len(rules)} rules found" in done.stdout


def test_alert_rules_pass_promtool(promtool: str) -> None:
    done = run([promtool, "check", "rules", "alerts.yml"], cwd=PROMETHEUS)
    assert done.returncode == 0, f"promtool check rules:\n{done.stdout}\n{done.stderr}"


def test_alert_rules_unit_tests(promtool: str) -> None:
    done = run([promtool, "test", "rules", "alerts_test.yml"], cwd=PROMETHEUS)
    assert done.returncode == 0, f"promtool test rules:\n{done.stdout}\n{done.stderr}"
    assert "SUCCESS" in done.stdout


def test_every_alert_is_unit_tested_firing_and_quiet() -> None:
    tests = yaml.safe_load((PROMETHEUS / "alerts_test.yml").read_text(encoding="utf-8"))["tests"]
    fired: set[str] = set()
    quiet: set[str] = set()
    for t in tests:
        for check in t["alert_rule_test"]:
            (fired if check["exp_alerts"] else quiet).add(check["alertname"])
    names = {rule["alert"] for rule in alert_rules()}
    assert names - fired == set(), "alerts never seen firing in alerts_test.yml"
    assert names - quiet == set(), "alerts never seen quiet in alerts_test.yml"


def test_alert_rules_carry_runbooks() -> None:
    required = {
        "RapsIngestStalled",
        "RapsSasLinksDown",
        "RapsSourceRejectingMostInput",
        "RapsNoEligiblePlayersAtSessionOpen",
        "RapsJournalWriteFailing",
        "RapsJournalWriteSlow",
        "RapsNotReady",
        "RapsTicketRequestIdsReused",
        "RapsTicketEntriesOutsideWindow",
    }
    rules = {rule["alert"]: rule for rule in alert_rules()}
    assert required <= set(rules)
    for name, rule in rules.items():
        assert rule["labels"]["severity"] in {"critical", "warning"}, name
        for key in ("summary", "description", "runbook"):
            assert len(rule["annotations"].get(key, "")) > 20, f"{name}: {key}"
        assert "{{ $labels.site }}" in rule["annotations"]["summary"], name


def test_scrape_config_passes_promtool(promtool: str, tmp_path: Path) -> None:
    config = yaml.safe_load((PROMETHEUS / "prometheus.yml").read_text(encoding="utf-8"))
    jobs = [j for j in config["scrape_configs"] if j["job_name"].startswith("raps")]
    assert jobs
    for job in jobs:
        for static in job["static_configs"]:
            assert static["labels"]["site"], "every RAPS target needs its site label"
    # The token file is the site's secret: point the copy at a stand-in.
    token = tmp_path / "raps-metrics-token"
    token.write_text("0123456789abcdef0123456789abcdef\n")
    text = (PROMETHEUS / "prometheus.yml").read_text(encoding="utf-8")
    text = re.sub(r"credentials_file: .*", f"credentials_file: {token}", text)
    (tmp_path / "prometheus.yml").write_text(text)
    shutil.copy(PROMETHEUS / "alerts.yml", tmp_path / "alerts.yml")
    done = run([promtool, "check", "config", "prometheus.yml"], cwd=tmp_path)
    assert done.returncode == 0, f"promtool check config:\n{done.stdout}\n{done.stderr}"


# ---------------------------------------------------------------------- the dashboards


def test_committed_files_are_the_generators_output() -> None:
    generator = load_generator()
    outputs: dict[Path, str] = generator.outputs()
    assert {p.name for p in outputs} >= {p.name for p in DASHBOARD_FILES}
    for path, text in outputs.items():
        assert path.exists(), f"{path} is not committed: run dashboards/generate.py"
        assert path.read_text(encoding="utf-8") == text, (
            f"{path} is stale: run dashboards/generate.py"
        )


def test_dashboards_load_with_the_foundation_sdk() -> None:
    from grafana_foundation_sdk.cog.plugins import register_default_plugins
    from grafana_foundation_sdk.models import dashboard as dm
    from grafana_foundation_sdk.models import prometheus as pm

    register_default_plugins()
    expected = {
        "raps-floor-ingest.json",
        "raps-pools.json",
        "raps-draws.json",
        "raps-tickets.json",
        "raps-service.json",
    }
    assert {p.name for p in DASHBOARD_FILES} == expected
    uids = set()
    for path in DASHBOARD_FILES:
        model = dm.Dashboard.from_json(dashboard_json(path))
        assert model.title and model.uid, path.name
        uids.add(model.uid)
        variables = {v.name: v for v in model.templating.list_val or []}
        assert variables["datasource"].type_val == dm.VariableType.DATASOURCE
        assert variables["datasource"].query == "prometheus"
        assert variables["site"].type_val == dm.VariableType.QUERY
        panels = [p for p in model.panels or [] if isinstance(p, dm.Panel)]
        assert len(panels) >= 8, path.name
        ids = [p.id_val for p in model.panels or []]
        assert len(ids) == len(set(ids)), f"{path.name}: panel ids repeat"
        for p in panels:
            where = f"{path.name}: {p.title}"
            assert p.datasource is not None and p.datasource.uid == "${datasource}", where
            assert p.datasource.type_val == "prometheus", where
            assert p.description, f"{where}: no description"
            assert p.grid_pos is not None and p.grid_pos.x + p.grid_pos.w <= 24, where
            assert p.targets, f"{where}: no query"
            for t in p.targets:
                assert isinstance(t, pm.Dataquery), where
                assert t.expr and 'site=~"$site"' in t.expr, f"{where}: {t.expr!r} ignores the site"
    assert len(uids) == len(DASHBOARD_FILES)


def test_dashboards_show_what_operations_asked_for() -> None:
    exprs = {
        path.name: " ".join(e for _, e in dashboard_exprs(dashboard_json(path)))
        for path in DASHBOARD_FILES
    }
    ingest, pools, draws, tickets, service = (
        exprs["raps-floor-ingest.json"],
        exprs["raps-pools.json"],
        exprs["raps-draws.json"],
        exprs["raps-tickets.json"],
        exprs["raps-service.json"],
    )
    for needle in (
        "raps_events_ingested_total",
        "raps_events_rejected_total",
        "raps_ingest_lag_seconds",
        "raps_source_last_event_timestamp_seconds",
    ):
        assert needle in ingest
    assert 'kind=~"sas|modbus"' in ingest and 'kind="mqtt"' in ingest
    for by in ("pool", "area", "tier"):
        assert re.search(rf"sum by \([^)]*\b{by}\b[^)]*\) \(raps_pool_eligible_players", pools), by
    assert "1 / sum by (promotion, pool) (raps_pool_eligible_players" in pools
    for needle in (
        "raps_sessions",
        "raps_picks_resolved_total",
        "raps_claim_timer_total",
        'outcome="no_show"',
        "raps_pick_latency_seconds_bucket",
        "raps_journal_write_seconds_bucket",
        "raps_claim_seconds_bucket",
    ):
        assert needle in draws, needle
    for metric, by in (
        ("raps_tickets_credited_total", "bin, cause"),
        ("raps_tickets_entered_total", "bin, channel"),
        ("raps_ticket_entries_total", "bin, channel"),
        ("raps_ticket_refusals_total", "reason"),
        ("raps_ticket_bin_tickets", "bin, tier"),
        ("raps_ticket_bin_players", "bin, tier"),
    ):
        assert re.search(rf"sum by \({by}\) \((increase\()?{metric}\{{", tickets), (metric, by)
    for needle in (
        "raps_process_cpu_seconds_total",
        "raps_process_resident_memory_bytes",
        "changes(raps_process_start_time_seconds",
        "raps_ready",
        "sum by (path) (increase(raps_storage_outages_total",
        "raps_floor_log_write_failures_total",
        "raps_floor_log_backlog_events",
        "raps_journal_write_failures_total",
    ):
        assert needle in service, needle


def test_provisioning_files() -> None:
    providers = yaml.safe_load((PROVISIONING / "dashboards.yaml").read_text(encoding="utf-8"))
    assert providers["apiVersion"] == 1
    (provider,) = providers["providers"]
    assert provider["type"] == "file" and provider["options"]["path"]
    sources = yaml.safe_load((PROVISIONING / "datasources.yaml").read_text(encoding="utf-8"))
    assert [s["type"] for s in sources["datasources"]] == ["prometheus"]


def test_operations_doc_covers_every_panel_and_alert() -> None:
    doc = OPERATIONS_DOC.read_text(encoding="utf-8")
    for path in DASHBOARD_FILES:
        dash = dashboard_json(path)
        assert dash["title"] in doc, dash["title"]
        for panel in all_panels(dash):
            if panel["type"] != "row":
                assert f"**{panel['title']}**" in doc, (
                    f"{path.name}: panel {panel['title']!r} not in the doc"
                )
    for rule in alert_rules():
        assert f"### {rule['alert']}" in doc, f"alert {rule['alert']} has no runbook section"


def test_metric_name_lexer() -> None:
    assert metric_names('sum by (site, le) (rate(raps_a_bucket{x="up"}[5m])) > 0.25') == {
        "raps_a_bucket"
    }
    assert metric_names("raps_a unless on (site) raps_b offset 10m or vector(0)") == {
        "raps_a",
        "raps_b",
    }
    assert metric_names("1 - avg by (site) (up)") == {"up"}
    assert metric_names("histogram_quantile(0.95, x_bucket) * 1e3") == {"x_bucket"}


# ------------------------------------------------------------------ a real daemon's /metrics

TZ = ZoneInfo("Africa/Johannesburg")


TICKET_DRAW = "metrics-draw"


def daemon_config(folder: Path, token: str, kiosk_token: str) -> str:
    """A small simulated floor on SQLite, embedded MQTT, two sessions (see raps/demo.py),
    a ticket draw whose entry window is open now and an e-Host kiosk."""
    local_now = datetime.now(TZ).replace(microsecond=0)
    now = local_now.isoformat(timespec="seconds")

    def at(hours: float) -> str:
        return (local_now + timedelta(hours=hours)).isoformat(timespec="seconds")

    token_hash = hash_secret(token)
    sessions = "".join(
        f"""
[[sessions]]
id = "{sid}"
promotion = "metrics-test"
starts = "{now}"
claim_seconds = {claim}
rehearsal = true
"""
        for sid, claim in (("main", 90), ("quick-claims", 0.5))
    )
    return f"""
[site]
id = "metrics-test"
name = "Metrics test casino"
timezone = "{TZ.key}"

[storage]
url = "sqlite:///{folder / "raps.db"}"

[credentials]
seed_key_file = "{folder / "seed.key"}"

[http]
host = "127.0.0.1"
port = 0

[mqtt]
enabled = true
embedded = true
port = 0

[floor.simulate]
machines = 40
tables = 6
players = 300
events_per_second = 50

[[promotions]]
id = "metrics-test"
name = "Metrics test promotion"
threshold_points = 1
window = {{ start = "00:00", end = "24:00" }}
{sessions}
[[ticket_programs]]
id = "metrics-tickets"
promotion = "metrics-test"
rates = {{ ten = 1, jack = 1, queen = 1, king = 1, ace = 1 }}
complimentary = {{ ten = 1, jack = 2, queen = 3, king = 4, ace = 5 }}

[ticket_programs.period]
kind = "fixed_start_to_draw"
start = "{at(-24)}"

[[ticket_draws]]
id = "{TICKET_DRAW}"
program = "metrics-tickets"
at = "{at(6)}"
opens = "{at(-1)}"
closes = "{at(5)}"

[[users]]
name = "ops-test"
role = "marketing"
password_hash = "{token_hash}"
api_token_hash = "{token_hash}"

[[users]]
name = "ehost-test"
role = "kiosk"
api_token_hash = "{hash_secret(kiosk_token)}"

[logging]
format = "json"
level = "warning"
"""


class Handheld:
    def __init__(self, client: httpx.Client, session_id: str) -> None:
        self.client, self.sid, self.n = client, session_id, 0

    def call(self, path: str, **body: Any) -> dict[str, Any]:
        self.n += 1
        body["command_id"] = f"{self.sid}-{self.n}"
        r = self.client.post(f"/api/sessions/{self.sid}/{path}", json=body)
        assert r.is_success, f"{path}: {r.status_code} {r.text}"
        data: dict[str, Any] = r.json()
        return data

    def draw(self, kind: str) -> int:
        deadline = time.monotonic() + 20
        while True:
            pick = self.call("draw", kind=kind)["pick"]
            if pick is not None:
                number: int = pick["pick"]
                return number
            assert time.monotonic() < deadline, f"no eligible {kind} player after 20 s"
            time.sleep(0.5)


def scrape(client: httpx.Client) -> str:
    r = client.get("/metrics")
    assert r.is_success, r.text
    return r.text


@pytest.fixture(scope="module")
def daemon_metrics(tmp_path_factory: pytest.TempPathFactory) -> str:
    """/metrics of `raps run` after a draw session (every outcome, an expired claim) and a
    kiosk's ticket entry (credits, an entry, a refusal, the bin's gauges)."""
    folder = tmp_path_factory.mktemp("raps-metrics")
    token = secrets.token_urlsafe(24)
    kiosk_token = secrets.token_urlsafe(24)
    config = folder / "raps.toml"
    config.write_text(daemon_config(folder, token, kiosk_token))
    ready = folder / "ready.json"
    log = (folder / "daemon.log").open("w+")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "raps.cli",
            "run",
            "--config",
            str(config),
            "--ready-file",
            str(ready),
            "--create-key",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=folder,
    )
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                pytest.fail(f"the daemon did not get ready:\n{log.read()}", pytrace=False)
            time.sleep(0.1)
        url = json.loads(ready.read_text())["url"]
        with httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30
        ) as client:
            # /metrics alone refreshes raps_ready (nothing has called /readyz yet)
            deadline = time.monotonic() + 10
            while "\nraps_ready 1.0\n" not in scrape(client):
                assert time.monotonic() < deadline, "raps_ready is not 1 on /metrics"
                time.sleep(0.2)
            assert client.get("/readyz").is_success
            main = Handheld(client, "main")
            main.call("open")
            won = main.draw("slots")
            main.call(f"picks/{won}/verify")
            main.call(f"picks/{won}/award", amount=50_000, kind="cash", envelope="E01")
            main.call(f"picks/{main.draw('tables')}/void", reason="card played by a companion")
            main.call(f"picks/{main.draw('slots')}/no-show")
            quick = Handheld(client, "quick-claims")
            quick.call("open")
            quick.draw("slots")  # its 0.5 s claim window runs out: an expired claim timer
            enter_tickets(url, kiosk_token)
            deadline = time.monotonic() + 15
            text = scrape(client)
            while (
                'raps_claim_timer_total{result="expired"}' not in text
                or "raps_ticket_bin_tickets{" not in text  # the gauges refresh every 5 s
            ):
                assert time.monotonic() < deadline, (
                    "the claim timer never expired, or the ticket bin gauges never appeared"
                )
                time.sleep(0.2)
                text = scrape(client)
            return text
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def enter_tickets(url: str, kiosk_token: str) -> None:
    """A kiosk enters the first eligible card of the simulated directory (complimentary
    tickets for every tier, so its first entry has tickets), and names a draw that does
    not exist once."""
    with httpx.Client(
        base_url=url, headers={"Authorization": f"Bearer {kiosk_token}"}, timeout=30
    ) as kiosk:

        def post(n: int, card: str, draw: str = TICKET_DRAW) -> httpx.Response:
            body = {"request_id": f"metrics-{n}", "card": card, "draw": draw}
            return kiosk.post("/api/tickets/kiosk/entries", json=body)

        # the simulator's card numbers (raps.floorsim); some are excluded or unknown
        cards = [f"{6_000_000_000 + i * 7919 % 1_000_000_000:010d}" for i in range(40)]
        answers = [post(n, c) for n, c in enumerate(cards[:1])]
        for n, c in enumerate(cards[1:], start=1):
            if answers[-1].status_code == 200:
                break
            answers.append(post(n, c))
        assert answers[-1].status_code == 200, [(a.status_code, a.text) for a in answers]
        assert post(999, cards[0], draw="no-such-draw").status_code == 404


def exported_names(text: str) -> set[str]:
    """Every series name /metrics shows, and every name a declared family can show."""
    suffixes = {
        "counter": ("_total", "_created"),
        "histogram": ("_bucket", "_sum", "_count", "_created"),
        "summary": ("", "_sum", "_count", "_created"),
        "gauge": ("",),
    }
    names: set[str] = set()
    for family in text_string_to_metric_families(text):
        names.update(sample.name for sample in family.samples)
        names.update(family.name + s for s in suffixes.get(family.type, ("",)))
    return names


def test_daemon_metrics_have_samples_for_the_draws(daemon_metrics: str) -> None:
    samples = {
        (s.name, tuple(sorted(s.labels.items())))
        for family in text_string_to_metric_families(daemon_metrics)
        for s in family.samples
    }
    names = {name for name, _ in samples}
    for name in (
        "raps_events_ingested_total",
        "raps_source_link_up",
        "raps_pool_eligible_players",
        "raps_sessions",
        "raps_draws_total",
        "raps_picks_resolved_total",
        "raps_claim_timer_total",
        "raps_claim_seconds_bucket",
        "raps_source_last_event_timestamp_seconds",
        "raps_pick_latency_seconds_bucket",
        "raps_journal_write_seconds_bucket",
        "raps_process_cpu_seconds_total",
        "raps_process_start_time_seconds",
        "raps_ready",
        "raps_tickets_credited_total",
        "raps_tickets_entered_total",
        "raps_ticket_entries_total",
        "raps_ticket_refusals_total",
        "raps_ticket_bin_tickets",
        "raps_ticket_bin_players",
    ):
        assert name in names, f"{name} has no sample after a draw session and a ticket entry"
    outcomes = {
        dict(labels)["outcome"] for name, labels in samples if name == "raps_picks_resolved_total"
    }
    assert outcomes == {"verified", "awarded", "void", "no_show"}
    # RapsNoEligiblePlayersAtSessionOpen matches sessions to pools by promotion
    promotions = {dict(labels)["promotion"] for n, labels in samples if n == "raps_sessions"}
    assert promotions == {"metrics-test"}
    claim_pools = {
        dict(labels)["pool"] for n, labels in samples if n == "raps_claim_seconds_bucket"
    }
    assert "slots" in claim_pools, "the verified slots pick left no claim time"
    assert ("raps_ready", ()) in samples
    # every refusal reason is exported from the start (RapsTicketRequestIdsReused and
    # RapsTicketEntriesOutsideWindow need the first one counted)
    reasons = {dict(labels)["reason"] for n, labels in samples if n == "raps_ticket_refusals_total"}
    assert reasons == {r.value for r in RefusalReason}, reasons
    entries = {dict(labels)["bin"] for n, labels in samples if n == "raps_ticket_entries_total"}
    assert entries == {TICKET_DRAW}, entries


def test_every_metric_used_exists_in_the_daemon(daemon_metrics: str) -> None:
    exported = exported_names(daemon_metrics)
    used: dict[str, list[str]] = {}
    for where, expr in all_exprs():
        names = metric_names(expr)
        assert names, f"{where}: no metric in {expr!r}"
        for name in names:
            used.setdefault(name, []).append(where)
    foreign = {n: w for n, w in used.items() if not n.startswith("raps_")}
    assert not foreign, f"metrics that are not the daemon's: {foreign}"
    missing = {n: w for n, w in used.items() if n not in exported}
    assert not missing, f"metrics the daemon does not export: {missing}"
    # The families declared without samples here need a source this test cannot drive
    # (rejections, floor anomalies); every other metric used has real samples.
    sampled = {s.name for f in text_string_to_metric_families(daemon_metrics) for s in f.samples}
    declared_only = set(used) - sampled
    assert declared_only <= {"raps_events_rejected_total", "raps_floor_anomalies"}, declared_only


def test_daemon_metrics_pass_promtool_lint(promtool: str, daemon_metrics: str) -> None:
    done = subprocess.run(
        [promtool, "check", "metrics"], input=daemon_metrics, capture_output=True, text=True
    )
    assert done.returncode == 0, f"promtool check metrics:\n{done.stdout}\n{done.stderr}"

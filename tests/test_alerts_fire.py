"""Alerts that fire: a real Prometheus scrapes a real `raps run` while faults are injected.

Issue 16, "a reliability suite that stays".  Debian's `prometheus` server (installed
here when missing, as root, after `apt-get update`; a missing server is a failure, never
a skip) runs on a free port with the project's scrape config and alert rules, adapted in
the test's own copies only:

- prometheus.yml: scrape and evaluation every second, the test daemon's address as the
  one target (site label `golden-horse`), its metrics token, no Alertmanager;
- alerts.yml: every `for:` shortened to 2 s (a `for: 2m` would hold the test two
  minutes per alert); the expressions and their windows are the shipped ones.

The daemon runs on a private PostgreSQL cluster and a private Mosquitto, with numbered
MQTT traffic, a simulated SAS loop, a draw session and a kiosk entry.  Faults, one after
the other, each until its alert is firing (Prometheus' /api/v1/alerts):

- an ingest gap (a publisher's `seq` jumps)             -> RapsIngestGap
- the floor log refuses writes (a trigger: disk full)    -> RapsFloorLogWriteFailing
- the broker is stopped                                  -> RapsMqttBrokerDown, RapsNotReady
- PostgreSQL is stopped, a draw command meanwhile        -> RapsNotReady, RapsJournalWriteFailing

Then every panel query of the generated dashboards must return data (/api/v1/query).
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import subprocess
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from bench.chaos_infra import (
    MQTT_MACHINES,
    TICKET_DRAW,
    Handheld,
    PrivatePostgres,
    Publisher,
    card_of,
    chaos_config,
)
from bench.harness import RapsProcess
from tests.apt import MissingPackage, ensure_binary
from tests.mqtt_broker import PrivateMosquitto, free_port
from tests.test_dashboards import (
    _VARIABLE,
    DASHBOARD_FILES,
    PROMETHEUS,
    VARIABLE_VALUES,
    all_panels,
    dashboard_json,
)

SITE = "golden-horse"
FOR = "2s"
VALUES = {**VARIABLE_VALUES, "site": SITE, "promotion": "chaos", "bin": TICKET_DRAW}


def prometheus_binary() -> str:
    """Debian's prometheus server; installed when missing (as root), else a failure."""
    try:
        return ensure_binary("prometheus", ["prometheus"])
    except MissingPackage as e:
        pytest.fail(str(e), pytrace=False)


def wait(check: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.2)


def prometheus_files(folder: Path, target: str, token: str) -> Path:
    """The test's copies of prometheus.yml and alerts.yml (see the module docstring)."""
    config = yaml.safe_load((PROMETHEUS / "prometheus.yml").read_text(encoding="utf-8"))
    config["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s"}
    config.pop("alerting", None)
    (job,) = [j for j in config["scrape_configs"] if j["job_name"] == "raps"]
    (folder / "token").write_text(token)
    job["authorization"]["credentials_file"] = str(folder / "token")
    job["scrape_timeout"] = "1s"
    job["static_configs"] = [{"targets": [target], "labels": {"site": SITE}}]
    rules = (PROMETHEUS / "alerts.yml").read_text(encoding="utf-8")
    shortened, n = re.subn(r"(?m)^(\s+for:) \d+[smh]$", rf"\1 {FOR}", rules)
    assert n >= 5, "the alert rules lost their `for:` durations"
    (folder / "alerts.yml").write_text(shortened)
    path = folder / "prometheus.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


class Prometheus:
    def __init__(self, folder: Path, config: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = (folder / "prometheus.log").open("wb")
        self.proc = subprocess.Popen(
            [prometheus_binary(), f"--config.file={config}",
             f"--storage.tsdb.path={folder / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=self.log, stderr=subprocess.STDOUT,
        )  # fmt: skip

    def ready(self) -> bool:
        assert self.proc.poll() is None, "prometheus exited"
        try:
            return httpx.get(f"{self.url}/-/ready", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def firing(self) -> set[str]:
        alerts = httpx.get(f"{self.url}/api/v1/alerts", timeout=5).json()["data"]["alerts"]
        return {a["labels"]["alertname"] for a in alerts if a["state"] == "firing"}

    def query(self, expr: str) -> list[Any]:
        r = httpx.get(f"{self.url}/api/v1/query", params={"query": expr}, timeout=10)
        assert r.status_code == 200, f"{expr}: {r.text}"
        result: list[Any] = r.json()["data"]["result"]
        return result

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """PostgreSQL, Mosquitto, the daemon and Prometheus, each private and on a free port."""
    pg = PrivatePostgres()
    broker = PrivateMosquitto()
    daemon: RapsProcess | None = None
    prom: Prometheus | None = None
    try:
        pg.start()
        pg.create_database()
        broker.start()
        token, kiosk = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        config = tmp_path / "raps.toml"
        config.write_text(chaos_config(tmp_path, SITE, pg.url, broker.port, token, kiosk))
        daemon = RapsProcess(config, tmp_path / "ready.json", tmp_path / "daemon.log",
                             cwd=tmp_path, name="raps run")  # fmt: skip
        daemon.spawn(create_key=True)
        daemon.wait_until_ready(60, 0.1)
        url = json.loads((tmp_path / "ready.json").read_text())["url"]
        prom = Prometheus(tmp_path, prometheus_files(tmp_path, url.split("//")[1], token))
        wait(prom.ready, 30, "prometheus ready")
        # the counters' first samples (0) must be scraped before any fault: increase()
        # needs them to see the first failure
        wait(lambda: prom.query(f'raps_ingest_gap_messages_total{{site="{SITE}"}}'), 30,
             "the first scrape")  # fmt: skip
        yield {"pg": pg, "broker": broker, "daemon": daemon, "prom": prom, "url": url,
               "token": token, "kiosk": kiosk}  # fmt: skip
    finally:
        if prom is not None:
            prom.close()
        if daemon is not None:
            daemon.stop()
        broker.close()
        pg.close()


async def feed(broker: PrivateMosquitto, rounds: int) -> None:
    """The directory, card-ins and games on the MQTT machines; one bad message (a
    rejection); a card in at two machines (an anomaly); a numbered stream with a gap."""
    pub = Publisher(broker.host, broker.port, SITE)
    client = await pub.connect()
    try:
        pub.directory()
        for _ in range(rounds):
            pub.games_round()
        assert await pub.flush(client)
        topic = f"raps/v1/{SITE}/slots/{MQTT_MACHINES[0]}/events"
        ts = datetime.now(UTC).isoformat()
        bad = {"event_id": "bad-1", "ts": ts, "type": "game_played", "machine": "M01",
               "wager": -5}  # fmt: skip
        await client.publish(topic, json.dumps(bad), qos=1)
        for machine in ("M05", "M06"):  # the same card at two SAS machines: an anomaly
            twice = {"event_id": f"twice-{machine}", "ts": ts, "type": "card_inserted",
                     "machine": machine, "card": "6004799999991"}  # fmt: skip
            await client.publish(topic.replace("M01", machine), json.dumps(twice), qos=1)
        for seq in (1, 2, 50):  # 47 numbers never sent: a gap
            body = {"event_id": f"gap-{seq}", "ts": ts, "type": "machine_status",
                    "machine": "M08", "status": "online", "seq": seq,
                    "source": "gap-probe"}  # fmt: skip
            await client.publish(topic.replace("M01", "M08"), json.dumps(body), qos=1)
    finally:
        await client.__aexit__(None, None, None)


def enter_tickets(url: str, kiosk: str) -> None:
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {kiosk}"}) as c:
        for n, m in enumerate(MQTT_MACHINES):
            body = {"request_id": f"k-{n}", "card": card_of(m), "draw": TICKET_DRAW}
            if c.post("/api/tickets/kiosk/entries", json=body, timeout=15).status_code == 200:
                return
    raise AssertionError("no kiosk entry was accepted")


def fires(prom: Prometheus, *names: str, timeout: float = 40) -> None:
    wait(lambda: set(names) <= prom.firing(), timeout, f"{names} firing (now {prom.firing()})")


def test_alerts_fire_and_every_panel_has_data(stack: dict[str, Any]) -> None:
    prom: Prometheus = stack["prom"]
    pg: PrivatePostgres = stack["pg"]
    broker: PrivateMosquitto = stack["broker"]
    url: str = stack["url"]
    asyncio.run(feed(broker, rounds=5))
    hand = Handheld(url, stack["token"])
    wait(lambda: (hand.points(card_of("M01")) or 0) >= 5, 30, "the games applied")
    assert hand.command("s1", "open") is not None
    picks = []
    for _ in range(3):
        answer = hand.command("s1", "draw", kind="slots")
        assert answer is not None and answer["pick"] is not None, answer
        picks.append(answer["pick"]["pick"])
    assert hand.command("s1", f"picks/{picks[0]}/verify") is not None
    assert hand.command("s1", f"picks/{picks[0]}/award", amount=50_000, kind="cash",
                        envelope="E01") is not None  # fmt: skip
    assert hand.command("s1", f"picks/{picks[1]}/no-show") is not None
    assert hand.command("s1", f"picks/{picks[2]}/void", reason="companion") is not None
    hand.command("s1", "draw", kind="tables")  # no table is fed: no eligible player
    enter_tickets(url, stack["kiosk"])
    fires(prom, "RapsIngestGap")

    pg.fail_floor_log(True)
    fires(prom, "RapsFloorLogWriteFailing")
    pg.fail_floor_log(False)

    broker.stop()
    fires(prom, "RapsMqttBrokerDown", "RapsNotReady")
    broker.start()
    wait(lambda: "RapsMqttBrokerDown" not in prom.firing(), 60, "the broker alert to end")

    pg.stop()
    assert hand.command("s1", "draw", kind="slots") is None  # its journal write fails
    fires(prom, "RapsNotReady", "RapsJournalWriteFailing")
    pg.start()
    wait(lambda: "RapsNotReady" not in prom.firing(), 60, "ready again")

    empty = []
    for path in DASHBOARD_FILES:
        for panel in all_panels(dashboard_json(path)):
            for target in panel.get("targets", []):
                expr = _VARIABLE.sub(lambda m: VALUES[m.group(1) or m.group(2) or m.group(3)],
                                     target["expr"])  # fmt: skip
                if not prom.query(expr):
                    empty.append(f"{path.name}: {panel['title']!r}: {expr}")
    assert not empty, "panels without data:\n" + "\n".join(empty)

"""What operations scrape and what the logs carry.

/metrics must be valid exposition that Prometheus' own linter accepts (`promtool check
metrics`), every series must be a `raps_` one, and a configured metrics token must be
required.  The logs (JSON lines, as `raps run` writes them) must each carry the site, a
pick's lines the session and pick, and never a full card number nor, before close, the
session's secret seed.

These run on SQLite only: what is measured and logged does not depend on the database
(the storage behaviour itself is covered on both in test_service_api and test_journal).
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from raps.service import Service
from tests.apt import MissingPackage, ensure_binary
from tests.builders import Events
from tests.daemon_helpers import (
    CLAIM_SECONDS,
    METRICS_TOKEN,
    SESSION,
    SITE,
    TOKENS,
    Clock,
    Handheld,
    card,
    client_for,
    floor_config,
    masked,
    reject_journal_writes,
    running_service,
    seat_players,
    structlog_json,
)

pytestmark = pytest.mark.asyncio

SLOT_SEATS = {card(i): f"M{i:02d}" for i in range(1, 6)}
TABLE_SEATS = {card(200 + i): ("T1", i) for i in range(1, 4)}
ALL_CARDS = [*SLOT_SEATS, *TABLE_SEATS]


@dataclass
class Live:
    clock: Clock
    service: Service
    client: httpx.AsyncClient
    hh: Handheld
    ev: Events


@asynccontextmanager
async def live_floor(tmp_path: Path, metrics_token: str | None = None) -> AsyncIterator[Live]:
    """A service with five slot and three table players seated, and its HTTP client.

    Built inside the test (not a fixture) so that a test can set up logging first: the
    service binds its logger when it is created, as the daemon does after `configure`."""
    cfg = floor_config(f"sqlite:///{tmp_path / 'raps.db'}", tmp_path, metrics_token=metrics_token,
                       slots=3, tables=2)  # fmt: skip
    clock = Clock()
    async with running_service(cfg, clock) as service, client_for(service, cfg) as client:
        ev = seat_players(
            service,
            list(SLOT_SEATS.items()),
            [(c, t, s) for c, (t, s) in TABLE_SEATS.items()],
            name="Thandi Mokoena",
        )
        yield Live(clock, service, client, Handheld(client), ev)


async def play_a_session(live: Live, close: bool = True) -> None:
    """Open, draw slots and tables, verify, award, void and redraw, a staff no-show, a
    claim-timer no-show, a rejected floor event, and (optionally) close."""
    hh, ev = live.hh, live.ev
    ev.now = live.clock.now
    live.service.ingest([ev.card_in("M99", card(999)), ev.game("M01")], source="smib-gw1")

    async def ok(path: str, **body: Any) -> dict[str, Any]:
        r = await hh.post(path, **body)
        assert r.status_code == 200, r.text
        data: dict[str, Any] = r.json()
        return data

    await ok("open")
    live.clock.advance(5)
    await ok("draw", kind="slots")  # 1
    await ok("picks/1/verify")
    await ok("picks/1/award", amount=50_000, kind="cash", envelope="E07")
    await ok("draw", kind="tables")  # 2
    await ok("picks/2/void", reason="card played by a companion")
    await ok("draw", kind="tables")  # 3
    await ok("picks/3/verify")
    await ok("draw", kind="slots")  # 4
    await ok("picks/4/no-show")
    await ok("draw", kind="slots")  # 5
    live.clock.advance(CLAIM_SECONDS + 1)
    await live.service.tick()  # pick 5 becomes a claim-timer no-show
    await ok("draw", kind="slots")  # 6
    await ok("picks/6/verify")
    if close:
        await ok("close", force=True)


# -------------------------------------------------------------------------- metrics


def promtool() -> str:
    """The promtool binary, installed from Debian's prometheus package when missing.

    Never a skip: a suite that silently stops linting the exposition is worse than one
    that fails and says what to install."""
    try:
        return ensure_binary("promtool", ["prometheus"])
    except MissingPackage as e:
        pytest.fail(str(e), pytrace=False)


def sample_names(exposition: str) -> set[str]:
    """Names of the samples (not the # HELP / # TYPE lines) in an exposition."""
    names = set()
    for line in exposition.splitlines():
        if line and not line.startswith("#"):
            m = re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line)
            assert m, line
            names.add(m.group(0))
    return names


async def test_metrics_pass_promtool_and_are_all_raps(tmp_path: Path) -> None:
    tool = promtool()
    async with live_floor(tmp_path) as live:
        await play_a_session(live)
        r = await live.client.get("/metrics")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
    text = r.text
    lint = subprocess.run([tool, "check", "metrics"], input=text, capture_output=True,
                          text=True, timeout=60, check=False)  # fmt: skip
    assert lint.returncode == 0, f"promtool:\n{lint.stdout}{lint.stderr}"

    names = sample_names(text)
    assert names, "no samples"
    assert {n for n in names if not n.startswith("raps_")} == set()
    # what was done is what is counted
    expect = [
        'raps_draws_total{pool="slots",result="picked"} 4.0',
        'raps_draws_total{pool="tables",result="picked"} 2.0',
        'raps_picks_resolved_total{outcome="no_show",pool="slots"} 2.0',
        'raps_picks_resolved_total{outcome="void",pool="tables"} 1.0',
        'raps_picks_resolved_total{outcome="awarded",pool="slots"} 1.0',
        'raps_claim_timer_total{result="expired"} 1.0',
        'raps_events_rejected_total{reason="unknown_machine",source="smib-gw1"} 1.0',
        "raps_journal_write_failures_total 0.0",
        "raps_pick_latency_seconds_count 6.0",
    ]
    for line in expect:
        assert line in text, line
    # one closed session (whatever other labels the gauge carries)
    assert re.search(r'^raps_sessions\{[^}]*state="closed"[^}]*\} 1\.0$', text, re.M), text
    # and it left the open state: that series reads 0 now
    assert re.search(r'^raps_sessions\{[^}]*state="open"[^}]*\} 0\.0$', text, re.M), text
    assert re.search(r'raps_pool_eligible_players\{area="Main Floor",pool="slots",'
                     r'promotion="raps",tier="jack"\} \d', text)  # fmt: skip
    assert_no_full_card(text)


async def test_a_configured_metrics_token_is_required(tmp_path: Path) -> None:
    async with live_floor(tmp_path, metrics_token=METRICS_TOKEN) as live:
        c = live.client
        assert (await c.get("/metrics")).status_code == 401
        wrong = {"Authorization": f"Bearer {METRICS_TOKEN[:-1]}x"}
        assert (await c.get("/metrics", headers=wrong)).status_code == 401
        staff = {"Authorization": f"Bearer {TOKENS['admin']}"}
        assert (await c.get("/metrics", headers=staff)).status_code == 401
        good = await c.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
        assert good.status_code == 200 and "raps_journal_head_seq" in good.text
        assert (await c.get("/healthz")).status_code == 200  # probes stay open


async def test_metrics_are_open_without_a_token(tmp_path: Path) -> None:
    async with live_floor(tmp_path) as live:
        assert (await live.client.get("/metrics")).status_code == 200


# ----------------------------------------------------------------------------- logs


def assert_no_full_card(text: str) -> None:
    for c in [*ALL_CARDS, card(999)]:
        assert c not in text, f"full card number {c} in the output"


def json_lines(text: str) -> list[dict[str, Any]]:
    lines = [line for line in text.splitlines() if line.strip()]
    out = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            pytest.fail(f"not a JSON log line: {line[:300]}")
    return out


async def test_logs_are_json_with_site_session_and_pick_and_mask_cards(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with structlog_json():
        async with live_floor(tmp_path) as live:
            await play_a_session(live, close=False)
            before_close = capsys.readouterr()
            r = await live.hh.post("close", force=True)
            assert r.status_code == 200
            seed = (await live.hh.summary())["seed"]
            await asyncio.sleep(0)  # log lines follow the answer, on the loop's next turn
            after_close = capsys.readouterr()
    assert before_close.out == "" and after_close.out == "", "logs go to stderr only"
    assert seed and len(seed) == 64

    lines = json_lines(before_close.err) + json_lines(after_close.err)
    assert lines
    for line in lines:
        assert line.get("site") == SITE, line
    picks = [x for x in lines if str(x["event"]).startswith("pick.")]
    assert {x["event"] for x in picks} >= {"pick.drawn", "pick.verified", "pick.awarded",
                                           "pick.voided", "pick.no_show"}  # fmt: skip
    for line in picks:
        assert line.get("session") == SESSION and isinstance(line.get("pick"), int), line
    timer = [x for x in picks if x["event"] == "pick.no_show" and x["user"] == "system"]
    assert len(timer) == 1 and timer[0]["role"] == "timer"
    assert any(x["event"] == "event rejected" and x["reason"] == "unknown_machine" for x in lines)
    assert any(x["event"] == "session.closed" for x in lines)

    everything = before_close.err + after_close.err
    assert_no_full_card(everything)
    shown = {x["card"] for x in picks if "card" in x}
    assert shown and shown <= {masked(c) for c in ALL_CARDS}
    assert all(re.fullmatch(r"\*{12}\d{4}", c) for c in shown)
    assert "Mokoena" not in everything, "a player's surname in the logs"
    assert seed not in before_close.err, "the secret seed was logged before close"


async def test_a_failed_journal_write_logs_no_card_number(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The failure is logged with its cause, but the cause of a failed INSERT quotes the
    statement's parameters: the record (with the winner's card) and the pool (with
    every eligible player's card) must not reach the log."""
    with structlog_json():
        async with live_floor(tmp_path) as live:
            assert (await live.hh.post("open")).status_code == 200
            await reject_journal_writes(live.service)
            r = await live.hh.post("draw", kind="slots")
            assert r.status_code == 503
            logged = capsys.readouterr().err
    lines = json_lines(logged)
    failed = [x for x in lines if x["event"] == "journal down"]
    assert len(failed) == 1 and failed[0]["level"] == "error" and failed[0]["site"] == SITE
    assert failed[0]["error"] and failed[0]["session"] == SESSION
    assert_no_full_card(logged)

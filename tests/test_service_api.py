"""The floor service behind its HTTP API, in-process, on SQLite and on PostgreSQL.

What a handheld, a dispatch screen and an inspector rely on: who may do what; a pick
shows a masked card, where to walk and the claim deadline; a retried command never draws
twice; refusals say why; the claim timer turns a no-show into a journaled system action;
close reveals the committed seed and the export verifies offline; and when the journal
cannot be written, the answer is 503 and nothing was drawn.

Players are seated through `service.ingest` (the path live telemetry takes), so each
test knows every pool; the service's clock is moved by hand.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from raps.audit import check, read_export
from raps.config import Config
from raps.service import Service
from tests.builders import AnyFloorEvent, Events
from tests.daemon_helpers import (
    CLAIM_SECONDS,
    SESSION,
    SLOT_QUOTA,
    TOKENS,
    Clock,
    Handheld,
    accept_journal_writes,
    auth,
    card,
    client_for,
    floor_config,
    masked,
    reject_journal_writes,
    running_service,
    seat_players,
    structlog_json,
    take_storage_down,
)

pytestmark = [pytest.mark.asyncio, pytest.mark.usefixtures("json_logs")]

# four qualified slot players, one per machine; no table player is seated
SEATS = {card(i): f"M{i:02d}" for i in range(1, 5)}


@dataclass
class Env:
    url: str
    cfg: Config
    clock: Clock
    service: Service
    client: httpx.AsyncClient
    hh: Handheld
    ev: Events  # the event builder that seated the players: later events get fresh ids


@pytest_asyncio.fixture
async def env(db_url: str, tmp_path: Path) -> AsyncIterator[Env]:
    cfg = floor_config(db_url, tmp_path)
    clock = Clock()
    async with running_service(cfg, clock) as service:
        ev = seat_players(service, list(SEATS.items()))
        async with client_for(service, cfg) as client:
            yield Env(db_url, cfg, clock, service, client, Handheld(client), ev)


async def opened(env: Env) -> None:
    r = await env.hh.post("open")
    assert r.status_code == 200, r.text


async def drawn(env: Env, kind: str = "slots", command_id: str | None = None) -> dict[str, Any]:
    r = await env.hh.post("draw", command_id, kind=kind)
    assert r.status_code == 200, r.text
    pick: dict[str, Any] = r.json()["pick"]
    assert pick is not None
    return pick


def card_of(pick: dict[str, Any]) -> str:
    """The full card behind a masked pick (the test knows who is seated where)."""
    (full,) = [c for c, m in SEATS.items() if m == pick["location"]["machine"]]
    return full


def assert_no_full_card(text: str) -> None:
    for c in SEATS:
        assert c not in text, f"full card number {c} shown"


async def journal_records(service: Service) -> list[dict[str, Any]]:
    return [e.record for e in await service.journal.entries()]


# ------------------------------------------------------------------ access


async def test_health_and_who_may_do_what(env: Env) -> None:
    c = env.client
    assert (await c.get("/healthz")).status_code == 200
    ready = await c.get("/readyz")
    assert ready.status_code == 200 and ready.json()["ready"] is True

    r = await c.get(f"/api/sessions/{SESSION}")
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    r = await c.get("/api/sessions", headers={"Authorization": "Bearer not-a-token"})
    assert r.status_code == 401
    r = await c.get("/api/sessions", headers={"Authorization": f"Basic {TOKENS['marketing']}"})
    assert r.status_code == 401

    for role in TOKENS:  # every staff role can read the session and the pools
        assert (await c.get(f"/api/sessions/{SESSION}", headers=auth(role))).status_code == 200
        assert (await c.get("/api/pools", headers=auth(role))).status_code == 200
    seeded = await env.service.journal.load_head()  # the schedule, seeded from the config
    for path in ("open", "draw"):  # security watches; it does not run the draw
        r = await env.hh.post(path, role="security", kind="slots")
        assert r.status_code == 403 and "security" in r.json()["detail"]
    r = await env.hh.post("open", role="ops")
    assert r.status_code == 403
    assert (await env.service.journal.load_head()) == seeded, "a refused command wrote"

    r = await c.get(f"/api/sessions/{SESSION}/export", headers=auth("marketing"))
    assert r.status_code == 403
    r = await c.get("/api/sessions/S-none", headers=auth("marketing"))
    assert r.status_code == 404


async def test_pools_list_the_seated_players(env: Env) -> None:
    r = await env.client.get("/api/pools", headers=auth("ops"))
    rows = {(x["pool"], x["area"]): x["eligible"] for x in r.json()}
    assert rows[("slots", "Main Floor")] == len(SEATS)
    assert_no_full_card(r.text)


# --------------------------------------------------------------- open and draw


async def test_open_publishes_the_commitment_only(env: Env) -> None:
    seeded = env.service.journal.head
    # the schedule seeded from the config: the promotion's definition and its session
    assert seeded is not None and seeded.seq == 2
    r = await env.hh.post("open", "open-1")
    assert r.status_code == 200
    assert r.json()["journal_head"]["seq"] == 3
    s = await env.hh.summary("security")
    assert s["state"] == "open"
    assert len(s["commitment"]) == 64 and int(s["commitment"], 16) >= 0
    assert s["seed"] is None
    again = await env.hh.post("open", "open-1")
    assert again.status_code == 200 and again.json()["replayed"] is True
    assert (await env.hh.summary())["commitment"] == s["commitment"]
    r = await env.hh.post("open", "open-2")
    assert r.status_code == 409 and "is open" in r.json()["detail"]


async def test_a_pick_shows_a_masked_card_where_to_walk_and_the_deadline(env: Env) -> None:
    await opened(env)
    r = await env.hh.post("draw", kind="slots")
    assert r.status_code == 200
    body = r.json()
    assert body["replayed"] is False and body["no_eligible"] is False
    pick = body["pick"]
    full = card_of(pick)
    assert pick["card"] == masked(full) == "*" * 12 + full[-4:]
    machine = SEATS[full]
    n = int(machine[1:])
    assert pick["location"] == {"kind": "slots", "area": "Main Floor", "machine": machine,
                                "bank": f"B{(n - 1) // 4 + 1}", "number": str(100 + n),
                                "table": None, "seat": None}  # fmt: skip
    assert datetime.fromisoformat(pick["drawn_at"]) == env.clock.now
    deadline = datetime.fromisoformat(pick["deadline"])
    assert deadline == env.clock.now + timedelta(seconds=CLAIM_SECONDS)
    assert pick["state"] == "pending" and pick["pool_size"] == len(SEATS)
    assert body["journal_head"]["seq"] == 5  # the schedule's 2 seeded, open, pool, pick
    # nothing any screen reads carries the full number
    assert_no_full_card(r.text)
    for path in (f"/api/sessions/{SESSION}", "/api/sessions", "/api/journal/head"):
        assert_no_full_card((await env.client.get(path, headers=auth("security"))).text)
    # the journal itself, the audit trail, holds the full card
    drawn_rec = (await journal_records(env.service))[-1]
    assert drawn_rec["type"] == "pick.drawn" and drawn_rec["data"]["card"] == full


async def test_screens_show_a_first_name_and_initial_only(env: Env) -> None:
    """The casino system sends full names; a pick on the handheld and the dispatch
    screen shows "Thandi M.", never the surname (pick_view's own contract)."""
    env.ev.now = env.clock.now - timedelta(seconds=10)
    updates = [env.ev.player(c, name="Thandi Mokoena") for c in SEATS]
    assert env.service.ingest(updates, source="cms") == len(updates)
    await opened(env)
    pick = await drawn(env)
    assert pick["display_name"] == "Thandi M."
    text = (await env.client.get(f"/api/sessions/{SESSION}", headers=auth("security"))).text
    assert "Mokoena" not in text


async def test_a_retried_command_is_replayed_not_drawn_again(env: Env) -> None:
    await opened(env)
    first = await env.hh.post("draw", "draw-1", kind="slots")
    head = first.json()["journal_head"]
    entries = len(await env.service.journal.entries())
    again = await env.hh.post("draw", "draw-1", kind="slots")
    assert again.status_code == 200
    assert again.json()["replayed"] is True
    assert again.json()["pick"] == first.json()["pick"]
    assert again.json()["journal_head"] == head
    assert len(await env.service.journal.entries()) == entries
    assert len((await env.hh.summary())["picks"]) == 1
    # the same id for another command is a conflict, not a replay
    r = await env.hh.post("picks/1/verify", "draw-1")
    assert r.status_code == 409 and "draw-1" in r.json()["detail"]
    r = await env.hh.post("draw", "draw-1", kind="tables")
    assert r.status_code == 409


async def test_a_retry_after_a_restart_is_still_replayed(env: Env) -> None:
    """The handheld may retry after the daemon restarted: the journal remembers."""
    await opened(env)
    first = await env.hh.post("draw", "draw-1", kind="slots")
    await env.service.stop()
    async with (
        running_service(env.cfg, env.clock) as again,
        client_for(again, env.cfg) as client,
    ):
        r = await Handheld(client).post("draw", "draw-1", kind="slots")
        assert r.status_code == 200 and r.json()["replayed"] is True
        assert r.json()["pick"] == first.json()["pick"]
        assert r.json()["journal_head"] == first.json()["journal_head"]


async def test_a_draw_beyond_the_quota_is_refused(env: Env) -> None:
    await opened(env)
    for _ in range(SLOT_QUOTA):
        await drawn(env)
    r = await env.hh.post("draw", kind="slots")
    assert r.status_code == 409
    assert r.json()["detail"] == f"all {SLOT_QUOTA} slots winners of this session are drawn"
    assert len((await env.hh.summary())["picks"]) == SLOT_QUOTA


async def test_no_eligible_player_is_an_answer_not_an_error(env: Env) -> None:
    await opened(env)
    r = await env.hh.post("draw", kind="tables")
    assert r.status_code == 200
    assert r.json()["no_eligible"] is True and r.json()["pick"] is None
    assert (await journal_records(env.service))[-1]["type"] == "pick.no_eligible"
    assert (await env.hh.summary())["picks"] == []


async def test_bad_commands_are_refused_with_reasons(env: Env) -> None:
    r = await env.hh.post("draw", kind="slots")
    assert r.status_code == 409 and "scheduled" in r.json()["detail"]
    await opened(env)
    r = await env.hh.post("draw", kind="roulette")
    assert r.status_code == 422
    r = await env.client.post(f"/api/sessions/{SESSION}/draw", json={"kind": "slots"},
                              headers=auth("marketing"))  # fmt: skip
    assert r.status_code == 422  # no command_id
    r = await env.hh.post("picks/7/verify")
    assert r.status_code == 409 and "no pick 7" in r.json()["detail"]


# ------------------------------------------------------------------ claim timer


async def test_the_claim_timer_makes_a_no_show(env: Env) -> None:
    await opened(env)
    pick = await drawn(env)
    deadline = datetime.fromisoformat(pick["deadline"])
    env.clock.advance(CLAIM_SECONDS - 1)
    await env.service.tick()
    assert (await env.hh.summary())["picks"][0]["state"] == "pending"
    env.clock.advance(2)
    await env.service.tick()
    assert (await env.hh.summary("security"))["picks"][0]["state"] == "no_show"
    last = (await journal_records(env.service))[-1]
    assert last["type"] == "pick.no_show"
    assert last["actor"] == {"user": "system", "role": "timer"}
    assert last["data"]["by"] == "claim_timer" and last["data"]["pick"] == 1
    assert "command_id" not in last["data"]
    assert datetime.fromisoformat(last["at"]) == deadline
    m = env.service.metrics.registry
    assert m.get_sample_value("raps_claim_timer_total", {"result": "expired"}) == 1
    head = env.service.journal.head
    await env.service.tick()  # nothing more to expire: nothing written
    assert env.service.journal.head == head
    # the slot is drawn again, from a pool the no-show is back in (003: "selected more
    # than once, but can only win once per session")
    again = await drawn(env)
    assert again["slot"] == 1 and again["attempt"] == 1
    assert again["pool_size"] == pick["pool_size"]


# ---------------------------------------------------------- void, close, export


async def test_a_void_needs_a_reason(env: Env) -> None:
    await opened(env)
    await drawn(env)
    r = await env.hh.post("picks/1/void")
    assert r.status_code == 422
    r = await env.hh.post("picks/1/void", reason="")
    assert r.status_code == 422
    r = await env.hh.post("picks/1/void", reason="   ")
    assert r.status_code == 409 and "reason" in r.json()["detail"]
    assert (await env.hh.summary())["picks"][0]["state"] == "pending"
    r = await env.hh.post("picks/1/void", reason="card played by a companion")
    assert r.status_code == 200
    p = (await env.hh.summary())["picks"][0]
    assert p["state"] == "void" and p["void_reason"] == "card played by a companion"


async def test_close_reveals_the_seed_and_the_export_verifies(env: Env, tmp_path: Path) -> None:
    await opened(env)
    commitment = (await env.hh.summary())["commitment"]
    p1 = await drawn(env)
    assert (await env.hh.post("picks/1/verify")).status_code == 200
    r = await env.hh.post("picks/1/award", amount=50_000, kind="cash", envelope="E07")
    assert r.status_code == 200 and r.json()["pick"]["prize"]["envelope"] == "E07"
    await drawn(env)
    r = await env.hh.post("close")
    assert r.status_code == 409 and "pending" in r.json()["detail"]
    assert (await env.hh.post("picks/2/void", reason="wrong player announced")).status_code == 200
    p3 = await drawn(env)
    assert p3["slot"] == 2 and card_of(p3) != card_of(p1)
    assert (await env.hh.post("picks/3/verify")).status_code == 200
    assert (await env.hh.post("draw", kind="tables")).json()["no_eligible"] is True
    assert (await env.hh.summary())["seed"] is None
    r = await env.hh.post("close")
    assert r.status_code == 200
    s = await env.hh.summary("auditor")
    assert s["state"] == "closed"
    assert s["seed"] is not None
    assert hashlib.sha256(bytes.fromhex(s["seed"])).hexdigest() == commitment == s["commitment"]
    assert [p["state"] for p in s["picks"]] == ["awarded", "void", "verified"]

    r = await env.client.get(f"/api/sessions/{SESSION}/export", headers=auth("auditor"))
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/x-ndjson")
    path = tmp_path / "export.jsonl"
    path.write_text(r.text, encoding="utf-8")
    entries, records = read_export(path)
    head = env.service.journal.head
    assert head is not None and entries[-1].hash == head.hash
    report = check(entries, records, head)
    assert report.ok, report.lines()
    assert report.sessions == {SESSION: []} and report.picks == 3
    assert records[-1]["data"]["seed"] == s["seed"]
    header, *lines = [json.loads(x) for x in r.text.splitlines()]
    assert header["export"]["session_id"] == SESSION
    # the session's own entries, contiguous, after the schedule's seeding (entries 1, 2)
    assert [x["seq"] for x in lines] == list(range(3, len(lines) + 3))
    r = await env.client.get(f"/api/sessions/{SESSION}/export", headers=auth("admin"))
    assert r.status_code == 200


# ------------------------------------------------------------ storage failures


async def test_a_refused_journal_write_is_a_503_and_draws_nothing(env: Env) -> None:
    """The database rejects the journal row: the pick must not appear anywhere, the
    readiness probe says so, and once storage is back the same command draws."""
    await opened(env)
    await drawn(env)
    before = await env.hh.summary()
    await reject_journal_writes(env.service)
    r = await env.hh.post("draw", "draw-2", kind="slots")
    assert r.status_code == 503, r.text
    assert "nothing was done" in r.json()["detail"]
    assert await env.hh.summary() == before
    assert len(await env.service.journal.entries()) == before["journal_head"]["seq"]
    ready = await env.client.get("/readyz")
    assert ready.status_code == 503 and ready.json()["storage"] is False
    m = env.service.metrics.registry
    assert m.get_sample_value("raps_journal_write_failures_total") == 1

    await accept_journal_writes(env.service)
    r = await env.hh.post("draw", "draw-2", kind="slots")
    assert r.status_code == 200 and r.json()["replayed"] is False
    assert r.json()["pick"]["pick"] == 2
    assert (await env.client.get("/readyz")).status_code == 200


async def test_storage_down_is_a_503_and_draws_nothing(env: Env) -> None:
    """The database is gone (PostgreSQL dropped, SQLite file lost): a draw must answer
    503, and no pick may appear in memory that the journal does not hold."""
    await opened(env)
    await drawn(env)
    before = await env.hh.summary()
    await take_storage_down(env.service, env.url)
    r = await env.hh.post("draw", kind="slots")
    problems = []
    if r.status_code != 503:
        problems.append(f"the draw answered {r.status_code} {r.text!r}, not 503")
    after = await env.hh.summary()
    if after["picks"] != before["picks"]:
        extra = len(after["picks"]) - len(before["picks"])
        problems.append(f"{extra} pick(s) in memory that the journal does not hold")
    if (await env.client.get("/readyz")).status_code != 503:
        problems.append("/readyz does not say the service is not ready")
    assert not problems, problems


async def test_readyz_fails_when_storage_goes_down_under_floor_traffic(env: Env) -> None:
    """Floor events keep arriving; their flush fails; the service is not ready."""
    await take_storage_down(env.service, env.url)
    ev = env.ev
    ev.now = env.clock.now - timedelta(seconds=1)
    assert env.service.ingest([ev.game("M01"), ev.game("M02")], source="sas") == 2
    with pytest.raises(Exception):  # noqa: B017 - any driver error; the flush reports it
        await env.service.flush_events()
    r = await env.client.get("/readyz")
    assert r.status_code == 503 and r.json()["storage"] is False
    assert (await env.client.get("/healthz")).status_code == 200


async def test_readyz_fails_when_storage_is_down_on_a_quiet_floor(env: Env) -> None:
    """Readiness is what a load balancer or operator checks before a session: with the
    database gone it must say so, even if nothing has tried to write since."""
    await take_storage_down(env.service, env.url)
    r = await env.client.get("/readyz")
    assert r.status_code == 503, r.json()


# ------------------------------------------------------------------ bad input


async def test_bad_floor_events_are_counted_not_raised(env: Env) -> None:
    ev = env.ev
    ev.now = env.clock.now - timedelta(seconds=30)
    good = ev.game("M01")
    batch: list[AnyFloorEvent] = [
        ev.card_in("M99", card(50)),
        ev.game("M77"),
        ev.rating_open("T9", 1, card(51)),
        ev.rating_open("T1", 99, card(52)),
        good,
        good,
    ]
    assert env.service.ingest(batch, source="smib-gw1") == 1
    assert env.service.ingest([good], source="smib-gw2") == 0
    m = env.service.metrics.registry

    def rejected(source: str, reason: str) -> float | None:
        return m.get_sample_value(
            "raps_events_rejected_total", {"source": source, "reason": reason}
        )

    assert rejected("smib-gw1", "unknown_machine") == 2
    assert rejected("smib-gw1", "unknown_table") == 1
    assert rejected("smib-gw1", "unknown_seat") == 1
    assert rejected("smib-gw1", "duplicate") == 1
    assert rejected("smib-gw2", "duplicate") == 1
    assert m.get_sample_value("raps_events_ingested_total", {"source": "smib-gw1"}) == 1
    text = (await env.client.get("/metrics")).text
    assert 'raps_events_rejected_total{reason="unknown_table",source="smib-gw1"} 1.0' in text


@pytest.fixture
def json_logs() -> Iterator[None]:
    """Log as the daemon does (JSON); the default console renderer pretty-prints every
    local of a traceback, which makes the storage-failure tests slow and noisy."""
    with structlog_json():
        yield

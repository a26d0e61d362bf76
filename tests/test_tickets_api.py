"""Draw tickets through the daemon's HTTP API, on SQLite and on PostgreSQL.

What an e-Host kiosk, the casino app, a player and an inspector rely on: an entry prints
a receipt whose code the journal backs; a retried entry returns the same receipt and
never enters twice; the app enters only for a player who is playing now; refusals say
why; a restart keeps every credit and entry exactly once; a journal that cannot commit
answers 503 and the retry succeeds with the same entry; RAPS winners get their bonus
tickets once; `raps verify` recomputes the ledger from the journal.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from raps.audit import check, read_database
from raps.config import Config
from raps.service import Service
from selector.events import Exclusion, TicketsGranted, Tier
from selector.records import Actor, Record
from tests.builders import NOON, SAST, Events
from tests.daemon_helpers import (
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
)

pytestmark = [pytest.mark.asyncio]

DRAW = "teeds-2000"
BIN = DRAW
# Jack: 1 ticket per 50 points, 2 complimentary, 3 for a RAPS win; Queen per 100 points
TICKETS = f"""
[[ticket_programs]]
id = "teeds"
promotion = "raps"
tiers = ["jack", "queen"]
rates = {{ jack = 50, queen = 100 }}
complimentary = {{ jack = 2 }}
app_bonus = {{ jack = 1 }}
raps_winner_bonus = {{ jack = 3 }}
[ticket_programs.period]
kind = "day_to_draw"
start_time = "08:00"

[[ticket_draws]]
id = "{DRAW}"
program = "teeds"
name = "Ten & Jack 20:00"
at = "2026-04-25 20:00"
opens = "2026-04-25 08:00"
closes = "2026-04-25 19:55"
winners = 5
"""


@dataclass
class Env:
    cfg: Config
    clock: Clock
    service: Service
    client: httpx.AsyncClient
    ev: Events


def seat(env: Env, n: int, machine: str, points: int, tier: Tier = Tier.JACK, **kw: Any) -> str:
    """A carded player at a slot with `points` points (R10 a point), through ingest."""
    c = card(n)
    batch: list[Any] = [env.ev.player(c, tier=tier, **kw), env.ev.card_in(machine, c)]
    batch += [env.ev.game(machine, wager=1000) for _ in range(points)]
    assert env.service.ingest(batch, source="test") == len(batch)
    return c


def directory_only(env: Env, n: int, tier: Tier = Tier.JACK) -> str:
    c = card(n)
    assert env.service.ingest([env.ev.player(c, tier=tier)], source="test") == 1
    return c


@pytest_asyncio.fixture
async def env(db_url: str, tmp_path: Path) -> AsyncIterator[Env]:
    cfg = floor_config(db_url, tmp_path, extra=TICKETS)
    clock = Clock()
    async with running_service(cfg, clock) as service, client_for(service, cfg) as client:
        yield Env(cfg, clock, service, client, Events(NOON))


async def kiosk(env: Env, c: str, request_id: str, draw: str = DRAW) -> httpx.Response:
    body = {"request_id": request_id, "card": c, "draw": draw}
    return await env.client.post("/api/tickets/kiosk/entries", json=body, headers=auth("kiosk"))


async def app(env: Env, c: str, request_id: str, registered: bool = True) -> httpx.Response:
    body = {"request_id": request_id, "card": c, "draw": DRAW, "app_registered": registered}
    return await env.client.post("/api/tickets/app/entries", json=body, headers=auth("app"))


async def ticket_records(env: Env) -> list[dict[str, Any]]:
    entries = await env.service.journal.session_entries(f"tickets:{BIN}")
    return [e.record for e in entries]


async def test_a_kiosk_entry_prints_a_receipt_the_journal_backs(env: Env) -> None:
    c = seat(env, 1, "M01", points=120)  # 2 tickets from points, 2 complimentary
    r = await kiosk(env, c, "k1-0001")
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["tickets"] == 4 and got["card"] == masked(c) and not got["replayed"]
    assert got["receipt_no"] == f"{BIN}-000001"
    assert [d["draw_id"] for d in got["draws"]] == [DRAW]
    records = await ticket_records(env)
    causes = [(r["type"], r["data"].get("cause")) for r in records]
    assert causes == [
        ("tickets.credited", "points"),
        ("tickets.credited", "points"),
        ("tickets.credited", "complimentary"),
        ("tickets.entered", None),
    ]
    assert records[-1]["actor"] == {"user": "ehost-01", "role": "kiosk"}
    # the receipt's code checks against the journal at the stage
    check_r = await env.client.get(
        f"/api/tickets/receipts/{got['receipt_no']}",
        params={"code": got["verification_code"]},
        headers=auth("marketing"),
    )
    assert check_r.json()["code_matches"] is True
    wrong = await env.client.get(
        f"/api/tickets/receipts/{got['receipt_no']}", params={"code": "AAAA-AAAA"},
        headers=auth("marketing"),
    )  # fmt: skip
    assert wrong.json()["code_matches"] is False


async def test_a_retried_entry_returns_the_same_receipt_and_enters_nothing(env: Env) -> None:
    c = seat(env, 1, "M01", points=60)
    first = (await kiosk(env, c, "k1-0002")).json()
    head = env.service.journal.head
    again = await kiosk(env, c, "k1-0002")
    assert again.status_code == 200
    assert again.json()["replayed"] is True
    assert {k: again.json()[k] for k in ("receipt_no", "tickets", "verification_code")} == {
        k: first[k] for k in ("receipt_no", "tickets", "verification_code")
    }
    assert env.service.journal.head == head  # nothing new was journaled
    other = seat(env, 2, "M02", points=60)
    reused = await kiosk(env, other, "k1-0002")
    assert reused.status_code == 409 and reused.json()["reason"] == "request_id_reused"


async def test_tickets_earned_later_are_entered_on_a_second_receipt(env: Env) -> None:
    c = seat(env, 1, "M01", points=60)
    assert (await kiosk(env, c, "a")).json()["tickets"] == 3  # 1 + 2 complimentary
    nothing = await kiosk(env, c, "b")
    assert nothing.status_code == 409 and nothing.json()["reason"] == "nothing_to_enter"
    more = [env.ev.game("M01", wager=1000) for _ in range(50)]
    env.service.ingest(more, source="test")
    second = (await kiosk(env, c, "c")).json()
    assert second["tickets"] == 1 and second["entered_in_bin"] == 4
    assert second["receipt_no"] == f"{BIN}-000002"


async def test_refusals_say_why_and_record_nothing(env: Env) -> None:
    stranger = card(99)
    assert (await kiosk(env, stranger, "r1")).json()["reason"] == "unknown_player"
    c = seat(env, 1, "M01", points=60)
    missing = await kiosk(env, c, "r2", draw="no-such-draw")
    assert missing.status_code == 404 and missing.json()["reason"] == "unknown_draw"
    excluded = seat(env, 2, "M02", points=60, exclusions=frozenset({Exclusion.SELF_EXCLUDED}))
    assert (await kiosk(env, excluded, "r3")).json()["reason"] == "self_excluded"
    king = seat(env, 3, "M03", points=300, tier=Tier.KING)
    assert (await kiosk(env, king, "r4")).json()["reason"] == "tier_not_in_program"
    bad = await kiosk(env, "card with spaces", "r5")
    assert bad.status_code == 422
    env.clock.now = datetime(2026, 4, 25, 19, 55, tzinfo=SAST)  # the window has closed
    late = await kiosk(env, c, "r6")
    assert late.status_code == 409 and late.json()["reason"] == "outside_entry_window"
    assert await ticket_records(env) == []
    metrics = (await env.client.get("/metrics")).text
    for reason in ("unknown_player", "self_excluded", "outside_entry_window"):
        assert f'raps_ticket_refusals_total{{reason="{reason}"}} 1.0' in metrics


async def test_the_app_enters_only_for_a_player_playing_now(env: Env) -> None:
    away = directory_only(env, 5)
    refused = await app(env, away, "app-1")
    assert refused.status_code == 409 and refused.json()["reason"] == "not_playing"
    c = seat(env, 1, "M01", points=60)
    ok = await app(env, c, "app-2")
    assert ok.status_code == 200, ok.text
    assert ok.json()["tickets"] == 4 and ok.json()["channel"] == "app"  # + 1 app bonus
    # the kiosk route is the kiosk's: the app's token may not use it, nor the reverse
    body = {"request_id": "x", "card": c, "draw": DRAW}
    r = await env.client.post("/api/tickets/kiosk/entries", json=body, headers=auth("app"))
    assert r.status_code == 403
    # a kiosk cannot claim the app bonus for a member: the field is not the kiosk's
    claim = {**body, "app_registered": True}
    r = await env.client.post("/api/tickets/kiosk/entries", json=claim, headers=auth("kiosk"))
    assert r.status_code == 422


async def test_am_i_qualified_shows_points_to_the_next_ticket(env: Env) -> None:
    c = seat(env, 1, "M01", points=62)
    r = await env.client.get(f"/api/tickets/players/{c}", headers=auth("kiosk"))
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["card"] == masked(c) and got["tier"] == "jack" and got["playing_now"]
    [draw] = got["draws"]
    assert draw["draw_id"] == DRAW and draw["entry_open"]
    assert draw["points_to_next_ticket"] == 38.0  # 62 points: 1 ticket, 38 to the next
    assert draw["available"] == 1 and draw["bonus_due"] == 2
    [raps] = got["raps"]
    assert raps["points_today"] == 62.0 and raps["points_needed"] == 0.0


async def test_restart_keeps_every_credit_and_entry_exactly_once(
    db_url: str, tmp_path: Path
) -> None:
    cfg = floor_config(db_url, tmp_path, extra=TICKETS)
    clock = Clock()
    ev = Events(NOON)
    async with running_service(cfg, clock) as service, client_for(service, cfg) as client:
        env = Env(cfg, clock, service, client, ev)
        c = seat(env, 1, "M01", points=120)
        first = (await kiosk(env, c, "k-1")).json()
        env.service.ingest([ev.game("M01", wager=1000) for _ in range(40)], source="test")
        await service.flush_events()  # 160 points: a third points ticket, journaled
        before = await ticket_records(env)
    # no stop, no snapshot: the floor comes back from its log, the ledger from the journal
    async with running_service(cfg, clock) as service, client_for(service, cfg) as client:
        env = Env(cfg, clock, service, client, ev)
        assert await ticket_records(env) == before  # nothing credited twice
        again = (await kiosk(env, c, "k-1")).json()
        assert again["receipt_no"] == first["receipt_no"] and again["replayed"]
        second = (await kiosk(env, c, "k-2")).json()
        assert second["tickets"] == 1  # only the third points ticket was left
        assert service.tickets.ledger.entries(BIN) == [(c, 5)]


async def test_restart_from_a_floor_snapshot_keeps_points_toward_the_next_ticket(
    db_url: str, tmp_path: Path
) -> None:
    cfg = floor_config(db_url, tmp_path, extra=TICKETS)
    clock = Clock()
    ev = Events(NOON)
    async with running_service(cfg, clock) as service, client_for(service, cfg) as client:
        env = Env(cfg, clock, service, client, ev)
        c = seat(env, 1, "M01", points=70)  # 1 ticket, 20 points toward the next
        await service.snapshot_floor()
        service.ingest([ev.game("M01", wager=1000) for _ in range(10)], source="test")
        await service.flush_events()  # 80 points: still 1 ticket, 30 toward the next
        before = await ticket_records(env)
    async with running_service(cfg, clock) as service, client_for(service, cfg) as client:
        env = Env(cfg, clock, service, client, ev)
        assert await ticket_records(env) == before
        got = (await client.get(f"/api/tickets/players/{c}", headers=auth("kiosk"))).json()
        [draw] = got["draws"]
        assert draw["points"] == 80.0 and draw["points_to_next_ticket"] == 20.0
        service.ingest([ev.game("M01", wager=1000) for _ in range(20)], source="test")
        assert (await kiosk(env, c, "after")).json()["tickets"] == 4  # 2 + 2 complimentary


async def test_an_entry_the_journal_refuses_is_503_and_the_retry_enters_once(env: Env) -> None:
    c = seat(env, 1, "M01", points=60)
    await reject_journal_writes(env.service)
    r = await kiosk(env, c, "k-9")
    assert r.status_code == 503
    await accept_journal_writes(env.service)
    ok = await kiosk(env, c, "k-9")
    assert ok.status_code == 200 and ok.json()["tickets"] == 3
    records = await ticket_records(env)
    assert [x["type"] for x in records].count("tickets.entered") == 1


async def test_raps_winners_get_their_bonus_tickets_once(env: Env) -> None:
    c = seat(env, 1, "M01", points=60)
    hh = Handheld(env.client)
    assert (await hh.post("open")).status_code == 200
    pick = (await hh.post("draw", kind="slots")).json()["pick"]
    assert pick["card"] == masked(c)
    assert (await hh.post(f"picks/{pick['pick']}/verify")).status_code == 200
    r = await hh.post(f"picks/{pick['pick']}/award", amount=50_000, kind="cash", envelope="E1")
    assert r.status_code == 200
    await env.service.flush_events()
    bonus = [x for x in await ticket_records(env) if x["data"].get("cause") == "raps_winner"]
    assert len(bonus) == 1 and bonus[0]["data"]["tickets"] == 3
    assert bonus[0]["data"]["ref"] == f"{hh.sid}#{pick['pick']}"
    # the awards are reconciled at every start: nothing is credited again
    assert env.service.tickets.reconcile_awards(env.service.sessions.values()) == 0


async def test_a_rehearsal_award_touches_no_ticket_bin_and_no_win_limit(env: Env) -> None:
    """Training never touches live records: a rehearsal's award credits no winner bonus
    (the Golden Horse seed sets one), the bin and the day's winners stay as they were,
    and the trainee's "winner" is drawn in the live session right after."""
    c = seat(env, 1, "M01", points=60)
    body = {"session_id": "training-1", "promotion_id": "raps", "starts": "2026-04-25 12:00",
            "rehearsal": True, "slots": 1, "tables": 0, "command_id": "t-1",
            "reason": "training"}  # fmt: skip
    r = await env.client.post("/api/schedule/sessions", json=body, headers=auth("marketing"))
    assert r.status_code == 200, r.text
    await env.service.flush_events()  # the seated player's points credits
    before = (await ticket_records(env), env.service.tickets.bin_summary(BIN))
    training = Handheld(env.client, "training-1")
    assert (await training.post("open")).status_code == 200
    pick = (await training.post("draw", kind="slots")).json()["pick"]
    assert pick["card"] == masked(c)
    assert (await training.post(f"picks/{pick['pick']}/verify")).status_code == 200
    r = await training.post(
        f"picks/{pick['pick']}/award", amount=50_000, kind="cash", envelope="T1"
    )
    assert r.status_code == 200
    await asyncio.sleep(0)  # the bookkeeping after a commit runs on the loop's next turn
    await env.service.flush_events()
    assert (await ticket_records(env), env.service.tickets.bin_summary(BIN)) == before
    assert env.service.tickets.reconcile_awards(env.service.sessions.values()) == 0
    assert env.service.stage.winners_today(DRAW) == {}
    live = Handheld(env.client)
    assert (await live.post("open")).status_code == 200
    assert (await live.post("draw", kind="slots")).json()["pick"]["card"] == masked(c)
    # the leak as an older daemon wrote it: verify names the credit and fails
    ref = f"training-1#{pick['pick']}"
    leak = {"type": "tickets.credited", "card": c, "bin_id": BIN, "tickets": 3,
            "cause": "raps_winner", "ref": ref, "at": NOON.isoformat(),
            "promotion_id": "raps"}  # fmt: skip
    rec = Record("tickets.credited", f"tickets:{BIN}", NOON, Actor.system("tickets"), leak)
    await env.service.journal.append([rec.to_dict()])
    report = check(*await read_database(env.cfg.storage.url), None, from_genesis=True)
    assert not report.ok and any(
        f"credited to a live bin for pick {ref} of rehearsal session training-1" in x
        for x in report.tickets[BIN]
    ), report.lines()


async def test_the_casino_ticket_feed_credits_once_per_event(env: Env) -> None:
    c = seat(env, 1, "M01", points=0)
    grant = TicketsGranted(event_id="cms-77", source="cms", ts=NOON, card=c, bin_id=BIN,
                           tickets=10, reason="give-away")  # fmt: skip
    assert env.service.ingest([grant], source="mqtt-tickets") == 1
    assert env.service.ingest([grant], source="mqtt-tickets") == 0  # a redelivery
    unknown = TicketsGranted(event_id="cms-78", source="cms", ts=NOON, card=c,
                             bin_id="nowhere", tickets=1)  # fmt: skip
    assert env.service.ingest_detailed([unknown], source="mqtt-tickets") == ["unknown_draw"]
    assert (await kiosk(env, c, "k-feed")).json()["tickets"] == 12  # 10 + 2 complimentary


async def test_verify_recomputes_the_ledger_from_the_journal(env: Env, db_url: str) -> None:
    c = seat(env, 1, "M01", points=120)
    assert (await kiosk(env, c, "k-v")).status_code == 200
    entries, records = await read_database(db_url)
    report = check(entries, records, None, from_genesis=True)
    assert report.ok, report.lines()
    assert f"tickets {BIN}: OK" in "\n".join(report.lines())


async def test_the_receipt_page_prints_on_80mm(env: Env) -> None:
    c = seat(env, 1, "M01", points=60)
    got = (await kiosk(env, c, "k-page")).json()
    page = await env.client.get(f"/tickets/receipts/{got['receipt_no']}", headers=auth("kiosk"))
    assert page.status_code == 200
    html = page.text
    assert 'href="/static/public/receipt.css"' in html and got["verification_code"] in html
    assert masked(c) in html and c not in html  # the full card never prints
    assert (
        await env.client.get("/tickets/receipts/nope-000001", headers=auth("kiosk"))
    ).status_code == 404


async def test_the_calendar_page_counts_the_tickets_entered_and_shows_the_draw_taking_entries(
    env: Env,
) -> None:
    """`/api/calendar`: the month's ticket draw with the tickets and players entered in
    its bin (through the kiosk, as a player enters them), and "taking entries" among
    what is open now while its entry window runs (12:05; entries 08:00-19:55)."""

    async def month() -> dict[str, Any]:
        r = await env.client.get(
            "/api/calendar", params={"month": "2026-04"}, headers=auth("marketing")
        )
        assert r.status_code == 200, r.text
        return r.json()  # type: ignore[no-any-return]

    def draw_item(view: dict[str, Any]) -> dict[str, Any]:
        found = [i for i in view["items"] if i["kind"] == "ticket_draw" and i["id"] == DRAW]
        assert len(found) == 1, view["items"]
        return found[0]

    before = await month()
    assert (draw_item(before)["tickets"], draw_item(before)["players"]) == (0, 0)
    a = seat(env, 1, "M01", points=120)  # 2 from points + 2 complimentary
    b = seat(env, 2, "M02", points=60)  # 1 + 2
    assert (await kiosk(env, a, "cal-1")).json()["tickets"] == 4
    assert (await kiosk(env, b, "cal-2")).json()["tickets"] == 3
    view = await month()
    item = draw_item(view)
    assert (item["tickets"], item["players"]) == (7, 2)
    assert (item["state"], item["winners"], item["program"]) == ("scheduled", 5, "teeds")
    assert item["opens"] == "2026-04-25T08:00:00+02:00"
    assert item["closes"] == "2026-04-25T19:55:00+02:00"
    now = [i for i in view["open_now"] if i["kind"] == "ticket_draw"]
    assert [(i["id"], i["why"], i["tickets"], i["players"]) for i in now] == [
        (DRAW, "taking entries", 7, 2)
    ]
    assert DRAW in [i["id"] for i in view["next"]]
    env.clock.now = datetime(2026, 4, 25, 19, 55, tzinfo=SAST)  # entries closed
    later = await month()
    assert not [i for i in later["open_now"] if i["kind"] == "ticket_draw"]
    assert (draw_item(later)["tickets"], draw_item(later)["players"]) == (7, 2)

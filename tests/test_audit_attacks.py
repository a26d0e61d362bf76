"""An insider with the database against the audit trail (issue 17), on SQLite and
PostgreSQL: each attack performed on the real service, and what `raps verify` and the
daemon now make of it.

- a record appended, properly chained, after the session's close;
- the close's `session_id` column edited (outside the chain) to reopen the session;
- a winner vetoed by failing its commit until a favoured card would come up;
- a staff no-show two seconds after the draw, and a draw attempt abandoned;
- an open session, with and without `--require-closed`, and an export of one session
  whose range holds another's records;
- the rehearsal flag as the session opened with it;
- and an exclusion that arrives while a winner waits (issue 15).
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from sqlalchemy import text

from raps.audit import check, export_focus, export_session, read_columns, read_database, read_export
from raps.config import Config
from raps.service import Service
from selector.events import Exclusion, Tier
from selector.records import Record
from tests.builders import NOON, Events
from tests.daemon_helpers import (
    SESSION,
    Clock,
    auth,
    card,
    client_for,
    floor_config,
    running_service,
    seat_players,
)

pytestmark = pytest.mark.asyncio
OTHER = "S-other"
EXTRA = f"""
[[sessions]]
id = "{OTHER}"
promotion = "raps"
starts = "2026-04-25T12:00:00+02:00"
ends = "2026-04-25T12:30:00+02:00"
quotas = {{ slots = 1, tables = 0 }}
"""


@dataclass
class Env:
    cfg: Config
    clock: Clock
    service: Service
    client: httpx.AsyncClient
    n: int = 0

    async def post(
        self, path: str, sid: str = SESSION, role: str = "marketing", **body: Any
    ) -> httpx.Response:
        self.n += 1
        body.setdefault("command_id", f"a-{self.n}")
        return await self.client.post(f"/api/sessions/{sid}/{path}", json=body, headers=auth(role))

    async def report(self, **kw: Any) -> Any:
        url = self.cfg.storage.url
        entries, records = await read_database(url)
        return check(
            entries, records, None, from_genesis=True, columns=await read_columns(url), **kw
        )


@pytest_asyncio.fixture
async def env(db_url: str, tmp_path: Path) -> AsyncIterator[Env]:
    cfg = floor_config(db_url, tmp_path, extra=EXTRA, slots=2, tables=1)
    clock = Clock()
    async with running_service(cfg, clock) as service, client_for(service, cfg) as client:
        seat_players(
            service, slots=[(card(i), f"M0{i}") for i in range(1, 7)], tables=[(card(9), "T1", 1)]
        )
        yield Env(cfg, clock, service, client)


async def run_and_close(env: Env) -> None:
    assert (await env.post("open")).status_code == 200
    pick = (await env.post("draw", kind="slots")).json()["pick"]
    assert (await env.post(f"picks/{pick['pick']}/verify")).status_code == 200
    r = await env.post(f"picks/{pick['pick']}/award", amount=50000, kind="cash", envelope="E1")
    assert r.status_code == 200, r.text
    assert (await env.post("close", force=True)).status_code == 200


async def test_a_record_chained_after_the_close_is_named(env: Env) -> None:
    await run_and_close(env)
    closed = (await env.service.journal.session_entries(SESSION))[-1].record
    late = {
        **closed,
        "type": "pick.voided",
        "data": {
            "pick": 1,
            "kind": "slots",
            "slot": 1,
            "card": card(1),
            "reason": "x",
            "promotion_id": "raps",
            "rehearsal": False,
        },
    }
    await env.service.journal.append([late])  # an insider who can compute the chain
    rep = await env.report()
    assert not rep.ok and rep.exit_code == 1
    assert any("after the session's close" in m for m in rep.sessions[SESSION]), rep.lines()


async def test_editing_the_close_s_column_does_not_reopen_the_session(
    env: Env, db_url: str, tmp_path: Path
) -> None:
    await run_and_close(env)
    async with env.service.engine.begin() as conn:
        await conn.execute(
            text("UPDATE journal SET session_id = 'hidden' WHERE type = 'session.closed'")
        )
    rep = await env.report()
    assert not rep.ok and any("chained record says" in c for c in rep.column_errors), rep.lines()
    async with running_service(env.cfg, env.clock) as again, client_for(again, env.cfg) as c:
        assert SESSION not in again.sessions and "filed under 'hidden'" in again.refused[SESSION]
        r = await c.post(
            f"/api/sessions/{SESSION}/draw",
            headers=auth("marketing"),
            json={"command_id": "after-edit", "kind": "slots"},
        )
        assert r.status_code == 409 and "is refused" in r.json()["detail"], r.text
        assert OTHER in again.sessions  # the rest of the floor runs on


async def test_a_vetoed_commit_cannot_change_the_winner(env: Env) -> None:
    """A trigger refuses every pick.drawn row while the floor changes under the draw; the
    retries draw from the pool the request made durable, so the winner, once the trigger
    is gone, is the one the first attempt would have had."""
    assert (await env.post("open")).status_code == 200
    await refuse_winners(env)
    for attempt in range(3):
        r = await env.post("draw", command_id="veto-me", kind="slots")
        assert r.status_code == 503, r.text
        join(env, card(20 + attempt), f"M0{7 + attempt}", attempt + 1)
    requested = [
        e.record
        for e in await env.service.journal.session_entries(SESSION)
        if e.record["type"] == "pick.requested"
    ]
    assert len(requested) == 1  # one pool, made durable before any winner was known
    await accept_winners(env)
    r = await env.post("draw", command_id="veto-me", kind="slots")
    assert r.status_code == 200, r.text
    drawn = [
        e.record
        for e in await env.service.journal.session_entries(SESSION)
        if e.record["type"] == "pick.drawn"
    ]
    assert (
        len(drawn) == 1 and drawn[0]["data"]["pool_digest"] == requested[0]["data"]["pool_digest"]
    )
    assert drawn[0]["data"]["card"] not in {card(20), card(21), card(22)}  # joined later
    assert (await env.post("close", force=True)).status_code == 200
    rep = await env.report()
    assert rep.ok and rep.sessions[SESSION] == [], rep.lines()


def join(env: Env, c: str, machine: str, k: int) -> None:
    """A player qualifies on the floor meanwhile (event ids of their own)."""
    ev = Events(NOON)
    ev._ids = itertools.count(100_000 * k)
    batch: list[Any] = [ev.player(c, tier=Tier.JACK), ev.card_in(machine, c)]
    batch += [ev.game(machine, wager=1000) for _ in range(60)]
    assert env.service.ingest(batch, source="test") == len(batch)


async def refuse_winners(env: Env) -> None:
    async with env.service.engine.begin() as conn:
        if env.service.engine.dialect.name == "sqlite":
            await conn.execute(
                text(
                    "CREATE TRIGGER veto BEFORE INSERT ON journal WHEN NEW.type = 'pick.drawn' "
                    "BEGIN SELECT RAISE(ABORT, 'vetoed'); END"
                )
            )
        else:
            await conn.execute(
                text(
                    "CREATE FUNCTION veto() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                    "IF NEW.type = 'pick.drawn' THEN RAISE EXCEPTION 'vetoed'; END IF; "
                    "RETURN NEW; END $$"
                )
            )
            await conn.execute(
                text(
                    "CREATE TRIGGER veto BEFORE INSERT ON journal "
                    "FOR EACH ROW EXECUTE FUNCTION veto()"
                )
            )


async def accept_winners(env: Env) -> None:
    pg = env.service.engine.dialect.name != "sqlite"
    async with env.service.engine.begin() as conn:
        await conn.execute(text("DROP TRIGGER veto" + (" ON journal" if pg else "")))


async def test_an_early_no_show_and_an_abandoned_attempt_are_anomalies(env: Env) -> None:
    assert (await env.post("open")).status_code == 200
    pick = (await env.post("draw", kind="slots")).json()["pick"]
    env.clock.advance(2)
    assert (await env.post(f"picks/{pick['pick']}/no-show")).status_code == 200
    await refuse_winners(env)
    assert (await env.post("draw", kind="slots")).status_code == 503  # its pool is requested
    await accept_winners(env)
    assert (await env.post("draw", kind="tables")).status_code == 200  # the slot one abandoned
    assert (await env.post("close", force=True)).status_code == 200
    rep = await env.report()
    assert rep.ok and rep.exit_code == 3, rep.lines()
    lines = rep.lines()
    assert any("no-show by ann (marketing) 2 s after the draw, before its 90 s" in x for x in lines)
    assert any(
        "ANOMALY: pick 2 (slots): the pool requested" in x and "abandoned" in x for x in lines
    ), lines
    assert any(x.startswith("  NOTE: pick 1 no-show") for x in lines)
    assert lines[-1].startswith("RESULT: OK, WITH 2 ANOMALY")


async def test_open_sessions_fail_only_when_closing_is_required(env: Env) -> None:
    assert (await env.post("open")).status_code == 200
    assert (await env.post("draw", kind="slots")).status_code == 200
    lenient = await env.report()
    assert lenient.exit_code == 3 and lenient.anomalies[SESSION] == [
        f"the session is still open at the end of the journal ({env.clock.now.isoformat()})"
    ], lenient.lines()
    strict = await env.report(require_closed=True)
    assert strict.exit_code == 1 and f"NOT CLOSED: session {SESSION} (--require-closed)" in (
        strict.lines()
    )


async def test_a_live_session_closed_after_its_window_is_an_anomaly(env: Env) -> None:
    """OTHER's window is 12:00-12:30: opened in it, closed at 12:45."""
    assert (await env.post("open", sid=OTHER)).status_code == 200
    env.clock.advance(40 * 60)
    assert (await env.post("close", sid=OTHER)).status_code == 200
    rep = await env.report()
    assert rep.exit_code == 3 and rep.anomalies[OTHER] == [
        "closed at 2026-04-25T12:45:00+02:00, 15 min after its window ended "
        "(2026-04-25T12:30:00+02:00): it stayed open past its window"
    ], rep.lines()


async def test_an_export_of_one_session_is_verified_without_its_neighbours(
    env: Env, tmp_path: Path
) -> None:
    assert (await env.post("open")).status_code == 200
    assert (await env.post("open", sid=OTHER)).status_code == 200  # interleaved
    assert (await env.post("draw", sid=OTHER, kind="slots")).status_code == 200
    await run_and_close_open(env)
    path = tmp_path / "one.jsonl"
    path.write_text("\n".join(await export_session(env.cfg.storage.url, SESSION)) + "\n")
    entries, records = read_export(path)
    assert export_focus(path) == SESSION
    rep = check(entries, records, env.service.journal.head, focus=SESSION)
    assert rep.ok, rep.lines()
    assert OTHER in rep.context and rep.sessions == {SESSION: []}


async def run_and_close_open(env: Env) -> None:
    pick = (await env.post("draw", kind="slots")).json()["pick"]
    assert (await env.post(f"picks/{pick['pick']}/verify")).status_code == 200
    assert (await env.post("close", force=True)).status_code == 200


async def test_the_rehearsal_flag_is_what_the_session_opened_with(env: Env) -> None:
    assert (await env.post("open")).status_code == 200
    records = [
        Record.from_dict(e.record) for e in await env.service.journal.session_entries(SESSION)
    ]
    plan = env.service.planner.plan(SESSION)
    from dataclasses import replace

    later = replace(plan, rehearsal=True)  # a config or schedule saying otherwise later
    s = env.service.planner.scheduled(later, records, env.service.sessions[SESSION]._seed)
    assert s.rehearsal is False


async def test_an_exclusion_mid_claim_voids_the_winner_and_blocks_the_award(env: Env) -> None:
    """Issue 15 item 4: a self-exclusion that arrives while a winner is pending (or
    verified, not yet awarded) blocks verification and award, and the pick is voided
    with the exclusion as reason, journaled; the slot is then drawn again."""
    assert (await env.post("open")).status_code == 200
    first = (await env.post("draw", kind="slots")).json()["pick"]
    second = (await env.post("draw", kind="slots")).json()["pick"]
    assert (await env.post(f"picks/{second['pick']}/verify")).status_code == 200
    ev = Events(NOON)
    ev._ids = itertools.count(900_000)
    drawn = {
        r["data"]["pick"]: r["data"]["card"]
        for e in await env.service.journal.session_entries(SESSION)
        if (r := e.record)["type"] == "pick.drawn"
    }
    out = [ev.player(drawn[n], exclusions=frozenset({Exclusion.SELF_EXCLUDED})) for n in (1, 2)]
    assert env.service.ingest(out, source="cms") == 2
    r = await env.post(f"picks/{second['pick']}/award", amount=50000, kind="cash", envelope="E2")
    assert r.status_code == 409 and "excluded: self_excluded" in r.json()["detail"], r.text
    # the refused award voided both first (the pending one too); the tick then has nothing
    # left to do (the tick alone: tests/test_claim_exclusions.py)
    assert not env.service.session(SESSION).timer_due(env.clock.now)
    await env.service.tick()
    summary = env.service.summary(SESSION)
    states = {p["pick"]: (p["state"], p["void_reason"]) for p in summary["picks"]}
    assert states[first["pick"]] == ("void", "excluded: self_excluded")
    assert states[second["pick"]] == ("void", "excluded: self_excluded")
    voids = [
        e.record
        for e in await env.service.journal.session_entries(SESSION)
        if e.record["type"] == "pick.voided"
    ]
    assert {v["actor"]["role"] for v in voids} == {"exclusion"} and len(voids) == 2
    again = (await env.post("draw", kind="slots")).json()["pick"]
    assert again["slot"] in (first["slot"], second["slot"])
    assert again["card"] not in {drawn[1], drawn[2]}  # excluded players are not in the pool
    assert (await env.post("close", force=True)).status_code == 200
    rep = await env.report()
    assert rep.ok, rep.lines()

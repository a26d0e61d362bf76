"""An insider with the database against the audit trail (issue 17), on SQLite and
PostgreSQL: each attack performed on the real service, and what `raps verify` and the
daemon now make of it.

- a record appended, properly chained, after the session's close;
- the close's `session_id` column edited (outside the chain) to reopen the session;
- a winner vetoed by failing its commit until a favoured card would come up;
- a staff no-show two seconds after the draw, and a draw attempt abandoned;
- an open session, with and without `--require-closed`, and an export of one session
  whose range holds another's records;
- the rehearsal flag as the session opened with it, through a restart with a changed
  config;
- the tail cut: a trigger refuses a draw's winner, the insider deletes the request behind
  it (the chain stays valid) and the retry would draw from a new pool: the daemon,
  holding the head it committed, refuses the journal, before and after a restart, and
  `raps verify` against the published head fails;
- a row deleted in the middle of an open session: refused at restore for the gap; the
  same deletion with the chain rebuilt after it: the journal refused (its head went
  back); with the daemon's head mark deleted as well (an insider on the host too): the
  session refused for its broken state machine;
- a winner changed in an open session, chain rebuilt, mark deleted: refused at restore,
  its pick recomputed from the unsealed seed;
- and an exclusion that arrives while a winner waits (issue 15);
- a ticket draw's close moved out of its stream by its `session_id` column: refused at
  restore (409 on every command, counted, shown), and so is the prize letters' stream
  with a collection moved out of it; a winner changed in an open ticket draw (chain
  rebuilt, mark deleted): refused at restore, its ticket recomputed from the seed; a
  proxy nomination and a stage game's close moved out the same way: the draw, or its
  games, refused.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from sqlalchemy import delete, insert, select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from raps.audit import check, export_focus, export_session, read_columns, read_database, read_export
from raps.calendar_views import session_row
from raps.chain import Head, canonical_json, chained_record, entry_hash
from raps.config import Config
from raps.service import Service
from raps.store.schema import journal
from selector.events import Exclusion, Tier
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
from tests.stage_games_kit import D15, show

pytestmark = pytest.mark.asyncio
OTHER = "S-other"
# a promotion of its own: two live sessions of one promotion may not overlap, and OTHER
# runs beside SESSION (noon to 19:00)
EXTRA = f"""
[[promotions]]
id = "other"

[[sessions]]
id = "{OTHER}"
promotion = "other"
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

    async def report(self, head: Head | None = None, **kw: Any) -> Any:
        url = self.cfg.storage.url
        entries, records = await read_database(url)
        return check(
            entries, records, head, from_genesis=True, columns=await read_columns(url), **kw
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


async def test_a_record_appended_between_the_two_reads_of_a_live_journal_is_no_error(
    env: Env,
) -> None:
    """`raps verify DB_URL` reads the chained entries, then the columns: a running daemon's
    claim timer may append a row in between (bench/chaos.py met it). That row is the next
    verify's to check, not a column edit."""
    await run_and_close(env)
    url = env.cfg.storage.url
    entries, records = await read_database(url)
    assert (await env.post("open", sid=OTHER)).status_code == 200  # appended meanwhile
    columns = await read_columns(url)
    assert len(columns) > len(entries)
    rep = check(entries, records, None, from_genesis=True, columns=columns)
    assert rep.column_errors == [] and rep.ok, rep.lines()
    edited = [(seq, "hidden", t) if t == "session.closed" else (seq, sid, t)
              for seq, sid, t in columns]  # fmt: skip
    rep = check(entries, records, None, from_genesis=True, columns=edited)
    assert any("chained record says" in c for c in rep.column_errors)  # still seen


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
    lines = await export_session(env.cfg.storage.url, SESSION)
    path.write_text("\n".join(lines) + "\n")
    entries, records = read_export(path)
    assert export_focus(path) == SESSION
    head = env.service.journal.head
    rep = check(entries, records, head, focus=SESSION)
    assert rep.ok, rep.lines()
    assert OTHER in rep.context and rep.sessions == {SESSION: []}
    # the neighbour's entries are links only: none of its records, pools or cards
    theirs = [json.loads(x) for x in lines[1:] if json.loads(x).get("stream") == OTHER]
    assert len(theirs) == 3 and all(set(x) == {"seq", "prev", "hash", "stream"} for x in theirs)
    assert str(env.service.sessions[OTHER].commitment) not in path.read_text()

    asked = check(entries, records, head, focus=SESSION, session=OTHER)  # --session OTHER
    assert not asked.ok and asked.export_problems[0] == (
        f"the export's header names session {SESSION!r}, not {OTHER!r}"
    )
    renamed = check(entries, records, head, focus=OTHER)  # a header edited to name OTHER
    assert not renamed.ok and renamed.export_problems[0].endswith(
        f"of {OTHER} is withheld (chain fields only)"
    ), renamed.lines()
    # one of the session's own entries given as links only (hidden as a neighbour's)
    mine = next(i for i, x in enumerate(lines) if '"type":"pick.verified"' in x)
    hidden = json.loads(lines[mine])
    lines[mine] = json.dumps({**{k: hidden[k] for k in ("seq", "prev", "hash")}, "stream": OTHER})
    path.write_text("\n".join(lines) + "\n")
    rep = check(*read_export(path), head, focus=SESSION)
    assert not rep.ok and rep.sessions[SESSION], rep.lines()  # its state machine breaks


async def run_and_close_open(env: Env) -> None:
    pick = (await env.post("draw", kind="slots")).json()["pick"]
    assert (await env.post(f"picks/{pick['pick']}/verify")).status_code == 200
    assert (await env.post("close", force=True)).status_code == 200


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
        rec["data"]["pick"]: rec["data"]["card"]
        for e in await env.service.journal.session_entries(SESSION)
        if (rec := e.record)["type"] == "pick.drawn"
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


# ------------------------------------------------ refused before carrying on


async def rows(engine: AsyncEngine, session_id: str = SESSION) -> list[dict[str, Any]]:
    async with engine.connect() as conn:
        q = select(journal).where(journal.c.session_id == session_id).order_by(journal.c.seq)
        return [r._asdict() for r in await conn.execute(q)]


async def floor_snapshots(engine: AsyncEngine) -> int:
    async with engine.connect() as conn:
        return int((await conn.execute(text("SELECT count(*) FROM floor_snapshots"))).scalar_one())


async def cut(engine: AsyncEngine, seq: int) -> None:
    async with engine.begin() as conn:
        await conn.execute(text("DELETE FROM journal WHERE seq = :seq"), {"seq": seq})


async def rewrite(engine: AsyncEngine, seq: int, record: dict[str, Any] | None) -> None:
    """An insider who computes the chain: entry `seq` replaced by `record` (None: gone,
    if it is there), every later entry renumbered from `seq` and rehashed, so the whole
    chain verifies again."""
    j = journal
    async with engine.begin() as conn:
        before = select(j.c.hash).where(j.c.seq < seq).order_by(j.c.seq.desc()).limit(1)
        prev = (await conn.execute(before)).scalar_one()
        later = [r._asdict() for r in await conn.execute(select(j).where(j.c.seq >= seq))]
        later.sort(key=lambda r: r["seq"])
        await conn.execute(delete(j).where(j.c.seq >= seq))
        if later and later[0]["seq"] == seq and record is None:
            later = later[1:]
        elif record is not None:
            later[0]["record"] = canonical_json(chained_record(record))
        for n, r in enumerate(later, start=seq):
            r.update(seq=n, prev=prev, hash=entry_hash(n, prev, r["record"]))
            prev = r["hash"]
        if later:
            await conn.execute(insert(j), later)


async def draw_command(c: Any, command_id: str) -> Any:
    return await c.post(
        f"/api/sessions/{SESSION}/draw",
        headers=auth("marketing"),
        json={"command_id": command_id, "kind": "slots"},
    )


async def test_a_cut_tail_is_refused_and_the_retry_draws_from_no_new_pool(env: Env) -> None:
    assert (await env.post("open")).status_code == 200
    assert (await env.post("draw", kind="slots")).status_code == 200  # pending meanwhile
    await refuse_winners(env)
    assert (await env.post("draw", command_id="veto", kind="slots")).status_code == 503
    published = env.service.journal.head  # what every answer and MQTT showed last
    assert published is not None
    last = (await rows(env.service.engine))[-1]
    assert (last["seq"], last["type"]) == (published.seq, "pick.requested")
    await env.service.journal.settle()
    await cut(env.service.engine, published.seq)  # the chain is still valid
    join(env, card(30), "M07", 1)  # and the floor moved on: a new pool would differ
    await accept_winners(env)

    r = await env.post("draw", command_id="veto", kind="slots")
    detail = r.json()["detail"]
    assert (
        r.status_code == 503
        and (
            f"the journal ends at entry {published.seq - 1}, but this daemon committed up to "
            f"entry {published}"
        )
        in detail
    ), r.text
    env.clock.advance(120)  # the pending pick's claim window runs out: no timer record
    await env.service.tick()
    assert (await rows(env.service.engine))[-1]["seq"] == published.seq - 1  # nothing written
    ready = await env.client.get("/readyz")
    assert ready.status_code == 503 and "journal" in ready.json()["sources_down"]
    assert ready.json()["journal_refused"].startswith("the journal ends at entry")
    registry = env.service.metrics.registry
    assert registry.get_sample_value("raps_journal_rewound") == 1

    snapshots = await floor_snapshots(env.service.engine)
    async with running_service(env.cfg, env.clock) as again, client_for(again, env.cfg) as c:
        assert again.journal.refused is not None and not again.sessions
        r = await draw_command(c, "after-restart")
        assert r.status_code == 503 and "this daemon committed up to" in r.json()["detail"]
        assert (await c.get("/readyz")).status_code == 503
        assert again.metrics.registry.get_sample_value("raps_journal_rewound") == 1
        await again.stop()  # it restored no floor: it must not save an empty one
    assert await floor_snapshots(env.service.engine) == snapshots
    rep = await env.report()  # the journal alone verifies...
    assert rep.chain_error is None, rep.lines()
    against = await env.report(head=published)  # ...but not against the published head
    assert against.exit_code == 1 and against.chain_error == (
        f"journal ends at entry {published.seq - 1}, but the published head is {published.seq}"
    )


async def _no_show_in_the_middle(env: Env) -> dict[str, Any]:
    """Pick 1 drawn and no-show; pick 2 drawn into its slot and verified: returns the
    no-show's row (in the middle of the session)."""
    assert (await env.post("open")).status_code == 200
    first = (await env.post("draw", kind="slots")).json()["pick"]
    env.clock.advance(91)
    await env.service.tick()  # the claim timer's no-show
    again = (await env.post("draw", kind="slots")).json()["pick"]
    assert (again["slot"], again["attempt"]) == (first["slot"], 1)
    assert (await env.post(f"picks/{again['pick']}/verify")).status_code == 200
    await env.service.journal.settle()
    return next(r for r in await rows(env.service.engine) if r["type"] == "pick.no_show")


async def test_a_row_deleted_mid_session_is_refused(env: Env) -> None:
    no_show = await _no_show_in_the_middle(env)
    await cut(env.service.engine, no_show["seq"])
    async with running_service(env.cfg, env.clock) as again, client_for(again, env.cfg) as c:
        assert SESSION not in again.sessions and OTHER in again.sessions
        assert again.refused[SESSION] == (
            f"its range of the journal is broken: journal entry {no_show['seq']} is missing: "
            f"the chain goes on at {no_show['seq'] + 1}"
        )
        r = await draw_command(c, "after-cut")
        assert r.status_code == 409 and "is refused: its range" in r.json()["detail"]
        assert again.metrics.registry.get_sample_value("raps_sessions_refused") == 1

    # the same deletion by an insider who rebuilds the chain after it: the head went back
    await rewrite(env.service.engine, no_show["seq"], None)  # close the gap, rehashed
    async with running_service(env.cfg, env.clock) as again:
        assert again.journal.refused is not None and "committed up to entry" in (
            again.journal.refused
        )

    # and who deletes the daemon's head mark on its host too: the session's own records
    # no longer make a legal session (pick 1 pending, pick 2 drawn into its slot)
    mark = env.service.journal.mark
    assert mark is not None
    mark.path.unlink()
    async with running_service(env.cfg, env.clock) as again:
        assert again.journal.refused is None
        assert "slots slot 1 requested, but the lowest free is 2" in again.refused[SESSION]


async def test_a_winner_changed_in_an_open_session_is_refused_at_restore(env: Env) -> None:
    assert (await env.post("open")).status_code == 200
    assert (await env.post("draw", kind="slots")).status_code == 200
    await env.service.journal.settle()  # the mark's last write done before it is deleted
    drawn = next(r for r in await rows(env.service.engine) if r["type"] == "pick.drawn")
    record = env.service.sessions[SESSION].records[-1].to_dict()
    won = record["data"]["card"]
    other = next(c for c in (card(i) for i in range(1, 7)) if c != won)
    record["data"]["card"] = other  # a favoured player, chain rebuilt, mark removed
    await rewrite(env.service.engine, drawn["seq"], record)
    assert env.service.journal.mark is not None
    env.service.journal.mark.path.unlink()
    async with running_service(env.cfg, env.clock) as again:
        reason = again.refused[SESSION]
        assert reason.startswith("its picks do not recompute from its seed: record 2 (pick 1)")
        assert f"winner {other} recorded, seed gives {won}" in reason


async def test_the_rehearsal_flag_survives_a_restart_with_a_changed_config(env: Env) -> None:
    """Opened live; the config then says rehearsal: the restarted daemon runs it live,
    writes live records, and the calendar shows what it opened as."""
    assert (await env.post("open")).status_code == 200
    sessions = tuple(
        s.model_copy(update={"rehearsal": True}) if s.id == SESSION else s for s in env.cfg.sessions
    )
    changed = env.cfg.model_copy(update={"sessions": sessions})
    async with running_service(changed, env.clock) as again, client_for(again, changed) as c:
        assert again.sessions[SESSION].rehearsal is False
        assert (await draw_command(c, "after-restart")).status_code == 200
        assert again.sessions[SESSION].records[-1].data["rehearsal"] is False
        listed = {
            s["session_id"]: s
            for s in (await c.get("/api/sessions", headers=auth("marketing"))).json()
        }
        assert listed[SESSION]["rehearsal"] is False
        plan = replace(again.planner.plan(SESSION), rehearsal=True)  # a plan saying otherwise
        assert session_row(again, plan)["rehearsal"] is False
    rep = await env.report()
    assert not [a for a in rep.anomalies.get(SESSION, []) if "rehearsal" in a], rep.lines()


# ------------------------------------------------------------ ticket draws on stage

CASH = "cash-2000"
TICKETS = f"""
[[ticket_programs]]
id = "cash"
promotion = "raps"
tiers = ["jack"]
complimentary = {{ jack = 2 }}
[ticket_programs.period]
kind = "day_to_draw"
start_time = "08:00"
[ticket_programs.stage]
win_limit = "per_draw"
present_seconds = 90
proxy_deadline_minutes = 15
prizes = [{{ kind = "cash", amount = 500000 }}]

[[ticket_draws]]
id = "{CASH}"
program = "cash"
name = "Cash draw 20:00"
at = "2026-04-25 20:00"
opens = "2026-04-25 08:00"
closes = "2026-04-25 19:55"
winners = 1
"""


async def stage_post(c: httpx.AsyncClient, path: str, command_id: str, **body: Any) -> Any:
    body["command_id"] = command_id
    return await c.post(f"/api/stage/draws/{CASH}/{path}", json=body, headers=auth("stage_host"))


async def enter_four(service: Service, c: httpx.AsyncClient) -> dict[str, str]:
    """Four members enter their two complimentary tickets each: card -> receipt."""
    ev, receipts = Events(NOON), {}
    for n in range(1, 5):
        assert service.ingest([ev.player(card(n), tier=Tier.JACK)], source="test") == 1
        body = {"request_id": f"k-{n}", "card": card(n), "draw": CASH}
        r = await c.post("/api/tickets/kiosk/entries", json=body, headers=auth("kiosk"))
        assert r.status_code == 200, r.text
        receipts[card(n)] = r.json()["receipt_no"]
    return receipts


async def collect(c: httpx.AsyncClient, letter: str, command_id: str) -> Any:
    body = {"command_id": command_id, "document": "sa_id", "last_digits": "1234",
            "signature": {"kind": "typed", "text": "P. Test"}}  # fmt: skip
    return await c.post(f"/api/prizes/{letter}/collect", json=body, headers=auth("rewards_desk"))


async def test_editing_a_draw_close_s_column_does_not_reopen_the_draw(
    db_url: str, tmp_path: Path
) -> None:
    cfg = floor_config(db_url, tmp_path, extra=TICKETS)
    clock = Clock()
    async with running_service(cfg, clock) as service, client_for(service, cfg) as c:
        receipts = await enter_four(service, c)
        assert (await stage_post(c, "open", "o")).status_code == 200
        won = (await stage_post(c, "draw", "d")).json()["picks"][0]["card"]
        r = await stage_post(c, "picks/1/present", "p", presenter="winner", document="sa_id",
                             last_digits="1234", receipt=receipts[won])  # fmt: skip
        assert r.status_code == 200, r.text
        r = await stage_post(c, "picks/1/award", "a", source="position")
        assert r.status_code == 200, r.text
        letter = r.json()["picks"][0]["letter_no"]
        assert (await stage_post(c, "close", "c")).status_code == 200
        await service.journal.settle()
    async with service.engine.begin() as conn:  # the seed is public now: reopen the draw
        await conn.execute(
            text("UPDATE journal SET session_id = 'hidden' WHERE type = 'draw.closed'")
        )

    rep = await Env(cfg, clock, service, c).report()
    assert not rep.ok and any("chained record says" in e for e in rep.column_errors), rep.lines()
    async with running_service(cfg, clock) as again, client_for(again, cfg) as c:
        why = again.stage.refused[CASH]
        assert "filed under 'hidden'" in why and "belongs to 'draw:cash-2000'" in why, why
        for path in ("draw", "close"):  # nothing more is drawn with the revealed seed
            r = await stage_post(c, path, f"after-{path}")
            assert r.status_code == 409 and r.json()["reason"] == "draw_refused", r.text
            assert "is refused: journal entry" in r.json()["detail"]
        assert not [x for x in again.stage.sessions[CASH].records if x.type == "draw.picked"][1:]
        view = (await c.get(f"/api/stage/draws/{CASH}", headers=auth("stage_host"))).json()
        assert view["refused"] == why
        assert again.metrics.registry.get_sample_value("raps_sessions_refused") == 1
        assert SESSION in again.sessions  # the rest of the floor runs on
        assert again.stage.prizes_refused is None

    # the prize letters' stream: a collection hidden the same way would pay twice
    async with service.engine.begin() as conn:
        await conn.execute(text("UPDATE journal SET session_id = 'draw:cash-2000' "
                                "WHERE session_id = 'hidden'"))  # fmt: skip
    async with running_service(cfg, clock) as fixed, client_for(fixed, cfg) as c:
        assert fixed.stage.refused == {} and fixed.stage.prizes_refused is None
        r = await collect(c, letter, "col")
        assert r.status_code == 200, r.text
        await fixed.journal.settle()
    async with service.engine.begin() as conn:
        await conn.execute(text("UPDATE journal SET session_id = 'hidden' "
                                "WHERE type = 'prize.collected'"))  # fmt: skip
    async with running_service(cfg, clock) as again, client_for(again, cfg) as c:
        assert "filed under 'hidden'" in str(again.stage.prizes_refused)
        r = await collect(c, letter, "col-2")
        assert r.status_code == 409 and r.json()["reason"] == "prizes_refused", r.text


async def test_a_winner_changed_in_an_open_draw_is_refused_at_restore(
    db_url: str, tmp_path: Path
) -> None:
    """The pick's card and ticket both changed to a favoured player's (so the draw's own
    tree agrees the ticket is theirs), chain rebuilt, head mark deleted: the ticket no
    longer follows from the unsealed seed, and the draw is refused."""
    cfg = floor_config(db_url, tmp_path, extra=TICKETS)
    clock = Clock()
    async with running_service(cfg, clock) as service, client_for(service, cfg) as c:
        await enter_four(service, c)
        assert (await stage_post(c, "open", "o")).status_code == 200
        assert (await stage_post(c, "draw", "d")).status_code == 200
        await service.journal.settle()
    picked = next(r for r in await rows(service.engine, f"draw:{CASH}")
                  if r["type"] == "draw.picked")  # fmt: skip
    record = json.loads(picked["record"])
    d = record["data"]
    cards = sorted(card(n) for n in range(1, 5))  # two tickets each, in canonical order
    other = next(x for x in cards if x != d["card"])
    ticket = 2 * cards.index(other)
    d.update(card=other, ticket=ticket, first=ticket)
    await rewrite(service.engine, picked["seq"], record)
    assert service.journal.mark is not None
    service.journal.mark.path.unlink()
    async with running_service(cfg, clock) as again, client_for(again, cfg) as c:
        why = again.stage.refused[CASH]
        assert why.startswith("its records fail verification: record 2 (pick 1): ticket"), why
        assert "recorded, seed gives" in why
        r = await stage_post(c, "draw", "after-edit")
        assert r.status_code == 409 and r.json()["reason"] == "draw_refused", r.text


async def test_a_nomination_moved_out_of_its_stream_refuses_its_draw(
    db_url: str, tmp_path: Path
) -> None:
    """A proxy's own entry is barred from the draw's bin: hiding the nomination (its
    column) before the open would let it in. The draw is refused instead."""
    cfg = floor_config(db_url, tmp_path, extra=TICKETS)
    clock = Clock()
    async with running_service(cfg, clock) as service, client_for(service, cfg) as c:
        await enter_four(service, c)
        form = {"command_id": "px", "member": card(1), "name": "Sipho Dlamini",
                "document": "driving_licence", "last_digits": "4321",
                "proxy_card": card(2)}  # fmt: skip
        r = await c.post(
            f"/api/stage/draws/{CASH}/proxies", json=form, headers=auth("rewards_desk")
        )
        assert r.status_code == 200, r.text
        await service.journal.settle()
    async with service.engine.begin() as conn:
        await conn.execute(
            text("UPDATE journal SET session_id = 'hidden' WHERE session_id LIKE 'proxies:%'")
        )
    async with running_service(cfg, clock) as again, client_for(again, cfg) as c:
        why = again.stage.refused[CASH]
        assert why.startswith("its proxies: journal entry") and "filed under 'hidden'" in why
        r = await stage_post(c, "open", "o")
        assert r.status_code == 409 and r.json()["reason"] == "draw_refused", r.text
        assert again.metrics.registry.get_sample_value("raps_sessions_refused") == 1
        # the draw dropped from the calendar: its refusal and the gauge go with it
        without = floor_config(db_url, tmp_path, extra=TICKETS.split("[[ticket_draws]]")[0])
        await again.stage.replan(without)
        assert CASH not in again.stage.refused
        assert again.metrics.registry.get_sample_value("raps_sessions_refused") == 0


async def test_a_stage_game_s_close_moved_out_of_its_stream_refuses_the_draw_s_games(
    db_url: str, tmp_path: Path
) -> None:
    """The podium's close hidden by its column would reopen a game whose contents the
    revealed seed tells: the draw's games are refused instead."""
    async with show(db_url, tmp_path) as s:
        await s.draw_all(D15)
        await s.podium(D15)
        await s.service.journal.settle()
    async with s.service.engine.begin() as conn:
        await conn.execute(
            text("UPDATE journal SET session_id = 'hidden' WHERE type = 'stage.closed'")
        )
    async with running_service(s.cfg, s.clock) as again, client_for(again, s.cfg) as c:
        why = again.games.refused[D15]
        assert why.startswith(f"stage:podium:{D15}: journal entry"), why
        assert "filed under 'hidden'" in why
        r = await c.post(f"/api/stage/draws/{D15}/games/podium/open",
                         json={"command_id": "again"}, headers=auth("stage_host"))  # fmt: skip
        assert r.status_code == 409 and r.json()["reason"] == "game_refused", r.text

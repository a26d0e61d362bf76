"""Issue 15 item 6 and issue 18's "Add" items through the daemon: a winner's claim over
HTTP on SQLite and PostgreSQL.

Security acknowledges from the dispatch screen (`en-route`, officer named), marketing
finds the winner absent from the handheld (`absent`: the countdown starts, claim_starts
"absent"), an admin extends it once with a reason (`extend`); each with its roles, a
retry-safe command id and a 409 saying why; the claim timer's tick escalates a winner
nobody reached; a restart keeps it all; `raps verify` holds and shows the extension.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from raps.audit import check, read_columns, read_database
from raps.config import Config
from raps.report_views import report_rows
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
# continues the test config's [[sessions]] table
ABSENT_MODE = 'claim_starts = "absent"\nmax_en_route_seconds = 60\n'


async def post(
    client: httpx.AsyncClient, path: str, command_id: str, role: str, **body: Any
) -> httpx.Response:
    body["command_id"] = command_id
    return await client.post(f"/api/sessions/{SESSION}/{path}", json=body, headers=auth(role))


async def pick_view(client: httpx.AsyncClient, n: int) -> dict[str, Any]:
    r = await client.get(f"/api/sessions/{SESSION}", headers=auth("security"))
    picks: list[dict[str, Any]] = r.json()["picks"]
    return next(p for p in picks if p["pick"] == n)


async def journal_types(cfg: Config) -> list[str]:
    _, records = await read_database(cfg.storage.url)
    return [r["type"] for r in records if r["session_id"] == SESSION]


async def test_the_claim_steps_over_http_survive_a_restart_and_verify(
    db_url: str, tmp_path: Path
) -> None:
    cfg = floor_config(db_url, tmp_path, extra=ABSENT_MODE)
    clock = Clock()
    async with running_service(cfg, clock) as service, client_for(service, cfg) as c:
        seat_players(service, slots=[(card(i), f"M0{i}") for i in range(1, 5)])
        assert (await post(c, "open", "o", "marketing")).status_code == 200
        drawn = (await post(c, "draw", "d1", "marketing", kind="slots")).json()["pick"]
        n = drawn["pick"]
        assert drawn["deadline"] is None and drawn["claim"]["phase"] == "drawn"
        summary = (await c.get(f"/api/sessions/{SESSION}", headers=auth("marketing"))).json()
        assert (summary["claim_starts"], summary["max_en_route_seconds"]) == ("absent", 60)

        # security goes en route; marketing may not say so, nor security find them absent
        r = await post(c, f"picks/{n}/en-route", "e1", "marketing", officer="Sam")
        assert r.status_code == 403
        clock.advance(20)
        r = await post(c, f"picks/{n}/en-route", "e1", "security", officer="Sam Khumalo")
        assert r.status_code == 200, r.text
        assert r.json()["pick"]["claim"]["officer"] == "Sam Khumalo"
        again = await post(c, f"picks/{n}/en-route", "e1", "security", officer="Sam Khumalo")
        assert again.json()["replayed"] is True
        assert (await post(c, f"picks/{n}/absent", "a1", "security")).status_code == 403

        # found absent: the countdown starts now
        clock.advance(40)
        r = await post(c, f"picks/{n}/absent", "a1", "marketing")
        assert r.status_code == 200, r.text
        deadline = datetime.fromisoformat(r.json()["pick"]["deadline"])
        assert deadline == clock.now + timedelta(seconds=90)

        # an admin extends once, with a reason
        r = await post(c, f"picks/{n}/extend", "x1", "marketing", seconds=60, reason="paged")
        assert r.status_code == 403
        r = await post(c, f"picks/{n}/extend", "x1", "admin", seconds=60)
        assert r.status_code == 422
        r = await post(c, f"picks/{n}/extend", "x1", "admin", seconds=60, reason="winner paged")
        assert r.status_code == 200, r.text
        assert datetime.fromisoformat(r.json()["pick"]["deadline"]) == deadline + timedelta(
            seconds=60
        )
        r = await post(c, f"picks/{n}/extend", "x2", "admin", seconds=30, reason="once more")
        assert r.status_code == 409 and "already extended once" in r.json()["detail"]

        # a second winner nobody acknowledges escalates at the tick after 60 s
        two = (await post(c, "draw", "d2", "marketing", kind="slots")).json()["pick"]["pick"]
        clock.advance(61)
        await service.tick()
        assert (await pick_view(c, two))["claim"]["escalated_at"] is not None
        assert (await journal_types(cfg)).count("pick.escalated") == 1

    async with running_service(cfg, clock) as service, client_for(service, cfg) as c:
        one = await pick_view(c, n)
        assert one["claim"]["officer"] == "Sam Khumalo" and one["claim"]["phase"] == "absent"
        assert one["claim"]["extended_seconds"] == 60 and one["claim"]["extended_by"] == "ada"
        assert datetime.fromisoformat(one["deadline"]) == deadline + timedelta(seconds=60)
        again = await post(c, f"picks/{n}/en-route", "e1", "security", officer="Sam Khumalo")
        assert again.status_code == 200 and again.json()["replayed"] is True
        clock.advance(100)  # past the extended deadline: the claim timer, then the close
        await service.tick()
        assert (await pick_view(c, n))["state"] == "no_show"
        assert (await post(c, "close", "cl", "marketing", force=True)).status_code == 200
        rows = report_rows(service.session(SESSION).records, cfg.site.timezone)
        row = next(r for r in rows if r["pick"] == str(n))
        assert row["en_route_by"] == "Sam Khumalo" and row["extended_by"] == "ada (admin)"
        assert row["extension_reason"] == "winner paged" and row["escalated_at"] == ""
        assert next(r for r in rows if r["pick"] == str(two))["escalated_at"] != ""

    entries, records = await read_database(cfg.storage.url)
    rep = check(entries, records, None, from_genesis=True, columns=await read_columns(db_url))
    assert rep.ok and rep.exit_code == 0, rep.lines()
    assert any("extended by 60" in line and "winner paged" in line for line in rep.lines())

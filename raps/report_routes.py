"""The end-of-session report and the identity check, read-only routes.

| route | roles | |
| --- | --- | --- |
| GET /api/sessions/{id}/report | marketing, admin, auditor | the report as JSON |
| GET /api/sessions/{id}/report.csv | marketing, admin, auditor | the same rows as CSV |
| GET /api/sessions/{id}/picks/{n}/identity | marketing, admin | the ID check's full name |

The report is built from the session's journal records (raps.report_views); the identity
check hands the directory's full name (PlayerUpserted.display_name, as journaled with the
pick) to the roles that verify a winner, never to the wall screen.
"""

from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Response

from raps.auth import REPORT_READERS, RUNNERS
from raps.logs import get_logger
from raps.redact import mask_card
from raps.report_views import prize_totals, report_csv, report_rows, session_acts
from raps.web_context import WebContext
from selector.records import Actor
from selector.session import PickState

# what the directory feed (PlayerUpserted) gives of a player, and who sees it where
DIRECTORY_FIELDS = {
    "display_name": "full name: the handheld's identity check (marketing, admin) only",
    "tier": "every screen",
    "card": "masked (last four digits) on every screen; in full only in the journal export",
    "photo_url": "not in the directory feed yet",
}


def register_report_routes(app: FastAPI, web: WebContext) -> None:
    """Add the report and identity routes to the app."""
    service, cfg = web.service, web.cfg
    log = get_logger(site=cfg.site.id)
    Reporter = Annotated[Actor, Depends(web.guard(REPORT_READERS))]
    Runner = Annotated[Actor, Depends(web.guard(RUNNERS))]
    names = {p.id: p.name or p.id for p in cfg.promotion_entries}

    def build(session_id: str) -> dict[str, Any]:
        s = service.session(session_id)
        rows = report_rows(s.records, cfg.site.timezone)
        seed = s.revealed_seed
        return {
            "session_id": s.session_id,
            "promotion_id": s.promotion_id,
            "promotion_name": names.get(s.promotion_id, s.promotion_id),
            "site": cfg.site.name,
            "timezone": cfg.site.timezone,
            "rehearsal": s.rehearsal,
            "state": s.state.value,
            "commitment": s.commitment,
            "seed": seed.hex() if seed else None,
            **session_acts(s.records, cfg.site.timezone),
            "prize_totals": prize_totals(rows),
            "columns": list(rows[0]) if rows else [],
            "picks": rows,
            "csv": f"/api/sessions/{session_id}/report.csv",
        }

    @app.get("/api/sessions/{session_id}/report", tags=["reports"])
    async def report(session_id: str, _a: Reporter) -> dict[str, Any]:
        """Every pick of a session with its times, outcome, who acted and the prize."""
        return build(session_id)

    @app.get("/api/sessions/{session_id}/report.csv", tags=["reports"], response_class=Response)
    async def report_file(session_id: str, _a: Reporter) -> Response:
        """The report's rows as CSV, downloaded as <session>-report.csv."""
        body = report_csv(build(session_id)["picks"])
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in session_id)
        return Response(
            body,
            media_type="text/csv; charset=utf-8",
            headers={"Content-Disposition": f'attachment; filename="{safe}-report.csv"'},
        )

    @app.get("/api/sessions/{session_id}/picks/{pick}/identity", tags=["sessions"])
    async def identity(session_id: str, pick: int, actor: Runner) -> dict[str, Any]:
        """The winner's full name as the directory gave it, for the ID check at
        verification (pending or verified picks only)."""
        s = service.session(session_id)
        found = next((p for p in s.picks if p.number == pick), None)
        if found is None:
            raise HTTPException(404, f"no pick {pick} in session {session_id}")
        if found.state not in (PickState.PENDING, PickState.VERIFIED):
            raise HTTPException(409, f"pick {pick} is {found.state.value}: no ID check")
        log.info("identity shown", session=session_id, pick=pick, user=actor.user,
                 role=actor.role)  # fmt: skip
        return {
            "session_id": session_id,
            "pick": pick,
            "full_name": found.display_name,
            "photo_url": None,  # the directory feed has no photo yet (DIRECTORY_FIELDS)
            "tier": found.tier,
            "card": mask_card(found.card),
        }

"""The end-of-session report, read-only routes (the ID check's are raps.identity_routes).

| route | roles | |
| --- | --- | --- |
| GET /api/sessions/{id}/report | marketing, admin, auditor | the report as JSON |
| GET /api/sessions/{id}/report.csv | marketing, admin, auditor | the same rows as CSV |

The report is built from the session's journal records (raps.report_views).
"""

from typing import Annotated, Any

from fastapi import Depends, FastAPI, Response

from raps.auth import REPORT_READERS
from raps.report_views import prize_totals, report_csv, report_rows, session_acts
from raps.service import Service
from raps.web_context import WebContext
from selector.records import Actor


def register_report_routes(app: FastAPI, web: WebContext) -> None:
    """Add the report routes to the app."""
    service, cfg = web.service, web.cfg
    Reporter = Annotated[Actor, Depends(web.guard(REPORT_READERS))]

    def build(session_id: str) -> dict[str, Any]:
        s = service.session(session_id)
        rows = report_rows(s.records, cfg.site.timezone)
        seed = s.revealed_seed
        return {
            "session_id": s.session_id,
            "promotion_id": s.promotion_id,
            "promotion_name": _name(service, s.promotion_id),
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


def _name(service: Service, promotion_id: str) -> str:
    facts = service.planner.schedule.facts.get(promotion_id)
    return facts.name if facts is not None else promotion_id

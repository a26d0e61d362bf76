"""The promotion's prize report, read-only (raps.games.reports).

| route | roles | |
| --- | --- | --- |
| GET /api/prizes/report | marketing, admin, auditor | every prize, totals, the safe, uncollected |
| GET /api/prizes/report.csv | marketing, admin, auditor | the prizes as CSV |
| GET /api/prizes/report-totals.csv | marketing, admin, auditor | the totals as CSV |
| GET /prizes/report | marketing, admin, auditor | the printable summary (A4) |

No `from __future__ import annotations` here: FastAPI reads the routes' annotations.
"""

from typing import Annotated, Any

from fastapi import Depends, FastAPI, Response
from fastapi.responses import HTMLResponse

from raps.auth import REPORT_READERS
from raps.games.reports import report, report_csv, report_html, report_totals_csv
from raps.web_context import WebContext
from selector.records import Actor


def register_prize_report_routes(app: FastAPI, web: WebContext) -> None:
    service, cfg = web.service, web.cfg
    Reader = Annotated[Actor, Depends(web.guard(REPORT_READERS))]
    Page = Annotated[Actor, Depends(web.guard(REPORT_READERS, page=True))]

    def build() -> dict[str, Any]:
        return report(service.games, service.clock(), cfg.site.name, cfg.site.timezone)

    @app.get("/api/prizes/report", tags=["reports"])
    async def prize_report(_a: Reader) -> dict[str, Any]:
        """Every prize of the promotion once (draw, day, position, winner, amount, kind,
        add-on, letter, collection state, detail), totals per kind and, by kind, per draw
        and per day, the digit safe's history and the prizes not collected yet."""
        return build()

    @app.get("/api/prizes/report.csv", tags=["reports"], response_class=Response)
    async def prize_report_csv(_a: Reader) -> Response:
        """The prizes as CSV, downloaded as prizes.csv."""
        return Response(
            report_csv(build()["prizes"]),
            media_type="text/csv; charset=utf-8",
            headers={"Content-Disposition": 'attachment; filename="prizes.csv"'},
        )

    @app.get("/api/prizes/report-totals.csv", tags=["reports"], response_class=Response)
    async def prize_report_totals_csv(_a: Reader) -> Response:
        """The totals as CSV, downloaded as prize-totals.csv: per kind, and per draw and
        per day by kind."""
        return Response(
            report_totals_csv(build()),
            media_type="text/csv; charset=utf-8",
            headers={"Content-Disposition": 'attachment; filename="prize-totals.csv"'},
        )

    @app.get("/prizes/report", tags=["reports"], response_class=HTMLResponse)
    async def prize_report_page(_a: Page) -> HTMLResponse:
        """The printable summary: totals, the safe's history, what is not collected."""
        return HTMLResponse(report_html(build()))

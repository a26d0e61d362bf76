"""The calendar page's routes: the month, and the schedule's changes.

| route | roles | |
| --- | --- | --- |
| GET /api/calendar?month=YYYY-MM | calendar readers | a month of occurrences, open now, next |
| GET /api/schedule/sessions/{id} | calendar readers | a session's plan and its history |
| POST /api/schedule/sessions | marketing, admin | a new session (marketing's: proposed) |
| POST /api/schedule/sessions/{id}/change | marketing, admin | reschedule or re-rule it |
| POST /api/schedule/sessions/{id}/approve | admin | approve a proposed session |
| POST /api/schedule/sessions/{id}/cancel | marketing, admin | cancel one not opened |
| POST /api/schedule/promotions/{id} | marketing, admin | period, calendar, its sessions |
| POST /api/schedule/promotions/{id}/definition | marketing, admin | who qualifies (new) |
| POST /api/schedule/promotions/{id}/approve | admin | apply what waits for the promotion |
| POST /api/schedule/promotions/{id}/reject | admin | drop what waits for it |
| POST /api/schedule/ticket-calendars/{program}/{index} | marketing, admin | a ticket calendar |
| POST /api/schedule/ticket-calendars/{program}/{index}/approve | admin | apply what waits |
| POST /api/schedule/ticket-calendars/{program}/{index}/reject | admin | drop what waits |
| GET /api/schedule/export | marketing, admin, auditor | the schedule as TOML |

Marketing's changes to a promotion (its definition, period or calendar) and to a ticket
program's draw calendar (raps.ticket_calendar_desk) are proposals: they apply only once
an admin approves them; an admin's apply at once.

Every change carries a `command_id` (a retry returns the first answer) and a `reason`,
journaled with the user.  A refusal is 422 with the `field` at fault and why; a commit
the journal could not make is 503, retry-safe.

No `from __future__ import annotations` here: FastAPI reads the routes' annotations.
"""

from datetime import date
from typing import Annotated, Any, Literal

import tomli_w
from fastapi import Depends, FastAPI, HTTPException, Path, Query, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from raps.auth import ADMINS, AUDITORS, CALENDAR_READERS, RUNNERS
from raps.calendar_views import history, month_view, session_row
from raps.config.schedule import export_document
from raps.schedule_desk import ScheduleUnavailable
from raps.web_context import WebContext
from selector.calendar_spec import SpecError, read_period
from selector.records import Actor, Record
from selector.schedule import PromotionPlan, ScheduleError, SessionPlan, wall_time

Text = Field(min_length=1, max_length=500)


class Change(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a misspelt field is a 422, not ignored

    command_id: str = Field(min_length=1, max_length=128)
    reason: str = Text


class SessionFields(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(default=None, max_length=80)
    starts: str | None = Field(default=None, max_length=40, description="YYYY-MM-DD HH:MM")
    ends: str | None = Field(default=None, max_length=40)
    slots: int | None = Field(default=None, ge=0, le=100)
    tables: int | None = Field(default=None, ge=0, le=100)
    claim_seconds: float | None = Field(default=None, gt=0, le=3600)
    exclude_no_shows: bool | None = None
    exclude_voided: bool | None = None
    claim_starts: Literal["draw", "absent"] | None = None
    max_en_route_seconds: float | None = Field(default=None, ge=0, le=3600)  # 0: no limit
    off_calendar: str | None = Field(
        default=None, max_length=500, description="why it is held off the calendar"
    )


class NewSession(Change, SessionFields):
    session_id: str = Field(min_length=1, max_length=64)
    promotion_id: str = Field(min_length=1, max_length=64)
    starts: str = Field(max_length=40)
    rehearsal: bool = False


class SessionChange(Change):
    changes: SessionFields


class PromotionSchedule(Change):
    period: dict[str, Any] | None = None
    calendar: dict[str, Any] | None = None
    calendar_sessions: dict[str, Any] | None = None


class TicketCalendar(Change):
    """A `[[ticket_programs.calendars]]` entry: id, name, bin, winners, prizes, calendar."""

    entry: dict[str, Any]


class PromotionDefinition(Change):
    """Who qualifies (selector.promotion_spec): the keys of `[[promotions]]`."""

    definition: dict[str, Any]


def register_schedule_routes(app: FastAPI, web: WebContext) -> None:
    service = web.service
    desk = service.planner
    tz = web.cfg.site.timezone
    Reader = Annotated[Actor, Depends(web.guard(CALENDAR_READERS))]
    Planner = Annotated[Actor, Depends(web.guard(RUNNERS))]
    Approver = Annotated[Actor, Depends(web.guard(ADMINS))]
    Exporter = Annotated[Actor, Depends(web.guard(RUNNERS | AUDITORS))]

    def fields(body: SessionFields) -> dict[str, Any]:
        given = body.model_dump(include=set(SessionFields.model_fields), exclude_none=True)
        for key in ("starts", "ends"):
            if key in given:
                given[key] = wall_time(given[key], tz, key)
        if given.get("max_en_route_seconds") == 0:
            given["max_en_route_seconds"] = None  # 0: no escalation
        return given

    async def answer(session_id: str | None, run: Any) -> dict[str, Any]:
        try:
            records: list[Record] = await run
        except ScheduleError as e:
            raise HTTPException(422, {"field": e.key, "detail": e.reason}) from None
        except ScheduleUnavailable as e:
            raise HTTPException(503, str(e)) from None
        out: dict[str, Any] = {"records": [r.type for r in records]}
        if session_id is not None:
            out["session"] = session_row(service, desk.plan(session_id))
        return out

    @app.get("/api/calendar", tags=["calendar"])
    async def calendar(
        _a: Reader, month: Annotated[str | None, Query(pattern=r"^\d{4}-\d{2}$")] = None
    ) -> dict[str, Any]:
        try:
            first = date.fromisoformat(f"{month}-01") if month else service.clock().date()
        except ValueError:
            raise HTTPException(422, "month is YYYY-MM") from None
        return month_view(service, first.replace(day=1))

    @app.get("/api/schedule/sessions/{session_id}", tags=["calendar"])
    async def schedule_session(session_id: str, _a: Reader) -> dict[str, Any]:
        plan = desk.schedule.sessions.get(session_id)
        if plan is None:
            raise HTTPException(404, f"no session {session_id!r}")
        return {**session_row(service, plan), "history": history(service, session_id)}

    @app.post("/api/schedule/sessions", tags=["calendar"])
    async def create_session(body: NewSession, actor: Planner) -> dict[str, Any]:
        async def run() -> list[Record]:
            given = fields(body)
            plan = SessionPlan(
                session_id=body.session_id,
                promotion_id=body.promotion_id,
                rehearsal=body.rehearsal,
                **given,
            )
            return await desk.create(actor, body.command_id, plan, body.reason)

        return await answer(body.session_id, run())

    def known(session_id: str) -> None:
        if session_id not in desk.schedule.sessions:
            raise HTTPException(404, f"no session {session_id!r}")

    @app.post("/api/schedule/sessions/{session_id}/change", tags=["calendar"])
    async def change_session(
        session_id: str, body: SessionChange, actor: Planner
    ) -> dict[str, Any]:
        known(session_id)

        async def run() -> list[Record]:
            return await desk.change(
                actor, body.command_id, session_id, fields(body.changes), body.reason
            )

        return await answer(session_id, run())

    @app.post("/api/schedule/sessions/{session_id}/approve", tags=["calendar"])
    async def approve_session(session_id: str, body: Change, actor: Approver) -> dict[str, Any]:
        known(session_id)
        return await answer(
            session_id, desk.approve(actor, body.command_id, session_id, body.reason)
        )

    @app.post("/api/schedule/sessions/{session_id}/cancel", tags=["calendar"])
    async def cancel_session(session_id: str, body: Change, actor: Planner) -> dict[str, Any]:
        known(session_id)
        return await answer(
            session_id, desk.cancel(actor, body.command_id, session_id, body.reason)
        )

    @app.post("/api/schedule/promotions/{promotion_id}", tags=["calendar"])
    async def set_promotion(
        promotion_id: str, body: PromotionSchedule, actor: Planner
    ) -> dict[str, Any]:
        if promotion_id not in desk.schedule.facts:
            raise HTTPException(404, f"no promotion {promotion_id!r}")
        try:
            period = read_period(body.period)
        except SpecError as e:
            raise HTTPException(422, {"field": e.key, "detail": e.reason}) from None
        plan = PromotionPlan(promotion_id, period, body.calendar, body.calendar_sessions)
        return await answer(None, desk.set_promotion(actor, body.command_id, plan, body.reason))

    @app.post("/api/schedule/promotions/{promotion_id}/definition", tags=["calendar"])
    async def define_promotion(
        promotion_id: str, body: PromotionDefinition, actor: Planner
    ) -> dict[str, Any]:
        run = desk.define(actor, body.command_id, promotion_id, body.definition, body.reason)
        return await answer(None, run)

    @app.post("/api/schedule/promotions/{promotion_id}/{decision}", tags=["calendar"])
    async def decide_promotion(
        promotion_id: str,
        decision: Annotated[str, Path(pattern="^(approve|reject)$")],
        body: Change,
        actor: Approver,
    ) -> dict[str, Any]:
        approve = decision == "approve"
        run = desk.decide(actor, body.command_id, promotion_id, approve, body.reason)
        return await answer(None, run)

    tickets = service.ticket_calendars
    Index = Annotated[int, Path(ge=0, le=999)]

    @app.post("/api/schedule/ticket-calendars/{program_id}/{index}", tags=["calendar"])
    async def set_ticket_calendar(
        program_id: str, index: Index, body: TicketCalendar, actor: Planner
    ) -> dict[str, Any]:
        run = tickets.set(actor, body.command_id, program_id, index, body.entry, body.reason)
        return await answer(None, run)

    @app.post("/api/schedule/ticket-calendars/{program_id}/{index}/{decision}", tags=["calendar"])
    async def decide_ticket_calendar(
        program_id: str,
        index: Index,
        decision: Annotated[str, Path(pattern="^(approve|reject)$")],
        body: Change,
        actor: Approver,
    ) -> dict[str, Any]:
        approve = decision == "approve"
        run = tickets.decide(actor, body.command_id, program_id, index, approve, body.reason)
        return await answer(None, run)

    @app.get("/api/schedule/export", tags=["calendar"])
    async def export(_a: Exporter) -> Response:
        text = tomli_w.dumps(export_document(desk.schedule, tz))
        name = f"schedule-{web.cfg.site.id}.toml"
        return Response(
            text,
            media_type="application/toml",
            headers={"content-disposition": f'attachment; filename="{name}"'},
        )

    @app.exception_handler(ScheduleError)
    async def schedule_refused(_request: Any, e: ScheduleError) -> JSONResponse:
        return JSONResponse({"detail": {"field": e.key, "detail": e.reason}}, status_code=422)

"""The claim's steps over HTTP (selector.claims): the routes of the dispatch screen's
"En route" and the handheld's "Absent" and "Extend".

| route | roles | body |
| --- | --- | --- |
| POST /api/sessions/{id}/picks/{n}/en-route | security, admin | `officer` |
| POST /api/sessions/{id}/picks/{n}/absent | marketing, admin | |
| POST /api/sessions/{id}/picks/{n}/extend | admin | `seconds`, `reason` |

Like every command each carries a `command_id` (a retry answers with the first outcome),
a signed-in page sends its CSRF token, and a refusal is a 409 saying why.
"""

from typing import Annotated, Any

from fastapi import Depends, FastAPI
from pydantic import BaseModel, Field

from raps.auth import DISPATCHERS, EXTENDERS, RUNNERS
from raps.session_views import command_answer
from raps.web_context import WebContext
from selector.claims import MAX_EXTENSION_SECONDS, MAX_OFFICER_CHARS
from selector.records import Actor


class _Command(BaseModel):
    command_id: str = Field(min_length=1, max_length=128)


class EnRouteBody(_Command):
    officer: str = Field(min_length=1, max_length=MAX_OFFICER_CHARS)


class ExtendBody(_Command):
    seconds: float = Field(gt=0, le=MAX_EXTENSION_SECONDS)
    reason: str = Field(min_length=3, max_length=200)


def register_claim_routes(app: FastAPI, web: WebContext) -> None:
    """Add the claim's command routes to the app."""
    service = web.service
    Dispatcher = Annotated[Actor, Depends(web.guard(DISPATCHERS))]
    Runner = Annotated[Actor, Depends(web.guard(RUNNERS))]
    Extender = Annotated[Actor, Depends(web.guard(EXTENDERS))]

    @app.post("/api/sessions/{session_id}/picks/{pick}/en-route", tags=["commands"])
    async def en_route(
        session_id: str, pick: int, body: EnRouteBody, actor: Dispatcher
    ) -> dict[str, Any]:
        """Security acknowledges a winner: the officer named is on the way."""
        r = await service.en_route(session_id, actor, body.command_id, pick, body.officer)
        return command_answer(r.outcome, r.head)

    @app.post("/api/sessions/{session_id}/picks/{pick}/absent", tags=["commands"])
    async def absent(session_id: str, pick: int, body: _Command, actor: Runner) -> dict[str, Any]:
        """At the location, the winner is not there: the PA calls them; with
        claim_starts "absent" their countdown starts now."""
        r = await service.absent(session_id, actor, body.command_id, pick)
        return command_answer(r.outcome, r.head)

    @app.post("/api/sessions/{session_id}/picks/{pick}/extend", tags=["commands"])
    async def extend(
        session_id: str, pick: int, body: ExtendBody, actor: Extender
    ) -> dict[str, Any]:
        """An admin extends a pick's running countdown once, with the reason (journaled,
        shown to the inspector by raps verify)."""
        r = await service.extend(
            session_id, actor, body.command_id, pick, body.seconds, body.reason
        )
        return command_answer(r.outcome, r.head)

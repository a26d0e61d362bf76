"""The handheld's ID check and PA line: what the directory says of a winner, for the
roles that verify one (marketing, admin), never for the wall screen.

| route | roles | |
| --- | --- | --- |
| GET /api/sessions/{id}/picks/{n}/identity | marketing, admin | full name, the photo's address |
| GET /api/sessions/{id}/picks/{n}/photo | marketing, admin | the directory's photo (raps.photos) |
| GET /api/sessions/{id}/picks/{n}/announcement | marketing, admin | the PA line's name |

Each answers only for a pick still waiting for its winner or verified (409 after);
each time a full name or photo is handed out it is logged (who, session, pick; never
the name).  The full name is the one journaled with the pick (PlayerUpserted.display_name
at the draw); the photo is the directory's current one (`photo_url`).
"""

from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Response

from raps.auth import RUNNERS
from raps.logs import get_logger
from raps.photos import PhotoUnavailable, fetch_photo, photo_problem
from raps.redact import announced_name, mask_card
from raps.web_context import WebContext
from selector.records import Actor
from selector.session import Pick, PickState

# what the directory feed (PlayerUpserted) gives of a player, and who sees it where
# (docs/pages.md, "The player directory's fields")
DIRECTORY_FIELDS = {
    "display_name": "full name: the handheld's ID check (marketing, admin) only; first "
    "name and initial everywhere else (the PA line as [[promotions]] announce_name says)",
    "tier": "every screen",
    "card": "masked (last four digits) on every screen; in full only in the journal export",
    "photo_url": "the handheld's ID check only, fetched by the daemon from an allowed origin",
}


def register_identity_routes(app: FastAPI, web: WebContext) -> None:
    """Add the ID check's routes to the app."""
    service, cfg = web.service, web.cfg
    log = get_logger(site=cfg.site.id)
    Runner = Annotated[Actor, Depends(web.guard(RUNNERS))]
    styles = {p.id: p.announce_name for p in cfg.promotion_entries}

    def waiting(session_id: str, pick: int) -> Pick:
        """The pick, while there is an ID to check (pending or verified)."""
        s = service.session(session_id)
        found = next((p for p in s.picks if p.number == pick), None)
        if found is None:
            raise HTTPException(404, f"no pick {pick} in session {session_id}")
        if found.state not in (PickState.PENDING, PickState.VERIFIED):
            raise HTTPException(409, f"pick {pick} is {found.state.value}: no ID check")
        return found

    def photo_url(p: Pick) -> str | None:
        profile = service.floor.profile(p.card)
        return None if profile is None else profile.photo_url

    @app.get("/api/sessions/{session_id}/picks/{pick}/identity", tags=["sessions"])
    async def identity(session_id: str, pick: int, actor: Runner) -> dict[str, Any]:
        """The winner's full name as the directory gave it, and where the handheld finds
        the photo (this daemon's photo route) or why there is none."""
        found = waiting(session_id, pick)
        problem = photo_problem(photo_url(found), cfg.directory)
        log.info("identity shown", session=session_id, pick=pick, user=actor.user,
                 role=actor.role)  # fmt: skip
        return {
            "session_id": session_id,
            "pick": pick,
            "full_name": found.display_name,
            "photo_url": None if problem else f"/api/sessions/{session_id}/picks/{pick}/photo",
            "photo_note": problem,
            "tier": found.tier,
            "card": mask_card(found.card),
        }

    @app.get("/api/sessions/{session_id}/picks/{pick}/photo", tags=["sessions"],
             response_class=Response)  # fmt: skip
    async def photo(session_id: str, pick: int, actor: Runner) -> Response:
        """The directory's photo of the winner, fetched from its allowed origin."""
        found = waiting(session_id, pick)
        try:
            got = await fetch_photo(photo_url(found) or "", cfg.directory)
        except PhotoUnavailable as e:
            log.warning("photo not shown", session=session_id, pick=pick, reason=str(e))
            raise HTTPException(404, f"no photo: {e}") from e
        log.info("photo shown", session=session_id, pick=pick, user=actor.user, role=actor.role)
        return Response(got.body, media_type=got.media_type,
                        headers={"Cache-Control": "no-store"})  # fmt: skip

    @app.get("/api/sessions/{session_id}/picks/{pick}/announcement", tags=["sessions"])
    async def announcement(session_id: str, pick: int, actor: Runner) -> dict[str, Any]:
        """The name the PA line says, as the promotion's `announce_name` wants it."""
        found = waiting(session_id, pick)
        style = styles.get(service.session(session_id).promotion_id, "first_initial")
        if style == "full":
            log.info("full name announced", session=session_id, pick=pick, user=actor.user,
                     role=actor.role)  # fmt: skip
        return {"pick": pick, "style": style, "name": announced_name(found.display_name, style)}

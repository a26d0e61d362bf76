"""The stage games' routes: the host plays a draw's game, one tap per step.

| route | roles | |
| --- | --- | --- |
| GET /api/stage/draws/{id}/game | stage host, admin | the draw's game, its next step |
| POST /api/stage/draws/{id}/games/{mechanic}/open, /close | stage host, admin | a game |
| POST .../games/podium/choose | stage host, admin | `randomiser`, for whoever's turn it is |
| POST .../games/bonus/decide, /box | stage host, admin | `position`, `play`; `box` |
| POST .../games/paddles/paddle, /reveal, /stop | stage host, admin | `paddle`; `reveal` |
| POST .../games/safe/decline, /attempt, /guess, /spin | stage host, admin | `code` |
| POST .../games/car/reveal, /vehicle | stage host, admin | `vehicle`, `buy_back` |
| POST /api/stage/draws/{id}/vault/share | stage host, admin | the 20 Dec 21:30 share |
| POST /api/stage/draws/{id}/spots/award | stage host, admin | a car day's qualifying spots |

Every command carries a `command_id`; a retry returns the first answer. The contestant
is whoever's turn the game says it is: no request names a card. A refusal is 409 with
its `reason` (404 for what does not exist), a commit the journal could not make is 503.
The answer is the host's view of the draw, its game included (`game`). Views are read
under the journal lock (`StageDesk.settled`): what a poll shows is committed.

No `from __future__ import annotations` here: FastAPI reads the routes' annotations.
"""

from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI
from pydantic import BaseModel, ConfigDict, Field

from raps.auth import STAGE_HOSTS
from raps.games.desk import GameDesk
from raps.tickets.stage_views import host_view
from raps.web_context import WebContext
from selector.records import Actor

Mechanic = Literal["podium", "bonus", "paddles", "safe", "car"]


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a misspelt field is a 422, not ignored

    command_id: str = Field(min_length=1, max_length=128)


class ChooseBody(Body):
    randomiser: int = Field(ge=1, le=100)


class DecideBody(Body):
    position: int = Field(ge=1, le=100)
    play: bool


class BoxBody(Body):
    box: int = Field(ge=1, le=100)


class PaddleBody(Body):
    paddle: int = Field(ge=1, le=100)


class RevealBody(Body):
    reveal: int = Field(ge=1, le=1000)


class GuessBody(Body):
    code: str = Field(pattern=r"^[0-9]{1,12}$")


class VehicleBody(Body):
    vehicle: str = Field(min_length=1, max_length=80)
    buy_back: int | None = Field(default=None, ge=0, description="cents, as agreed (rule 87)")


def register_game_routes(app: FastAPI, web: WebContext) -> None:
    games: GameDesk = web.service.games
    stage = games.stage
    Host = Annotated[Actor, Depends(web.guard(STAGE_HOSTS))]

    @app.get("/api/stage/draws/{draw_id}/game", tags=["stage"])
    async def game(draw_id: str, _a: Host) -> dict[str, Any]:
        """The draw's game: each mechanic's state, whose turn, what was revealed, and the
        host's next step; hidden contents only once a game is closed. As of the last
        commit: a step still being written (which a failed write undoes) is not shown."""
        games.plan_of(draw_id)

        def view() -> dict[str, Any]:
            game = games.view(draw_id, public=False)
            return {"draw_id": draw_id, "game": game, "version": stage.version}

        return await stage.settled(view)

    @app.post("/api/stage/draws/{draw_id}/games/{mechanic}/open", tags=["stage"])
    async def open_game(draw_id: str, mechanic: Mechanic, body: Body, a: Host) -> dict[str, Any]:
        """Open the next game of the draw over its verified winners, in position order."""
        await games.open(draw_id, mechanic, a, body.command_id)
        return host_view(stage, draw_id)

    @app.post("/api/stage/draws/{draw_id}/games/{mechanic}/close", tags=["stage"])
    async def close_game(draw_id: str, mechanic: Mechanic, body: Body, a: Host) -> dict[str, Any]:
        """Close a finished game: its seed and hidden table revealed, its winners paid
        (ledger, draw awards, prize letters) in one commit."""
        await games.close(draw_id, mechanic, a, body.command_id)
        return host_view(stage, draw_id)

    @app.post("/api/stage/draws/{draw_id}/games/podium/choose", tags=["stage"])
    async def choose(draw_id: str, body: ChooseBody, a: Host) -> dict[str, Any]:
        """The winner whose turn it is picks a randomiser: it names their podium."""
        await games.step(draw_id, "podium", "choose", a, body.command_id,
                         randomiser=body.randomiser)  # fmt: skip
        return host_view(stage, draw_id)

    @app.post("/api/stage/draws/{draw_id}/games/bonus/decide", tags=["stage"])
    async def decide(draw_id: str, body: DecideBody, a: Host) -> dict[str, Any]:
        """A bonus contestant (by their draw position) plays or declines (rule 107)."""
        await games.step(draw_id, "bonus", "decide", a, body.command_id,
                         position=body.position, play=body.play)  # fmt: skip
        return host_view(stage, draw_id)

    @app.post("/api/stage/draws/{draw_id}/games/bonus/box", tags=["stage"])
    async def box(draw_id: str, body: BoxBody, a: Host) -> dict[str, Any]:
        """The contestant whose turn it is opens a box."""
        await games.step(draw_id, "bonus", "box", a, body.command_id, box=body.box)
        return host_view(stage, draw_id)

    @app.post("/api/stage/draws/{draw_id}/games/paddles/paddle", tags=["stage"])
    async def paddle(draw_id: str, body: PaddleBody, a: Host) -> dict[str, Any]:
        """The winner on stage picks a paddle: its number is their chances."""
        await games.step(draw_id, "paddles", "paddle", a, body.command_id, paddle=body.paddle)
        return host_view(stage, draw_id)

    @app.post("/api/stage/draws/{draw_id}/games/paddles/reveal", tags=["stage"])
    async def reveal(draw_id: str, body: RevealBody, a: Host) -> dict[str, Any]:
        """The winner on stage opens a prize reveal."""
        await games.step(draw_id, "paddles", "reveal", a, body.command_id, reveal=body.reveal)
        return host_view(stage, draw_id)

    @app.post("/api/stage/draws/{draw_id}/games/paddles/stop", tags=["stage"])
    async def stop(draw_id: str, body: Body, a: Host) -> dict[str, Any]:
        """The winner keeps the reveal they opened last (rule 115)."""
        await games.step(draw_id, "paddles", "stop", a, body.command_id)
        return host_view(stage, draw_id)

    def safe_step(action: Literal["decline", "attempt", "spin"]) -> None:
        async def route(draw_id: str, body: Body, a: Host) -> dict[str, Any]:
            await games.step(draw_id, "safe", action, a, body.command_id)
            return host_view(stage, draw_id)

        route.__doc__ = {
            "decline": "The winner keeps their podium prize.",
            "attempt": "The winner forfeits R2,000 of it to try the safe (rule 125).",
            "spin": "A chance safe: the committed seed says whether it opens.",
        }[action]
        app.post(f"/api/stage/draws/{{draw_id}}/games/safe/{action}", tags=["stage"],
                 name=f"safe_{action}")(route)  # fmt: skip

    for action in ("decline", "attempt", "spin"):
        safe_step(action)

    @app.post("/api/stage/draws/{draw_id}/games/safe/guess", tags=["stage"])
    async def guess(draw_id: str, body: GuessBody, a: Host) -> dict[str, Any]:
        """A code safe: the winner tries a code (each code once)."""
        await games.step(draw_id, "safe", "guess", a, body.command_id, code=body.code)
        return host_view(stage, draw_id)

    @app.post("/api/stage/draws/{draw_id}/games/car/reveal", tags=["stage"])
    async def car_reveal(draw_id: str, body: Body, a: Host) -> dict[str, Any]:
        """Reveal the car's winner among the finalists (fixed when the game opened)."""
        await games.step(draw_id, "car", "reveal_winner", a, body.command_id)
        return host_view(stage, draw_id)

    @app.post("/api/stage/draws/{draw_id}/games/car/vehicle", tags=["stage"])
    async def vehicle(draw_id: str, body: VehicleBody, a: Host) -> dict[str, Any]:
        """The winner's vehicle, and the buy-back agreed with the dealership if taken."""
        await games.step(draw_id, "car", "vehicle", a, body.command_id, vehicle=body.vehicle,
                         buy_back=body.buy_back)  # fmt: skip
        return host_view(stage, draw_id)

    @app.post("/api/stage/draws/{draw_id}/vault/share", tags=["stage"])
    async def share(draw_id: str, body: Body, a: Host) -> dict[str, Any]:
        """Share an uncracked vault among the draw's verified winners (rules 135-138)."""
        await games.share_vault(draw_id, a, body.command_id)
        return host_view(stage, draw_id)

    @app.post("/api/stage/draws/{draw_id}/spots/award", tags=["stage"])
    async def spots(draw_id: str, body: Body, a: Host) -> dict[str, Any]:
        """A car day's qualifying spots for the draw's verified winners (rules 69-70)."""
        await games.award_spots(draw_id, a, body.command_id)
        return host_view(stage, draw_id)

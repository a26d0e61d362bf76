"""The stage games' journal streams and the order a draw plays its games in: shared by
the desk, the views and `raps verify`."""

from __future__ import annotations

from selector.stagegames.game import DrawGame

PREFIX = "stage:"
MECHANICS = ("podium", "bonus", "paddles", "safe", "car")
# the games each kind of draw plays, in order (vault_share and car_spots pay at once)
SEQUENCE: dict[DrawGame, tuple[str, ...]] = {
    DrawGame.PODIUM: ("podium",),
    DrawGame.PODIUM_BONUS: ("podium", "bonus"),
    DrawGame.PADDLES: ("paddles",),
    DrawGame.PODIUM_SAFE: ("podium", "safe"),
    DrawGame.CAR_FINAL: ("car",),
    DrawGame.VAULT_SHARE: (),
    DrawGame.CAR_SPOTS: (),
}


def game_stream(mechanic: str, draw_id: str) -> str:
    """A game's stream (and game id): `stage:<mechanic>:<draw id>`."""
    return f"{PREFIX}{mechanic}:{draw_id}"


def parse_stream(stream: str) -> tuple[str, str]:
    """(mechanic, draw id) of a game's stream."""
    mechanic, _, draw_id = stream.removeprefix(PREFIX).partition(":")
    return mechanic, draw_id

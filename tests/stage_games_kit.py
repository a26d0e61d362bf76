"""A Gold Reef City Saturday for the daemon tests of the stage games (no tests here).

The config mirrors config/seeds/gold-reef-city.toml's stage games on a small floor:
Saturday 25 April 2026 (tests.builders.NOON's day) has the 15:00 podiums and bonus
boxes, the 19:00 paddles (its first winner earns a car spot), the 21:00 podiums and
digit safe and the 21:30 vault share, all from one bin; Saturday 2 May is a car day
(15:00 qualifying spots, the 21:00 final). `Show` drives it over HTTP as the host page
does, and reads what it cannot see (a safe's code) with the test's own seed key.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from raps.audit import check, read_database
from raps.config import Config
from raps.service import Service
from raps.tickets.stage import draw_stream
from selector.events import Tier
from selector.stagegames.derive import below, game_seed
from tests.builders import NOON, Events
from tests.daemon_helpers import Clock, auth, card, client_for, floor_config, running_service

SAT = "2026-04-25"
CAR_DAY = "2026-05-02"
D15, D19, D21, D2130 = "sat-1500", "sat-1900", "sat-2100", "sat-2130"
D2115 = "sat-2115"  # a second safe draw (a misconfigured day): one safe at a time
C15, C21 = "car-1500", "car-2100"
CAR = "car-0502"
PLAYERS = 24  # the Saturday's bin: 6 + 5 + 5 + 5 winners, and a few more


def _draw(i: str, program: str, day: str, at: str, winners: int, bin_id: str) -> str:
    return (f'[[ticket_draws]]\nid = "{i}"\nprogram = "{program}"\nname = "{i}"\n'
            f'at = "{day} {at}"\nopens = "{day} 08:00"\ncloses = "{day} 14:55"\n'
            f'bin = "{bin_id}"\nwinners = {winners}\n')  # fmt: skip


def _program(pid: str) -> str:
    return f"""
[[ticket_programs]]
id = "{pid}"
promotion = "raps"
tiers = ["jack", "queen"]
complimentary = {{ jack = 5, queen = 5 }}
[ticket_programs.period]
kind = "day_to_draw"
start_time = "08:00"
[ticket_programs.stage]
win_limit = "per_day"
[[ticket_programs.stage.add_ons]]
id = "app"
name = "App registered"
requires = "app_registered"
prizes = [{{ amount = 50000, kind = "cash" }}]
"""


STAGE = """
[[stage.games]]
id = "sat-1500"
program = "sat"
times = ["15:00"]
kind = "podium+bonus"
podiums = [{ amount = 500000 }, { amount = 400000 }, { amount = 300000 },
           { amount = 200000 }, { kind = "bonus" }, { kind = "bonus" }]

[[stage.games]]
id = "sat-1900"
program = "sat"
times = ["19:00"]
kind = "paddles"
paddles = [2, 2, 3, 3, 4]
reveals = [100000, 100000, 100000, 100000, 100000, 200000, 200000, 200000, 200000, 200000,
           300000, 300000, 300000, 300000, 500000, 500000, 500000, 500000, 700000, 700000,
           700000, 1000000, 1000000, 1500000, 2000000]

[[stage.games]]
id = "sat-2100"
program = "sat"
times = ["21:00", "21:15"]
kind = "podium+safe"
podiums = [{ amount = 1000000 }, { amount = 800000 }, { amount = 700000 },
           { amount = 600000 }, { amount = 500000 }]
[stage.games.safe_odds]
mode = "code"
digits = 3
tries = 3

[[stage.games]]
id = "vault"
program = "sat"
times = ["21:30"]
kind = "vault_share"

[[stage.games]]
id = "spots"
program = "car"
times = ["15:00"]
kind = "car_spots"

[[stage.games]]
id = "final"
program = "car"
times = ["21:00"]
kind = "car_final"

[[stage.cars]]
id = "car-0502"
day = 2026-05-02
finalists = 4
vehicles = ["Sedan", "Hatchback"]
[[stage.cars.qualifying]]
program = "sat"
times = ["19:00"]
positions = [1]
"""


def stage_config(db_url: str, tmp_path: Path) -> Config:
    extra = (
        _program("sat") + _program("car")
        + _draw(D15, "sat", SAT, "15:00", 6, "sat-0425")
        + _draw(D19, "sat", SAT, "19:00", 5, "sat-0425")
        + _draw(D21, "sat", SAT, "21:00", 5, "sat-0425")
        + _draw(D2115, "sat", SAT, "21:15", 5, "sat-0425")
        + _draw(D2130, "sat", SAT, "21:30", 5, "sat-0425")
        + _draw(C15, "car", CAR_DAY, "15:00", 2, CAR)
        + _draw(C21, "car", CAR_DAY, "21:00", 2, CAR)
        + STAGE
    )  # fmt: skip
    return floor_config(db_url, tmp_path, extra=extra)


@dataclass
class Show:
    cfg: Config
    clock: Clock
    service: Service
    client: httpx.AsyncClient
    n: int = 0
    receipts: dict[str, str] = field(default_factory=dict)
    ev: Events = field(default_factory=lambda: Events(NOON))

    def cid(self) -> str:
        self.n += 1
        return f"game-{self.n}"

    async def post(self, path: str, command_id: str | None = None, **body: Any) -> httpx.Response:
        body["command_id"] = command_id or self.cid()
        return await self.client.post(f"/api/stage/draws/{path}", json=body,
                                      headers=auth("stage_host"))  # fmt: skip

    async def ok(self, path: str, command_id: str | None = None, **body: Any) -> dict[str, Any]:
        r = await self.post(path, command_id, **body)
        assert r.status_code == 200, (path, r.status_code, r.text)
        got: dict[str, Any] = r.json()
        return got

    async def view(self, draw: str) -> dict[str, Any]:
        r = await self.client.get(f"/api/stage/draws/{draw}", headers=auth("stage_host"))
        assert r.status_code == 200, r.text
        got: dict[str, Any] = r.json()
        return got

    async def game(self, draw: str) -> dict[str, Any]:
        got: dict[str, Any] = (await self.view(draw))["game"]
        return got

    async def enter(self, n: int, bin_draw: str = D15) -> None:
        c = card(n)
        applied = self.service.ingest(
            [self.ev.player(c, tier=Tier.QUEEN if n % 2 else Tier.JACK, name=f"Player{n} Test")],
            source="test",
        )
        assert applied == 1
        body = {"request_id": f"k-{bin_draw}-{n}", "card": c, "draw": bin_draw}
        r = await self.client.post("/api/tickets/kiosk/entries", json=body, headers=auth("kiosk"))
        assert r.status_code == 200, r.text
        self.receipts[c] = r.json()["receipt_no"]

    async def present(self, draw: str, pick: dict[str, Any]) -> dict[str, Any]:
        """The drawn winner presents in person with ID and their receipt."""
        return await self.ok(f"{draw}/picks/{pick['number']}/present", presenter="winner",
                             document="sa_id", last_digits="1234",
                             receipt=self.receipts[pick["card"]])  # fmt: skip

    async def draw_all(self, draw: str, add_on_first: bool = False) -> list[str]:
        """Open the draw, draw and verify every position: the winners in order."""
        await self.ok(f"{draw}/open")
        view = await self.view(draw)
        for _ in range(view["winners"]):
            got = (await self.ok(f"{draw}/draw"))["picks"][-1]
            await self.present(draw, got)
            if add_on_first and got["position"] == 1:
                await self.ok(f"{draw}/picks/{got['number']}/add-ons/app", verified=True)
        return [p["card"] for p in (await self.view(draw))["picks"]]

    async def safe_code(self, draw: str, position: int) -> str:
        sealed = await self.service.journal.sealed_seed(draw_stream(draw))
        assert sealed is not None
        seed = self.service.sealer.unseal(draw_stream(draw), *sealed)
        stream = f"stage:safe:{draw}"
        return f"{below(game_seed(seed, stream), stream, f'safe-code|{position}', 1000):03d}"

    async def verify(self) -> list[str]:
        entries, recs = await read_database(self.cfg.storage.url)
        report = check(entries, recs, None, from_genesis=True)
        assert report.ok, report.lines()
        return report.lines()

    # -- the games, played as a host would --------------------------------------------

    async def podium(self, draw: str) -> dict[str, Any]:
        await self.ok(f"{draw}/games/podium/open")
        while True:
            g = (await self.game(draw))["games"][0]
            if g["turn"] is None:
                break
            await self.ok(f"{draw}/games/podium/choose", randomiser=g["free"][-1])
        return await self.ok(f"{draw}/games/podium/close")

    async def bonus(self, draw: str, plays: tuple[bool, bool] = (True, True)) -> dict[str, Any]:
        await self.ok(f"{draw}/games/bonus/open")
        g = (await self.game(draw))["games"][1]
        for c, play in zip(g["contestants"], plays, strict=True):
            await self.ok(f"{draw}/games/bonus/decide", position=c["position"], play=play)
        box = 0
        while (g := (await self.game(draw))["games"][1])["state"] == "open":
            box += 1
            await self.ok(f"{draw}/games/bonus/box", box=box)
        return await self.ok(f"{draw}/games/bonus/close")

    async def paddles(self, draw: str) -> dict[str, Any]:
        await self.ok(f"{draw}/games/paddles/open")
        reveal = 0
        while (g := (await self.game(draw))["games"][0])["state"] == "open":
            me = g["contestants"][g["turn"]["position"] - 1]
            if me["paddle"] is None:
                await self.ok(f"{draw}/games/paddles/paddle", paddle=g["free"][0])
            elif me["used"] and me["prize"] >= 300_000:
                await self.ok(f"{draw}/games/paddles/stop")
            else:
                reveal += 1
                await self.ok(f"{draw}/games/paddles/reveal", reveal=reveal)
        return await self.ok(f"{draw}/games/paddles/close")

    async def safe(self, draw: str, crack_at: int | None = None) -> dict[str, Any]:
        await self.ok(f"{draw}/games/safe/open")
        while (g := (await self.game(draw))["games"][1])["state"] == "open":
            turn = g["turn"]
            pos = turn["position"]
            if not turn["trying"]:
                try_it = crack_at is None or pos <= crack_at
                await self.ok(f"{draw}/games/safe/{'attempt' if try_it else 'decline'}")
                continue
            code = await self.safe_code(draw, pos)
            wrong = [f"{c:03d}" for c in range(10) if f"{c:03d}" != code]
            tries = g["contestants"][pos - 1]["tries"]
            guess = code if pos == crack_at else wrong[len(tries)]
            await self.ok(f"{draw}/games/safe/guess", code=guess)
        return await self.ok(f"{draw}/games/safe/close")


@asynccontextmanager
async def show(db_url: str, tmp_path: Path, players: int = PLAYERS) -> AsyncIterator[Show]:
    cfg = stage_config(db_url, tmp_path)
    clock = Clock()
    async with running_service(cfg, clock) as service, client_for(service, cfg) as client:
        s = Show(cfg, clock, service, client)
        for i in range(1, players + 1):
            await s.enter(i)
        yield s

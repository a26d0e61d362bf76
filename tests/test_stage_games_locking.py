"""The stage desk decides and shows only under the journal lock (issue 19 review).

A command changes the draw and its games in memory, then awaits its journal write; a
failed write undoes it (503). So a poll of the host's or the audience's view while a
write is pending must not show what the 503 then takes back, and a draw's guards (may a
winner be voided, the draw closed?) must be asked inside the locked command, not before
it waits for the lock: a game that opens meanwhile must be seen.

Ordering in memory, the same on any database: SQLite only (the failed write itself is
tested on both in test_stage_games_api.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from raps.store.journal import Entry
from tests.daemon_helpers import auth
from tests.stage_games_kit import D21, show

pytestmark = [pytest.mark.asyncio]


class HeldWrite:
    """Holds the next journal write until the test lets it go (and fails it, if told)."""

    def __init__(self, journal: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        self.real = journal.append
        self.entered = asyncio.Event()
        self.go = asyncio.Event()
        self.fail = False
        self.armed = True
        monkeypatch.setattr(journal, "append", self.append)

    async def append(self, records: Sequence[dict[str, Any]], sealed: Any = None) -> list[Entry]:
        if self.armed:
            self.armed = False
            self.entered.set()
            await self.go.wait()
            if self.fail:
                raise OSError("disk I/O error (simulated)")
        out: list[Entry] = await self.real(records, sealed)
        return out


def waiting(lock: asyncio.Lock) -> int:
    """Tasks queued on the lock (asyncio keeps them in `_waiters`)."""
    return len(getattr(lock, "_waiters", None) or ())


async def until(ok: Callable[[], bool], what: str) -> None:
    deadline = asyncio.get_running_loop().time() + 10
    while not ok():
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting: {what}"
        await asyncio.sleep(0.01)


async def test_the_desk_decides_and_shows_only_under_the_journal_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with show(f"sqlite:///{tmp_path / 'raps.db'}", tmp_path, players=5) as s:
        lock = s.service.stage.lock
        await s.draw_all(D21)
        # A void asked while the podium's open waits for the lock: its guard is asked
        # once the open has committed, so the contestant stays.
        async with lock:
            opening = asyncio.create_task(s.post(f"{D21}/games/podium/open"))
            await until(lambda: waiting(lock) == 1, "the open queued on the lock")
            void = asyncio.create_task(s.post(f"{D21}/picks/1/void", reason="left"))
            await until(lambda: waiting(lock) == 2 or void.done(), "the void queued")
        assert (await opening).status_code == 200
        refused = await void
        assert refused.status_code == 409 and refused.json()["reason"] == "game_open"
        assert all(p["state"] == "verified" for p in (await s.view(D21))["picks"])

        # A choice whose write is pending, then fails: no poll ever shows it.
        free = (await s.game(D21))["games"][0]["free"]
        held = HeldWrite(s.service.journal, monkeypatch)
        choose = asyncio.create_task(
            s.post(f"{D21}/games/podium/choose", command_id="pick-1", randomiser=free[0])
        )
        await held.entered.wait()  # chosen in memory, not yet committed
        polls = [
            asyncio.create_task(s.client.get(path, headers=auth(role)))
            for path, role in (
                (f"/api/stage/draws/{D21}/game", "stage_host"),
                (f"/api/stage/draws/{D21}", "stage_host"),
                (f"/api/stage/screen/{D21}", "stage_screen"),
            )
        ]
        await until(
            lambda: waiting(lock) == sum(not p.done() for p in polls),
            "the polls answered or queued",
        )
        held.fail = True
        held.go.set()
        assert (await choose).status_code == 503
        answers: list[httpx.Response] = [await p for p in polls]
        assert all(a.status_code == 200 for a in answers), [a.text for a in answers]
        game, host, screen = (a.json() for a in answers)
        for podium in (game["game"]["games"][0], host["game"]["games"][0],
                       screen["game"]["games"][0]):  # fmt: skip
            assert podium["chosen"] == [] and podium["free"] == free
        retried = await s.ok(f"{D21}/games/podium/choose", command_id="pick-1",
                             randomiser=free[0])  # fmt: skip
        assert len(retried["game"]["games"][0]["chosen"]) == 1

"""The floor log's batches read back as the events written, whatever encoder wrote them.

A flush encodes its batch with orjson (a fifth of json.dumps's time on the ingest's
path); what orjson refuses (an integer past 64 bits) falls back to json.dumps, and a
restart reads both with json.loads, exactly."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import select

from raps.store.database import migrate, open_engine
from raps.store.floorlog import FloorLog
from raps.store.schema import floor_event_batches
from selector.events import AnyFloorEvent, GamePlayed, PlayerUpserted, Tier

pytestmark = pytest.mark.asyncio

AT = datetime(2026, 4, 25, 7, 0, 0, 123456, tzinfo=UTC)


def _events(wager: int) -> list[AnyFloorEvent]:
    return [
        PlayerUpserted(event_id="p1", source="cms", ts=AT, card="6001", tier=Tier.QUEEN,
                       display_name="Zoë Ndlovu-Müller 李", age_verified=True),
        GamePlayed(event_id="g1", source="sas:M1", ts=AT, machine="M1", wager=wager, win=3),
    ]  # fmt: skip


async def _round_trip(tmp_path: Path, wager: int) -> tuple[list[AnyFloorEvent], str]:
    engine = open_engine(f"sqlite:///{tmp_path / 'raps.db'}")
    try:
        await migrate(engine)
        log = FloorLog(engine)
        events = _events(wager)
        await log.append([(i + 1, 0.0, ev) for i, ev in enumerate(events)])
        back = [ev async for chunk in log.events_after(0) for _, ev in chunk]
        async with engine.connect() as conn:
            body = (await conn.execute(select(floor_event_batches.c.body))).scalar_one()
        return back, body
    finally:
        await engine.dispose()


async def test_a_batch_reads_back_as_written_names_and_times_exact(tmp_path: Path) -> None:
    back, body = await _round_trip(tmp_path, 2**63 - 1)
    assert back == _events(2**63 - 1)
    assert "Zoë Ndlovu-Müller 李" in body  # orjson wrote it, as UTF-8 text
    assert json.loads(body)[1]["wager"] == 2**63 - 1


async def test_a_number_orjson_refuses_is_written_by_json_and_read_back_exactly(
    tmp_path: Path,
) -> None:
    wager = 10**30  # past 64 bits: orjson refuses it, and would read it back as a float
    back, body = await _round_trip(tmp_path, wager)
    assert back == _events(wager)
    game = back[1]
    assert isinstance(game, GamePlayed) and type(game.wager) is int and game.wager == wager
    assert "\\u00eb" in body  # json.dumps's escapes: the fallback wrote this batch

"""Issue 15 item 1 for slots: games rebuilt from a meter delta across an outage count
only their part inside the qualifying window (003: points earned "between 8am and 7pm").

A SAS machine whose cable is pulled at 07:50 and plugged back at 08:10 (the real poller
against the EGM simulator), a Modbus gateway that loses a machine over the same span,
and both across 19:00: the rebuilt games carry the last good read as `span_start`, and
the floor credits them in proportion to the part of the span inside 08:00-19:00 (10 of
20 minutes).  A read on the usual cadence stays an instant, and the last good read
survives a restart in the adapters' state.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from fractions import Fraction

import pytest

from selector.events import AnyFloorEvent, CardInserted, GamePlayed, MachineStatus
from selector.floor import Floor
from selector.layout import FloorLayout, Machine
from selector.promotion import Promotion
from tests.builders import Events, local
from tests.test_modbus import Tracked
from tests.test_sas_poller import Rig, until

UNIT = 10**6  # points units with the default earn rates; R10 (1,000 cents) a point
WINDOW = (local(8, 0).timestamp(), local(19, 0).timestamp())
OUTAGES = [(local(7, 50), local(8, 10)), (local(18, 50), local(19, 10))]
IDS = ["across-08h00", "across-19h00"]


def credited(machine: str, events: list[AnyFloorEvent], on: datetime) -> float:
    """The points the floor gives card C1 (carded in at `machine` at 06:00) for them."""
    floor = Floor(FloorLayout([Machine(machine, "Main Floor", "B1", "1")], []), [Promotion("raps")])
    ev = Events(start=local(6, 0))
    floor.apply(ev.player("C1"))
    floor.apply(ev.card_in(machine, "C1"))
    for e in events:
        if not isinstance(e, CardInserted):  # C1 is in already
            assert floor.apply(e) is None, e
    return floor.points("raps", "C1", on)


def share(games: list[GamePlayed]) -> float:
    """The floor of the exact in-window share of the games' points, as the floor keeps it."""
    exact = Fraction(0)
    for g in games:
        assert g.span_start is not None
        start, end = g.span_start.timestamp(), g.epoch
        inside = max(0.0, min(end, WINDOW[1]) - max(start, WINDOW[0]))
        exact += Fraction(g.wager * UNIT, 1000) * Fraction(inside) / Fraction(end - start)
    return math.floor(exact) / UNIT


@pytest.mark.asyncio
@pytest.mark.parametrize(("down", "up"), OUTAGES, ids=IDS)
async def test_sas_games_missed_during_an_outage_span_from_the_last_good_read(
    down: datetime, up: datetime
) -> None:
    rig = Rig()
    rig.poller.clock.t = down - timedelta(seconds=2)  # type: ignore[attr-defined]
    await rig.start()
    egm = rig.egms[0]
    egm.play(2, 2)  # a live game just before the outage
    await until(lambda: len(rig.games()) == 1, "a live game")
    good = rig.poller.machines[0].accounted_at
    assert good is not None and good < down
    egm.muted = True  # the cable is pulled
    await until(lambda: rig.status("m1") == MachineStatus.OFFLINE, "offline")
    for wager in (500, 600, 700):
        egm.play(wager, 0, report=False)  # played while nobody listened
    egm.queue.clear()
    rig.poller.clock.t = up  # type: ignore[attr-defined]
    egm.muted = False
    await until(lambda: len(rig.games()) == 4, "the missed games")
    state = rig.poller.state()["m1"]
    await rig.stop()
    live, *rebuilt = rig.games()
    assert live.span_start is None and live.ts < down
    assert all(g.span_start == good and g.ts > up for g in rebuilt)
    assert all(g.source == "sas:loop1:reconciled" for g in rebuilt)
    assert sum(g.wager for g in rebuilt) == 18_000  # 18 points over the 20 minutes
    got = credited("m1", list(rig.events), up + timedelta(minutes=1))
    before = live.wager / 1000 if WINDOW[0] <= live.epoch < WINDOW[1] else 0.0  # 18:49 counts
    assert got == pytest.approx(share(rebuilt) + before, abs=1e-9)
    assert 8.9 < got - before < 9.1  # half of them: 10 of the 20 minutes are inside
    assert datetime.fromisoformat(state["at"]) > up  # the read after the outage, kept


@pytest.mark.parametrize(("down", "up"), OUTAGES, ids=IDS)
def test_modbus_games_rebuilt_after_an_outage_span_from_the_last_good_read(
    down: datetime, up: datetime
) -> None:
    t = Tracked()
    t.clock.t = down
    events = t.read(coin_in=1_000, games_played=10, card="C1")  # the last good read
    t.clock.t = down + timedelta(minutes=2)
    events += t.read(status=0, coin_in=0, games_played=0, card="")  # the gateway lost it
    t.clock.t = up
    events += t.read(coin_in=1_000 + 2_400, games_played=14, card="C1", last_wager=600)
    games = [e for e in events if isinstance(e, GamePlayed)]
    assert len(games) == 4 and sum(g.wager for g in games) == 24_000
    assert all(
        g.span_start is not None and g.span_start < down + timedelta(seconds=1) for g in games
    )
    assert all(g.source == "modbus:test:reconciled" for g in games)
    got = credited("M1", events, up + timedelta(minutes=1))
    assert got == share(games)
    assert 11.9 < got < 12.1  # half of the 24 points
    saved = t.t.saved()
    assert saved is not None and datetime.fromisoformat(saved["at"]) > up


def test_modbus_reads_on_the_usual_cadence_stay_instants_and_a_restart_keeps_the_span() -> None:
    t = Tracked()
    t.clock.t = local(7, 59, 58)
    t.read(coin_in=0, games_played=0, card="C1")
    t.clock.t = local(8, 0, 0)
    [game] = [
        e for e in t.read(coin_in=100, games_played=1, card="C1") if isinstance(e, GamePlayed)
    ]
    assert game.span_start is None  # 2 s after the last read: counted at its read
    saved = t.t.saved()
    assert saved is not None
    again = Tracked(saved=saved)  # the adapter restarts; the floor reads on at 08:30
    again.clock.t = local(8, 30)
    events = again.read(coin_in=1_100, games_played=2, card="C1")
    [late] = [e for e in events if isinstance(e, GamePlayed)]
    assert late.span_start is not None and late.span_start.timestamp() == pytest.approx(
        local(8, 0).timestamp(), abs=0.01
    )

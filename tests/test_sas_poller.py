"""The SAS host poller against simulated machines over the in-memory transport.

Timings are shortened (10 ms cadence, 150 ms link-down) so that a test is quick;
assertions are on events and counts, never on durations.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path

import aiomqtt
import pytest

from adapters.sas.config import (
    AgentConfigError,
    SasAgentConfig,
    SasChannelConfig,
    load_agent_config,
    simulated_channels,
)
from adapters.sas.egm import Egm, EgmProfile, SimulatedBus, serve_tcp
from adapters.sas.poller import ChannelPoller, MachineSpec, Timing, meter_delta, spread
from adapters.sas.source import SasChannel
from adapters.sas.transport import InMemoryTransport, TcpFramedTransport, Transport
from raps.broker import EmbeddedBroker, free_port
from selector.events import AnyFloorEvent, GamePlayed, MachineStatus, MachineStatusChanged

FAST = Timing(
    poll_s=0.01,
    reply_timeout_s=0.01,
    inter_byte_s=0.005,
    link_down_s=0.15,
    game_end_timeout_s=0.4,
    meter_sync_s=60.0,
    reopen_s=0.05,
)


class FakeClock:
    """Event timestamps: a millisecond later at every call, never the wall clock."""

    def __init__(self) -> None:
        self.t = datetime(2026, 4, 25, 16, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.t += timedelta(milliseconds=1)
        return self.t


async def until(cond: Callable[[], bool], what: str, timeout: float = 15.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not cond():
        if loop.time() > end:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)


class Rig:
    """A channel of simulated machines and a poller, with everything it reports."""

    def __init__(
        self,
        denominations: tuple[int, ...] = (10,),
        realtime: bool = True,
        timing: Timing = FAST,
        transport: Transport | None = None,
        egms: list[Egm] | None = None,
    ) -> None:
        self.egms = egms or [Egm(i + 1, d) for i, d in enumerate(denominations)]
        for e in self.egms:
            e.rng = random.Random(e.address)
        if transport is None:
            transport, dev = InMemoryTransport.pair()
            SimulatedBus(dev, self.egms)
        self.events: list[AnyFloorEvent] = []
        self.rejects: Counter[str] = Counter()
        self.counts: Counter[str] = Counter()
        self.links: list[bool] = []
        specs = [MachineSpec(e.address, f"m{e.address}", e.denomination) for e in self.egms]
        self.poller = ChannelPoller(
            "loop1",
            transport,
            specs,
            emit=self.events.extend,
            clock=FakeClock(),
            reject=lambda reason: self.rejects.update([reason]),
            link=lambda _name, up: self.links.append(up),
            count=lambda kind, n: self.counts.update({kind: n}),
            realtime=realtime,
            timing=timing,
        )
        self.task: asyncio.Task[None] | None = None

    def reject_total(self) -> int:
        return sum(self.rejects.values())

    def games(self, machine: str | None = None) -> list[GamePlayed]:
        return [
            e
            for e in self.events
            if isinstance(e, GamePlayed) and (machine is None or e.machine == machine)
        ]

    def statuses(self, machine: str) -> list[MachineStatus]:
        return [
            e.status
            for e in self.events
            if isinstance(e, MachineStatusChanged) and e.machine == machine
        ]

    def status(self, machine: str) -> MachineStatus | None:
        s = self.statuses(machine)
        return s[-1] if s else None

    async def start(self, wait_online: bool = True) -> Rig:
        self.task = asyncio.create_task(self.poller.run())
        if wait_online:
            names = [f"m{e.address}" for e in self.egms]
            await until(lambda: all(self.status(n) is not None for n in names), "first status")
            # baseline read: the first meter sync is done
            ms = self.poller.machines
            await until(lambda: all(not m.jobs and m.accounted_games is not None for m in ms),
                        "start-up polls")  # fmt: skip
        return self

    async def stop(self) -> None:
        self.poller.stop()
        assert self.task is not None
        await asyncio.wait_for(self.task, 10.0)


# ------------------------------------------------------------------------- games


@pytest.mark.asyncio
async def test_games_become_game_played() -> None:
    rig = await Rig(denominations=(10, 5)).start()
    m1, m2 = rig.egms
    m1.play(25, 50)
    m1.play(10, 0)
    m2.play(4, 8)
    await until(lambda: len(rig.games()) == 3, "three games")
    await rig.stop()
    g = {e.event_id: e for e in rig.games()}
    assert set(g) == {"sas-m1-g1", "sas-m1-g2", "sas-m2-g1"}
    assert (g["sas-m1-g1"].wager, g["sas-m1-g1"].win) == (250, 500)  # credits x denomination
    assert (g["sas-m1-g2"].wager, g["sas-m1-g2"].win) == (100, 0)
    assert (g["sas-m2-g1"].machine, g["sas-m2-g1"].wager, g["sas-m2-g1"].win) == ("m2", 20, 40)
    assert all(e.source == "sas:loop1" for e in rig.games())
    assert rig.reject_total() == 0 and rig.links == [True]
    assert rig.poller.stats["polls"] > 0 and rig.statuses("m1") == [MachineStatus.ONLINE]


@pytest.mark.asyncio
async def test_game_without_its_end_times_out_with_win_zero() -> None:
    rig = await Rig().start()
    egm = rig.egms[0]
    egm.start_game(5)
    await until(lambda: len(rig.games()) == 1, "the open game, after the timeout")
    assert (rig.games()[0].wager, rig.games()[0].win) == (50, 0)
    assert rig.poller.stats["game_end_timeout"] == 1
    egm.end_game(7)  # too late: the game was emitted already
    await until(lambda: rig.counts["game_end_without_start"] == 1, "late 7F counted")
    egm.start_game(1)
    egm.start_game(2)  # a 7E before the 7F of the open game
    egm.end_game(3)
    await until(lambda: len(rig.games()) == 3, "two more games")
    await rig.stop()
    assert [(g.wager, g.win) for g in rig.games()[1:]] == [(10, 0), (20, 30)]
    assert rig.counts["game_end_missing"] == 1


@pytest.mark.asyncio
async def test_machine_without_real_time_events_reports_games_from_meters() -> None:
    egm = Egm(1, 10)
    egm.nack_long_polls = frozenset({0x0E})  # refuses real-time event reporting
    rig = await Rig(egms=[egm]).start()
    assert rig.poller.stats["long_poll_rte_nack"] == 1 and not egm.rte
    for wager, win in ((3, 6), (4, 0)):
        n = len(rig.games())
        egm.play(wager, win)
        await until(partial(lambda k: len(rig.games()) == k + 1, n), "a meter-driven game")
    await rig.stop()
    assert [(g.event_id, g.wager, g.win) for g in rig.games()] == [
        ("sas-m1-g1", 30, 60),
        ("sas-m1-g2", 40, 0),
    ]
    assert all(g.source == "sas:loop1" for g in rig.games())
    assert rig.counts["reconciled_games"] == 0


# ------------------------------------------------------------------------ status


@pytest.mark.asyncio
async def test_doors_power_menus_and_out_of_service_change_status() -> None:
    rig = await Rig().start()
    egm = rig.egms[0]
    steps: list[tuple[Callable[[], None], MachineStatus]] = [
        (lambda: egm.open_door("slot"), MachineStatus.DOOR_OPEN),
        (lambda: egm.close_door("slot"), MachineStatus.ONLINE),
        (lambda: egm.queue_exception(0x86), MachineStatus.OUT_OF_SERVICE),
        (lambda: egm.play(1), MachineStatus.ONLINE),  # play resumed: back in service
        (lambda: egm.queue_exception(0x84), MachineStatus.OUT_OF_SERVICE),
        (lambda: egm.queue_exception(0x85), MachineStatus.ONLINE),
        (lambda: egm.queue_exception(0x18), MachineStatus.OFFLINE),
        (lambda: egm.power_cycle(), MachineStatus.ONLINE),
    ]
    for action, want in steps:
        action()
        await until(partial(lambda w: rig.status("m1") == w, want), f"status {want}")
    egm.open_door("drop")
    egm.open_door("belly")
    egm.close_door("drop")  # the belly door is still open
    await until(lambda: egm.queue == deque_empty(), "exceptions read")
    await until(lambda: rig.status("m1") == MachineStatus.DOOR_OPEN, "door still open")
    await rig.stop()
    assert rig.poller.stats["exception_ac_power_applied"] == 1


def deque_empty() -> object:
    from collections import deque

    return deque()


# ------------------------------------------------------------- link and meters


@pytest.mark.asyncio
async def test_link_drop_goes_offline_then_online_and_reconciles_missed_games_once() -> None:
    timing = dataclasses.replace(FAST, meter_sync_s=0.05)
    rig = await Rig(timing=timing).start()
    egm = rig.egms[0]
    egm.play(2, 0)
    await until(lambda: len(rig.games()) == 1, "a live game")
    egm.muted = True  # the cable is pulled
    await until(lambda: rig.status("m1") == MachineStatus.OFFLINE, "offline")
    assert rig.links[-1] is False
    for wager in (5, 6, 7):
        egm.play(wager, 1, report=False)  # played while nobody listened
    egm.queue.clear()
    egm.muted = False
    await until(lambda: rig.status("m1") == MachineStatus.ONLINE, "online again")
    await until(lambda: len(rig.games()) == 4, "the missed games")
    syncs = rig.poller.stats["long_poll_sync_ok"]
    await until(lambda: rig.poller.stats["long_poll_sync_ok"] >= syncs + 5, "more meter syncs")
    egm.play(3, 3)
    await until(lambda: len(rig.games()) == 5, "a live game after recovery")
    await rig.stop()
    games = rig.games()
    recon = games[1:4]
    assert [g.event_id for g in games] == [f"sas-m1-g{i}" for i in range(1, 6)]
    assert all(g.source == "sas:loop1:reconciled" for g in recon)
    assert sum(g.wager for g in recon) == (5 + 6 + 7) * 10  # the coin-in delta, spread
    assert sorted(g.wager for g in recon) == [60, 60, 60]
    assert rig.counts["reconciled_games"] == 3 and rig.poller.stats["reconciled_games"] == 3
    assert (games[4].wager, games[4].win, games[4].source) == (30, 30, "sas:loop1")
    assert rig.statuses("m1") == [MachineStatus.ONLINE, MachineStatus.OFFLINE, MachineStatus.ONLINE]
    assert rig.links == [True, False, True]


@pytest.mark.asyncio
async def test_lost_game_start_is_detected_by_the_coin_in_meter() -> None:
    rig = await Rig().start()
    egm = rig.egms[0]
    egm.play(4, 0, report=False)  # its 7E is lost: coin-in jumps by 4 before the next 7E
    egm.play(6, 2)
    await until(lambda: len(rig.games()) == 2, "the live game and the missed one")
    await rig.stop()
    by_id = {g.event_id: g for g in rig.games()}
    # the live game took the next number; the meters then explain one more game
    assert by_id["sas-m1-g1"].wager == 60 and by_id["sas-m1-g2"].wager == 40
    assert by_id["sas-m1-g2"].source.endswith(":reconciled")
    assert rig.counts["reconciled_games"] == 1


@pytest.mark.asyncio
async def test_exception_buffer_overflow_reconciles() -> None:
    rig = await Rig().start()
    egm = rig.egms[0]
    egm.muted = True
    for _ in range(15):
        egm.play(1, 0)  # 30 exceptions into a queue of 20: the oldest are lost
    assert egm.overflow
    egm.muted = False
    await until(lambda: len(rig.games()) == 15, "every game, live or reconciled")
    await rig.stop()
    assert rig.poller.stats["exception_exception_buffer_overflow"] == 1
    assert len({g.event_id for g in rig.games()}) == 15
    assert sum(g.wager for g in rig.games()) == 150
    assert 0 < rig.counts["reconciled_games"] < 15


# --------------------------------------------------------------------- bad input


@pytest.mark.asyncio
async def test_corrupt_replies_are_counted_and_retried() -> None:
    rig = await Rig().start()
    egm = rig.egms[0]
    egm.play(8, 16)
    egm.corrupt_next = 2  # the next two replies (the 7E event, then its resend) are hit
    await until(lambda: len(rig.games()) == 1, "the game, from the third try")
    await rig.stop()
    assert rig.reject_total() == 2
    assert set(rig.rejects) <= {"crc", "overlong", "address", "unknown_exception", "truncated"}
    assert (rig.games()[0].wager, rig.games()[0].win) == (80, 160)
    assert rig.status("m1") == MachineStatus.ONLINE


@pytest.mark.asyncio
async def test_unknown_exception_is_counted_and_skipped() -> None:
    rig = await Rig().start()
    egm = rig.egms[0]
    egm.queue_exception(0x05)  # not a SAS exception code
    egm.play(1, 1)
    await until(lambda: len(rig.games()) == 1, "the game after the bad code")
    await rig.stop()
    assert rig.rejects["unknown_exception"] >= 3  # three tries, then acknowledged and skipped
    assert set(rig.rejects) == {"unknown_exception"}


@pytest.mark.asyncio
async def test_babbling_machine_does_not_stop_the_loop() -> None:
    rig = await Rig(denominations=(10, 10)).start()
    good, babbler = rig.egms
    babbler.babbling = True  # noise on the line at every message
    good.play(5, 0)
    await until(lambda: rig.reject_total() > 30, "noise counted")
    await until(lambda: rig.status("m1") == MachineStatus.OFFLINE, "nothing decodable")
    slots = rig.poller.stats["slots"]
    await until(lambda: rig.poller.stats["slots"] > slots + 20, "the loop keeps polling")
    babbler.babbling = False
    await until(lambda: rig.status("m1") == MachineStatus.ONLINE, "quiet again")
    await until(lambda: len(rig.games("m1")) == 1, "the game, once the line is quiet")
    await rig.stop()
    assert rig.rejects["babble"] > 0
    assert rig.games("m1")[0].wager == 50


@pytest.mark.asyncio
async def test_busy_and_legacy_bonus() -> None:
    egm = Egm(1, 10)
    egm.busy_long_polls = 2
    rig = await Rig(egms=[egm]).start()
    assert rig.poller.stats["busy"] == 2
    assert await rig.poller.legacy_bonus("m1", 50) == "paid"
    assert egm.bonus_credits == 50
    await until(lambda: rig.poller.stats["exception_legacy_bonus_awarded"] == 1, "7C read")
    egm.open_door()
    assert await rig.poller.legacy_bonus("m1", 50) == "busy"  # SAS: no bonus with a door open
    await rig.stop()
    assert egm.bonus_credits == 50


@pytest.mark.asyncio
async def test_machine_that_never_answers_is_offline() -> None:
    egm = Egm(1, 10)
    egm.muted = True
    rig = await Rig(egms=[egm]).start(wait_online=False)
    await until(lambda: rig.status("m1") == MachineStatus.OFFLINE, "offline from the start")
    await rig.stop()
    assert rig.links == [] and rig.reject_total() == 0  # silence of a down machine: no spam


# --------------------------------------------------------------------- transports


@pytest.mark.asyncio
async def test_tcp_gateway_down_then_up() -> None:
    port = free_port()
    egm = Egm(1, 10)
    rig = Rig(egms=[egm], transport=TcpFramedTransport("127.0.0.1", port, connect_timeout=0.5))
    await rig.start(wait_online=False)
    await until(lambda: rig.rejects["transport"] >= 2, "gateway unreachable")
    await until(lambda: rig.status("m1") == MachineStatus.OFFLINE, "offline")
    server = await serve_tcp([egm], "127.0.0.1", port)
    await until(lambda: rig.status("m1") == MachineStatus.ONLINE, "online through the gateway")
    egm.play(3, 0)
    await until(lambda: len(rig.games()) == 1, "a game over TCP")
    await rig.stop()
    server.close()
    assert rig.games()[0].wager == 30


# ------------------------------------------------------- SasChannel, config, agent


def _channel_cfg(**kw: object) -> SasChannelConfig:
    base: dict[str, object] = {
        "name": "loop1",
        "transport": "memory",
        "machines": [{"address": 1, "machine": "m1", "denomination": 10}],
        "poll_ms": 40,
        "link_down_s": 0.2,
    }
    return SasChannelConfig.model_validate({**base, **kw})


@pytest.mark.asyncio
async def test_restart_reconciles_from_the_state_file(tmp_path: Path) -> None:
    state = tmp_path / "sas-loop1.json"
    cfg = _channel_cfg()
    events: list[AnyFloorEvent] = []
    egm = Egm(1, 10)
    clock = FakeClock()  # time goes on across the restarts

    def channel() -> SasChannel:
        host, dev = InMemoryTransport.pair()
        SimulatedBus(dev, [egm])
        return SasChannel(cfg, host, events.extend, lambda r: None, lambda n, u: None,
                          clock=clock, state_path=state)  # fmt: skip

    def games() -> list[GamePlayed]:
        return [e for e in events if isinstance(e, GamePlayed)]

    first = channel()
    task = asyncio.create_task(first.run())
    m = first.poller.machines[0]
    await until(lambda: m.accounted_games is not None and not m.jobs, "meters read")
    egm.play(2, 0)
    egm.play(3, 0)
    await until(lambda: len(games()) == 2, "two live games")
    first.stop()
    await task
    saved = json.loads(state.read_text())
    assert saved == {"m1": {"games": 2, "coin_in": 5, "at": saved["m1"]["at"]}}
    good = datetime.fromisoformat(saved["m1"]["at"])  # when the meters were last known good
    egm.play(4, 0, report=False)  # while the agent was down
    egm.play(5, 0, report=False)
    egm.queue.clear()
    second = channel()
    task = asyncio.create_task(second.run())
    await until(lambda: len(games()) == 4, "the games played while down")
    second.stop()
    await task
    assert [g.event_id for g in games()] == ["sas-m1-g1", "sas-m1-g2", "sas-m1-g3", "sas-m1-g4"]
    assert sum(g.wager for g in games()[2:]) == 90
    assert {g.span_start for g in games()[2:]} == {good}  # played sometime since then
    assert second.source == "sas:loop1"
    # a stale state file (the crash came before the last save) replays with the same ids
    state.write_text(json.dumps({"m1": {"games": 3, "coin_in": 9}}))
    third = channel()
    task = asyncio.create_task(third.run())
    await until(lambda: len(games()) == 5, "the replayed game")
    third.stop()
    await task
    assert games()[4].event_id == "sas-m1-g4"  # same id as before: the daemon drops it


@pytest.mark.asyncio
async def test_simulated_channel_from_config_plays_by_itself() -> None:
    sim = {"games_per_minute": 600.0, "game_seconds": 0.01, "seed": 7}
    cfg = _channel_cfg(simulate=sim)
    events: list[AnyFloorEvent] = []
    ch = SasChannel(cfg, None, events.extend, lambda r: None, lambda n, u: None)
    assert len(ch.simulators) == 1 and ch.simulators[0].profile is not None
    task = asyncio.create_task(ch.run())
    await until(lambda: sum(isinstance(e, GamePlayed) for e in events) >= 3, "simulated play")
    with pytest.raises(ValueError):
        await ch.legacy_bonus("m1", 15)  # not whole credits of 10
    with pytest.raises(KeyError):
        await ch.legacy_bonus("nope", 10)
    ch.stop()
    await task
    assert ch.stats["games"] >= 3


@pytest.mark.asyncio
async def test_a_restarted_simulated_channel_numbers_its_games_anew() -> None:
    """A simulated machine is new with each process; its game meter must not start at 0
    again, or a restarted daemon drops every game as a duplicate of the start before."""
    cfg = _channel_cfg(simulate={"games_per_minute": 120.0, "game_seconds": 0.01, "seed": 7})

    async def one_start() -> set[str]:
        events: list[AnyFloorEvent] = []
        ch = SasChannel(cfg, None, events.extend, lambda r: None, lambda n, u: None)
        task = asyncio.create_task(ch.run())
        await until(lambda: sum(isinstance(e, GamePlayed) for e in events) >= 3, "play")
        ch.stop()
        await task
        return {e.event_id for e in events if isinstance(e, GamePlayed)}

    first = await one_start()
    second = await one_start()  # the same seed: the same play, other game numbers
    assert len(first) >= 3 and len(second) >= 3
    assert not first & second


def test_channel_config_validation() -> None:
    cfg = _channel_cfg()
    assert cfg.timing().poll_s == 0.04 and cfg.specs() == [MachineSpec(1, "m1", 10)]
    bad: list[dict[str, object]] = [
        {"poll_ms": 100, "realtime": False},  # below 200 ms needs real-time mode
        {"poll_ms": 20},
        {"transport": "serial"},  # no device
        {"transport": "tcp", "host": "gw"},  # no port
        {"device": "/dev/ttyS0"},  # device on a memory channel
        {"name": "Loop 1"},
        {"machines": [{"address": 1, "machine": "a"}, {"address": 1, "machine": "b"}]},
        {"machines": [{"address": 128, "machine": "a"}]},
        {"machines": []},
        {"pol_ms": 200},  # unknown key
        {"poll_ms": "200"},  # strict types
        {"transport": "tcp", "host": "gw", "port": 7000, "simulate": {}},
    ]
    for kw in bad:
        with pytest.raises(ValueError):
            _channel_cfg(**kw)
    ok = _channel_cfg(transport="serial", device="/dev/ttyS0", realtime=False, poll_ms=200)
    assert ok.baud == 19200


def test_simulated_channels_helper() -> None:
    chans = simulated_channels([f"s{i}" for i in range(70)], per_channel=32)
    assert [len(c.machines) for c in chans] == [32, 32, 6]
    assert chans[2].machines[0].address == 1 and chans[2].machines[0].machine == "s64"


def test_agent_config(tmp_path: Path) -> None:
    good = tmp_path / "agent.toml"
    good.write_text(
        'site = "golden-horse"\n[mqtt]\nhost = "broker"\n'
        '[[channels]]\nname = "loop1"\ntransport = "serial"\ndevice = "/dev/ttyS0"\n'
        '[[channels.machines]]\naddress = 1\nmachine = "A-01"\ndenomination = 10\n'
    )
    cfg = load_agent_config(good)
    assert cfg.channels[0].machines[0].machine == "A-01" and cfg.mqtt.topic_prefix == "raps/v1"
    bad = tmp_path / "bad.toml"
    bad.write_text('site = "x"\n[[channels]]\nname = "l"\ntransport = "serial"\nbaud = "fast"\n')
    with pytest.raises(AgentConfigError) as e:
        load_agent_config(bad)
    assert "channels.0.baud" in str(e.value) and "channels.0.machines" in str(e.value)
    bad.write_text("site = ")
    with pytest.raises(AgentConfigError, match="TOML"):
        load_agent_config(bad)
    with pytest.raises(AgentConfigError):
        load_agent_config(tmp_path / "missing.toml")


@pytest.mark.asyncio
async def test_agent_publishes_floor_events_to_mqtt(tmp_path: Path) -> None:
    from adapters.sas.agent import run_agent

    broker = EmbeddedBroker()
    await broker.start()
    sim = {"games_per_minute": 600.0, "game_seconds": 0.01}
    cfg = SasAgentConfig.model_validate(
        {
            "site": "gh",
            "mqtt": {"port": broker.port},
            "state_dir": str(tmp_path),
            "channels": [_channel_cfg(simulate=sim).model_dump()],
        }
    )
    got: list[tuple[str, dict[str, object]]] = []
    stop = asyncio.Event()
    try:
        async with aiomqtt.Client("127.0.0.1", broker.port, identifier="t-sub") as sub:
            await sub.subscribe("raps/v1/gh/#", qos=1)
            agent = asyncio.create_task(run_agent(cfg, stop))

            async def read() -> None:
                async for msg in sub.messages:
                    assert isinstance(msg.payload, bytes | bytearray)
                    got.append((str(msg.topic), json.loads(msg.payload)))
                    if any(p.get("type") == "game_played" for _, p in got):
                        return

            await asyncio.wait_for(read(), 10.0)
            stop.set()
            await asyncio.wait_for(agent, 10.0)
    finally:
        await broker.stop()
    topics = {t for t, _ in got}
    assert "raps/v1/gh/sas/loop1/link" in topics
    game = next(p for t, p in got if p.get("type") == "game_played")
    assert ("raps/v1/gh/slots/m1/events", "m1") in {(t, p.get("machine")) for t, p in got}
    assert str(game["event_id"]).startswith("sas-m1-") and game["source"] == "sas:loop1"
    assert (tmp_path / "sas-loop1.json").exists()


def test_spread_and_meter_delta() -> None:
    assert spread(10, 3) == [4, 3, 3] and sum(spread(7, 7)) == 7 and spread(5, 0) == []
    assert spread(-3, 2) == [0, 0]
    assert meter_delta(5, 99_999_998) == 7  # the 8-digit meter rolled over
    assert meter_delta(3, 10) == -7


def test_profile_is_plain_data() -> None:
    assert EgmProfile().games_per_minute == 10.0


@pytest.mark.asyncio
async def test_a_failing_emit_does_not_stop_the_loop() -> None:
    rig = Rig()
    calls: list[int] = []

    def emit(batch: list[AnyFloorEvent]) -> None:
        calls.append(len(batch))
        if len(calls) == 1:
            raise RuntimeError("the consumer is broken once")
        rig.events.extend(batch)

    rig.poller.emit = emit
    await rig.start(wait_online=False)
    await until(lambda: rig.poller.stats["emit_failed"] == 1, "the failed emit")
    rig.egms[0].play(1, 0)
    await until(lambda: len(rig.games()) == 1, "a game after the failure")
    await rig.stop()


@pytest.mark.asyncio
async def test_simulated_faults_doors_tilts_link_drops_and_corrupt_bytes() -> None:
    sim = {
        "games_per_minute": 480.0,
        "game_seconds": 0.01,
        "doors_per_hour": 3600.0,
        "door_seconds": 0.1,
        "tilts_per_hour": 3600.0,
        "link_drops_per_hour": 1200.0,
        "link_drop_seconds": 2.0,  # ~16 games: the 20-deep exception queue overflows
        "corrupt_rate": 0.02,
        "seed": 7,
    }
    cfg = _channel_cfg(simulate=sim)
    events: list[AnyFloorEvent] = []
    rejects: Counter[str] = Counter()
    ch = SasChannel(cfg, None, events.extend, lambda r: rejects.update([r]), lambda n, u: None)
    task = asyncio.create_task(ch.run())

    def seen(status: MachineStatus) -> bool:
        return any(isinstance(e, MachineStatusChanged) and e.status == status for e in events)

    await until(lambda: seen(MachineStatus.DOOR_OPEN), "a door opened", timeout=10)
    await until(lambda: seen(MachineStatus.OFFLINE), "a link drop", timeout=10)
    await until(lambda: ch.stats.get("exception_general_tilt", 0) > 0, "a tilt", timeout=10)
    await until(lambda: sum(rejects.values()) > 0, "a corrupt byte counted", timeout=10)
    await until(lambda: ch.stats.get("reconciled_games", 0) > 0, "games reconciled", timeout=20)
    ch.stop()
    await task
    games = [e for e in events if isinstance(e, GamePlayed)]
    assert len({g.event_id for g in games}) == len(games)  # no game twice
    assert ch.stats.get("internal_error", 0) == 0


def test_the_documented_agent_config_loads(tmp_path: Path) -> None:
    doc = (Path(__file__).resolve().parents[1] / "docs" / "sas.md").read_text(encoding="utf-8")
    block = next(b for b in doc.split("```toml")[1:] if b.lstrip().startswith('site = "'))
    path = tmp_path / "agent.toml"
    path.write_text(block.split("```")[0])
    cfg = load_agent_config(path)
    assert cfg.site == "golden-horse" and cfg.channels[0].machines[0].machine == "A-01"
    channel = next(b for b in doc.split("```toml")[1:] if b.lstrip().startswith("[[channels]]"))
    path.write_text('site = "x"\n' + channel.split("```")[0])
    assert load_agent_config(path).channels[0].poll_ms == 200

"""Modbus gateways: the register profile, change detection and the poller against
a real pymodbus TCP server (adapters/modbus/simulator.py) on a free local port.

Timings are shortened (20 ms polls, 100 ms timeouts, 300 ms link-down); every
wait is for a condition with a deadline, and "exactly once" is checked after the
simulated gateway has served further reads, never after a fixed sleep.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import tomllib
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from pymodbus.client import AsyncModbusSerialClient, AsyncModbusTcpClient

from adapters.modbus.config import ModbusGatewayConfig
from adapters.modbus.poller import (
    CONFIRM_READS,
    MachineSpec,
    MachineTracker,
    meter_delta,
    plan_reads,
    spread,
)
from adapters.modbus.profile import (
    DEFAULT_MAP,
    DecodeError,
    Reading,
    RegisterField,
    RegisterMap,
    StatusFlags,
    decode_block,
    decode_value,
    encode_block,
    encode_value,
    status_flags,
    status_word,
)
from adapters.modbus.simulator import GatewaySimulator
from adapters.modbus.source import ModbusGateway, build_client
from selector.events import (
    AnyFloorEvent,
    CardInserted,
    CardRemoved,
    GamePlayed,
    MachineStatus,
    MachineStatusChanged,
)

DOCS = Path(__file__).resolve().parent.parent / "docs" / "modbus.md"
FAST: dict[str, Any] = {
    "poll_ms": 20,
    "timeout_ms": 100,
    "retries": 0,
    "link_down_s": 0.3,
    "reconnect_max_s": 0.2,
}


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


def gateway_cfg(n: int = 3, **over: Any) -> ModbusGatewayConfig:
    data: dict[str, Any] = {
        "name": "gw1",
        "transport": "tcp",
        "host": "127.0.0.1",
        "port": 502,
        "machines": [{"machine": f"M{i}", "index": i, "denomination": 10} for i in range(n)],
        **FAST,
    }
    data.update(over)
    return ModbusGatewayConfig.model_validate(data)


class Rig:
    """A simulated gateway on a free port and a ModbusGateway polling it."""

    def __init__(self, cfg: ModbusGatewayConfig, state_path: Path | None = None) -> None:
        self.template = cfg
        self.sim = GatewaySimulator.for_config(cfg, port=0)
        self.state_path = state_path
        self.events: list[AnyFloorEvent] = []
        self.rejected: Counter[str] = Counter()
        self.counted: Counter[str] = Counter()
        self.links: list[bool] = []
        self.cfg = cfg
        self.gw: ModbusGateway | None = None
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> Rig:
        port = await self.sim.start()
        self.cfg = self.template.model_copy(update={"port": port})
        self.start_poller()
        return self

    def start_poller(self) -> None:
        self.gw = ModbusGateway(
            self.cfg,
            self.events.extend,
            lambda reason: self.rejected.update([reason]),
            lambda name, up: self.links.append(up),
            clock=FakeClock(),
            count=lambda kind, n: self.counted.update({kind: n}),
            state_path=self.state_path,
        )
        self.task = asyncio.create_task(self.gw.run())

    async def stop_poller(self) -> None:
        assert self.gw is not None and self.task is not None
        self.gw.stop()
        await asyncio.wait_for(self.task, 5)

    async def close(self) -> None:
        if self.task is not None and not self.task.done():
            await self.stop_poller()
        await self.sim.stop()

    async def polls(self, n: int = 3) -> None:
        """Wait until the gateway has served `n` more reads of every request."""
        assert self.gw is not None
        target = self.sim.reads + n * len(self.gw.plan)
        await until(lambda: self.sim.reads >= target, f"{n} more polls")

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

    def cards(self, machine: str) -> list[tuple[str, str]]:
        out = []
        for e in self.events:
            if isinstance(e, CardInserted | CardRemoved) and e.machine == machine:
                out.append(("in" if isinstance(e, CardInserted) else "out", e.card))
        return out

    async def online(self) -> None:
        names = [m.machine for m in self.cfg.machines]
        await until(
            lambda: all(MachineStatus.ONLINE in self.statuses(m) for m in names),
            "every machine online",
        )


# ------------------------------------------------------------------ profile


def test_default_profile_layout_matches_the_documented_table() -> None:
    m = DEFAULT_MAP
    assert (m.stride, m.span, m.word_order, m.byte_order) == (16, 13, "big", "big")
    layout = {name: (f.offset, f.size, f.encoding) for name, f in m.fields().items()}
    assert layout == {
        "status": (0, 1, "uint16"),
        "card": (1, 4, "uint64"),
        "coin_in": (5, 2, "uint32"),
        "games_played": (7, 2, "uint32"),
        "last_wager": (9, 2, "uint32"),
        "win": (11, 2, "uint32"),
    }
    text = DOCS.read_text(encoding="utf-8")
    for name, (offset, size, enc) in layout.items():
        row = re.search(
            rf"^\| {offset}(?:-{offset + size - 1})? \| `{name}` \| {enc} \|", text, re.M
        )
        assert row, f"docs/modbus.md has no table row for {name} at {offset} ({enc})"


@pytest.mark.parametrize("word", ["big", "little"])
@pytest.mark.parametrize("byte", ["big", "little"])
@pytest.mark.parametrize(
    ("encoding", "length", "value"),
    [
        ("uint16", None, 0xBEEF),
        ("uint32", None, 0x12345678),
        ("uint64", None, 6_000_012_345),
        ("bcd", 2, 12_345_678),
        ("bcd", 4, 6_000_012_345),
        ("ascii", 4, "AB12cd"),
    ],
)
def test_every_encoding_round_trips(
    word: str, byte: str, encoding: str, length: int | None, value: int | str
) -> None:
    rmap = RegisterMap.model_validate({"word_order": word, "byte_order": byte})
    f = RegisterField.model_validate({"offset": 0, "encoding": encoding, "length": length})
    regs = encode_value("x", f, value, rmap)
    assert len(regs) == f.size and all(0 <= r <= 0xFFFF for r in regs)
    assert decode_value("x", f, regs, rmap) == value


def test_word_and_byte_order_on_the_wire() -> None:
    f = RegisterField(offset=0, encoding="uint32")
    assert encode_value("x", f, 0x12345678, DEFAULT_MAP) == [0x1234, 0x5678]
    little = RegisterMap(word_order="little")
    assert encode_value("x", f, 0x12345678, little) == [0x5678, 0x1234]
    swapped = RegisterMap(byte_order="little")
    assert encode_value("x", f, 0x12345678, swapped) == [0x3412, 0x7856]
    bcd = RegisterField(offset=0, encoding="bcd", length=2)
    assert encode_value("x", bcd, 12345678, DEFAULT_MAP) == [0x1234, 0x5678]


def test_bad_bcd_and_bad_ascii_are_decode_errors_naming_the_field() -> None:
    bcd = RegisterField(offset=0, encoding="bcd", length=2)
    with pytest.raises(DecodeError, match="card: not BCD"):
        decode_value("card", bcd, [0x12AB, 0x0000], DEFAULT_MAP)
    text = RegisterField(offset=0, encoding="ascii", length=2)
    with pytest.raises(DecodeError, match="card"):
        decode_value("card", text, [0x4142, 0x2043], DEFAULT_MAP)  # "AB C": a space inside
    with pytest.raises(DecodeError, match="card"):
        decode_value("card", text, [0xC3A9, 0x0000], DEFAULT_MAP)  # not ASCII
    with pytest.raises(DecodeError, match="ends at"):
        decode_value("card", text, [0x4142], DEFAULT_MAP)  # block too short


def test_decode_block_keeps_good_fields_when_one_is_bad() -> None:
    rmap = RegisterMap(card=RegisterField(offset=1, encoding="bcd", length=4))
    regs = encode_block(
        rmap, {"status": 1, "card": "6000012345", "coin_in": 500, "games_played": 7}
    )
    assert decode_block(rmap, regs).card == "6000012345"
    regs[2] = 0xFFFF
    r = decode_block(rmap, regs)
    assert r.card is None and [e.field for e in r.errors] == ["card"]
    assert (r.status, r.coin_in, r.games_played) == (1, 500, 7)


def test_card_zero_is_no_card_and_width_pads() -> None:
    rmap = RegisterMap(card_width=12)
    assert decode_block(rmap, encode_block(rmap, {"card": ""})).card == ""
    assert decode_block(rmap, encode_block(rmap, {"card": "42"})).card == "000000000042"


def test_status_bits_and_remapped_bits() -> None:
    flags = StatusFlags(online=True, door_open=True, tilt=True)
    assert status_word(DEFAULT_MAP, flags) == 0b1011
    assert status_flags(DEFAULT_MAP, 0b1011) == flags
    assert status_flags(DEFAULT_MAP, 0xFFE0) == StatusFlags(online=False)  # reserved bits
    rmap = RegisterMap.model_validate({"status_bits": {"online": -1, "door_open": 15}})
    assert status_flags(rmap, 0x8000) == StatusFlags(online=True, door_open=True)


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"card": {"offset": 5, "encoding": "uint64"}}, "register 5 is also"),
        ({"coin_in": {"offset": 5, "encoding": "ascii", "length": 2}}, "meter cannot be ascii"),
        ({"status": {"offset": 0, "encoding": "uint32"}}, "status: must be uint16"),
        ({"stride": 8}, "shorter than the block"),
        ({"card": {"offset": 1, "encoding": "bcd"}}, "needs its number of registers"),
        ({"games_played": {"offset": 7, "encoding": "uint32", "length": 4}}, "is 2 register"),
        ({"status_bits": {"online": 1, "door_open": 1}}, "share one bit"),
        ({"absent": ["coin_in"]}, "absent"),
        ({"word_order": "middle"}, "word_order"),
    ],
)
def test_register_map_rejects_bad_layouts(data: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        RegisterMap.model_validate(data)


# -------------------------------------------------------------- read plan


def _spec(machine: str, start: int, unit: int = 1) -> MachineSpec:
    return MachineSpec(machine, unit, start, 1)


def test_read_plan_merges_blocks_up_to_125_registers_and_never_splits_one() -> None:
    specs = [_spec(f"M{i}", i * 16) for i in range(20)]
    plan = plan_reads(specs, span=13, max_gap=16)
    assert all(r.count <= 125 for r in plan)
    assert [len(r.blocks) for r in plan] == [8, 8, 4]
    assert plan[0].count == 7 * 16 + 13
    seen = [s.machine for r in plan for _, s in r.blocks]
    assert sorted(seen) == sorted(s.machine for s in specs)
    for r in plan:
        for off, s in r.blocks:
            assert r.address + off == s.start and off + 13 <= r.count


def test_read_plan_splits_on_gaps_and_device_ids() -> None:
    specs = [_spec("A", 0), _spec("B", 16), _spec("C", 1000), _spec("D", 0, unit=2)]
    plan = plan_reads(specs, span=13, max_gap=3)
    assert [(r.unit, r.address, r.count) for r in plan] == [(1, 0, 29), (1, 1000, 13), (2, 0, 13)]
    assert len(plan_reads(specs[:2], span=13, max_gap=2)) == 2


def test_meter_delta_rollover_and_spread() -> None:
    assert meter_delta(5, 2**32 - 3, 2**32) == (8, True)
    assert meter_delta(10, 1000, 2**32) == (-990, False)
    assert meter_delta(3, 99_999_999, 10**8) == (4, True)
    assert spread(10, 3) == [4, 3, 3] and spread(0, 2) == [0, 0] and spread(-5, 2) == [0, 0]


# ---------------------------------------------------------- change detection


class Tracked:
    """A MachineTracker fed with Readings directly (no gateway)."""

    def __init__(self, rmap: RegisterMap = DEFAULT_MAP, saved: dict[str, Any] | None = None):
        self.noted: Counter[str] = Counter()
        self.t = MachineTracker(
            MachineSpec("M1", 1, 0, 10),
            rmap,
            "modbus:test",
            saved=saved,
            note=lambda kind, n, **_: self.noted.update({kind: n}),
        )
        self.clock = FakeClock()

    def read(self, **values: Any) -> list[AnyFloorEvent]:
        base: dict[str, Any] = {"status": 1, "card": ""}
        return self.t.update(Reading(**{**base, **values}), self.clock())


def test_tracker_baseline_then_games_with_the_last_wager_for_the_last_game() -> None:
    t = Tracked()
    first = t.read(coin_in=1000, games_played=50, last_wager=5)
    assert [type(e) for e in first] == [MachineStatusChanged]  # baseline: no games
    evs = t.read(coin_in=1017, games_played=53, last_wager=9, win=0)
    assert [(e.event_id, e.wager) for e in evs if isinstance(e, GamePlayed)] == [
        ("mb-M1-g51", 40),
        ("mb-M1-g52", 40),
        ("mb-M1-g53", 90),
    ]
    assert t.read(coin_in=1017, games_played=53) == []  # nothing changed: nothing emitted


def test_tracker_coin_in_ahead_of_games_waits_for_the_game() -> None:
    t = Tracked()
    t.read(coin_in=100, games_played=1)
    assert t.read(coin_in=105, games_played=1) == []
    evs = t.read(coin_in=105, games_played=2, last_wager=5)
    assert [(e.wager, e.event_id) for e in evs if isinstance(e, GamePlayed)] == [(50, "mb-M1-g2")]


def test_tracker_last_wager_that_does_not_fit_falls_back_to_an_even_spread() -> None:
    t = Tracked()
    t.read(coin_in=0, games_played=0)
    evs = t.read(coin_in=10, games_played=2, last_wager=500)
    assert [e.wager for e in evs if isinstance(e, GamePlayed)] == [50, 50]


def test_tracker_rollover_is_counted_and_played_through() -> None:
    t = Tracked()
    t.read(coin_in=2**32 - 2, games_played=2**32 - 1)
    evs = t.read(coin_in=3, games_played=1, last_wager=3)
    games = [e for e in evs if isinstance(e, GamePlayed)]
    assert [(e.event_id, e.wager) for e in games] == [("mb-M1-g0", 20), ("mb-M1-g1", 30)]
    assert t.noted["meter_rollover"] == 1


def test_tracker_ram_clear_is_held_back_then_rebaselined_with_new_ids() -> None:
    t = Tracked()
    t.read(coin_in=5000, games_played=400)
    for _ in range(CONFIRM_READS):
        assert t.read(coin_in=0, games_played=0) == []
    assert t.noted["meters_went_back"] == 1 and t.noted["meters_rebaselined"] == 1
    evs = t.read(coin_in=2, games_played=1, last_wager=2)
    assert [(e.event_id, e.wager) for e in evs if isinstance(e, GamePlayed)] == [
        ("mb-M1-e1-g1", 20)
    ]


def test_tracker_one_garbage_read_emits_nothing_and_keeps_the_baseline() -> None:
    t = Tracked()
    t.read(coin_in=1000, games_played=100)
    assert t.read(coin_in=0xFFFFFFFF, games_played=0xFFFFFFFF) == []
    assert t.noted["meters_implausible"] == 1
    evs = t.read(coin_in=1003, games_played=101, last_wager=3)
    assert [(e.event_id, e.wager) for e in evs if isinstance(e, GamePlayed)] == [("mb-M1-g101", 30)]
    assert t.noted["meters_rebaselined"] == 0


def test_tracker_implausible_wager_is_not_emitted() -> None:
    t = Tracked()
    t.read(coin_in=0, games_played=0)
    assert t.read(coin_in=10**9, games_played=1) == []  # 100M credits x 10 in one game
    assert t.noted["meters_implausible"] == 1


def test_tracker_card_order_around_games() -> None:
    t = Tracked()
    t.read(coin_in=0, games_played=0)
    evs = t.read(coin_in=1, games_played=1, card="111")
    assert [type(e).__name__ for e in evs] == ["CardInserted", "GamePlayed"]
    evs = t.read(coin_in=2, games_played=2, card="222")
    assert [type(e).__name__ for e in evs] == ["CardRemoved", "CardInserted", "GamePlayed"]
    evs = t.read(coin_in=3, games_played=3, card="")
    assert [type(e).__name__ for e in evs] == ["GamePlayed", "CardRemoved"]
    assert [e.card for e in evs if isinstance(e, CardRemoved)] == ["222"]


def test_tracker_machine_offline_bit_ignores_stale_registers_and_reconciles() -> None:
    t = Tracked()
    t.read(coin_in=100, games_played=10, card="777")
    evs = t.read(status=0, coin_in=0, games_played=0, card="")  # the gateway zeroes a lost EGM
    assert [(type(e).__name__, getattr(e, "status", None)) for e in evs] == [
        ("MachineStatusChanged", MachineStatus.OFFLINE)
    ]
    evs = t.read(coin_in=104, games_played=12, card="777", last_wager=2)
    games = [e for e in evs if isinstance(e, GamePlayed)]
    assert [(e.source, e.wager) for e in games] == [("modbus:test:reconciled", 20)] * 2
    assert t.noted["reconciled_games"] == 2
    assert not [e for e in evs if isinstance(e, CardInserted | CardRemoved)]


def test_tracker_status_precedence_and_tilt_edges() -> None:
    t = Tracked()
    seen: list[MachineStatus] = []
    for word in (0b0001, 0b0011, 0b0111, 0b1111, 0b1111, 0b0001, 0b0110, 0b0001):
        for e in t.read(status=word, coin_in=0, games_played=0):
            assert isinstance(e, MachineStatusChanged)
            seen.append(e.status)
    assert seen == [
        MachineStatus.ONLINE,
        MachineStatus.DOOR_OPEN,
        MachineStatus.OUT_OF_SERVICE,  # out of service outranks an open door
        MachineStatus.ONLINE,
        MachineStatus.OFFLINE,  # offline outranks everything
        MachineStatus.ONLINE,
    ]
    assert t.noted["tilt"] == 1  # counted once per rising edge, no floor effect


def test_tracker_saved_state_reconciles_the_first_read() -> None:
    saved = {"games": 10, "coin_in": 100, "win": None, "era": 0, "card": "555"}
    t = Tracked(saved=saved)
    evs = t.read(coin_in=103, games_played=11, card="555")
    assert [(type(e).__name__, getattr(e, "source", "")) for e in evs] == [
        ("MachineStatusChanged", "modbus:test"),
        ("GamePlayed", "modbus:test:reconciled"),
    ]


# ------------------------------------------------------------------- config


def test_docs_toml_example_is_a_valid_config() -> None:
    text = DOCS.read_text(encoding="utf-8")
    blocks = re.findall(r"```toml\n(.*?)```", text, re.S)
    assert blocks, "docs/modbus.md has no toml example"
    gateways = [g for b in blocks for g in tomllib.loads(b).get("sources", {}).get("modbus", [])]
    assert len(gateways) >= 2
    cfgs = [ModbusGatewayConfig.model_validate(g) for g in gateways]
    assert {c.transport for c in cfgs} == {"tcp", "rtu"}


@pytest.mark.parametrize(
    ("over", "problem"),
    [
        ({"host": None}, "a tcp gateway needs its host"),
        ({"device": "/dev/ttyS0"}, "only for transport = 'rtu'"),
        ({"transport": "rtu", "host": None}, "needs its serial port"),
        ({"name": "Bad Name"}, "lower-case"),
        ({"machines": [{"machine": "A", "index": 0}, {"machine": "A", "index": 1}]}, "twice"),
        ({"machines": [{"machine": "A", "index": 0}, {"machine": "B", "address": 8}]}, "overlap"),
        ({"machines": [{"machine": "A", "index": 0, "address": 0}]}, "exactly one"),
        ({"machines": [{"machine": "A"}]}, "exactly one"),
        ({"machines": [{"machine": "A", "index": 0, "denom": 1}]}, "Extra inputs"),
        ({"pol_ms": 100}, "Extra inputs"),
        ({"poll_ms": "500"}, "valid integer"),
    ],
)
def test_gateway_config_rejects_mistakes(over: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        gateway_cfg(**over)


def test_machines_on_other_device_ids_may_share_addresses() -> None:
    cfg = gateway_cfg(
        machines=[
            {"machine": "A", "index": 0},
            {"machine": "B", "index": 0, "device_id": 2},
            {"machine": "C", "address": 400},
        ],
        base=100,
    )
    assert [(cfg.unit(m), cfg.start(m)) for m in cfg.machines] == [(1, 100), (2, 100), (1, 400)]


# ------------------------------------------------- against a pymodbus server


@pytest.mark.asyncio
async def test_games_become_game_played_exactly_once() -> None:
    rig = await Rig(gateway_cfg(12)).start()
    try:
        await rig.online()
        assert rig.links == [True]
        assert rig.gw is not None and len(rig.gw.plan) == 2  # 12 blocks: 8 + 4
        rig.sim.play("M0", 5)
        rig.sim.play("M11", 2, win=10, games=3)
        await until(lambda: len(rig.games()) == 4, "4 games")
        rig.sim.play("M0", 1)
        await until(lambda: len(rig.games("M0")) == 2, "M0's second game")
        await rig.polls(5)
        games = rig.games()
        assert len(games) == 5 and len({g.event_id for g in games}) == 5
        assert [(g.event_id, g.wager, g.win) for g in rig.games("M0")] == [
            ("mb-M0-g1", 50, 0),
            ("mb-M0-g2", 10, 0),
        ]
        m11 = rig.games("M11")
        assert sum(g.wager for g in m11) == 60 and sum(g.win for g in m11) == 300
        assert {g.source for g in games} == {"modbus:gw1"}
        assert not rig.rejected
    finally:
        await rig.close()


@pytest.mark.asyncio
async def test_card_in_and_out() -> None:
    rig = await Rig(gateway_cfg(2)).start()
    try:
        await rig.online()
        rig.sim.insert_card("M1", "6000012345")
        await until(lambda: rig.cards("M1") == [("in", "6000012345")], "card in")
        rig.sim.insert_card("M1", "6000099999")
        await until(lambda: len(rig.cards("M1")) == 3, "card swapped")
        rig.sim.remove_card("M1")
        await until(lambda: len(rig.cards("M1")) == 4, "card out")
        await rig.polls(3)
        assert rig.cards("M1") == [
            ("in", "6000012345"),
            ("out", "6000012345"),
            ("in", "6000099999"),
            ("out", "6000099999"),
        ]
        assert rig.cards("M0") == []
    finally:
        await rig.close()


@pytest.mark.asyncio
async def test_door_out_of_service_and_offline_bits_change_status() -> None:
    rig = await Rig(gateway_cfg(1)).start()
    try:
        await rig.online()
        sim = rig.sim
        sim.set_flags("M0", door_open=True)
        await until(lambda: rig.statuses("M0")[-1] == MachineStatus.DOOR_OPEN, "door open")
        sim.set_flags("M0", out_of_service=True)
        await until(lambda: rig.statuses("M0")[-1] == MachineStatus.OUT_OF_SERVICE, "oos")
        sim.set_flags("M0", out_of_service=False, door_open=False, tilt=True, handpay=True)
        await until(lambda: rig.statuses("M0")[-1] == MachineStatus.ONLINE, "back online")
        sim.set_flags("M0", online=False)
        await until(lambda: rig.statuses("M0")[-1] == MachineStatus.OFFLINE, "offline bit")
        sim.set_flags("M0", online=True)
        await until(lambda: rig.statuses("M0")[-1] == MachineStatus.ONLINE, "online again")
        await rig.polls(2)
        assert rig.statuses("M0") == [
            MachineStatus.ONLINE,
            MachineStatus.DOOR_OPEN,
            MachineStatus.OUT_OF_SERVICE,
            MachineStatus.ONLINE,
            MachineStatus.OFFLINE,
            MachineStatus.ONLINE,
        ]
        assert rig.counted["tilt"] == 1 and rig.counted["handpay"] == 1
    finally:
        await rig.close()


@pytest.mark.asyncio
async def test_remapped_register_map() -> None:
    registers = {
        "stride": 20,
        "word_order": "little",
        "byte_order": "little",
        "meter_units": "minor",
        "card_width": 10,
        "status": {"offset": 19, "encoding": "uint16"},
        "status_bits": {"online": 15, "door_open": 0},
        "card": {"offset": 0, "encoding": "bcd", "length": 3},
        "coin_in": {"offset": 4, "encoding": "uint64"},
        "games_played": {"offset": 10, "encoding": "bcd", "length": 2},
        "last_wager": {"offset": 12, "encoding": "uint16"},
        "absent": ["win"],
    }
    cfg = gateway_cfg(
        base=1000,
        registers=registers,
        machines=[
            {"machine": "A", "index": 0, "denomination": 10},
            {"machine": "B", "index": 3, "device_id": 7},
            {"machine": "C", "address": 3000},
        ],
    )
    assert cfg.registers.span == 20
    rig = await Rig(cfg).start()
    try:
        await rig.online()
        assert rig.gw is not None and len(rig.gw.plan) == 3  # two device ids, one far block
        sim = rig.sim
        sim.insert_card("B", "0012345678")
        sim.play("A", 250, games=2)  # minor units: the denomination does not apply
        sim.play("C", 100)
        sim.set_flags("C", door_open=True)
        await until(lambda: len(rig.games()) == 3 and bool(rig.cards("B")), "games and card")
        await until(lambda: rig.statuses("C")[-1] == MachineStatus.DOOR_OPEN, "door on bit 0")
        assert [g.wager for g in rig.games("A")] == [250, 250]
        assert [g.wager for g in rig.games("C")] == [100]
        assert rig.cards("B") == [("in", "0012345678")]
        assert not rig.rejected
    finally:
        await rig.close()


@pytest.mark.asyncio
async def test_gateway_that_times_out_goes_down_and_reconciles_once_on_return() -> None:
    rig = await Rig(gateway_cfg(2)).start()
    try:
        await rig.online()
        rig.sim.play("M0", 3)
        await until(lambda: len(rig.games()) == 1, "a live game")
        await rig.sim.go_silent()
        await until(lambda: rig.links == [True, False], "link down")
        assert rig.rejected["timeout"] >= 2
        assert rig.statuses("M0")[-1] == MachineStatus.OFFLINE
        assert rig.statuses("M1")[-1] == MachineStatus.OFFLINE
        rig.sim.play("M0", 4, games=2)  # played while nobody listened
        rig.sim.play("M1", 1, games=3)
        rig.sim.insert_card("M1", "6000000007")
        await rig.sim.start()
        await until(lambda: rig.links == [True, False, True], "link up")
        await until(lambda: len(rig.games()) == 6, "missed games")
        await rig.polls(5)
        games = rig.games()
        assert len(games) == 6 and len({g.event_id for g in games}) == 6
        missed = [g for g in games if g.source == "modbus:gw1:reconciled"]
        assert [(g.machine, g.event_id, g.wager) for g in missed] == [
            ("M0", "mb-M0-g2", 40),
            ("M0", "mb-M0-g3", 40),
            ("M1", "mb-M1-g1", 10),
            ("M1", "mb-M1-g2", 10),
            ("M1", "mb-M1-g3", 10),
        ]
        assert rig.counted["reconciled_games"] == 5
        assert rig.cards("M1") == [("in", "6000000007")]
        assert rig.statuses("M0")[-1] == MachineStatus.ONLINE
        assert rig.gw is not None and rig.gw.link_up
    finally:
        await rig.close()


@pytest.mark.asyncio
async def test_stopped_gateway_is_counted_as_connect_failures_and_recovers() -> None:
    rig = await Rig(gateway_cfg(1)).start()
    try:
        await rig.online()
        await rig.sim.stop()
        await until(lambda: rig.links == [True, False], "link down")
        await until(lambda: rig.rejected["connect"] >= 2, "connect failures counted")
        rig.sim.play("M0", 2)
        await rig.sim.start()
        await until(lambda: rig.links == [True, False, True], "link up")
        await until(lambda: len(rig.games()) == 1, "the missed game")
        assert rig.games()[0].source == "modbus:gw1:reconciled"
    finally:
        await rig.close()


@pytest.mark.asyncio
async def test_restart_with_state_file_reconciles_and_without_starts_a_baseline(
    tmp_path: Path,
) -> None:
    state = tmp_path / "modbus-gw1.json"
    rig = await Rig(gateway_cfg(1), state_path=state).start()
    try:
        await rig.online()
        rig.sim.play("M0", 5)
        rig.sim.insert_card("M0", "6000012345")
        await until(lambda: len(rig.games()) == 1 and bool(rig.cards("M0")), "game and card")
        await rig.stop_poller()
        saved = json.loads(state.read_text())
        assert saved["M0"]["games"] == 1 and saved["M0"]["card"] == "6000012345"
        assert datetime.fromisoformat(saved["M0"]["at"])  # the last good read, for spans
        rig.sim.play("M0", 2, games=2)  # while the poller was down
        rig.start_poller()
        await until(lambda: len(rig.games()) == 3, "reconciled games")
        await rig.polls(3)
        assert [(g.event_id, g.source) for g in rig.games()[1:]] == [
            ("mb-M0-g2", "modbus:gw1:reconciled"),
            ("mb-M0-g3", "modbus:gw1:reconciled"),
        ]
        assert rig.cards("M0") == [("in", "6000012345")]  # the same card: no new card-in
        await rig.stop_poller()
        state.unlink()
        rig.sim.play("M0", 2)
        rig.start_poller()
        await until(lambda: rig.gw is not None and bool(rig.gw.state()), "a new baseline")
        await rig.polls(3)
        assert len(rig.games()) == 3  # without state the first read is the baseline
    finally:
        await rig.close()


@pytest.mark.asyncio
async def test_unreadable_state_file_is_a_new_baseline(tmp_path: Path) -> None:
    state = tmp_path / "modbus-gw1.json"
    state.write_text("{not json")
    rig = await Rig(gateway_cfg(1), state_path=state).start()
    try:
        await rig.online()
        await rig.polls(2)
        assert rig.games() == []
    finally:
        await rig.close()
    assert json.loads(state.read_text())["M0"]["games"] == 0


@pytest.mark.asyncio
async def test_meter_rollback_is_an_anomaly_and_play_continues() -> None:
    rig = await Rig(gateway_cfg(1)).start()
    try:
        await rig.online()
        rig.sim.play("M0", 5, games=3)
        await until(lambda: len(rig.games()) == 3, "games before the clear")
        rig.sim.clear_meters("M0")
        await until(lambda: rig.counted["meters_rebaselined"] == 1, "a new baseline")
        assert rig.counted["meters_went_back"] == 1
        rig.sim.play("M0", 7)
        await until(lambda: len(rig.games()) == 4, "a game after the clear")
        assert rig.games()[-1].event_id == "mb-M0-e1-g1" and rig.games()[-1].wager == 70
        assert all(g.wager >= 0 for g in rig.games())
    finally:
        await rig.close()


@pytest.mark.asyncio
async def test_garbage_registers_do_not_crash_or_invent_games() -> None:
    cfg = gateway_cfg(
        2, registers={"card": {"offset": 1, "encoding": "bcd", "length": 4}}, max_games_jump=100
    )
    rig = await Rig(cfg).start()
    try:
        await rig.online()
        rig.sim.play("M0", 1)
        await until(lambda: len(rig.games()) == 1, "a first game")
        rng = random.Random(7)
        for _ in range(5):
            rig.sim.poke("M0", 0, [rng.randrange(0x10000) for _ in range(13)])
            rig.sim.poke("M1", 1, [0xABCD, 0xFFFF, 0x1234, 0x5678])  # not BCD
            await rig.polls(1)
        assert rig.rejected["decode"] >= 1
        assert rig.gw is not None and rig.gw.stats["internal_error"] == 0
        rig.sim.unpoke("M0")
        rig.sim.unpoke("M1")
        await rig.polls(CONFIRM_READS + 1)  # a baseline taken from garbage is replaced
        rig.sim.play("M0", 2)
        await until(lambda: any(g.wager == 20 for g in rig.games("M0")), "play after garbage")
        await rig.polls(3)
        assert [g.wager for g in rig.games("M0")] == [10, 20]
        assert rig.games("M1") == []
        assert rig.task is not None and not rig.task.done()
    finally:
        await rig.close()


@pytest.mark.asyncio
async def test_modbus_exception_for_one_block_leaves_the_others_working() -> None:
    served = gateway_cfg(1)
    cfg = gateway_cfg(
        machines=[{"machine": "M0", "index": 0}, {"machine": "GHOST", "address": 5000}]
    )
    rig = Rig(served)
    port = await rig.sim.start()
    rig.cfg = cfg.model_copy(update={"port": port})
    rig.start_poller()
    try:
        await until(lambda: rig.rejected["modbus_exception"] >= 2, "illegal address counted")
        await until(lambda: MachineStatus.ONLINE in rig.statuses("M0"), "M0 online")
        rig.sim.play("M0", 1)
        await until(lambda: len(rig.games("M0")) == 1, "M0 plays")
        await until(lambda: rig.statuses("GHOST") == [MachineStatus.OFFLINE], "GHOST offline")
        assert rig.links == [True]
    finally:
        await rig.close()


@pytest.mark.asyncio
async def test_emit_failure_does_not_stop_the_loop() -> None:
    rig = await Rig(gateway_cfg(1)).start()
    assert rig.gw is not None
    calls = 0

    def flaky(events: list[AnyFloorEvent]) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("ingest broke")
        rig.events.extend(events)

    rig.gw.emit = flaky
    try:
        await until(lambda: calls >= 1, "first emit")
        rig.sim.play("M0", 1)
        await until(lambda: len(rig.games()) == 1, "a game after the failure")
        assert rig.gw.stats["emit_failed"] == 1
    finally:
        await rig.close()


@pytest.mark.asyncio
async def test_rtu_config_builds_a_serial_client() -> None:
    """pymodbus clients need a running loop: ModbusGateway builds its client in run()."""
    cfg = gateway_cfg(
        transport="rtu", host=None, device="/dev/ttyUSB9", baud=9600, parity="N", stopbits=2
    )
    client = build_client(cfg)
    assert isinstance(client, AsyncModbusSerialClient)
    p = client.comm_params
    assert (p.host, p.baudrate, p.parity, p.stopbits) == ("/dev/ttyUSB9", 9600, "N", 2)
    assert not p.reconnect_delay
    assert isinstance(build_client(gateway_cfg()), AsyncModbusTcpClient)


@pytest.mark.asyncio
async def test_rtu_gateway_on_a_missing_port_fails_cleanly_and_is_counted(tmp_path: Path) -> None:
    cfg = gateway_cfg(transport="rtu", host=None, device=str(tmp_path / "no-such-tty"))
    rig = Rig(cfg)
    rig.start_poller()
    try:
        await until(lambda: rig.rejected["connect"] >= 3, "serial open failures counted")
        await until(
            lambda: all(rig.statuses(m) == [MachineStatus.OFFLINE] for m in ("M0", "M1", "M2")),
            "machines offline",
        )
        assert rig.task is not None and not rig.task.done()
        assert rig.links == [] and set(rig.rejected) == {"connect"}
    finally:
        await rig.close()


# ------------------------------------------------ issue 15 item 13: roll-over modulus

SAS_WRAP = 100_000_000  # a SAS 8-digit BCD meter, copied by the gateway into a uint32


def _sas_copy_map() -> RegisterMap:
    return RegisterMap.model_validate(
        {
            "coin_in": {"offset": 5, "encoding": "uint32", "rollover": SAS_WRAP},
            "games_played": {"offset": 7, "encoding": "uint32", "rollover": SAS_WRAP},
            "win": {"offset": 11, "encoding": "uint32", "rollover": SAS_WRAP},
        }
    )


def test_modbus_bcd_copy_rollover_at_10e8_is_played_through_not_a_ram_clear() -> None:
    near = {"coin_in": SAS_WRAP - 4, "games_played": SAS_WRAP - 1, "win": SAS_WRAP - 10}
    after = {"coin_in": 6, "games_played": 1, "win": 5, "last_wager": 5}
    # without the key the uint32's own modulus (2^32) applies: the wrap reads as a RAM clear
    plain = Tracked()
    plain.read(**near)
    assert plain.read(**after) == []
    assert plain.noted["meters_went_back"] == 1 and plain.noted["meter_rollover"] == 0
    # with `rollover = 100000000` the two games across the wrap are played through
    t = Tracked(_sas_copy_map())
    t.read(**near)
    evs = t.read(**after)
    games = [e for e in evs if isinstance(e, GamePlayed)]
    assert [(g.event_id, g.wager) for g in games] == [("mb-M1-g0", 50), ("mb-M1-g1", 50)]
    assert sum(g.win for g in games) == 150  # win meter 99,999,990 -> 5: 15 credits
    assert t.noted["meter_rollover"] == 1 and t.noted["meters_went_back"] == 0
    assert t.t.era == 0  # the event-id era is unchanged: no RAM clear
    # a real RAM clear is still one: back to 0 from far below the wrap point
    clear = Tracked(_sas_copy_map())
    clear.read(coin_in=40_000_000, games_played=30_000_000)
    assert clear.read(coin_in=0, games_played=0) == []
    assert clear.noted["meters_went_back"] == 1


def test_modbus_rollover_key_is_validated() -> None:
    ok = RegisterField.model_validate({"offset": 0, "encoding": "uint32", "rollover": SAS_WRAP})
    assert ok.modulus == SAS_WRAP and ok.native_modulus == 2**32
    assert RegisterField(offset=0, encoding="uint32").modulus == 2**32
    with pytest.raises(ValidationError, match="exceeds"):
        RegisterField.model_validate({"offset": 0, "encoding": "uint16", "rollover": 10**8})
    with pytest.raises(ValidationError, match="numeric"):
        RegisterField.model_validate(
            {"offset": 0, "encoding": "ascii", "length": 2, "rollover": 100}
        )
    with pytest.raises(ValidationError, match="rollover is for the meters"):
        RegisterMap.model_validate({"card": {"offset": 1, "encoding": "uint64", "rollover": 10}})
    with pytest.raises(ValueError, match="does not fit"):
        encode_value("coin_in", ok, SAS_WRAP, DEFAULT_MAP)


@pytest.mark.asyncio
async def test_modbus_gateway_with_rollover_key_plays_through_the_wrap_over_tcp() -> None:
    cfg = gateway_cfg(1, registers=_sas_copy_map().model_dump(exclude_defaults=True))
    assert cfg.registers.coin_in.rollover == SAS_WRAP
    rig = await Rig(cfg).start()
    try:
        rig.sim.set_meters("M0", coin_in=SAS_WRAP - 3, games_played=SAS_WRAP - 1)
        await rig.online()
        await rig.polls(2)  # the baseline, just below the wrap
        rig.sim.play("M0", 2, games=2)  # coin-in 99,999,997 -> 1, games 99,999,999 -> 1
        await until(lambda: len(rig.games()) == 2, "the games across the wrap")
        await rig.polls(5)
        assert [(g.event_id, g.wager) for g in rig.games()] == [("mb-M0-g0", 20), ("mb-M0-g1", 20)]
        assert rig.counted["meter_rollover"] == 1
        assert rig.counted["meters_went_back"] == 0 and rig.counted["meters_rebaselined"] == 0
    finally:
        await rig.close()

"""A simulated Modbus gateway: machines whose play updates a real pymodbus TCP server.

Tests, the demo and benches drive slot machines (`play`, `insert_card`,
`set_flags`, `clear_meters`, `poke` for garbage) and the poller reads the
registers over real Modbus TCP.  The machine state is plain Python; the
registers are rewritten from it when the server reads them (a pymodbus
`SimDevice` action), so changes need no await and a read always sees one
consistent block.  `go_silent()` swaps the server for a listener that accepts
connections and never answers: the gateway that times out.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial

from pymodbus.constants import ExcCodes
from pymodbus.server import ModbusTcpServer
from pymodbus.simulator import DataType, SimData, SimDevice

from adapters.modbus.config import ModbusGatewayConfig
from adapters.modbus.profile import (
    DEFAULT_MAP,
    RegisterMap,
    StatusFlags,
    encode_block,
    status_word,
)
from adapters.modbus.source import quiet_pymodbus


@dataclass(slots=True)
class SimMachine:
    """What a gateway knows about one machine; meters in the map's units."""

    unit: int
    start: int
    online: bool = True
    door_open: bool = False
    out_of_service: bool = False
    tilt: bool = False
    handpay: bool = False
    card: str = ""
    coin_in: int = 0
    games_played: int = 0
    last_wager: int = 0
    win: int = 0
    pokes: dict[int, int] = field(default_factory=dict)  # offset -> raw register value


class GatewaySimulator:
    """Machines by id, each a block at (device id, start address), served over TCP."""

    def __init__(
        self,
        machines: Mapping[str, tuple[int, int]],
        rmap: RegisterMap = DEFAULT_MAP,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        quiet_pymodbus()
        self.rmap = rmap
        self.host = host
        self.port = port
        self.machines = {m: SimMachine(unit, start) for m, (unit, start) in machines.items()}
        self.reads = 0
        self._server: ModbusTcpServer | None = None
        self._silent: asyncio.Server | None = None
        self._silent_conns: set[asyncio.Transport] = set()
        self._dirty: set[int] = set(self._units())

    @classmethod
    def for_config(
        cls, cfg: ModbusGatewayConfig, *, host: str = "127.0.0.1", port: int | None = None
    ) -> GatewaySimulator:
        """The gateway a config describes (port: the config's unless given; 0 = any free)."""
        blocks = {m.machine: (cfg.unit(m), cfg.start(m)) for m in cfg.machines}
        return cls(blocks, cfg.registers, host=host, port=cfg.port if port is None else port)

    # ---------------------------------------------------------------- server

    @property
    def running(self) -> bool:
        return self._server is not None

    async def start(self) -> int:
        """Serve Modbus TCP (again); returns the port, the same one on every restart."""
        await self._close_silent()
        if self._server is None:
            self._dirty = set(self._units())  # a new server starts with zeroed registers
            server = ModbusTcpServer(self._devices(), address=(self.host, self.port))
            await server.serve_forever(background=True)
            sockets = getattr(server.transport, "sockets", None) or []
            if sockets:
                self.port = int(sockets[0].getsockname()[1])
            self._server = server
        return self.port

    async def stop(self) -> None:
        """Stop serving: connections close, new ones are refused."""
        await self._close_silent()
        if self._server is not None:
            server, self._server = self._server, None
            await server.shutdown()  # type: ignore[no-untyped-call]

    async def go_silent(self) -> None:
        """Accept connections and never answer (a gateway whose machine side hangs)."""
        await self.stop()
        loop = asyncio.get_running_loop()
        conns = self._silent_conns

        class _Mute(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                assert isinstance(transport, asyncio.Transport)
                self.transport = transport
                conns.add(transport)

            def connection_lost(self, exc: Exception | None) -> None:
                conns.discard(self.transport)

        self._silent = await loop.create_server(_Mute, self.host, self.port, reuse_address=True)

    async def _close_silent(self) -> None:
        if self._silent is None:
            return
        self._silent.close()
        for t in list(self._silent_conns):
            t.abort()
        self._silent_conns.clear()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._silent.wait_closed(), 1.0)
        self._silent = None

    def _units(self) -> set[int]:
        return {m.unit for m in self.machines.values()}

    def _devices(self) -> list[SimDevice]:
        span = self.rmap.span
        out = []
        for unit in sorted(self._units()):
            starts = [m.start for m in self.machines.values() if m.unit == unit]
            first, end = min(starts), max(starts) + self.rmap.stride
            data = SimData(first, count=max(end, max(starts) + span) - first, values=0,
                           datatype=DataType.REGISTERS)  # fmt: skip
            out.append(SimDevice(unit, simdata=[data], action=partial(self._action, unit)))
        return out

    async def _action(
        self,
        unit: int,
        function_code: int,
        start_address: int,
        address: int,
        count: int,
        registers: list[int],
        set_values: list[int] | list[bool] | None,
    ) -> ExcCodes | None:
        """Before a read: write the machines' current state into the registers."""
        if set_values is None:
            self.reads += 1
            if unit in self._dirty:
                self._dirty.discard(unit)
                for m in self.machines.values():
                    if m.unit == unit:
                        at = m.start - start_address
                        block = self.block(m)
                        registers[at : at + len(block)] = block
        return None

    # -------------------------------------------------------------- machines

    def block(self, m: SimMachine) -> list[int]:
        """The registers of one machine's block as the gateway serves them."""
        r = self.rmap
        flags = StatusFlags(m.online, m.door_open, m.out_of_service, m.tilt, m.handpay)
        regs = encode_block(
            r,
            {
                "status": status_word(r, flags),
                "card": m.card,
                "coin_in": m.coin_in % r.coin_in.modulus,
                "games_played": m.games_played % r.games_played.modulus,
                "last_wager": m.last_wager % r.last_wager.modulus,
                "win": m.win % r.win.modulus,
            },
        )
        for off, v in m.pokes.items():
            if off < len(regs):
                regs[off] = v & 0xFFFF
        return regs

    def _touch(self, m: SimMachine) -> SimMachine:
        self._dirty.add(m.unit)
        return m

    def play(self, machine: str, wager: int, win: int = 0, games: int = 1) -> None:
        """`games` games of `wager` each (meter units); the last wager register follows."""
        m = self._touch(self.machines[machine])
        m.coin_in += wager * games
        m.games_played += games
        m.last_wager = wager
        m.win += win * games

    def insert_card(self, machine: str, card: str) -> None:
        self._touch(self.machines[machine]).card = card

    def remove_card(self, machine: str) -> None:
        self._touch(self.machines[machine]).card = ""

    def set_flags(self, machine: str, **flags: bool) -> None:
        """online, door_open, out_of_service, tilt, handpay."""
        m = self._touch(self.machines[machine])
        for k, v in flags.items():
            if k not in ("online", "door_open", "out_of_service", "tilt", "handpay"):
                raise KeyError(k)
            setattr(m, k, v)

    def set_meters(self, machine: str, **meters: int) -> None:
        """coin_in, games_played, last_wager, win: as the machine reports them."""
        m = self._touch(self.machines[machine])
        for k, v in meters.items():
            if k not in ("coin_in", "games_played", "last_wager", "win"):
                raise KeyError(k)
            setattr(m, k, v)

    def clear_meters(self, machine: str) -> None:
        """A RAM clear: every meter back to 0."""
        self.set_meters(machine, coin_in=0, games_played=0, last_wager=0, win=0)

    def poke(self, machine: str, offset: int, values: Sequence[int]) -> None:
        """Raw register values over the block from `offset` on, until `unpoke`."""
        m = self._touch(self.machines[machine])
        for i, v in enumerate(values):
            m.pokes[offset + i] = v

    def unpoke(self, machine: str) -> None:
        self._touch(self.machines[machine]).pokes.clear()

    async def play_randomly(
        self,
        stop: asyncio.Event,
        *,
        games_per_minute: float = 10.0,
        bets: Sequence[int] = (1, 2, 5, 10, 20),
        tick_s: float = 0.25,
        seed: int | None = None,
    ) -> None:
        """Play every machine at about `games_per_minute` until `stop` (demo, bench)."""
        rng = random.Random(seed)  # noqa: S311 - simulated play, not security
        p = min(1.0, games_per_minute * tick_s / 60)
        while not stop.is_set():
            for name in self.machines:
                if rng.random() < p:
                    bet = rng.choice(bets)
                    won = bet * rng.randint(1, 5) if rng.random() < 0.3 else 0
                    self.play(name, bet, won)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), tick_s)

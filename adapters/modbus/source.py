"""`ModbusGateway`: one Modbus gateway as a floor source, for the daemon or an agent.

The glue between a gateway's config, a pymodbus 3.x async client (TCP, or RTU
on a serial port) and the change detection in `poller.py`: every `poll_ms` it
reads all machine blocks in as few requests as the plan allows, hands each
decoded block to its machine's tracker and emits what changed.  It reports
through the same three callbacks as `SasChannel` (plus the optional `count`),
keeps the accounted meters in a small JSON file so games played while the
process was down are produced after a restart, and never lets a bad gateway
end its loop: every failure is a `reject(reason)`, logged once per burst.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog
from pymodbus import FramerType
from pymodbus.client import AsyncModbusSerialClient, AsyncModbusTcpClient
from pymodbus.exceptions import ConnectionException, ModbusException, ModbusIOException

from adapters.modbus.config import ModbusGatewayConfig
from adapters.modbus.poller import Limits, MachineSpec, MachineTracker, plan_reads
from adapters.modbus.profile import decode_block
from adapters.wire.delivery import BurstLog, deliver
from selector.events import AnyFloorEvent

STATE_SAVE_SECONDS = 5.0
ModbusClient = AsyncModbusTcpClient | AsyncModbusSerialClient
# Counted with `count` and in `stats`; anomalies are also logged once per burst.
ANOMALIES = frozenset({"meters_went_back", "meters_implausible", "meters_rebaselined"})


def _utc_now() -> datetime:
    return datetime.now(UTC)


def quiet_pymodbus() -> None:
    """pymodbus logs every timeout with a frame dump at ERROR; our own log says it once."""
    logging.getLogger("pymodbus").setLevel(logging.CRITICAL)


def build_client(cfg: ModbusGatewayConfig) -> ModbusClient:
    """The pymodbus client the config names; reconnection is ours (reconnect_delay=0)."""
    timeout = cfg.timeout_ms / 1000
    if cfg.transport == "rtu":
        assert cfg.device is not None
        return AsyncModbusSerialClient(
            cfg.device,
            framer=FramerType.RTU,
            baudrate=cfg.baud,
            bytesize=8,
            parity=cfg.parity,
            stopbits=cfg.stopbits,
            name=f"modbus-{cfg.name}",
            reconnect_delay=0,
            timeout=timeout,
            retries=cfg.retries,
        )
    assert cfg.host is not None
    return AsyncModbusTcpClient(
        cfg.host,
        port=cfg.port,
        name=f"modbus-{cfg.name}",
        reconnect_delay=0,
        timeout=timeout,
        retries=cfg.retries,
    )


class ModbusGateway:
    """One gateway's machines feeding FloorEvents to `emit`.

    - `emit(events)`: a batch of GamePlayed / MachineStatusChanged / CardInserted /
      CardRemoved (an awaitable result is awaited in the background).
    - `reject(reason)`: one failed request or bad field, by reason: `timeout` (no
      answer), `connect` (TCP connect or serial open failed, connection lost),
      `modbus_exception` (the gateway answered with an exception code), `decode`
      (a field that does not decode, a short or mismatched reply).
    - `link(name, up)`: the gateway answers for at least one machine, or not.
    - `count(kind, n)` (optional): `reconciled_games` and anomalies
      (`meters_went_back`, `meters_implausible`, `meters_rebaselined`,
      `meter_rollover`, `tilt`, `handpay`).
    """

    def __init__(
        self,
        cfg: ModbusGatewayConfig,
        emit: Callable[[list[AnyFloorEvent]], object],
        reject: Callable[[str], None],
        link: Callable[[str, bool], None],
        *,
        clock: Callable[[], datetime] = _utc_now,
        count: Callable[[str, int], None] | None = None,
        state_path: Path | None = None,
        client: ModbusClient | None = None,
    ) -> None:
        quiet_pymodbus()
        self.cfg = cfg
        self.emit = emit
        self._reject = reject
        self._link = link
        self.clock = clock
        self._count = count
        self.state_path = state_path
        self._client = client
        self.source = f"modbus:{cfg.name}"
        self.log = structlog.get_logger("raps").bind(component="modbus", gateway=cfg.name)
        self.burst = BurstLog(self.log)
        self.stats: Counter[str] = Counter()
        self.link_up = False
        specs = [
            MachineSpec(m.machine, cfg.unit(m), cfg.start(m), m.denomination) for m in cfg.machines
        ]
        self.plan = plan_reads(specs, cfg.registers.span, cfg.max_gap)
        saved = self._load_state()
        limits = Limits(max_games_jump=cfg.max_games_jump, max_wager=cfg.max_wager)
        self.trackers = {
            s.machine: MachineTracker(
                s,
                cfg.registers,
                self.source,
                limits=limits,
                saved=saved.get(s.machine),
                note=self._note,
            )
            for s in specs
        }
        self._last_ok: dict[str, float] = {}
        self._last_regs: dict[str, list[int]] = {}  # the block as last decoded, per machine
        self._down: set[str] = set()
        self._out: list[AnyFloorEvent] = []
        self._tasks: set[asyncio.Future[Any]] = set()
        self._stop = asyncio.Event()

    @property
    def name(self) -> str:
        return self.cfg.name

    @property
    def client(self) -> ModbusClient | None:
        return self._client

    # ------------------------------------------------------------------ public

    async def run(self) -> None:
        """Poll until stopped or cancelled; the state file is written on the way out."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        for m in self.trackers:  # silence counts from now
            self._last_ok.setdefault(m, start)
        saver = asyncio.create_task(self._save_every(STATE_SAVE_SECONDS))
        poll_s = self.cfg.poll_ms / 1000
        backoff = poll_s
        try:
            while not self._stop.is_set():
                t0 = loop.time()
                connected = False
                try:
                    connected = await self._cycle(loop)
                except asyncio.CancelledError:
                    raise
                except Exception:  # a bug must cost one cycle, not the gateway
                    self.stats["internal_error"] += 1
                    self.log.exception("poll cycle failed")
                self._check_silence(loop.time())
                self._flush()
                if connected:
                    backoff = poll_s
                    wait = t0 + poll_s - loop.time()
                else:
                    wait = backoff
                    backoff = min(backoff * 2, self.cfg.reconnect_max_s)
                if wait > 0:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._stop.wait(), wait)
        finally:
            saver.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await saver
            self._flush()
            self.save_state()
            if self._client is not None:
                self._client.close()

    def stop(self) -> None:
        self._stop.set()

    # ---------------------------------------------------------------- the loop

    async def _connect(self) -> ModbusClient | None:
        if self._client is None:
            try:
                self._client = build_client(self.cfg)
            except (ModbusException, ValueError, TypeError, RuntimeError) as e:
                self._bad("connect", f"cannot build the client: {e}")
                return None
        client = self._client
        if client.connected:
            return client
        try:
            ok = await asyncio.wait_for(client.connect(), self.cfg.timeout_ms / 1000 + 1.0)
        except (TimeoutError, OSError, ModbusException) as e:
            ok = False
            detail = str(e) or type(e).__name__
        else:
            detail = "connect failed"
        if not ok:
            client.close()
            c = self.cfg
            self._bad("connect", detail, at=f"{c.host}:{c.port}" if c.host else c.device)
            return None
        self.stats["connects"] += 1
        return client

    async def _cycle(self, loop: asyncio.AbstractEventLoop) -> bool:
        """Read every block once; False when the gateway could not be reached at all."""
        client = await self._connect()
        if client is None:
            return False
        budget = self.cfg.timeout_ms / 1000 * (self.cfg.retries + 1) + 1.0
        rmap = self.cfg.registers
        span = rmap.span
        for req in self.plan:
            if self._stop.is_set():
                break
            self.stats["reads"] += 1
            where = {"device_id": req.unit, "address": req.address, "count": req.count}
            try:
                rr = await asyncio.wait_for(
                    client.read_holding_registers(req.address, count=req.count, device_id=req.unit),
                    budget,
                )
            except ConnectionException as e:
                self._bad("connect", str(e), **where)
                client.close()
                return False
            except ModbusIOException as e:
                reason = "timeout" if "no response" in str(e).lower() else "decode"
                self._bad(reason, str(e), **where)
                continue
            except TimeoutError:
                self._bad("timeout", "no reply", **where)
                continue
            except ModbusException as e:
                self._bad("modbus_exception", str(e), **where)
                continue
            if rr.isError():
                code = getattr(rr, "exception_code", None)
                self._bad("modbus_exception", f"exception code {code}", code=code, **where)
                continue
            regs = list(getattr(rr, "registers", []))
            if len(regs) < req.count:
                self._bad("decode", f"{len(regs)} registers in the reply", **where)
                continue
            now = loop.time()
            ts = self.clock()
            for off, spec in req.blocks:
                m = spec.machine
                block = regs[off : off + span]
                tracker = self.trackers[m]
                fresh = m in self._down or tracker.suspect > 0
                self._alive(m, now)
                if block == self._last_regs.get(m) and not fresh:
                    continue  # an idle machine: nothing to decode (most of them, most polls)
                self._last_regs[m] = block
                reading = decode_block(rmap, block)
                for err in reading.errors:
                    self._bad("decode", str(err), machine=m, field=err.field)
                self._out += tracker.update(reading, ts)
            if self._out:
                self._flush()
        return True

    # ------------------------------------------------------------- link state

    def _alive(self, machine: str, now: float) -> None:
        self._last_ok[machine] = now
        if machine in self._down:
            self._down.discard(machine)
            if self.link_up:  # one machine back; a whole gateway back is one line below
                self.log.info("machine answers again", machine=machine)
        if not self.link_up:
            self.link_up = True
            self.stats["link_up"] += 1
            self.log.info("gateway answers")
            self._link(self.name, True)

    def _check_silence(self, now: float) -> None:
        limit = self.cfg.link_down_s
        lost: list[str] = []
        for machine in self.trackers:
            if machine not in self._down and now - self._last_ok.get(machine, now) >= limit:
                lost.append(machine)
        if not lost:
            return
        ts = self.clock()
        for machine in lost:
            self._down.add(machine)
            self.stats["machine_down"] += 1
            self._out += self.trackers[machine].lost(ts)
        if len(self._down) < len(self.trackers):
            for machine in lost:
                self.burst.warn("machine_silent", "machine silent", machine=machine, seconds=limit)
        elif self.link_up:
            self.link_up = False
            self.stats["link_down"] += 1
            self.burst.warn("link_down", "gateway silent", seconds=limit)
            self._link(self.name, False)

    # ------------------------------------------------------------- reporting

    def _flush(self) -> None:
        if not self._out:
            return
        batch, self._out = self._out, []
        self.stats["events"] += len(batch)
        deliver(self.emit, batch, self._tasks, self.stats, self.log)

    def _bad(self, reason: str, detail: str, **context: Any) -> None:
        self.stats[f"error_{reason}"] += 1
        self._reject(reason)
        self.burst.warn(reason, "bad Modbus input", detail=detail, **context)

    def _note(self, kind: str, n: int, **context: Any) -> None:
        self.stats[kind] += n
        if self._count is not None:
            self._count(kind, n)
        if kind == "reconciled_games":
            self.log.info("games reconciled from meters", games=n, **context)
        elif kind in ANOMALIES or kind == "meter_rollover":
            self.burst.warn(kind, "Modbus anomaly", **context)

    # ------------------------------------------------------------------ state

    def _load_state(self) -> dict[str, dict[str, Any]]:
        if self.state_path is None or not self.state_path.exists():
            return {}
        try:
            data = json.loads(self.state_path.read_text(encoding="utf-8"))
            out: dict[str, dict[str, Any]] = {}
            for k, v in data.items():
                card = v.get("card")
                win = v.get("win")
                out[str(k)] = {
                    "games": int(v["games"]),
                    "coin_in": int(v["coin_in"]),
                    "win": None if win is None else int(win),
                    "era": int(v.get("era", 0)),
                    "card": card if isinstance(card, str) else None,
                }
                at = v.get("at")  # the last good read: games played since span from it
                if isinstance(at, str):
                    datetime.fromisoformat(at)  # a bad one: the file is unreadable
                    out[str(k)]["at"] = at
            return out
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            self.log.warning("state file unreadable; meters start a new baseline", error=str(e))
            return {}

    def state(self) -> dict[str, dict[str, Any]]:
        """The accounted meters and card of every machine that has a baseline."""
        out: dict[str, dict[str, Any]] = {}
        for machine, t in self.trackers.items():
            saved = t.saved()
            if saved is not None:
                out[machine] = saved
        return out

    def save_state(self) -> None:
        if self.state_path is None:
            return
        tmp = self.state_path.with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps(self.state(), sort_keys=True), encoding="utf-8")
            os.replace(tmp, self.state_path)
            for t in self.trackers.values():
                t.dirty = False
        except OSError as e:
            self.log.warning("state file not written", error=str(e))

    async def _save_every(self, seconds: float) -> None:
        while True:
            await asyncio.sleep(seconds)
            if any(t.dirty for t in self.trackers.values()):
                self.save_state()

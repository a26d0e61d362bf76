"""Validated settings of a Modbus gateway (`[[sources.modbus]]`).

A gateway is one Modbus server (a TCP box, or an RTU device on a serial line)
that exposes a block of holding registers per slot machine.  Unknown keys are
errors and the machine blocks are checked against each other: a typo or two
machines on one block must fail at start, not misattribute play on the floor.
"""

from __future__ import annotations

import itertools
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from adapters.modbus.profile import DEFAULT_MAP, RegisterMap

_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class ModbusMachineConfig(_Model):
    """One machine's block: by `index` (base + index x stride) or by start `address`."""

    machine: str = Field(min_length=1, max_length=64)
    index: int | None = Field(default=None, ge=0, le=4095)
    address: int | None = Field(default=None, ge=0, le=65535, description="protocol address")
    device_id: int | None = Field(default=None, ge=0, le=255, description="default: gateway's")
    denomination: int = Field(default=1, gt=0, description="minor units (cents) per credit")

    @model_validator(mode="after")
    def _one_place(self) -> ModbusMachineConfig:
        if (self.index is None) == (self.address is None):
            raise ValueError("give exactly one of index or address")
        return self


class ModbusGatewayConfig(_Model):
    """One gateway, its connection, its register map and the machines behind it."""

    name: str = Field(min_length=1, max_length=64)
    transport: Literal["tcp", "rtu"]
    host: str | None = Field(default=None, description="tcp: gateway host")
    port: int = Field(default=502, ge=1, le=65535, description="tcp: gateway port")
    device: str | None = Field(default=None, description="rtu: serial port, e.g. /dev/ttyUSB0")
    baud: int = Field(default=19200, gt=0)
    parity: Literal["N", "E", "O"] = "E"
    stopbits: Literal[1, 2] = 1
    device_id: int = Field(default=1, ge=0, le=255, description="Modbus unit / device id")
    poll_ms: int = Field(default=500, ge=20, le=60_000)
    timeout_ms: int = Field(default=1000, ge=10, le=30_000)
    retries: int = Field(default=1, ge=0, le=5)
    link_down_s: float = Field(default=5.0, gt=0)
    reconnect_max_s: float = Field(default=5.0, gt=0, description="cap of the reconnect backoff")
    base: int = Field(default=0, ge=0, le=65535, description="address of the block of index 0")
    max_gap: int = Field(
        default=16, ge=0, le=124, description="unused registers read through to merge blocks"
    )
    max_games_jump: int = Field(
        default=5000, ge=1, description="a larger games delta in one read is implausible"
    )
    max_wager: int = Field(
        default=1_000_000, gt=0, description="minor units; a larger average wager is implausible"
    )
    registers: RegisterMap = DEFAULT_MAP
    machines: list[ModbusMachineConfig] = Field(min_length=1, max_length=4096)

    @model_validator(mode="after")
    def _consistent(self) -> ModbusGatewayConfig:
        problems: list[str] = []
        if not _NAME.match(self.name):
            problems.append("name: lower-case letters, digits, '-' and '_' only")
        if self.transport == "tcp" and not self.host:
            problems.append("host: a tcp gateway needs its host")
        if self.transport == "rtu" and not self.device:
            problems.append("device: an rtu gateway needs its serial port, e.g. '/dev/ttyUSB0'")
        if self.transport != "tcp" and self.host is not None:
            problems.append("host: only for transport = 'tcp'")
        if self.transport != "rtu" and self.device is not None:
            problems.append("device: only for transport = 'rtu'")
        seen: set[str] = set()
        for m in self.machines:
            if m.machine in seen:
                problems.append(f"machines: machine {m.machine!r} appears twice")
            seen.add(m.machine)
        span = self.registers.span
        blocks = sorted((self.unit(m), self.start(m), m.machine) for m in self.machines)
        for (u1, s1, m1), (u2, s2, m2) in itertools.pairwise(blocks):
            if u1 == u2 and s2 < s1 + span:
                problems.append(f"machines: blocks of {m1!r} and {m2!r} overlap (device {u1})")
        for unit, start, machine in blocks:
            if start + span > 65536:
                problems.append(f"machines: block of {machine!r} ends past 65535 (device {unit})")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def start(self, m: ModbusMachineConfig) -> int:
        """Protocol address (0-based) of the machine's first register."""
        if m.address is not None:
            return m.address
        assert m.index is not None
        return self.base + m.index * self.registers.stride

    def unit(self, m: ModbusMachineConfig) -> int:
        """Device id the machine's block is read from."""
        return self.device_id if m.device_id is None else m.device_id

"""Validated settings of a SAS channel and of the `raps sas-agent` edge agent.

A channel is one SAS loop: one serial port (or a TCP gateway, or an in-memory
simulated loop) with the machines on it.  Unknown keys are errors, types are
strict, and the SAS timing limits are checked: a typo must not silently give a
default on a casino floor.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator

from adapters.sas.egm import EgmProfile
from adapters.sas.poller import MachineSpec, Timing

_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class SasMachineConfig(_Model):
    """One machine on the loop: its SAS address, the floor's machine id, its credit value."""

    address: int = Field(ge=1, le=127)
    machine: str = Field(min_length=1, max_length=64)
    denomination: int = Field(default=1, gt=0, description="minor units (cents) per credit")


class SimulatorConfig(_Model):
    """How the simulated machines of a `memory` channel play (adapters.sas.egm.EgmProfile)."""

    games_per_minute: float = Field(default=10.0, gt=0)
    bet_credits: list[int] = Field(default_factory=lambda: [1, 2, 5, 10, 20], min_length=1)
    game_seconds: float = Field(default=2.5, ge=0)
    hit_rate: float = Field(default=0.3, ge=0, le=1)
    doors_per_hour: float = Field(default=0.0, ge=0)
    door_seconds: float = Field(default=20.0, ge=0)
    tilts_per_hour: float = Field(default=0.0, ge=0)
    link_drops_per_hour: float = Field(default=0.0, ge=0)
    link_drop_seconds: float = Field(default=8.0, gt=0)
    corrupt_rate: float = Field(default=0.0, ge=0, le=1)
    seed: int | None = None

    def profile(self, offset: int = 0) -> EgmProfile:
        return EgmProfile(
            games_per_minute=self.games_per_minute,
            bet_credits=tuple(self.bet_credits),
            game_seconds=self.game_seconds,
            hit_rate=self.hit_rate,
            doors_per_hour=self.doors_per_hour,
            door_seconds=self.door_seconds,
            tilts_per_hour=self.tilts_per_hour,
            link_drops_per_hour=self.link_drops_per_hour,
            link_drop_seconds=self.link_drop_seconds,
            corrupt_rate=self.corrupt_rate,
            seed=None if self.seed is None else self.seed + offset,
        )


class SasChannelConfig(_Model):
    """One SAS loop and its machines."""

    name: str = Field(min_length=1, max_length=64)
    transport: Literal["memory", "tcp", "serial"]
    device: str | None = Field(default=None, description="serial port, e.g. /dev/ttyS0")
    host: str | None = Field(default=None, description="tcp gateway host")
    port: int | None = Field(default=None, ge=1, le=65535, description="tcp gateway port")
    baud: int = Field(default=19200, gt=0)
    machines: list[SasMachineConfig] = Field(min_length=1, max_length=127)
    poll_ms: int = Field(default=200, ge=40, le=5000)
    realtime: bool = True
    reply_timeout_ms: int = Field(default=20, ge=1, le=1000)
    inter_byte_ms: int = Field(default=5, ge=1, le=1000)
    rx_latency_ms: int = Field(
        default=0,
        ge=0,
        le=100,
        description="receive latency of a USB-serial adapter (FTDI latency_timer), added to "
        "the reply and inter-byte windows; serial ports on ttyUSB read it from sysfs",
    )
    link_down_s: float = Field(default=5.0, gt=0)
    attempts: int = Field(default=3, ge=1, le=3)
    game_end_timeout_s: float = Field(default=30.0, gt=0)
    meter_sync_s: float = Field(default=300.0, gt=0)
    simulate: SimulatorConfig | None = None

    @model_validator(mode="after")
    def _consistent(self) -> SasChannelConfig:
        problems: list[str] = []
        if not _NAME.match(self.name):
            problems.append("name: lower-case letters, digits, '-' and '_' only")
        if self.poll_ms < 200 and not self.realtime:
            problems.append("poll_ms: below 200 ms only with realtime = true (SAS 6.02 §2.3.3)")
        if self.transport == "serial" and not self.device:
            problems.append("device: a serial channel needs its port, e.g. '/dev/ttyS0'")
        if self.transport == "tcp" and (not self.host or self.port is None):
            problems.append("host, port: a tcp channel needs both")
        if self.transport != "serial" and self.device is not None:
            problems.append("device: only for transport = 'serial'")
        if self.transport != "tcp" and (self.host is not None or self.port is not None):
            problems.append("host, port: only for transport = 'tcp'")
        if self.simulate is not None and self.transport != "memory":
            problems.append("simulate: only for transport = 'memory'")
        for key in ("address", "machine"):
            seen: set[Any] = set()
            for m in self.machines:
                v = getattr(m, key)
                if v in seen:
                    problems.append(f"machines: {key} {v!r} appears twice")
                seen.add(v)
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def timing(self) -> Timing:
        return Timing(
            poll_s=self.poll_ms / 1000,
            reply_timeout_s=self.reply_timeout_ms / 1000,
            inter_byte_s=self.inter_byte_ms / 1000,
            link_down_s=self.link_down_s,
            attempts=self.attempts,
            game_end_timeout_s=self.game_end_timeout_s,
            meter_sync_s=self.meter_sync_s,
            baud=self.baud,
            rx_latency_s=self.rx_latency_ms / 1000,
        )

    def specs(self) -> list[MachineSpec]:
        return [MachineSpec(m.address, m.machine, m.denomination) for m in self.machines]


def simulated_channels(
    machines: list[str],
    per_channel: int = 32,
    denomination: int = 1,
    simulate: SimulatorConfig | None = None,
    prefix: str = "sim",
) -> list[SasChannelConfig]:
    """In-memory channels of simulated machines for the given ids (`raps demo`, bench)."""
    sim = simulate or SimulatorConfig()
    out = []
    for c, start in enumerate(range(0, len(machines), per_channel)):
        ids = machines[start : start + per_channel]
        out.append(
            SasChannelConfig(
                name=f"{prefix}{c + 1}",
                transport="memory",
                machines=[
                    SasMachineConfig(address=i + 1, machine=mid, denomination=denomination)
                    for i, mid in enumerate(ids)
                ],
                simulate=sim,
            )
        )
    return out


class AgentMqttConfig(_Model):
    """The broker the agent publishes FloorEvents to."""

    host: str = Field(default="127.0.0.1", min_length=1)
    port: int = Field(default=1883, ge=1, le=65535)
    client_id: str = ""  # "raps-sas-agent-{site}" when empty
    username: str | None = None
    password: SecretStr | None = None
    tls: bool = False
    ca_file: str | None = None
    topic_prefix: str = "raps/v1"


class SasAgentConfig(_Model):
    """`raps sas-agent --config FILE`: one site, its broker, the channels of this edge box."""

    site: str = Field(min_length=1, max_length=64)
    mqtt: AgentMqttConfig = Field(default_factory=AgentMqttConfig)
    state_dir: str | None = Field(
        default=None, description="reconciliation state per channel; default $STATE_DIRECTORY or ."
    )
    log_format: Literal["json", "console"] = "json"
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    channels: list[SasChannelConfig] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> SasAgentConfig:
        if not _NAME.match(self.site):
            raise ValueError("site: lower-case letters, digits, '-' and '_' only")
        names = [c.name for c in self.channels]
        if len(set(names)) != len(names):
            raise ValueError("channels: every channel needs its own name")
        ids = [m.machine for c in self.channels for m in c.machines]
        if len(set(ids)) != len(ids):
            raise ValueError("channels: a machine id appears on two channels")
        return self


class AgentConfigError(ValueError):
    """The agent's config file is unreadable or invalid; the message lists every problem."""


def load_agent_config(path: str | Path) -> SasAgentConfig:
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as e:
        raise AgentConfigError(f"{p}: {e.strerror}") from e
    except tomllib.TOMLDecodeError as e:
        raise AgentConfigError(f"{p}: TOML syntax error: {e}") from e
    try:
        return SasAgentConfig.model_validate(data)
    except ValidationError as e:
        lines = []
        for err in e.errors():
            key = ".".join(str(x) for x in err["loc"]) or "(top)"
            lines.append(f"{p}: {key}: {err['msg']}")
        raise AgentConfigError("\n".join(lines)) from None

"""`SasChannel`: one SAS loop as a floor source, for the daemon or the edge agent.

The glue between a channel's config, its transport and the poller: it builds
the transport the config names (and, for `memory`, the simulated machines on
it), keeps the reconciliation state in a small JSON file so that games missed
while the process was down are still produced after a restart, and reports
through three callbacks that the host wires to its own ingest and metrics.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog

from adapters.sas.bonus import BonusBook
from adapters.sas.config import SasChannelConfig
from adapters.sas.egm import Egm, SimulatedBus
from adapters.sas.poller import METER_MODULUS, ChannelPoller
from adapters.sas.transport import (
    InMemoryTransport,
    SerialTransport,
    TcpFramedTransport,
    Transport,
)
from selector.events import AnyFloorEvent

STATE_SAVE_SECONDS = 5.0


def _utc_now() -> datetime:
    return datetime.now(UTC)


def build_transport(cfg: SasChannelConfig) -> tuple[Transport, list[Egm]]:
    """The transport a channel config names; for `memory`, its simulated machines too."""
    if cfg.transport == "serial":
        assert cfg.device is not None
        return SerialTransport(cfg.device, cfg.baud), []
    if cfg.transport == "tcp":
        assert cfg.host is not None and cfg.port is not None
        return TcpFramedTransport(cfg.host, cfg.port), []
    host, device = InMemoryTransport.pair()
    profile = cfg.simulate
    egms = [
        Egm(m.address, m.denomination, profile.profile(i) if profile else None)
        for i, m in enumerate(cfg.machines)
    ]
    for egm in egms:
        egm.meters.games_played = simulated_game_meter()
    SimulatedBus(device, egms)
    return host, egms


def simulated_game_meter(now: float | None = None) -> int:
    """Where a simulated machine's lifetime game meter starts: a real machine's meters go
    on across restarts of the host, the simulated ones are new with each process. Started
    at 0, every start numbered its games 1, 2, ... again, and a restarted daemon dropped
    them all as duplicates of the events (ids `sas-{machine}-g{number}`) of the start
    before. Tenths of a second of the wall clock: the numbers of one start stay clear of an
    earlier start's for any machine playing fewer than 10 games a second."""
    t = time.time() if now is None else now
    return int(t * 10) % METER_MODULUS


class SasChannel:
    """One SAS loop feeding FloorEvents to `emit`.

    - `emit(events)`: a batch of GamePlayed / MachineStatusChanged (an awaitable
      result is awaited in the background).
    - `reject(reason)`: one bad frame or failed poll, by reason (crc, truncated,
      overlong, bcd, unknown_exception, address, command, length, no_reply,
      babble, transport).
    - `link(name, up)`: the channel answers (at least one machine does) or not.
    - `count(kind, n)` (optional): anomalies and `reconciled_games`.
    """

    def __init__(
        self,
        cfg: SasChannelConfig,
        transport: Transport | None,
        emit: Callable[[list[AnyFloorEvent]], object],
        reject: Callable[[str], None],
        link: Callable[[str, bool], None],
        *,
        clock: Callable[[], datetime] = _utc_now,
        count: Callable[[str, int], None] | None = None,
        state_path: Path | None = None,
        bonus_path: Path | None = None,
    ) -> None:
        self.cfg = cfg
        self.simulators: list[Egm] = []
        if transport is None:
            transport, self.simulators = build_transport(cfg)
        self.state_path = state_path
        self.log = structlog.get_logger("raps").bind(component="sas", channel=cfg.name)
        if bonus_path is None and state_path is not None:
            bonus_path = state_path.with_name(f"{state_path.stem}.bonus.jsonl")
        self.bonus_book = BonusBook(bonus_path) if bonus_path is not None else None
        self._count = count
        self.poller = ChannelPoller(
            cfg.name,
            transport,
            cfg.specs(),
            emit=emit,
            clock=clock,
            reject=reject,
            link=link,
            count=count,
            realtime=cfg.realtime,
            timing=cfg.timing(),
            state=self._load_state(),
            bonus_record=self.bonus_book.append if self.bonus_book is not None else None,
        )
        self.unconfirmed_at_start = self._open_bonuses()

    @property
    def name(self) -> str:
        return self.cfg.name

    @property
    def source(self) -> str:
        """The `source` of the events this channel emits (`sas:NAME`)."""
        return self.poller.source

    @property
    def link_up(self) -> bool:
        return self.poller.link_up

    @property
    def stats(self) -> dict[str, int]:
        return dict(self.poller.stats)

    async def run(self) -> None:
        """Poll until cancelled or stopped; the state file is written on the way out."""
        saver = asyncio.create_task(self._save_every(STATE_SAVE_SECONDS))
        try:
            await self.poller.run()
        finally:
            saver.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await saver
            self.save_state()
            await self.poller.transport.close()

    def stop(self) -> None:
        self.poller.stop()

    async def legacy_bonus(
        self, machine: str, amount: int, tax_status: int = 0, timeout: float = 10.0
    ) -> str:
        """Pay `amount` minor units to a machine's credit meter (long poll 8A), exactly once.

        Returns paid, nack, busy, not_paid, not_sent or unconfirmed (for a person to check:
        it is never retried); every step is in the bonus book when the channel has one.
        The amount must be whole credits.
        """
        spec = next((m for m in self.cfg.machines if m.machine == machine), None)
        if spec is None:
            raise KeyError(f"machine {machine!r} is not on channel {self.name}")
        credits, rest = divmod(amount, spec.denomination)
        if rest or credits <= 0:
            raise ValueError(f"{amount} is not a positive multiple of {spec.denomination}")
        return await self.poller.legacy_bonus(machine, credits, tax_status, timeout)

    def _open_bonuses(self) -> list[dict[str, object]]:
        """Bonuses the book shows open (a crash between send and confirmation): each is
        closed as unconfirmed, counted and logged for a person to check, never resent."""
        if self.bonus_book is None:
            return []
        try:
            open_ = self.bonus_book.open_attempts()
        except OSError as e:
            self.log.error("bonus book unreadable: check bonuses by hand", error=str(e))
            return []
        for rec in open_:
            final = {**rec, "action": "unconfirmed", "outcome": "unconfirmed",
                     "detail": f"open at restart (last step: {rec.get('action')})",
                     "ts": _utc_now().isoformat()}  # fmt: skip
            self.bonus_book.append(final)
            if self._count is not None:
                self._count("legacy_bonus_unconfirmed", 1)
            self.log.warning("legacy bonus unconfirmed after restart", **final)
        return open_

    # ------------------------------------------------------------------ state

    def _load_state(self) -> dict[str, dict[str, Any]] | None:
        if self.state_path is None or not self.state_path.exists():
            return None
        try:
            data = json.loads(self.state_path.read_text(encoding="utf-8"))
            out: dict[str, dict[str, Any]] = {}
            for k, v in data.items():
                out[str(k)] = {"games": int(v["games"]), "coin_in": int(v["coin_in"])}
                if isinstance(v.get("at"), str):  # when the meters were last known good
                    datetime.fromisoformat(v["at"])  # a bad one: the file is unreadable
                    out[str(k)]["at"] = v["at"]
            return out
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            self.log.warning("state file unreadable; meters start a new baseline", error=str(e))
            return None

    def save_state(self) -> None:
        if self.state_path is None:
            return
        tmp = self.state_path.with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps(self.poller.state(), sort_keys=True), encoding="utf-8")
            os.replace(tmp, self.state_path)
            self.poller.dirty = False
        except OSError as e:
            self.log.warning("state file not written", error=str(e))

    async def _save_every(self, seconds: float) -> None:
        while True:
            await asyncio.sleep(seconds)
            if self.poller.dirty:
                self.save_state()

"""The SAS host poller: one asyncio loop per serial channel (SAS loop).

Each machine on the channel gets one poll slot per cadence (200 ms, or down to
40 ms with real-time event reporting), spread evenly over the cycle.  In its
slot a machine gets one transaction: a queued long poll (enable real-time
events, identity, meters, a legacy bonus) or else a general poll.  A
transaction is the poll, a reply inside the 20 ms window with at most 5 ms
between bytes, and up to three tries (the repeat is SAS's implied NACK).  When
a reply carried information and the next message on the wire would be the very
same poll, a sync poll to address 0 goes first: that is the implied ACK.

What it makes of the replies (docs/sas.md has the whole table):

- 7E opens a game (credits wagered x denomination = wager), 7F closes it with
  the win and emits one `GamePlayed`.  No 7F within `game_end_timeout_s`, or a
  new 7E first: the open game is emitted with win 0.
- Doors, power, operator menus and out-of-service -> `MachineStatusChanged`;
  a machine silent for `link_down_s` -> offline, and online when it answers.
- Reconciliation: on link up, power up, exception 70, a gap in the coin-in
  meter and every `meter_sync_s`, long poll 0F reads coin-in and games played.
  Games the meters counted but no 7E reported are emitted as GamePlayed with
  the unexplained coin-in spread over them, ids from the games-played meter, and
  counted as "reconciled_games".  Live games use the same ids (`sas-M-gN`, N the
  games-played meter value of the game) so a replay after a restart dedupes.

Bad input never stops the loop: each bad frame is passed to `reject(reason)`
(crc, truncated, overlong, bcd, unknown_exception, address, command, length,
not_realtime, no_reply, babble, transport) and logged once per burst.

Long on purpose: the channel's poll cycle, its per-machine game and meter state and its
reconciliation are one loop over shared state, read top to bottom as the wire runs.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import structlog

from adapters.sas import codec
from adapters.sas.bonus import BASELINE, CONFIRM, SEND, BonusAttempt
from adapters.sas.codec import (
    Ack,
    Busy,
    EventReply,
    ExceptionReply,
    GamesImplementedReply,
    HandpayReply,
    MachineInfoReply,
    MetersReply,
    Nack,
    Reply,
    Request,
    SasError,
)
from adapters.sas.exceptions import EXCEPTIONS, Effect
from adapters.sas.transport import Transport, TransportError
from adapters.wire.delivery import BurstLog, deliver
from selector.events import AnyFloorEvent, GamePlayed, MachineStatus, MachineStatusChanged

SYNC = codec.general_poll(0)  # nobody answers address 0: an implied ACK for everyone
METER_MODULUS = 100_000_000  # 4 BCD bytes roll over after 99,999,999
MAX_REPLY = 300
LONG_POLL_TRIES = 5  # slots a queued long poll may use (busy, no reply) before it is dropped
LATE_S = 0.020  # a slot that starts later than one reply window counts as late (stats)
QUIET = frozenset({0x00, 0x1F})  # the one-byte replies a machine in real-time mode may give
BITS_PER_BYTE = 11  # start, 8 data, wakeup (parity), stop
BONUS_JOBS = frozenset({"bonus", "bonus_meters"})  # survive a link drop: their state is kept


@dataclass(frozen=True, slots=True)
class Timing:
    """SAS 6.02 §2.3 timings and the poller's own limits, in seconds."""

    poll_s: float = 0.2
    reply_timeout_s: float = 0.020
    inter_byte_s: float = 0.005
    link_down_s: float = 5.0
    attempts: int = 3
    game_end_timeout_s: float = 30.0
    meter_sync_s: float = 300.0
    reopen_s: float = 1.0
    baud: int = 19200  # the wire's rate: when the host's last byte has left (reply window)
    rx_latency_s: float = 0.0  # what a USB-serial adapter holds received bytes back (FTDI)

    @property
    def probe_s(self) -> float:
        """No CRC-checked reply for this long: probe with a cheap long poll (1A)."""
        return self.link_down_s / 2


@dataclass(frozen=True, slots=True)
class MachineSpec:
    address: int
    machine: str
    denomination: int  # minor units per credit


@dataclass(slots=True)
class _Game:
    event_id: str
    wager: int  # minor units; while `unsure`, the provisional coin-in delta
    started: float
    credits: int = 0  # 7E credits wagered, in the player's denomination
    delta: int = 0  # coin-in meter delta at the 7E, accounting credits
    unsure: bool = False  # the delta is not credits x the known player ratio: meters decide
    ended: bool = False  # 7F seen while unsure: emitted once the meters resolved the wager
    win: int = 0


@dataclass(slots=True)
class _Job:
    kind: str  # rte, identity, games, sync, probe, handpay, bonus_meters, bonus
    msg: bytes
    req: Request
    tries: int = 0
    done: asyncio.Future[str] | None = None
    bonus: BonusAttempt | None = None


class _Machine:
    __slots__ = (
        "accounted_at",
        "accounted_coin",
        "accounted_games",
        "accounted_out",
        "bonuses",
        "doors",
        "ends_seen",
        "games_implemented",
        "gap_coin",
        "gp",
        "gp_req",
        "identified",
        "jobs",
        "last_ok",
        "menu",
        "next_sync",
        "oos",
        "pending",
        "player_ratio",
        "power_off",
        "probe",
        "probe_failed",
        "quiet_rte",
        "rte",
        "silent_polls",
        "spec",
        "starts_seen",
        "status",
        "unnumbered",
        "up",
    )

    def __init__(self, spec: MachineSpec) -> None:
        self.spec = spec
        self.gp = codec.general_poll(spec.address)
        self.gp_req = Request(spec.address, None)
        self.up = False
        self.last_ok = 0.0
        self.status: MachineStatus | None = None
        self.doors: set[str] = set()
        self.menu = False
        self.oos = False
        self.power_off = False
        self.rte = False
        self.identified = False
        self.jobs: list[_Job] = []
        self.pending: _Game | None = None
        self.accounted_games: int | None = None
        self.accounted_coin: int | None = None
        self.accounted_out: int | None = None  # coin out + jackpot (meter-driven mode)
        # when the accounted meters were last known good (a meter read, a game's 7E): games
        # the meters show later were played after it, their rebuilt events span from it
        self.accounted_at: datetime | None = None
        self.unnumbered = 0
        self.ends_seen = 0  # plain 7F / 7E exceptions (no data) since the last meter read
        self.starts_seen = 0
        self.gap_coin = 0  # coin-in that live 7Es skipped over: wagers of missed games
        self.next_sync = 0.0
        self.player_ratio = 1  # player credit / accounting credit, learned from the meters
        self.games_implemented: int | None = None
        self.bonuses: list[BonusAttempt] = []
        probe = codec.long_poll(spec.address, codec.LP_CURRENT_CREDITS)
        self.probe = _Job("probe", probe, codec.decode_request(probe))
        self.probe_failed = False  # a probe went unanswered since the last checked reply
        self.quiet_rte = False  # says nothing to an idle general poll in real-time mode
        self.silent_polls = 0


def _loop_time() -> float:
    return asyncio.get_running_loop().time()


def spread(total: int, n: int) -> list[int]:
    """`total` over `n` parts as evenly as integers go; the first parts take the remainder."""
    if n <= 0:
        return []
    base, extra = divmod(max(total, 0), n)
    return [base + 1 if i < extra else base for i in range(n)]


def meter_delta(new: int, old: int) -> int:
    """new - old for a 4-byte BCD meter, across one roll-over past 99,999,999."""
    d = new - old
    if d < 0 and old - new > METER_MODULUS // 2:
        d += METER_MODULUS
    return d


class ChannelPoller:
    """Polls the machines of one SAS loop and turns what they say into FloorEvents."""

    def __init__(
        self,
        name: str,
        transport: Transport,
        machines: list[MachineSpec],
        *,
        emit: Callable[[list[AnyFloorEvent]], object],
        clock: Callable[[], datetime],
        reject: Callable[[str], None] | None = None,
        link: Callable[[str, bool], None] | None = None,
        count: Callable[[str, int], None] | None = None,
        realtime: bool = True,
        timing: Timing | None = None,
        source: str | None = None,
        state: dict[str, dict[str, Any]] | None = None,
        bonus_record: Callable[[dict[str, Any]], None] | None = None,
        now: Callable[[], float] | None = None,
    ) -> None:
        if not machines:
            raise ValueError(f"channel {name}: no machines")
        self.name = name
        self.transport = transport
        self.machines = [_Machine(s) for s in machines]
        self.by_id = {m.spec.machine: m for m in self.machines}
        self.emit = emit
        self.clock = clock
        self._reject = reject
        self._link = link
        self._count = count
        self.realtime = realtime
        self.timing = timing or Timing()
        self.source = source or f"sas:{name}"
        self.stats: Counter[str] = Counter()
        self.log = structlog.get_logger("raps").bind(component="sas", channel=name)
        self.burst = BurstLog(self.log)
        self.link_up = False
        self._out: list[AnyFloorEvent] = []
        self._tasks: set[asyncio.Future[Any]] = set()
        self._last_msg = b""
        self._last_info = False
        self._stopping = False
        self._transport_ok = False
        self._bonus_record = bonus_record
        self._bonus_seq = 0
        self._bonus_futs: dict[str, asyncio.Future[str]] = {}
        self._now = now or _loop_time
        self._wire_free = 0.0  # when the host's last byte has left the UART (expected)
        self.max_reply_delay_s = 0.0  # first reply byte after the poll's last byte, measured
        self.dirty = False
        for m in self.machines:
            saved = (state or {}).get(m.spec.machine)
            if saved:
                m.accounted_games = saved.get("games")
                m.accounted_coin = saved.get("coin_in")
                at = saved.get("at")
                m.accounted_at = datetime.fromisoformat(at) if isinstance(at, str) else None

    # ------------------------------------------------------------------ public

    def state(self) -> dict[str, dict[str, Any]]:
        """What reconciliation needs after a restart: the meters accounted for so far, and
        when they were known good (the games played while down span from then)."""
        out: dict[str, dict[str, Any]] = {}
        for m in self.machines:
            if m.accounted_games is not None and m.accounted_coin is not None:
                row: dict[str, Any] = {"games": m.accounted_games, "coin_in": m.accounted_coin}
                if m.accounted_at is not None:
                    row["at"] = m.accounted_at.isoformat()
                out[m.spec.machine] = row
        return out

    def stop(self) -> None:
        self._stopping = True

    async def legacy_bonus(
        self, machine: str, credits: int, tax_status: int = 0, timeout: float = 10.0
    ) -> str:
        """Pay a promotional prize to a machine (long poll 8A) exactly once (adapters.sas.bonus).

        Returns paid (confirmed by the legacy bonus meters or 7C), nack, busy, not_paid
        (confirmed not paid), not_sent (the machine never answered) or unconfirmed (sent,
        not confirmed either way within `timeout`: for a person to check; never retried).
        """
        m = self.by_id[machine]
        loop = asyncio.get_running_loop()
        self._bonus_seq += 1
        ms = int(self.clock().timestamp() * 1000)
        b = BonusAttempt(f"bonus-{machine}-{ms}-{self._bonus_seq}", machine, credits,
                         tax_status, loop.time() + timeout)  # fmt: skip
        fut: asyncio.Future[str] = loop.create_future()
        self._bonus_futs[b.bonus_id] = fut
        m.bonuses.append(b)
        self._bonus_note(b, "requested")
        self._bonus_job(m, b)
        try:  # the poller settles it by the deadline; this only guards a stopped loop
            return await asyncio.wait_for(asyncio.shield(fut), timeout + 5.0)
        except TimeoutError:
            b.expire()
            self._bonus_done(m, b)
            return b.outcome or "unconfirmed"

    async def run(self) -> None:
        """Poll until stopped; a failed transport is reopened, the loop never gives up."""
        backoff = self.timing.reopen_s
        loop = asyncio.get_running_loop()
        for m in self.machines:  # silence counts from now, not from the epoch
            m.last_ok = m.last_ok or loop.time()
        while not self._stopping:
            try:
                await self.transport.open()
                self._transport_ok = True
                backoff = self.timing.reopen_s
                await self._cycle(loop)
            except TransportError as e:
                self._transport_ok = False
                self._bad(None, "transport", f"transport failed: {e}")
                await self.transport.close()
                self._check_timeouts(loop.time())
                self._flush()
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 30.0)
        self._flush_pending_games()
        self._flush()

    # ---------------------------------------------------------------- the loop

    async def _cycle(self, loop: asyncio.AbstractEventLoop) -> None:
        machines = self.machines
        n = len(machines)
        period = self.timing.poll_s
        slot = period / n
        t0 = loop.time()
        k = 0
        stats = self.stats
        while not self._stopping:
            due = t0 + k * slot
            now = loop.time()
            if now < due:
                await asyncio.sleep(due - now)
                now = loop.time()
            elif now - due >= period:  # more than a whole cycle behind: those slots are lost
                skipped = int((now - due) / slot)
                stats["missed_slots"] += skipped
                stats["slots"] += skipped
                k += skipped
                continue
            m = machines[k % n]
            k += 1
            stats["slots"] += 1
            if now - due > LATE_S:
                stats["late_slots"] += 1
            try:
                await self._service(m, now)
            except (TransportError, asyncio.CancelledError):
                raise
            except Exception:  # a bug must cost one slot, not the channel
                stats["internal_error"] += 1
                self.log.exception("poll slot failed", machine=m.spec.machine)
            if self._out:
                self._flush()

    async def _service(self, m: _Machine, now: float) -> None:
        if m.pending is not None and now - m.pending.started >= self.timing.game_end_timeout_s:
            self.stats["game_end_timeout"] += 1
            self._close_game(m)
        if m.bonuses:
            self._bonus_deadlines(m, now)
        if m.up:
            if now >= m.next_sync and not any(j.kind == "sync" for j in m.jobs):
                self._queue(m, "sync")
            if now - m.last_ok >= self.timing.probe_s:
                self._queue(m, "probe", front=True)  # silence alone is not a dead link
            job = m.jobs[0] if m.jobs else None
        else:
            job = m.probe  # down: only a poll whose reply carries a CRC can bring it back
        general = job is None
        if job is None:
            reply, strong = await self._transact(m, m.gp, m.gp_req, general=True)
        else:
            if job.kind == "bonus" and job.bonus is not None:
                self._bonus_note(job.bonus, "sending")  # durable before it is on the wire
            job.tries += 1
            reply, strong = await self._transact(m, job.msg, job.req, once=job.kind == "bonus")
        if job is not None and job.kind == "bonus":
            self._bonus_sent(m, job, reply)  # whatever came back, the meters confirm it
        if reply is None:
            if general and m.up and m.rte:
                m.silent_polls += 1
            if job is not None and job.kind == "probe":
                m.probe_failed = True
                if job in m.jobs:
                    self._finish(m, job, "timeout")
            elif job is not None and job.kind not in BONUS_JOBS and job.tries >= LONG_POLL_TRIES:
                self._finish(m, job, "timeout")
            self._check_machine(m, now)
            return
        if general:
            m.silent_polls = 0
        if strong:
            self._alive(m, now)
        elif not m.up:
            self.stats["weak_reply_while_down"] += 1  # one byte proves nothing: noise
            return
        if isinstance(reply, ExceptionReply):
            self._exception(m, reply.code, None)
        elif isinstance(reply, EventReply):
            self._exception(m, reply.code, reply.fields)  # a long poll stays queued (§12.4)
        elif job is not None and job.kind != "bonus":
            self._job_reply(m, job, reply)

    def _tx_end(self, n: int) -> float:
        """When the last of `n` bytes written now leaves the UART: the reply window's start."""
        start = max(self._now(), self._wire_free)
        self._wire_free = start + n * BITS_PER_BYTE / self.timing.baud
        return self._wire_free

    def _rx_latency(self) -> float:
        return max(self.timing.rx_latency_s, getattr(self.transport, "rx_latency_s", 0.0))

    async def _transact(
        self, m: _Machine, msg: bytes, req: Request, *, general: bool = False, once: bool = False
    ) -> tuple[Reply | None, bool]:
        """One poll and its reply; `strong` when the reply had 2+ bytes (address-framed).

        A lone byte (an exception, ACK, NACK) has no CRC: it keeps nothing alive by itself.
        `once`: no immediate repeat (a legacy bonus is confirmed by meters, never repeated).
        """
        t = self.transport
        if msg == self._last_msg and self._last_info:
            await t.send(SYNC, wakeup=True)  # the same poll again would be a NACK
            self._tx_end(len(SYNC))
        quiet = general and m.quiet_rte
        attempts = 1 if once or quiet or not m.up else self.timing.attempts
        garbled = False
        suspect: int | None = None
        for _ in range(attempts):
            stale = t.discard_input()
            if stale:
                self._bad(m, "babble", f"{stale} unexpected bytes on the line")
            self.stats["polls"] += 1
            tx_end = self._tx_end(len(msg))
            await t.send(msg, wakeup=True)
            self._last_msg, self._last_info = msg, False
            try:
                frame = await self._read(req, tx_end)
                if frame is None:
                    if m.up and not quiet:
                        self._bad(m, "no_reply", "no reply within the reply window")
                    continue
                reply = codec.decode_reply(req, frame)
                if m.rte and isinstance(reply, ExceptionReply) and reply.code not in QUIET:
                    # In real-time mode exceptions come as event messages with a CRC: a lone
                    # byte may be line noise that looks like an exception code.  Believe it
                    # when the repeated poll (implied NACK) brings the same byte again: the
                    # machine left real-time mode (a restart), so switch it on again.
                    if suspect != reply.code:
                        if suspect is not None:
                            self._bad(m, "not_realtime", f"one-byte exception 0x{suspect:02X}")
                        suspect = reply.code
                        garbled = True
                        continue
                    m.rte = False
                    self._queue(m, "rte", front=True)
            except SasError as e:
                self._bad(m, e.reason, e.detail, offset=e.offset, poll=msg.hex())
                garbled = True
                continue
            self._last_info = not (
                isinstance(reply, Busy | Nack)
                or (isinstance(reply, ExceptionReply) and reply.code == 0)
            )
            return reply, len(frame) >= 2
        if suspect is not None:
            self._bad(m, "not_realtime", f"one-byte exception 0x{suspect:02X}")
        # A machine that keeps sending what cannot be decoded would get the same poll
        # (an implied NACK) forever: acknowledge it next time and let the meters
        # reconcile whatever it held.
        self._last_info = garbled
        return None, False

    async def _read(self, req: Request, tx_end: float) -> bytes | None:
        """The reply, timed on the wire: the window opens when the poll's last byte has
        left (baud rate x frame length), not when `send()` returned, and a USB-serial
        adapter's receive latency (`rx_latency_s`, FTDI latency_timer) is allowed for."""
        t = self.transport
        buf = bytearray()
        latency = self._rx_latency()
        deadline = tx_end + self.timing.reply_timeout_s + latency
        while True:
            seg = await t.recv(max(0.0, deadline - self._now()))
            if seg is None:
                if not buf:
                    return None
                if codec.could_end_here(req, buf):
                    return bytes(buf)
                raise SasError("truncated", len(buf), "reply stopped before its end")
            now = self._now()
            if not buf:
                self.max_reply_delay_s = max(self.max_reply_delay_s, now - latency - tx_end)
            buf += seg.data
            n = codec.reply_length(req, buf, self.realtime)
            if n is not None and len(buf) >= n:
                return bytes(buf)
            if len(buf) > MAX_REPLY:
                raise SasError("overlong", MAX_REPLY, "reply longer than any SAS message")
            deadline = now + self.timing.inter_byte_s + latency

    # ------------------------------------------------------------- link state

    def _alive(self, m: _Machine, now: float) -> None:
        m.last_ok = now
        if not m.probe_failed and m.silent_polls >= 3 and m.rte and not m.quiet_rte:
            m.quiet_rte = True  # general polls unanswered, the long poll answered
            self.log.info("machine is silent when idle in real-time mode", machine=m.spec.machine)
        m.probe_failed = False
        if m.up:
            return
        m.up = True
        m.power_off = False
        m.quiet_rte = False
        m.silent_polls = 0
        self.stats["link_up"] += 1
        self.log.info("machine answers", machine=m.spec.machine, address=m.spec.address)
        m.jobs = [j for j in m.jobs if j.kind in BONUS_JOBS]
        if self.realtime:
            self._queue(m, "rte")
        self._queue(m, "sync")  # answered once queued events are read (§12.3): a clean baseline
        if not m.identified:
            self._queue(m, "identity")
            self._queue(m, "games")
        self._update_status(m)
        self._update_link()

    def _check_machine(self, m: _Machine, now: float, transport_down: bool = False) -> None:
        if now - m.last_ok < self.timing.link_down_s:
            return
        if m.up and not (m.probe_failed or transport_down):
            self._queue(m, "probe", front=True)  # never down on silence alone: probe first
            return
        if m.up:
            m.up = False
            self.stats["link_down"] += 1
            self.burst.warn("link_down", "machine silent", machine=m.spec.machine)
            if m.pending is not None:
                self._close_game(m)
            self._update_status(m)
            self._update_link()
        elif m.status is None:  # never answered since start
            self._update_status(m)

    def _check_timeouts(self, now: float) -> None:
        for m in self.machines:
            self._check_machine(m, now, transport_down=True)
            if m.bonuses:
                self._bonus_deadlines(m, now)

    def _update_link(self) -> None:
        up = any(m.up for m in self.machines)
        if up != self.link_up:
            self.link_up = up
            if self._link is not None:
                self._link(self.name, up)

    def _update_status(self, m: _Machine) -> None:
        if not m.up or m.power_off:
            st = MachineStatus.OFFLINE
        elif m.oos or m.menu:
            st = MachineStatus.OUT_OF_SERVICE
        elif m.doors:
            st = MachineStatus.DOOR_OPEN
        else:
            st = MachineStatus.ONLINE
        if st == m.status:
            return
        m.status = st
        ts = self.clock()
        eid = f"sas-{m.spec.machine}-{st.value}-{int(ts.timestamp() * 1000)}"
        self._out.append(
            MachineStatusChanged(
                event_id=eid, source=self.source, ts=ts, machine=m.spec.machine, status=st
            )
        )

    # -------------------------------------------------------------- exceptions

    def _exception(self, m: _Machine, code: int, fields: dict[str, int] | None) -> None:
        info = EXCEPTIONS[code]
        eff = info.effect
        if eff is Effect.NO_ACTIVITY:
            return
        self.stats[f"exception_{info.name}"] += 1
        if eff is Effect.GAME_START:
            self._game_start(m, fields)
        elif eff is Effect.GAME_END:
            self._game_end(m, fields)
        elif eff is Effect.DOOR_OPEN and info.door:
            m.doors.add(info.door)
        elif eff is Effect.DOOR_CLOSED and info.door:
            m.doors.discard(info.door)
        elif eff is Effect.POWER_LOST:
            m.power_off = True
        elif eff is Effect.POWER_APPLIED:
            m.power_off = False
            if self.realtime:
                self._queue(m, "rte")
            self._queue(m, "sync")
        elif eff is Effect.MENU_ENTERED:
            m.menu = True
        elif eff is Effect.MENU_EXITED:
            m.menu = m.oos = False
        elif eff is Effect.OUT_OF_SERVICE:
            m.oos = True
        elif eff is Effect.METERS_RESET:
            m.accounted_games = m.accounted_coin = m.accounted_out = None
            m.unnumbered = m.gap_coin = 0
            self._queue(m, "sync")
            self._reidentify(m)  # a reset comes with a reconfiguration: games and denominations
        elif eff is Effect.BUFFER_OVERFLOW:
            self._queue(m, "sync")
        elif eff is Effect.METER_CHANGE:
            self._queue(m, "sync", front=True)  # read them before they change (A0)
        elif eff is Effect.GAMES_CHANGED:
            self._reidentify(m)  # A2: 1F (denomination), 51 (games), then the meters
            self._queue(m, "sync")
        elif eff is Effect.HANDPAY:
            self._queue(m, "handpay")  # 51: what is pending, by long poll 1B
        if info.code == 0x3C:  # options changed: denomination may have changed
            m.identified = False
            self._queue(m, "identity")
        elif info.code == 0x7C and fields:
            self._bonus_awarded(m, fields.get("bonus_credits", 0))
        self._update_status(m)

    def _reidentify(self, m: _Machine) -> None:
        m.identified = False
        self._queue(m, "identity")
        self._queue(m, "games")

    def _game_start(self, m: _Machine, fields: dict[str, int] | None) -> None:
        m.oos = False  # a game cannot start out of service: it is back
        if fields is None:  # plain exception: the meters will tell the wager
            m.starts_seen += 1
            return
        if m.pending is not None:
            if not m.pending.ended:
                self._anomaly(m, "game_end_missing")
            self._close_game(m)
        credits, coin = fields["credits_wagered"], fields["coin_in_meter"]
        acc = m.accounted_coin
        delta = None if acc is None else meter_delta(coin, acc)
        if delta is not None and (delta < 0 or (delta == 0 and credits > 0)):
            self._anomaly(m, "game_already_reconciled")  # reported after the meters counted it
            return
        # 7E's credits are in the player's denomination, the coin-in meter in accounting
        # credits (a multi-denomination machine: 12 credits of 25c are 300 on a 1c meter).
        # The wager is the coin-in delta; when it is not credits x the player ratio known,
        # either the denomination changed or a game was missed: the meters decide.
        unsure = delta is not None and delta != credits * m.player_ratio
        if unsure:
            self._queue(m, "sync", front=True)
        if m.accounted_games is not None:
            m.accounted_games += 1
            eid = f"sas-{m.spec.machine}-g{m.accounted_games}"
        else:
            m.unnumbered += 1
            eid = f"sas-{m.spec.machine}-c{coin}"
        m.accounted_coin = coin
        m.accounted_at = self.clock()
        self.dirty = True
        wager = credits * m.player_ratio if delta is None else delta
        m.pending = _Game(eid, wager * m.spec.denomination, asyncio.get_running_loop().time(),
                          credits, delta or 0, unsure)  # fmt: skip

    def _game_end(self, m: _Machine, fields: dict[str, int] | None) -> None:
        if fields is None:
            m.ends_seen += 1
            self._queue(m, "sync", front=True)
            return
        if m.pending is None or m.pending.ended:
            self._anomaly(m, "game_end_without_start")
            self._queue(m, "sync", front=True)  # the meters know whether a game is missing
            return
        win = fields["win_credits"] * m.spec.denomination
        if m.pending.unsure:  # its wager waits for the meter read already queued
            m.pending.ended, m.pending.win = True, win
            return
        self._close_game(m, win)

    def _resolve_wager(self, m: _Machine, g: _Game, games: int) -> None:
        """The meters after an unsure 7E: no game missed -> the whole coin-in delta was
        this game's (and the player ratio is learned); games missed -> this one takes
        credits x the known ratio, the rest goes to the missed games."""
        assert m.accounted_games is not None
        missed = meter_delta(games, m.accounted_games) - m.unnumbered
        if missed <= 0:
            wager = g.delta
            if g.credits and g.delta % g.credits == 0 and g.delta // g.credits != m.player_ratio:
                m.player_ratio = g.delta // g.credits
                self.stats["player_denomination_changes"] += 1
                self.log.info("player denomination", machine=m.spec.machine,
                              minor_units=m.player_ratio * m.spec.denomination)  # fmt: skip
        else:
            wager = min(g.delta, g.credits * m.player_ratio)
            m.gap_coin += g.delta - wager  # coin-in that live 7Es skipped over
        g.wager, g.unsure = wager * m.spec.denomination, False
        if g.ended:
            self._close_game(m)

    def _close_game(self, m: _Machine, win: int | None = None) -> None:
        """Emit the open game; `win` None: the 7F's win if it came, else 0."""
        g = m.pending
        if g is None:
            return
        if win is None:
            win = g.win if g.ended else 0
        if g.unsure:
            self.stats["wager_unresolved"] += 1  # the coin-in delta stands for the wager
        m.pending = None
        self.stats["games"] += 1
        self._out.append(
            GamePlayed(
                event_id=g.event_id,
                source=self.source,
                ts=self.clock(),
                machine=m.spec.machine,
                wager=g.wager,
                win=win,
            )
        )

    def _flush_pending_games(self) -> None:
        for m in self.machines:
            if m.pending is not None:
                self._close_game(m)

    # ------------------------------------------------------------------- jobs

    def _queue(self, m: _Machine, kind: str, front: bool = False) -> None:
        if any(j.kind == kind for j in m.jobs):
            return
        a = m.spec.address
        if kind == "rte":
            msg = codec.enable_realtime(a, True)
        elif kind == "identity":
            msg = codec.long_poll(a, codec.LP_MACHINE_INFO)
        elif kind == "games":
            msg = codec.long_poll(a, codec.LP_GAMES_IMPLEMENTED)
        elif kind == "handpay":
            msg = codec.long_poll(a, codec.LP_HANDPAY_INFO)
        elif kind == "probe":
            msg = m.probe.msg
        else:
            msg = codec.long_poll(a, codec.LP_METERS_10_15)
        job = _Job(kind, msg, codec.decode_request(msg))
        if front:
            m.jobs.insert(0, job)
        else:
            m.jobs.append(job)

    def _finish(self, m: _Machine, job: _Job, result: str) -> None:
        if job in m.jobs:
            m.jobs.remove(job)
        if job.kind == "sync":  # done or given up: the next periodic read is due later
            m.next_sync = asyncio.get_running_loop().time() + self.timing.meter_sync_s
        if job.done is not None and not job.done.done():
            job.done.set_result(result)
        self.stats[f"long_poll_{job.kind}_{result}"] += 1

    def _job_reply(self, m: _Machine, job: _Job, reply: Reply) -> None:
        if job.kind == "bonus_meters" and job.bonus is not None:
            self._bonus_meters(m, job, reply)
            return
        if isinstance(reply, Busy):
            self.stats["busy"] += 1
            if job.tries >= LONG_POLL_TRIES or job.kind == "probe":
                self._finish(m, job, "busy")
            return
        if job.kind == "probe":  # alive: that was all it asked
            self._finish(m, job, "ok")
            return
        if isinstance(reply, Nack):
            self.stats["nack"] += 1
            if job.kind == "rte":
                m.rte = False
                self.log.info("machine refuses real-time events", machine=m.spec.machine)
            self._finish(m, job, "nack")
            return
        if isinstance(reply, Ack):
            if job.kind == "rte":
                m.rte = True
            self._finish(m, job, "ack")
            return
        if isinstance(reply, MachineInfoReply):
            m.identified = True
            cents = reply.denomination_cents
            if cents is not None and cents != m.spec.denomination:
                self._anomaly(m, "denomination_mismatch", reported=cents)
            self._finish(m, job, "ok")
            return
        if isinstance(reply, GamesImplementedReply):
            if m.games_implemented is not None and m.games_implemented != reply.games:
                self.log.info("games implemented changed", machine=m.spec.machine,
                              before=m.games_implemented, games=reply.games)  # fmt: skip
            m.games_implemented = reply.games
            self._finish(m, job, "ok")
            return
        if isinstance(reply, HandpayReply):
            self._anomaly(m, "handpay", amount_cents=reply.amount_cents, level=reply.level)
            self._finish(m, job, "ok")
            return
        if isinstance(reply, MetersReply) and reply.command == codec.LP_METERS_10_15:
            self._finish(m, job, "ok")
            self._reconcile(m, reply.meters)

    # ------------------------------------------------------------ legacy bonus

    def _bonus_job(self, m: _Machine, b: BonusAttempt) -> None:
        """Queue what the bonus's step needs: a 9A read (baseline, confirm) or one 8A.

        Without 9A on the machine the confirmation is its 7C (or the deadline): no job."""
        a = m.spec.address
        if b.step == SEND:
            msg, kind = codec.legacy_bonus(a, b.credits, b.tax_status), "bonus"
        elif b.step == CONFIRM and b.base is None:
            return
        else:
            msg, kind = codec.legacy_bonus_meters(a), "bonus_meters"
        m.jobs.append(_Job(kind, msg, codec.decode_request(msg), bonus=b))

    def _bonus_note(self, b: BonusAttempt, action: str, **extra: Any) -> None:
        """Every step, durably (the channel's bonus book), counted and logged."""
        rec = b.record(action, ts=self.clock().isoformat(), channel=self.name, **extra)
        if self._bonus_record is not None:
            self._bonus_record(rec)
        self.stats[f"legacy_bonus_{action}"] += 1
        if self._count is not None:
            self._count(f"legacy_bonus_{action}", 1)
        log = self.log.warning if b.outcome == "unconfirmed" else self.log.info
        log("legacy bonus", **rec)

    def _bonus_next(self, m: _Machine, job: _Job) -> None:
        """The job's step is done: queue the next one, or settle the bonus."""
        b = job.bonus
        assert b is not None
        if job in m.jobs:
            m.jobs.remove(job)
        if b.outcome is not None:
            self._bonus_done(m, b)
        else:
            self._bonus_job(m, b)

    def _bonus_done(self, m: _Machine, b: BonusAttempt) -> None:
        if b in m.bonuses:
            m.bonuses.remove(b)
            m.jobs = [j for j in m.jobs if j.bonus is not b]
            self._bonus_note(b, b.outcome or "unconfirmed")
        fut = self._bonus_futs.pop(b.bonus_id, None)
        if fut is not None and not fut.done():
            fut.set_result(b.outcome or "unconfirmed")

    def _bonus_sent(self, m: _Machine, job: _Job, reply: Reply | None) -> None:
        b = job.bonus
        assert b is not None
        if isinstance(reply, Ack):
            answer = "ack"
        elif isinstance(reply, Nack):
            answer = "nack"
        elif isinstance(reply, Busy):
            answer = "busy"
        else:
            answer = "event" if isinstance(reply, EventReply) else "none"
        b.sent(answer)
        self._bonus_note(b, "answer", answer=answer)
        self._bonus_next(m, job)

    def _bonus_meters(self, m: _Machine, job: _Job, reply: Reply) -> None:
        b = job.bonus
        assert b is not None
        ok = isinstance(reply, MetersReply) and reply.command == codec.LP_LEGACY_BONUS_METERS
        if isinstance(reply, Busy) or (not ok and not isinstance(reply, Nack)):
            return  # read again at the next slot
        meters = reply.meters if isinstance(reply, MetersReply) else None
        if b.step == BASELINE:
            b.baseline(meters)
            self._bonus_note(b, "baseline")
        elif b.step == CONFIRM and meters is not None and b.base is not None:
            b.confirmed(meters)
            self._bonus_note(b, "checked", meter=meters[b.meter])
        elif b.step == CONFIRM:
            return  # the 9A read failed: read again (a NACK now is noise, not a refusal)
        self._bonus_next(m, job)

    def _bonus_awarded(self, m: _Machine, credits: int) -> None:
        for b in list(m.bonuses):
            if b.awarded(credits):
                self._bonus_done(m, b)
                return

    def _bonus_deadlines(self, m: _Machine, now: float) -> None:
        for b in list(m.bonuses):
            if now >= b.deadline:
                b.expire()
                self._bonus_done(m, b)

    # -------------------------------------------------------- reconciliation

    def _reconcile(self, m: _Machine, meters: dict[str, int]) -> None:
        """Meters against what was reported: the games nobody told us about."""
        loop_now = asyncio.get_running_loop().time()
        m.next_sync = loop_now + self.timing.meter_sync_s
        games, coin = meters["games_played"], meters["coin_in"]
        out = meters["coin_out"] + meters["jackpot"]
        self.dirty = True
        g = m.pending
        if g is not None and g.unsure and m.accounted_games is not None:
            self._resolve_wager(m, g, games)
        meter_driven = not m.rte
        read_at = self.clock()
        if m.accounted_games is None or m.accounted_coin is None:
            m.accounted_games, m.accounted_coin, m.accounted_out = games, coin, out
            m.unnumbered = m.ends_seen = m.starts_seen = m.gap_coin = 0
            m.accounted_at = read_at
            return
        dgames = meter_delta(games, m.accounted_games) - m.unnumbered
        dcoin = meter_delta(coin, m.accounted_coin)
        if dcoin >= 0:
            dcoin += m.gap_coin
        if dgames < 0 or dcoin < 0:
            self._anomaly(m, "meters_went_back", games=games, coin_in=coin)
            dgames = 0
        if dgames > 0:
            live = min(dgames, max(m.starts_seen, m.ends_seen))  # games the exceptions told
            if meter_driven and m.accounted_out is not None:
                wins = spread(meter_delta(out, m.accounted_out), dgames)
            else:
                wins = [0] * dgames
            missed = dgames - live
            wagers = spread(dcoin, dgames)
            ts = read_at
            first = m.accounted_games + m.unnumbered + 1
            d = m.spec.denomination
            # the games nobody told us about were played since the meters were last known
            # good: a span the floor apportions (an outage across 08:00 counts its part)
            since = m.accounted_at if m.accounted_at is not None and m.accounted_at < ts else None
            for i in range(dgames):
                number = (first + i) % METER_MODULUS
                self._out.append(
                    GamePlayed(
                        event_id=f"sas-{m.spec.machine}-g{number}",
                        source=self.source if i >= missed else f"{self.source}:reconciled",
                        ts=ts,
                        machine=m.spec.machine,
                        wager=wagers[i] * d,
                        win=wins[i] * d,
                        span_start=since if i < missed else None,
                    )
                )
            self.stats["games"] += dgames
            if missed:
                self.stats["reconciled_games"] += missed
                if self._count is not None:
                    self._count("reconciled_games", missed)
                self.log.info(
                    "games reconciled from meters",
                    machine=m.spec.machine,
                    games=missed,
                    coin_in_credits=dcoin,
                    games_meter=games,
                )
        m.accounted_games, m.accounted_coin, m.accounted_out = games, coin, out
        m.unnumbered = m.ends_seen = m.starts_seen = m.gap_coin = 0
        m.accounted_at = read_at

    # ------------------------------------------------------------- reporting

    def _flush(self) -> None:
        if not self._out:
            return
        batch, self._out = self._out, []
        deliver(self.emit, batch, self._tasks, self.stats, self.log)

    def _bad(self, m: _Machine | None, reason: str, detail: str, **context: Any) -> None:
        self.stats[f"error_{reason}"] += 1
        if self._reject is not None:
            self._reject(reason)
        where = {"machine": m.spec.machine, "address": m.spec.address} if m else {}
        self.burst.warn(reason, "bad SAS input", detail=detail, **where, **context)

    def _anomaly(self, m: _Machine, kind: str, **context: Any) -> None:
        self.stats[kind] += 1
        if self._count is not None:
            self._count(kind, 1)
        self.burst.warn(kind, "SAS anomaly", machine=m.spec.machine, **context)

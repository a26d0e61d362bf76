"""A simulated slot machine (EGM) that speaks real SAS, and the loop it sits on.

Used by the tests, the benchmark and `raps demo`: the host poller cannot tell it
from a machine, because every byte goes through the same codec and transport.
An `Egm` keeps lifetime meters, an exception queue (20 deep, overflow reported
as exception 70), real-time event reporting, and the SAS acknowledgement rules:
a reply that carries information is held until the host acknowledges it
implicitly (any other poll, or a poll to another address) and sent again when
the very same poll is repeated (implied NACK).

Faults on demand: mute (a link drop), corrupt replies, babble, busy replies,
doors, power loss, tilts, operator menus, polls not heard (`deaf`) and replies
lost on the wire after the machine acted on the poll (`lose_replies`), a player
denomination other than the accounting one (`player_denomination`: 7E reports
player credits, the meters count accounting credits), handpays (51 then long
poll 1B), SAS 6.03 meter and game changes (A0-A2).  A legacy bonus (8A) is paid
once: the same poll repeated (implied NACK) gets the same ACK back, not a
second payment; its legacy bonus meters answer long poll 9A.  With an `EgmProfile` the machine
also plays by itself (games per minute, bet pattern, win rate, random doors,
tilts and link drops), driven by the loop's clock when it is polled, so a
thousand machines need no thousand tasks.
"""

from __future__ import annotations

import asyncio
import random
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from adapters.sas import codec
from adapters.sas.codec import request_length
from adapters.sas.crc import crc_ok
from adapters.sas.transport import InMemoryTransport, Segment, TcpFramedTransport

QUEUE_DEPTH = 20
DOOR_CODES = {"slot": (0x11, 0x12), "drop": (0x13, 0x14), "card_cage": (0x15, 0x16),
              "cashbox": (0x19, 0x1A), "belly": (0x1D, 0x1E)}  # fmt: skip


@dataclass(frozen=True)
class EgmProfile:
    """How a simulated machine plays by itself; rates are per hour unless named otherwise."""

    games_per_minute: float = 10.0
    bet_credits: Sequence[int] = (1, 2, 5, 10, 20)
    game_seconds: float = 2.5  # from 7E to 7F
    hit_rate: float = 0.3  # share of games with a win
    win_multipliers: Sequence[int] = (1, 2, 3, 5, 10, 50)
    doors_per_hour: float = 0.0
    door_seconds: float = 20.0
    tilts_per_hour: float = 0.0
    link_drops_per_hour: float = 0.0
    link_drop_seconds: float = 8.0
    corrupt_rate: float = 0.0  # share of replies with one byte flipped
    seed: int | None = None


@dataclass
class Meters:
    coin_in: int = 0
    coin_out: int = 0
    jackpot: int = 0
    games_played: int = 0
    games_won: int = 0
    cancelled_credits: int = 0
    drop: int = 0
    current_credits: int = 0

    def by_code(self) -> dict[int, int]:
        return {
            0x00: self.coin_in,
            0x01: self.coin_out,
            0x02: self.jackpot,
            0x04: self.cancelled_credits,
            0x05: self.games_played,
            0x06: self.games_won,
            0x07: self.games_played - self.games_won,
            0x0C: self.current_credits,
            0x24: self.drop,
        }


@dataclass
class Egm:
    """One gaming machine at one SAS address."""

    address: int
    denomination: int = 1  # minor units per credit
    profile: EgmProfile | None = None
    meters: Meters = field(default_factory=Meters)
    sas_version: str = "602"
    serial: str = ""
    muted: bool = False  # a link drop: the machine hears nothing and says nothing
    busy_long_polls: int = 0  # answer this many long polls with "busy"
    nack_long_polls: frozenset[int] = frozenset()  # commands answered with a NACK
    babbling: bool = False
    player_denomination: int = 0  # minor units per player credit; 0: the accounting one
    games_implemented: int = 1
    silent_idle: bool = False  # in real-time mode, an idle general poll gets no reply at all
    # Faults per command byte (0x80 for general polls): the next N polls are not heard /
    # are acted on but their reply is lost on the wire.
    deaf: dict[int, int] = field(default_factory=dict)
    lose_replies: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.rte = False
        self.queue: deque[tuple[int, dict[str, int]]] = deque()
        self.overflow = False
        self.held: bytes | None = None  # last informational reply, until acknowledged
        self.held_for: bytes | None = None  # the poll it answered
        self.doors: set[str] = set()
        self.power_off = False
        self.in_game: tuple[int, int] | None = None  # (wager credits, win credits)
        self.corrupt_next = 0
        self.bonus_credits = 0
        self.bonus_meters = [0, 0, 0]  # legacy bonus meters by tax status (long poll 9A)
        self.bonus_payments = 0  # 8A polls acted on: the test's "paid how many times"
        self.handpay_cents = 0
        self.polls = 0
        self.rng = random.Random(self.profile.seed if self.profile else None)  # noqa: S311 -- simulation, not selection
        self._next: dict[str, float] = {}
        self._game_end_at = 0.0
        self._door_close_at = 0.0
        self._unmute_at = 0.0
        if not self.serial:
            self.serial = f"SIM{self.address:03d}"

    # ------------------------------------------------------------- activity

    def queue_exception(self, code: int, fields: dict[str, int] | None = None) -> None:
        if len(self.queue) >= QUEUE_DEPTH:
            self.queue.popleft()
            self.overflow = True
        self.queue.append((code, fields or {}))

    def start_game(self, credits: int, report: bool = True) -> None:
        """A wager of `credits` player credits: coin-in (accounting credits) and games played
        go up, 7E is queued with the player credits (unless the event is lost)."""
        m = self.meters
        pd = self.player_denomination or self.denomination
        if pd % self.denomination:
            raise ValueError("the player denomination must be a multiple of the accounting one")
        accounting = credits * pd // self.denomination
        m.coin_in += accounting
        m.games_played += 1
        m.current_credits = max(0, m.current_credits - accounting)
        self.in_game = (credits, 0)
        if report:
            self.queue_exception(0x7E, {"credits_wagered": credits, "coin_in_meter": m.coin_in})

    def end_game(self, win: int = 0, report: bool = True) -> None:
        m = self.meters
        if win:
            m.coin_out += win
            m.games_won += 1
            m.current_credits += win
        self.in_game = None
        if report:
            self.queue_exception(0x7F, {"win_credits": win})

    def play(self, credits: int, win: int = 0, report: bool = True) -> None:
        """A whole game at once; `report=False` plays it without telling the host."""
        self.start_game(credits, report)
        self.end_game(win, report)

    def open_door(self, door: str = "slot") -> None:
        self.doors.add(door)
        self.queue_exception(DOOR_CODES[door][0])

    def close_door(self, door: str = "slot") -> None:
        self.doors.discard(door)
        self.queue_exception(DOOR_CODES[door][1])

    def power_cycle(self) -> None:
        """Lost power and came back: RTE is off again, the queue keeps power events."""
        self.rte = False
        self.held = self.held_for = None
        self.queue_exception(0x17)

    def tilt(self, code: int = 0x20) -> None:
        self.queue_exception(code)

    def handpay(self, amount_cents: int) -> None:
        """A jackpot the attendant pays by hand: exception 51, details by long poll 1B."""
        self.handpay_cents = amount_cents
        self.queue_exception(0x51)

    def change_games(self, games: int, denomination: int | None = None) -> None:
        """SAS 6.03: the operator changed the enabled games or denominations (A0, then A2)."""
        if denomination is not None:
            self.queue_exception(0xA0)  # meters about to change: the host reads them now
            self.denomination = denomination
        self.games_implemented = games
        self.queue_exception(0xA2)

    # -------------------------------------------------------------- auto play

    def advance(self, now: float) -> None:
        """Play by the profile up to loop time `now` (called when the machine is polled)."""
        p = self.profile
        if p is None:
            return
        nxt = self._next or self._schedule(now, p)
        if self.in_game is not None and now >= self._game_end_at:
            wager = self.in_game[0]
            win = (
                wager * self.rng.choice(p.win_multipliers) if self.rng.random() < p.hit_rate else 0
            )
            self.end_game(win)
        if self.in_game is None and now >= nxt["game"] and not self.doors:
            self.start_game(self.rng.choice(p.bet_credits))
            self._game_end_at = now + p.game_seconds
            nxt["game"] = now + self._gap(60.0 / p.games_per_minute)
        if "slot" in self.doors and now >= self._door_close_at:
            self.close_door("slot")
        if now >= nxt["door"]:
            self.open_door("slot")
            self._door_close_at = now + p.door_seconds
            nxt["door"] = now + self._gap(3600.0 / p.doors_per_hour if p.doors_per_hour else 1e12)
        if now >= nxt["tilt"]:
            self.tilt()
            nxt["tilt"] = now + self._gap(3600.0 / p.tilts_per_hour if p.tilts_per_hour else 1e12)

    def advance_muted(self, now: float) -> bool:
        """Link drops by the profile; True while the machine is unreachable."""
        p = self.profile
        if p is None or not p.link_drops_per_hour:
            return self.muted
        nxt = self._next or self._schedule(now, p)
        if self.muted and now >= self._unmute_at:
            self.muted = False
        if now >= nxt["drop"]:
            self.muted = True
            self._unmute_at = now + p.link_drop_seconds
            nxt["drop"] = now + self._gap(3600.0 / p.link_drops_per_hour)
        return self.muted

    def _gap(self, mean: float) -> float:
        return self.rng.expovariate(1.0 / mean)

    def _schedule(self, now: float, p: EgmProfile) -> dict[str, float]:
        never = 1e12
        self._next = {
            "game": now + self._gap(60.0 / p.games_per_minute),
            "door": now + (self._gap(3600.0 / p.doors_per_hour) if p.doors_per_hour else never),
            "tilt": now + (self._gap(3600.0 / p.tilts_per_hour) if p.tilts_per_hour else never),
            "drop": now
            + (self._gap(3600.0 / p.link_drops_per_hour) if p.link_drops_per_hour else never),
        }
        return self._next

    # ---------------------------------------------------------------- protocol

    def implied_ack(self) -> None:
        """The host moved on (another address or another poll): forget the held reply."""
        self.held = self.held_for = None

    def handle(self, msg: bytes) -> bytes | None:
        """The reply to one host message addressed to this machine, or None (silence)."""
        self.polls += 1
        if self.muted or self.power_off:
            return None
        key = codec.GENERAL_POLL if msg[0] & codec.GENERAL_POLL else msg[1]
        if self.deaf.get(key, 0) > 0:
            self.deaf[key] -= 1
            return None
        if self.held is not None:
            if msg == self.held_for:
                return self._lost(key, self._out(self.held))  # implied NACK: the same poll
            self.implied_ack()
        reply, informational = self._answer(msg)
        if reply is not None and informational:
            self.held, self.held_for = reply, msg
        return None if reply is None else self._lost(key, self._out(reply))

    def _lost(self, key: int, reply: bytes) -> bytes | None:
        if self.lose_replies.get(key, 0) > 0:
            self.lose_replies[key] -= 1
            return None  # sent, and lost on the wire
        return reply

    def _out(self, reply: bytes) -> bytes:
        p = self.profile
        if self.corrupt_next or (p is not None and p.corrupt_rate and
                                 self.rng.random() < p.corrupt_rate):  # fmt: skip
            self.corrupt_next = max(0, self.corrupt_next - 1)
            buf = bytearray(reply)
            i = self.rng.randrange(len(buf))
            buf[i] ^= 1 << self.rng.randrange(8)
            return bytes(buf)
        return reply

    def _next_event(self) -> tuple[int, dict[str, int]] | None:
        if self.overflow:
            self.overflow = False
            return (0x70, {})
        return self.queue.popleft() if self.queue else None

    def _answer(self, msg: bytes) -> tuple[bytes | None, bool]:
        a = self.address
        if msg[0] & codec.GENERAL_POLL:
            ev = self._next_event()
            if ev is None:
                if self.rte and self.silent_idle:
                    return None, False
                return codec.exception_reply(0), False
            if self.rte:
                return codec.event_message(a, ev[0], ev[1]), True
            return codec.exception_reply(ev[0]), True
        cmd = msg[1]
        if len(msg) > 2 and not crc_ok(msg):
            return None, False  # SAS: a long poll with a bad CRC is ignored
        if self.rte and (self.queue or self.overflow):
            ev = self._next_event()
            assert ev is not None
            return codec.event_message(a, ev[0], ev[1]), True  # events go before long polls
        if cmd in self.nack_long_polls:
            return codec.nack(a), False
        if self.busy_long_polls:
            self.busy_long_polls -= 1
            return codec.busy(a), False
        m = self.meters
        if cmd == codec.LP_ENABLE_RTE:
            self.rte = msg[2] == 1
            return codec.ack(a), False
        if cmd in codec.FIXED_METERS:
            return codec.meters_reply(a, cmd, vars(m)), True
        if cmd == codec.LP_MACHINE_INFO:
            dc = codec.denomination_code(self.denomination)
            return codec.machine_info_reply(a, denomination_code=dc), True
        if cmd == codec.LP_VERSION_SERIAL:
            return codec.version_reply(a, self.sas_version, self.serial), True
        if cmd == codec.LP_GAMES_IMPLEMENTED:
            return codec.games_implemented_reply(a, self.games_implemented), True
        if cmd == codec.LP_HANDPAY_INFO:
            return codec.handpay_reply(a, self.handpay_cents), True
        if cmd == codec.LP_LEGACY_BONUS_METERS:
            bonus = dict(zip(codec.LEGACY_BONUS_METERS, self.bonus_meters, strict=True))
            return codec.legacy_bonus_meters_reply(a, bonus), True
        if cmd in (codec.LP_SELECTED_METERS, codec.LP_EXTENDED_METERS,
                   codec.LP_EXTENDED_METERS_ALT):  # fmt: skip
            req = codec.decode_request(msg)
            values = m.by_code()
            chosen = {c: values.get(c, 0) for c in req.fields["meters"]}
            if cmd == codec.LP_SELECTED_METERS:
                return codec.selected_meters_reply(a, chosen, req.fields["game"]), True
            alt = cmd == codec.LP_EXTENDED_METERS_ALT
            return codec.extended_meters_reply(a, chosen, req.fields["game"], alt), True
        if cmd == codec.LP_LEGACY_BONUS:
            if self.doors:
                return codec.busy(a), False  # SAS 6.02 §13.3.5: cannot pay now
            credits = codec.decode_request(msg).fields["credits"]
            tax = msg[6] if msg[6] < 3 else 0
            self.bonus_credits += credits
            self.bonus_meters[tax] += credits
            self.bonus_payments += 1
            m.current_credits += credits
            self.queue_exception(0x7C, {"bonus_credits": credits, "tax_status": msg[6]})
            return codec.ack(a), True  # held: a repeat is answered, never paid again
        return None, False  # unsupported long poll: ignored, never NACKed


class SimulatedBus:
    """The machine side of one SAS loop: routes host messages to the machines on it.

    Receives through the transport's callback (no task per machine), frames
    messages by the wakeup bit and the codec's request lengths, tells the last
    machine it was acknowledged when the host addresses another one, and lets
    babbling machines spray noise.
    """

    def __init__(
        self,
        transport: InMemoryTransport | TcpFramedTransport,
        egms: Sequence[Egm],
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.transport = transport
        self.egms = {e.address: e for e in egms}
        self._clock = clock
        self._buf = bytearray()
        self._last: Egm | None = None
        self._babblers: list[Egm] = []
        self.messages = 0
        if isinstance(transport, InMemoryTransport):
            transport.set_receiver(self.receive)

    def now(self) -> float:
        return self._clock() if self._clock else asyncio.get_running_loop().time()

    def receive(self, seg: Segment) -> None:
        """Bytes from the host; a wakeup byte always starts a new message."""
        if seg.wakeup:
            self._buf = bytearray(seg.data)
        else:
            self._buf += seg.data
        while self._buf:
            n = request_length(self._buf)
            if n is None:
                return
            if n < 0:  # a command we do not know: skip to the next wakeup byte
                self._buf.clear()
                return
            if len(self._buf) < n:
                return
            msg, self._buf = bytes(self._buf[:n]), self._buf[n:]
            self._dispatch(msg)

    def _dispatch(self, msg: bytes) -> None:
        self.messages += 1
        addr = msg[0] & 0x7F
        egm = self.egms.get(addr)
        last = self._last
        if last is not None and last is not egm:
            last.implied_ack()
        self._last = egm
        if self.messages % 16 == 1:  # who babbles, checked now and then: not per message
            self._babblers = [e for e in self.egms.values() if e.babbling]
        for e in self._babblers:
            if e.babbling:
                self._send(bytes(e.rng.randrange(256) for _ in range(e.rng.randrange(1, 8))))
        if egm is None:
            return
        now = self.now()
        if egm.profile is not None:
            muted = egm.advance_muted(now)
            egm.advance(now)  # play goes on while the link is down: events queue, overflow
            if muted:
                egm.polls += 1
                return
        reply = egm.handle(msg)
        if reply is not None:
            self._send(reply)

    def _send(self, data: bytes) -> None:
        t = self.transport
        if isinstance(t, InMemoryTransport):
            t.send_nowait(data)
        else:
            asyncio.get_running_loop().create_task(t.send(data))

    async def serve(self) -> None:
        """Pump a transport that has no receive callback (TCP): read, frame, answer."""
        t = self.transport
        while True:
            seg = await t.recv(3600.0)
            if seg is not None:
                self.receive(seg)


async def serve_tcp(egms: Sequence[Egm], host: str = "127.0.0.1", port: int = 0) -> asyncio.Server:
    """A TCP server with the (byte, wakeup) framing: one simulated loop per connection."""

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        t = TcpFramedTransport(streams=(reader, writer))
        await t.open()
        bus = SimulatedBus(t, egms)
        try:
            await bus.serve()
        except ConnectionError:
            pass
        finally:
            await t.close()

    return await asyncio.start_server(on_connect, host, port)

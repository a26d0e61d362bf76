"""Issue 15, items 8-12: SAS slot telemetry that holds on a real floor.

Through the real poller against the EGM simulator (the in-memory transport), with
faults injected in the simulator: multi-denomination wagers, legacy bonuses paid
exactly once, the SAS 6.03 exceptions and long polls 51 / 1B, real-time silence
and line noise.  The reply-window test runs the poller on a virtual clock against
a wire that delivers bytes in 16 ms chunks (an FTDI adapter's latency timer).
Waits are for conditions with a deadline; nothing asserts a duration.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path

import pytest

from adapters.sas import cli, codec
from adapters.sas.bonus import BonusAttempt, BonusBook
from adapters.sas.codec import GamesImplementedReply, HandpayReply, MetersReply, Request
from adapters.sas.config import SasChannelConfig
from adapters.sas.egm import Egm, SimulatedBus
from adapters.sas.poller import ChannelPoller, MachineSpec, Timing
from adapters.sas.source import SasChannel
from adapters.sas.transport import InMemoryTransport, Segment, usb_latency_s
from selector.events import MachineStatus
from tests.test_sas_poller import FAST, FakeClock, Rig, until

# ------------------------------------------------------ item 8: multi-denomination


@pytest.mark.asyncio
async def test_multi_denomination_wager_is_the_coin_in_delta_not_the_player_credits() -> None:
    egm = Egm(1, denomination=1, player_denomination=25)  # 1c accounting, the player on 25c
    rig = await Rig(egms=[egm]).start()
    egm.play(12, 40)  # 12 credits of 25c: 300 on the 1c coin-in meter
    await until(lambda: len(rig.games()) == 1, "the 25c game")
    assert (rig.games()[0].wager, rig.games()[0].win) == (300, 40)  # not 12c
    reads = rig.poller.stats["long_poll_sync_ok"]
    egm.play(12, 0)  # the ratio is known now: no meter read needed
    await until(lambda: len(rig.games()) == 2, "a second 25c game")
    assert rig.poller.stats["long_poll_sync_ok"] == reads
    egm.player_denomination = 100  # the player switches to $1
    egm.play(3, 0)
    await until(lambda: len(rig.games()) == 3, "the $1 game")
    egm.corrupt_next = 1  # and a corrupt reply on the way
    egm.play(4, 0, report=False)  # its 7E is lost: 400 on the meter nobody reported
    egm.play(2, 0)
    await until(lambda: len(rig.games()) == 5, "the live game and the missed one")
    await rig.stop()
    wagers = [g.wager for g in rig.games()]
    assert wagers[:3] == [300, 300, 300]
    assert sorted(wagers[3:]) == [200, 400]  # live: 2 x $1; missed: the rest of the delta
    assert sum(wagers) == egm.meters.coin_in  # every coin-in cent is in a game: none dropped
    assert rig.counts["reconciled_games"] == 1
    assert rig.poller.stats["player_denomination_changes"] == 2
    assert rig.poller.stats["wager_unresolved"] == 0


@pytest.mark.asyncio
async def test_single_denomination_machine_needs_no_extra_meter_read() -> None:
    rig = await Rig(denominations=(5,)).start()
    reads = rig.poller.stats["long_poll_sync_ok"]
    for credits in (1, 3, 7):
        rig.egms[0].play(credits, 0)
    await until(lambda: len(rig.games()) == 3, "three games")
    await rig.stop()
    assert [g.wager for g in rig.games()] == [5, 15, 35]
    assert rig.poller.stats["long_poll_sync_ok"] == reads


# -------------------------------------------------------- item 9: legacy bonus once


def test_simulator_answers_a_repeated_bonus_poll_without_paying_again() -> None:
    egm = Egm(1, 1)
    poll = codec.legacy_bonus(1, 500)
    assert egm.handle(poll) == codec.ack(1)
    assert egm.handle(poll) == codec.ack(1)  # implied NACK: the same reply, no second pay
    assert (egm.bonus_payments, egm.bonus_credits) == (1, 500)
    egm.handle(codec.general_poll(1))  # another poll: the host moved on (implied ACK)
    egm.handle(poll)  # a new 8A after other traffic is a new payment: never sent blindly
    assert egm.bonus_payments == 2
    reply = egm.handle(codec.legacy_bonus_meters(1))
    assert reply is not None
    decoded = codec.decode_reply(codec.decode_request(codec.legacy_bonus_meters(1)), reply)
    assert isinstance(decoded, MetersReply) and decoded.meters["deductible"] == 1000


async def _bonus_rig(egm: Egm, realtime: bool = True) -> Rig:
    return await Rig(egms=[egm], realtime=realtime).start()


@pytest.mark.asyncio
@pytest.mark.parametrize("realtime", [True, False])
async def test_legacy_bonus_with_its_ack_lost_is_confirmed_by_meters_and_paid_once(
    realtime: bool,
) -> None:
    egm = Egm(1, 10)
    rig = await _bonus_rig(egm, realtime)
    egm.lose_replies = {0x8A: 1}  # the machine pays; its ACK never reaches the host
    assert await rig.poller.legacy_bonus("m1", 50, timeout=5.0) == "paid"
    polls = egm.polls
    await until(lambda: egm.polls > polls + 20, "more polls after the bonus")
    await rig.stop()
    assert (egm.bonus_payments, egm.bonus_credits) == (1, 50)
    assert rig.poller.stats["legacy_bonus_answer"] == 1  # sent once: nothing resent blindly
    assert rig.counts["legacy_bonus_paid"] == 1


@pytest.mark.asyncio
async def test_legacy_bonus_poll_lost_on_the_way_is_resent_only_once_meters_show_unpaid() -> None:
    egm = Egm(1, 10)
    rig = await _bonus_rig(egm)
    egm.deaf = {0x8A: 2}  # the first two 8As never reach the machine
    assert await rig.poller.legacy_bonus("m1", 50, timeout=5.0) == "paid"
    await rig.stop()
    assert egm.bonus_payments == 1
    assert rig.poller.stats["legacy_bonus_answer"] == 3  # two unheard, one paid
    # both unheard sends were checked unpaid (9A) before the next; the paid one is
    # confirmed by its 7C, which pre-empts the 9A read in real-time mode
    assert rig.poller.stats["legacy_bonus_checked"] == 2


class _DropsAfter(Egm):
    """A machine whose link drops right after it answers a given long poll."""

    drop_after: int = 0

    def _answer(self, msg: bytes) -> tuple[bytes | None, bool]:
        out = super()._answer(msg)
        if not msg[0] & codec.GENERAL_POLL and msg[1] == self.drop_after:
            self.muted = True
        return out


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("step", "outcome", "paid"),
    [
        ("before_request", "not_sent", 0),  # down all along: never sent
        ("after_baseline", "unconfirmed", 0),  # 9A read, down: the 8A went into silence
        ("after_baseline_back", "paid", 1),  # ... and back: 9A shows it unpaid, sent again
        ("after_pay_ack_lost", "unconfirmed", 1),  # paid, ACK lost, down: for a person
        ("after_ack", "unconfirmed", 1),  # ACK seen, down before 9A / 7C confirmed it
    ],
)
async def test_legacy_bonus_link_drop_at_every_step_never_pays_twice(
    step: str, outcome: str, paid: int
) -> None:
    egm = _DropsAfter(1, 10)
    rig = await _bonus_rig(egm, realtime=False)  # plain mode: no 7C data to confirm by
    if step == "before_request":
        egm.muted = True
    elif step.startswith("after_baseline"):
        egm.drop_after = 0x9A
    elif step == "after_pay_ack_lost":
        egm.drop_after, egm.lose_replies = 0x8A, {0x8A: 1}
    else:
        egm.drop_after = 0x8A
    if step == "after_baseline_back":
        bonus = asyncio.create_task(rig.poller.legacy_bonus("m1", 50, timeout=10.0))
        await until(lambda: rig.status("m1") == MachineStatus.OFFLINE, "the link drops")
        egm.muted, egm.drop_after = False, 0
        assert await bonus == outcome
    else:
        assert await rig.poller.legacy_bonus("m1", 50, timeout=0.5) == outcome
    egm.muted, egm.drop_after = False, 0  # the link comes back
    await until(lambda: rig.status("m1") == MachineStatus.ONLINE, "online again")
    polls = egm.polls
    await until(lambda: egm.polls > polls + 30, "more polls after the link is back")
    await rig.stop()
    assert egm.bonus_payments == paid  # exactly once, or not at all: never twice
    assert rig.counts[f"legacy_bonus_{outcome}"] == 1


@pytest.mark.asyncio
async def test_legacy_bonus_confirmed_by_7c_when_the_meter_reads_are_lost() -> None:
    egm = Egm(1, 10)
    rig = await _bonus_rig(egm)
    egm.lose_replies = {0x9A: 1000}  # the confirmation reads never come back
    egm.busy_long_polls = 0
    rig.poller.machines[0].jobs.clear()
    b_task = asyncio.create_task(rig.poller.legacy_bonus("m1", 50, timeout=5.0))
    # the baseline cannot be read either: the bonus is never sent
    assert await b_task == "not_sent" and egm.bonus_payments == 0
    egm.lose_replies = {}
    egm.nack_long_polls = frozenset({0x9A})  # a machine without legacy bonus meters
    assert await rig.poller.legacy_bonus("m1", 50, timeout=5.0) == "paid"  # by its 7C
    await rig.stop()
    assert egm.bonus_payments == 1


def test_bonus_attempt_rules() -> None:
    b = BonusAttempt("b1", "m1", 50, 1, deadline=10.0)
    assert b.meter == "non_deductible"
    b.baseline({"deductible": 0, "non_deductible": 100, "wager_match": 0})
    b.sent("none")
    b.confirmed({"deductible": 0, "non_deductible": 100, "wager_match": 0})
    assert b.step == "send" and b.outcome is None  # confirmed unpaid: may be sent again
    b.sent("ack")
    b.confirmed({"deductible": 0, "non_deductible": 170, "wager_match": 0})
    assert b.outcome == "unconfirmed"  # moved by 70 for a 50 bonus: a person looks
    n = BonusAttempt("b2", "m1", 50, 0, deadline=10.0)
    n.baseline(None)  # no 9A
    n.sent("nack")
    assert n.outcome == "nack"
    e = BonusAttempt("b3", "m1", 50, 0, deadline=10.0)
    e.expire()
    assert e.outcome == "not_sent"


@pytest.mark.asyncio
async def test_bonus_book_records_every_step_and_reports_open_attempts_at_restart(
    tmp_path: Path,
) -> None:
    state = tmp_path / "sas-loop1.json"
    cfg = SasChannelConfig.model_validate(
        {
            "name": "loop1",
            "transport": "memory",
            "machines": [{"address": 1, "machine": "m1", "denomination": 10}],
            "poll_ms": 40,
            "link_down_s": 0.2,
        }
    )
    counts: dict[str, int] = {}
    egm = Egm(1, 10)

    def channel() -> SasChannel:
        host, dev = InMemoryTransport.pair()
        SimulatedBus(dev, [egm])
        return SasChannel(cfg, host, lambda e: None, lambda r: None, lambda n, u: None,
                          clock=FakeClock(), state_path=state,
                          count=lambda k, n: counts.update({k: counts.get(k, 0) + n}))  # fmt: skip

    ch = channel()
    task = asyncio.create_task(ch.run())
    await until(lambda: ch.link_up, "link up")
    assert await ch.legacy_bonus("m1", 500, timeout=5.0) == "paid"
    ch.stop()
    await task
    book = BonusBook(tmp_path / "sas-loop1.bonus.jsonl")
    actions = [r["action"] for r in book.read()]
    assert actions[:4] == ["requested", "baseline", "sending", "answer"]
    assert actions[-1] == "paid" and set(actions[4:-1]) <= {"checked"}  # by 9A or by 7C
    assert book.open_attempts() == []
    # a crash after "sending": the next start reports it unconfirmed and never resends it
    open_rec = {**book.read()[2], "bonus": "bonus-m1-crash", "outcome": None}
    book.append(open_rec)
    second = channel()
    assert [r["bonus"] for r in second.unconfirmed_at_start] == ["bonus-m1-crash"]
    assert book.open_attempts() == [] and counts["legacy_bonus_unconfirmed"] == 1
    assert json.loads(book.path.read_text().splitlines()[-1])["outcome"] == "unconfirmed"
    assert egm.bonus_payments == 1


# ------------------------------------------- item 10: SAS 6.03 exceptions, 51 and 1B


def test_decode_knows_long_polls_51_1b_and_9a() -> None:
    out = cli.decode_exchange("0151", codec.games_implemented_reply(1, 12).hex())
    assert out["poll"]["name"] == "send_number_of_games_implemented"
    assert out["reply"] == {"type": "games_implemented", "address": 1, "games": 12}
    out = cli.decode_exchange("011B", codec.handpay_reply(1, 125_000, level=0x40).hex())
    assert out["poll"]["name"] == "send_handpay_information"
    assert out["reply"]["amount_cents"] == 125_000 and out["reply"]["level"] == 0x40
    poll = codec.legacy_bonus_meters(1).hex()
    reply = codec.legacy_bonus_meters_reply(1, {"wager_match": 7}).hex()
    out = cli.decode_exchange(poll, reply)
    assert out["poll"]["name"] == "send_legacy_bonus_meters"
    assert out["reply"]["meters"] == {"deductible": 0, "non_deductible": 0, "wager_match": 7}
    for code in (0xA0, 0xA1, 0xA2, 0x7A):
        ev = cli.decode_exchange("81", codec.event_message(1, code).hex())
        assert ev["reply"]["code"] == f"0x{code:02X}", ev
    bad = codec.handpay_reply(1, 5)[:-1] + b"\x00"
    assert cli.decode_exchange("011B", bad.hex())["error"]["reason"] == "crc"
    r = codec.decode_reply(Request(1, 0x51), codec.games_implemented_reply(1, 3))
    assert isinstance(r, GamesImplementedReply) and r.games == 3
    h = codec.decode_reply(Request(1, 0x1B), codec.handpay_reply(1, 99))
    assert isinstance(h, HandpayReply) and h.amount_cents == 99


@pytest.mark.asyncio
async def test_handpay_exception_reads_long_poll_1b() -> None:
    rig = await Rig().start()
    rig.egms[0].handpay(125_000)
    await until(lambda: rig.counts["handpay"] == 1, "the handpay read")
    await rig.stop()
    assert rig.poller.stats["long_poll_handpay_ok"] == 1
    assert rig.poller.stats["exception_handpay_pending"] == 1


@pytest.mark.asyncio
async def test_603_games_and_denomination_change_rereads_1f_51_and_meters() -> None:
    rig = await Rig(denominations=(10,)).start()
    egm, m = rig.egms[0], rig.poller.machines[0]
    assert m.games_implemented == 1
    egm.play(2, 0)
    await until(lambda: len(rig.games()) == 1, "a game before the change")
    syncs = rig.poller.stats["long_poll_sync_ok"]
    egm.change_games(4, denomination=5)  # A0 (meters first), then A2
    await until(lambda: m.games_implemented == 4, "51 read again")
    await until(lambda: rig.counts["denomination_mismatch"] == 1, "1F read again")
    await until(lambda: rig.poller.stats["long_poll_sync_ok"] > syncs, "meters read")
    egm.games_implemented = 6
    egm.queue_exception(0x7A)  # soft meters reset: new baseline, and games re-read
    await until(lambda: m.games_implemented == 6, "51 after 7A")
    await rig.stop()
    for name in ("meter_change_pending", "enabled_games_denoms_changed", "soft_meters_reset"):
        assert rig.poller.stats[f"exception_{name}"] == 1
    assert rig.reject_total() == 0  # nothing dropped as unknown


# ---------------------------------------------------- item 11: silence and noise


@pytest.mark.asyncio
async def test_rte_machine_silent_when_idle_stays_online() -> None:
    egm = Egm(1, 10, silent_idle=True)  # says nothing to an idle general poll in RTE mode
    rig = await Rig(egms=[egm]).start()
    m = rig.poller.machines[0]
    probes = rig.poller.stats["long_poll_probe_ok"]
    await until(lambda: rig.poller.stats["long_poll_probe_ok"] >= probes + 8, "8 probes")
    assert m.quiet_rte and rig.statuses("m1") == [MachineStatus.ONLINE]
    no_reply = rig.rejects["no_reply"]
    egm.play(3, 0)
    await until(lambda: len(rig.games()) == 1, "a game from the quiet machine")
    await until(lambda: rig.poller.stats["long_poll_probe_ok"] >= probes + 12, "more probes")
    assert rig.rejects["no_reply"] == no_reply  # its silence is not counted as errors
    egm.muted = True  # now really gone: the probe fails, then offline
    await until(lambda: rig.status("m1") == MachineStatus.OFFLINE, "offline")
    await rig.stop()
    assert rig.statuses("m1") == [MachineStatus.ONLINE, MachineStatus.OFFLINE]
    assert rig.links == [True, False]


@pytest.mark.asyncio
async def test_a_line_of_pure_noise_never_brings_the_link_up() -> None:
    egm = Egm(1, 10)
    egm.muted, egm.babbling = True, True  # nobody there; random bytes on the line
    rig = await Rig(egms=[egm]).start(wait_online=False)
    await until(lambda: rig.poller.stats["slots"] > 400, "many slots of noise")
    await rig.stop()
    assert rig.links == [] and rig.statuses("m1") == [MachineStatus.OFFLINE]
    assert rig.poller.stats["link_up"] == 0 and rig.reject_total() > 0


@pytest.mark.asyncio
async def test_noise_after_the_cable_is_cut_is_one_offline_and_no_flaps() -> None:
    rig = await Rig().start()
    egm = rig.egms[0]
    egm.muted, egm.babbling = True, True
    await until(lambda: rig.status("m1") == MachineStatus.OFFLINE, "offline")
    slots = rig.poller.stats["slots"]
    await until(lambda: rig.poller.stats["slots"] > slots + 400, "noise goes on")
    await rig.stop()
    assert rig.statuses("m1") == [MachineStatus.ONLINE, MachineStatus.OFFLINE]
    assert rig.links == [True, False]


# ------------------------------------------- item 12: the reply window on the wire


class ChunkedWire:
    """A serial loop through a USB adapter, on a virtual clock: the host's bytes take
    11 bits each at `baud`, the machine answers `turnaround` after the poll's last byte,
    and the adapter hands received bytes over when its latency timer (16 ms) runs out."""

    def __init__(self, egm: Egm, baud: int = 19200, latency: float = 0.016) -> None:
        self.egm, self.baud, self.latency = egm, baud, latency
        self.t = 0.0
        self.wire_free = 0.0
        self.turnaround = 0.005
        self.chunks: list[tuple[float, bytes]] = []  # (delivered at, bytes)

    def now(self) -> float:
        return self.t

    async def open(self) -> None:
        return None

    async def send(self, data: bytes, wakeup: bool = False) -> None:
        byte_s = 11 / self.baud
        start = max(self.t, self.wire_free)
        self.wire_free = start + len(data) * byte_s
        reply = self.egm.handle(data) if data[0] & 0x7F == self.egm.address else None
        if not reply:
            return
        first = self.wire_free + self.turnaround
        arrivals = [first + i * byte_s for i in range(len(reply))]
        flush, chunk = first + self.latency, bytearray()
        for at, b in zip(arrivals, reply, strict=True):
            if at > flush:  # the timer ran out: what came so far goes to the host
                self.chunks.append((flush, bytes(chunk)))
                chunk, flush = bytearray(), at + self.latency
            chunk.append(b)
        self.chunks.append((flush, bytes(chunk)))

    async def recv(self, timeout: float) -> Segment | None:
        if self.chunks and self.chunks[0][0] <= self.t + timeout:
            at, data = self.chunks.pop(0)
            self.t = max(self.t, at)
            return Segment(data)
        self.t += timeout
        return None

    def discard_input(self) -> int:
        return 0

    async def close(self) -> None:
        return None


async def _one_read(rx_latency: float, command: int = codec.LP_METERS_10_15) -> ChannelPoller:
    egm = Egm(1, 10)
    egm.meters.coin_in = 1234
    wire = ChunkedWire(egm)
    timing = dataclasses.replace(FAST, reply_timeout_s=0.020, inter_byte_s=0.005, attempts=1,
                                 rx_latency_s=rx_latency)  # fmt: skip
    poller = ChannelPoller("loop1", wire, [MachineSpec(1, "m1", 10)], emit=lambda e: None,
                           clock=FakeClock(), timing=timing, now=wire.now)  # fmt: skip
    m = poller.machines[0]
    m.up = True
    msg = codec.long_poll(1, command)
    reply, _ = await poller._transact(m, msg, codec.decode_request(msg))
    poller.last_reply = reply  # type: ignore[attr-defined]
    return poller


@pytest.mark.asyncio
async def test_reply_window_is_measured_on_the_wire_through_a_16ms_usb_adapter() -> None:
    # a 28-byte meter reply, 5 ms after the poll: 16 ms on the wire, handed over in chunks
    blind = await _one_read(0.0)  # a window blind to the adapter: cut or missed
    assert blind.last_reply is None  # type: ignore[attr-defined]
    assert blind.stats["error_truncated"] + blind.stats["error_no_reply"] >= 1
    poller = await _one_read(0.016)  # rx_latency_ms = 16: the adapter's delay allowed for
    reply = poller.last_reply  # type: ignore[attr-defined]
    assert isinstance(reply, MetersReply) and reply.meters["coin_in"] == 1234
    # measured on the wire: 5 ms after the poll's last byte, not 16 + 5 after send()
    assert poller.max_reply_delay_s == pytest.approx(0.005, abs=1e-9)
    assert poller.stats["polls"] == 1  # the first try: no repeat needed


@pytest.mark.asyncio
async def test_window_opens_after_the_host_s_own_transmit_time() -> None:
    # 19 ms after the last byte of a 9-byte 8A (4.7 ms to send at 19200): inside the
    # window on the wire, although 24 ms after send() returned
    egm = Egm(1, 10)
    wire = ChunkedWire(egm, latency=0.0)
    wire.turnaround = 0.019
    timing = Timing(reply_timeout_s=0.020)
    poller = ChannelPoller("loop1", wire, [MachineSpec(1, "m1", 10)], emit=lambda e: None,
                           clock=FakeClock(), timing=timing, now=wire.now)  # fmt: skip
    m = poller.machines[0]
    m.up = True
    msg = codec.legacy_bonus(1, 5)
    reply, _ = await poller._transact(m, msg, codec.decode_request(msg), once=True)
    assert reply == codec.Ack(1) and egm.bonus_payments == 1
    assert poller.max_reply_delay_s == pytest.approx(0.019, abs=1e-9)


def test_usb_latency_timer_is_read_from_sysfs(tmp_path: Path) -> None:
    dev = tmp_path / "ttyUSB3"
    dev.write_text("")
    (tmp_path / "sys" / "ttyUSB3").mkdir(parents=True)
    (tmp_path / "sys" / "ttyUSB3" / "latency_timer").write_text("16\n")
    assert usb_latency_s(str(dev), str(tmp_path / "sys")) == 0.016
    assert usb_latency_s("/dev/ttyS0", str(tmp_path / "sys")) == 0.0
    cfg = SasChannelConfig.model_validate(
        {
            "name": "l",
            "transport": "serial",
            "device": "/dev/ttyUSB0",
            "rx_latency_ms": 16,
            "machines": [{"address": 1, "machine": "a"}],
        }
    )
    assert cfg.timing().rx_latency_s == 0.016 and cfg.timing().baud == 19200

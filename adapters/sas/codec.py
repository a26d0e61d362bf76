"""SAS 6.02 frames: host polls, gaming machine replies, and their decoding.

Pure functions on bytes, shared by the host poller, the EGM simulator, the
`raps sas decode` field tool and the fuzzer.  Every decoding problem raises
`SasError` (and nothing else) with a short `reason` for metrics and the byte
`offset` where the frame went wrong, so a technician can find it in a trace.

Framing (SAS 6.02 §2): the host sets the wakeup (9th) bit on the first byte of
each message only.  A general poll is one byte, address | 0x80.  Type R long
polls are `address, command` with no CRC; type S/M long polls and every
multi-byte reply end with a CRC-16/KERMIT, least significant byte first.  BCD
and ASCII fields are sent most significant byte first, binary fields least
significant byte first.  A reply is one exception byte (general poll), an
event message `address FF code data CRC` (real-time event reporting), the
address alone (ACK of a type S poll), address | 0x80 (NACK), `address 00`
(busy) or `address command data CRC`.

Long on purpose: one module per protocol table is what a technician holding the SAS
specification looks for; every poll and reply of the profile is here, side by side.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from adapters.sas.bcd import BcdError, decode_bcd, encode_bcd
from adapters.sas.crc import crc16_kermit, with_crc
from adapters.sas.exceptions import EXCEPTIONS, RTE_FIELDS, Kind, rte_data_length

GENERAL_POLL = 0x80
EVENT_MARK = 0xFF  # second byte of a real-time event message
BUSY = 0x00  # second byte of a busy reply

# Long poll commands this adapter speaks (SAS 6.02 Appendix B).
LP_ENABLE_RTE = 0x0E
LP_METERS_10_15 = 0x0F
LP_METERS_11_15 = 0x19
LP_CURRENT_CREDITS = 0x1A
LP_HANDPAY_INFO = 0x1B
LP_MACHINE_INFO = 0x1F
LP_SELECTED_METERS = 0x2F
LP_GAMES_IMPLEMENTED = 0x51
LP_VERSION_SERIAL = 0x54
LP_EXTENDED_METERS = 0x6F
LP_EXTENDED_METERS_ALT = 0xAF
LP_LEGACY_BONUS = 0x8A
LP_LEGACY_BONUS_METERS = 0x9A

COMMAND_NAMES: dict[int, str] = {
    LP_ENABLE_RTE: "enable_realtime_events",
    LP_METERS_10_15: "send_meters_10_15",
    0x10: "send_cancelled_credits",
    0x11: "send_coin_in",
    0x12: "send_coin_out",
    0x13: "send_drop",
    0x14: "send_jackpot",
    0x15: "send_games_played",
    0x16: "send_games_won",
    0x17: "send_games_lost",
    LP_METERS_11_15: "send_meters_11_15",
    LP_CURRENT_CREDITS: "send_current_credits",
    LP_HANDPAY_INFO: "send_handpay_information",
    LP_MACHINE_INFO: "send_machine_id_and_info",
    LP_SELECTED_METERS: "send_selected_meters_game_n",
    LP_GAMES_IMPLEMENTED: "send_number_of_games_implemented",
    LP_VERSION_SERIAL: "send_sas_version_and_serial",
    LP_EXTENDED_METERS: "send_extended_meters_game_n",
    LP_EXTENDED_METERS_ALT: "send_extended_meters_game_n_alt",
    LP_LEGACY_BONUS: "legacy_bonus_pay",
    LP_LEGACY_BONUS_METERS: "send_legacy_bonus_meters",
}

# Fixed-layout meter replies: the meters in order, each 4 BCD bytes.
FIXED_METERS: dict[int, tuple[str, ...]] = {
    LP_METERS_10_15: (
        "cancelled_credits",
        "coin_in",
        "coin_out",
        "drop",
        "jackpot",
        "games_played",
    ),
    0x10: ("cancelled_credits",),
    0x11: ("coin_in",),
    0x12: ("coin_out",),
    0x13: ("drop",),
    0x14: ("jackpot",),
    0x15: ("games_played",),
    0x16: ("games_won",),
    0x17: ("games_lost",),
    LP_METERS_11_15: ("coin_in", "coin_out", "drop", "jackpot", "games_played"),
    LP_CURRENT_CREDITS: ("current_credits",),
}
# Long poll 9A: the legacy bonus meters of game N, by the tax status of long poll 8A.
LEGACY_BONUS_METERS = ("deductible", "non_deductible", "wager_match")
TYPE_R = frozenset(FIXED_METERS) | {
    LP_MACHINE_INFO,
    LP_VERSION_SERIAL,
    LP_GAMES_IMPLEMENTED,
    LP_HANDPAY_INFO,
}
VARIABLE_REPLY = frozenset({LP_SELECTED_METERS, LP_VERSION_SERIAL, LP_EXTENDED_METERS,
                            LP_EXTENDED_METERS_ALT})  # fmt: skip
ACK_ONLY = frozenset({LP_ENABLE_RTE, LP_LEGACY_BONUS})  # type S polls answered by an ACK

# Meter codes (SAS 6.02 Table C-7) that this adapter names; others print as meter_XXXX.
METER_CODES: dict[int, str] = {
    0x00: "coin_in",
    0x01: "coin_out",
    0x02: "jackpot",
    0x03: "handpaid_cancelled_credits",
    0x04: "cancelled_credits",
    0x05: "games_played",
    0x06: "games_won",
    0x07: "games_lost",
    0x08: "coin_acceptor_credits",
    0x09: "hopper_paid_credits",
    0x0A: "coins_to_drop_credits",
    0x0B: "bills_accepted_credits",
    0x0C: "current_credits",
    0x0D: "ticket_in_cashable_cents",
    0x0E: "ticket_out_cashable_cents",
    0x0F: "ticket_in_restricted_cents",
    0x10: "ticket_out_restricted_cents",
    0x15: "ticket_in_credits",
    0x16: "ticket_out_credits",
    0x17: "transfers_to_machine_credits",
    0x18: "transfers_to_host_credits",
    0x1C: "machine_paid_paytable_win",
    0x1D: "machine_paid_progressive_win",
    0x1E: "machine_paid_external_bonus",
    0x22: "won_credits",
    0x24: "drop_credits",
    0x25: "games_since_power_up",
    0x26: "games_since_door_closed",
}
METER_IDS = {name: code for code, name in METER_CODES.items()}

# Long poll 1F denomination codes (SAS 6.02 Table C-4) in cents.
DENOMINATIONS: dict[int, int] = {
    0x01: 1, 0x02: 5, 0x03: 10, 0x04: 25, 0x05: 50, 0x06: 100, 0x07: 500, 0x08: 1000,
    0x09: 2000, 0x0A: 10000, 0x0B: 20, 0x0C: 200, 0x0D: 250, 0x0E: 2500, 0x0F: 5000,
    0x10: 20000, 0x11: 25000, 0x12: 50000, 0x13: 100000, 0x14: 200000, 0x15: 250000,
    0x16: 500000, 0x17: 2, 0x18: 3, 0x19: 15, 0x1A: 40,
}  # fmt: skip


def meter_name(code: int) -> str:
    return METER_CODES.get(code, f"meter_{code:04x}")


def selected_meter_size(code: int) -> int:
    """BCD bytes of a meter in a long poll 2F reply (Table C-7 minimum sizes).

    Cent amounts of tickets and transfers are 5 bytes, every other meter 4.
    Long polls 6F/AF carry the size in the reply and need no table.
    """
    if 0x0D <= code <= 0x10 or (0x80 <= code <= 0x93 and code % 2 == 0):
        return 5
    if 0xA0 <= code <= 0xBF and code % 2 == 0:
        return 5
    return 4


class SasError(ValueError):
    """A frame that cannot be decoded; `reason` is a metric label, `offset` a byte index."""

    def __init__(self, reason: str, offset: int, detail: str) -> None:
        super().__init__(f"{detail} (byte offset {offset})")
        self.reason = reason
        self.offset = offset
        self.detail = detail


# --------------------------------------------------------------------------- polls


def general_poll(address: int) -> bytes:
    """One byte, sent with the wakeup bit; address 0 is the sync poll nobody answers."""
    return bytes((GENERAL_POLL | address,))


def long_poll(address: int, command: int) -> bytes:
    """A type R long poll: address and command, no CRC."""
    return bytes((address, command))


def enable_realtime(address: int, enable: bool) -> bytes:
    """Long poll 0E: switch real-time event reporting on or off."""
    return with_crc(bytes((address, LP_ENABLE_RTE, 1 if enable else 0)))


def selected_meters(address: int, codes: list[int], game: int = 0) -> bytes:
    """Long poll 2F: up to ten one-byte meter codes for game N (0 = the machine)."""
    if not 1 <= len(codes) <= 10:
        raise ValueError("long poll 2F takes 1 to 10 meter codes")
    body = encode_bcd(game, 2) + bytes(codes)
    return with_crc(bytes((address, LP_SELECTED_METERS, len(body))) + body)


def extended_meters(address: int, codes: list[int], game: int = 0, alt: bool = False) -> bytes:
    """Long poll 6F (or AF): up to twelve two-byte meter codes (binary, LSB first)."""
    if not 1 <= len(codes) <= 12:
        raise ValueError("long poll 6F/AF takes 1 to 12 meter codes")
    body = encode_bcd(game, 2) + b"".join(c.to_bytes(2, "little") for c in codes)
    cmd = LP_EXTENDED_METERS_ALT if alt else LP_EXTENDED_METERS
    return with_crc(bytes((address, cmd, len(body))) + body)


def legacy_bonus_meters(address: int, game: int = 0) -> bytes:
    """Long poll 9A: the legacy bonus meters (deductible, non-deductible, wager match)."""
    return with_crc(bytes((address, LP_LEGACY_BONUS_METERS)) + encode_bcd(game, 2))


def legacy_bonus(address: int, credits: int, tax_status: int = 0) -> bytes:
    """Long poll 8A: pay `credits` to the machine (tax 0 deductible, 1 not, 2 wager match)."""
    return with_crc(
        bytes((address, LP_LEGACY_BONUS)) + encode_bcd(credits, 4) + bytes((tax_status,))
    )


@dataclass(frozen=True, slots=True)
class Request:
    """A decoded host message; `command` None means a general poll."""

    address: int
    command: int | None
    fields: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def name(self) -> str:
        if self.command is None:
            return "general_poll"
        return COMMAND_NAMES.get(self.command, f"long_poll_{self.command:02x}")


def request_length(buf: bytes | bytearray) -> int | None:
    """Length of the host message that starts `buf`; None while it cannot be told yet.

    -1 for a command this codec does not know (the receiver ignores it, as SAS asks).
    """
    if not buf:
        return None
    if buf[0] & GENERAL_POLL:
        return 1
    if len(buf) < 2:
        return None
    cmd = buf[1]
    if cmd in TYPE_R:
        return 2
    if cmd == LP_ENABLE_RTE:
        return 5
    if cmd == LP_LEGACY_BONUS:
        return 9
    if cmd == LP_LEGACY_BONUS_METERS:
        return 6
    if cmd in (LP_SELECTED_METERS, LP_EXTENDED_METERS, LP_EXTENDED_METERS_ALT):
        return None if len(buf) < 3 else 3 + buf[2] + 2
    return -1


def _check_length(frame: bytes, want: int) -> None:
    if len(frame) < want:
        raise SasError("truncated", len(frame), f"frame of {len(frame)} bytes, expected {want}")
    if len(frame) > want:
        raise SasError("overlong", want, f"frame of {len(frame)} bytes, expected {want}")


def _check_crc(frame: bytes) -> None:
    if crc16_kermit(frame) != 0:
        got = frame[-2] | frame[-1] << 8
        want = crc16_kermit(frame[:-2])
        raise SasError("crc", len(frame) - 2, f"CRC 0x{got:04X} on the wire, 0x{want:04X} computed")


def _bcd(frame: bytes, start: int, size: int) -> int:
    try:
        return decode_bcd(frame[start : start + size], start)
    except BcdError as e:
        raise SasError("bcd", e.offset, str(e).split(" at offset")[0]) from None


def _ascii(frame: bytes, start: int, size: int) -> str:
    return frame[start : start + size].decode("ascii", errors="replace")


def decode_request(frame: bytes) -> Request:
    """A host message from a trace; raises SasError naming the offending byte."""
    if not frame:
        raise SasError("empty", 0, "empty frame")
    if frame[0] & GENERAL_POLL:
        _check_length(frame, 1)
        return Request(frame[0] & 0x7F, None)
    if len(frame) < 2:
        raise SasError("truncated", 1, "long poll without a command byte")
    addr, cmd = frame[0], frame[1]
    want = request_length(frame)
    if want is None:
        raise SasError("truncated", len(frame), "long poll without its length byte")
    if want < 0:
        raise SasError("unknown_command", 1, f"long poll 0x{cmd:02X} is not one this tool knows")
    _check_length(frame, want)
    if cmd in TYPE_R:
        return Request(addr, cmd)
    _check_crc(frame)
    if cmd == LP_ENABLE_RTE:
        return Request(addr, cmd, {"enable": frame[2] == 1})
    if cmd == LP_LEGACY_BONUS:
        return Request(addr, cmd, {"credits": _bcd(frame, 2, 4), "tax_status": frame[6]})
    if cmd == LP_LEGACY_BONUS_METERS:
        return Request(addr, cmd, {"game": _bcd(frame, 2, 2)})
    game = _bcd(frame, 3, 2) if frame[2] >= 2 else None
    if game is None:
        raise SasError("length", 2, f"length byte {frame[2]} leaves no room for the game number")
    if cmd == LP_SELECTED_METERS:
        codes = list(frame[5:-2])
    else:
        if (frame[2] - 2) % 2:
            raise SasError("length", 2, "meter codes of long poll 6F/AF are two bytes each")
        codes = [frame[i] | frame[i + 1] << 8 for i in range(5, len(frame) - 2, 2)]
    return Request(addr, cmd, {"game": game, "meters": codes})


# ------------------------------------------------------------------------- replies


@dataclass(frozen=True, slots=True)
class ExceptionReply:
    """A one-byte general poll reply."""

    code: int


@dataclass(frozen=True, slots=True)
class EventReply:
    """A real-time event message: address, FF, exception code, data, CRC."""

    address: int
    code: int
    fields: dict[str, int]


@dataclass(frozen=True, slots=True)
class Ack:
    address: int


@dataclass(frozen=True, slots=True)
class Nack:
    address: int


@dataclass(frozen=True, slots=True)
class Busy:
    address: int


@dataclass(frozen=True, slots=True)
class MetersReply:
    address: int
    command: int
    meters: dict[str, int]
    game: int | None = None
    sizes: dict[str, int] | None = None  # BCD bytes per meter (6F/AF)


@dataclass(frozen=True, slots=True)
class MachineInfoReply:
    address: int
    game_id: str
    additional_id: str
    denomination_code: int
    max_bet: int
    progressive_group: int
    game_options: int
    paytable_id: str
    base_percent: str

    @property
    def denomination_cents(self) -> int | None:
        return DENOMINATIONS.get(self.denomination_code)


@dataclass(frozen=True, slots=True)
class VersionReply:
    address: int
    sas_version: str
    serial: str


@dataclass(frozen=True, slots=True)
class GamesImplementedReply:
    """Long poll 51: how many games the machine implements (not only those enabled)."""

    address: int
    games: int


@dataclass(frozen=True, slots=True)
class HandpayReply:
    """Long poll 1B: the pending handpay (amount in cents; level 40 top award, 80 cancelled
    credits, 01-20 a progressive level).  SAS 6.03 fills the last 10 bytes (unused in 6.02)
    with the session's game win and game paid amounts."""

    address: int
    progressive_group: int
    level: int
    amount_cents: int
    partial_pay_cents: int
    reset_id: int
    session_game_win_cents: int
    session_game_paid_cents: int


Reply = (
    ExceptionReply
    | EventReply
    | Ack
    | Nack
    | Busy
    | MetersReply
    | MachineInfoReply
    | VersionReply
    | GamesImplementedReply
    | HandpayReply
)


def fixed_reply_length(command: int) -> int | None:
    """Bytes of a fixed-size data reply to `command`, CRC included; None if variable."""
    if command in FIXED_METERS:
        return 2 + 4 * len(FIXED_METERS[command]) + 2
    if command == LP_MACHINE_INFO:
        return 2 + 20 + 2
    if command == LP_GAMES_IMPLEMENTED:
        return 2 + 2 + 2
    if command == LP_HANDPAY_INFO:
        return 2 + 20 + 2
    if command == LP_LEGACY_BONUS_METERS:
        return 2 + 2 + 12 + 2
    return None


def reply_length(req: Request, buf: bytes | bytearray, realtime: bool) -> int | None:
    """Length of the reply that starts `buf`, or None while more bytes are needed to tell.

    When None is returned and no byte follows within the inter-byte gap, ask
    `could_end_here`: an ACK and a one-byte exception are legal short answers.
    """
    n = len(buf)
    if n == 0:
        return None
    addr = req.address
    b0 = buf[0]
    if req.command is None:
        if not realtime or b0 != addr:
            return 1
        if n < 2:
            return None  # the exception whose code equals the address, or an event message
        return _event_length(buf) if buf[1] == EVENT_MARK else 1
    if b0 == addr | 0x80:
        return 1
    if b0 != addr:
        return 1  # garbage: decode reports it
    if n < 2:
        return None
    b1 = buf[1]
    if b1 == BUSY:
        return 2
    if b1 == EVENT_MARK:
        return _event_length(buf)
    if req.command in ACK_ONLY:
        return 1
    fixed = fixed_reply_length(b1)
    if fixed is not None:
        return fixed
    if b1 in VARIABLE_REPLY:
        return None if n < 3 else 3 + buf[2] + 2
    return n  # unknown command byte: decode reports it


def _event_length(buf: bytes | bytearray) -> int | None:
    if len(buf) < 3:
        return None
    return 3 + rte_data_length(buf[2]) + 2


def could_end_here(req: Request, buf: bytes | bytearray) -> bool:
    """True when `buf` is a complete reply although a longer one could have followed."""
    return len(buf) == 1 and buf[0] == req.address


def decode_reply(req: Request, frame: bytes) -> Reply:
    """The gaming machine's reply to `req`; raises SasError naming the offending byte."""
    if not frame:
        raise SasError("empty", 0, "no reply bytes")
    addr = req.address
    if req.command is None:
        if len(frame) == 1:
            code = frame[0]
            if code not in EXCEPTIONS:
                raise SasError(
                    "unknown_exception", 0, f"exception code 0x{code:02X} is not defined"
                )
            return ExceptionReply(code)
        if frame[0] == addr and frame[1] == EVENT_MARK:
            return decode_event(frame)
        raise SasError("overlong", 1, f"{len(frame)} bytes where one exception byte was expected")
    b0 = frame[0]
    if b0 == addr | 0x80:
        _check_length(frame, 1)
        return Nack(addr)
    if b0 != addr:
        raise SasError("address", 0, f"reply from address {b0 & 0x7F}, polled {addr}")
    if len(frame) == 1:
        if req.command in ACK_ONLY:
            return Ack(addr)
        raise SasError(
            "truncated", 1, f"reply to long poll 0x{req.command:02X} ends after the address"
        )
    b1 = frame[1]
    if b1 == BUSY:
        _check_length(frame, 2)
        return Busy(addr)
    if b1 == EVENT_MARK:
        return decode_event(frame)
    if b1 != req.command:
        raise SasError("command", 1, f"reply to command 0x{b1:02X}, polled 0x{req.command:02X}")
    if req.command in ACK_ONLY:
        raise SasError("overlong", 1, f"long poll 0x{b1:02X} is answered by an ACK alone")
    return decode_data_reply(frame)


def decode_data_reply(frame: bytes) -> Reply:
    """A reply `address command data CRC` to a long poll this codec knows."""
    addr, cmd = frame[0], frame[1]
    fixed = fixed_reply_length(cmd)
    if fixed is not None:
        _check_length(frame, fixed)
        _check_crc(frame)
        if cmd == LP_MACHINE_INFO:
            return MachineInfoReply(
                addr,
                game_id=_ascii(frame, 2, 2),
                additional_id=_ascii(frame, 4, 3),
                denomination_code=frame[7],
                max_bet=frame[8],
                progressive_group=frame[9],
                game_options=frame[10] | frame[11] << 8,
                paytable_id=_ascii(frame, 12, 6),
                base_percent=_ascii(frame, 18, 4),
            )
        if cmd == LP_GAMES_IMPLEMENTED:
            return GamesImplementedReply(addr, _bcd(frame, 2, 2))
        if cmd == LP_HANDPAY_INFO:
            return HandpayReply(
                addr,
                progressive_group=frame[2],
                level=frame[3],
                amount_cents=_bcd(frame, 4, 5),
                partial_pay_cents=_bcd(frame, 9, 2),
                reset_id=frame[11],
                session_game_win_cents=_bcd(frame, 12, 5),
                session_game_paid_cents=_bcd(frame, 17, 5),
            )
        if cmd == LP_LEGACY_BONUS_METERS:
            bonus = {n: _bcd(frame, 4 + 4 * i, 4) for i, n in enumerate(LEGACY_BONUS_METERS)}
            return MetersReply(addr, cmd, bonus, _bcd(frame, 2, 2))
        names = FIXED_METERS[cmd]
        return MetersReply(addr, cmd, {n: _bcd(frame, 2 + 4 * i, 4) for i, n in enumerate(names)})
    if cmd not in VARIABLE_REPLY:
        raise SasError("unknown_command", 1, f"reply to long poll 0x{cmd:02X} is not decoded here")
    if len(frame) < 3:
        raise SasError("truncated", len(frame), "variable-length reply without its length byte")
    _check_length(frame, 3 + frame[2] + 2)
    _check_crc(frame)
    end = len(frame) - 2
    if cmd == LP_VERSION_SERIAL:
        if frame[2] < 3 or frame[2] > 43:
            raise SasError("length", 2, f"length {frame[2]}: version (3) and serial (0-40) bytes")
        return VersionReply(addr, _ascii(frame, 3, 3), _ascii(frame, 6, end - 6))
    if frame[2] < 2:
        raise SasError("length", 2, f"length {frame[2]} leaves no room for the game number")
    game = _bcd(frame, 3, 2)
    meters: dict[str, int] = {}
    sizes: dict[str, int] = {}
    i = 5
    while i < end:
        if cmd == LP_SELECTED_METERS:
            code, i = frame[i], i + 1
            size = selected_meter_size(code)
        else:
            if i + 3 > end:
                raise SasError("truncated", i, "meter entry cut short (code and size)")
            code, size, i = frame[i] | frame[i + 1] << 8, frame[i + 2], i + 3
            if size > 9:
                raise SasError("length", i - 1, f"meter size {size} (at most 9 BCD bytes)")
        if i + size > end:
            raise SasError("truncated", i, f"meter 0x{code:04X} needs {size} bytes")
        name = meter_name(code)
        meters[name] = _bcd(frame, i, size)
        sizes[name] = size
        i += size
    if cmd == LP_SELECTED_METERS:
        return MetersReply(addr, cmd, meters, game)
    return MetersReply(addr, cmd, meters, game, sizes)


def decode_event(frame: bytes) -> EventReply:
    """A real-time event message; the data layout comes from exceptions.RTE_FIELDS."""
    if len(frame) < 3:
        raise SasError("truncated", len(frame), "event message without its exception code")
    code = frame[2]
    if code not in EXCEPTIONS:
        raise SasError("unknown_exception", 2, f"exception code 0x{code:02X} is not defined")
    layout = RTE_FIELDS.get(code, ())
    _check_length(frame, 3 + sum(f.size for f in layout) + 2)
    _check_crc(frame)
    fields: dict[str, int] = {}
    i = 3
    for f in layout:
        if f.kind is Kind.BCD:
            fields[f.name] = _bcd(frame, i, f.size)
        else:
            fields[f.name] = int.from_bytes(frame[i : i + f.size], "little")
        i += f.size
    return EventReply(frame[0], code, fields)


# ---------------------------------------------------------- gaming machine side


def exception_reply(code: int) -> bytes:
    return bytes((code,))


def event_message(address: int, code: int, fields: dict[str, int] | None = None) -> bytes:
    """address, FF, code, data laid out per RTE_FIELDS, CRC."""
    values = fields or {}
    out = bytearray((address, EVENT_MARK, code))
    for f in RTE_FIELDS.get(code, ()):
        v = values.get(f.name, 0)
        out += encode_bcd(v, f.size) if f.kind is Kind.BCD else v.to_bytes(f.size, "little")
    return with_crc(bytes(out))


def ack(address: int) -> bytes:
    return bytes((address,))


def nack(address: int) -> bytes:
    return bytes((address | 0x80,))


def busy(address: int) -> bytes:
    return bytes((address, BUSY))


def meters_reply(address: int, command: int, meters: dict[str, int]) -> bytes:
    """Reply to 0F, 10-17, 19 or 1A: the command's meters, 4 BCD bytes each."""
    body = b"".join(encode_bcd(meters.get(n, 0), 4) for n in FIXED_METERS[command])
    return with_crc(bytes((address, command)) + body)


def selected_meters_reply(address: int, meters: dict[int, int], game: int = 0) -> bytes:
    """Reply to 2F: game number, then code and value (Table C-7 size) per meter."""
    body = bytearray(encode_bcd(game, 2))
    for code, value in meters.items():
        body += bytes((code,)) + encode_bcd(value, selected_meter_size(code))
    return with_crc(bytes((address, LP_SELECTED_METERS, len(body))) + body)


def extended_meters_reply(
    address: int, meters: dict[int, int], game: int = 0, alt: bool = False, size: int = 5
) -> bytes:
    """Reply to 6F/AF: game number, then code (2 bytes), size and BCD value per meter."""
    body = bytearray(encode_bcd(game, 2))
    for code, value in meters.items():
        body += code.to_bytes(2, "little") + bytes((size,)) + encode_bcd(value, size)
    cmd = LP_EXTENDED_METERS_ALT if alt else LP_EXTENDED_METERS
    return with_crc(bytes((address, cmd, len(body))) + body)


def machine_info_reply(
    address: int,
    *,
    game_id: str = "AT",
    additional_id: str = "000",
    denomination_code: int = 0x01,
    max_bet: int = 100,
    progressive_group: int = 0,
    game_options: int = 0,
    paytable_id: str = "RAPS01",
    base_percent: str = "9500",
) -> bytes:
    """Reply to 1F (gaming machine ID and information)."""
    body = (
        game_id.encode("ascii")[:2].ljust(2)
        + additional_id.encode("ascii")[:3].ljust(3)
        + bytes((denomination_code, max_bet, progressive_group))
        + game_options.to_bytes(2, "little")
        + paytable_id.encode("ascii")[:6].ljust(6)
        + base_percent.encode("ascii")[:4].ljust(4)
    )
    return with_crc(bytes((address, LP_MACHINE_INFO)) + body)


def games_implemented_reply(address: int, games: int) -> bytes:
    """Reply to 51: the number of games implemented, 2 BCD."""
    return with_crc(bytes((address, LP_GAMES_IMPLEMENTED)) + encode_bcd(games, 2))


def handpay_reply(
    address: int,
    amount_cents: int,
    *,
    level: int = 0x40,
    progressive_group: int = 0,
    partial_pay_cents: int = 0,
    reset_id: int = 0,
    session_game_win_cents: int = 0,
    session_game_paid_cents: int = 0,
) -> bytes:
    """Reply to 1B (send handpay information)."""
    body = (
        bytes((progressive_group, level))
        + encode_bcd(amount_cents, 5)
        + encode_bcd(partial_pay_cents, 2)
        + bytes((reset_id,))
        + encode_bcd(session_game_win_cents, 5)
        + encode_bcd(session_game_paid_cents, 5)
    )
    return with_crc(bytes((address, LP_HANDPAY_INFO)) + body)


def legacy_bonus_meters_reply(address: int, meters: dict[str, int], game: int = 0) -> bytes:
    """Reply to 9A: game number, then the deductible, non-deductible and wager-match meters."""
    body = encode_bcd(game, 2) + b"".join(
        encode_bcd(meters.get(n, 0), 4) for n in LEGACY_BONUS_METERS
    )
    return with_crc(bytes((address, LP_LEGACY_BONUS_METERS)) + body)


def version_reply(address: int, version: str = "602", serial: str = "") -> bytes:
    """Reply to 54: SAS version (3 ASCII) and serial number (0-40 ASCII)."""
    body = version.encode("ascii")[:3].ljust(3, b"0") + serial.encode("ascii")[:40]
    return with_crc(bytes((address, LP_VERSION_SERIAL, len(body))) + body)


def denomination_code(cents: int) -> int:
    """The Table C-4 code for a denomination in cents; 0 when SAS has none for it."""
    for code, value in DENOMINATIONS.items():
        if value == cents:
            return code
    return 0


# ------------------------------------------------------------------------- JSON


def to_dict(obj: Request | Reply) -> dict[str, Any]:
    """A JSON-ready view for the field tool: type name, hex command, decoded fields."""
    out: dict[str, Any] = {"type": _TYPE_NAMES[type(obj)]}
    if isinstance(obj, Request):
        out["address"] = obj.address
        if obj.command is not None:
            out["command"] = f"0x{obj.command:02X}"
        out["name"] = obj.name
        out.update(obj.fields)
        if "meters" in obj.fields:
            out["meters"] = [meter_name(c) for c in obj.fields["meters"]]
        return out
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if f.name == "command":
            out["command"] = f"0x{value:02X}"
            out["name"] = COMMAND_NAMES.get(value, "")
        elif f.name == "code":
            info = EXCEPTIONS[value]
            out["code"] = f"0x{value:02X}"
            out["name"] = info.name
            out["meaning"] = info.meaning
        elif value is not None:
            out[f.name] = value
    if isinstance(obj, MachineInfoReply):
        out["denomination_cents"] = obj.denomination_cents
    return out


_TYPE_NAMES: dict[type, str] = {
    Request: "poll",
    ExceptionReply: "exception",
    EventReply: "event",
    Ack: "ack",
    Nack: "nack",
    Busy: "busy",
    MetersReply: "meters",
    MachineInfoReply: "machine_info",
    VersionReply: "version",
    GamesImplementedReply: "games_implemented",
    HandpayReply: "handpay",
}

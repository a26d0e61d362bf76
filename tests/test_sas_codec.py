"""SAS codec: CRC, BCD, every poll and reply this adapter speaks, the exception table,
and the `raps sas decode` field tool."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adapters.sas import cli, codec
from adapters.sas.bcd import BcdError, decode_bcd, encode_bcd
from adapters.sas.codec import (
    Ack,
    Busy,
    EventReply,
    ExceptionReply,
    MachineInfoReply,
    MetersReply,
    Nack,
    Request,
    SasError,
    VersionReply,
)
from adapters.sas.crc import crc16_kermit, crc_ok, with_crc
from adapters.sas.exceptions import EXCEPTIONS, RTE_FIELDS, Effect, rte_data_length
from raps.cli import main as raps_main

GP = Request(1, None)

# ----------------------------------------------------------------------------- CRC


def test_crc_kermit_check_value() -> None:
    assert crc16_kermit(b"123456789") == 0x2189
    assert crc16_kermit(b"") == 0


def test_crc_is_sent_lsb_first_over_the_whole_message() -> None:
    frame = with_crc(b"\x01\x0e\x01")  # address included
    crc = crc16_kermit(b"\x01\x0e\x01")
    assert frame[-2:] == bytes((crc & 0xFF, crc >> 8))
    assert crc_ok(frame)
    assert not crc_ok(frame[:-2] + frame[-1:] + frame[-2:-1])  # byte order matters
    assert not crc_ok(b"\x01")


def test_crc_known_sas_frame() -> None:
    # long poll 8A (legacy bonus) for 500 credits to address 1
    assert (
        codec.legacy_bonus(1, 500).hex()
        == "018a00000500" + "00" + with_crc(bytes.fromhex("018a0000050000"))[-2:].hex()
    )


# ----------------------------------------------------------------------------- BCD


def test_bcd_round_trip_msb_first() -> None:
    assert encode_bcd(1234, 4) == bytes.fromhex("00001234")
    assert encode_bcd(0, 2) == b"\x00\x00"
    assert decode_bcd(bytes.fromhex("99999999")) == 99_999_999
    for v in (0, 7, 10, 99, 12345678):
        assert decode_bcd(encode_bcd(v, 4)) == v


def test_bcd_refuses_what_does_not_fit() -> None:
    with pytest.raises(ValueError, match="does not fit"):
        encode_bcd(100, 1)
    with pytest.raises(ValueError, match=">= 0"):
        encode_bcd(-1, 2)


@pytest.mark.parametrize(("data", "offset"), [("0A", 0), ("00F1", 1), ("1234A0", 2)])
def test_bcd_invalid_nibble_names_the_offset(data: str, offset: int) -> None:
    with pytest.raises(BcdError) as e:
        decode_bcd(bytes.fromhex(data), offset=10)
    assert e.value.offset == 10 + offset
    assert f"offset {10 + offset}" in str(e.value)


# ------------------------------------------------------------------ exception table


def test_exception_table_covers_what_the_product_needs() -> None:
    effects = {c: i.effect for c, i in EXCEPTIONS.items()}
    assert effects[0x00] is Effect.NO_ACTIVITY
    assert effects[0x7E] is Effect.GAME_START and effects[0x7F] is Effect.GAME_END
    for code in (0x11, 0x13, 0x15, 0x19, 0x1D):
        assert effects[code] is Effect.DOOR_OPEN and effects[code + 1] is Effect.DOOR_CLOSED
        assert EXCEPTIONS[code].door == EXCEPTIONS[code + 1].door
    assert effects[0x17] is Effect.POWER_APPLIED and effects[0x18] is Effect.POWER_LOST
    assert effects[0x84] is Effect.MENU_ENTERED and effects[0x85] is Effect.MENU_EXITED
    assert effects[0x86] is Effect.OUT_OF_SERVICE
    assert effects[0x70] is Effect.BUFFER_OVERFLOW and effects[0x7A] is Effect.METERS_RESET
    for code in (0x47, 0x4F, 0x51, 0x3D, 0x67, 0x69, 0x7C):  # bills, tickets, handpay, AFT, bonus
        assert code in EXCEPTIONS
    assert all(i.name and i.meaning for i in EXCEPTIONS.values())
    assert len({i.name for i in EXCEPTIONS.values()}) == len(EXCEPTIONS)


def test_rte_layouts() -> None:
    assert rte_data_length(0x7E) == 8  # credits wagered 2, coin-in 4, wager type, progressive group
    assert rte_data_length(0x7F) == 4
    assert rte_data_length(0x11) == 0
    assert set(RTE_FIELDS) <= set(EXCEPTIONS)


@pytest.mark.parametrize("code", sorted(EXCEPTIONS))
def test_every_exception_round_trips(code: int) -> None:
    assert codec.decode_reply(GP, codec.exception_reply(code)) == ExceptionReply(code)
    fields = {f.name: 1 for f in RTE_FIELDS.get(code, ())}
    frame = codec.event_message(1, code, fields)
    assert len(frame) == 5 + rte_data_length(code)
    assert codec.reply_length(GP, frame, realtime=True) == len(frame)
    assert codec.decode_reply(GP, frame) == EventReply(1, code, fields)


def test_game_start_event_fields() -> None:
    frame = codec.event_message(3, 0x7E, {"credits_wagered": 25, "coin_in_meter": 123456})
    assert frame[:3] == bytes((3, 0xFF, 0x7E))
    assert frame[3:5] == bytes.fromhex("0025") and frame[5:9] == bytes.fromhex("00123456")
    ev = codec.decode_reply(Request(3, None), frame)
    assert isinstance(ev, EventReply)
    assert ev.fields["credits_wagered"] == 25 and ev.fields["coin_in_meter"] == 123456


def test_unknown_exception_code() -> None:
    with pytest.raises(SasError) as e:
        codec.decode_reply(GP, b"\x05")
    assert e.value.reason == "unknown_exception" and e.value.offset == 0
    bad = with_crc(bytes((1, 0xFF, 0x05)))
    with pytest.raises(SasError) as e:
        codec.decode_reply(GP, bad)
    assert e.value.reason == "unknown_exception" and e.value.offset == 2


# ---------------------------------------------------------------------- long polls


def _round_trip(poll: bytes, reply: bytes) -> codec.Reply:
    req = codec.decode_request(poll)
    assert codec.request_length(poll) == len(poll)
    assert codec.reply_length(req, reply, realtime=True) in (len(reply), None)
    return codec.decode_reply(req, reply)


def test_general_poll() -> None:
    assert codec.general_poll(5) == b"\x85"
    req = codec.decode_request(b"\x85")
    assert req == Request(5, None) and req.name == "general_poll"
    assert codec.general_poll(0) == b"\x80"  # the sync poll


@pytest.mark.parametrize("cmd", sorted(codec.FIXED_METERS))
def test_meter_long_polls(cmd: int) -> None:
    names = codec.FIXED_METERS[cmd]
    values = {n: 1000 * (i + 1) + 7 for i, n in enumerate(names)}
    reply = _round_trip(codec.long_poll(9, cmd), codec.meters_reply(9, cmd, values))
    assert reply == MetersReply(9, cmd, values)


def test_meters_10_15_layout() -> None:
    frame = codec.meters_reply(1, 0x0F, {"coin_in": 1234, "games_played": 56})
    assert len(frame) == 28 and frame[6:10] == bytes.fromhex("00001234")
    assert codec.long_poll(1, 0x0F) == b"\x01\x0f"  # type R: no CRC


def test_machine_info_1f() -> None:
    frame = codec.machine_info_reply(2, denomination_code=0x03, max_bet=50, game_options=0x0102)
    reply = _round_trip(codec.long_poll(2, 0x1F), frame)
    assert isinstance(reply, MachineInfoReply)
    assert reply.denomination_cents == 10 and reply.max_bet == 50
    assert reply.game_options == 0x0102  # binary, LSB first
    assert frame[10:12] == b"\x02\x01"
    assert (reply.paytable_id, reply.base_percent) == ("RAPS01", "9500")


def test_version_and_serial_54() -> None:
    reply = _round_trip(codec.long_poll(4, 0x54), codec.version_reply(4, "603", "ABC123"))
    assert reply == VersionReply(4, "603", "ABC123")
    assert _round_trip(codec.long_poll(4, 0x54), codec.version_reply(4, "602", "")) == (
        VersionReply(4, "602", "")
    )


def test_selected_meters_2f() -> None:
    poll = codec.selected_meters(1, [0x00, 0x05, 0x0D], game=0)
    assert codec.decode_request(poll).fields == {"game": 0, "meters": [0x00, 0x05, 0x0D]}
    reply = _round_trip(poll, codec.selected_meters_reply(1, {0x00: 500, 0x05: 12, 0x0D: 1}))
    assert isinstance(reply, MetersReply)
    assert reply.meters == {"coin_in": 500, "games_played": 12, "ticket_in_cashable_cents": 1}
    assert reply.game == 0


@pytest.mark.parametrize("alt", [False, True])
def test_extended_meters_6f_af(alt: bool) -> None:
    poll = codec.extended_meters(1, [0x0000, 0x0005, 0x1234], game=3, alt=alt)
    assert poll[1] == (0xAF if alt else 0x6F)
    assert codec.decode_request(poll).fields == {"game": 3, "meters": [0, 5, 0x1234]}
    assert poll[5:7] == b"\x00\x00" and poll[9:11] == b"\x34\x12"  # codes binary, LSB first
    frame = codec.extended_meters_reply(1, {0: 10**15, 5: 9, 0x1234: 1}, game=3, alt=alt, size=8)
    reply = _round_trip(poll, frame)
    assert isinstance(reply, MetersReply)
    assert reply.meters == {"coin_in": 10**15, "games_played": 9, "meter_1234": 1}
    assert reply.sizes == {"coin_in": 8, "games_played": 8, "meter_1234": 8}


def test_enable_realtime_0e() -> None:
    poll = codec.enable_realtime(1, True)
    assert poll[:3] == b"\x01\x0e\x01" and crc_ok(poll)
    assert codec.decode_request(poll).fields == {"enable": True}
    assert codec.decode_request(codec.enable_realtime(1, False)).fields == {"enable": False}
    assert _round_trip(poll, codec.ack(1)) == Ack(1)


def test_legacy_bonus_8a() -> None:
    poll = codec.legacy_bonus(7, 2500, tax_status=1)
    assert codec.decode_request(poll).fields == {"credits": 2500, "tax_status": 1}
    assert _round_trip(poll, codec.ack(7)) == Ack(7)
    assert _round_trip(poll, codec.nack(7)) == Nack(7)
    assert _round_trip(poll, codec.busy(7)) == Busy(7)


def test_nack_busy_and_event_instead_of_long_poll_reply() -> None:
    req = codec.decode_request(codec.long_poll(1, 0x0F))
    assert codec.decode_reply(req, b"\x81") == Nack(1)
    assert codec.decode_reply(req, b"\x01\x00") == Busy(1)
    ev = codec.event_message(1, 0x7F, {"win_credits": 40})
    assert codec.reply_length(req, ev, realtime=True) == len(ev)
    assert codec.decode_reply(req, ev) == EventReply(1, 0x7F, {"win_credits": 40})


def test_reply_length_ambiguity() -> None:
    # in RTE mode a lone byte equal to the address may be an exception or an event's start
    assert codec.reply_length(GP, b"\x01", realtime=True) is None
    assert codec.could_end_here(GP, b"\x01")
    assert codec.reply_length(GP, b"\x01", realtime=False) == 1
    assert codec.reply_length(GP, b"\x7e", realtime=True) == 1
    s = codec.decode_request(codec.enable_realtime(1, True))
    assert codec.reply_length(s, b"\x01", realtime=True) is None  # ACK, busy or event
    assert codec.could_end_here(s, b"\x01")


# ------------------------------------------------------------------------ bad frames


def _err(req: Request, frame: bytes) -> SasError:
    with pytest.raises(SasError) as e:
        codec.decode_reply(req, frame)
    return e.value


def test_errors_name_reason_and_offset() -> None:
    req = codec.decode_request(codec.long_poll(1, 0x0F))
    good = codec.meters_reply(1, 0x0F, {"coin_in": 5})
    e = _err(req, good[:10])
    assert (e.reason, e.offset) == ("truncated", 10)
    e = _err(req, good + b"\x00")
    assert (e.reason, e.offset) == ("overlong", 28)
    bad = bytearray(good)
    bad[-1] ^= 0xFF
    e = _err(req, bytes(bad))
    assert (e.reason, e.offset) == ("crc", 26) and "CRC" in str(e)
    bad = bytearray(good[:-2])
    bad[9] = 0x0A
    e = _err(req, with_crc(bytes(bad)))
    assert (e.reason, e.offset) == ("bcd", 9) and "byte offset 9" in str(e)
    e = _err(req, b"\x02\x0f")
    assert e.reason == "address"
    e = _err(req, with_crc(b"\x01\x10\x00\x00\x00\x00"))
    assert e.reason == "command"
    assert _err(GP, b"").reason == "empty"
    assert _err(GP, b"\x00\x00").reason == "overlong"


def test_request_errors() -> None:
    with pytest.raises(SasError) as e:
        codec.decode_request(b"\x01\x99")
    assert e.value.reason == "unknown_command"
    with pytest.raises(SasError) as e:
        codec.decode_request(codec.enable_realtime(1, True)[:-1])
    assert e.value.reason == "truncated"
    bad = bytearray(codec.legacy_bonus(1, 10))
    bad[-1] ^= 1
    with pytest.raises(SasError) as e:
        codec.decode_request(bytes(bad))
    assert e.value.reason == "crc"


def test_poll_builders_check_arguments() -> None:
    with pytest.raises(ValueError):
        codec.selected_meters(1, [])
    with pytest.raises(ValueError):
        codec.extended_meters(1, list(range(13)))


def test_helpers() -> None:
    assert codec.denomination_code(25) == 0x04 and codec.denomination_code(7) == 0
    assert codec.selected_meter_size(0x0D) == 5 and codec.selected_meter_size(0x00) == 4
    assert codec.meter_name(0x05) == "games_played" and codec.meter_name(0x1FF) == "meter_01ff"


# ---------------------------------------------------------------------- field tool


def test_decode_tool_exchange() -> None:
    out = cli.decode_exchange("81", codec.event_message(1, 0x7F, {"win_credits": 3}).hex())
    assert out["poll"]["name"] == "general_poll"
    assert out["reply"]["name"] == "game_ended" and out["reply"]["fields"]["win_credits"] == 3
    out = cli.decode_exchange("01 0F", "01 0F 00")
    assert out["error"]["frame"] == "reply" and out["error"]["reason"] == "truncated"
    assert cli.decode_exchange("8z", None)["error"]["reason"] == "input"
    assert cli.parse_hex("0x01:0f-AA") == b"\x01\x0f\xaa"


def test_decode_tool_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    meters = codec.meters_reply(1, 0x0F, {"coin_in": 9}).hex()
    bad = codec.meters_reply(1, 0x0F, {"coin_in": 9})[:-1].hex() + "00"
    cap = tmp_path / "trace.txt"
    cap.write_text(f"# a trace\n> 81\n< 7E\n010F {meters}\n010F {bad}\n> 81\n")
    assert raps_main(["sas", "decode", "--file", str(cap)]) == 1
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [x["line"] for x in lines] == [2, 4, 5, 6]
    assert lines[0]["reply"]["name"] == "game_started"
    assert lines[1]["reply"]["meters"]["coin_in"] == 9
    assert lines[2]["error"]["reason"] == "crc" and lines[2]["error"]["offset"] == 26
    assert "reply" not in lines[3]
    assert raps_main(["sas", "decode", "81", "00"]) == 0
    assert json.loads(capsys.readouterr().out)["reply"]["name"] == "no_activity"
    assert raps_main(["sas", "decode"]) == 2
    assert raps_main(["sas", "decode", "--file", str(tmp_path / "missing")]) == 2


def test_docs_list_every_exception_code() -> None:
    doc = (Path(__file__).resolve().parents[1] / "docs" / "sas.md").read_text(encoding="utf-8")
    for code, info in EXCEPTIONS.items():
        assert f"| `{code:02X}` | {info.name} |" in doc, f"docs/sas.md misses exception {code:02X}"

"""Fuzz the SAS codec: random bytes and mutated valid frames never raise anything but
`SasError`, and framing helpers never raise at all.

The suite runs a few thousand frames.  The documented long run (docs/sas.md):

    RAPS_SAS_FUZZ_FRAMES=100000 .venv/bin/python -m pytest tests/test_sas_fuzz.py -q

spreads that many frames over the three decoding properties and checks at the
end that the total decoded reached the target (a few minutes on one core).
"""

from __future__ import annotations

import os
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.sas import codec
from adapters.sas.codec import Request, SasError
from adapters.sas.exceptions import EXCEPTIONS, RTE_FIELDS
from adapters.sas.transport import PairDecoder, from_pairs, to_pairs

TARGET = int(os.environ.get("RAPS_SAS_FUZZ_FRAMES", "0"))
EXAMPLES = max(TARGET // 3 + 1, 600)  # three properties decode frames
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)
frames = Counter[str]()


def _valid_frames() -> list[tuple[Request, bytes]]:
    """A valid reply to every kind of poll, as the seeds for mutation."""
    a = 3
    out: list[tuple[Request, bytes]] = []
    gp = Request(a, None)
    for code in EXCEPTIONS:
        out.append((gp, codec.exception_reply(code)))
        fields = {f.name: 1 for f in RTE_FIELDS.get(code, ())}
        out.append((gp, codec.event_message(a, code, fields)))
    for cmd in codec.FIXED_METERS:
        values = dict.fromkeys(codec.FIXED_METERS[cmd], 12345)
        out.append((Request(a, cmd), codec.meters_reply(a, cmd, values)))
    out.append((Request(a, 0x1F), codec.machine_info_reply(a)))
    out.append((Request(a, 0x54), codec.version_reply(a, "602", "SERIAL")))
    sm = codec.decode_request(codec.selected_meters(a, [0, 5, 0x0D]))
    out.append((sm, codec.selected_meters_reply(a, {0: 1, 5: 2, 0x0D: 3})))
    for alt in (False, True):
        em = codec.decode_request(codec.extended_meters(a, [0, 5], alt=alt))
        out.append((em, codec.extended_meters_reply(a, {0: 1, 5: 2}, alt=alt)))
    for poll in (codec.enable_realtime(a, True), codec.legacy_bonus(a, 10)):
        req = codec.decode_request(poll)
        out += [(req, codec.ack(a)), (req, codec.nack(a)), (req, codec.busy(a))]
    return out


VALID = _valid_frames()
POLLS = [
    codec.general_poll(3),
    codec.long_poll(3, 0x0F),
    codec.long_poll(3, 0x1F),
    codec.long_poll(3, 0x54),
    codec.enable_realtime(3, True),
    codec.selected_meters(3, [0, 5]),
    codec.extended_meters(3, [0, 5]),
    codec.legacy_bonus(3, 100),
]
REQUESTS = list({repr(r): r for r, _ in VALID}.values())


@st.composite
def mutated(draw: st.DrawFn) -> tuple[Request, bytes]:
    req, frame = draw(st.sampled_from(VALID))
    buf = bytearray(frame)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "set", "insert", "delete", "truncate", "extend"]))
        i = draw(st.integers(0, max(0, len(buf) - 1)))
        if op == "flip" and buf:
            buf[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "set" and buf:
            buf[i] = draw(st.integers(0, 255))
        elif op == "insert":
            buf.insert(i, draw(st.integers(0, 255)))
        elif op == "delete" and buf:
            del buf[i]
        elif op == "truncate":
            del buf[i:]
        elif op == "extend":
            buf += draw(st.binary(max_size=8))
    return req, bytes(buf)


def _decode(req: Request, frame: bytes) -> None:
    frames["reply"] += 1
    try:
        codec.decode_reply(req, frame)
    except SasError as e:
        assert e.reason and 0 <= e.offset <= len(frame) + 2
    for rt in (True, False):
        n = codec.reply_length(req, frame, rt)
        assert n is None or n >= 1
    codec.could_end_here(req, frame)


@FUZZ
@given(st.sampled_from(REQUESTS), st.binary(max_size=64))
def test_random_bytes_as_replies(req: Request, frame: bytes) -> None:
    _decode(req, frame)


@FUZZ
@given(mutated())
def test_mutated_valid_replies(case: tuple[Request, bytes]) -> None:
    _decode(*case)


@FUZZ
@given(st.one_of(st.binary(max_size=48), st.sampled_from(POLLS).map(bytearray).flatmap(
    lambda b: st.tuples(st.just(b), st.integers(0, 255), st.integers(0, 47)).map(
        lambda t: bytes(t[0][: t[2]] + bytes([t[1]]) + t[0][t[2] + 1 :])))))  # fmt: skip
def test_random_and_mutated_polls(frame: bytes) -> None:
    frames["poll"] += 1
    try:
        codec.decode_request(frame)
    except SasError as e:
        assert e.reason and e.offset >= 0
    n = codec.request_length(frame)
    assert n is None or n == -1 or n >= 1


@settings(FUZZ, max_examples=600)
@given(st.binary(max_size=64), st.integers(1, 63))
def test_tcp_pair_framing_never_raises(wire: bytes, cut: int) -> None:
    frames["wire"] += 1
    d = PairDecoder()
    segs = d.feed(wire[:cut]) + d.feed(wire[cut:])
    assert from_pairs(to_pairs(segs)) == from_pairs(to_pairs(segs))


@settings(max_examples=200, deadline=None, database=None)
@given(st.sampled_from(VALID))
def test_valid_frames_decode(case: tuple[Request, bytes]) -> None:
    codec.decode_reply(*case)


def test_fuzz_volume() -> None:
    """The long run decodes at least the requested number of frames."""
    if not frames:
        pytest.skip("run together with the fuzz properties")
    total = frames["reply"] + frames["poll"]
    assert total >= (TARGET or 1000), dict(frames)

"""SAS transports: the wakeup bit survives every transport, TCP framing round trips,
and the serial mark/space parity trick (with a fake port: a pty has no 9th bit)."""

from __future__ import annotations

import asyncio

import pytest

from adapters.sas.transport import (
    PARITY_MARK,
    PARITY_SPACE,
    InMemoryTransport,
    PairDecoder,
    Segment,
    SerialTransport,
    TcpFramedTransport,
    TransportError,
    encode_pairs,
    from_pairs,
    plan_writes,
    to_pairs,
)


@pytest.mark.asyncio
async def test_in_memory_preserves_the_wakeup_bit() -> None:
    host, egm = InMemoryTransport.pair()
    await host.send(b"\x01\x0f", wakeup=True)
    await host.send(b"\x81", wakeup=True)
    await egm.send(b"\x00")
    assert await egm.recv(1.0) == Segment(b"\x01\x0f", True)
    assert await egm.recv(1.0) == Segment(b"\x81", True)
    assert await host.recv(1.0) == Segment(b"\x00", False)
    assert await host.recv(0.001) is None  # nothing more: a timeout, not an error


@pytest.mark.asyncio
async def test_in_memory_discard_and_close() -> None:
    host, egm = InMemoryTransport.pair()
    await egm.send(b"junk")
    await egm.send(b"more")
    assert host.discard_input() == 8
    assert await host.recv(0.001) is None
    await egm.close()
    with pytest.raises(TransportError):
        await host.send(b"\x81", wakeup=True)
    with pytest.raises(TransportError):
        await host.recv(1.0)


@pytest.mark.asyncio
async def test_in_memory_receiver_callback() -> None:
    host, egm = InMemoryTransport.pair()
    seen: list[Segment] = []
    egm.set_receiver(seen.append)
    await host.send(b"\x85", wakeup=True)
    await asyncio.sleep(0)
    assert seen == [Segment(b"\x85", True)]


def test_pairs_and_segments_say_the_same() -> None:
    segs = [Segment(b"\x01\x0f", True), Segment(b"\x81", True), Segment(b"\x00\x01", False)]
    pairs = to_pairs(segs)
    assert pairs == [(1, True), (15, False), (0x81, True), (0, False), (1, False)]
    # bytes without wakeup join the segment before them: framing is by the 9th bit only
    assert from_pairs(pairs) == [Segment(b"\x01\x0f", True), Segment(b"\x81\x00\x01", True)]
    assert to_pairs(from_pairs(pairs)) == pairs


def test_tcp_framing_encoding() -> None:
    assert encode_pairs(b"\x01\x0f", wakeup=True) == b"\x01\x01\x00\x0f"
    assert encode_pairs(b"\x7e", wakeup=False) == b"\x00\x7e"
    d = PairDecoder()
    wire = encode_pairs(b"\x01\x0f", True) + encode_pairs(b"\x81", True)
    # split anywhere, even inside a pair: the decoder waits for the second half
    out = d.feed(wire[:3]) + d.feed(wire[3:])
    assert to_pairs(out) == [(1, True), (15, False), (0x81, True)]
    assert d.feed(b"\x07\x05") == [Segment(b"\x05", True)] and d.errors == 1


@pytest.mark.asyncio
async def test_tcp_framed_round_trip() -> None:
    got: list[Segment] = []
    done = asyncio.Event()

    async def device(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        t = TcpFramedTransport(streams=(reader, writer))
        await t.open()
        while len(got) < 2:
            seg = await t.recv(2.0)
            assert seg is not None
            got.append(seg)
        await t.send(b"\x01\x0f\x00")  # a reply: no wakeup
        done.set()
        await asyncio.sleep(0.05)
        await t.close()

    server = await asyncio.start_server(device, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    host = TcpFramedTransport("127.0.0.1", port)
    await host.open()
    await host.send(b"\x81", wakeup=True)
    await host.send(b"\x01\x0f", wakeup=True)
    await asyncio.wait_for(done.wait(), 10.0)
    assert got == [Segment(b"\x81", True), Segment(b"\x01\x0f", True)]
    reply = await host.recv(10.0)
    assert reply == Segment(b"\x01\x0f\x00", False)
    await host.close()
    server.close()
    await server.wait_closed()


@pytest.mark.asyncio
async def test_tcp_unreachable_gateway_is_a_transport_error() -> None:
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    t = TcpFramedTransport("127.0.0.1", port, connect_timeout=1.0)
    with pytest.raises(TransportError):
        await t.open()
    with pytest.raises(TransportError):
        await t.send(b"\x81", wakeup=True)


# ---------------------------------------------------------------- serial parity


def test_parity_plan() -> None:
    assert plan_writes(b"\x81", wakeup=True) == [(PARITY_MARK, b"\x81")]
    mark, space = (PARITY_MARK, b"\x01"), (PARITY_SPACE, b"\x0f")
    assert plan_writes(b"\x01\x0f", wakeup=True) == [mark, space]
    assert plan_writes(b"\x01\x0e\x01\xaa\xbb", wakeup=False) == [
        (PARITY_SPACE, b"\x01\x0e\x01\xaa\xbb")
    ]
    assert plan_writes(b"", wakeup=True) == []


class FakePort:
    """Records what left the UART and with which parity; drain marks the UART empty."""

    def __init__(self) -> None:
        self.parity = PARITY_SPACE
        self.wire: list[tuple[str, int]] = []  # (parity, byte) as transmitted
        self.buffered: list[int] = []
        self.log: list[str] = []

    def write(self, data: bytes) -> None:
        self.log.append(f"write {data.hex()} @{self.parity}")
        self.buffered += data
        self.wire += [(self.parity, b) for b in data]

    async def drain(self) -> None:
        self.log.append("drain")
        self.buffered.clear()

    def __setattr__(self, name: str, value: object) -> None:
        if name == "parity" and getattr(self, "buffered", None):
            raise AssertionError("parity changed with bytes still in the UART")
        object.__setattr__(self, name, value)


@pytest.mark.asyncio
async def test_serial_sends_the_wakeup_byte_with_mark_parity() -> None:
    port = FakePort()
    t = SerialTransport("/dev/null", port=port)
    await t.send(b"\x01\x0f", wakeup=True)
    await t.send(b"\x81", wakeup=True)
    await t.send(b"\x02\x1a", wakeup=True)
    assert port.wire == [
        (PARITY_MARK, 0x01),
        (PARITY_SPACE, 0x0F),
        (PARITY_MARK, 0x81),
        (PARITY_MARK, 0x02),  # no needless switch: still MARK from the general poll
        (PARITY_SPACE, 0x1A),
    ]
    assert port.log.count("drain") == 4  # one before every parity switch


@pytest.mark.asyncio
async def test_serial_receive_needs_no_ninth_bit() -> None:
    t = SerialTransport("/dev/null", port=FakePort())
    t.feed(b"\x01\x0f")
    t.feed(b"\x00")
    assert await t.recv(0.1) == Segment(b"\x01\x0f")
    assert t.discard_input() == 1
    assert await t.recv(0.001) is None
    await t.close()
    with pytest.raises(TransportError):
        await t.send(b"\x81", wakeup=True)


@pytest.mark.asyncio
async def test_serial_open_failure_is_a_transport_error() -> None:
    t = SerialTransport("/dev/does-not-exist-raps")
    with pytest.raises(TransportError):
        await t.open()

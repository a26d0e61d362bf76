"""The ingest's transport shortcuts: buffered reads under paho, one write for a batch's acks.

Both sit under paho, so each is checked against paho itself: the buffer serves paho
the same bytes in the same pieces, and the batched PUBACKs are the bytes paho's own
`ack` would have queued.  The broker-facing behaviour (nothing lost, nothing applied
twice, TLS) is tests/test_mqtt_ingest.py's, which runs through both.
"""

from __future__ import annotations

import socket
from collections import deque
from typing import Any

import paho.mqtt.client as mqtt
import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.mqtt.readbuffer import READ_SIZE, ReadBuffered, buffer_reads, buffered
from adapters.mqtt.receiver import _ack


class FakeSocket:
    """A socket that hands out scripted chunks; BlockingIOError when there is none."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = deque(chunks)
        self.asked: list[int] = []
        self.closed = False

    def recv(self, size: int) -> bytes:
        self.asked.append(size)
        if not self.chunks:
            raise BlockingIOError
        chunk = self.chunks.popleft()
        if isinstance(chunk, Exception):
            raise chunk
        return chunk[:size]

    def close(self) -> None:
        self.closed = True


def test_small_reads_are_served_from_one_recv_of_the_socket() -> None:
    sock = FakeSocket([b"\x30\x05hello\x30\x03abc"])
    buf = ReadBuffered(sock)
    assert [buf.recv(1), buf.recv(1), buf.recv(5)] == [b"\x30", b"\x05", b"hello"]
    assert buf.unread() == 5
    assert [buf.recv(1), buf.recv(1), buf.recv(3)] == [b"\x30", b"\x03", b"abc"]
    assert sock.asked == [READ_SIZE]  # one system call for both packets
    assert buf.unread() == 0


def test_a_body_split_across_reads_comes_in_pieces_as_from_the_socket() -> None:
    buf = ReadBuffered(FakeSocket([b"\x30\x0aabc", b"defghij"]))
    assert buf.recv(1) + buf.recv(1) == b"\x30\x0a"
    assert buf.recv(10) == b"abc"  # short read: paho keeps asking for the rest
    assert buf.recv(7) == b"defghij"


def test_the_sockets_own_exceptions_and_end_of_stream_reach_paho_unchanged() -> None:
    buf = ReadBuffered(FakeSocket([b"ab"]))
    assert buf.recv(2) == b"ab"
    with pytest.raises(BlockingIOError):  # nothing to read: paho's MQTT_ERR_AGAIN
        buf.recv(1)
    reset = ReadBuffered(FakeSocket([ConnectionResetError("reset")]))  # type: ignore[list-item]
    with pytest.raises(ConnectionResetError):
        reset.recv(1)
    closed = ReadBuffered(FakeSocket([b""]))
    assert closed.recv(1) == b""  # paho: connection lost


def test_everything_else_is_the_socket_itself() -> None:
    sock = FakeSocket([])
    buf = ReadBuffered(sock)
    buf.close()
    assert sock.closed


def test_unread_adds_what_a_tls_socket_holds_decrypted() -> None:
    class Tls(FakeSocket):
        def pending(self) -> int:
            return 7

    buf = ReadBuffered(Tls([b"abcd"]))
    assert buf.unread() == 7
    buf.recv(1)
    assert buf.unread() == 3 + 7


@given(
    st.lists(st.binary(min_size=1, max_size=300), min_size=1, max_size=12),
    st.lists(st.integers(1, 500), min_size=1, max_size=40),
)
def test_any_reads_give_the_stream_in_order_with_nothing_lost(
    chunks: list[bytes], sizes: list[int]
) -> None:
    stream = b"".join(chunks)
    buf = ReadBuffered(FakeSocket(list(chunks)))
    got = b""
    for size in sizes * 20:
        try:
            piece = buf.recv(size)
        except BlockingIOError:
            break
        assert 0 < len(piece) <= size
        got += piece
    assert got == stream[: len(got)]
    rest = b""
    while True:
        try:
            rest += buf.recv(64)
        except BlockingIOError:
            break
    assert got + rest == stream


def test_a_client_opens_its_connections_buffered_and_the_old_callback_still_runs() -> None:
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
    seen: list[Any] = []
    client.on_socket_open = lambda _c, _u, sock: seen.append(sock)
    buffer_reads(client)
    a, b = socket.socketpair()
    try:
        client._sock = a
        client.on_socket_open(client, None, a)
        assert isinstance(client._sock, ReadBuffered)
        assert seen == [a]  # aiomqtt watches the socket itself
        b.sendall(b"\x30\x02xy")
        a.setblocking(False)
        assert client._sock.recv(1) == b"\x30"
        assert buffered(client) == 3
    finally:
        a.close()
        b.close()
    assert buffered(mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)) == 0


def _queued(client: mqtt.Client) -> list[bytes]:
    return [bytes(p["packet"]) for p in client._out_packet]


@pytest.mark.parametrize("protocol", [mqtt.MQTTv311, mqtt.MQTTv5])
def test_a_batchs_pubacks_are_the_bytes_paho_would_send_in_one_packet(protocol: int) -> None:
    batch = []
    for mid, qos in [(1, 1), (2, 0), (65535, 1), (300, 1), (7, 0)]:
        m = mqtt.MQTTMessage(mid=mid, topic=b"raps/v1/x/slots/M1/events")
        m.qos = qos
        batch.append(m)
    by_paho = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, protocol=protocol)
    by_paho.manual_ack_set(True)
    for m in batch:
        by_paho.ack(m.mid, m.qos)
    ours = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, protocol=protocol)
    _ack(ours, [m.mid for m in batch if m.qos == 1], [])
    assert _queued(ours) == [b"".join(_queued(by_paho))]
    assert len(_queued(by_paho)) == 3  # the QoS 0 messages have nothing to acknowledge
    empty = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, protocol=protocol)
    _ack(empty, [], [])
    assert _queued(empty) == []

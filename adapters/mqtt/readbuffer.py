"""A read buffer under paho's socket: one recv() per chunk of packets, not three per packet.

paho reads every packet with a recv() of its command byte, one per byte of its length
and one of its body: on a backlog of small messages those system calls are a fifth of
the receive loop's cost.  `ReadBuffered` stands in for the connection's socket (paho
keeps it as `Client._sock`): it asks the socket for up to READ_SIZE bytes at once and
serves paho's small reads from them.  Every exception of the socket's own recv()
(nothing to read yet, TLS wanting more, a reset) reaches paho unchanged, so paho's
error handling is the same.

Bytes that were read but not yet handed to paho are reported by `unread()`: whoever
reads the connection (adapters.mqtt.receiver) goes on while it is non-zero, as nothing
else would wake it for them: the socket has no more to say.  (It is not called
`pending`, the name paho asks of a TLS socket: how far to read a turn is the reader's
to decide, not paho's.)
"""

from __future__ import annotations

from typing import Any, Protocol, cast

import paho.mqtt.client as mqtt

READ_SIZE = 256 * 1024


class _Socket(Protocol):
    def recv(self, size: int, /) -> bytes: ...


class ReadBuffered:
    """A socket whose recv() is served from a buffer filled READ_SIZE bytes at a time."""

    __slots__ = ("_data", "_pos", "_sock", "fills")

    def __init__(self, sock: _Socket) -> None:
        self._sock = sock
        self._data = b""
        self._pos = 0
        self.fills = 0  # recv() calls on the socket

    def recv(self, size: int, /) -> bytes:
        data, pos = self._data, self._pos
        if pos >= len(data):
            self.fills += 1
            data = self._sock.recv(max(size, READ_SIZE))  # raises as the socket does
            if not data:
                return data  # the peer closed the connection
            self._data, pos = data, 0
        end = pos + size
        self._pos = min(end, len(data))
        return data[pos:end]

    def unread(self) -> int:
        """Bytes read from the socket that paho has not taken yet (and, under TLS,
        bytes the TLS layer decrypted but nobody read)."""
        buffered = len(self._data) - self._pos
        tls = getattr(self._sock, "pending", None)
        return buffered + (tls() if tls is not None else 0)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)  # send, fileno, close, setsockopt, ...


def buffer_reads(client: mqtt.Client) -> None:
    """Give every connection `client` opens from now on a read buffer.

    Chained in front of the client's socket-open callback: the socket is wrapped before
    anything is read from it after the CONNECT, and the callback still gets the socket
    itself.  Whoever reads must read on while `buffered` says bytes wait (see module
    docstring)."""
    opened = client.on_socket_open

    def wrap(c: mqtt.Client, userdata: Any, sock: Any) -> None:
        if sock is not None and c._sock is sock:  # paho keeps the connection's socket here
            c._sock = cast(Any, ReadBuffered(cast(_Socket, sock)))
        if opened is not None:
            opened(c, userdata, sock)

    client.on_socket_open = wrap


def buffered(client: mqtt.Client) -> int:
    """Bytes of the client's connection read but not yet handled (0 when unbuffered)."""
    sock = client._sock
    return sock.unread() if isinstance(sock, ReadBuffered) else 0

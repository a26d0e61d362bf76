"""Byte transports that keep the SAS wakeup (9th) bit.

SAS marks the first byte of every host message with a 9th "wakeup" bit.  A
serial port fakes it with parity (MARK for the address byte, SPACE for the
rest); a pty or a socket has no 9th bit at all.  So the poller and the EGM
simulator talk through `Transport`, whose unit is a `Segment`: bytes of which
only the first may carry the wakeup bit.  A stream of (byte, wakeup) pairs and
a list of segments say the same thing (`to_pairs` / `from_pairs`).

- `InMemoryTransport.pair()`: two connected ends in one event loop (tests,
  benchmark, `raps demo`).
- `TcpFramedTransport`: (byte, wakeup) pairs over TCP, two bytes per byte
  (flags, byte), for simulators in another process and serial-to-IP gateways
  that speak this framing.
- `SerialTransport`: a real port through pyserial-asyncio-fast with the
  mark/space parity trick.  The host does not need the 9th bit on receive:
  gaming machines clear it in every reply.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

WAKEUP_FLAG = 0x01  # bit 0 of the flag byte on the TCP framing


class TransportError(ConnectionError):
    """The link itself failed (closed, refused, unplugged); the poller reopens it."""


@dataclass(frozen=True, slots=True)
class Segment:
    """Bytes as they crossed the wire; `wakeup` is the 9th bit of the first byte only."""

    data: bytes
    wakeup: bool = False


def to_pairs(segments: Iterable[Segment]) -> list[tuple[int, bool]]:
    return [(b, s.wakeup and i == 0) for s in segments for i, b in enumerate(s.data)]


def from_pairs(pairs: Iterable[tuple[int, bool]]) -> list[Segment]:
    """Pairs to segments: a new segment starts at every byte with the wakeup bit."""
    out: list[Segment] = []
    cur = bytearray()
    wake = False
    for b, w in pairs:
        if w and cur:
            out.append(Segment(bytes(cur), wake))
            cur = bytearray()
        if not cur:
            wake = w
        cur.append(b)
    if cur:
        out.append(Segment(bytes(cur), wake))
    return out


class Transport(Protocol):
    """What the poller (and the simulator's bus) need from a link."""

    async def open(self) -> None: ...

    async def send(self, data: bytes, wakeup: bool = False) -> None:
        """Send `data`; with `wakeup` its first byte carries the 9th bit."""
        ...

    async def recv(self, timeout: float) -> Segment | None:
        """The next bytes received, or None when nothing came within `timeout` seconds."""
        ...

    def discard_input(self) -> int:
        """Drop bytes received but not read (stale or babble); returns how many."""
        ...

    async def close(self) -> None: ...


class _Rx:
    """A receive queue with one waiter, shared by the transports below."""

    __slots__ = ("closed", "queue", "waiter")

    def __init__(self) -> None:
        self.queue: deque[Segment] = deque()
        self.waiter: asyncio.Future[None] | None = None
        self.closed = False

    def push(self, seg: Segment) -> None:
        self.queue.append(seg)
        w = self.waiter
        if w is not None and not w.done():
            w.set_result(None)

    def close(self) -> None:
        self.closed = True
        w = self.waiter
        if w is not None and not w.done():
            w.set_result(None)

    async def get(self, timeout: float) -> Segment | None:
        if self.queue:
            return self.queue.popleft()
        if self.closed:
            raise TransportError("link closed")
        loop = asyncio.get_running_loop()
        w = self.waiter = loop.create_future()
        timer = loop.call_later(timeout, _expire, w)
        try:
            await w
        finally:
            timer.cancel()
            self.waiter = None
        if self.queue:
            return self.queue.popleft()
        if self.closed:
            raise TransportError("link closed")
        return None

    def discard(self) -> int:
        n = sum(len(s.data) for s in self.queue)
        self.queue.clear()
        return n


def _expire(w: asyncio.Future[None]) -> None:
    if not w.done():
        w.set_result(None)


class InMemoryTransport:
    """One end of an in-process link; `pair()` makes both ends.

    An end may hand incoming segments to a callback instead of queueing them
    (`set_receiver`), called synchronously inside the peer's `send`: the EGM
    simulator's bus answers polls that way, without a task per machine and
    without a loop iteration per message, which is what lets one core simulate
    thousands.  Only one end of a pair may have a callback (no ping-pong).
    """

    def __init__(self) -> None:
        self.peer: InMemoryTransport | None = None
        self._rx = _Rx()
        self._receiver: Callable[[Segment], None] | None = None
        self.sent_bytes = 0

    @classmethod
    def pair(cls) -> tuple[InMemoryTransport, InMemoryTransport]:
        a, b = cls(), cls()
        a.peer, b.peer = b, a
        return a, b

    def set_receiver(self, receiver: Callable[[Segment], None] | None) -> None:
        self._receiver = receiver

    async def open(self) -> None:
        if self._rx.closed:
            raise TransportError("link closed")

    async def send(self, data: bytes, wakeup: bool = False) -> None:
        self.send_nowait(data, wakeup)

    def send_nowait(self, data: bytes, wakeup: bool = False) -> None:
        peer = self.peer
        if peer is None or peer._rx.closed or self._rx.closed:
            raise TransportError("link closed")
        self.sent_bytes += len(data)
        seg = Segment(data, wakeup)
        if peer._receiver is not None:
            peer._receiver(seg)  # a simulator answers at once, inside this call
        else:
            peer._rx.push(seg)

    async def recv(self, timeout: float) -> Segment | None:
        return await self._rx.get(timeout)

    def discard_input(self) -> int:
        return self._rx.discard()

    async def close(self) -> None:
        self._rx.close()
        if self.peer is not None:
            self.peer._rx.close()


def encode_pairs(data: bytes, wakeup: bool) -> bytes:
    """TCP framing: each byte becomes (flags, byte); flags bit 0 is the wakeup bit."""
    out = bytearray(2 * len(data))
    out[1::2] = data
    if wakeup and data:
        out[0] = WAKEUP_FLAG
    return bytes(out)


class PairDecoder:
    """TCP framing back to segments; a split pair waits for its second half."""

    def __init__(self) -> None:
        self._rest = b""
        self.errors = 0  # flag bytes other than 0 and 1

    def feed(self, chunk: bytes) -> list[Segment]:
        data = self._rest + chunk
        cut = len(data) & ~1
        self._rest = data[cut:]
        flags, values = data[0:cut:2], data[1:cut:2]
        if not flags.strip(b"\x00"):
            return [Segment(values)] if values else []
        pairs = []
        for f, b in zip(flags, values, strict=True):
            if f & ~WAKEUP_FLAG:
                self.errors += 1
            pairs.append((b, bool(f & WAKEUP_FLAG)))
        return from_pairs(pairs)


class TcpFramedTransport:
    """(byte, wakeup) pairs over TCP: a client (`host`, `port`) or accepted streams."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        connect_timeout: float = 3.0,
        streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None,
    ) -> None:
        self.host, self.port, self.connect_timeout = host, port, connect_timeout
        self._rx = _Rx()
        self._decoder = PairDecoder()
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task[None] | None = None
        self._streams = streams

    @property
    def framing_errors(self) -> int:
        return self._decoder.errors

    async def open(self) -> None:
        if self._writer is not None and not self._rx.closed:
            return
        if self._streams is not None:
            reader, writer = self._streams
        else:
            try:
                reader, writer = await asyncio.wait_for(
                    asyncio.open_connection(self.host, self.port), self.connect_timeout
                )
            except (OSError, TimeoutError) as e:
                raise TransportError(f"cannot reach {self.host}:{self.port}: {e}") from e
        self._rx = _Rx()
        self._decoder = PairDecoder()
        self._writer = writer
        self._reader_task = asyncio.create_task(self._read(reader, self._rx))

    async def _read(self, reader: asyncio.StreamReader, rx: _Rx) -> None:
        try:
            while chunk := await reader.read(4096):
                for seg in self._decoder.feed(chunk):
                    rx.push(seg)
        except OSError:
            pass
        finally:
            rx.close()

    async def send(self, data: bytes, wakeup: bool = False) -> None:
        w = self._writer
        if w is None or self._rx.closed:
            raise TransportError("link closed")
        try:
            w.write(encode_pairs(data, wakeup))
            await w.drain()
        except OSError as e:
            raise TransportError(str(e)) from e

    async def recv(self, timeout: float) -> Segment | None:
        return await self._rx.get(timeout)

    def discard_input(self) -> int:
        return self._rx.discard()

    async def close(self) -> None:
        self._rx.close()
        if self._reader_task is not None:
            self._reader_task.cancel()
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(OSError):
                await self._writer.wait_closed()
            self._writer = None


# ------------------------------------------------------------------ serial port

PARITY_MARK = "M"  # == serial.PARITY_MARK: the 9th bit set (the wakeup byte)
PARITY_SPACE = "S"  # == serial.PARITY_SPACE: the 9th bit clear


def plan_writes(data: bytes, wakeup: bool) -> list[tuple[str, bytes]]:
    """Which parity each part of a message goes out with: the mark/space trick."""
    if not data:
        return []
    if not wakeup:
        return [(PARITY_SPACE, data)]
    if len(data) == 1:
        return [(PARITY_MARK, data)]
    return [(PARITY_MARK, data[:1]), (PARITY_SPACE, data[1:])]


class SerialPort(Protocol):
    """The part of a serial line the parity trick needs (a fake in tests)."""

    parity: str

    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None:
        """Return once every written byte has left the UART (tcdrain)."""
        ...


class _Receiver(asyncio.Protocol):
    def __init__(self, rx: _Rx) -> None:
        self.rx = rx

    def data_received(self, data: bytes) -> None:
        self.rx.push(Segment(data))

    def connection_lost(self, exc: Exception | None) -> None:
        self.rx.close()


class _AsyncSerialPort:
    """pyserial-asyncio-fast's transport seen as a SerialPort."""

    def __init__(self, transport: Any) -> None:
        self._transport = transport
        self._serial = transport.serial

    @property
    def parity(self) -> str:
        value: str = self._serial.parity
        return value

    @parity.setter
    def parity(self, value: str) -> None:
        self._serial.parity = value  # tcsetattr: takes effect for the next byte written

    def write(self, data: bytes) -> None:
        self._transport.write(data)

    async def drain(self) -> None:
        while self._transport.get_write_buffer_size():
            await asyncio.sleep(0.0005)
        # tcdrain blocks until the UART is empty (~0.6 ms a byte at 19200): off the loop
        await asyncio.get_running_loop().run_in_executor(None, self._serial.flush)


class SerialTransport:
    """A SAS loop on a real serial port, 19200 8N1 plus the parity bit as wakeup bit."""

    def __init__(self, device: str, baud: int = 19200, port: SerialPort | None = None) -> None:
        self.device, self.baud = device, baud
        self._rx = _Rx()
        self._port = port
        self._transport: Any = None
        self.rx_latency_s = 0.0  # what the adapter holds received bytes back (the poller allows)

    async def open(self) -> None:
        if self._port is not None and not self._rx.closed:
            return
        import serial
        import serial_asyncio_fast

        self._rx = _Rx()
        loop = asyncio.get_running_loop()
        try:
            transport, _ = await serial_asyncio_fast.create_serial_connection(
                loop,
                lambda: _Receiver(self._rx),
                self.device,
                baudrate=self.baud,
                bytesize=serial.EIGHTBITS,
                parity=serial.PARITY_SPACE,
                stopbits=serial.STOPBITS_ONE,
            )
        except (OSError, serial.SerialException) as e:
            raise TransportError(f"cannot open {self.device}: {e}") from e
        self._transport = transport
        self._port = _AsyncSerialPort(transport)
        self.rx_latency_s = usb_latency_s(self.device)

    async def send(self, data: bytes, wakeup: bool = False) -> None:
        port = self._port
        if port is None or self._rx.closed:
            raise TransportError("serial port closed")
        try:
            for parity, part in plan_writes(data, wakeup):
                if port.parity != parity:
                    await port.drain()  # bytes in the UART keep the parity they left with
                    port.parity = parity
                port.write(part)
        except OSError as e:
            raise TransportError(str(e)) from e

    def feed(self, data: bytes) -> None:
        """Bytes received by the port (the asyncio protocol, or a test's fake port)."""
        self._rx.push(Segment(data))

    async def recv(self, timeout: float) -> Segment | None:
        return await self._rx.get(timeout)

    def discard_input(self) -> int:
        return self._rx.discard()

    async def close(self) -> None:
        self._rx.close()
        if self._transport is not None:
            self._transport.close()
            self._transport = None
        self._port = None


def usb_latency_s(device: str, sys_root: str = "/sys/bus/usb-serial/devices") -> float:
    """An FTDI-style adapter's latency_timer (ms, 16 by default) in seconds; 0 elsewhere.

    The adapter sends received bytes to the host when its buffer fills or this timer
    runs out, so a 20 ms reply can arrive 16 ms late, in chunks.  docs/sas.md: set it to 1.
    """
    name = os.path.basename(os.path.realpath(device))
    try:
        with open(os.path.join(sys_root, name, "latency_timer"), encoding="ascii") as f:
            return int(f.read().strip()) / 1000
    except (OSError, ValueError):
        return 0.0

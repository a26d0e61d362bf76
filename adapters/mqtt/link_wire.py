"""What the ingest and its receiver process say to each other over the receiver's pipes.

Each frame is a 4-byte big-endian length and a MessagePack array whose first item names
it.  Receiver -> ingest:

    ["m", conn, [[topic, payload, mid, qos, retain], ...]]  a batch of messages
    ["up", conn]        subscribed on connection `conn` (numbered from 1 in a receiver)
    ["down", conn]      connection `conn` is lost; the receiver reconnects by itself
    ["p", token, ok]    the dead letters of `token` were accepted by the broker (or not)
    ["log", level, event, {fields}]   a line for the daemon's log

Ingest -> receiver (the first frame is the `LinkSettings`):

    ["c", n]            n more batches may be sent (the ingest's flow control)
    ["a", conn, [mid, ...], [mid, ...]]   acknowledge these QoS 1 and QoS 2 messages
    ["p", conn, token, [body, ...]]       publish these dead letters at QoS 1
    ["stop"]            finish: make sure the broker read the acks, then disconnect

A connection number travels with every batch and comes back with its acks: packet ids
are per connection, so an ack for a connection that is gone is dropped (its messages
come again and are dropped as duplicates), never sent on the next connection.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:  # the receiver starts without pydantic
    from adapters.mqtt.config import MqttConfig

_LENGTH = struct.Struct("!I")
BARRIER_SECONDS = 2.0  # how long a stop waits for the broker to answer the barrier
MAX_FRAME = 64 * 1024 * 1024  # a batch of 500 payloads of at most 64 KB, and then some

Message = tuple[bytes, bytes, int, int, bool]  # topic, payload, mid, qos, retain


class LinkSettings(msgspec.Struct, frozen=True, kw_only=True):
    """Everything the receiver needs to hold the ingest's broker session."""

    host: str
    port: int
    client_id: str
    protocol: str  # "5" or "3.1.1"
    username: str | None
    password: str | None
    tls: bool
    ca_file: str | None
    subscriptions: list[str]
    barrier: str  # a filter never used: its UNSUBSCRIBE is the stop's round trip
    deadletter: str  # where dead letters are published
    batch_max: int
    receive_maximum: int
    session_expiry: int
    backoff_initial: float
    backoff_max: float

    @classmethod
    def of(cls, cfg: MqttConfig, **rest: Any) -> LinkSettings:
        password = cfg.password.get_secret_value() if cfg.password else None
        return cls(
            username=cfg.username, password=password, tls=cfg.tls, ca_file=cfg.ca_file, **rest
        )


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder()
_settings = msgspec.msgpack.Decoder(LinkSettings)


def frame(*items: Any) -> bytes:
    body = _encoder.encode(items)
    return _LENGTH.pack(len(body)) + body


def settings_frame(settings: LinkSettings) -> bytes:
    body = _encoder.encode(settings)
    return _LENGTH.pack(len(body)) + body


class FrameError(Exception):
    """The other side sent something that is not a frame: it is broken, not the data."""


class FrameReader:
    """Frames out of a byte stream read in chunks of any size (the receiver's stdin)."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def bodies(self, data: bytes) -> list[bytes]:
        """The bodies of the frames `data` completes, in order."""
        buf = self._buf
        buf += data
        out: list[bytes] = []
        start = 0
        while len(buf) - start >= _LENGTH.size:
            (size,) = _LENGTH.unpack_from(buf, start)
            if size > MAX_FRAME:
                raise FrameError(f"a frame of {size} bytes")
            end = start + _LENGTH.size + size
            if len(buf) < end:
                break
            out.append(bytes(buf[start + _LENGTH.size : end]))
            start = end
        del buf[:start]
        return out

    @property
    def partial(self) -> bool:
        """Bytes of a frame not complete yet (at the end of a stream: it was cut)."""
        return bool(self._buf)


def decode_frame(body: bytes) -> list[Any]:
    try:
        items = _decoder.decode(body)
    except msgspec.DecodeError as e:
        raise FrameError(f"not a frame: {e}") from e
    if not isinstance(items, list) or not items or not isinstance(items[0], str):
        raise FrameError("a frame is an array that starts with its name")
    return items


def decode_settings(body: bytes) -> LinkSettings:
    try:
        return _settings.decode(body)
    except msgspec.DecodeError as e:
        raise FrameError(f"bad settings: {e}") from e

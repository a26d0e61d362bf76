"""The ingest's receiver: the broker session in a process of its own (`python -m` this).

Why a process: reading MQTT is Python work (paho parses every packet), and so is
decoding and applying what it read.  In one process the two take turns on one core;
here the receiver reads, batches and acknowledges on one core while the daemon decodes,
applies and writes the floor log on the other (docs/mqtt.md, "Throughput").  Why paho's
own loop and not aiomqtt here: a process that only moves bytes needs no event loop of
its own, and paho's loop is the reference the ingest is measured against.

It holds what the ingest's delivery rules need of the broker (docs/mqtt.md, "Delivery"):
the fixed client id and persistent session, subscriptions at QoS 1, manual
acknowledgements sent only when the ingest says the batch is durable, reconnection with
backoff and jitter forever, and on a stop the UNSUBSCRIBE round trip that makes sure the
broker read the last acknowledgements.  It reads the socket whenever there is something
to read (so the broker's answers to its own dead letters are never stuck behind
messages) and forwards batches of whatever has arrived, only as far ahead as the
ingest's credit allows.

It talks to the ingest over its stdin and stdout (adapters.mqtt.link_wire); anything
else that writes to stdout goes to stderr.  It ignores SIGINT and SIGTERM (a Ctrl-C or a
service manager's stop reaches the daemon, which stops it in order) and exits when its
stdin closes: when the daemon is gone, nothing it read can be acknowledged any more.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import logging
import os
import secrets
import select
import signal
import ssl
import sys
import time
from collections.abc import Sequence
from typing import Any, cast

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode
from paho.mqtt.subscribeoptions import SubscribeOptions

from adapters.mqtt.link_wire import (
    BARRIER_SECONDS,
    FrameError,
    FrameReader,
    LinkSettings,
    decode_frame,
    decode_settings,
    frame,
)
from adapters.mqtt.readbuffer import ReadBuffered, buffer_reads, buffered

KEEPALIVE = 60
TICK = 0.5  # the longest wait in select: keepalive and reconnects are checked this often
PIPE_SIZE = 1 << 20


class Receiver:
    """One broker session, reconnected forever; see module docstring."""

    def __init__(self, settings: LinkSettings, out: int, inp: int, frames: FrameReader) -> None:
        self.s = settings
        self.out, self.inp = out, inp
        self.frames = frames
        self.early: list[bytes] = []  # frames that came with the settings
        self.conn = 0  # the number of the current connection; 0 before the first
        self.connected = False  # CONNACK received on the current socket
        self.subscribed = False
        self.credit = 0
        self.held: list[tuple[bytes, bytes, int, int, bool]] = []  # read, not forwarded
        self.publishing: dict[int, set[int]] = {}  # token: the dead letters' packet ids
        self.barrier_mid: int | None = None
        self.retry_at = 0.0
        self.backoff = settings.backoff_initial
        self.client = self._client()

    # ------------------------------------------------------------- to the ingest

    def send(self, *items: Any) -> None:
        data = memoryview(frame(*items))
        while data:  # a blocking pipe: the ingest reads it all the time
            data = data[os.write(self.out, data) :]

    def log(self, level: str, event: str, **fields: Any) -> None:
        self.send("log", level, event, {k: _plain(v) for k, v in fields.items()})

    # ------------------------------------------------------------- connection

    def _client(self) -> mqtt.Client:
        s = self.s
        v5 = s.protocol == "5"
        client = mqtt.Client(
            CallbackAPIVersion.VERSION2,
            client_id=s.client_id,
            clean_session=None if v5 else False,
            protocol=mqtt.MQTTv5 if v5 else mqtt.MQTTv311,
        )
        if s.username is not None:
            client.username_pw_set(s.username, s.password)
        if s.tls:
            client.tls_set_context(ssl.create_default_context(cafile=s.ca_file))
        client.manual_ack_set(True)  # acknowledge after handling, not on receipt
        client.max_inflight_messages_set(100)  # our own dead letters in flight
        client.enable_logger(cast(logging.Logger, _WarningsOnly(logging.getLogger("raps.mqtt.in"))))
        client.on_connect = self._on_connect
        client.on_disconnect = self._on_disconnect
        client.on_subscribe = self._on_subscribe
        client.on_unsubscribe = self._on_unsubscribe
        client.on_publish = self._on_publish
        held = self.held
        client.on_message = lambda _c, _u, m: held.append(
            (m._topic, bytes(m.payload), m.mid, m.qos, bool(m.retain))
        )
        buffer_reads(client)  # one recv() per chunk of packets (adapters.mqtt.readbuffer)
        return client

    def _connect(self) -> None:
        s = self.s
        try:
            if s.protocol == "5":
                props = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]
                props.SessionExpiryInterval = s.session_expiry
                props.ReceiveMaximum = s.receive_maximum
                self.client.connect(s.host, s.port, KEEPALIVE, clean_start=False, properties=props)
            else:
                self.client.connect(s.host, s.port, KEEPALIVE)
        except Exception as e:  # refused, unreachable, a TLS file: retried
            self._lost(f"{type(e).__name__}: {e}")

    def _lost(self, why: str) -> None:
        """The connection is gone (or never came): say so, and retry with backoff."""
        if self.subscribed:
            self.send("down", self.conn)
        self.subscribed = self.connected = False
        self.barrier_mid = None
        for token in self.publishing:
            self.send("p", token, False)  # the batch comes again: no ack without them
        self.publishing.clear()
        self.held.clear()  # not acknowledged: the broker sends them again
        with contextlib.suppress(Exception):
            self.client.disconnect()
        delay = self.backoff * (0.75 + secrets.randbelow(500) / 1000)  # jitter
        self.retry_at = time.monotonic() + delay
        event = "MQTT broker unreachable; retrying"
        self.log(
            "warning", event, broker=f"{self.s.host}:{self.s.port}", error=why,
            retry_in=round(delay, 2),
        )  # fmt: skip
        self.backoff = min(self.backoff * 2, self.s.backoff_max)

    def _on_connect(self, client: mqtt.Client, _u: Any, _f: Any, rc: ReasonCode, _p: Any) -> None:
        if rc.is_failure:
            self._lost(f"the broker refused the connection: {rc}")
            return
        self.connected = True
        self.conn += 1
        self.held.clear()
        if self.s.protocol == "5":
            # retained copies are never sent: inbound events are not state to replay
            opts = SubscribeOptions(qos=1, retainHandling=SubscribeOptions.RETAIN_DO_NOT_SEND)
            client.subscribe([(t, opts) for t in self.s.subscriptions])
        else:
            client.subscribe([(t, 1) for t in self.s.subscriptions])

    def _on_subscribe(
        self, _c: mqtt.Client, _u: Any, _mid: int, granted: Sequence[ReasonCode], _p: Any
    ) -> None:
        """A refused subscription (broker ACL) is an error, not a silent empty feed."""
        codes = [int(g.value) for g in granted]
        if any(c >= 0x80 for c in codes):
            self._lost(f"MqttError: the broker refused a subscription (codes {codes})")
            return
        if any(c == 0 for c in codes):
            self.log(
                "warning",
                "the broker granted QoS 0: messages published while RAPS is down are lost",
                codes=codes,
            )
        self.subscribed = True
        self.backoff = self.s.backoff_initial
        self.send("up", self.conn)
        self.log(
            "info", "subscribed", broker=f"{self.s.host}:{self.s.port}",
            client_id=self.s.client_id, protocol=self.s.protocol,
            topics=self.s.subscriptions,
        )  # fmt: skip

    def _on_disconnect(self, _c: mqtt.Client, _u: Any, _f: Any, rc: ReasonCode, _p: Any) -> None:
        if self.connected:
            self._lost(f"MqttError: disconnected ({rc})")

    def _on_unsubscribe(self, _c: mqtt.Client, _u: Any, mid: int, _rc: Any, _p: Any) -> None:
        if mid == self.barrier_mid:
            self.barrier_mid = None

    def _on_publish(self, _c: mqtt.Client, _u: Any, mid: int, _rc: Any, _p: Any) -> None:
        for token, mids in self.publishing.items():
            if mid in mids:
                mids.discard(mid)
                if not mids:
                    del self.publishing[token]
                    self.send("p", token, True)
                return

    # ------------------------------------------------------------- the loop

    def run(self) -> None:
        """Until the ingest says stop (after the barrier) or is gone."""
        self._connect()
        while True:
            client = self.client
            sock = client.socket()
            waiting = sock is not None and buffered(client) > 0
            readers: list[Any] = [self.inp] if sock is None else [self.inp, sock]
            writers: list[Any] = [sock] if sock is not None and client.want_write() else []
            timeout = 0.0 if waiting else TICK
            if sock is None:
                timeout = min(TICK, max(0.0, self.retry_at - time.monotonic()))
            if self.early:
                timeout = 0.0
            readable, writable, _ = select.select(readers, writers, [], timeout)
            if (self.early or self.inp in readable) and not self._commands():
                return
            if sock is not None and client.socket() is sock:
                if sock in readable or waiting:
                    self._read()
                if writable and client.socket() is sock:
                    client.loop_write()
                lost = client.socket() is sock and client.loop_misc() != mqtt.MQTT_ERR_SUCCESS
                if lost and self.connected:
                    self._lost("MqttError: the connection was lost")
            elif sock is None and time.monotonic() >= self.retry_at:
                self._connect()
            self._forward()

    def _read(self) -> None:
        """The packets of one recv() of the read buffer (and the end of the one it cuts
        off); the rest waits for the next turn, after what was read is forwarded.  paho
        reports a lost connection."""
        client = self.client
        sock = client.socket()
        fills = sock.fills if isinstance(sock, ReadBuffered) else 0
        while True:
            if client.loop_read() != mqtt.MQTT_ERR_SUCCESS:
                if self.connected:
                    self._lost("MqttError: the connection was lost")
                return
            sock = client.socket()
            if not isinstance(sock, ReadBuffered) or not sock.unread() or sock.fills > fills + 1:
                return

    def _forward(self) -> None:
        limit = self.s.batch_max
        while self.credit > 0 and self.held:
            batch = self.held[:limit]
            del self.held[:limit]
            self.credit -= 1
            self.send("m", self.conn, batch)

    # ------------------------------------------------------------- from the ingest

    def _commands(self) -> bool:
        """The ingest's frames that have arrived; False once it said stop or is gone."""
        bodies, self.early = self.early, []
        if not bodies:
            data = os.read(self.inp, 1 << 16)
            if not data:
                return False
            bodies = self.frames.bodies(data)
        for body in bodies:
            items = decode_frame(body)
            kind = items[0]
            if kind == "c":
                self.credit += int(items[1])
            elif kind == "a":
                if items[1] == self.conn and self.connected:
                    _ack(self.client, items[2], items[3])
            elif kind == "p":
                self._publish(items[1], items[2], items[3])
            elif kind == "stop":
                self._barrier()
                return False
            else:
                raise FrameError(f"unknown frame {kind!r}")
        return True

    def _publish(self, conn: int, token: int, bodies: list[bytes]) -> None:
        if conn != self.conn or not self.connected:
            self.send("p", token, False)
            return
        mids = set()
        for body in bodies:
            info = self.client.publish(self.s.deadletter, body, qos=1)
            if info.rc != mqtt.MQTT_ERR_SUCCESS:
                self.send("p", token, False)
                return
            mids.add(info.mid)
        if mids:
            self.publishing[token] = mids
        else:
            self.send("p", token, True)

    def _barrier(self) -> None:
        """On stop: wait until the broker has read every acknowledgement we sent.

        Closing a TCP socket that still has unread incoming data (the broker keeps
        sending) resets the connection, and the broker then drops what it had not read
        yet: the last PUBACKs, so applied messages would come again after a restart.
        The broker handles a client's packets in order, so once it answers an
        UNSUBSCRIBE (of a filter we never use: no side effect) it has read them all.
        """
        client = self.client
        if not self.connected:
            return
        _rc, mid = client.unsubscribe(self.s.barrier)
        self.barrier_mid = mid
        deadline = time.monotonic() + BARRIER_SECONDS
        while self.barrier_mid == mid and self.connected and time.monotonic() < deadline:
            sock = client.socket()
            if sock is None:
                break
            writers = [sock] if client.want_write() else []
            readable, writable, _ = select.select([sock], writers, [], 0.05)
            if writable:
                client.loop_write()
            if readable or buffered(client):
                self._read()
        self.connected = False
        with contextlib.suppress(Exception):
            client.disconnect()
            client.loop_write()


_PUBACK = b"\x40\x02"  # PUBACK, remaining length 2; then the packet id


def _ack(paho: mqtt.Client, qos1: Sequence[int], qos2: Sequence[int]) -> None:
    """PUBACK the QoS 1 messages of a handled batch (in the order received) in one write.

    paho's `ack` queues a packet per message and writes each with its own send(), a
    system call per message.  These bytes are exactly the ones `ack` queues (MQTT 3.1.1
    and 5 alike: type, length 2, packet id; MQTT 5 leaves out the reason code when it is
    Success), queued on paho's own outgoing queue as one packet, so they keep their
    place among paho's other packets.
    """
    if qos1:
        body = b"".join(_PUBACK + mid.to_bytes(2, "big") for mid in qos1)
        paho._packet_queue(mqtt.PUBACK, body, 0, 1)
    for mid in qos2:  # we subscribe at QoS 1: a broker that sends QoS 2 still works
        paho.ack(mid, 2)


def _plain(value: Any) -> Any:
    """A log field as MessagePack carries it."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return str(value)


class _WarningsOnly:
    """paho logs a debug line for every packet: only its warnings and errors are worth a
    call into logging (a third of a microsecond a packet, twice)."""

    def __init__(self, logger: logging.Logger) -> None:
        self.logger = logger

    def log(self, level: int, msg: str, *args: Any) -> None:
        if level >= logging.WARNING:
            self.logger.log(level, msg, *args)


class _Forward(logging.Handler):
    """paho's warnings and errors, to the daemon's log."""

    def __init__(self, receiver: Receiver) -> None:
        super().__init__(logging.WARNING)
        self.receiver = receiver

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):
            level = "error" if record.levelno >= logging.ERROR else "warning"
            self.receiver.log(level, record.getMessage(), logger=record.name)


def _read_settings(inp: int, frames: FrameReader) -> tuple[LinkSettings, list[bytes]]:
    """The settings (the first frame), and any frames that came with them."""
    while True:
        data = os.read(inp, 1 << 16)
        if not data:
            raise FrameError("no settings")
        bodies = frames.bodies(data)
        if bodies:
            return decode_settings(bodies[0]), bodies[1:]


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    # frames go to the stdout we were given; anything else printed goes to stderr
    out = os.dup(sys.stdout.fileno())
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    # room for several batches in the pipe (Linux: 64 KB by default, less than one batch
    # of 500 messages), so forwarding one does not wait for the daemon's next turn
    with contextlib.suppress(AttributeError, OSError):
        fcntl.fcntl(out, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
    inp = sys.stdin.fileno()
    frames = FrameReader()
    settings, early = _read_settings(inp, frames)
    receiver = Receiver(settings, out, inp, frames)
    receiver.early = early
    logger = logging.getLogger("raps.mqtt.in")
    logger.addHandler(_Forward(receiver))
    logger.setLevel(logging.WARNING)
    logger.propagate = False
    # as the daemon does once started (raps.gcpolicy): the default thresholds have the
    # collector walk the long-lived objects again and again, a message's worth of
    # allocations at a time
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 20)
    receiver.run()


if __name__ == "__main__":
    with contextlib.suppress(FrameError, BrokenPipeError, ConnectionResetError):
        main()

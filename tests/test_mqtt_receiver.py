"""The ingest's receiver process (adapters.mqtt.receiver) and its link to the daemon.

What a separate process could break is what these try: the receiver killed mid-stream
(another takes over, nothing lost, nothing applied twice), the daemon killed (the
receiver must not outlive it), a service manager's SIGTERM (the receiver waits for the
daemon's word), acknowledgements for a connection that is gone, and frames cut
anywhere by the pipe.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
import structlog
from hypothesis import given
from hypothesis import strategies as st

from adapters.mqtt.card_simulator import publish_all
from adapters.mqtt.link import ReceiverLink
from adapters.mqtt.link_wire import (
    MAX_FRAME,
    FrameError,
    FrameReader,
    LinkSettings,
    decode_frame,
    frame,
)
from adapters.mqtt.receiver import Receiver
from tests.mqtt_broker import PrivateMosquitto
from tests.test_mqtt_ingest import (
    Daemon,
    card_in,
    eventually,
    g,
    publisher,
    site_id,
    slots,
)

ROOT = Path(__file__).resolve().parent.parent


def settings(port: int, client_id: str = "t-recv") -> LinkSettings:
    return LinkSettings(
        host="127.0.0.1", port=port, client_id=client_id, protocol="3.1.1", username=None,
        password=None, tls=False, ca_file=None, subscriptions=["raps/v1/t/slots/+/events"],
        barrier="raps/v1/t/ingest/barrier", deadletter="raps/v1/t/deadletter", batch_max=500,
        receive_maximum=2000, session_expiry=600, backoff_initial=0.05, backoff_max=0.5,
    )  # fmt: skip


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.asyncio
async def test_a_killed_receiver_is_replaced_and_every_message_is_applied_once(
    private_broker: PrivateMosquitto, tmp_path: Path
) -> None:
    host, port = private_broker.host, private_broker.port
    site = site_id()
    d = await Daemon(tmp_path, site, host, port).start()
    try:
        async with publisher(host, port) as pub:
            await publish_all(pub, [(slots(site), card_in("C1"))])
            await eventually(lambda: d.ing.applied == 1)
            messages = [(slots(site), g(i)) for i in range(4_000)]

            async def paced() -> None:
                for i in range(0, len(messages), 250):
                    await publish_all(pub, messages[i : i + 250], qos=1, in_flight=250)
                    await asyncio.sleep(0.05)

            stream = asyncio.create_task(paced())
            await eventually(lambda: d.ing.applied >= 800, 60, "800 applied")
            first = d.ing.receiver
            assert first is not None and first.proc is not None
            first.proc.kill()  # the receiver dies with batches in flight
            await stream
            await eventually(lambda: d.points("C1") >= 4_000, 60, "4,000 points")
            await asyncio.sleep(0.3)  # nothing more may arrive
        assert d.points("C1") == 4_000  # none lost, none counted twice
        assert d.ing.receiver is not first and d.ing.connects >= 2
        assert d.links[:3] == [True, False, True]  # the link showed the gap
    finally:
        await d.stop()


@pytest.mark.asyncio
async def test_the_receiver_does_not_outlive_a_killed_daemon(
    private_broker: PrivateMosquitto,
) -> None:
    """kill -9 of the daemon closes the receiver's stdin: it ends by itself."""
    program = f"""
import asyncio, sys
sys.path.insert(0, {str(ROOT)!r})
import structlog
from adapters.mqtt.link import ReceiverLink
from tests.test_mqtt_receiver import settings
async def main():
    up = asyncio.Event()
    link = ReceiverLink(settings({private_broker.port}), lambda c: up.set(), lambda c: None,
                        structlog.get_logger())
    await link.start()
    await up.wait()
    print("receiver", link.proc.pid, flush=True)
    await asyncio.sleep(600)
asyncio.run(main())
"""
    daemon = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE, text=True)
    try:
        assert daemon.stdout is not None
        line = daemon.stdout.readline()
        while line and not line.startswith("receiver "):  # its log lines come first
            line = daemon.stdout.readline()
        assert line, "the daemon ended before its receiver was up"
        receiver = int(line.split()[1])
        assert alive(receiver)
        daemon.kill()
        daemon.wait()
        await eventually(lambda: not alive(receiver), 10, "the receiver to end with the daemon")
    finally:
        daemon.kill()
        daemon.wait()


@pytest.mark.asyncio
async def test_the_receiver_waits_for_the_daemons_word_not_a_sigterm(
    private_broker: PrivateMosquitto,
) -> None:
    """A service manager signals every process of the unit; the daemon stops in order."""
    up = asyncio.Event()
    link = ReceiverLink(
        settings(private_broker.port), lambda c: up.set(), lambda c: None,
        structlog.get_logger(),
    )  # fmt: skip
    await link.start()
    try:
        await asyncio.wait_for(up.wait(), 20)
        assert link.proc is not None
        link.proc.send_signal(signal.SIGTERM)
        link.proc.send_signal(signal.SIGINT)
        link.credit(1)  # still listening
        await link.stop(10.0)
        assert link.returncode == 0
    finally:
        await link.close()


def test_acks_for_a_connection_that_is_gone_are_dropped(tmp_path: Path) -> None:
    """Packet ids are per connection: acking an old one could ack another message."""
    r, w = os.pipe()
    out = os.open(os.devnull, os.O_WRONLY)
    try:
        receiver = Receiver(settings(1), out, r, FrameReader())
        receiver.conn, receiver.connected = 2, True
        os.write(w, frame("a", 1, [5], []) + frame("a", 2, [6, 7], []) + frame("c", 3))
        assert receiver._commands()
        queued = [bytes(p["packet"]) for p in receiver.client._out_packet]
        assert queued == [b"\x40\x02\x00\x06\x40\x02\x00\x07"]
        assert receiver.credit == 3
    finally:
        os.close(r)
        os.close(w)
        os.close(out)


@given(
    st.lists(st.lists(st.binary(max_size=40), max_size=4), min_size=1, max_size=8),
    st.lists(st.integers(1, 64), min_size=1, max_size=30),
)
def test_frames_cut_anywhere_by_the_pipe_come_out_whole_and_in_order(
    frames: list[list[bytes]], cuts: list[int]
) -> None:
    stream = b"".join(frame("x", *items) for items in frames)
    reader = FrameReader()
    bodies: list[bytes] = []
    pos = 0
    for cut in cuts * (len(stream) // max(1, sum(cuts)) + 1):
        bodies += reader.bodies(stream[pos : pos + cut])
        pos += cut
        if pos >= len(stream):
            break
    decoded = [msgspec.msgpack.decode(b) for b in bodies]
    assert decoded == [["x", *items] for items in frames]


def test_a_broken_frame_is_refused_by_name_never_taken_for_data() -> None:
    """What comes over the pipe is the other process's word: a frame that is not one ends
    the link (the ingest then starts another receiver), it is never half-read."""
    with pytest.raises(FrameError, match="a frame of"):
        FrameReader().bodies((MAX_FRAME + 1).to_bytes(4, "big") + b"x")
    for body in (b"\xc1", msgspec.msgpack.encode({"m": 1}), msgspec.msgpack.encode([])):
        with pytest.raises(FrameError):
            decode_frame(body)
    reader = FrameReader()
    assert reader.bodies(frame("c", 1)[:-1]) == [] and reader.partial  # cut: not complete


def test_an_unknown_command_ends_the_receiver(tmp_path: Path) -> None:
    r, w = os.pipe()
    out = os.open(os.devnull, os.O_WRONLY)
    try:
        receiver = Receiver(settings(1), out, r, FrameReader())
        os.write(w, frame("launch", 1))
        with pytest.raises(FrameError, match="unknown frame"):
            receiver._commands()
    finally:
        os.close(r)
        os.close(w)
        os.close(out)

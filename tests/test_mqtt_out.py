"""Outbound MQTT: the one publishing loop the daemon and the SAS agent share.

It runs against a real Mosquitto (the machine's, or one the test starts).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Iterator

import aiomqtt
import pytest

from adapters.mqtt.publish import Outbound, publish_queue
from tests.mqtt_broker import shared_or_private

logging.getLogger("mqtt").setLevel(logging.ERROR)


@pytest.fixture(scope="module")
def broker() -> Iterator[tuple[str, int]]:
    with shared_or_private() as where:
        yield where


class _Log:
    def __init__(self) -> None:
        self.warnings: list[str] = []

    def warning(self, message: str, **_context: object) -> None:
        self.warnings.append(message)


@pytest.mark.asyncio
async def test_queued_messages_reach_the_broker_in_order_with_retain(
    broker: tuple[str, int],
) -> None:
    host, port = broker
    prefix = f"test/out/{uuid.uuid4().hex}"
    queue: asyncio.Queue[Outbound] = asyncio.Queue()
    for i in range(3):
        queue.put_nowait((f"{prefix}/events", f"e{i}".encode(), False))
    queue.put_nowait((f"{prefix}/head", b"head", True))
    links: list[bool] = []
    log = _Log()
    task: asyncio.Task[None] | None = None
    try:
        async with aiomqtt.Client(host, port) as sub:
            # subscribe before anything is published: a non-retained message
            # sent earlier reaches no one
            await sub.subscribe(f"{prefix}/#", qos=1)
            task = asyncio.create_task(
                publish_queue(lambda: aiomqtt.Client(host, port), queue, log, links.append)
            )
            got: list[tuple[str, bytes, bool]] = []
            async with asyncio.timeout(10):
                async for m in sub.messages:
                    got.append((str(m.topic), bytes(m.payload), m.retain))  # type: ignore[arg-type]
                    if str(m.topic).endswith("/head"):
                        break
        assert [b for t, b, _ in got if t.endswith("/events")] == [b"e0", b"e1", b"e2"]
        # the retained head is there for a late subscriber too
        async with aiomqtt.Client(host, port) as late:
            await late.subscribe(f"{prefix}/head", qos=1)
            async with asyncio.timeout(10):
                m = await anext(aiter(late.messages))
            assert bytes(m.payload) == b"head" and m.retain  # type: ignore[arg-type]
        assert links == [True] and log.warnings == []
    finally:
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        async with aiomqtt.Client(host, port) as c:  # clear the retained message
            await c.publish(f"{prefix}/head", b"", retain=True)


@pytest.mark.asyncio
async def test_an_unreachable_broker_is_retried_and_reported() -> None:
    queue: asyncio.Queue[Outbound] = asyncio.Queue()
    queue.put_nowait(("t", b"x", False))
    links: list[bool] = []
    log = _Log()
    # nothing listens on port 1 of localhost: the connection is refused at once
    task = asyncio.create_task(
        publish_queue(lambda: aiomqtt.Client("127.0.0.1", 1), queue, log, links.append)
    )
    try:
        async with asyncio.timeout(10):
            while not log.warnings:
                await asyncio.sleep(0.01)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert links[0] is False and log.warnings[0] == "broker unreachable; retrying"
    assert queue.qsize() == 1  # nothing was taken off the queue

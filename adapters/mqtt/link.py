"""The ingest's end of its receiver process (adapters.mqtt.receiver).

Starts the receiver with the broker settings, hands the ingest the batches it forwards,
and carries the ingest's credit, acknowledgements, dead letters and stop to it.  Frames
from the receiver are read as they come (a confirmation of dead letters must never wait
behind a batch the ingest has not taken yet); the batches wait here, no more of them than
the credit the ingest gave.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from adapters.mqtt.link_wire import (
    FrameError,
    FrameReader,
    LinkSettings,
    Message,
    decode_frame,
    frame,
    settings_frame,
)

READ_SIZE = 1 << 20  # what one read of the receiver's pipe may take (the pipe's size)
# the directory that holds the `adapters` package: the receiver imports it from there
_PACKAGES = str(Path(__file__).resolve().parent.parent.parent)


class ReceiverGone(Exception):
    """The receiver process ended (or broke its pipe): the ingest starts another."""


class ReceiverLink:
    """One receiver process; see module docstring.

    on_up(conn)   -- subscribed on connection number `conn`
    on_down(conn) -- that connection is lost (the receiver reconnects by itself)
    log           -- the daemon's logger: the receiver's log lines are written there
    """

    def __init__(
        self,
        settings: LinkSettings,
        on_up: Callable[[int], None],
        on_down: Callable[[int], None],
        log: Any,
    ) -> None:
        self.settings = settings
        self.on_up, self.on_down, self.log = on_up, on_down, log
        self.proc: asyncio.subprocess.Process | None = None
        self._batches: deque[tuple[int, list[Message]]] = deque()
        self._arrived = asyncio.Event()
        self._published: dict[int, asyncio.Future[bool]] = {}
        self._token = 0
        self._reading: asyncio.Task[None] | None = None
        self.ended: BaseException | None = None  # why the receiver's stream ended

    async def start(self) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGES, env.get("PYTHONPATH")) if p)
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "adapters.mqtt.receiver",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            env=env, limit=2**20,
        )  # fmt: skip
        self._write(settings_frame(self.settings))
        self._reading = asyncio.create_task(self._read())

    def _write(self, data: bytes) -> None:
        proc = self.proc
        if proc is None or proc.stdin is None or proc.stdin.is_closing():
            raise ReceiverGone("the receiver's input is closed")
        proc.stdin.write(data)

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        reader = self.proc.stdout
        frames = FrameReader()
        try:
            while data := await reader.read(READ_SIZE):
                for body in frames.bodies(data):
                    self._dispatch(decode_frame(body))
            if frames.partial:
                raise FrameError("the stream ended inside a frame")
            self.ended = ReceiverGone("the receiver process ended")
        except Exception as e:  # a broken frame: the receiver is not to be trusted
            self.ended = e
        finally:
            for done in self._published.values():
                if not done.done():
                    done.set_result(False)
            self._published.clear()
            self._arrived.set()

    def _dispatch(self, items: list[Any]) -> None:
        """One frame from the receiver (adapters.mqtt.link_wire)."""
        kind = items[0]
        if kind == "m":
            self._batches.append((items[1], items[2]))
            self._arrived.set()
        elif kind == "p":
            done = self._published.pop(items[1], None)
            if done is not None and not done.done():
                done.set_result(bool(items[2]))
        elif kind == "up":
            self.on_up(items[1])
        elif kind == "down":
            self.on_down(items[1])
        elif kind == "log":
            level, event, fields = items[1], items[2], items[3]
            write = getattr(self.log, level, self.log.warning)
            write(event, **(fields if isinstance(fields, dict) else {}))

    async def batch(self) -> tuple[int, list[Message]]:
        """The next batch the receiver forwarded, and its connection number."""
        while not self._batches:
            if self.ended is not None:
                raise ReceiverGone(str(self.ended)) from self.ended
            self._arrived.clear()
            await self._arrived.wait()
        return self._batches.popleft()

    def credit(self, batches: int) -> None:
        self._write(frame("c", batches))

    def ack(self, conn: int, messages: list[Message]) -> None:
        qos1 = [m[2] for m in messages if m[3] == 1]
        qos2 = [m[2] for m in messages if m[3] == 2]
        if qos1 or qos2:
            self._write(frame("a", conn, qos1, qos2))

    async def publish(self, conn: int, bodies: list[bytes]) -> bool:
        """Publish dead letters on connection `conn`; True once the broker has them all."""
        if self.ended is not None:
            return False
        self._token += 1
        done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._published[self._token] = done
        self._write(frame("p", conn, self._token, bodies))
        return await done

    async def stop(self, timeout: float) -> None:
        """Ask the receiver to make sure the broker read the acks, and to end."""
        proc = self.proc
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(Exception):
            self._write(frame("stop"))
            assert proc.stdin is not None
            await proc.stdin.drain()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), timeout)

    async def close(self) -> None:
        """End the process whatever state it is in (after `stop`, it has ended)."""
        proc = self.proc
        if proc is not None:
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
            if proc.stdin is not None:
                proc.stdin.close()
            await proc.wait()
        if self._reading is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reading

    @property
    def returncode(self) -> int | None:
        return None if self.proc is None else self.proc.returncode

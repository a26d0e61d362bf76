"""A TCP proxy for the browser tests that can stall: every connection held open while
nothing passes (a stalled Wi-Fi link: no error, no data), and that can follow a
restarted daemon to its new port."""

from __future__ import annotations

import asyncio
import re
import threading


class Relay:
    """A TCP proxy on its own asyncio loop (a thread).  `stall()` holds every open and
    new connection: bytes are read but nothing is passed on, in either direction, until
    `flow()`.  `retarget()` points new connections at a restarted daemon.  It keeps what
    the browser sent, to read the command ids of the POSTs that went out."""

    def __init__(self, upstream: str) -> None:
        self.upstream = self._split(upstream)
        self.loop = asyncio.new_event_loop()
        self.flowing: asyncio.Event | None = None
        self.stopping: asyncio.Event | None = None
        self.sent: list[bytearray] = []
        self.accepted = 0
        self.lock = threading.Lock()
        ready = threading.Event()
        self.port = 0

        async def main() -> None:
            self.flowing = asyncio.Event()
            self.flowing.set()
            self.stopping = asyncio.Event()
            server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
            self.port = server.sockets[0].getsockname()[1]
            ready.set()
            await self.stopping.wait()
            server.close()

        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(main(),),
                                       daemon=True)  # fmt: skip
        self.thread.start()
        ready.wait(10)
        self.url = f"http://127.0.0.1:{self.port}"

    @staticmethod
    def _split(url: str) -> tuple[str, int]:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        return host, int(port)

    async def _serve(self, cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        with self.lock:
            self.accepted += 1
            log = bytearray()
            self.sent.append(log)
        try:
            ur, uw = await asyncio.open_connection(*self.upstream)
        except OSError:
            cw.close()
            return
        await asyncio.gather(self._pump(cr, uw, log), self._pump(ur, cw, None))

    async def _pump(
        self, r: asyncio.StreamReader, w: asyncio.StreamWriter, log: bytearray | None
    ) -> None:
        assert self.flowing is not None
        try:
            while data := await r.read(65536):
                if log is not None:
                    with self.lock:
                        log += data
                await self.flowing.wait()  # a stall: held here, the socket stays open
                w.write(data)
                await w.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            await self.flowing.wait()
            w.close()

    def stall(self) -> None:
        assert self.flowing is not None
        self.loop.call_soon_threadsafe(self.flowing.clear)

    def flow(self) -> None:
        assert self.flowing is not None
        self.loop.call_soon_threadsafe(self.flowing.set)

    def retarget(self, upstream: str) -> None:
        self.upstream = self._split(upstream)

    def requests(self, line: str) -> int:
        """How many requests starting with `line` (e.g. "GET /api/stream") the browser
        sent, on new connections or kept-alive ones alike."""
        with self.lock:
            raw = b"".join(bytes(x) for x in self.sent).decode("latin-1")
        return raw.count(line + " ") + raw.count(line + "?")

    def command_ids(self, path_end: str) -> list[str]:
        """The command id of every POST to a path ending in `path_end` the browser sent
        (first attempts and retries alike)."""
        with self.lock:
            raw = b"".join(bytes(x) for x in self.sent).decode("latin-1")
        out = []
        for part in raw.split("POST ")[1:]:
            path = part.split(" ", 1)[0]
            m = re.search(r'"command_id":"([^"]+)"', part)
            if path.endswith(path_end) and m:
                out.append(m.group(1))
        return out

    def close(self) -> None:
        assert self.stopping is not None
        self.flow()
        self.loop.call_soon_threadsafe(self.stopping.set)
        self.thread.join(10)

"""Live updates for the screens: the id of every session whose journal just grew.

Each screen's event stream holds one bounded queue; a stalled screen misses ids rather
than holding back the commands that produce them (it reloads the session on the next).
"""

from __future__ import annotations

import asyncio

QUEUE_SIZE = 1000


class Listeners:
    def __init__(self) -> None:
        self._queues: set[asyncio.Queue[str]] = set()

    def subscribe(self) -> asyncio.Queue[str]:
        """A queue that receives the id of every session whose journal just grew."""
        q: asyncio.Queue[str] = asyncio.Queue(maxsize=QUEUE_SIZE)
        self._queues.add(q)
        return q

    def unsubscribe(self, q: asyncio.Queue[str]) -> None:
        self._queues.discard(q)

    def notify(self, session_id: str) -> None:
        for q in self._queues:
            if not q.full():  # a stalled screen must not hold the service back
                q.put_nowait(session_id)

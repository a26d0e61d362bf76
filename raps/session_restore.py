"""The service's RAPS sessions as a start restores them (raps.session_loader): those that
are not closed before it is ready, and the closed ones after it, closed from the start
(`deferred`), restored and checked in the background (newest close first, a chunk at a
time, the event loop served between chunks), or first when a route or a command names
one (`ensure`).  A session whose records fail the checks is refused (`refuse`): every
command on it is answered with why.  Each restored closed session gives its winners'
bonus tickets (once), as every session did at start before
(raps.tickets.desk.reconcile_awards)."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Awaitable, Callable, Iterable
from functools import partial
from itertools import chain
from typing import Any

from raps.metrics import Metrics
from raps.session_loader import ClosedSession, SessionLoader
from raps.storage_health import JournalUnavailable
from raps.store.journal import JournalStore, JournalTampered
from raps.tickets.desk import TicketDesk
from selector.schedule import SessionPlan
from selector.session import DrawSession, SessionError

RETRY_SECONDS = 5.0  # a background restore the database failed, tried again


class SessionRestore:
    def __init__(
        self,
        loader: SessionLoader,
        journal: JournalStore,
        sessions: dict[str, DrawSession],
        deferred: dict[str, ClosedSession],
        tickets: TicketDesk,
        metrics: Metrics,
        notify: Callable[[str], None],
        log: Any,
    ) -> None:
        self.loader, self.journal, self.sessions, self.tickets = loader, journal, sessions, tickets
        self.metrics, self.notify, self.log = metrics, notify, log
        self.deferred = deferred  # closed, not restored yet (the schedule's too)
        self.refused: dict[str, str] = {}  # sessions kept out at restore, and why
        self.task: asyncio.Task[None] | None = None
        # awaited before the pass, between its partitions and between chunks (a test
        # holds the restore there)
        self.pace: Callable[[], Awaitable[None]] = partial(asyncio.sleep, 0)

    async def load_start(self, plans: Iterable[SessionPlan]) -> None:
        """Every scheduled session that is not closed from its journal (refused when the
        journal does not vouch for it); the closed ones deferred."""
        sessions, refused, deferred = await self.loader.load_start(plans)
        self.sessions.update(sessions)
        self.deferred.update(deferred)
        for sid, reason in refused.items():
            self.refuse(sid, reason)
        self.count()

    def refuse(self, session_id: str, reason: str) -> None:
        self.sessions.pop(session_id, None)
        self.deferred.pop(session_id, None)
        self.refused[session_id] = reason
        self.metrics.refused("sessions", len(self.refused))
        self.log.error("session refused", session=session_id, reason=reason)

    def count(self) -> None:
        """raps_sessions: the restored sessions, and the closed ones deferred."""
        self.metrics.count_sessions(chain(self.sessions.values(), self.deferred.values()))

    def begin(self) -> None:
        """The background restore, if anything was deferred (the start's last step)."""
        if self.deferred:
            self.task = asyncio.create_task(self._run(), name="restore-closed")

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)

    async def _run(self) -> None:
        """Every deferred session, restored or refused; the database failing, tried
        again until it works (a refused journal stops it: nothing runs on one)."""
        while self.deferred and self.journal.refused is None:
            ids = sorted(self.deferred, key=lambda sid: -self.deferred[sid].closed_seq)
            try:
                await self.loader.restore_closed(ids, self.restored, self.pace)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                self.log.error("closed sessions' restore failed; trying again",
                               error=type(e).__name__, left=len(self.deferred))  # fmt: skip
                await asyncio.sleep(RETRY_SECONDS)
                continue
            self.deferred.clear()  # each was installed or refused (or a command loaded it)
        self.count()
        if gc.get_freeze_count():  # out of the collector's sight, as the start's (gcpolicy)
            gc.freeze()
        self.log.info("closed sessions restored", sessions=len(self.sessions),
                      refused=len(self.refused), left=len(self.deferred))  # fmt: skip
        try:  # the winners' bonus credits their awards left unjournaled, now, not at a flush
            await self.tickets.sync()
        except Exception as e:  # the next flush journals them
            self.log.warning("ticket credits after the restore wait for the next flush",
                             error=type(e).__name__)  # fmt: skip

    def restored(self, session_id: str, s: DrawSession | None, reason: str | None) -> None:
        """One deferred session restored (or refused, with why), unless a command or a
        view got to it first."""
        if self.deferred.pop(session_id, None) is None:
            return
        if s is None:
            self.refuse(session_id, reason or "refused")
            return
        self.sessions[session_id] = s
        self.tickets.raps_awards(s.records)  # as reconcile_awards at start
        self.notify(session_id)  # the screens that were told of it, as at a close

    async def ensure(self, session_id: str) -> None:
        """A deferred session restored now, before a command or a view uses it."""
        if session_id not in self.deferred:
            return
        s: DrawSession | None = None
        reason: str | None = None
        try:
            s = await self.loader.load_closed(session_id)
        except (JournalTampered, SessionError) as e:
            reason = str(e)
        except Exception as e:
            raise JournalUnavailable("the journal cannot be read; try again shortly") from e
        self.restored(session_id, s, reason)
        self.count()

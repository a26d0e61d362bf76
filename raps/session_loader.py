"""RAPS sessions read back from the journal: at start, and after a failed commit.

A session is its journal records replayed onto its scheduled rules, with its seed
unsealed and, for a draw whose winner was never committed, the requested pool loaded
again by its digest.  At start every session is also checked before it runs: one whose
rows are filed under another session, whose entries the chain does not vouch for, or
whose records break the session's state machine is refused, and the reason kept for
every command that names it (an edit made outside the daemon must not reopen a closed
session, nor hide its close).
"""

from __future__ import annotations

from collections.abc import Iterable

from raps.schedule_desk import ScheduleDesk
from raps.seal import SeedSealer
from raps.store.journal import JournalStore, JournalTampered
from selector.records import Record
from selector.schedule import SessionPlan
from selector.session import DrawSession, SessionError
from selector.verify import verify_lifecycle


class SessionLoader:
    def __init__(self, journal: JournalStore, planner: ScheduleDesk, sealer: SeedSealer) -> None:
        self.journal, self.planner, self.sealer = journal, planner, sealer

    async def load(self, session_id: str) -> DrawSession:
        """A scheduled session as its journal records leave it (not opened if none)."""
        entries = await self.journal.session_entries(session_id)
        records = [Record.from_dict(e.record) for e in entries]
        seed = await self._unseal(session_id) if records else None
        s = self.planner.scheduled(self.planner.plan(session_id), records, seed)
        req = s.open_request()
        if req is not None:  # a draw whose winner was never committed: its pool, back
            pool = (await self.journal.pools([req[2]])).get(req[2])
            if pool is not None:
                s.load_request_pool(pool)
        return s

    async def load_all(
        self, plans: Iterable[SessionPlan]
    ) -> tuple[dict[str, DrawSession], dict[str, str]]:
        """The sessions that may run, and those refused with why."""
        plans = list(plans)
        misfiled = await self.journal.misfiled(p.session_id for p in plans)
        sessions: dict[str, DrawSession] = {}
        refused: dict[str, str] = {}
        for plan in plans:
            sid = plan.session_id
            reason = misfiled.get(sid)
            if reason is None:
                try:
                    s = await self.load(sid)
                    broken = verify_lifecycle(s.records)
                    reason = f"its records fail verification: {broken[0]}" if broken else None
                except (JournalTampered, SessionError) as e:
                    reason = str(e)
            if reason is None:
                sessions[sid] = s
            else:
                refused[sid] = reason
        return sessions, refused

    async def _unseal(self, session_id: str) -> bytes | None:
        sealed = await self.journal.sealed_seed(session_id)
        if sealed is None:
            return None
        return self.sealer.unseal(session_id, *sealed)

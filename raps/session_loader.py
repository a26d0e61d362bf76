"""RAPS sessions read back from the journal: at start, and after a failed commit.

A session is its journal records replayed onto its scheduled rules, with its seed
unsealed and, for a draw whose winner was never committed, the requested pool loaded
again by its digest.  Before a session runs again it is checked (`check`): one whose
rows are filed under another session, whose entries the chain does not vouch for (each
entry's own hash, and every link over the session's range of the journal, so a row
deleted in the middle shows), whose records break the session's state machine, or
whose picks do not recompute from its unsealed seed (an open session: verify's own
checks, selector.verify_open) is refused, and the reason kept for every command that
names it (an edit made outside the daemon must not reopen a closed session, hide its
close, or give a pick back to its winner).  After a start each pool an open or
scheduled session draws from is stored in full in the background, so its first pick
writes a delta; a draw whose winner was never committed has the journal entry the witness
signs noted.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable
from typing import Any

from raps.chain import Entry
from raps.schedule_desk import ScheduleDesk
from raps.seal import SeedSealer
from raps.store.journal import JournalStore, JournalTampered, with_pools
from raps.store.journal_read import read_sessions
from selector.floor import Floor
from selector.lifecycle import verify_lifecycle
from selector.records import Record
from selector.schedule import SessionPlan
from selector.session import DrawSession, SessionError, SessionState
from selector.verify_open import verify_open_session


class SessionLoader:
    def __init__(self, journal: JournalStore, planner: ScheduleDesk, sealer: SeedSealer) -> None:
        self.journal, self.planner, self.sealer = journal, planner, sealer

    async def load(self, session_id: str) -> DrawSession:
        """A scheduled session as its journal records leave it (not opened if none)."""
        return (await self._load(session_id))[0]

    async def load_checked(self, session_id: str) -> DrawSession:
        """`load`, refused (SessionRefused, with why) when `check` finds a problem."""
        s, entries, seed = await self._load(session_id)
        reason = await self.check(s, entries, seed)
        if reason is not None:
            raise SessionRefused(reason)
        return s

    async def _load(self, session_id: str) -> tuple[DrawSession, list[Entry], bytes | None]:
        entries = await self.journal.session_entries(session_id)
        records = [e.record for e in entries]
        seed = await self._unseal(session_id) if records else None
        return await self._build(session_id, entries, records, seed), entries, seed

    async def _build(
        self, session_id: str, entries: list[Entry], records: list[dict[str, Any]],
        seed: bytes | None,
    ) -> DrawSession:  # fmt: skip
        s = self.planner.scheduled(
            self.planner.plan(session_id), [Record.from_dict(r) for r in records], seed
        )
        req = s.open_request()
        if req is not None:  # a draw whose winner was never committed: its pool, back
            pool = (await self.journal.pools([req[2]])).get(req[2])
            if pool is not None:
                s.load_request_pool(pool)
            asked = next(
                e for e, r in zip(reversed(entries), reversed(records), strict=True)
                if r.get("type") == "pick.requested"
            )  # fmt: skip
            s.note_request_entry(asked.seq, asked.hash)  # the entry the witness signs
        return s

    async def check(
        self, s: DrawSession, entries: list[Entry], seed: bytes | None, linked: bool = False,
        records: list[dict[str, Any]] | None = None,
    ) -> str | None:  # fmt: skip
        """Why a session read back may not run, or None. A closed session has its steps
        and links checked (its picks are `raps verify`'s: nothing more can be drawn).
        linked: the links over the session's range are already vouched for; records: the
        entries' records as read (what the session was restored from)."""
        if entries and not linked:  # the storage first: a row gone, then what it meant
            gap = await self.journal.chain_break(entries[0].seq, entries[-1].seq)
            if gap is not None:
                return f"its range of the journal is broken: {gap}"
        broken = verify_lifecycle(s.records if records is None else records)
        if broken:
            return f"its records fail verification: {broken[0]}"
        if s.state == SessionState.OPEN and seed is not None and s.picks:
            records = await with_pools(self.journal, entries)
            bad = verify_open_session(records, seed)
            if bad:
                return f"its picks do not recompute from its seed: {bad[0]}"
        return None

    async def load_all(
        self, plans: Iterable[SessionPlan]
    ) -> tuple[dict[str, DrawSession], dict[str, str]]:
        """The sessions that may run, and those refused with why.

        One pass over the journal reads them all (raps.store.journal_read) and one query
        their sealed seeds; a session with a row that pass cannot vouch for is read again
        entry by entry, which says why it is refused."""
        # what is built here lives as long as the daemon: the cyclic collector walking it
        # again and again while it is built cost a third of the restore's CPU
        collecting = gc.isenabled()
        gc.disable()
        try:
            return await self._load_all([p.session_id for p in plans])
        finally:
            if collecting:
                gc.enable()

    async def _load_all(self, ids: list[str]) -> tuple[dict[str, DrawSession], dict[str, str]]:
        read = await read_sessions(self.journal.engine, ids)
        sealed = await self.journal.sealed_seeds()
        sessions: dict[str, DrawSession] = {}
        refused: dict[str, str] = {}
        for sid in ids:
            reason: str | None = None
            try:
                if sid in read.suspect:
                    reason = (await self.journal.misfiled([sid])).get(sid)
                    if reason is None:
                        sessions[sid] = await self.load_checked(sid)
                else:
                    entries, records = read.entries[sid], read.records[sid]
                    box = sealed.get(sid) if records else None
                    seed = None if box is None else self.sealer.unseal(sid, *box)
                    s = await self._build(sid, entries, records, seed)
                    linked = not entries or read.links_ok(entries[0].seq, entries[-1].seq)
                    reason = await self.check(s, entries, seed, linked, records)
                    if reason is None:
                        sessions[sid] = s
            except (JournalTampered, SessionError) as e:
                reason = str(e)
            if reason is not None:
                refused[sid] = reason
        return sessions, refused

    def store_pools(self, floor: Floor, sessions: Iterable[DrawSession]) -> None:
        """Each pool a restored session may draw from stored in full in the background, so
        the first pick after a start writes only what changed since (docs/journal.md)."""
        live = {s.promotion_id for s in sessions if s.state != SessionState.CLOSED}
        for promo in sorted(live):
            for kind in floor.promotion(promo).pool_kinds:
                cards, digest = floor.pool_checkpoint(promo, kind)
                self.journal.store_base(digest, cards)

    async def _unseal(self, session_id: str) -> bytes | None:
        sealed = await self.journal.sealed_seed(session_id)
        if sealed is None:
            return None
        return self.sealer.unseal(session_id, *sealed)


class SessionRefused(SessionError):
    """A session whose journal records fail the checks it must pass before it runs."""

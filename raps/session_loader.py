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

A start restores only the sessions that are not closed (`load_start`): which ones are
closed it learns from the `session.closed` rows' columns (an index, no entry read), and
those it restores after the daemon is ready (`restore_closed`, in chunks that yield to the
event loop; `load_closed` for one asked for first), with the same checks.  The columns
are outside the chain, so they only decide when a session is read: one they call closed
whose records do not close it is refused, and one whose close they hide is read at start
like an open one (a `session.closed` row deleted leaves a gap between its last entry and
the head, which refuses it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from raps.chain import Entry
from raps.gcpolicy import collector_paused
from raps.schedule_desk import ScheduleDesk
from raps.seal import SeedSealer
from raps.store.journal import JournalStore, JournalTampered, with_pools
from raps.store.journal_read import SessionsRead, read_sessions
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
        entries, records = await self.journal.session_records(session_id)
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

    async def load_start(
        self, plans: Iterable[SessionPlan]
    ) -> tuple[dict[str, DrawSession], dict[str, str], dict[str, ClosedSession]]:
        """What a start restores before it is ready: the sessions that may run and those
        refused (as `load_all`), of the sessions not closed only, and the closed ones, by
        the `session.closed` rows' columns, to restore later (`restore_closed`).

        No pass over the journal: one indexed query finds the closed sessions, one batch
        of indexed lookups those with no entry at all (not opened: their plan as it is),
        and each of the others (open, or with entries but no close) is read and checked
        entry by entry, as after a failed commit."""
        by_id = {p.session_id: p for p in plans}
        closed_rows = await self.journal.closed_sessions()
        deferred = {
            sid: ClosedSession(sid, p.promotion_id, p.rehearsal, closed_rows[sid])
            for sid, p in by_id.items()
            if sid in closed_rows
        }
        rest = [sid for sid in by_id if sid not in deferred]
        present = await self.journal.filed(rest)
        sessions: dict[str, DrawSession] = {}
        refused: dict[str, str] = {}
        with collector_paused():
            for sid in rest:
                if sid not in present:  # never opened, nothing filed: the plan as it is
                    sessions[sid] = self.planner.scheduled(by_id[sid])
                    continue
                try:
                    sessions[sid] = await self.load_one(sid, to_head=True)
                except (JournalTampered, SessionError) as e:
                    refused[sid] = str(e)
        return sessions, refused, deferred

    async def load_one(self, session_id: str, to_head: bool = False) -> DrawSession:
        """One session read and checked entry by entry (`load_checked`), after the rows
        of other sessions that name it are looked for; SessionRefused with why.

        to_head: one not closed has the chain checked from its last entry to the head as
        well: a row missing there may be its own close (the `session.closed` row deleted,
        which would open it again), so it is refused."""
        reason = (await self.journal.misfiled([session_id])).get(session_id)
        if reason is not None:
            raise SessionRefused(reason)
        s, entries, seed = await self._load(session_id)
        reason = await self.check(s, entries, seed)
        head = self.journal.head
        last = entries[-1].seq if entries else None
        if reason is None and to_head and last and head and head.seq > last:
            gap = (
                None
                if s.state == SessionState.CLOSED
                else await self.journal.chain_break(last + 1, head.seq)
            )
            if gap is not None:
                reason = f"the journal after its last entry is broken: {gap}"
        if reason is not None:
            raise SessionRefused(reason)
        return s

    async def load_closed(self, session_id: str) -> DrawSession:
        """A session the columns call closed, read and checked now (`load_one`): refused
        too when its records do not close it (the column was edited)."""
        return _closed(await self.load_one(session_id))

    async def restore_closed(
        self,
        ids: Iterable[str],
        done: Callable[[str, DrawSession | None, str | None], None],
        pace: Callable[[], Awaitable[None]],
        chunk: int = 50,
    ) -> None:
        """The closed sessions restored after the start, as `load_all` restores sessions:
        one pass over the journal for them all (its rows read a partition at a time),
        then built and checked `chunk` sessions at a time; `done(session_id, session,
        None)` or `done(session_id, None, why)` for each, and `pace()` awaited before the
        pass, between its partitions and between chunks (it yields to the event loop)."""
        wanted = list(ids)
        if not wanted:
            return
        await pace()  # first of all: the start it follows has the loop to itself
        read = await read_sessions(self.journal.engine, wanted, partition=2_000, pace=pace)
        sealed = await self.journal.sealed_seeds()
        for i in range(0, len(wanted), chunk):
            await pace()
            with collector_paused():
                for sid in wanted[i : i + chunk]:
                    try:
                        s = _closed(await self._from_read(sid, read, sealed))
                    except (JournalTampered, SessionError) as e:
                        done(sid, None, str(e))
                    else:
                        done(sid, s, None)
                    read.entries.pop(sid, None)  # what was read goes as it is used
                    read.records.pop(sid, None)

    async def _from_read(
        self, sid: str, read: SessionsRead, sealed: dict[str, tuple[bytes, bytes]]
    ) -> DrawSession:
        """One session from what a pass read, checked; SessionRefused with why."""
        if sid in read.suspect:
            return await self.load_one(sid)
        entries, records = read.entries[sid], read.records[sid]
        box = sealed.get(sid) if records else None
        seed = None if box is None else self.sealer.unseal(sid, *box)
        s = await self._build(sid, entries, records, seed)
        linked = not entries or read.links_ok(entries[0].seq, entries[-1].seq)
        reason = await self.check(s, entries, seed, linked, records)
        if reason is not None:
            raise SessionRefused(reason)
        return s

    async def load_all(
        self, plans: Iterable[SessionPlan]
    ) -> tuple[dict[str, DrawSession], dict[str, str]]:
        """The sessions that may run, and those refused with why.

        One pass over the journal reads them all (raps.store.journal_read) and one query
        their sealed seeds; a session with a row that pass cannot vouch for is read again
        entry by entry, which says why it is refused."""
        with collector_paused():
            return await self._load_all([p.session_id for p in plans])

    async def _load_all(self, ids: list[str]) -> tuple[dict[str, DrawSession], dict[str, str]]:
        read = await read_sessions(self.journal.engine, ids)
        sealed = await self.journal.sealed_seeds()
        sessions: dict[str, DrawSession] = {}
        refused: dict[str, str] = {}
        for sid in ids:
            try:
                sessions[sid] = await self._from_read(sid, read, sealed)
            except (JournalTampered, SessionError) as e:
                refused[sid] = str(e)
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


@dataclass(frozen=True, slots=True)
class ClosedSession:
    """A session the journal's columns call closed, not restored yet: what the service
    knows of it meanwhile (the gauges count it, the schedule holds it as started)."""

    session_id: str
    promotion_id: str
    rehearsal: bool  # the plan's until restored (its session.opened record's then)
    closed_seq: int  # the `session.closed` row's seq, as its column says
    state: SessionState = SessionState.CLOSED


def _closed(s: DrawSession) -> DrawSession:
    if s.state != SessionState.CLOSED:
        raise SessionRefused(
            "the journal's columns file a session.closed row under it, but its records "
            f"leave it {s.state.value}: a column was edited"
        )
    return s

"""The stage's streams read back from the journal and checked before they run again.

What raps.session_loader does for RAPS sessions, for the ticket draws (`draw:<id>`),
their proxies (`proxies:<id>`), the prize letters (`prizes`) and the stage games
(`stage:*`, the stage ledger, the car spots): at start and after a failed commit a stream
is refused, and the reason kept for every command that needs it, when

- a row is filed under it whose chained record names another stream, or a row of its own
  is filed under another id (`JournalStore.misfiled`: the `session_id` column is outside
  the hash chain, so an edited column could hide a draw's close and reopen it);
- an entry's own hash fails, or a link over its range of the journal is broken (a row
  deleted in the middle);
- (a draw) its records cannot be restored (a bin or a winner the journal disagrees
  with, a seed that does not match its commitment), or they fail `raps verify`'s checks
  (selector.tickets.draw_verify_open: the draw's steps, and every ticket recomputed from
  its unsealed or revealed seed).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from raps.chain import Entry
from raps.seal import SeedSealer
from raps.store.journal import JournalStore, JournalTampered
from selector.records import Record
from selector.session import SessionError
from selector.tickets.draw_session import TicketDrawSession
from selector.tickets.draw_verify_open import verify_restored_draw

Build = Callable[[list[Record], "bytes | None"], TicketDrawSession]


@dataclass
class Stream:
    """A stream as read back: its entries, records and why it may not run (None: it may)."""

    entries: list[Entry] = field(default_factory=list)
    refused: str | None = None

    @property
    def records(self) -> list[Record]:
        return [Record.from_dict(e.record) for e in self.entries]


class StageLoader:
    def __init__(self, journal: JournalStore, sealer: SeedSealer) -> None:
        self.journal, self.sealer = journal, sealer

    async def misfiled(self, streams: Iterable[str]) -> dict[str, str]:
        """Of these streams, those with a row filed under the wrong id, and why."""
        return await self.journal.misfiled(sorted(set(streams)))

    async def read(self, stream: str, misfiled: str | None = None) -> Stream:
        """A stream's entries, refused when they are misfiled or the chain does not vouch
        for them (their hashes, every link over their range)."""
        if misfiled is not None:
            return Stream(refused=misfiled)
        try:
            entries = await self.journal.session_entries(stream)
        except JournalTampered as e:
            return Stream(refused=str(e))
        if entries:
            gap = await self.journal.chain_break(entries[0].seq, entries[-1].seq)
            if gap is not None:
                return Stream(entries, f"its range of the journal is broken: {gap}")
        return Stream(entries)

    async def draw(
        self, stream: str, build: Build, misfiled: str | None = None
    ) -> tuple[TicketDrawSession | None, Stream]:
        """A draw restored (None if its records cannot be) and its stream, refused with
        why when its storage, its restore or verify's checks fail."""
        read = await self.read(stream, misfiled)
        if read.refused is not None:
            return None, read
        records = read.records
        seed = None
        if records:
            sealed = await self.journal.sealed_seed(stream)
            if sealed is not None:
                seed = self.sealer.unseal(stream, *sealed)
        try:
            s = build(records, seed)
        except (SessionError, KeyError, TypeError, ValueError) as e:
            read.refused = f"its records cannot be restored: {e}"
            return None, read
        bad = verify_restored_draw(records, seed)
        if bad:
            read.refused = f"its records fail verification: {bad[0]}"
        return s, read

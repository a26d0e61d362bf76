"""The stage desk: ticket draws run on stage, their proxies and their prizes, made durable.

Each configured `[[ticket_draws]]` entry is one draw session (`selector.tickets`
TicketDrawSession) journaled in its own stream `draw:<draw id>`; proxy nominations go to
`proxies:<draw id>` and prize letters and collections to `prizes`.  Every command runs
under the service's journal lock and answers only once its records are committed, so a
host's retry (same command id) after a lost reply returns the first answer.  A draw's
award and the winner's prize letter are one commit: a prize is recorded exactly once.

A draw opens over its bin as the ticket ledger holds it (cards and tickets entered),
minus the cards barred from outside: under a once-per-day limit the day's earlier
winners of the promotion, and the proxies' own entries.  Entries that reach the bin
after the open are passed on to the draw and recorded with its next pick.

Long on purpose: one desk whose commands share the journal lock, the three streams'
restore and the per-draw indexes; views and routes live in their own modules.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import partial
from typing import Any, Protocol, TypeVar
from zoneinfo import ZoneInfo

from raps.config import Config
from raps.config.common import site_time
from raps.logs import get_logger
from raps.metrics import Metrics
from raps.seal import SeedSealer
from raps.storage_health import Outage, StorageUnavailable
from raps.store.journal import JournalStore
from raps.tickets.desk import TicketDesk
from raps.tickets.stage_loader import StageLoader
from raps.witness_client import WitnessClient, WitnessDenied, WitnessUnavailable, signed
from selector.fairness import DERIVATION_V3, SEED_BYTES, commitment
from selector.records import Actor, Record
from selector.session import Command, PickState, SessionError, SessionState
from selector.tickets import TicketDraw, TicketsEntered
from selector.tickets.draw_picks import REQUESTED, TicketPick
from selector.tickets.draw_rules import (
    DocumentType,
    DrawRules,
    Presenter,
    PrizeKind,
    PrizeSpec,
    WinLimit,
)
from selector.tickets.draw_session import TicketDrawSession
from selector.tickets.prizes import Letter, PrizeLedger, PrizeRefused
from selector.tickets.proxies import ProxyBook, ProxyConflict, ProxyRefused
from selector.witness import WitnessAtOpen, WitnessReply

DRAW_PREFIX = "draw:"
PROXY_PREFIX = "proxies:"
PRIZE_STREAM = "prizes"
WON = (PickState.VERIFIED, PickState.AWARDED)
T = TypeVar("T")


def draw_stream(draw_id: str) -> str:
    """A draw's journal stream, which is also its session id in the pick derivation."""
    return DRAW_PREFIX + draw_id


class StageRefused(Exception):
    """A command the rules refuse; nothing was recorded.  `code` says which rule."""

    def __init__(self, code: str, message: str, status: int = 409) -> None:
        super().__init__(message)
        self.code = code
        self.status = status


class StageUnavailable(StorageUnavailable):
    """The journal could not commit; nothing was done, and the same command id may be
    retried."""


class DrawGames(Protocol):
    """What a draw's stage game asks of the draw (raps.games.desk.GameDesk fills it)."""

    def open_rules(self, draw_id: str, rules: DrawRules) -> tuple[DrawRules, dict[str, str]]:
        """The rules and extra bars to open with (a car final's finalists still needed,
        the spot holders barred); raises StageRefused (e.g. a vault already cracked)."""
        ...

    def refuse(self, draw_id: str, step: str) -> None:
        """Raises StageRefused when the game forbids the step ("award", "void", "close")."""
        ...

    def view(self, draw_id: str, public: bool) -> dict[str, Any] | None:
        """The draw's game for the host's view (or the audience's, `public`)."""
        ...


@dataclass(frozen=True, slots=True)
class StageDraw:
    """A configured draw with the rules it runs by."""

    draw: TicketDraw
    rules: DrawRules
    promotion_id: str
    program_name: str
    proxy_conflict: ProxyConflict
    proxy_deadline: datetime
    collect_days: int
    announce_name: str
    announce_where: str
    day: date
    condition: str | None = None  # held only if it holds (raps.conditions)


class StageDesk:
    """One site's ticket draws on stage, their proxies and their prizes."""

    def __init__(
        self,
        cfg: Config,
        tickets: TicketDesk,
        journal: JournalStore,
        lock: asyncio.Lock,
        sealer: SeedSealer,
        metrics: Metrics,
        clock: Callable[[], datetime],
        journal_health: Outage,
        witness: WitnessClient | None = None,
    ) -> None:
        self.witness = witness  # signs each v3 draw's request (None: draws unwitnessed)
        self.tickets = tickets
        self.journal_health = journal_health  # the journal's outage: logged once a change
        self.journal = journal
        self.sealer = sealer
        self.metrics = metrics
        self.clock = clock
        self.zone = ZoneInfo(cfg.site.timezone)
        self.site_name = cfg.site.name
        self.draws = _stage_draws(cfg, tickets, self.zone)
        self.sessions: dict[str, TicketDrawSession] = {}
        self.proxies = ProxyBook()
        self.prizes = PrizeLedger()
        self._lock = lock
        self.loader = StageLoader(journal, sealer)
        # streams the journal does not vouch for (raps.tickets.stage_loader), and why:
        # draws (their own stream or their proxies'), and the prize letters
        self.refused: dict[str, str] = {}
        self.prizes_refused: str | None = None
        self._needs_reload: set[str] = set()
        self._listeners: set[asyncio.Queue[str]] = set()
        self.version = 0  # grows with every commit: the screens' cheap "anything new?"
        self.log = get_logger(component="stage")
        self.games: DrawGames | None = None  # the stage games that follow the draws
        # whether a conditional draw's condition holds (raps.conditions; the service sets it)
        self.conditions: Callable[[str], bool | None] = lambda _condition: None
        tickets.entry_listeners.append(self._entered)

    # ------------------------------------------------------------------ startup

    async def restore(self) -> None:
        """Draws, proxies and prizes as the journal leaves them; a stream the journal does
        not vouch for is refused, with why (raps.tickets.stage_loader)."""
        self.refused, self.prizes_refused = {}, None
        streams = [PRIZE_STREAM] + [p + d for d in self.draws for p in (DRAW_PREFIX, PROXY_PREFIX)]
        misfiled = await self.loader.misfiled(streams)
        await self._reload_proxies(misfiled)
        await self._reload_prizes(misfiled.get(PRIZE_STREAM))
        for draw_id in self.draws:
            misfiled_draw = misfiled.get(draw_stream(draw_id))
            self.sessions[draw_id] = await self._from_journal(draw_id, misfiled_draw)
        self._count_refused()
        self.update_gauges()

    async def replan(self, cfg: Config, *, load: bool = True) -> None:
        """The draws as `cfg` makes them now (the ticket calendars changed; the ticket
        desk has its new plan): a draw new or changed is staged afresh from its journal,
        one gone leaves the stage (a draw that has opened is never changed or dropped:
        raps.ticket_calendar_desk refuses that first).  Not `load`: at start, before
        `restore` stages them all."""
        old, self.draws = self.draws, _stage_draws(cfg, self.tickets, self.zone)
        if not load:
            return
        for draw_id in set(self.sessions) - set(self.draws):
            del self.sessions[draw_id]
        changed = [d for d, sd in self.draws.items() if old.get(d) != sd or d not in self.sessions]
        misfiled = await self.loader.misfiled([draw_stream(d) for d in changed])
        for draw_id in changed:
            self.refused.pop(draw_id, None)  # checked afresh as it is staged again
            self.sessions[draw_id] = await self._from_journal(
                draw_id, misfiled.get(draw_stream(draw_id))
            )
        # a draw gone from the calendar takes its refusal with it; the gauge follows both
        self.refused = {d: why for d, why in self.refused.items() if d in self.draws}
        self._count_refused()
        self.version += 1
        self.update_gauges()

    def _count_refused(self) -> None:
        """raps_sessions_refused's stage part: the refused draws and the prize letters."""
        self.metrics.refused("stage", len(self.refused) + (self.prizes_refused is not None))

    def _refuse(self, draw_id: str | None, reason: str) -> None:
        """A draw (None: the prize letters) kept from running: logged, counted, and every
        command that needs it answered 409 with why."""
        if draw_id is None:
            self.prizes_refused = self.prizes_refused or reason
        elif draw_id not in self.refused:
            self.refused[draw_id] = reason
        else:
            return
        self.log.error("draw refused", draw=draw_id or PRIZE_STREAM, reason=reason)
        self._count_refused()

    def _usable(self, draw_id: str | None, letters: bool = False) -> None:
        """Refuses a command on a refused draw, or one that writes prize letters while
        their stream is refused."""
        why = self.refused.get(draw_id) if draw_id is not None else None
        if why is not None:
            raise StageRefused("draw_refused", f"draw {draw_id} is refused: {why}; the journal "
                               "was changed outside the daemon (run raps verify)")  # fmt: skip
        if (letters or draw_id is None) and self.prizes_refused is not None:
            raise StageRefused("prizes_refused", "the prize letters are refused: "
                               f"{self.prizes_refused}; the journal was changed outside "
                               "the daemon (run raps verify)")  # fmt: skip

    async def _from_journal(self, draw_id: str, misfiled: str | None = None) -> TicketDrawSession:
        sd = self.draws[draw_id]
        stream = draw_stream(draw_id)

        def build(records: list[Record], seed: bytes | None) -> TicketDrawSession:
            return TicketDrawSession.restore(
                stream, draw_id, self.bin_id(draw_id), sd.day, sd.rules, records, seed,
                promotion_id=sd.promotion_id,
            )  # fmt: skip

        restored, read = await self.loader.draw(stream, build, misfiled)
        if read.refused is not None:
            self._refuse(draw_id, read.refused)
        if restored is None:  # refused: shown as never opened, every command refused
            return build([], None)
        s, entries = restored, read.entries
        if s.needs_witness() and entries[-1].record.get("type") == REQUESTED:
            s.note_request_entry(entries[-1].seq, entries[-1].hash)  # what the witness signs
        if s.state is SessionState.OPEN:
            # entries committed after the draw's last record: staged again, as before
            seen = s.bin_view()
            late = {
                c: n
                for c, n in self.tickets.ledger.entered_by_card(s.bin_id).items()
                if seen.get(c) != n
            }
            if late:
                s.update_bin(late)
        return s

    # ------------------------------------------------------------------ reading

    def stage_draw(self, draw_id: str) -> StageDraw:
        sd = self.draws.get(draw_id)
        if sd is None:
            raise StageRefused("unknown_draw", f"no ticket draw {draw_id!r}", 404)
        return sd

    def session(self, draw_id: str) -> TicketDrawSession:
        self.stage_draw(draw_id)
        return self.sessions[draw_id]

    def bin_id(self, draw_id: str) -> str:
        b = self.tickets.plan.resolve(draw_id)
        assert b is not None
        return b.bin_id

    def winners_today(self, draw_id: str) -> dict[str, str]:
        """Cards that won another draw of the promotion on the draw's day (per-day limit)."""
        sd = self.stage_draw(draw_id)
        out: dict[str, str] = {}
        for other_id, other in self.draws.items():
            if other_id == draw_id or other.day != sd.day:
                continue
            if other.promotion_id != sd.promotion_id:
                continue
            for p in self.sessions[other_id].picks:
                if p.state in WON:
                    out.setdefault(p.card, f"won_today:{other_id}")
        return out

    # ------------------------------------------------------------------ commands

    async def open(self, draw_id: str, actor: Actor, command_id: str) -> TicketDrawSession:
        sd = self.stage_draw(draw_id)
        if sd.condition is not None and self.conditions(sd.condition) is False:
            raise StageRefused(
                "condition_not_met", f"draw {draw_id} is held only if {sd.condition}: it is not"
            )
        seed = secrets.token_bytes(SEED_BYTES)
        stream = draw_stream(draw_id)
        witness: dict[str, WitnessAtOpen] = {}

        async def register(s: TicketDrawSession) -> None:
            """Derivation v3: the witness learns the draw (and its commitment) first."""
            if self.witness is not None and not s.answered(command_id):
                witness["at_open"] = await self.witness.register(
                    stream, commitment(seed), DERIVATION_V3, sd.promotion_id
                )

        def action(s: TicketDrawSession, cmd: Command) -> tuple[Any, Any]:
            if s.answered(command_id):
                return s.open(cmd, bytes(SEED_BYTES), {}, {}), None  # a retry: replayed
            entries = self.tickets.ledger.entered_by_card(self.bin_id(draw_id))
            barred = self.proxies.barred(draw_id)
            if sd.rules.win_limit is WinLimit.PER_DAY:
                barred = {**self.winners_today(draw_id), **barred}
            if self.games is not None:
                s.rules, more = self.games.open_rules(draw_id, sd.rules)
                barred = {**more, **barred}
            barred = {c: r for c, r in barred.items() if c in entries}  # only the bin's
            nonce, ciphertext = self.sealer.seal(stream, seed)
            outcome = s.open(cmd, seed, entries, barred, witness=witness.get("at_open"))
            return outcome, (stream, commitment(seed), nonce, ciphertext)

        return await self._command(draw_id, actor, command_id, action, before=register)

    async def draw(self, draw_id: str, actor: Actor, command_id: str) -> TicketDrawSession:
        """v3: two commits, the bin (`draw.requested`), signed by the witness once durable,
        then the winner from it; a v2 draw (opened before v3) in one."""
        if self.session(draw_id).derivation != DERIVATION_V3:
            return await self._command(draw_id, actor, command_id, lambda s, c: (s.draw(c), None))
        reply: dict[str, WitnessReply | None] = {}

        async def sign(s: TicketDrawSession) -> None:
            reply["witness"] = await signed(self.witness, s)

        def complete(s: TicketDrawSession, cmd: Command) -> tuple[Any, Any]:
            return s.complete(cmd, reply.get("witness")), None

        return await self._command(
            draw_id, actor, command_id, lambda s, c: (s.request(c), None),
            then=complete, before=sign,
        )  # fmt: skip

    async def present(
        self,
        draw_id: str,
        actor: Actor,
        command_id: str,
        pick: int,
        presenter: str,
        document: str,
        last_digits: str,
        receipt: str,
    ) -> TicketDrawSession:
        receipt = receipt.strip()

        def action(s: TicketDrawSession, cmd: Command) -> tuple[Any, Any]:
            if s.answered(command_id):
                return s.present(cmd, pick, Presenter(presenter), DocumentType(document),
                                 last_digits, receipt, True), None  # fmt: skip
            p = _pick_of(s, pick)
            who = Presenter(presenter)
            proxy: dict[str, str] | None = None
            if who is Presenter.PROXY:
                nom = self.proxies.proxy_for(draw_id, p.card)
                if nom is None:
                    raise StageRefused("no_proxy", "the winner nominated no proxy for this draw")
                if nom.document.value != document or nom.last_digits != last_digits:
                    raise StageRefused(
                        "proxy_mismatch", "the ID seen is not the nominated proxy's document"
                    )
                proxy = {"name": nom.name, "document": nom.document.value,
                         "last_digits": nom.last_digits}  # fmt: skip
            found = self.tickets.receipt(receipt)
            receipt_ok = (
                found is not None
                and found.entry.card == p.card
                and found.entry.bin_id == self.bin_id(draw_id)
            )
            outcome = s.present(cmd, pick, who, DocumentType(document), last_digits,
                                receipt, receipt_ok, proxy)  # fmt: skip
            return outcome, None

        return await self._command(draw_id, actor, command_id, action)

    async def add_on(
        self, draw_id: str, actor: Actor, command_id: str, pick: int, add_on: str, verified: bool
    ) -> TicketDrawSession:
        return await self._on_pick(
            draw_id, actor, command_id, pick, lambda s, c: s.add_on(c, pick, add_on, verified)
        )

    async def award(
        self,
        draw_id: str,
        actor: Actor,
        command_id: str,
        pick: int,
        source: str,
        amount: int | None = None,
        kind: str | None = None,
        ref: str = "",
    ) -> TicketDrawSession:
        """Record the winner's prize and issue their letter, in one commit."""
        sd = self.stage_draw(draw_id)

        def action(s: TicketDrawSession, cmd: Command) -> tuple[Any, Any]:
            self._game_allows(draw_id, "award")
            p = _pick_of(s, pick)
            if source == "position":
                spec = sd.rules.prize_for(p.position)
                if spec is None:
                    raise StageRefused(
                        "prize_by_device", f"position {p.position} has its prize revealed by a "
                        "device: record the device's prize and reference"
                    )  # fmt: skip
            else:
                if amount is None or kind is None:
                    raise StageRefused("prize_missing", "a device prize needs amount and kind")
                spec = PrizeSpec(amount=amount, kind=PrizeKind(kind))
            return s.award(cmd, pick, spec, source, ref or source), None

        return await self._command(draw_id, actor, command_id, action, letters=True)

    async def no_show(
        self, draw_id: str, actor: Actor, command_id: str, pick: int
    ) -> TicketDrawSession:
        return await self._on_pick(
            draw_id, actor, command_id, pick, lambda s, c: s.no_show(c, pick)
        )

    async def void(
        self, draw_id: str, actor: Actor, command_id: str, pick: int, reason: str
    ) -> TicketDrawSession:

        def step(s: TicketDrawSession, c: Command) -> Any:
            self._game_allows(draw_id, "void")
            return s.void(c, pick, reason)

        return await self._on_pick(draw_id, actor, command_id, pick, step)

    async def close(
        self, draw_id: str, actor: Actor, command_id: str, force: bool = False
    ) -> TicketDrawSession:

        def action(s: TicketDrawSession, c: Command) -> tuple[Any, Any]:
            self._game_allows(draw_id, "close")
            return s.close(c, force), None

        return await self._command(draw_id, actor, command_id, action)

    async def tick(self) -> None:
        """Presentation windows that ran out become no-shows (the host then redraws)."""
        now = self.clock()
        for draw_id, s in list(self.sessions.items()):
            if draw_id not in self.refused and any(p.deadline < now for p in s.pending()):
                async with self._lock:
                    if draw_id in self._needs_reload:  # a failed commit may have landed
                        await self._reload(draw_id)
                    s = self.sessions[draw_id]
                    await self._commit(draw_id, s, partial(s.expire, now), None)

    # ------------------------------------------------------------------ proxies

    async def nominate(
        self,
        draw_id: str,
        actor: Actor,
        command_id: str,
        member: str,
        name: str,
        document: str,
        last_digits: str,
        proxy_card: str | None,
    ) -> Record | None:
        sd = self.stage_draw(draw_id)
        entered = self.tickets.ledger.entered_by_card(self.bin_id(draw_id))
        cmd = Command(command_id, actor, self.clock())
        async with self._lock:
            self._usable(draw_id)
            start = len(self.proxies.records)
            try:
                self.proxies.nominate(
                    cmd, draw_id=draw_id, member=member, name=name,
                    document=DocumentType(document), last_digits=last_digits,
                    proxy_card=proxy_card, deadline=sd.proxy_deadline,
                    conflict=sd.proxy_conflict, participants=entered.keys(),
                )  # fmt: skip
            except ProxyRefused as e:
                raise StageRefused(str(e.reason), str(e)) from e
            new = self.proxies.records[start:]
            if new:
                await self._append_plain(new, lambda: self._reload_proxies())
            self._changed(draw_id)
            return new[-1] if new else None

    # ------------------------------------------------------------------ prizes

    async def collect(
        self,
        letter_no: str,
        actor: Actor,
        command_id: str,
        document: str,
        last_digits: str,
        signature: dict[str, str],
        collected_by: str = "winner",
    ) -> Letter:
        cmd = Command(command_id, actor, self.clock())
        async with self._lock:
            self._usable(None)
            start = len(self.prizes.records)
            try:
                letter = self.prizes.collect(
                    cmd, letter_no, document=document, last_digits=last_digits,
                    signature=signature, collected_by=collected_by,
                )  # fmt: skip
            except PrizeRefused as e:
                status = 404 if str(e.reason) == "unknown_letter" else 409
                raise StageRefused(str(e.reason), str(e), status) from e
            new = self.prizes.records[start:]
            if new:
                await self._append_plain(new, self._reload_prizes)
            self.update_gauges()
            self._changed("")
            return letter

    async def forfeit(self, letter_no: str, actor: Actor, command_id: str, reason: str) -> Letter:
        """Close an overdue prize with a reason: no longer listed or alerted as overdue."""
        cmd = Command(command_id, actor, self.clock())
        async with self._lock:
            self._usable(None)
            start = len(self.prizes.records)
            try:
                letter = self.prizes.forfeit(cmd, letter_no, reason=reason)
            except PrizeRefused as e:
                status = 404 if str(e.reason) == "unknown_letter" else 409
                raise StageRefused(str(e.reason), str(e), status) from e
            new = self.prizes.records[start:]
            if new:
                await self._append_plain(new, self._reload_prizes)
            self.update_gauges()
            self._changed("")
            return letter

    # ------------------------------------------------------ for the stage games

    def _game_allows(self, draw_id: str, step: str) -> None:
        """The draw's stage game may forbid the step; asked under the journal lock, inside
        the command, so a game that opens or closes meanwhile is seen."""
        if self.games is not None:
            self.games.refuse(draw_id, step)

    async def settled(self, view: Callable[[], T]) -> T:
        """`view()` as of the last commit. A command changes the draw and its games in
        memory, then awaits its journal write (which, failing, undoes it): read under the
        journal lock, a view never shows what a 503 then takes back."""
        async with self._lock:
            return view()

    @property
    def lock(self) -> asyncio.Lock:
        """The service's journal lock: the stage games' commands run under it too."""
        return self._lock

    async def fresh(self, draw_id: str) -> TicketDrawSession:
        """The draw as the journal has it (reloaded after a failed write); under the lock.
        Refused (StageRefused) if the draw or the prize letters a game writes are."""
        if draw_id in self._needs_reload:
            await self._reload(draw_id)
        self._usable(draw_id, letters=True)
        return self.sessions[draw_id]

    async def recover(self, draw_id: str) -> None:
        """A game's commit failed after it changed the draw and the letters in memory:
        the journal decides (the draw reloads at its next command, the letters now)."""
        self._needs_reload.add(draw_id)
        await self._reload_prizes_safely()

    def changed(self, draw_id: str) -> None:
        """A game committed: gauges, and the screens waiting for something new."""
        self.update_gauges()
        self._changed(draw_id)

    # --------------------------------------------------------------- journaling

    async def _on_pick(
        self,
        draw_id: str,
        actor: Actor,
        command_id: str,
        pick: int,
        step: Callable[[TicketDrawSession, Command], Any],
    ) -> TicketDrawSession:
        """A command on one pick: an unknown pick is a 404, not a rule's refusal."""

        def action(s: TicketDrawSession, cmd: Command) -> tuple[Any, Any]:
            _pick_of(s, pick)
            return step(s, cmd), None

        return await self._command(draw_id, actor, command_id, action)

    async def _command(
        self,
        draw_id: str,
        actor: Actor,
        command_id: str,
        action: Callable[[TicketDrawSession, Command], tuple[Any, Any]],
        letters: bool = False,
        then: Callable[[TicketDrawSession, Command], tuple[Any, Any]] | None = None,
        before: Callable[[TicketDrawSession], Awaitable[None]] | None = None,
    ) -> TicketDrawSession:
        """The action committed; with `then`, `before` (awaited) and `then` committed after
        it unless it was a retry or drew nobody; else `before` awaited first."""
        self.stage_draw(draw_id)
        async with self._lock:
            if draw_id in self._needs_reload:
                await self._reload(draw_id)
            self._usable(draw_id, letters)
            s = self.sessions[draw_id]
            cmd = Command(command_id, actor, self.clock())
            holder: dict[str, Any] = {}
            if before is not None and then is None:
                await _witnessed(before(s))

            def run() -> list[Record]:
                start = len(s.records)
                try:
                    holder["outcome"], holder["sealed"] = action(s, cmd)
                except (SessionError, ValueError) as e:
                    holder["refused"] = e  # what the presentation timer did first stands
                return s.records[start:]

            await self._commit(draw_id, s, run, holder, letters)
            _raise_refused(holder)
            done = holder["outcome"]
            if then is not None and not (done.replayed or done.no_eligible):
                if before is not None:
                    await _witnessed(before(s))
                action, holder = then, {}
                await self._commit(draw_id, s, run, holder, letters)  # run() calls `then`
                _raise_refused(holder)
            return s

    async def _commit(
        self,
        draw_id: str,
        s: TicketDrawSession,
        run: Callable[[], list[Record]],
        holder: dict[str, Any] | None,
        letters: bool = False,
    ) -> None:
        new = run()
        if not new:
            return
        extra: list[Record] = []
        start_prizes = len(self.prizes.records)
        if letters:
            for rec in new:
                if rec.type == "draw.awarded":
                    self._issue_letter(draw_id, rec)
            extra = self.prizes.records[start_prizes:]
        sealed = holder.get("sealed") if holder else None
        try:
            entries = await self.journal.append([r.to_dict() for r in [*new, *extra]], sealed)
        except Exception as e:
            self.metrics.journal_failures.inc()
            self.journal_health.failed(e, draw=draw_id)  # the command is undone
            self._needs_reload.add(draw_id)
            if extra:
                await self._reload_prizes_safely()
            raise StageUnavailable("the journal could not be written; nothing was done") from e
        self.journal_health.ok()
        if new[-1].type == REQUESTED and entries:  # the entry the witness will sign
            s.note_request_entry(entries[len(new) - 1].seq, entries[len(new) - 1].hash)
        head = self.journal.head
        self.metrics.journal_head.set(head.seq if head else 0)
        for rec in new:
            self.metrics.stage_records.labels(rec.type).inc()
        self.update_gauges()
        self._changed(draw_id)

    def _issue_letter(self, draw_id: str, rec: Record) -> None:
        sd = self.draws[draw_id]
        d = rec.data
        card = d["card"]
        prof = self.tickets.floor.profile(card) if self.tickets.floor else None
        name = prof.display_name if prof is not None else card
        digest = hashlib.sha256(
            json.dumps(rec.to_dict(), sort_keys=True, separators=(",", ":")).encode()
        ).hexdigest()
        s = self.sessions[draw_id]
        add_ons = [
            {"id": a.id, "name": a.name, "prizes": [[p.amount, p.kind.value] for p in a.prizes]}
            for a in sd.rules.add_ons
            if a.id in d.get("add_ons", [])
        ]
        self.prizes.issue(
            Command(f"letter:{draw_id}:{d['pick']}", rec.actor, rec.at),
            draw_id=draw_id, draw_name=sd.draw.name, session_id=s.session_id,
            pick=d["pick"], winner_card=card, winner_name=name,
            prizes=[(d["prize"]["amount"], d["prize"]["kind"])], add_ons=add_ons,
            awarded_at=rec.at, collect_days=sd.collect_days, digest_hex=digest,
        )  # fmt: skip

    async def _append_plain(self, records: Sequence[Record], reload: Callable[[], Any]) -> None:
        try:
            await self.journal.append([r.to_dict() for r in records])
        except Exception as e:
            self.metrics.journal_failures.inc()
            self.journal_health.failed(e)
            await self._reload_safely(reload)
            raise StageUnavailable("the journal could not be written; nothing was done") from e
        self.journal_health.ok()
        head = self.journal.head
        self.metrics.journal_head.set(head.seq if head else 0)

    async def _reload(self, draw_id: str) -> None:
        try:
            await self.journal.load_head()
            self.sessions[draw_id] = await self._from_journal(draw_id)
            await self._reload_prizes()
        except Exception as e:
            self.journal_health.failed(e, draw=draw_id)
            raise StageUnavailable("the journal cannot be read; try again shortly") from e
        self._needs_reload.discard(draw_id)

    async def _reload_proxies(self, misfiled: dict[str, str] | None = None) -> None:
        """Every draw's nominations; a draw whose nominations the journal does not vouch
        for is refused (they bar cards from its bin), and they are left out."""
        records: list[Record] = []
        known = {PROXY_PREFIX + d for d in self.draws}
        for stream in sorted(known | set(await self.journal.session_ids(PROXY_PREFIX))):
            if stream.startswith(PROXY_PREFIX):
                read = await self.loader.read(stream, (misfiled or {}).get(stream))
                if read.refused is None:
                    records += read.records
                elif stream in known:
                    self._refuse(stream.removeprefix(PROXY_PREFIX), f"its proxies: {read.refused}")
        self.proxies = ProxyBook.replay(records)

    async def _reload_prizes(self, misfiled: str | None = None) -> None:
        """The prize letters; refused (collections, forfeits and awards answered 409) when
        the journal does not vouch for them, shown as their records leave them."""
        read = await self.loader.read(PRIZE_STREAM, misfiled)
        if read.refused is not None:
            self._refuse(None, read.refused)
        try:
            self.prizes = PrizeLedger.replay(read.records)
        except (PrizeRefused, SessionError, KeyError, TypeError, ValueError):
            if read.refused is None:
                raise
            self.prizes = PrizeLedger()

    async def _reload_prizes_safely(self) -> None:
        await self._reload_safely(self._reload_prizes)

    async def _reload_safely(self, reload: Callable[[], Any]) -> None:
        try:
            await reload()
        except Exception:
            self.log.error("journal unreadable after a failed write; reloading later")

    # ---------------------------------------------------------------- late entries

    def _entered(self, rec: TicketsEntered) -> None:
        """An entry committed after a draw opened over its bin: the draw takes it."""
        for s in self.sessions.values():
            if s.state is SessionState.OPEN and s.bin_id == rec.bin_id:
                s.update_bin({rec.card: self.tickets.ledger.entered(rec.card, rec.bin_id)})

    # ---------------------------------------------------------------- live updates

    def subscribe(self) -> asyncio.Queue[str]:
        q: asyncio.Queue[str] = asyncio.Queue(maxsize=100)
        self._listeners.add(q)
        return q

    def unsubscribe(self, q: asyncio.Queue[str]) -> None:
        self._listeners.discard(q)

    def _changed(self, draw_id: str) -> None:
        self.version += 1
        for q in self._listeners:
            if not q.full():
                q.put_nowait(draw_id)

    def update_gauges(self) -> None:
        now = self.clock()
        self.metrics.prizes_uncollected.labels("awaiting").set(len(self.prizes.awaiting(now)))
        self.metrics.prizes_uncollected.labels("overdue").set(len(self.prizes.overdue(now)))


def _pick_of(s: TicketDrawSession, number: int) -> TicketPick:
    if not 1 <= number <= len(s.picks):
        raise StageRefused("unknown_pick", f"the draw has no pick {number}", 404)
    return s.picks[number - 1]


def _raise_refused(holder: dict[str, Any]) -> None:
    refused = holder.get("refused")
    if isinstance(refused, StageRefused):
        raise refused
    if refused is not None:
        raise StageRefused(_code(refused), str(refused)) from refused


async def _witnessed(step: Awaitable[None]) -> None:
    """A call to the witness; what it cannot do refuses the command, nothing drawn."""
    try:
        await step
    except WitnessUnavailable as e:
        raise StageUnavailable(str(e)) from e
    except WitnessDenied as e:
        raise StageRefused("witness_refused", str(e)) from e


def _code(e: Exception) -> str:
    return type(e).__name__.removesuffix("Error").lower() or "refused"


def _stage_draws(cfg: Config, tickets: TicketDesk, zone: ZoneInfo) -> dict[str, StageDraw]:
    programs = {p.id: p for p in cfg.ticket_programs}
    out: dict[str, StageDraw] = {}
    for dc in cfg.all_ticket_draws():  # listed, and made by the programs' calendars
        prog = programs[dc.program]
        draw = tickets.plan.draw(dc.id)
        at = draw.at.astimezone(zone)
        minutes = timedelta(minutes=prog.stage.proxy_deadline_minutes)
        out[dc.id] = StageDraw(
            draw=draw,
            rules=prog.stage.rules(dc.winners, dc.prizes),
            promotion_id=prog.promotion,
            program_name=prog.name or prog.id,
            proxy_conflict=prog.stage.conflict,
            proxy_deadline=at - minutes
            if dc.proxy_deadline is None
            else site_time(dc.proxy_deadline, zone.key),
            collect_days=prog.stage.collect_days,
            announce_name=prog.stage.announce_name,
            announce_where=prog.stage.announce_where,
            day=at.date(),
            condition=dc.condition,
        )
    return out

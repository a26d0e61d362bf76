"""A ticket draw run on stage (issue 13): scheduled -> open -> closed, one winner at a time.

Rules enforced here (seed 003 "TEEDS", seed 000 Gold Reef City):
- each card wins in proportion to its tickets (derivation v2, docs/fairness.md), over the
  *eligible* bin: the bin as entered, with late entries applied, minus the cards barred
  from outside (the day's earlier winners under a once-per-day limit, a proxy's own entry)
  and the cards this draw bars itself (the pending winner, the winners, and no-shows and
  voided winners when the rules exclude them). "Win once per draw; a redraw if a winner
  is drawn more than once": a winner is out of the bin before the next pick, so it has
  exactly zero chance of being drawn again;
- one winner at a time on stage: a draw is refused while a pick is pending; the host
  resolves it (presented, no-show or void) before drawing the next;
- a winner has `present_seconds` (90) to present with ID and the ticket receipt; the
  deadline is inclusive. Past it the pick becomes a no-show (`expire`, or the next
  command) and the next draw redraws into the same position (attempt + 1);
- a proxy presents only with the nominated proxy's details, matching the ID seen, and
  stands in for one participant of the draw; the prize stays the winner's: the award
  (and so the prize letter) names the winner's card, never the proxy;
- prizes come from the rules by position or from a device on stage (with its
  reference); add-ons (000 rules 20-21) are verified once each, before the award;
- every command carries an id: a retried command returns its first outcome and changes
  nothing; the same id for another command raises DrawConflict (a CommandConflict).

The bin is stored once, in `draw.opened`; a pick's record holds only what changed since
(late entries, new bars) and the eligible bin's count, total and digest, so it stays
small on a 200,000-card bin, and `selector.tickets.draw_verify` can follow every pick.
A SumTree keeps the eligible bin, so a pick costs O(changes x log n).

Late entries (`update_bin`) and bars after open (`bar`) are staged until the next draw
and are journaled in its record; staged ones are not journaled before that, so after a
restart the daemon stages again what the ledger holds beyond `bin_view()`.

Time and the seed come in as arguments; nothing here reads a clock or an RNG.

Long on purpose: one state machine whose commands share the eligible tree, the per-card
bars and the per-position picks; the values it hands out live in draw_picks.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import date, datetime, timedelta
from types import MappingProxyType
from typing import Any

from selector.bindigest import MAX_WEIGHT
from selector.fairness import (
    DERIVATION_V2,
    DERIVATION_V3,
    SEED_BYTES,
    commitment,
    ticket_index,
    ticket_index_v3,
)
from selector.records import Actor, Record
from selector.session import Command, PickState, SessionState
from selector.signatures import SignatureError
from selector.sumtree import SumTree
from selector.tickets.draw_picks import (
    ADD_ON,
    AWARDED,
    CLOSED,
    FILLED,
    NO_ELIGIBLE,
    NO_SHOW,
    OPENED,
    PICKED,
    PRESENTED,
    REQUESTED,
    TICKET_KIND,
    VOIDED,
    WON,
    Award,
    AwardSource,
    BarReason,
    Done,
    DrawConflict,
    DrawError,
    DrawOutcome,
    NoShowReason,
    Presentation,
    TicketPick,
    TicketRequest,
)
from selector.tickets.draw_rules import DocumentType, DrawRules, Presenter, PrizeSpec
from selector.tickets.draw_rules import last_digits as check_digits
from selector.witness import RequestTerms, WitnessAtOpen, WitnessRefused, WitnessReply, pick_mix


def _text(what: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip() or not value.isprintable():
        raise DrawError(f"{what} must be non-empty printable text")
    return value


def _card(value: object) -> str:
    if not isinstance(value, str) or not value or not value.isprintable() or " " in value:
        raise DrawError(f"card {value!r} must be printable text without whitespace")
    return value


def _tickets(card: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= MAX_WEIGHT:
        raise DrawError(f"tickets of {card!r} must be an integer in {minimum}..2^63-1")
    return value


def _check_entries(entries: Mapping[str, int]) -> tuple[list[str], list[int]]:
    """The bin in canonical order as (cards, tickets), checked in bulk (200,000 cards in
    a few milliseconds)."""
    try:
        cards = sorted(entries)  # keys, not (card, tickets) pairs: twice as fast
    except TypeError as e:
        raise DrawError("cards must be text") from e
    weights = [entries[c] for c in cards]
    try:
        joined = "".join(cards)
        ok = all(cards) and joined.isprintable() and " " not in joined
    except TypeError:
        ok = False
    ok = ok and all(type(w) is int for w in weights)
    ok = ok and (not weights or (min(weights) >= 1 and max(weights) <= MAX_WEIGHT))
    if not ok:  # find the culprit for the message
        for c, w in zip(cards, weights, strict=True):
            _tickets(_card(c), w, 1)
    return cards, weights


def _check_bars(barred: Mapping[str, str]) -> dict[str, str]:
    return {_card(c): _text(f"reason for barring {c!r}", barred[c]) for c in sorted(barred)}


class TicketDrawSession:
    """One ticket draw on stage; `records` is its journal stream (session id = stream)."""

    def __init__(
        self,
        session_id: str,
        draw_id: str,
        bin_id: str,
        day: date,
        rules: DrawRules,
        rehearsal: bool = False,
        promotion_id: str = "",
    ) -> None:
        self.session_id = _text("session id", session_id)
        self.promotion_id = promotion_id  # recorded at open: the per-day limit is per promotion
        self.draw_id = _text("draw id", draw_id)
        self.bin_id = _text("bin id", bin_id)
        self.day = day  # the promotional day (per-day win limit)
        self.rules = rules
        self.rehearsal = rehearsal
        self.state = SessionState.SCHEDULED
        self.commitment: str | None = None
        self.picks: list[TicketPick] = []
        self.records: list[Record] = []
        self._seed: bytes | None = None
        self._revealed = False
        self._done: dict[str, Done] = {}
        self._bin: dict[str, int] = {}  # the bin as entered, late entries applied
        self._tree = SumTree()  # the eligible bin
        self._external: dict[str, str] = {}  # bars from outside, with the daemon's reason
        self._own: dict[str, str] = {}  # bars by this draw's own picks
        self._card_picks: dict[str, list[TicketPick]] = {}
        self._pending: dict[int, TicketPick] = {}
        self._last: dict[int, TicketPick] = {}  # position -> its latest pick
        self._draws: dict[int, int] = {}  # position -> picks so far
        # late entries are applied to the tree as they come (so a pick pays only for the
        # hashing); each changed card's tickets at the last record, for the next record
        self._before: dict[str, int] = {}
        self._staged_bars: dict[str, str] = {}
        # derivation v3 (the default for a draw opened from now on): a pick is two commits,
        # its bin (`draw.requested`) then its winner; the opening record's for a restored draw
        self.derivation = DERIVATION_V3
        self.witness: WitnessAtOpen | None = None
        self._request: TicketRequest | None = None  # requested, its winner not yet drawn
        self._requests = 0
        # late entries that came while a request was open: its bin is frozen until drawn
        self._deferred: dict[str, int] = {}

    # ------------------------------------------------------------------ reading

    @property
    def revealed_seed(self) -> bytes | None:
        return self._seed if self._revealed else None

    def answered(self, command_id: str) -> bool:
        """Whether a command with this id has already been carried out."""
        return command_id in self._done

    def pending(self) -> list[TicketPick]:
        return list(self._pending.values())

    def barred(self) -> dict[str, str]:
        """Cards the draw does not draw now, with why (outside reasons first)."""
        return {**self._own, **self._external}

    def winners(self) -> list[str]:
        """Cards presented or awarded, in pick order."""
        return [p.card for p in self.picks if p.state in WON]

    def positions_filled(self) -> int:
        return sum(1 for p in self._last.values() if p.state in WON)

    def bin_view(self) -> Mapping[str, int]:
        """The bin as entered with the late entries a pick has applied (staged ones not)."""
        return MappingProxyType(self._bin)

    def staged(self) -> tuple[dict[str, int], dict[str, str]]:
        """Late entries and bars the next draw's record will hold."""
        return dict(self._unrecorded()), dict(self._staged_bars)

    def _unrecorded(self) -> list[tuple[str, int]]:
        """Late entries since the last record, in canonical order, as new totals."""
        return [
            (c, self._bin.get(c, 0))
            for c in sorted(self._before)
            if self._bin.get(c, 0) != self._before[c]
        ]

    def eligible(self, card: str) -> int:
        """The card's tickets in the eligible bin (0: it cannot be drawn now)."""
        return self._tree.weight(card)

    def eligible_items(self) -> Iterator[tuple[str, int]]:
        """The eligible bin in canonical order (staged changes not yet applied)."""
        return self._tree.items()

    @property
    def eligible_count(self) -> int:
        return len(self._tree)

    @property
    def eligible_total(self) -> int:
        return self._tree.total

    # ------------------------------------------------------------------ helpers

    def _emit(
        self, cmd: Command | None, at: datetime, actor: Actor, type_: str, **data: Any
    ) -> Record:
        base: dict[str, Any] = {"draw_id": self.draw_id, "rehearsal": self.rehearsal}
        if cmd is not None:
            base["command_id"] = cmd.command_id
        base.update(data)
        rec = Record(type_, self.session_id, at, actor, base)
        self.records.append(rec)
        return rec

    def _run(
        self, cmd: Command, fingerprint: tuple[Any, ...], action: Callable[[], DrawOutcome]
    ) -> DrawOutcome:
        done = self._done.get(cmd.command_id)
        if done is not None:
            if done.fingerprint != fingerprint:
                raise DrawConflict(
                    f"command id {cmd.command_id!r} was already used for {done.fingerprint[0]}"
                )
            o = done.outcome
            return DrawOutcome(o.records, o.pick, o.no_eligible, replayed=True)
        if self.state == SessionState.OPEN:
            self._expire(cmd.at)  # the presentation timer runs out first, on its own
        start = len(self.records)
        result = action()
        outcome = DrawOutcome(tuple(self.records[start:]), result.pick, result.no_eligible)
        self._done[cmd.command_id] = Done(fingerprint, outcome)
        return outcome

    def _require(self, state: SessionState) -> None:
        if self.state != state:
            raise DrawError(f"draw {self.draw_id} is {self.state}, not {state}")

    def _pick(self, number: int) -> TicketPick:
        if isinstance(number, bool) or not isinstance(number, int):
            raise DrawError(f"pick number must be an integer, not {number!r}")
        if not 1 <= number <= len(self.picks):
            raise DrawError(f"draw {self.draw_id} has no pick {number}")
        return self.picks[number - 1]

    def _refresh(self, card: str) -> None:
        """Keep the tree to exactly the eligible entries for this card."""
        w = self._bin.get(card, 0)
        if w and card not in self._external and card not in self._own:
            self._tree.set(card, w)
        else:
            self._tree.discard(card)

    def _rebar(self, card: str) -> None:
        """Whether and why this draw bars a card, from its own picks in draw order."""
        reason: str | None = None
        for p in self._card_picks.get(card, ()):
            if p.state in WON:
                now = BarReason.WON
            elif p.state == PickState.PENDING:
                now = BarReason.PENDING
            elif p.state == PickState.NO_SHOW and self.rules.exclude_no_shows:
                now = BarReason.NO_SHOW
            elif p.state == PickState.VOID and self.rules.exclude_voided:
                now = BarReason.VOIDED
            else:
                continue
            if reason not in (BarReason.WON, BarReason.PENDING):
                reason = now.value
        if reason is None:
            self._own.pop(card, None)
        else:
            self._own[card] = reason
        self._refresh(card)

    def _add_pick(self, pick: TicketPick) -> None:
        self.picks.append(pick)
        self._last[pick.position] = pick
        self._draws[pick.position] = self._draws.get(pick.position, 0) + 1
        self._card_picks.setdefault(pick.card, []).append(pick)
        self._pending[pick.number] = pick
        self._rebar(pick.card)

    def _set_state(self, pick: TicketPick, state: PickState, at: datetime) -> None:
        pick.state = state
        pick.resolved_at = at
        if state != PickState.PENDING:
            self._pending.pop(pick.number, None)
        self._rebar(pick.card)

    def _free_position(self) -> int | None:
        """The lowest position whose latest pick is not filled (pending, verified, awarded)."""
        for position in range(1, self.rules.winners + 1):
            last = self._last.get(position)
            if last is None or last.state not in FILLED:
                return position
        return None

    def _apply(
        self, changes: Iterable[tuple[str, int]], bars: Iterable[tuple[str, str]]
    ) -> tuple[list[list[Any]], dict[str, str]]:
        """Late entries then bars, in canonical order; returns those that changed anything."""
        applied: list[list[Any]] = []
        for card, tickets in changes:
            if self._bin.get(card, 0) == tickets:
                continue
            if tickets:
                self._bin[card] = tickets
            else:
                del self._bin[card]
            applied.append([card, tickets])
            self._refresh(card)
        new_bars: dict[str, str] = {}
        for card, reason in bars:
            if card in self._external:
                continue
            self._external[card] = new_bars[card] = reason
            self._refresh(card)
        return applied, new_bars

    # ---------------------------------------------------------- outside changes

    def update_bin(self, changes: Mapping[str, int]) -> None:
        """Late entries after open: card -> the card's new total tickets (0: gone).

        Applied to the eligible bin at once and recorded in the next draw's record."""
        self._require(SessionState.OPEN)
        checked = {_card(c): _tickets(c, t, 0) for c, t in changes.items()}
        if self._request is not None:
            self._deferred.update(checked)  # the requested bin stays as it was made durable
            return
        for card, tickets in checked.items():
            old = self._bin.get(card, 0)
            if old == tickets:
                continue
            self._before.setdefault(card, old)
            if tickets:
                self._bin[card] = tickets
            else:
                del self._bin[card]
            self._refresh(card)

    def _forget_unrecorded(self) -> None:
        """Late entries no record holds are undone: a closed draw's bin is its journal's."""
        for card, old in self._before.items():
            if old:
                self._bin[card] = old
            else:
                self._bin.pop(card, None)
            self._refresh(card)
        self._before.clear()

    def bar(self, card: str, reason: str) -> None:
        """A bar from outside after open (e.g. a proxy nominated late); staged like entries."""
        self._require(SessionState.OPEN)
        _card(card)
        _text(f"reason for barring {card!r}", reason)
        if card not in self._external:
            self._staged_bars.setdefault(card, reason)

    # ----------------------------------------------------------------- commands

    def open(
        self,
        cmd: Command,
        seed: bytes,
        entries: Mapping[str, int],
        barred: Mapping[str, str],
        *,
        derivation: str = DERIVATION_V3,
        witness: WitnessAtOpen | None = None,
    ) -> DrawOutcome:
        """Open over the bin (card -> tickets entered, each >= 1) minus the cards barred
        from outside (card -> reason, e.g. "won_today:<draw id>", "proxy_for:<card>").

        Publishes only the seed's commitment; the whole bin is recorded here, once. A v3
        draw names its witness (public key, receipt of this open) or none (unwitnessed)."""

        def action() -> DrawOutcome:
            self._require(SessionState.SCHEDULED)
            if not isinstance(seed, bytes) or len(seed) != SEED_BYTES:
                raise DrawError(f"seed must be {SEED_BYTES} bytes")
            if derivation not in (DERIVATION_V2, DERIVATION_V3):
                raise DrawError(f"unknown ticket draw derivation {derivation!r}")
            if witness is not None:
                if derivation != DERIVATION_V3:
                    raise DrawError("only derivation v3 has a witness")
                try:
                    witness.check_receipt(self.session_id, commitment(seed), derivation)
                except SignatureError as e:
                    raise DrawError(f"the witness's receipt of the open: {e}") from e
            cards, weights = _check_entries(entries)
            bars = _check_bars(barred)
            try:
                tree = SumTree.from_sorted(cards, weights)  # checked above, not twice
            except ValueError as e:  # a card too long to encode
                raise DrawError(str(e)) from e
            items = list(zip(cards, weights, strict=True))
            digest, count, total = tree.digest(), len(tree), tree.total
            entered = tree.weights()
            for card in bars:
                tree.discard(card)
            self._seed = seed
            self.commitment = commitment(seed)
            self._bin = entered
            self._tree = tree
            self._external = dict(bars)
            self.state = SessionState.OPEN
            self.derivation = derivation
            self.witness = witness
            v3 = {"witness": None if witness is None else witness.to_dict()}
            self._emit(
                cmd, cmd.at, cmd.actor, OPENED,
                bin_id=self.bin_id, promotion_id=self.promotion_id, day=self.day.isoformat(),
                rules=self.rules.to_dict(),
                commitment=self.commitment, derivation=derivation,
                **(v3 if derivation == DERIVATION_V3 else {}),
                bin=items, bin_count=count, bin_total=total,
                bin_digest=digest, barred=bars,
            )  # fmt: skip
            return DrawOutcome(())

        return self._run(cmd, ("open",), action)

    def draw(self, cmd: Command) -> DrawOutcome:
        """Draw the next winner into the lowest position whose last pick is not filled:
        v3 `request` then `complete` (the daemon commits each, and asks the witness between
        them), v2 (a draw opened before v3) in one step."""
        if self.derivation == DERIVATION_V3:
            first = self.request(cmd)
            if first.replayed or first.no_eligible:
                return first
            second = self.complete(cmd)
            both = DrawOutcome(first.records + second.records, second.pick, replayed=False)
            if not second.replayed:
                self._done[cmd.command_id] = Done(("draw",), both)
            return both
        return self._draw_v2(cmd)

    def _position(self) -> int:
        """The position the next draw fills; refused while a pick is pending."""
        if self._pending:
            first = next(iter(self._pending.values()))
            raise DrawError(
                f"pick {first.number} is still pending: one winner at a time, "
                "resolve it (presented, no-show or void) before the next draw"
            )
        position = self._free_position()
        if position is None:
            raise DrawError(f"all {self.rules.winners} winners of this draw are drawn")
        return position

    def request(self, cmd: Command) -> DrawOutcome:
        """v3, the first half of a draw: the eligible bin with the late entries and bars
        staged since the last record, made durable as `draw.requested` before any winner
        is known. A bin already requested is drawn from again (no new record)."""
        done = self._done.get(cmd.command_id)
        if done is not None:
            return self._run(cmd, ("draw",), lambda: done.outcome)  # replayed, or a conflict
        self._require(SessionState.OPEN)
        if self.derivation != DERIVATION_V3:
            raise DrawError(f"draw {self.draw_id} draws in one step (derivation v2)")
        self._expire(cmd.at)
        start = len(self.records)
        if self._request is not None:
            return DrawOutcome(())
        position = self._position()
        attempt = self._draws.get(position, 0)
        changes = [[c, n] for c, n in self._unrecorded()]
        _, bars = self._apply((), sorted(self._staged_bars.items()))
        self._before.clear()
        self._staged_bars.clear()
        tree = self._tree
        if not tree.total:
            self._emit(cmd, cmd.at, cmd.actor, NO_ELIGIBLE, position=position,
                       attempt=attempt, changes=changes, barred=bars)  # fmt: skip
            outcome = DrawOutcome(tuple(self.records[start:]), no_eligible=True)
            self._done[cmd.command_id] = Done(("draw",), outcome)
            return outcome
        self._requests += 1
        req = TicketRequest(len(self.picks) + 1, position, attempt, self._requests, len(tree),
                            tree.total, tree.digest())  # fmt: skip
        self._emit(cmd, cmd.at, cmd.actor, REQUESTED, pick=req.number, position=position,
                   attempt=attempt, request=req.request, bin_count=req.count,
                   bin_total=req.total, bin_digest=req.digest, changes=changes,
                   barred=bars)  # fmt: skip
        self._request = req
        return DrawOutcome(tuple(self.records[start:]))

    def needs_witness(self) -> bool:
        """Whether the requested pick waits for the witness's signature."""
        return self._request is not None and self.witness is not None

    def note_request_entry(self, seq: int, entry_hash: str) -> None:
        """The journal entry that holds the open request (the witness signs it)."""
        if self._request is not None and self._request.entry is None:
            self._request.entry = (seq, entry_hash)

    def witness_terms(self) -> RequestTerms | None:
        """What the witness is asked to sign for the open request (once its entry is known)."""
        r = self._request
        if r is None or r.entry is None:
            return None
        return self._terms(r, *r.entry)

    def _terms(self, r: TicketRequest, seq: int, entry_hash: str) -> RequestTerms:
        site = self.witness.site if self.witness is not None else ""
        return RequestTerms(
            site, self.session_id, r.request, r.number, r.attempt, TICKET_KIND, self.derivation,
            r.digest, self.commitment or "", seq, entry_hash,
        )  # fmt: skip

    def complete(self, cmd: Command, witness: WitnessReply | None = None) -> DrawOutcome:
        """v3, the second half of a draw: the winner from the requested bin, with the
        witness's signature of the request mixed in (or none: no witness, or a fallback
        the draw allows)."""

        def action() -> DrawOutcome:
            self._require(SessionState.OPEN)
            req = self._request
            if req is None:
                raise DrawError(f"no draw was requested in draw {self.draw_id}")
            tree = self._tree
            if (tree.digest(), tree.total) != (req.digest, req.total):  # pragma: no cover
                raise DrawError("the eligible bin is not the requested one")
            try:
                mix, witnessed = pick_mix(
                    self.witness, req.request, req.entry, witness,
                    lambda seq, entry_hash: self._terms(req, seq, entry_hash),
                )  # fmt: skip
            except WitnessRefused as e:
                raise DrawError(str(e)) from e
            assert self._seed is not None
            ticket, rejected = ticket_index_v3(
                self._seed, self.session_id, req.number, req.attempt, req.digest, mix, req.total
            )
            card, first_ticket = tree.locate(ticket)
            pick = TicketPick(
                number=req.number, position=req.position, attempt=req.attempt, card=card,
                tickets=tree.weight(card), ticket=ticket, first=first_ticket,
                drawn_at=cmd.at, deadline=cmd.at + timedelta(seconds=self.rules.present_seconds),
                bin_count=req.count, bin_total=req.total, bin_digest=req.digest,
            )  # fmt: skip
            self._emit(
                cmd, cmd.at, cmd.actor, PICKED,
                pick=req.number, position=req.position, attempt=req.attempt,
                request=req.request, ticket=ticket, rejected_blocks=rejected, card=card,
                tickets=pick.tickets, first=first_ticket, bin_count=req.count,
                bin_total=req.total, bin_digest=req.digest,
                deadline=pick.deadline.isoformat(), witness=witnessed,
            )  # fmt: skip
            self._request = None
            self._add_pick(pick)
            deferred, self._deferred = self._deferred, {}
            if deferred:
                self.update_bin(deferred)  # late entries held while the bin was frozen
            return DrawOutcome((), pick=pick)

        return self._run(cmd, ("draw",), action)

    def _draw_v2(self, cmd: Command) -> DrawOutcome:
        """Derivation v2 (a draw opened before v3): the pick in one record."""

        def action() -> DrawOutcome:
            self._require(SessionState.OPEN)
            if self._pending:
                first = next(iter(self._pending.values()))
                raise DrawError(
                    f"pick {first.number} is still pending: one winner at a time, "
                    "resolve it (presented, no-show or void) before the next draw"
                )
            position = self._free_position()
            if position is None:
                raise DrawError(f"all {self.rules.winners} winners of this draw are drawn")
            attempt = self._draws.get(position, 0)
            changes = [[c, n] for c, n in self._unrecorded()]
            _, bars = self._apply((), sorted(self._staged_bars.items()))
            self._before.clear()
            self._staged_bars.clear()
            tree = self._tree
            if not tree.total:
                self._emit(cmd, cmd.at, cmd.actor, NO_ELIGIBLE, position=position,
                           attempt=attempt, changes=changes, barred=bars)  # fmt: skip
                return DrawOutcome((), no_eligible=True)
            assert self._seed is not None
            number = len(self.picks) + 1
            digest, total = tree.digest(), tree.total
            ticket, rejected = ticket_index(
                self._seed, self.session_id, number, attempt, digest, total
            )
            card, first_ticket = tree.locate(ticket)
            pick = TicketPick(
                number=number, position=position, attempt=attempt, card=card,
                tickets=tree.weight(card), ticket=ticket, first=first_ticket,
                drawn_at=cmd.at, deadline=cmd.at + timedelta(seconds=self.rules.present_seconds),
                bin_count=len(tree), bin_total=total, bin_digest=digest,
            )  # fmt: skip
            self._emit(
                cmd, cmd.at, cmd.actor, PICKED,
                pick=number, position=position, attempt=attempt, ticket=ticket,
                rejected_blocks=rejected, card=card, tickets=pick.tickets, first=first_ticket,
                bin_count=pick.bin_count, bin_total=total, bin_digest=digest,
                changes=changes, barred=bars, deadline=pick.deadline.isoformat(),
            )  # fmt: skip
            self._add_pick(pick)
            return DrawOutcome((), pick=pick)

        return self._run(cmd, ("draw",), action)

    def present(
        self,
        cmd: Command,
        pick: int,
        presenter: Presenter | str,
        document: DocumentType | str,
        last_digits: str,
        receipt: str,
        receipt_ok: bool,
        proxy: Mapping[str, str] | None = None,
    ) -> DrawOutcome:
        """The winner or their proxy came to the stage by the deadline with ID and the
        ticket receipt; `receipt_ok` is the daemon's check of the receipt against the
        ledger (one of the winner's receipts in this bin). The pick becomes verified.

        With presenter "proxy", `proxy` is the nominated proxy as the daemon knows them
        (name, document, last_digits) and the ID seen must be theirs."""
        try:
            who, doc = Presenter(presenter), DocumentType(document)
        except ValueError as e:
            raise DrawError(str(e)) from e
        fingerprint = ("present", pick, who.value, doc.value, last_digits, receipt)

        def action() -> DrawOutcome:
            self._require(SessionState.OPEN)
            p = self._pick(pick)
            if cmd.at > p.deadline:
                raise DrawError(
                    f"pick {pick} presented at {cmd.at.isoformat()}, after its deadline "
                    f"{p.deadline.isoformat()}"
                )
            if p.state != PickState.PENDING:
                raise DrawError(f"pick {pick} is {p.state}, not pending")
            try:
                digits = check_digits(last_digits)
            except ValueError as e:
                raise DrawError(str(e)) from e
            _text("receipt", receipt)
            if receipt_ok is not True:
                raise DrawError(
                    f"receipt {receipt!r} is not one of the winner's receipts in bin {self.bin_id}"
                )
            seen = self._proxy(p, who, doc, digits, proxy)
            p.presented = Presentation(who, doc, digits, receipt, seen, cmd.at)
            self._set_state(p, PickState.VERIFIED, cmd.at)
            self._emit(cmd, cmd.at, cmd.actor, PRESENTED, pick=pick, position=p.position,
                       card=p.card, presenter=who.value, document=doc.value,
                       last_digits=digits, receipt=receipt, proxy=seen)  # fmt: skip
            return DrawOutcome((), pick=p)

        return self._run(cmd, fingerprint, action)

    def _proxy(
        self,
        p: TicketPick,
        who: Presenter,
        doc: DocumentType,
        digits: str,
        proxy: Mapping[str, str] | None,
    ) -> dict[str, str] | None:
        """The proxy's details, checked: nominated, the ID seen is theirs, one participant."""
        if who == Presenter.WINNER:
            if proxy is not None:
                raise DrawError("a winner presenting in person has no proxy")
            return None
        if proxy is None:
            raise DrawError("a proxy presents only with the nominated proxy's details")
        try:
            seen = {
                "name": _text("proxy name", proxy["name"]).strip(),
                "document": DocumentType(proxy["document"]).value,
                "last_digits": check_digits(proxy["last_digits"]),
            }
        except (KeyError, ValueError) as e:
            raise DrawError(f"proxy details need name, document and last_digits: {e}") from e
        if (seen["document"], seen["last_digits"]) != (doc.value, digits):
            raise DrawError("the ID seen is not the nominated proxy's document")
        key = (seen["name"].casefold(), seen["document"], seen["last_digits"])
        for other in self.picks:
            known = other.presented.proxy_key() if other.presented else None
            if other.card != p.card and other.state in WON and known == key:
                raise DrawError(
                    f"this proxy stood in for pick {other.number}: a proxy represents "
                    "one participant"
                )
        return seen

    def add_on(self, cmd: Command, pick: int, add_on_id: str, verified: bool) -> DrawOutcome:
        """An add-on the host checked for a verified winner, once each, before the award."""

        def action() -> DrawOutcome:
            self._require(SessionState.OPEN)
            p = self._pick(pick)
            spec = self.rules.add_on(add_on_id)
            if spec is None:
                raise DrawError(f"the draw has no add-on {add_on_id!r}")
            if p.state != PickState.VERIFIED:
                raise DrawError(f"pick {pick} is {p.state}: add-ons are for verified winners "
                                "before the award")  # fmt: skip
            if add_on_id in p.add_ons:
                raise DrawError(f"add-on {add_on_id!r} is already recorded for pick {pick}")
            p.add_ons[add_on_id] = bool(verified)
            prizes = [x.to_dict() for x in spec.prizes] if verified else []
            self._emit(cmd, cmd.at, cmd.actor, ADD_ON, pick=pick, position=p.position,
                       card=p.card, add_on=add_on_id, verified=bool(verified),
                       prizes=prizes)  # fmt: skip
            return DrawOutcome((), pick=p)

        return self._run(cmd, ("add_on", pick, add_on_id, bool(verified)), action)

    def award(
        self,
        cmd: Command,
        pick: int,
        prize: PrizeSpec,
        source: AwardSource | str,
        ref: str,
        lines: tuple[PrizeSpec, ...] = (),
    ) -> DrawOutcome:
        """Record a verified winner's prize: the rules' prize for the position, a
        device's reveal (ref = the device's reference), or a stage game's awards (ref =
        the game's stream, `lines` = each prize it gave this winner, `prize` the first).
        The letter is the winner's: the record names the winner's card even when a proxy
        stood in."""
        try:
            src = AwardSource(source)
        except ValueError as e:
            raise DrawError(
                f"prize source must be 'position', 'device' or 'stage', not {source!r}"
            ) from e
        lines = tuple(lines)

        def action() -> DrawOutcome:
            self._require(SessionState.OPEN)
            p = self._pick(pick)
            if p.state != PickState.VERIFIED:
                raise DrawError(f"pick {pick} is {p.state}: only a presented winner is awarded")
            if not isinstance(prize, PrizeSpec) or not all(isinstance(x, PrizeSpec) for x in lines):
                raise DrawError("prize must be a PrizeSpec")
            if src == AwardSource.POSITION:
                expected = self.rules.prize_for(p.position)
                if expected is None:
                    raise DrawError(f"position {p.position} has no prize in the rules: a "
                                    "device reveals it")  # fmt: skip
                if prize != expected:
                    raise DrawError(f"position {p.position}'s prize is {expected}, not {prize}")
            elif not isinstance(ref, str) or not ref.strip():
                raise DrawError(f"a {src.value}'s prize needs the {src.value}'s reference")
            if (src == AwardSource.STAGE) != bool(lines):
                raise DrawError("a stage game's award, and only it, lists its prize lines")
            if lines and prize != lines[0]:
                raise DrawError("a stage game's award is its first line")
            p.award = Award(prize, src, ref, cmd.at, lines)
            self._set_state(p, PickState.AWARDED, cmd.at)
            extra: dict[str, Any] = {"lines": [x.to_dict() for x in lines]} if lines else {}
            self._emit(cmd, cmd.at, cmd.actor, AWARDED, pick=pick, position=p.position,
                       card=p.card, winner_card=p.card, prize=prize.to_dict(), source=src.value,
                       ref=ref, add_ons=[a for a, ok in p.add_ons.items() if ok],
                       **extra)  # fmt: skip
            return DrawOutcome((), pick=p)

        return self._run(cmd, ("award", pick, prize, src.value, ref, lines), action)

    def no_show(self, cmd: Command, pick: int) -> DrawOutcome:
        """The host marks a pending winner absent; the next draw redraws the position."""

        def action() -> DrawOutcome:
            self._require(SessionState.OPEN)
            p = self._pick(pick)
            if p.state != PickState.PENDING:
                raise DrawError(f"pick {pick} is {p.state}, not pending")
            self._no_show(cmd, cmd.at, cmd.actor, p, NoShowReason.HOST)
            return DrawOutcome((), pick=p)

        return self._run(cmd, ("no_show", pick), action)

    def _no_show(
        self, cmd: Command | None, at: datetime, actor: Actor, p: TicketPick, why: NoShowReason
    ) -> None:
        p.reason = why.value
        self._set_state(p, PickState.NO_SHOW, at)
        self._emit(cmd, at, actor, NO_SHOW, pick=p.number, position=p.position, card=p.card,
                   reason=why.value)  # fmt: skip

    def void(self, cmd: Command, pick: int, reason: str) -> DrawOutcome:
        """A pending or verified (not awarded) pick voided with a reason; the position is
        free again."""
        _text("a void's reason", reason)

        def action() -> DrawOutcome:
            self._require(SessionState.OPEN)
            p = self._pick(pick)
            if p.state not in (PickState.PENDING, PickState.VERIFIED):
                raise DrawError(f"pick {pick} is {p.state}: only pending or verified picks "
                                "are voided")  # fmt: skip
            p.reason = reason
            self._set_state(p, PickState.VOID, cmd.at)
            self._emit(cmd, cmd.at, cmd.actor, VOIDED, pick=pick, position=p.position,
                       card=p.card, reason=reason)  # fmt: skip
            return DrawOutcome((), pick=p)

        return self._run(cmd, ("void", pick, reason), action)

    def expire(self, now: datetime) -> list[Record]:
        """Presentation timer: pending picks past their deadline become no-shows."""
        start = len(self.records)
        if self.state == SessionState.OPEN:
            self._expire(now)
        return self.records[start:]

    def _expire(self, now: datetime) -> None:
        for p in list(self._pending.values()):
            if p.deadline < now:  # the deadline itself is still in time
                self._no_show(None, p.deadline, Actor.system(), p, NoShowReason.TIMEOUT)

    def close(self, cmd: Command, force: bool = False) -> DrawOutcome:
        """Close and reveal the seed; a pending pick blocks unless forced (then no-show)."""

        def action() -> DrawOutcome:
            self._require(SessionState.OPEN)
            pending = self.pending()
            if pending and not force:
                raise DrawError(
                    f"pick {pending[0].number} is still pending: resolve it or close with force"
                )
            for p in pending:
                self._no_show(cmd, cmd.at, cmd.actor, p, NoShowReason.CLOSED)
            assert self._seed is not None
            self.state = SessionState.CLOSED
            self._revealed = True
            self._request = None  # requested and never drawn: verify reports it
            self._deferred.clear()
            self._forget_unrecorded()
            self._staged_bars.clear()
            self._emit(cmd, cmd.at, cmd.actor, CLOSED, seed=self._seed.hex(),
                       commitment=self.commitment, picks=len(self.picks),
                       positions_filled=self.positions_filled(), forced=bool(force))  # fmt: skip
            return DrawOutcome(())

        return self._run(cmd, ("close", bool(force)), action)

    # ------------------------------------------------------------------ restore

    @classmethod
    def restore(
        cls,
        session_id: str,
        draw_id: str,
        bin_id: str,
        day: date,
        rules: DrawRules,
        records: Iterable[Record],
        seed: bytes | None,
        rehearsal: bool = False,
        promotion_id: str = "",
    ) -> TicketDrawSession:
        """Rebuild a draw from its journal after a restart.

        Picks, bars, deadlines and the command ids already answered come back exactly as
        journaled. Once opened, the journal's own bin id, day and rules stand (a draw
        keeps the rules it opened with, whatever the config says now), each pick's
        recorded bin is checked against the rebuilt one, and the seed (unsealed by the
        daemon) must match the commitment."""
        s = cls(session_id, draw_id, bin_id, day, rules, rehearsal, promotion_id)
        by_command: dict[str, list[Record]] = {}
        for rec in records:
            if rec.session_id != session_id:
                raise DrawError(f"record of session {rec.session_id} given to {session_id}")
            s._replay(rec)
            s.records.append(rec)
            cid = rec.data.get("command_id")
            if cid is not None:
                by_command.setdefault(cid, []).append(rec)
        if s.state != SessionState.SCHEDULED:
            if seed is None or len(seed) != SEED_BYTES or commitment(seed) != s.commitment:
                raise DrawError(f"draw {draw_id}: seed does not match its commitment")
            s._seed = seed
            s._revealed = s.state == SessionState.CLOSED
        for cid, recs in by_command.items():
            if recs[-1].type == REQUESTED:
                continue  # its winner was never committed: a retry draws from the request
            s._done[cid] = Done(_fingerprint(recs), s._outcome(recs))
        return s

    def _replay(self, rec: Record) -> None:
        d = rec.data
        t = rec.type
        if t == OPENED:
            self.state = SessionState.OPEN
            self.commitment = d["commitment"]
            self.derivation = d.get("derivation", DERIVATION_V2)
            w = d.get("witness")
            self.witness = WitnessAtOpen.from_dict(w) if isinstance(w, dict) else None
            self.bin_id = d["bin_id"]
            self.promotion_id = d.get("promotion_id", self.promotion_id)
            self.day = date.fromisoformat(d["day"])
            self.rules = DrawRules.from_dict(d["rules"])
            cards = [c for c, _ in d["bin"]]
            weights = [w for _, w in d["bin"]]
            self._bin = dict(zip(cards, weights, strict=True))
            self._tree = SumTree.from_sorted(cards, weights)  # checked against its digest
            if self._tree.digest() != d["bin_digest"]:
                raise DrawError(f"draw {self.draw_id}: the journal's bin does not match its digest")
            self._external = dict(d["barred"])
            for card in self._external:
                self._tree.discard(card)
        elif t == REQUESTED:
            self._apply([(c, w) for c, w in d["changes"]], d["barred"].items())
            self._requests += 1
            self._request = TicketRequest(
                d["pick"], d["position"], d["attempt"], d["request"], d["bin_count"],
                d["bin_total"], d["bin_digest"],
            )  # fmt: skip
            if self._tree.digest() != d["bin_digest"]:
                raise DrawError(f"request {d['request']}: the journal disagrees with its bin")
        elif t in (PICKED, NO_ELIGIBLE):
            if t == NO_ELIGIBLE or self.derivation == DERIVATION_V2:
                self._apply([(c, w) for c, w in d["changes"]], d["barred"].items())
            self._request = None
            if t == NO_ELIGIBLE:
                return
            tree = self._tree
            if tree.digest() != d["bin_digest"] or tree.locate(d["ticket"])[0] != d["card"]:
                raise DrawError(f"pick {d['pick']}: the journal disagrees with its bin")
            self._add_pick(
                TicketPick(
                    number=d["pick"], position=d["position"], attempt=d["attempt"],
                    card=d["card"], tickets=d["tickets"], ticket=d["ticket"], first=d["first"],
                    drawn_at=rec.at, deadline=datetime.fromisoformat(d["deadline"]),
                    bin_count=d["bin_count"], bin_total=d["bin_total"],
                    bin_digest=d["bin_digest"],
                )
            )  # fmt: skip
        elif t == CLOSED:
            self.state = SessionState.CLOSED
            self._request = None
        elif t in (PRESENTED, ADD_ON, AWARDED, NO_SHOW, VOIDED):
            self._replay_resolution(rec)

    def _replay_resolution(self, rec: Record) -> None:
        d = rec.data
        t = rec.type
        p = self._pick(d["pick"])
        if t == PRESENTED:
            p.presented = Presentation(
                Presenter(d["presenter"]), DocumentType(d["document"]), d["last_digits"],
                d["receipt"], d["proxy"], rec.at,
            )  # fmt: skip
            self._set_state(p, PickState.VERIFIED, rec.at)
        elif t == ADD_ON:
            p.add_ons[d["add_on"]] = d["verified"]
        elif t == AWARDED:
            lines = tuple(PrizeSpec.from_dict(x) for x in d.get("lines", ()))
            p.award = Award(PrizeSpec.from_dict(d["prize"]), AwardSource(d["source"]), d["ref"],
                            rec.at, lines)  # fmt: skip
            self._set_state(p, PickState.AWARDED, rec.at)
        else:
            p.reason = d["reason"]
            self._set_state(p, PickState.NO_SHOW if t == NO_SHOW else PickState.VOID, rec.at)

    def _outcome(self, recs: list[Record]) -> DrawOutcome:
        last = recs[-1]
        if last.type == NO_ELIGIBLE:
            return DrawOutcome(tuple(recs), no_eligible=True)
        pick = self._pick(last.data["pick"]) if "pick" in last.data else None
        return DrawOutcome(tuple(recs), pick)


def _fingerprint(recs: list[Record]) -> tuple[Any, ...]:
    """The command a group of journaled records answered, as `_run` fingerprints it."""
    last = recs[-1]
    d = last.data
    t = last.type
    if t == OPENED:
        return ("open",)
    if t in (REQUESTED, PICKED, NO_ELIGIBLE):
        return ("draw",)
    if t == PRESENTED:
        return ("present", d["pick"], d["presenter"], d["document"], d["last_digits"],
                d["receipt"])  # fmt: skip
    if t == ADD_ON:
        return ("add_on", d["pick"], d["add_on"], d["verified"])
    if t == AWARDED:
        lines = tuple(PrizeSpec.from_dict(x) for x in d.get("lines", ()))
        return ("award", d["pick"], PrizeSpec.from_dict(d["prize"]), d["source"], d["ref"], lines)
    if t == NO_SHOW:
        return ("no_show", d["pick"])
    if t == VOIDED:
        return ("void", d["pick"], d["reason"])
    if t == CLOSED:
        return ("close", bool(d["forced"]))
    return (t,)


__all__ = [
    "Award",
    "AwardSource",
    "DrawConflict",
    "DrawError",
    "DrawOutcome",
    "NoShowReason",
    "PickState",
    "Presentation",
    "SessionState",
    "TicketDrawSession",
    "TicketPick",
]

"""A RAPS bonus jackpot session: scheduled -> open -> closed, with its picks.

Rules enforced here (seed 003, "Bonus jackpot sessions"):
- quotas per pool (6 slot + 4 table winners by default);
- a player wins at most once per session and a pending player cannot be drawn again;
  a voided player is barred for the rest of the session by default, a no-show only
  when the rules say so (003: "selected more than once, win only once");
- a winner has `claim_seconds` (90) to present, else no-show and a redraw into the
  same slot; pending or verified picks can be voided with a reason, then redrawn;
- between the draw and the ID a pending pick's claim goes drawn -> en route (security
  acknowledges, with the officer's name) -> absent (the winner is not there), and the
  countdown starts at the draw or at absent (`claim_starts`, selector.claims); a winner
  not reached within `max_en_route_seconds` escalates once; an admin may extend a
  running countdown once, with a reason;
- every command carries an id: a retried command returns its first result and
  changes nothing, so a handheld that lost its connection cannot draw twice.

Time and the seed come in as arguments; nothing here reads a clock or an RNG.

Long on purpose: one state machine whose transitions share the session's indexes of
pending picks, attempts and barred cards; split, each half would reach into the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from selector.claims import (
    Claim,
    ClaimError,
    ClaimPhase,
    ClaimStart,
    absent_deadline,
    check_absent,
    check_extension,
    check_officer,
    drawn_deadline,
    escalation_due,
    escalation_reason,
)
from selector.derivation import check_raps_derivation, raps_pick, raps_pool_digest
from selector.events import PoolKind
from selector.fairness import DERIVATION_V1, DERIVATION_V3, SEED_BYTES, commitment
from selector.floor import ELIGIBLE, Floor
from selector.layout import Location
from selector.promotion import SessionRules
from selector.records import Actor, Record
from selector.signatures import SignatureError
from selector.snapshot import PoolSnapshot
from selector.witness import RequestTerms, WitnessAtOpen, WitnessRefused, WitnessReply, pick_mix


class SessionError(ValueError):
    """A command that the session's rules refuse; the message says why."""


class CommandConflict(SessionError):
    """A command id reused for a different command."""


class OutsideWindow(SessionError):
    """A live session opened or drawn outside its window without an override."""


class SessionState(StrEnum):
    SCHEDULED = "scheduled"
    OPEN = "open"
    CLOSED = "closed"


class PickState(StrEnum):
    PENDING = "pending"
    VERIFIED = "verified"
    AWARDED = "awarded"
    NO_SHOW = "no_show"
    VOID = "void"


class PrizeKind(StrEnum):
    CASH = "cash"
    PLUS_PLAY = "plus_play"
    VOUCHER = "voucher"


FILLED = (PickState.PENDING, PickState.VERIFIED, PickState.AWARDED)
WON = (PickState.VERIFIED, PickState.AWARDED)


@dataclass(frozen=True, slots=True)
class Prize:
    amount: int  # minor currency units
    kind: PrizeKind
    envelope: str

    def __post_init__(self) -> None:
        if self.amount < 0:
            raise SessionError("prize amount must be >= 0")
        if not self.envelope:
            raise SessionError("an envelope number is required")


@dataclass(frozen=True, slots=True)
class Command:
    """Who asks, when, and the id that makes a retry harmless."""

    command_id: str
    actor: Actor
    at: datetime


@dataclass(slots=True)
class Pick:
    number: int  # ordinal of the draw in the session, 1-based, redraws included
    kind: str
    slot: int  # position within the pool's quota, 1-based
    attempt: int  # 0 for the first draw into the slot, 1 for its first redraw, ...
    card: str
    location: Location
    display_name: str
    tier: str
    drawn_at: datetime
    deadline: datetime | None  # None while the countdown waits for "absent"
    pool_size: int
    pool_digest: str
    index: int
    state: PickState = PickState.PENDING
    prize: Prize | None = None
    void_reason: str | None = None
    resolved_at: datetime | None = None
    claim: Claim = field(default_factory=Claim)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a command did: its records, and for a draw the pick (or none)."""

    records: tuple[Record, ...]
    pick: Pick | None = None
    no_eligible: bool = False
    replayed: bool = False


@dataclass(slots=True)
class _Request:
    """A draw's pool made durable before its winner is known (`pick.requested`): a retry
    after a failed commit draws from this same pool, so a refused write cannot veto a
    winner and ask again of a changed floor."""

    number: int
    kind: str
    slot: int
    attempt: int
    digest: str
    candidates: PoolSnapshot | None  # None after a restart until the daemon loads it
    left_out: dict[str, int]
    request: int = 0  # v3: the session's count of requests (the witness signs it)
    entry: tuple[int, str] | None = None  # (seq, hash) of its journal entry, once known


@dataclass(slots=True)
class _Done:
    fingerprint: tuple[Any, ...]
    outcome: Outcome


@dataclass
class DrawSession:
    session_id: str
    promotion_id: str
    floor: Floor
    rules: SessionRules = field(default_factory=SessionRules)
    rehearsal: bool = False
    state: SessionState = SessionState.SCHEDULED
    commitment: str | None = None
    picks: list[Pick] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)
    _seed: bytes | None = None
    _revealed: bool = False
    _done: dict[str, _Done] = field(default_factory=dict)
    # indexes over picks, kept in step by _add_pick and _set_state so that a draw costs
    # the same in a session's 1,000th pick as in its first
    _pending: dict[int, Pick] = field(default_factory=dict)  # by number, in draw order
    _slot_last: dict[tuple[str, int], Pick] = field(default_factory=dict)
    _slot_draws: dict[tuple[str, int], int] = field(default_factory=dict)
    _card_picks: dict[str, list[Pick]] = field(default_factory=dict)
    _barred: dict[str, str] = field(default_factory=dict)
    _request: _Request | None = None  # the open pick.requested, at most one
    # how picks are derived (selector.derivation): v3 for a session opened from now on,
    # the opening record's for a session restored (v1 when it names none)
    derivation: str = DERIVATION_V3
    witness: WitnessAtOpen | None = None  # v3: the witness of the open, or none declared
    _requests: int = 0  # pick.requested records so far

    def __post_init__(self) -> None:
        self.floor.promotion(self.promotion_id)  # unknown promotion fails now, not at a pick

    # ------------------------------------------------------------------ helpers

    def _emit(
        self, cmd: Command | None, at: datetime, actor: Actor, type_: str, **data: Any
    ) -> Record:
        base: dict[str, Any] = {"promotion_id": self.promotion_id, "rehearsal": self.rehearsal}
        if cmd is not None:
            base["command_id"] = cmd.command_id
        base.update(data)
        rec = Record(type_, self.session_id, at, actor, base)
        self.records.append(rec)
        return rec

    def _run(self, cmd: Command, fingerprint: tuple[Any, ...], action: Any) -> Outcome:
        done = self._done.get(cmd.command_id)
        if done is not None:
            if done.fingerprint != fingerprint:
                raise CommandConflict(
                    f"command id {cmd.command_id!r} was already used for {done.fingerprint[0]}"
                )
            o = done.outcome
            return Outcome(o.records, o.pick, o.no_eligible, replayed=True)
        start = len(self.records)
        result: Outcome = action()
        outcome = Outcome(tuple(self.records[start:]), result.pick, result.no_eligible)
        self._done[cmd.command_id] = _Done(fingerprint, outcome)
        return outcome

    def _require(self, state: SessionState) -> None:
        if self.state != state:
            raise SessionError(f"session {self.session_id} is {self.state}, not {state}")

    def _pick(self, number: int) -> Pick:
        if not 1 <= number <= len(self.picks):
            raise SessionError(f"session {self.session_id} has no pick {number}")
        return self.picks[number - 1]

    def answered(self, command_id: str) -> bool:
        """Whether a command with this id has already been carried out."""
        return command_id in self._done

    @property
    def revealed_seed(self) -> bytes | None:
        return self._seed if self._revealed else None

    def slots_filled(self, kind: PoolKind | str) -> int:
        return len(self._filled(PoolKind(kind).value))

    def _filled(self, kind: str) -> set[int]:
        # a slot is redrawn only once its pick is no longer filled: only its last can be
        return {slot for (k, slot), p in self._slot_last.items() if k == kind and p.state in FILLED}

    def barred(self) -> dict[str, str]:
        """Cards this session no longer draws, with the reason (first reason wins)."""
        return dict(self._barred)

    def _add_pick(self, pick: Pick) -> None:
        self.picks.append(pick)
        key = (pick.kind, pick.slot)
        self._slot_last[key] = pick
        self._slot_draws[key] = self._slot_draws.get(key, 0) + 1
        self._card_picks.setdefault(pick.card, []).append(pick)
        if pick.state == PickState.PENDING:
            self._pending[pick.number] = pick
        self._rebar(pick.card)

    def _set_state(self, pick: Pick, state: PickState, at: datetime) -> None:
        pick.state = state
        pick.resolved_at = at
        if state != PickState.PENDING:
            self._pending.pop(pick.number, None)
        self._rebar(pick.card)

    def _rebar(self, card: str) -> None:
        """Whether and why a card is barred, from its own picks in draw order."""
        reason: str | None = None
        for p in self._card_picks.get(card, ()):
            if p.state in WON:
                now = "already_won"
            elif p.state == PickState.PENDING:
                now = "pending"
            elif p.state == PickState.NO_SHOW and self.rules.exclude_no_shows:
                now = "no_show"
            elif p.state == PickState.VOID and self.rules.exclude_voided:
                now = "voided"
            else:
                continue
            if reason not in ("already_won", "pending"):
                reason = now
        if reason is None:
            self._barred.pop(card, None)
        else:
            self._barred[card] = reason

    # ----------------------------------------------------------------- commands

    def _in_window(self, cmd: Command, action: str, override: str | None) -> None:
        """003: a live session is opened and drawn only inside its window. An override
        (an admin's typed reason: technical failure, rescheduling, 003 rule 20) goes in
        the journal first, so the inspector sees the exception, never a silent one."""
        window = self.rules.window
        if window is None or self.rehearsal or window[0] <= cmd.at < window[1]:
            return
        start, end = window
        if override is None or not override.strip():
            raise OutsideWindow(
                f"session {self.session_id} is {action} only from {start:%a %d %b %Y %H:%M} "
                f"until {end:%H:%M} ({start.tzinfo}); an admin may override with a reason"
            )
        bounds = [start.isoformat(), end.isoformat()]
        self._emit(
            cmd,
            cmd.at,
            cmd.actor,
            "session.override",
            action=action,
            reason=override.strip(),
            window=bounds,
        )

    def open(
        self,
        cmd: Command,
        seed: bytes,
        override: str | None = None,
        *,
        derivation: str = DERIVATION_V3,
        witness: WitnessAtOpen | None = None,
    ) -> Outcome:
        """Open with a fresh secret seed; publishes only its commitment.

        Derivation v3 names the session's witness (its public key and its receipt of this
        open, checked here), or none: the session is then declared unwitnessed."""
        if len(seed) != SEED_BYTES:
            raise SessionError(f"seed must be {SEED_BYTES} bytes")
        try:
            derivation = check_raps_derivation(derivation)
        except ValueError as e:
            raise SessionError(str(e)) from e
        if witness is not None:
            if derivation != DERIVATION_V3:
                raise SessionError("only derivation v3 has a witness")
            try:
                witness.check_receipt(self.session_id, commitment(seed), derivation)
            except SignatureError as e:
                raise SessionError(f"the witness's receipt of the open: {e}") from e

        def action() -> Outcome:
            self._require(SessionState.SCHEDULED)
            self._in_window(cmd, "opened", override)
            self._seed = seed
            self.commitment = commitment(seed)
            self.state = SessionState.OPEN
            self.derivation = derivation
            self.witness = witness
            extra: dict[str, Any] = {"derivation": derivation}
            if derivation == DERIVATION_V3:
                extra["witness"] = None if witness is None else witness.to_dict()
            self._emit(
                cmd,
                cmd.at,
                cmd.actor,
                "session.opened",
                commitment=self.commitment,
                quotas={str(k): v for k, v in self.rules.quotas.items()},
                claim_seconds=self.rules.claim_seconds,
                exclude_no_shows=self.rules.exclude_no_shows,
                exclude_voided=self.rules.exclude_voided,
                claim_starts=self.rules.claim_starts.value,
                max_en_route_seconds=self.rules.max_en_route_seconds,
                **extra,
            )
            return Outcome(())

        return self._run(cmd, ("open",), action)

    def draw(self, cmd: Command, kind: PoolKind | str, override: str | None = None) -> Outcome:
        """Draw the next winner of a pool into its lowest free slot: `request` then
        `complete`, which the daemon commits one after the other."""
        first = self.request(cmd, kind, override)
        if first.replayed:
            return first
        second = self.complete(cmd, kind)
        both = Outcome(
            first.records + second.records, second.pick, second.no_eligible, second.replayed
        )
        if not second.replayed:  # a retry answers with both halves, as after a restart
            self._done[cmd.command_id] = _Done(("draw", PoolKind(kind).value), both)
        return both

    def request(self, cmd: Command, kind: PoolKind | str, override: str | None = None) -> Outcome:
        """The first half of a draw: the pool it draws from, as `pick.requested`. A pool
        already requested for this kind is drawn from again (no new record); one of the
        other kind is abandoned (`pick.abandoned`, which verify reports)."""
        k = PoolKind(kind).value
        done = self._done.get(cmd.command_id)
        if done is not None:
            return self._run(cmd, ("draw", k), lambda: done.outcome)  # replayed, or a conflict
        start = len(self.records)
        self._require(SessionState.OPEN)
        self._expire(cmd.at)
        quota = self.rules.quotas.get(PoolKind(k), 0)
        filled = self._filled(k)
        free = [s for s in range(1, quota + 1) if s not in filled]
        if not free:
            raise SessionError(f"all {quota} {k} winners of this session are drawn")
        self._in_window(cmd, "drawn", override)  # an override is for a real draw
        req = self._request
        if req is not None and req.kind != k:
            self._emit(
                cmd,
                cmd.at,
                cmd.actor,
                "pick.abandoned",
                pick=req.number,
                kind=req.kind,
                slot=req.slot,
                attempt=req.attempt,
                pool_digest=req.digest,
                reason=f"a {k} draw was asked for",
            )
            self._request = req = None
        if req is None:
            slot = free[0]
            self._request = self._new_request(cmd, k, slot, self._slot_draws.get((k, slot), 0))
        return Outcome(tuple(self.records[start:]))

    def complete(
        self, cmd: Command, kind: PoolKind | str, witness: WitnessReply | None = None
    ) -> Outcome:
        """The second half of a draw: the winner from the requested pool (v3: with the
        witness's signature of the request, or none when the session has no witness or
        may fall back without it)."""
        k = PoolKind(kind).value

        def action() -> Outcome:
            self._require(SessionState.OPEN)
            req = self._request
            if req is None or req.kind != k:
                raise SessionError(f"no {k} draw was requested in session {self.session_id}")
            if req.candidates is None:
                raise SessionError("the requested pool is not loaded; try again")
            mix, witnessed = self._witnessed(req, witness)
            self._request = None
            return self._draw_into(cmd, req, mix, witnessed)

        return self._run(cmd, ("draw", k), action)

    def needs_witness(self) -> bool:
        """Whether the open request's winner waits for the witness's signature."""
        r = self._request
        return (
            r is not None
            and self.derivation == DERIVATION_V3
            and self.witness is not None
            and bool(r.candidates)
        )

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

    def _terms(self, r: _Request, seq: int, entry_hash: str) -> RequestTerms:
        site = self.witness.site if self.witness is not None else ""
        return RequestTerms(
            site, self.session_id, r.request, r.number, r.attempt, r.kind, self.derivation,
            r.digest, self.commitment or "", seq, entry_hash,
        )  # fmt: skip

    def _witnessed(
        self, req: _Request, reply: WitnessReply | None
    ) -> tuple[bytes, dict[str, Any] | None]:
        """The witness's mix for a pick and what its record says about it."""
        witnessed = self.derivation == DERIVATION_V3 and bool(req.candidates)
        try:
            return pick_mix(
                self.witness if witnessed else None,
                req.request,
                req.entry,
                reply,
                lambda seq, entry_hash: self._terms(req, seq, entry_hash),
            )
        except WitnessRefused as e:
            raise SessionError(str(e)) from e

    def _new_request(self, cmd: Command, kind: str, slot: int, attempt: int) -> _Request:
        floor = self.floor
        floor.advance(cmd.at)
        pool = floor.pool(self.promotion_id, kind)
        barred = self._barred
        if self.derivation == DERIVATION_V1:
            candidates, digest = floor.pool_snapshot(self.promotion_id, kind, barred)
        else:
            candidates, digest = floor.pool_tree_snapshot(self.promotion_id, kind, barred)
        left_out = dict(floor.left_out_counts(self.promotion_id, kind))
        for card, reason in barred.items():
            if card in pool:  # only those the floor would otherwise have offered
                left_out[reason] = left_out.get(reason, 0) + 1
        number = len(self.picks) + 1
        self._requests += 1
        counted = {"request": self._requests} if self.derivation == DERIVATION_V3 else {}
        self._emit(
            cmd,
            cmd.at,
            cmd.actor,
            "pick.requested",
            pick=number,
            kind=kind,
            slot=slot,
            attempt=attempt,
            **counted,
            pool_size=len(candidates),
            pool_digest=digest,
            left_out=left_out,
            pool=candidates,
        )
        return _Request(number, kind, slot, attempt, digest, candidates, left_out, self._requests)

    def open_request(self) -> tuple[int, str, str] | None:
        """(pick, kind, pool digest) of the draw requested and not drawn, if any."""
        r = self._request
        return None if r is None else (r.number, r.kind, r.digest)

    def load_request_pool(self, cards: Sequence[str]) -> None:
        """After a restart: the requested pool, read back from the journal by digest."""
        r = self._request
        if r is None or raps_pool_digest(self.derivation, cards) != r.digest:
            raise SessionError("the pool read back does not match the requested digest")
        r.candidates = PoolSnapshot(list(cards))

    def _draw_into(
        self, cmd: Command, req: _Request, mix: bytes, witnessed: dict[str, Any] | None
    ) -> Outcome:
        floor = self.floor
        floor.advance(cmd.at)
        kind, slot, attempt, number = req.kind, req.slot, req.attempt, req.number
        assert req.candidates is not None
        candidates, digest, left_out = req.candidates, req.digest, req.left_out
        assert self._seed is not None
        v3 = {"witness": witnessed} if self.derivation == DERIVATION_V3 else {}
        while candidates:
            index, rejected = raps_pick(
                self.derivation, self._seed, self.session_id, number, attempt, digest,
                len(candidates), mix,
            )  # fmt: skip
            card = candidates[index]
            # eligibility and exclusions are checked again, fresh, for the winner
            verdict = floor.check(self.promotion_id, card)
            location = floor.location(card)
            if verdict == ELIGIBLE and location is not None and location.kind == kind:
                break
            self._emit(
                cmd,
                cmd.at,
                cmd.actor,
                "pick.recheck_failed",
                pick=number,
                kind=kind,
                card=card,
                reason=verdict,
                pool_digest=digest,
            )
            candidates = candidates.without(index)  # not the snapshot it was taken as
            digest = raps_pool_digest(self.derivation, candidates)
        else:
            self._emit(
                cmd,
                cmd.at,
                cmd.actor,
                "pick.no_eligible",
                pick=number,
                kind=kind,
                slot=slot,
                attempt=attempt,
                pool_size=0,
                pool_digest=raps_pool_digest(self.derivation, []),
                left_out=left_out,
                **v3,
            )
            return Outcome((), no_eligible=True)
        profile = floor.profile(card)
        assert profile is not None
        deadline = drawn_deadline(self.rules.claim_starts, cmd.at, self.rules.claim_seconds)
        pick = Pick(
            number=number,
            kind=kind,
            slot=slot,
            attempt=attempt,
            card=card,
            location=location,
            display_name=profile.display_name,
            tier=profile.tier.value,
            drawn_at=cmd.at,
            deadline=deadline,
            pool_size=len(candidates),
            pool_digest=digest,
            index=index,
        )
        self._add_pick(pick)
        self._emit(
            cmd,
            cmd.at,
            cmd.actor,
            "pick.drawn",
            pick=number,
            kind=kind,
            slot=slot,
            attempt=attempt,
            card=card,
            location=location.to_dict(),
            display_name=pick.display_name,
            tier=pick.tier,
            pool_size=len(candidates),
            pool_digest=digest,
            index=index,
            rejected_blocks=rejected,
            deadline=None if deadline is None else deadline.isoformat(),
            left_out=left_out,
            **v3,
            pool=candidates,
        )
        return Outcome((), pick=pick)

    def _resolve(
        self,
        cmd: Command,
        number: int,
        allowed: tuple[PickState, ...],
        new: PickState,
        type_: str,
        **data: Any,
    ) -> Pick:
        pick = self._live_pick(cmd, number)
        if pick.state not in allowed:
            raise SessionError(f"pick {number} is {pick.state}; cannot mark it {new}")
        self._set_state(pick, new, cmd.at)
        self._emit(
            cmd,
            cmd.at,
            cmd.actor,
            type_,
            pick=number,
            kind=pick.kind,
            slot=pick.slot,
            card=pick.card,
            **data,
        )
        return pick

    def _live_pick(self, cmd: Command, number: int) -> Pick:
        """A pick about to be acted on, once the claim timer and the exclusions are up to
        date (a winner cannot be verified after the deadline even if the tick was late)."""
        self._require(SessionState.OPEN)
        self._expire(cmd.at)
        self._void_excluded(cmd.at)
        pick = self._pick(number)
        if pick.state == PickState.VOID and (pick.void_reason or "").startswith("excluded: "):
            raise SessionError(
                f"pick {number}'s winner is {pick.void_reason}: the pick is void, its slot "
                "free to draw again"
            )
        return pick

    def _claim_step(
        self, cmd: Command, number: int, step: str, check: Any, type_: str, **data: Any
    ) -> Outcome:
        """A step of a pending pick's claim (selector.claims): checked, then journaled."""
        pick = self._live_pick(cmd, number)
        if pick.state != PickState.PENDING:
            raise SessionError(f"pick {number} is {pick.state}: no {step} any more")
        try:
            more = check(pick)
        except ClaimError as e:
            raise SessionError(f"pick {number}: {e}") from None
        self._emit(
            cmd,
            cmd.at,
            cmd.actor,
            type_,
            pick=number,
            kind=pick.kind,
            slot=pick.slot,
            card=pick.card,
            **data,
            **more,
        )
        return Outcome((), pick=pick)

    def en_route(self, cmd: Command, number: int, officer: str) -> Outcome:
        """Security acknowledges a winner: `officer` is on the way (or takes it over)."""
        name = " ".join(officer.split())

        def check(pick: Pick) -> dict[str, Any]:
            claim = pick.claim
            before = claim.officer
            check_officer(claim, name)
            claim.phase, claim.officer, claim.en_route_at = ClaimPhase.EN_ROUTE, name, cmd.at
            return {"officer": name, "previous_officer": before}

        return self._run(
            cmd,
            ("en_route", number, name),
            lambda: self._claim_step(cmd, number, "en route", check, "pick.en_route"),
        )

    def absent(self, cmd: Command, number: int) -> Outcome:
        """Arrived, the winner is not there: the PA calls them, and in "absent" mode their
        countdown starts now (the record carries the deadline)."""

        def check(pick: Pick) -> dict[str, Any]:
            check_absent(pick.claim)
            rules = self.rules
            pick.deadline = absent_deadline(
                rules.claim_starts, cmd.at, rules.claim_seconds, pick.deadline
            )
            pick.claim.phase, pick.claim.absent_at = ClaimPhase.ABSENT, cmd.at
            assert pick.deadline is not None
            return {"deadline": pick.deadline.isoformat()}

        return self._run(
            cmd,
            ("absent", number),
            lambda: self._claim_step(cmd, number, "absent", check, "pick.absent"),
        )

    def extend(self, cmd: Command, number: int, seconds: float, reason: str) -> Outcome:
        """A supervisor's one extension of a running countdown, with the reason."""
        why = " ".join(reason.split())

        def check(pick: Pick) -> dict[str, Any]:
            claim = pick.claim
            before = pick.deadline
            pick.deadline, _ = check_extension(claim, before, seconds, why)
            claim.extended_seconds, claim.extended_reason = seconds, why
            claim.extended_by = cmd.actor.user
            assert before is not None
            return {
                "seconds": seconds,
                "reason": why,
                "previous_deadline": before.isoformat(),
                "deadline": pick.deadline.isoformat(),
            }

        return self._run(
            cmd,
            ("extend", number, seconds, why),
            lambda: self._claim_step(cmd, number, "extension", check, "pick.extended"),
        )

    def verify(self, cmd: Command, number: int) -> Outcome:
        """The winner presented with ID inside the claim window."""
        return self._run(
            cmd,
            ("verify", number),
            lambda: Outcome(
                (),
                pick=self._resolve(
                    cmd, number, (PickState.PENDING,), PickState.VERIFIED, "pick.verified"
                ),
            ),
        )

    def award(self, cmd: Command, number: int, prize: Prize) -> Outcome:
        """Record the envelope the verified winner picked."""

        def action() -> Outcome:
            pick = self._resolve(
                cmd,
                number,
                (PickState.VERIFIED,),
                PickState.AWARDED,
                "pick.awarded",
                amount=prize.amount,
                prize_kind=prize.kind.value,
                envelope=prize.envelope,
            )
            pick.prize = prize
            return Outcome((), pick=pick)

        return self._run(cmd, ("award", number, prize), action)

    def no_show(self, cmd: Command, number: int) -> Outcome:
        """Staff mark a winner who will not present; the slot is redrawn next."""
        return self._run(
            cmd,
            ("no_show", number),
            lambda: Outcome(
                (),
                pick=self._resolve(
                    cmd, number, (PickState.PENDING,), PickState.NO_SHOW, "pick.no_show", by="staff"
                ),
            ),
        )

    def void(self, cmd: Command, number: int, reason: str) -> Outcome:
        if not reason.strip():
            raise SessionError("a void needs a reason")

        def action() -> Outcome:
            pick = self._resolve(
                cmd,
                number,
                (PickState.PENDING, PickState.VERIFIED),
                PickState.VOID,
                "pick.voided",
                reason=reason,
            )
            pick.void_reason = reason
            return Outcome((), pick=pick)

        return self._run(cmd, ("void", number, reason), action)

    def timer_due(self, now: datetime) -> bool:
        """Whether `expire(now)` has something to do (the daemon's tick asks first)."""
        if self.state != SessionState.OPEN:
            return False
        return self._next_due(now) is not None or bool(self.excluded_winners())

    def expire(self, now: datetime) -> list[Record]:
        """Claim timer: pending picks past their deadline become no-shows, winners not
        reached in time escalate; and a winner excluded since the draw (self-exclusion,
        refusal of entry, a block) is voided."""
        start = len(self.records)
        if self.state == SessionState.OPEN:
            self._expire(now)
            self._void_excluded(now)
        return self.records[start:]

    def excluded_winners(self) -> list[Pick]:
        """Pending or verified (not yet awarded) picks whose winner is now excluded."""
        return [p for p in self._claimable() if self._exclusion(p.card) is not None]

    def _claimable(self) -> list[Pick]:
        verified = [p for p in self._slot_last.values() if p.state == PickState.VERIFIED]
        return [*self._pending.values(), *verified]

    def _exclusion(self, card: str) -> str | None:
        profile = self.floor.profile(card)
        if profile is None or not profile.exclusions:
            return None
        return sorted(e.value for e in profile.exclusions)[0]

    def _void_excluded(self, now: datetime) -> None:
        """An exclusion that arrives while a winner is pending or verified stops the win:
        the pick is voided with the exclusion as its reason (the slot is drawn again)."""
        for pick in self.excluded_winners():
            reason = f"excluded: {self._exclusion(pick.card)}"
            self._set_state(pick, PickState.VOID, now)
            pick.void_reason = reason
            self._emit(
                None,
                now,
                Actor.system("exclusion"),
                "pick.voided",
                pick=pick.number,
                kind=pick.kind,
                slot=pick.slot,
                card=pick.card,
                reason=reason,
            )

    def _next_due(self, now: datetime) -> tuple[datetime, int, int, Pick] | None:
        """The claim timer's earliest step due by `now`: (when, 0 no-show / 1 escalation,
        pick number, pick); a no-show goes first at the same instant."""
        due: list[tuple[datetime, int, int, Pick]] = []
        limit = self.rules.max_en_route_seconds
        for pick in self._pending.values():
            if pick.deadline is not None and pick.deadline <= now:
                due.append((pick.deadline, 0, pick.number, pick))
            at = escalation_due(pick.claim, pick.drawn_at, limit)
            if at is not None and at <= now:
                due.append((at, 1, pick.number, pick))
        return min(due, key=lambda d: d[:3]) if due else None

    def _expire(self, now: datetime) -> None:
        """Every claim-timer step due by `now`, in time order, each at its own time."""
        while (due := self._next_due(now)) is not None:
            at, what, _, pick = due
            data: dict[str, Any] = {"pick": pick.number, "kind": pick.kind}
            data.update(slot=pick.slot, card=pick.card)
            if what == 0:
                self._set_state(pick, PickState.NO_SHOW, at)
                self._emit(None, at, Actor.system(), "pick.no_show", **data, by="claim_timer")
                continue
            claim = pick.claim
            reason = escalation_reason(claim)
            claim.escalated_at = at
            since = claim.en_route_at if claim.phase == ClaimPhase.EN_ROUTE else pick.drawn_at
            assert since is not None
            self._emit(
                None,
                at,
                Actor.system("escalation"),
                "pick.escalated",
                **data,
                reason=reason,
                officer=claim.officer,
                since=since.isoformat(),
                limit_seconds=self.rules.max_en_route_seconds,
            )

    def pending(self) -> list[Pick]:
        return list(self._pending.values())

    def close(self, cmd: Command, force: bool = False) -> Outcome:
        """Close and reveal the seed; pending picks block unless forced (then voided)."""

        def action() -> Outcome:
            self._require(SessionState.OPEN)
            self._expire(cmd.at)
            self._void_excluded(cmd.at)  # before the pending ones are listed and voided
            pending = self.pending()
            if pending and not force:
                raise SessionError(
                    f"{len(pending)} pick(s) still pending: resolve them or close with force"
                )
            for pick in pending:
                self._resolve(
                    cmd,
                    pick.number,
                    (PickState.PENDING,),
                    PickState.VOID,
                    "pick.voided",
                    reason="session closed",
                )
                pick.void_reason = "session closed"
            assert self._seed is not None
            self.state = SessionState.CLOSED
            self._revealed = True
            summary = {s.value: sum(1 for p in self.picks if p.state == s) for s in PickState}
            self._emit(
                cmd,
                cmd.at,
                cmd.actor,
                "session.closed",
                seed=self._seed.hex(),
                commitment=self.commitment,
                picks=len(self.picks),
                outcomes=summary,
                force=force,
            )
            return Outcome(())

        return self._run(cmd, ("close", force), action)

    # ------------------------------------------------------------------ restore

    @classmethod
    def restore(
        cls,
        session_id: str,
        promotion_id: str,
        floor: Floor,
        rules: SessionRules,
        records: list[Record],
        seed: bytes | None,
        rehearsal: bool = False,
    ) -> DrawSession:
        """Rebuild a session from its journal after a restart.

        Picks, their states and deadlines, and the command ids already answered come
        back exactly as journaled; the seed (unsealed by the daemon) must match the
        commitment, so a restart cannot change what was promised at open.
        """
        s = cls(session_id, promotion_id, floor, rules, rehearsal)
        by_command: dict[str, list[Record]] = {}
        for rec in records:
            if rec.session_id != session_id:
                raise SessionError(f"record of session {rec.session_id} given to {session_id}")
            s._replay(rec)
            s.records.append(rec)
            cid = rec.data.get("command_id")
            if cid is not None:
                by_command.setdefault(cid, []).append(rec)
        if s.state != SessionState.SCHEDULED:
            if seed is None or commitment(seed) != s.commitment:
                raise SessionError(f"session {session_id}: seed does not match its commitment")
            s._seed = seed
            s._revealed = s.state == SessionState.CLOSED
        for cid, recs in by_command.items():
            if recs[-1].type in DRAW_FIRST_HALF:
                continue  # its draw was never committed: a retry draws from the request
            s._done[cid] = _Done(s._fingerprint(recs), s._outcome(recs))
        return s

    def rolled_back(self, keep: int) -> DrawSession:
        """This session as it was after its first `keep` records (an undone command)."""
        records = self.records[:keep]
        opened = any(r.type == "session.opened" for r in records)
        return DrawSession.restore(
            self.session_id,
            self.promotion_id,
            self.floor,
            self.rules,
            records,
            self._seed if opened else None,
            rehearsal=self.rehearsal,
        )

    def _replay(self, rec: Record) -> None:
        d = rec.data
        t = rec.type
        if t == "session.opened":
            self.state = SessionState.OPEN
            self.commitment = d["commitment"]
            self.derivation = check_raps_derivation(d.get("derivation", DERIVATION_V1))
            w = d.get("witness")
            self.witness = WitnessAtOpen.from_dict(w) if isinstance(w, dict) else None
            # what the session opened as, whatever the schedule or a config says later
            self.rehearsal = bool(d.get("rehearsal", self.rehearsal))
            self.rules = replace(  # a journal older than the claim steps: at the draw
                self.rules,
                claim_seconds=d.get("claim_seconds", self.rules.claim_seconds),
                claim_starts=ClaimStart(d.get("claim_starts", ClaimStart.DRAW)),
                max_en_route_seconds=d.get("max_en_route_seconds"),
            )
        elif t == "session.closed":
            self.state = SessionState.CLOSED
            self._request = None
        elif t == "pick.requested":
            self._requests += 1
            self._request = _Request(
                d["pick"],
                d["kind"],
                d["slot"],
                d["attempt"],
                d["pool_digest"],
                None,
                dict(d.get("left_out", {})),
                int(d.get("request", self._requests)),
            )
            if "pool" in d:
                self._request.candidates = PoolSnapshot(list(d["pool"]))
        elif t == "pick.abandoned" or t == "pick.no_eligible":
            self._request = None
        elif t == "pick.drawn":
            self._request = None
            loc = d["location"]
            self._add_pick(
                Pick(
                    number=d["pick"],
                    kind=d["kind"],
                    slot=d["slot"],
                    attempt=d["attempt"],
                    card=d["card"],
                    location=Location(**loc),
                    display_name=d.get("display_name", ""),
                    tier=d["tier"],
                    drawn_at=rec.at,
                    deadline=_when(d["deadline"])
                    if "deadline" in d
                    else drawn_deadline(self.rules.claim_starts, rec.at, self.rules.claim_seconds),
                    pool_size=d["pool_size"],
                    pool_digest=d["pool_digest"],
                    index=d["index"],
                )
            )
        elif t in _CLAIM_STEPS:
            self._replay_claim(rec)
        elif t in _RESOLUTIONS:
            pick = self._pick(d["pick"])
            self._set_state(pick, _RESOLUTIONS[t], rec.at)
            if t == "pick.awarded":
                pick.prize = Prize(d["amount"], PrizeKind(d["prize_kind"]), d["envelope"])
            elif t == "pick.voided":
                pick.void_reason = d["reason"]

    def _replay_claim(self, rec: Record) -> None:
        d = rec.data
        pick = self._pick(d["pick"])
        claim = pick.claim
        if rec.type == "pick.en_route":
            claim.phase, claim.officer = ClaimPhase.EN_ROUTE, d["officer"]
            claim.en_route_at = rec.at
        elif rec.type == "pick.absent":
            claim.phase, claim.absent_at = ClaimPhase.ABSENT, rec.at
            pick.deadline = _when(d.get("deadline"))
        elif rec.type == "pick.extended":
            pick.deadline = _when(d["deadline"])
            claim.extended_seconds, claim.extended_reason = d["seconds"], d["reason"]
            claim.extended_by = rec.actor.user
        else:  # pick.escalated
            claim.escalated_at = rec.at

    @staticmethod
    def _fingerprint(recs: list[Record]) -> tuple[Any, ...]:
        """The command a group of journaled records answered, as `_run` fingerprints it."""
        last = recs[-1]
        d = last.data
        t = last.type
        if t == "session.opened":
            return ("open",)
        if t == "session.closed":
            return ("close", bool(d.get("force", False)))
        if t in ("pick.drawn", "pick.no_eligible"):
            return ("draw", d["kind"])
        if t == "pick.awarded":
            return (
                "award",
                d["pick"],
                Prize(d["amount"], PrizeKind(d["prize_kind"]), d["envelope"]),
            )
        if t == "pick.voided":
            return ("void", d["pick"], d["reason"])
        if t == "pick.verified":
            return ("verify", d["pick"])
        if t == "pick.no_show":
            return ("no_show", d["pick"])
        if t == "pick.en_route":
            return ("en_route", d["pick"], d["officer"])
        if t == "pick.absent":
            return ("absent", d["pick"])
        if t == "pick.extended":
            return ("extend", d["pick"], d["seconds"], d["reason"])
        return (t,)

    def _outcome(self, recs: list[Record]) -> Outcome:
        last = recs[-1]
        pick = None
        no_eligible = last.type == "pick.no_eligible"
        if last.type.startswith("pick.") and "pick" in last.data and not no_eligible:
            pick = self._pick(last.data["pick"])
        return Outcome(tuple(recs), pick, no_eligible=no_eligible)


# records a draw's first half writes; a command whose journal ends with one is unanswered
DRAW_FIRST_HALF = frozenset({"pick.requested", "pick.abandoned", "session.override"})

# the claim's steps (selector.claims): the pick stays pending
_CLAIM_STEPS = frozenset({"pick.en_route", "pick.absent", "pick.extended", "pick.escalated"})

_RESOLUTIONS = {
    "pick.verified": PickState.VERIFIED,
    "pick.awarded": PickState.AWARDED,
    "pick.no_show": PickState.NO_SHOW,
    "pick.voided": PickState.VOID,
}


def _when(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)

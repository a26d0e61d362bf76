"""The prize ledger: one prize letter per awarded winner, collected within 15 days.

The rules (seed 003 rules 11, 13-14 and 16; seed 000 rules 16, 19-21): the promotions
team issues the winner a prize letter; the winner (never a proxy or nominee) collects
and signs for the prize at the Rewards desk within 15 days of the draw, in person with
ID; add-ons (000 rules 20-21: R500 for the app, R500 +Play for online play) ride on
the same letter.  A prize not collected by its `collect_by` is forfeit: the desk cannot
hand it over, and the daemon lists and alerts the overdue ones.

A prize is recorded once: issuing again for the same award (session and pick) returns
the letter already issued, whatever the command id, so a daemon that re-issues after a
restart cannot make a second letter.  Letter numbers are the ledger's sequence
("PL-000001", ...), recorded in the letter so replay keeps them.  `collect_by` is
inclusive: a collection at exactly `collect_by` is accepted, one microsecond later is
refused (`expired`).  Time comes in with each command; nothing here reads a clock.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from selector.records import Record
from selector.session import Command, CommandConflict
from selector.tickets.draw_rules import AddOn, DocumentType, PrizeSpec
from selector.tickets.proxies import ProxyRefused, check_document
from selector.tickets.records import verification_code

LETTER = "prize.letter"
COLLECTED = "prize.collected"
FORFEITED = "prize.forfeited"
STREAM = "prizes"  # one journal stream for every letter: replay keeps their order
COLLECT_DAYS = 15
SIGNATURE_MAX = 120
_SHA256 = re.compile(r"[0-9a-f]{64}")


class PrizeReason(StrEnum):
    """Why the ledger refused: stable strings (API and metrics)."""

    UNKNOWN_LETTER = "unknown_letter"
    ALREADY_COLLECTED = "already_collected"
    EXPIRED = "expired"  # past collect_by: forfeit
    PROXY_CANNOT_COLLECT = "proxy_cannot_collect"
    BAD_COLLECTOR = "bad_collector"
    BAD_DOCUMENT = "bad_document"
    NO_SIGNATURE = "no_signature"
    BAD_SIGNATURE = "bad_signature"
    BAD_PRIZE = "bad_prize"
    PICK_HAS_LETTER = "pick_has_letter"  # the award has a letter naming another card
    NOT_OVERDUE = "not_overdue"  # a forfeit before collect_by
    ALREADY_FORFEITED = "already_forfeited"
    NO_REASON = "no_reason"


class PrizeRefused(ValueError):
    """The rules refuse the command; nothing was recorded."""

    def __init__(self, reason: PrizeReason, detail: str) -> None:
        super().__init__(f"{reason.value}: {detail}")
        self.reason = reason
        self.detail = detail


def _bad(detail: str) -> PrizeRefused:
    return PrizeRefused(PrizeReason.BAD_PRIZE, detail)


def _text(what: str, value: object, limit: int = 200) -> str:
    if not isinstance(value, str) or not value.strip() or not value.isprintable():
        raise _bad(f"{what} must be a non-empty printable string")
    if len(value) > limit:
        raise _bad(f"{what} must be at most {limit} characters")
    return value.strip()


def _aware(what: str, at: datetime) -> None:
    if not isinstance(at, datetime) or at.tzinfo is None or at.utcoffset() is None:
        raise ValueError(f"prizes: {what} must be a timezone-aware datetime")


@dataclass(frozen=True, slots=True)
class PrizeLine:
    """One prize: an amount in minor currency units and its kind (cash, plus_play, ...)."""

    amount: int
    kind: str

    def __post_init__(self) -> None:
        if isinstance(self.amount, bool) or not isinstance(self.amount, int) or self.amount < 0:
            raise _bad(f"prize amount must be an integer >= 0 (minor units), not {self.amount!r}")
        _text("prize kind", self.kind, 40)

    @classmethod
    def of(cls, value: object) -> PrizeLine:
        """From (amount, kind), [amount, kind] (JSON), {"amount", "kind"} or a PrizeSpec."""
        if isinstance(value, PrizeLine):
            return value
        if isinstance(value, PrizeSpec):
            return cls(value.amount, value.kind.value)
        if isinstance(value, Mapping):
            return cls(value.get("amount", -1), value.get("kind", ""))
        if isinstance(value, Sequence) and not isinstance(value, str) and len(value) == 2:
            return cls(value[0], value[1])
        raise _bad(f"a prize is (amount, kind), not {value!r}")

    def to_dict(self) -> dict[str, Any]:
        return {"amount": self.amount, "kind": self.kind}


@dataclass(frozen=True, slots=True)
class LetterAddOn:
    """An extra on the winner's letter (000 rules 20-21), e.g. R500 for the app."""

    id: str
    name: str
    prizes: tuple[PrizeLine, ...]

    @classmethod
    def of(cls, value: object) -> LetterAddOn:
        """From {id, name, prizes} (JSON) or the draw rules' AddOn the winner qualified for."""
        if isinstance(value, LetterAddOn):
            return value
        if isinstance(value, AddOn):
            return cls(value.id, value.name, tuple(PrizeLine.of(p) for p in value.prizes))
        if not isinstance(value, Mapping):
            raise _bad(f"an add-on is {{id, name, prizes}}, not {value!r}")
        lines = tuple(PrizeLine.of(p) for p in value.get("prizes") or ())
        if not lines:
            raise _bad(f"add-on {value.get('id')!r} has no prizes")
        return cls(
            _text("add-on id", value.get("id"), 64), _text("add-on name", value.get("name")), lines
        )

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "prizes": [p.to_dict() for p in self.prizes]}


@dataclass(frozen=True, slots=True)
class Signature:
    """The winner's signature at the desk: typed text, or the SHA-256 of a drawn PNG."""

    kind: str  # "typed" | "drawn"
    value: str  # the text, or the PNG's hex digest

    @classmethod
    def of(cls, value: object) -> Signature:
        if not isinstance(value, Mapping) or not value:
            raise PrizeRefused(PrizeReason.NO_SIGNATURE, "the winner must sign for the prize")
        kind = value.get("kind")
        if kind == "typed":
            text = value.get("text")
            text = text.strip() if isinstance(text, str) else ""
            if not text:
                raise PrizeRefused(PrizeReason.NO_SIGNATURE, "the typed signature is empty")
            if len(text) > SIGNATURE_MAX or not text.isprintable():
                raise PrizeRefused(
                    PrizeReason.BAD_SIGNATURE, f"a typed signature is 1 to {SIGNATURE_MAX} chars"
                )
            return cls("typed", text)
        if kind == "drawn":
            digest = value.get("sha256")
            digest = digest.strip().lower() if isinstance(digest, str) else ""
            if not digest:
                raise PrizeRefused(PrizeReason.NO_SIGNATURE, "the drawn signature is empty")
            if not _SHA256.fullmatch(digest):
                raise PrizeRefused(
                    PrizeReason.BAD_SIGNATURE, "a drawn signature is the PNG's SHA-256, 64 hex"
                )
            return cls("drawn", digest)
        raise PrizeRefused(PrizeReason.BAD_SIGNATURE, "signature kind must be typed or drawn")

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "text" if self.kind == "typed" else "sha256": self.value}


def _signature_key(value: object) -> tuple[str, str]:
    """Compares a retried request's signature with the recorded one, valid or not."""
    try:
        s = Signature.of(value)
    except PrizeRefused:
        return ("invalid", repr(value))
    return (s.kind, s.value)


@dataclass(frozen=True, slots=True)
class Collection:
    """How the prize was handed over: the winner's document, their signature, the desk."""

    at: datetime
    document: DocumentType
    last_digits: str
    signature: Signature
    by: str  # the Rewards desk user who handed it over
    command_id: str


@dataclass(frozen=True, slots=True)
class Forfeit:
    """An overdue prize closed by the desk: why, and who recorded it."""

    at: datetime
    reason: str
    by: str
    command_id: str


@dataclass(frozen=True, slots=True)
class Letter:
    """A prize letter: what the winner won, and how and when it was collected."""

    letter_no: str
    verification_code: str
    digest: str  # the journal entry of the award, whose hash the code is made from
    draw_id: str
    draw_name: str
    session_id: str
    pick: int
    winner_card: str
    winner_name: str
    prizes: tuple[PrizeLine, ...]
    add_ons: tuple[LetterAddOn, ...]
    currency: str
    awarded_at: datetime
    collect_days: int
    collect_by: datetime
    issued_at: datetime
    command_id: str
    collection: Collection | None = None
    forfeit: Forfeit | None = None

    @property
    def collected(self) -> bool:
        return self.collection is not None

    @property
    def total(self) -> int:
        """Everything on the letter, add-ons included, in minor units."""
        return sum(p.amount for p in self.prizes) + sum(
            p.amount for a in self.add_ons for p in a.prizes
        )

    @property
    def collected_at(self) -> datetime | None:
        return None if self.collection is None else self.collection.at

    def expired(self, now: datetime) -> bool:
        """Past collect_by (inclusive deadline): forfeit unless already collected."""
        return now > self.collect_by

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, for views (the full card: a public view masks it)."""
        c = self.collection
        return {
            "letter_no": self.letter_no, "verification_code": self.verification_code,
            "draw_id": self.draw_id, "draw_name": self.draw_name,
            "session_id": self.session_id, "pick": self.pick,
            "winner_card": self.winner_card, "winner_name": self.winner_name,
            "prizes": [p.to_dict() for p in self.prizes],
            "add_ons": [a.to_dict() for a in self.add_ons],
            "currency": self.currency, "total": self.total,
            "awarded_at": self.awarded_at.isoformat(), "collect_days": self.collect_days,
            "collect_by": self.collect_by.isoformat(), "issued_at": self.issued_at.isoformat(),
            "collected": c is not None,
            "collected_at": None if c is None else c.at.isoformat(),
            "forfeit": None if self.forfeit is None else {
                "at": self.forfeit.at.isoformat(), "reason": self.forfeit.reason,
                "by": self.forfeit.by,
            },
            "collection": None if c is None else {
                "at": c.at.isoformat(), "document": c.document.value,
                "last_digits": c.last_digits, "signature": c.signature.to_dict(), "by": c.by,
            },
        }  # fmt: skip


def letter_number(seq: int) -> str:
    return f"PL-{seq:06d}"


class PrizeLedger:
    """Every ticket-draw prize letter; each change is a Record for the journal."""

    def __init__(self) -> None:
        self._letters: dict[str, Letter] = {}  # by letter number, in issue order
        self._by_pick: dict[tuple[str, int], str] = {}
        self._done: dict[str, tuple[tuple[Any, ...], str]] = {}  # command id -> letter no
        self._seq = 0
        # the records this ledger made (not those replayed into it), in order: a caller
        # journals records[len_before:] before answering
        self.records: list[Record] = []

    # ---------------------------------------------------------------- commands

    def issue(
        self,
        cmd: Command,
        *,
        draw_id: str,
        draw_name: str,
        session_id: str,
        pick: int,
        winner_card: str,
        winner_name: str,
        prizes: Iterable[PrizeLine | PrizeSpec | Sequence[Any] | Mapping[str, Any]],
        add_ons: Iterable[LetterAddOn | AddOn | Mapping[str, Any]] = (),
        awarded_at: datetime,
        collect_days: int = COLLECT_DAYS,
        digest_hex: str,
        currency: str = "ZAR",
    ) -> Letter:
        """The award's prize letter: a new one, or the one already issued for it."""
        fingerprint = ("issue", session_id, pick)
        known = self._replayed(cmd, fingerprint)
        if known is not None:
            return known
        existing = self.by_pick(session_id, pick)
        if existing is not None:
            if existing.winner_card != winner_card:
                raise PrizeRefused(
                    PrizeReason.PICK_HAS_LETTER,
                    f"{session_id} pick {pick} has letter {existing.letter_no} for another card",
                )
            return existing
        _aware("awarded_at", awarded_at)
        _aware("command time", cmd.at)
        if isinstance(pick, bool) or not isinstance(pick, int) or pick < 1:
            raise _bad(f"pick must be an integer >= 1, not {pick!r}")
        if isinstance(collect_days, bool) or not isinstance(collect_days, int) or collect_days < 1:
            raise _bad(f"collect_days must be an integer >= 1, not {collect_days!r}")
        card = _text("winner_card", winner_card, 64)
        if any(c.isspace() for c in card):
            raise _bad("winner_card must have no whitespace")
        lines = tuple(PrizeLine.of(p) for p in prizes)
        if not lines:
            raise _bad("a letter needs at least one prize")
        extras = tuple(LetterAddOn.of(a) for a in add_ons)
        code = verification_code(digest_hex)
        letter_no = letter_number(self._seq + 1)
        collect_by = awarded_at + timedelta(days=collect_days)
        rec = Record(
            LETTER, STREAM, cmd.at, cmd.actor,
            {
                "command_id": cmd.command_id, "draw_id": _text("draw_id", draw_id, 128),
                "letter_no": letter_no, "verification_code": code, "digest": digest_hex,
                "draw_name": _text("draw_name", draw_name), "session_id":
                _text("session_id", session_id, 128), "pick": pick, "winner_card": card,
                "winner_name": _text("winner_name", winner_name),
                "prizes": [p.to_dict() for p in lines],
                "add_ons": [a.to_dict() for a in extras],
                "currency": _text("currency", currency, 8).upper(),
                "awarded_at": awarded_at.isoformat(), "collect_days": collect_days,
                "collect_by": collect_by.isoformat(),
            },
        )  # fmt: skip
        self._commit(rec)
        return self._letters[letter_no]

    def collect(
        self,
        cmd: Command,
        letter_no: str,
        *,
        document: DocumentType | str,
        last_digits: str,
        signature: Mapping[str, Any],
        collected_by: str = "winner",
    ) -> Letter:
        """The Rewards desk hands the prize to its winner, who signs for it."""
        fingerprint = (
            "collect", letter_no, str(document), last_digits, _signature_key(signature),
            collected_by,
        )  # fmt: skip
        known = self._replayed(cmd, fingerprint)
        if known is not None:
            return known
        _aware("command time", cmd.at)
        letter = self._letters.get(letter_no)
        if letter is None:
            raise PrizeRefused(PrizeReason.UNKNOWN_LETTER, f"no prize letter {letter_no!r}")
        if letter.collection is not None:
            raise PrizeRefused(
                PrizeReason.ALREADY_COLLECTED,
                f"{letter_no} was collected at {letter.collection.at.isoformat()}",
            )
        if letter.expired(cmd.at):
            raise PrizeRefused(
                PrizeReason.EXPIRED,
                f"{letter_no} had to be collected by {letter.collect_by.isoformat()}: forfeit",
            )
        if collected_by == "proxy":
            raise PrizeRefused(
                PrizeReason.PROXY_CANNOT_COLLECT,
                "a proxy never receives the prize: the winner collects and signs",
            )
        if collected_by != "winner":
            raise PrizeRefused(PrizeReason.BAD_COLLECTOR, "collected_by must be 'winner'")
        try:
            kind, digits = check_document(document, last_digits)
        except ProxyRefused as e:
            raise PrizeRefused(PrizeReason.BAD_DOCUMENT, e.detail) from None
        sig = Signature.of(signature)
        rec = Record(
            COLLECTED, STREAM, cmd.at, cmd.actor,
            {
                "command_id": cmd.command_id, "draw_id": letter.draw_id, "letter_no": letter_no,
                "document": kind.value, "last_digits": digits, "signature": sig.to_dict(),
                "by": cmd.actor.user,
            },
        )  # fmt: skip
        self._commit(rec)
        return self._letters[letter_no]

    def forfeit(self, cmd: Command, letter_no: str, *, reason: str) -> Letter:
        """Close an overdue prize (never collected within its window) with a reason, so it
        is no longer listed as overdue; what happens to it is management's decision."""
        fingerprint = ("forfeit", letter_no, reason)
        known = self._replayed(cmd, fingerprint)
        if known is not None:
            return known
        _aware("command time", cmd.at)
        letter = self._letters.get(letter_no)
        if letter is None:
            raise PrizeRefused(PrizeReason.UNKNOWN_LETTER, f"no prize letter {letter_no!r}")
        if letter.collection is not None:
            raise PrizeRefused(PrizeReason.ALREADY_COLLECTED, f"{letter_no} was collected")
        if letter.forfeit is not None:
            raise PrizeRefused(PrizeReason.ALREADY_FORFEITED, f"{letter_no} is closed already")
        if not letter.expired(cmd.at):
            raise PrizeRefused(
                PrizeReason.NOT_OVERDUE,
                f"{letter_no} can be collected until {letter.collect_by.isoformat()}",
            )
        if not isinstance(reason, str) or not reason.strip():
            raise PrizeRefused(PrizeReason.NO_REASON, "a forfeit needs a reason")
        text = _text("reason", reason)
        rec = Record(
            FORFEITED, STREAM, cmd.at, cmd.actor,
            {"command_id": cmd.command_id, "draw_id": letter.draw_id, "letter_no": letter_no,
             "reason": text, "by": cmd.actor.user},
        )  # fmt: skip
        self._commit(rec)
        return self._letters[letter_no]

    # ----------------------------------------------------------------- queries

    def letter(self, letter_no: str) -> Letter | None:
        return self._letters.get(letter_no)

    def by_pick(self, session_id: str, pick: int) -> Letter | None:
        no = self._by_pick.get((session_id, pick))
        return None if no is None else self._letters[no]

    def letters(self) -> list[Letter]:
        """Every letter in issue order."""
        return list(self._letters.values())

    def awaiting(self, now: datetime) -> list[Letter]:
        """Issued, not collected, still collectable at `now`; soonest deadline first."""
        out = [x for x in self._letters.values() if x.collection is None and not x.expired(now)]
        return sorted(out, key=lambda x: (x.collect_by, x.letter_no))

    def overdue(self, now: datetime) -> list[Letter]:
        """Past collect_by and never collected: forfeit, to be listed and alerted."""
        out = [
            x
            for x in self._letters.values()
            if x.collection is None and x.forfeit is None and x.expired(now)
        ]
        return sorted(out, key=lambda x: (x.collect_by, x.letter_no))

    def forfeited(self) -> list[Letter]:
        return [x for x in self._letters.values() if x.forfeit is not None]

    def collected(self) -> list[Letter]:
        return [x for x in self._letters.values() if x.collection is not None]

    def answered(self, command_id: str) -> bool:
        return command_id in self._done

    # ----------------------------------------------------------------- records

    def apply(self, rec: Record) -> None:
        """Fold one journaled record in (restart); ValueError for one that cannot follow."""
        if rec.type not in (LETTER, COLLECTED, FORFEITED):
            raise ValueError(f"not a prize record: type {rec.type!r}")
        try:
            if rec.type == LETTER:
                self._apply_letter(rec, rec.data)
            elif rec.type == COLLECTED:
                self._apply_collected(rec, rec.data)
            else:
                self._apply_forfeit(rec, rec.data)
        except (KeyError, TypeError, PrizeRefused, ProxyRefused) as exc:
            raise ValueError(f"prize record {rec.type!r}: malformed data ({exc})") from None

    @classmethod
    def replay(cls, records: Iterable[Record]) -> PrizeLedger:
        """The ledger as the journal's records left it (other record types are skipped)."""
        ledger = cls()
        for rec in records:
            if rec.type in (LETTER, COLLECTED, FORFEITED):
                ledger.apply(rec)
        return ledger

    # --------------------------------------------------------------- internals

    def _apply_letter(self, rec: Record, d: dict[str, Any]) -> None:
        no, key = d["letter_no"], (d["session_id"], d["pick"])
        if no in self._letters or key in self._by_pick:
            raise ValueError(f"prize record: {no} or its pick already has a letter")
        letter = Letter(
            letter_no=no, verification_code=d["verification_code"], digest=d["digest"],
            draw_id=d["draw_id"], draw_name=d["draw_name"], session_id=d["session_id"],
            pick=d["pick"], winner_card=d["winner_card"], winner_name=d["winner_name"],
            prizes=tuple(PrizeLine.of(p) for p in d["prizes"]),
            add_ons=tuple(LetterAddOn.of(a) for a in d["add_ons"]), currency=d["currency"],
            awarded_at=datetime.fromisoformat(d["awarded_at"]),
            collect_days=d["collect_days"], collect_by=datetime.fromisoformat(d["collect_by"]),
            issued_at=rec.at, command_id=d["command_id"],
        )  # fmt: skip
        self._letters[no] = letter
        self._by_pick[key] = no
        self._done[letter.command_id] = (("issue", *key), no)
        try:
            self._seq = max(self._seq, int(no.rsplit("-", 1)[-1]))
        except ValueError:
            self._seq += 1

    def _apply_collected(self, rec: Record, d: dict[str, Any]) -> None:
        no = d["letter_no"]
        letter = self._letters.get(no)
        if letter is None or letter.collection is not None:
            raise ValueError(f"prize record: {no} is unknown or already collected")
        sig = Signature.of(d["signature"])
        got = Collection(
            rec.at, DocumentType(d["document"]), d["last_digits"], sig, d["by"], d["command_id"]
        )
        self._letters[no] = replace(letter, collection=got)
        fingerprint = ("collect", no, got.document.value, got.last_digits,
                       (sig.kind, sig.value), "winner")  # fmt: skip
        self._done[got.command_id] = (fingerprint, no)

    def _apply_forfeit(self, rec: Record, d: dict[str, Any]) -> None:
        no = d["letter_no"]
        letter = self._letters.get(no)
        if letter is None or letter.collection is not None or letter.forfeit is not None:
            raise ValueError(f"prize record: {no} is unknown, collected or closed already")
        got = Forfeit(rec.at, d["reason"], d["by"], d["command_id"])
        self._letters[no] = replace(letter, forfeit=got)
        self._done[got.command_id] = (("forfeit", no, d["reason"]), no)

    def _replayed(self, cmd: Command, fingerprint: tuple[Any, ...]) -> Letter | None:
        done = self._done.get(cmd.command_id)
        if done is None:
            return None
        if done[0] != fingerprint:
            raise CommandConflict(
                f"command id {cmd.command_id!r} was already used for {done[0][0]} ({done[1]})"
            )
        return self._letters[done[1]]

    def _commit(self, rec: Record) -> None:
        """Apply as a replay would (it remembers the command id too), then queue it."""
        self.apply(rec)
        self.records.append(rec)

"""Ticket ledger records: every credit and every entry, each with its cause.

These are journal records: `to_dict` gives JSON-ready data whose keys are the
documented format (docs/tickets.md), so renaming a field is a format change.  A card's
tickets for a bin are the sum of its credits there, and nothing but these causes
credits tickets: entries cannot be bought (003 rule 9, 000 rule 22).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

CREDITED = "tickets.credited"
ENTERED = "tickets.entered"


class Cause(StrEnum):
    """Why tickets were credited; `ref` says which event or rule."""

    POINTS = "points"  # ref: the points event that crossed the ticket boundary
    COMPLIMENTARY = "complimentary"  # ref: "complimentary:<tier>"
    APP_BONUS = "app_bonus"  # ref: "app_bonus:<tier>"
    RAPS_WINNER = "raps_winner"  # ref: "<session id>#<pick number>"
    EXTERNAL = "external"  # ref: the casino ticket feed's event id


class Channel(StrEnum):
    KIOSK = "kiosk"
    APP = "app"


def _text(name: str, value: object) -> str:
    if not isinstance(value, str) or not value or not value.isprintable():
        raise ValueError(f"tickets record: {name} must be a non-empty printable string")
    return value


def _card(value: object) -> None:
    """Cards are hashed newline-joined in bin digests: printable, no whitespace."""
    if any(c.isspace() for c in _text("card", value)):
        raise ValueError("tickets record: card must have no whitespace")


def _count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"tickets record: tickets must be an integer >= 1, not {value!r}")
    return value


def _aware(at: object) -> None:
    if not isinstance(at, datetime) or at.tzinfo is None or at.utcoffset() is None:
        raise ValueError("tickets record: at must be a timezone-aware datetime")


def _field(d: dict[str, Any], key: str) -> Any:
    try:
        return d[key]
    except KeyError:
        raise ValueError(f"tickets record {d.get('type')!r}: missing field {key!r}") from None


@dataclass(frozen=True, slots=True, kw_only=True)
class TicketsCredited:
    """Tickets added to a card's balance in one bin."""

    card: str
    bin_id: str
    tickets: int
    cause: Cause
    ref: str
    at: datetime

    def __post_init__(self) -> None:
        _card(self.card)
        for name in ("bin_id", "ref"):
            _text(name, getattr(self, name))
        _count(self.tickets)
        object.__setattr__(self, "cause", Cause(self.cause))
        _aware(self.at)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": CREDITED, "card": self.card, "bin_id": self.bin_id, "tickets": self.tickets,
            "cause": self.cause.value, "ref": self.ref, "at": self.at.isoformat(),
        }  # fmt: skip

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TicketsCredited:
        return cls(
            card=_field(d, "card"), bin_id=_field(d, "bin_id"), tickets=_field(d, "tickets"),
            cause=Cause(_field(d, "cause")), ref=_field(d, "ref"),
            at=datetime.fromisoformat(_field(d, "at")),
        )  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class TicketsEntered:
    """A card's available tickets activated into a bin: one receipt."""

    card: str
    bin_id: str
    tickets: int
    channel: Channel
    request_id: str
    receipt_no: str
    at: datetime

    def __post_init__(self) -> None:
        _card(self.card)
        for name in ("bin_id", "request_id", "receipt_no"):
            _text(name, getattr(self, name))
        _count(self.tickets)
        object.__setattr__(self, "channel", Channel(self.channel))
        _aware(self.at)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": ENTERED, "card": self.card, "bin_id": self.bin_id, "tickets": self.tickets,
            "channel": self.channel.value, "request_id": self.request_id,
            "receipt_no": self.receipt_no, "at": self.at.isoformat(),
        }  # fmt: skip

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TicketsEntered:
        return cls(
            card=_field(d, "card"), bin_id=_field(d, "bin_id"), tickets=_field(d, "tickets"),
            channel=Channel(_field(d, "channel")), request_id=_field(d, "request_id"),
            receipt_no=_field(d, "receipt_no"), at=datetime.fromisoformat(_field(d, "at")),
        )  # fmt: skip


TicketRecord = TicketsCredited | TicketsEntered


def record_from_dict(d: dict[str, Any]) -> TicketRecord:
    """The record of a journal entry's data; ValueError for anything malformed."""
    kind = d.get("type")
    if kind == CREDITED:
        return TicketsCredited.from_dict(d)
    if kind == ENTERED:
        return TicketsEntered.from_dict(d)
    raise ValueError(f"not a tickets record: type {kind!r}")


def receipt_number(bin_id: str, seq: int) -> str:
    """Receipt numbers are the bin and the entry's sequence in it: deterministic on replay."""
    return f"{bin_id}-{seq:06d}"


def raps_ref(session_id: str, pick_no: int) -> str:
    """The ref of a RAPS-winner credit; the pick number has no '#', so rsplit undoes it."""
    return f"{session_id}#{pick_no}"


def verification_code(digest_hex: str) -> str:
    """A short code for a receipt from a journal digest: 40 bits in base32, 'ABCD-EFGH'.

    The daemon passes the hash of the journal entry that holds the entry record, so a
    code printed on a receipt can be checked at the stage against the journal.
    """
    raw = bytes.fromhex(digest_hex)
    if len(raw) < 5:
        raise ValueError("verification_code needs a digest of at least 5 bytes")
    code = base64.b32encode(raw[:5]).decode("ascii")
    return f"{code[:4]}-{code[4:]}"

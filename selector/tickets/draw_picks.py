"""The values a ticket draw on stage hands out: its picks, their presentation and award,
the outcome of a command, its errors, and the journal record types it writes.

Kept apart from the state machine (draw_session.py) so the daemon, the screens and the
verifier can name them without reading the machine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from selector.records import Record
from selector.session import CommandConflict, PickState, SessionError, SessionState
from selector.tickets.draw_rules import DocumentType, Presenter, PrizeSpec

# journal record types (docs/journal.md)
OPENED = "draw.opened"
REQUESTED = "draw.requested"  # derivation v3: the bin a pick draws from, durable first
PICKED = "draw.picked"
NO_ELIGIBLE = "draw.no_eligible"
PRESENTED = "draw.presented"
ADD_ON = "draw.add_on"
AWARDED = "draw.awarded"
NO_SHOW = "draw.no_show"
VOIDED = "draw.voided"
CLOSED = "draw.closed"
RECORD_TYPES = (
    OPENED, REQUESTED, PICKED, NO_ELIGIBLE, PRESENTED, ADD_ON, AWARDED, NO_SHOW, VOIDED, CLOSED,
)  # fmt: skip
TICKET_KIND = "tickets"  # the kind a ticket draw's request is signed as by the witness

FILLED = (PickState.PENDING, PickState.VERIFIED, PickState.AWARDED)
WON = (PickState.VERIFIED, PickState.AWARDED)


class DrawError(SessionError):
    """A command the draw's rules refuse; nothing was recorded.  A SessionError (and so a
    ValueError), so code that handles RAPS session refusals handles these too."""


class DrawConflict(DrawError, CommandConflict):
    """A command id reused for a different command (also a selector.session.CommandConflict)."""


class AwardSource(StrEnum):
    POSITION = "position"  # the rules' prize for the position
    DEVICE = "device"  # a prize device's reveal on stage, with its reference
    STAGE = "stage"  # a stage game's awards (ref: its stream), each one of `lines`


class NoShowReason(StrEnum):
    HOST = "host"  # the host marked the winner absent
    TIMEOUT = "timeout"  # the presentation window ran out
    CLOSED = "closed"  # the draw was closed by force with the pick still pending


class BarReason(StrEnum):
    """Why this draw itself bars a card (external bars carry the daemon's own reason)."""

    WON = "won"
    PENDING = "pending"
    NO_SHOW = "no_show"
    VOIDED = "voided"


@dataclass(frozen=True, slots=True)
class Presentation:
    """Who came to the stage: the winner or their proxy, the document seen (its type and
    last digits only) and the ticket receipt."""

    presenter: Presenter
    document: DocumentType
    last_digits: str
    receipt: str
    proxy: dict[str, str] | None  # the nominated proxy: name, document, last_digits
    at: datetime

    def proxy_key(self) -> tuple[str, str, str] | None:
        """Who the proxy is, as far as the host can tell (never a whole ID number)."""
        if self.proxy is None:
            return None
        p = self.proxy
        return (p["name"].strip().casefold(), p["document"], p["last_digits"])


@dataclass(frozen=True, slots=True)
class Award:
    prize: PrizeSpec  # with source "stage": the first of `lines`
    source: AwardSource
    ref: str
    at: datetime
    lines: tuple[PrizeSpec, ...] = ()  # source "stage": every prize the game gave the winner


@dataclass(slots=True)
class TicketPick:
    number: int  # ordinal of the pick in the draw, 1-based, redraws included
    position: int  # the winner's place 1..winners
    attempt: int  # 0 for the first pick into the position, 1 for its first redraw, ...
    card: str
    tickets: int  # the card's tickets in the eligible bin it was drawn from
    ticket: int  # the drawn ticket, in [0, bin_total)
    first: int  # the card's first ticket: first <= ticket < first + tickets
    drawn_at: datetime
    deadline: datetime  # last instant the winner may present (inclusive)
    bin_count: int
    bin_total: int
    bin_digest: str
    state: PickState = PickState.PENDING
    presented: Presentation | None = None
    add_ons: dict[str, bool] = field(default_factory=dict)  # add-on id -> verified
    award: Award | None = None
    reason: str | None = None  # why a no-show or a void
    resolved_at: datetime | None = None

    @property
    def prize(self) -> PrizeSpec | None:
        return None if self.award is None else self.award.prize


@dataclass(frozen=True, slots=True)
class DrawOutcome:
    """What a command did: its records, and the pick it concerned (a draw's new pick)."""

    records: tuple[Record, ...]
    pick: TicketPick | None = None
    no_eligible: bool = False
    replayed: bool = False


@dataclass(slots=True)
class Done:
    fingerprint: tuple[Any, ...]
    outcome: DrawOutcome


@dataclass(slots=True)
class TicketRequest:
    """Derivation v3: a pick's eligible bin made durable (`draw.requested`) before its
    winner is known; a retry after a failed commit draws from it again, so a refused
    write cannot veto a winner."""

    number: int  # the pick's number
    position: int
    attempt: int
    request: int  # the draw's count of requests (the witness signs it)
    count: int
    total: int
    digest: str
    entry: tuple[int, str] | None = None  # (seq, hash) of its journal entry, once known


__all__ = [
    "ADD_ON",
    "AWARDED",
    "CLOSED",
    "FILLED",
    "NO_ELIGIBLE",
    "NO_SHOW",
    "OPENED",
    "PICKED",
    "PRESENTED",
    "RECORD_TYPES",
    "REQUESTED",
    "TICKET_KIND",
    "VOIDED",
    "WON",
    "Award",
    "AwardSource",
    "BarReason",
    "Done",
    "DrawConflict",
    "DrawError",
    "DrawOutcome",
    "NoShowReason",
    "PickState",
    "Presentation",
    "SessionState",
    "TicketPick",
    "TicketRequest",
]

"""FloorEvent: the one vocabulary every adapter translates its wire format into.

Adapters (SAS, Modbus, MQTT) validate at the edge and hand the core these frozen,
slotted records; the core never sees a wire format.  Money is always an integer in
minor currency units (cents), time is always a timezone-aware datetime.  Every text
field is clean text (`text_problem`), checked on construction like card ids: a lone
surrogate in a display name once made every journal write of its pool fail.
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum


class Tier(StrEnum):
    """Loyalty tiers of the seed casinos, lowest first."""

    TEN = "ten"
    JACK = "jack"
    QUEEN = "queen"
    KING = "king"
    ACE = "ace"


class Exclusion(StrEnum):
    """Why a carded player may not take part in any promotion (seed rules 1-3)."""

    SELF_EXCLUDED = "self_excluded"
    REFUSAL_OF_ENTRY = "refusal_of_entry"
    STAFF_OR_ASSOCIATE = "staff_or_associate"
    MANUAL_BLOCK = "manual_block"


class MachineStatus(StrEnum):
    ONLINE = "online"
    OFFLINE = "offline"
    DOOR_OPEN = "door_open"
    OUT_OF_SERVICE = "out_of_service"


# control characters (NUL, newlines, escapes), lone surrogates (not encodable as UTF-8),
# line and paragraph separators: none belongs in a name, an id or a reason
_BAD_TEXT = frozenset({"Cc", "Cs", "Zl", "Zp"})


def text_problem(text: str) -> str | None:
    """None when `text` is clean (encodable, printable), else what is wrong, quoted safely.

    Plain printable ASCII, nearly every field, passes the first test (two C calls).
    """
    if text.isascii() and text.isprintable():
        return None
    for i, char in enumerate(text):
        category = unicodedata.category(char)
        if category in _BAD_TEXT:
            return f"holds U+{ord(char):04X} ({category}) at index {i}"
    return None


def check_text(event_id: str, /, **fields: str | None) -> None:
    """Refuse an event whose text fields are not clean text (see `text_problem`)."""
    for name, value in fields.items():
        if value is not None and (problem := text_problem(value)) is not None:
            raise ValueError(f"event {event_id!r}: {name}: {problem}")


def check_card(event_id: str, card: str) -> None:
    """A card id is printable and has no whitespace: pools are hashed newline-joined.
    (The space is the one character both printable and whitespace.)"""
    if not card or not card.isprintable() or " " in card:
        raise ValueError(f"event {event_id!r}: card id {card!r} must be printable, no spaces")


class PoolKind(StrEnum):
    """Where a player is playing: each promotion keeps one pool per kind."""

    SLOTS = "slots"
    TABLES = "tables"


@dataclass(frozen=True, slots=True, kw_only=True)
class FloorEvent:
    """Common header: event_id for dedupe, source for ordering, ts for time rules."""

    event_id: str
    source: str
    ts: datetime
    # POSIX seconds of ts, derived once at the edge so the core never converts time zones
    epoch: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.ts.tzinfo is None or self.ts.utcoffset() is None:
            raise ValueError(f"event {self.event_id!r}: timestamp must be timezone-aware")
        if not self.event_id:
            raise ValueError("event_id must not be empty")
        eid, src = self.event_id, self.source
        if not (eid.isascii() and eid.isprintable() and src.isascii() and src.isprintable()):
            check_text(eid, event_id=eid, source=src)  # says what is wrong, if anything
        object.__setattr__(self, "epoch", self.ts.timestamp())


@dataclass(frozen=True, slots=True, kw_only=True)
class _CardAtMachine(FloorEvent):
    """A card reader beside a slot machine (SMIB or CMS) saw a card."""

    machine: str
    card: str

    def __post_init__(self) -> None:
        FloorEvent.__post_init__(self)
        check_card(self.event_id, self.card)
        if not (self.machine.isascii() and self.machine.isprintable()):
            check_text(self.event_id, machine=self.machine)


@dataclass(frozen=True, slots=True, kw_only=True)
class CardInserted(_CardAtMachine):
    """The card went in: its player is at this machine now."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CardRemoved(_CardAtMachine):
    """The card came out: its player left this machine."""


# a span longer than this is no floor data (the MQTT edge refuses any time more than three
# years old, adapters.mqtt.validate); its credit is split day by day, so its length is cost
MAX_SPAN_SECONDS = 3 * 366 * 86_400.0


def span_in_range(span_start: float, epoch: float) -> bool:
    """A span from `span_start` to `epoch` (POSIX seconds) the floor can credit: not before
    1970 and at most MAX_SPAN_SECONDS long (a year-0001 start has no local day to count in)."""
    return span_start >= 0.0 and epoch - span_start <= MAX_SPAN_SECONDS


def _check_span(event: FloorEvent, span_start: datetime | None) -> None:
    """A span's start is aware and not after the event's own time."""
    if span_start is None:
        return
    if span_start.tzinfo is None or span_start.utcoffset() is None:
        raise ValueError(f"event {event.event_id!r}: span_start must be timezone-aware")
    if span_start > event.ts:
        raise ValueError(f"event {event.event_id!r}: span_start must not be after ts")


@dataclass(frozen=True, slots=True, kw_only=True)
class GamePlayed(FloorEvent):
    """One game at a slot machine; wager and win in minor currency units.

    `span_start`: set when the game's own time is not known, only that it was played
    between then and `ts` (a game rebuilt from a meter delta after an outage: the last
    good read and this one); the floor apportions its points over that span."""

    machine: str
    wager: int
    win: int = 0
    span_start: datetime | None = None

    def __post_init__(self) -> None:
        FloorEvent.__post_init__(self)
        if not (self.machine.isascii() and self.machine.isprintable()):
            check_text(self.event_id, machine=self.machine)
        if self.wager < 0 or self.win < 0:
            raise ValueError(f"event {self.event_id!r}: wager and win must be >= 0")
        _check_span(self, self.span_start)


@dataclass(frozen=True, slots=True, kw_only=True)
class MachineStatusChanged(FloorEvent):
    machine: str
    status: MachineStatus

    def __post_init__(self) -> None:
        FloorEvent.__post_init__(self)
        if not (self.machine.isascii() and self.machine.isprintable()):
            check_text(self.event_id, machine=self.machine)


@dataclass(frozen=True, slots=True, kw_only=True)
class TableRatingOpened(FloorEvent):
    table: str
    seat: int
    card: str
    average_bet: int = 0

    def __post_init__(self) -> None:
        FloorEvent.__post_init__(self)
        check_card(self.event_id, self.card)
        check_text(self.event_id, table=self.table)
        if self.average_bet < 0:
            raise ValueError(f"event {self.event_id!r}: average_bet must be >= 0")


@dataclass(frozen=True, slots=True, kw_only=True)
class _RatingFigures(FloorEvent):
    """A rating's cumulative figures so far: average bet and minutes played."""

    table: str
    seat: int
    card: str
    average_bet: int
    minutes: float

    def __post_init__(self) -> None:
        FloorEvent.__post_init__(self)
        check_card(self.event_id, self.card)
        check_text(self.event_id, table=self.table)
        if self.average_bet < 0 or not (math.isfinite(self.minutes) and self.minutes >= 0):
            raise ValueError(
                f"event {self.event_id!r}: average_bet and minutes must be finite and >= 0"
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class TableRatingUpdated(_RatingFigures):
    """The open rating's figures so far."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TableRatingClosed(_RatingFigures):
    """Final figures of the rating; the seat is free afterwards."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PointsEarned(FloorEvent):
    """Points credited by the casino management system (used when points_source='events').

    `span_start`: the points were earned between then and `ts` (a period's total); the
    floor apportions them over that span.  None: earned at `ts`."""

    card: str
    points: float
    span_start: datetime | None = None

    def __post_init__(self) -> None:
        FloorEvent.__post_init__(self)
        check_card(self.event_id, self.card)
        if not math.isfinite(self.points):
            raise ValueError(f"event {self.event_id!r}: points must be a finite number")
        _check_span(self, self.span_start)


@dataclass(frozen=True, slots=True, kw_only=True)
class PlayerUpserted(FloorEvent):
    """A player directory entry; replaces what was known of the card before."""

    card: str
    tier: Tier
    display_name: str
    age_verified: bool
    exclusions: frozenset[Exclusion] = field(default_factory=frozenset)
    block_reason: str | None = None
    # the player's photo in the casino system, for the handheld's ID check only (the
    # daemon fetches it from an allowed origin; it is never shown anywhere else)
    photo_url: str | None = None

    def __post_init__(self) -> None:
        FloorEvent.__post_init__(self)
        check_card(self.event_id, self.card)
        check_text(
            self.event_id,
            display_name=self.display_name,
            block_reason=self.block_reason,
            photo_url=self.photo_url,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class TicketsGranted(FloorEvent):
    """Draw tickets credited by the casino system itself, e.g. a marketing give-away.

    `bin_id` names a ticket bin or one of its draws (selector.tickets).  The daemon routes
    it to the ticket ledger; the floor ignores it (Floor.apply would refuse it as
    unknown_event_type, so it is never handed one).
    """

    card: str
    bin_id: str
    tickets: int
    reason: str = ""

    def __post_init__(self) -> None:
        FloorEvent.__post_init__(self)
        check_card(self.event_id, self.card)
        check_text(self.event_id, bin_id=self.bin_id, reason=self.reason)
        if not self.bin_id:
            raise ValueError(f"event {self.event_id!r}: bin_id must not be empty")
        if isinstance(self.tickets, bool) or self.tickets < 1:
            raise ValueError(f"event {self.event_id!r}: tickets must be an integer >= 1")


AnyFloorEvent = (
    CardInserted
    | CardRemoved
    | GamePlayed
    | MachineStatusChanged
    | TableRatingOpened
    | TableRatingUpdated
    | TableRatingClosed
    | PointsEarned
    | PlayerUpserted
    | TicketsGranted
)

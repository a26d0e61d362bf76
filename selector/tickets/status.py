""" "Am I qualified": a player's tickets per draw, as kiosks and the app show them.

Read-only views over the ledger: what was earned (per draw and period), entered, what
is still available, and the points still needed for the next ticket ("38 more points
to your next ticket").
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from selector.events import Tier
from selector.tickets.program import MILLI

if TYPE_CHECKING:
    from selector.tickets.ledger import TicketLedger


@dataclass(frozen=True, slots=True)
class DrawStatus:
    """One draw as a player sees it at a moment."""

    draw_id: str
    bin_id: str
    program_id: str
    draw_at: datetime
    earning_start: datetime  # the earning period [start, end) whose points count
    earning_end: datetime
    opens: datetime  # the draw's entry window [opens, closes)
    closes: datetime
    entry_open: bool  # the bin takes entries now (any of its draws' windows)
    points: float  # points earned in the period so far
    credited: int  # tickets credited to the bin, every cause
    entered: int
    available: int
    bonus_due: int  # complimentary and app-bonus tickets an entry would add now
    points_to_next: float | None  # None: no tickets from points for this tier, or period over


def points_to_next(
    ledger: TicketLedger, card: str, bin_id: str, at: datetime, tier: Tier | None
) -> float | None:
    """Points the card still needs for its next points ticket in the bin."""
    b = ledger.plan.bins[bin_id]
    tier = tier if tier is not None else ledger.tier_of(card)
    d = b.divisors.get(tier) if tier is not None else None
    if d is None or at.timestamp() >= b.end:
        return None
    total = ledger.points_milli(card, bin_id)
    # a tier change can leave more credited than the total earns now: count from there
    tickets = max(total // d, ledger.credited_from_points(card, bin_id))
    return ((tickets + 1) * d - total) / MILLI


def draw_status(
    ledger: TicketLedger, card: str, at: datetime, tier: Tier | None, app_registered: bool
) -> list[DrawStatus]:
    """Every draw not yet held at `at` whose earning period has begun, by draw time."""
    t = at.timestamp()
    tier = tier if tier is not None else ledger.tier_of(card)
    zone = at.tzinfo
    out = []
    for d in ledger.plan.draws:
        b = ledger.plan.bins[d.bin_id]
        if d.at.timestamp() <= t or b.start > t:
            continue
        out.append(
            DrawStatus(
                draw_id=d.draw_id,
                bin_id=b.bin_id,
                program_id=d.program_id,
                draw_at=d.at,
                earning_start=datetime.fromtimestamp(b.start, zone),
                earning_end=datetime.fromtimestamp(b.end, zone),
                opens=d.opens,
                closes=d.closes,
                entry_open=b.entry_open(t),
                points=ledger.points_milli(card, b.bin_id) / MILLI,
                credited=ledger.credited(card, b.bin_id),
                entered=ledger.entered(card, b.bin_id),
                available=ledger.available(card, b.bin_id),
                bonus_due=ledger.bonus_due(card, b.bin_id, tier, app_registered),
                points_to_next=points_to_next(ledger, card, b.bin_id, at, tier),
            )
        )
    return out

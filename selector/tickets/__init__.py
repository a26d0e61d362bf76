"""Draw tickets: programs, earning periods and the event-sourced ticket ledger.

The pure core of ticket draws (issue 12): no I/O, no clock.  See docs/tickets.md.
"""

from selector.floor import PointsSink
from selector.tickets.balances import Balances, recompute
from selector.tickets.entry import PlayerStanding, Refusal, RefusalReason
from selector.tickets.ledger import TicketLedger
from selector.tickets.period import PeriodKind, PeriodRule
from selector.tickets.program import TicketBin, TicketDraw, TicketPlan, TicketProgram
from selector.tickets.records import (
    Cause,
    Channel,
    TicketRecord,
    TicketsCredited,
    TicketsEntered,
    raps_ref,
    receipt_number,
    record_from_dict,
    verification_code,
)
from selector.tickets.status import DrawStatus

__all__ = [
    "Balances",
    "Cause",
    "Channel",
    "DrawStatus",
    "PeriodKind",
    "PeriodRule",
    "PlayerStanding",
    "PointsSink",
    "Refusal",
    "RefusalReason",
    "TicketBin",
    "TicketDraw",
    "TicketLedger",
    "TicketPlan",
    "TicketProgram",
    "TicketRecord",
    "TicketsCredited",
    "TicketsEntered",
    "raps_ref",
    "receipt_number",
    "recompute",
    "record_from_dict",
    "verification_code",
]

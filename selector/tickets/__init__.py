"""Draw tickets: programs, earning periods and the event-sourced ticket ledger (issue
12); the draws on stage, their proxies and their prize letters (issue 13).

The pure core of ticket draws: no I/O, no clock.  See docs/tickets.md.
"""

from selector.floor import PointsSink
from selector.tickets.balances import Balances, recompute
from selector.tickets.day_verify import verify_day
from selector.tickets.draw_rules import (
    AddOn,
    DocumentType,
    DrawRules,
    Presenter,
    PrizeKind,
    PrizeSpec,
    WinLimit,
)
from selector.tickets.draw_session import DrawError, TicketDrawSession, TicketPick
from selector.tickets.draw_verify import verify_draw
from selector.tickets.entry import PlayerStanding, Refusal, RefusalReason
from selector.tickets.ledger import TicketLedger
from selector.tickets.period import PeriodKind, PeriodRule
from selector.tickets.prizes import Letter, PrizeLedger, PrizeRefused
from selector.tickets.program import TicketBin, TicketDraw, TicketPlan, TicketProgram
from selector.tickets.proxies import Nomination, ProxyBook, ProxyConflict, ProxyRefused
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
    "AddOn",
    "Balances",
    "Cause",
    "Channel",
    "DocumentType",
    "DrawError",
    "DrawRules",
    "DrawStatus",
    "Letter",
    "Nomination",
    "PeriodKind",
    "PeriodRule",
    "PlayerStanding",
    "PointsSink",
    "Presenter",
    "PrizeKind",
    "PrizeLedger",
    "PrizeRefused",
    "PrizeSpec",
    "ProxyBook",
    "ProxyConflict",
    "ProxyRefused",
    "Refusal",
    "RefusalReason",
    "TicketBin",
    "TicketDraw",
    "TicketDrawSession",
    "TicketLedger",
    "TicketPick",
    "TicketPlan",
    "TicketProgram",
    "TicketRecord",
    "TicketsCredited",
    "TicketsEntered",
    "WinLimit",
    "raps_ref",
    "receipt_number",
    "recompute",
    "record_from_dict",
    "verification_code",
    "verify_day",
    "verify_draw",
]

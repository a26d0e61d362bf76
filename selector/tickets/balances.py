"""Balances folded from ticket records, and the auditor's recompute.

The ledger and `raps verify` fold records through the same `Balances`, so the rules a
record must obey to follow the ones before it are written once: an entry never
activates more than was credited to that card in that bin before it (after the cap),
a grant, a RAPS-winner bonus or an external credit is never credited twice, every
receipt number follows its bin's sequence and, given the plan, every entry falls inside
an entry window of its bin.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from selector.tickets.program import TicketPlan
from selector.tickets.records import (
    Cause,
    TicketRecord,
    TicketsCredited,
    TicketsEntered,
    receipt_number,
    record_from_dict,
)


class Balances:
    """Credited and entered tickets per bin and card, in record order."""

    __slots__ = (
        "credited",
        "entered",
        "externals",
        "from_points",
        "keys",
        "plan",
        "requests",
        "seq",
    )

    def __init__(self, plan: TicketPlan | None = None) -> None:
        self.plan = plan
        self.credited: dict[str, dict[str, int]] = {}  # bin -> card -> tickets
        self.from_points: dict[str, dict[str, int]] = {}  # the part credited for points
        self.entered: dict[str, dict[str, int]] = {}
        self.seq: Counter[str] = Counter()  # entries per bin: the receipt sequence
        self.keys: set[tuple[str, ...]] = set()  # grants and RAPS bonuses already credited
        self.requests: dict[str, TicketsEntered] = {}
        self.externals: dict[str, TicketsCredited] = {}

    def _key(self, rec: TicketsCredited) -> tuple[str, ...] | None:
        """What makes a credit unique: one grant per card, bin and rule; one RAPS bonus per
        pick and program (per bin without a plan); points credits are never duplicates."""
        if rec.cause in (Cause.COMPLIMENTARY, Cause.APP_BONUS):
            return ("grant", rec.bin_id, rec.card, rec.cause.value)
        if rec.cause is Cause.RAPS_WINNER:
            b = self.plan.bins.get(rec.bin_id) if self.plan is not None else None
            return ("raps", rec.ref, b.program.program_id if b else f"bin:{rec.bin_id}")
        return None

    def raps_credited(self, ref: str, program_id: str) -> bool:
        return ("raps", ref, program_id) in self.keys

    def granted(self, bin_id: str, card: str, cause: Cause) -> bool:
        """Whether the card had its complimentary (or app-bonus) tickets in the bin."""
        return ("grant", bin_id, card, cause.value) in self.keys

    def free(self, bin_id: str, card: str) -> int:
        """Tickets the card can still enter in the bin (the program's cap applied)."""
        credited = self.credited.get(bin_id, {}).get(card, 0)
        b = self.plan.bins.get(bin_id) if self.plan is not None else None
        if b is not None and b.program.cap is not None:
            credited = min(credited, b.program.cap)
        return max(0, credited - self.entered.get(bin_id, {}).get(card, 0))

    def check(self, rec: TicketRecord) -> str | None:
        """Why this record cannot follow the ones folded so far; None when it can."""
        if self.plan is not None and rec.bin_id not in self.plan.bins:
            return f"unknown bin {rec.bin_id!r}"
        if isinstance(rec, TicketsCredited):
            if rec.cause is Cause.EXTERNAL and rec.ref in self.externals:
                return f"external credit {rec.ref!r} is credited twice"
            key = self._key(rec)
            if key is not None and key in self.keys:
                return f"{rec.cause.value} credit {rec.ref!r} for {rec.card} is credited twice"
            return None
        if rec.request_id in self.requests:
            return f"request {rec.request_id!r} is entered twice"
        expected = receipt_number(rec.bin_id, self.seq[rec.bin_id] + 1)
        if rec.receipt_no != expected:
            return f"receipt {rec.receipt_no!r} is out of sequence (expected {expected!r})"
        free = self.free(rec.bin_id, rec.card)
        if rec.tickets > free:
            return (
                f"{rec.card} entered {rec.tickets} tickets in {rec.bin_id!r} with only {free}"
                " credited and not yet entered before it"
            )
        if self.plan is not None and not self.plan.bins[rec.bin_id].entry_open(rec.at.timestamp()):
            return f"entry {rec.receipt_no!r} at {rec.at.isoformat()} is outside the entry windows"
        return None

    def add(self, rec: TicketRecord) -> None:
        """Fold the record in (whether or not it passed `check`: the audit counts what is there)."""
        if isinstance(rec, TicketsEntered):
            self.requests.setdefault(rec.request_id, rec)
            self.seq[rec.bin_id] += 1
            _bump(self.entered, rec.bin_id, rec.card, rec.tickets)
            return
        if rec.cause is Cause.POINTS:
            _bump(self.from_points, rec.bin_id, rec.card, rec.tickets)
        elif rec.cause is Cause.EXTERNAL:
            self.externals.setdefault(rec.ref, rec)
        key = self._key(rec)
        if key is not None:
            self.keys.add(key)
        _bump(self.credited, rec.bin_id, rec.card, rec.tickets)


def _bump(table: dict[str, dict[str, int]], bin_id: str, card: str, n: int) -> None:
    per_card = table.setdefault(bin_id, {})
    per_card[card] = per_card.get(card, 0) + n


def recompute(
    records: Iterable[TicketRecord | Mapping[str, Any]], plan: TicketPlan | None = None
) -> dict[str, Any]:
    """Every card's tickets per bin from the records alone, and every rule they break.

    Records may be objects or their journal dicts.  The result is JSON-ready:
    {"ok", "records", "errors": ["record 7: ..."], "bins": {bin: {"credited": {card: n},
    "entered": {card: n}, "by_cause": {cause: n}, "tickets_credited", "tickets_entered",
    "receipts"}}}.  With the plan, unknown bins, caps and entry windows are checked too.
    """
    books = Balances(plan)
    errors: list[str] = []
    by_cause: dict[str, Counter[str]] = {}
    n = 0
    for n, item in enumerate(records, start=1):
        try:
            rec = (
                item
                if isinstance(item, TicketsCredited | TicketsEntered)
                else record_from_dict(dict(item))
            )
        except (ValueError, TypeError) as exc:
            errors.append(f"record {n}: malformed: {exc}")
            continue
        reason = books.check(rec)
        if reason is not None:
            errors.append(f"record {n}: {reason}")
        books.add(rec)
        if isinstance(rec, TicketsCredited):
            by_cause.setdefault(rec.bin_id, Counter())[rec.cause.value] += rec.tickets
    bins: dict[str, Any] = {}
    for bin_id in sorted(set(books.credited) | set(books.entered)):
        credited = books.credited.get(bin_id, {})
        entered = books.entered.get(bin_id, {})
        bins[bin_id] = {
            "credited": dict(sorted(credited.items())),
            "entered": dict(sorted(entered.items())),
            "by_cause": dict(sorted(by_cause.get(bin_id, Counter()).items())),
            "tickets_credited": sum(credited.values()),
            "tickets_entered": sum(entered.values()),
            "receipts": books.seq[bin_id],
        }
    return {"ok": not errors, "records": n, "errors": errors, "bins": bins}

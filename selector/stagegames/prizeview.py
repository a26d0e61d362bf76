"""One view of every prize: the ticket draws' prize letters and the stage ledger, joined.

Why a view and not a third ledger: each prize is already recorded once where it is
decided and paid. A prize letter (selector.tickets.prizes, stream `prizes`) holds what a
winner collects (every prize line, the add-ons, the letter number, the collection);
the stage ledger (selector.stagegames.ledger, stream `stage-prizes`) holds every prize a
stage game gave, the safe's progressive, and what has no letter (a car qualifying spot,
amount 0, is a win of the day but nothing to collect). The view lists each prize line
once: every letter's lines (add-ons marked with their id), then each stage entry no
letter pays. Columns: draw, day, position, winner, amount, kind, add-on, letter number,
collection state, and the ledger entry's detail (the car's vehicle and buy-back).

Totals are kept per kind (`kind_totals`): cash, +Play, a car's nominal value and the
safe's payouts are different things, and one rand figure adding them up would mean
nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from selector.stagegames.ledger import Entry
from selector.tickets.prizes import Letter

NO_LETTER = "no_letter"  # a stage prize with nothing to collect (a qualifying spot)


@dataclass(frozen=True, slots=True)
class PrizeRow:
    draw_id: str
    day: date | None
    position: int | None
    card: str
    amount: int  # minor units
    kind: str  # cash, plus_play, voucher, item, car, car_spot, safe, vault_share
    add_on: str | None  # the add-on's id for an add-on line (000 rules 20-21)
    letter_no: str | None
    state: str  # awaiting, overdue, collected, forfeited, or no_letter
    ref: str  # the game (or device) that decided it, when known
    # what else the ledger entry says, as (name, value) pairs: the car's vehicle and the
    # buy-back agreed with the dealership (rule 87)
    detail: tuple[tuple[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "draw_id": self.draw_id,
            "day": None if self.day is None else self.day.isoformat(),
            "position": self.position,
            "card": self.card,
            "amount": self.amount,
            "kind": self.kind,
            "add_on": self.add_on,
            "letter_no": self.letter_no,
            "state": self.state,
            "ref": self.ref,
            "detail": dict(self.detail),
        }


def letter_state(letter: Letter, now: datetime) -> str:
    if letter.collection is not None:
        return "collected"
    if letter.forfeit is not None:
        return "forfeited"
    return "overdue" if letter.expired(now) else "awaiting"


def prize_rows(
    letters: Iterable[Letter],
    entries: Iterable[Entry],
    now: datetime,
    position_of: Callable[[str, int], int | None],
    day_of: Callable[[str], date | None],
) -> list[PrizeRow]:
    """Every prize once, letters first (in issue order), then the stage entries no
    letter pays. `position_of(session_id, pick)` is the winner's position in the draw
    (None if unknown); `day_of(draw_id)` the draw's promotional day."""
    left = list(entries)
    out: list[PrizeRow] = []
    no_detail: tuple[tuple[str, Any], ...] = ()
    for letter in letters:
        state = letter_state(letter, now)
        position = position_of(letter.session_id, letter.pick)
        day = day_of(letter.draw_id)
        for line in letter.prizes:
            ref, detail = "", no_detail
            for i, e in enumerate(left):
                a = e.award
                same = (a.draw_id, a.card, a.kind.value, a.amount)
                if same == (letter.draw_id, letter.winner_card, line.kind, line.amount):
                    ref, day, detail = a.ref, e.day, a.detail
                    del left[i]
                    break
            out.append(PrizeRow(letter.draw_id, day, position, letter.winner_card, line.amount,
                                line.kind, None, letter.letter_no, state, ref, detail))  # fmt: skip
        for add_on in letter.add_ons:
            for line in add_on.prizes:
                out.append(PrizeRow(letter.draw_id, day, position, letter.winner_card,
                                    line.amount, line.kind, add_on.id, letter.letter_no, state,
                                    ""))  # fmt: skip
    for e in left:
        a = e.award
        out.append(PrizeRow(a.draw_id, e.day, a.position, a.card, a.amount, a.kind.value, None,
                            None, NO_LETTER, a.ref, a.detail))  # fmt: skip
    return out


def totals(rows: Iterable[PrizeRow], key: Callable[[PrizeRow], str]) -> dict[str, int]:
    """Amounts summed by `key` (kind, draw, day ...), in first-seen order."""
    out: dict[str, int] = {}
    for r in rows:
        k = key(r)
        out[k] = out.get(k, 0) + r.amount
    return out


def kind_totals(
    rows: Iterable[PrizeRow], key: Callable[[PrizeRow], str]
) -> dict[str, dict[str, int]]:
    """Amounts summed by `key` (draw, day ...) and, within it, by kind, in first-seen
    order: a draw's cash and its car are two totals, never one."""
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        by_kind = out.setdefault(key(r), {})
        by_kind[r.kind] = by_kind.get(r.kind, 0) + r.amount
    return out

"""What a prize reads as: money as the casino prints it, prize lines, and the PA's
announcement of a winner (003 rule 16)."""

from __future__ import annotations

from collections.abc import Iterable

from selector.tickets.prizes import PrizeLine

ANNOUNCE_SECONDS = 90
_SYMBOLS = {"ZAR": "R"}
_KIND_LABELS = {"cash": "cash", "plus_play": "+Play", "voucher": "voucher"}


def money(amount_minor: int, currency: str = "ZAR") -> str:
    """Minor units as the casino prints them: 500000 -> 'R5,000.00' (two decimals)."""
    sign = "-" if amount_minor < 0 else ""
    major, minor = divmod(abs(amount_minor), 100)
    code = currency.upper()
    body = f"{major:,}.{minor:02d}"
    symbol = _SYMBOLS.get(code)
    return f"{sign}{symbol}{body}" if symbol else f"{sign}{code} {body}"


def kind_label(kind: str) -> str:
    """How a prize kind reads: 'plus_play' -> '+Play'."""
    return _KIND_LABELS.get(kind, kind.replace("_", " "))


def describe(line: PrizeLine, currency: str = "ZAR") -> str:
    """'R5,000.00 cash'; a prize without an amount (a car) is its kind alone."""
    label = kind_label(line.kind)
    return f"{money(line.amount, currency)} {label}" if line.amount else label


def prize_text(lines: Iterable[PrizeLine], currency: str = "ZAR") -> str:
    """Several prizes in one phrase: 'R5,000.00 cash and R500.00 +Play'."""
    parts = [describe(p, currency) for p in lines]
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def announcement(
    winner_display: str, prize_text: str, where: str, seconds: int = ANNOUNCE_SECONDS
) -> str:
    """What the PA says for a winner (003 rule 16): name, prize, where to come, how soon."""
    return (
        f"Congratulations {winner_display}, you have won {prize_text}. Please come to "
        f"{where} with your ID and your ticket receipt within {seconds} seconds."
    )

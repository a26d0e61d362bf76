"""What may be shown of a player: never a full card number, never a surname."""

from __future__ import annotations


def mask_card(card: str, visible: int = 4) -> str:
    """Card number with all but the last `visible` characters replaced by '*'."""
    if len(card) <= visible:
        return "*" * len(card)
    return "*" * (len(card) - visible) + card[-visible:]


def short_name(display_name: str) -> str:
    """First name and initial: 'Thandi Mokoena' -> 'Thandi M.'."""
    parts = display_name.split()
    if not parts:
        return ""
    if len(parts) == 1:
        return parts[0]
    return f"{parts[0]} {parts[-1][0].upper()}."


def announced_name(full: str, style: str) -> str:
    """The winner's name as configured for announcements (`announce_name`: the PA line,
    the stage screen): "first_initial" 'Thandi M.', "first" 'Thandi', "full" as given."""
    words = full.split()
    if not words:
        return full
    if style == "full":
        return " ".join(words)
    if style == "first":
        return words[0]
    return short_name(full)

"""Who may enter tickets, and the refusals an entry can meet.

The ledger cannot see the player directory or the floor, so the caller passes what they
say of the player at the moment of entry (`PlayerStanding`).  Exclusions apply to
tickets as they apply to RAPS pools (003 rules 1-3): an excluded or unverified player
keeps whatever was credited but cannot enter it.  Refusal reasons are stable strings,
counted as metric labels.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from selector.events import Exclusion, Tier

if TYPE_CHECKING:
    from selector.floor import PlayerProfile

_EXCLUSION_ORDER = tuple(Exclusion)


class RefusalReason(StrEnum):
    UNKNOWN_DRAW = "unknown_draw"
    UNKNOWN_PLAYER = "unknown_player"
    AGE_NOT_VERIFIED = "age_not_verified"
    SELF_EXCLUDED = "self_excluded"
    REFUSAL_OF_ENTRY = "refusal_of_entry"
    STAFF_OR_ASSOCIATE = "staff_or_associate"
    MANUAL_BLOCK = "manual_block"
    TIER_NOT_IN_PROGRAM = "tier_not_in_program"
    OUTSIDE_ENTRY_WINDOW = "outside_entry_window"
    NOT_PLAYING = "not_playing"  # the app channel needs live play (000 rule 7)
    NOTHING_TO_ENTER = "nothing_to_enter"
    REQUEST_ID_REUSED = "request_id_reused"
    INVALID_CREDIT = "invalid_credit"  # an external credit that is not a valid record


@dataclass(frozen=True, slots=True)
class Refusal:
    """An entry or credit the rules refuse; nothing was recorded."""

    reason: RefusalReason
    detail: str


@dataclass(frozen=True, slots=True)
class PlayerStanding:
    """What the directory and the floor say of a player now (tier None: unknown card)."""

    tier: Tier | None
    age_verified: bool = False
    exclusions: frozenset[Exclusion] = frozenset()
    app_registered: bool = False  # registered on the casino's app: app bonus tickets
    playing_now: bool = False  # active on a slot or at a table right now

    @classmethod
    def from_profile(
        cls,
        profile: PlayerProfile | None,
        *,
        app_registered: bool = False,
        playing_now: bool = False,
    ) -> PlayerStanding:
        """From `Floor.profile(card)`; None (not in the directory) is an unknown player."""
        if profile is None:
            return cls(None, playing_now=playing_now)
        return cls(
            profile.tier, profile.age_verified, profile.exclusions, app_registered, playing_now
        )

    def barred(self) -> Refusal | None:
        """The first directory rule that bars this player from any entry, if one does."""
        if self.tier is None:
            return Refusal(RefusalReason.UNKNOWN_PLAYER, "the card is not in the player directory")
        if not self.age_verified:
            return Refusal(RefusalReason.AGE_NOT_VERIFIED, "the player's age is not verified")
        for ex in _EXCLUSION_ORDER:
            if ex in self.exclusions:
                return Refusal(RefusalReason(ex.value), f"the player is excluded: {ex.value}")
        return None

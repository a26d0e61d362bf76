"""What a promotion asks of a player, and how play turns into points.

These are plain, validated settings: the daemon builds them from config, tests
build them directly.  The defaults are the seed's RAPS bonus jackpot session
(>= 50 points earned on slots or tables between 08:00 and 19:00 Johannesburg time).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from selector.claims import ClaimStart
from selector.events import PoolKind, Tier
from selector.layout import Machine, Table
from selector.windows import QualifyingWindow

ALL_TIERS = frozenset(Tier)


@dataclass(frozen=True, slots=True)
class Promotion:
    """Eligibility criteria of one promotion; pools are kept per (promotion, kind)."""

    promotion_id: str
    name: str = ""
    threshold_points: float = 50.0
    window: QualifyingWindow = field(default_factory=QualifyingWindow)
    tiers: frozenset[Tier] = ALL_TIERS
    areas_included: frozenset[str] | None = None  # None: every area
    areas_excluded: frozenset[str] = frozenset()
    pool_kinds: frozenset[PoolKind] = frozenset(PoolKind)
    min_active_seconds: float = 0.0
    # may its draws go on unwitnessed when the witness cannot be reached (None: as the
    # site's `[witness] fallback` says); recorded in each draw's opening record
    witness_fallback: bool | None = None

    def __post_init__(self) -> None:
        if not self.promotion_id:
            raise ValueError("promotion_id must not be empty")
        if self.threshold_points < 0:
            raise ValueError("threshold_points must be >= 0")
        if self.min_active_seconds < 0:
            raise ValueError("min_active_seconds must be >= 0")
        if not self.tiers:
            raise ValueError("a promotion must admit at least one tier")
        if not self.pool_kinds:
            raise ValueError("a promotion must have at least one pool kind")

    def area_allowed(self, area: str) -> bool:
        if area in self.areas_excluded:
            return False
        return self.areas_included is None or area in self.areas_included


@dataclass(frozen=True, slots=True)
class EarnRules:
    """How points are earned.

    points_source 'events': only PointsEarned events from the casino system count.
    points_source 'computed': slot wagers and table ratings are turned into points:
    a slot game earns wager / slot_wager_per_point, a table rating earns
    average_bet * minutes / table_bet_minutes_per_point.  Overrides are keyed by
    area or by game type ('area:Salon', 'game:blackjack'); area wins over game type.
    """

    points_source: str = "computed"
    slot_wager_per_point: int = 1000  # minor units wagered per point (R10 per point)
    table_bet_minutes_per_point: int = 10_000  # R100 average bet for one minute = 1 point
    slot_overrides: Mapping[str, int] = field(default_factory=dict)
    table_overrides: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.points_source not in ("events", "computed"):
            raise ValueError(
                f"points_source must be 'events' or 'computed', not {self.points_source!r}"
            )
        rates = [self.slot_wager_per_point, self.table_bet_minutes_per_point]
        rates += [*self.slot_overrides.values(), *self.table_overrides.values()]
        if any(r <= 0 for r in rates):
            raise ValueError("earn rates must be positive")
        for key in [*self.slot_overrides, *self.table_overrides]:
            if not key.startswith(("area:", "game:")):
                raise ValueError(f"earn override {key!r} must start with 'area:' or 'game:'")

    def slot_rate(self, machine: Machine) -> int:
        o = self.slot_overrides
        return o.get(
            f"area:{machine.area}", o.get(f"game:{machine.game_type}", self.slot_wager_per_point)
        )

    def table_rate(self, table: Table) -> int:
        o = self.table_overrides
        return o.get(
            f"area:{table.area}", o.get(f"game:{table.game_type}", self.table_bet_minutes_per_point)
        )


@dataclass(frozen=True, slots=True)
class SessionRules:
    """How a RAPS bonus jackpot session runs (seed: 6 slots + 4 tables, 90 s to present)."""

    quotas: Mapping[PoolKind, int] = field(
        default_factory=lambda: {PoolKind.SLOTS: 6, PoolKind.TABLES: 4}
    )
    claim_seconds: float = 90.0
    exclude_no_shows: bool = False  # 003: "selected more than once, win only once"
    exclude_voided: bool = True
    # [start, end) when a live session may be opened and drawn (003: 18:00-19:00); None:
    # no window. Outside it an admin overrides with a reason, journaled (003 rule 20).
    window: tuple[datetime, datetime] | None = None
    # the claim countdown starts at the draw, or when the winner is found absent
    # (selector.claims); a winner not reached this long after the draw (or after
    # security's acknowledgement) escalates once; None: never
    claim_starts: ClaimStart = ClaimStart.DRAW
    max_en_route_seconds: float | None = 120.0

    def __post_init__(self) -> None:
        if any(q < 0 for q in self.quotas.values()) or not any(self.quotas.values()):
            raise ValueError("quotas must be >= 0 and at least one must be positive")
        if self.claim_seconds <= 0:
            raise ValueError("claim_seconds must be positive")
        try:
            object.__setattr__(self, "claim_starts", ClaimStart(self.claim_starts))
        except ValueError:
            raise ValueError(f"claim_starts must be one of {', '.join(ClaimStart)}") from None
        if self.max_en_route_seconds is not None and self.max_en_route_seconds <= 0:
            raise ValueError("max_en_route_seconds must be positive (or None: no limit)")
        if self.window is not None:
            start, end = self.window
            if start.tzinfo is None or end.tzinfo is None:
                raise ValueError("a session window must be timezone-aware")
            if end <= start:
                raise ValueError("a session window must end after it starts")

"""`[earn]`, `[[promotions]]` and `[[sessions]]`: how play turns into points, who qualifies,
and the scheduled RAPS sessions; and their translation into the core's settings."""

from __future__ import annotations

from datetime import datetime, time
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from adapters.wire.settings import StrictModel, key_problems
from raps.config.common import check_item_id, parse_datetime, parse_hhmm, site_time
from raps.config.errors import key_part
from selector.calendar_spec import read_period
from selector.events import PoolKind, Tier
from selector.promotion import Promotion
from selector.schedule import PromotionPlan, SessionPlan
from selector.windows import QualifyingWindow

TierName = Literal["ten", "jack", "queen", "king", "ace"]
PoolKindName = Literal["slots", "tables"]


class EarnConfig(StrictModel):
    """How play turns into points (selector.promotion.EarnRules)."""

    points_source: Literal["computed", "events"] = "computed"
    slot_wager_per_point: int = Field(default=1000, gt=0)
    table_bet_minutes_per_point: int = Field(default=10_000, gt=0)
    slot_overrides: dict[str, Annotated[int, Field(gt=0)]] = Field(default_factory=dict)
    table_overrides: dict[str, Annotated[int, Field(gt=0)]] = Field(default_factory=dict)

    @field_validator("slot_overrides", "table_overrides")
    @classmethod
    def _keyed_by_area_or_game(cls, v: dict[str, int]) -> dict[str, int]:
        bad = [k for k in v if not k.startswith(("area:", "game:")) or k in ("area:", "game:")]
        if bad:
            raise key_problems(
                [(key_part(k), "override keys look like 'area:NAME' or 'game:TYPE'") for k in bad]
            )
        return v


class WindowConfig(StrictModel):
    """Local time of day in which points count; end 00:00 or 24:00 means midnight."""

    start: time = time(8, 0)
    end: time = time(19, 0)

    @field_validator("start", "end", mode="before")
    @classmethod
    def _hhmm(cls, v: Any, info: ValidationInfo) -> Any:
        return parse_hhmm(v, info.field_name or "")

    @model_validator(mode="after")
    def _ordered(self) -> WindowConfig:
        if self.end != time(0, 0) and self.end <= self.start:
            raise key_problems(
                [("end", f'must be after start {self.start:%H:%M} (use "24:00" for midnight)')]
            )
        return self


class PromotionConfig(StrictModel):
    """Who qualifies for a promotion (selector.promotion.Promotion)."""

    id: str
    name: str = ""
    threshold_points: float = Field(default=50.0, ge=0)
    window: WindowConfig = Field(default_factory=WindowConfig)
    tiers: tuple[TierName, ...] = Field(
        default=("ten", "jack", "queen", "king", "ace"), min_length=1
    )
    areas_included: tuple[str, ...] | None = None
    areas_excluded: tuple[str, ...] = ()
    pool_kinds: tuple[PoolKindName, ...] = Field(default=("slots", "tables"), min_length=1)
    min_active_seconds: float = Field(default=0.0, ge=0)
    # how the handheld's PA line names a winner (003 rule 16): "Thandi M.", "Thandi" or
    # "Thandi Mokoena"; the screens always show first name and initial
    announce_name: Literal["first_initial", "first", "full"] = "first_initial"
    # may its draws go on unwitnessed when the witness cannot be reached; None: as the
    # site's `[witness] fallback` says (docs/configuration.md)
    witness_fallback: bool | None = None
    # the schedule (selector.schedule), seeded from here at first start: its period, its
    # calendar of draws (selector.calendar_spec) and the RAPS sessions that calendar makes
    period: dict[str, Any] | None = None
    calendar: dict[str, Any] | None = None
    calendar_sessions: dict[str, Any] | None = None

    @field_validator("id")
    @classmethod
    def _plain_id(cls, v: str) -> str:
        return check_item_id(v)


class QuotasConfig(StrictModel):
    """Winners per pool in one session (seed: 6 slots + 4 tables)."""

    slots: int = Field(default=6, ge=0)
    tables: int = Field(default=4, ge=0)

    @model_validator(mode="after")
    def _some(self) -> QuotasConfig:
        if not (self.slots or self.tables):
            raise key_problems([("", "at least one of slots, tables must be > 0")])
        return self


class SessionConfig(StrictModel):
    """A scheduled RAPS bonus jackpot session (selector.promotion.SessionRules)."""

    id: str
    promotion: str
    name: str = Field(default="", max_length=80)
    starts: datetime
    # the window closes; not set: the end of the promotion's calendar occurrence whose
    # window holds `starts` (a live session without either is refused; rehearsals need none)
    ends: datetime | None = None
    quotas: QuotasConfig = Field(default_factory=QuotasConfig)
    claim_seconds: float = Field(default=90.0, gt=0)
    exclude_no_shows: bool = False
    exclude_voided: bool = True
    rehearsal: bool = False
    # when the claim countdown starts: at the "draw", or when the winner is found
    # "absent" (selector.claims); a winner not reached this long escalates (0: never)
    claim_starts: Literal["draw", "absent"] = "draw"
    max_en_route_seconds: float = Field(default=120.0, ge=0, le=3600)
    # why a live session is held off its promotion's calendar (shown by `raps verify`)
    off_calendar: str = Field(default="", max_length=500)

    @field_validator("id")
    @classmethod
    def _plain_id(cls, v: str) -> str:
        return check_item_id(v)

    @field_validator("starts", "ends", mode="before")
    @classmethod
    def _iso(cls, v: Any) -> Any:
        return None if v is None else parse_datetime(v)


def promotion_plan(p: PromotionConfig) -> PromotionPlan | None:
    """The promotion's schedule entry, if the config gives it a period or a calendar."""
    if p.period is None and p.calendar is None and p.calendar_sessions is None:
        return None
    return PromotionPlan(p.id, read_period(p.period), p.calendar, p.calendar_sessions)


def session_plan(s: SessionConfig, tz: str) -> SessionPlan:
    """A [[sessions]] entry as the schedule holds it."""
    return SessionPlan(
        session_id=s.id,
        promotion_id=s.promotion,
        starts=site_time(s.starts, tz),
        ends=None if s.ends is None else site_time(s.ends, tz),
        slots=s.quotas.slots,
        tables=s.quotas.tables,
        claim_seconds=s.claim_seconds,
        exclude_no_shows=s.exclude_no_shows,
        exclude_voided=s.exclude_voided,
        rehearsal=s.rehearsal,
        name=s.name,
        claim_starts=s.claim_starts,
        max_en_route_seconds=s.max_en_route_seconds or None,
        off_calendar=s.off_calendar,
    )


def core_promotion(p: PromotionConfig, tz: str) -> Promotion:
    return Promotion(
        promotion_id=p.id,
        name=p.name or p.id,
        threshold_points=p.threshold_points,
        window=QualifyingWindow(tz=tz, start=p.window.start, end=p.window.end),
        tiers=frozenset(Tier(t) for t in p.tiers),
        areas_included=None if p.areas_included is None else frozenset(p.areas_included),
        areas_excluded=frozenset(p.areas_excluded),
        pool_kinds=frozenset(PoolKind(k) for k in p.pool_kinds),
        min_active_seconds=p.min_active_seconds,
        witness_fallback=p.witness_fallback,
    )

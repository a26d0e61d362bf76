"""`[ticket_programs.stage]`: how a program's draws run on stage (selector.tickets.DrawRules),
and the prizes a `[[ticket_draws]]` entry may set for its own positions.

Defaults are the seeds' common rules: 90 seconds to present, proxy forms until 15
minutes before the draw, prizes collected within 15 days, a proxy's own entry barred
from the draw they stand in for.  Prizes by position are optional: a position without
one has its prize revealed by a device on stage and recorded with the device's
reference.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from adapters.wire.settings import StrictModel, key_problems
from raps.config.common import check_item_id
from selector.tickets.draw_rules import (
    AddOn,
    AddOnRequirement,
    DrawRules,
    PrizeKind,
    PrizeSpec,
    WinLimit,
)
from selector.tickets.proxies import ProxyConflict

PrizeKindName = Literal["cash", "plus_play", "voucher", "item"]


class PrizeConfig(StrictModel):
    """A position's prize: an amount in minor units (cents) of a kind, or kind = "device"
    (no amount) for a prize revealed by a device on stage."""

    kind: Literal["cash", "plus_play", "voucher", "item", "device"] = "cash"
    amount: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _amount_of_the_kind(self) -> PrizeConfig:
        if self.kind == "device" and self.amount is not None:
            raise key_problems([("amount", 'does not apply to kind = "device"')])
        if self.kind != "device" and self.amount is None:
            raise key_problems([("amount", f'missing (kind = "{self.kind}" needs it)')])
        return self

    def core(self) -> PrizeSpec | None:
        if self.amount is None:
            return None
        return PrizeSpec(amount=self.amount, kind=PrizeKind(self.kind))


class AddOnPrizeConfig(StrictModel):
    amount: int = Field(ge=0)
    kind: PrizeKindName = "cash"

    def core(self) -> PrizeSpec:
        return PrizeSpec(amount=self.amount, kind=PrizeKind(self.kind))


class AddOnConfig(StrictModel):
    """A per-winner extra the host verifies on stage (000 rules 20-21)."""

    id: str
    name: str = Field(min_length=1, max_length=80)
    requires: Literal["app_registered", "online_active"]
    prizes: tuple[AddOnPrizeConfig, ...] = Field(min_length=1)

    @field_validator("id")
    @classmethod
    def _plain_id(cls, v: str) -> str:
        return check_item_id(v)

    def core(self) -> AddOn:
        return AddOn(
            id=self.id,
            name=self.name,
            prizes=tuple(p.core() for p in self.prizes),
            requires=AddOnRequirement(self.requires),
        )


class StageConfig(StrictModel):
    """How each draw of a program runs: win limit, presenting, proxies, prizes."""

    win_limit: Literal["per_draw", "per_day"] = "per_draw"
    present_seconds: int = Field(default=90, ge=1, le=3600)
    exclude_no_shows: bool = True
    proxy_conflict: Literal["bar_entry", "refuse_nomination"] = "bar_entry"
    proxy_deadline_minutes: int = Field(default=15, ge=0, le=24 * 60)
    collect_days: int = Field(default=15, ge=1, le=365)
    prizes: tuple[PrizeConfig, ...] = ()  # by position; missing: revealed by a device
    add_ons: tuple[AddOnConfig, ...] = ()
    announce_name: Literal["first_initial", "first", "full"] = "first_initial"
    announce_where: str = Field(default="the main stage", min_length=1, max_length=80)

    @model_validator(mode="after")
    def _unique_add_ons(self) -> StageConfig:
        seen: set[str] = set()
        problems = []
        for i, a in enumerate(self.add_ons):
            if a.id in seen:
                problems.append((f"add_ons[{i}].id", f"{a.id!r} is used twice"))
            seen.add(a.id)
        if problems:
            raise key_problems(problems)
        return self

    @property
    def conflict(self) -> ProxyConflict:
        return ProxyConflict(self.proxy_conflict)

    def rules(self, winners: int, prizes: tuple[PrizeConfig, ...] | None) -> DrawRules:
        """The core's rules for one draw; the draw's own prizes replace the program's."""
        chosen = self.prizes if prizes is None else prizes
        return DrawRules(
            winners=winners,
            win_limit=WinLimit(self.win_limit),
            present_seconds=self.present_seconds,
            prizes=tuple(p.core() for p in chosen[:winners]),
            add_ons=tuple(a.core() for a in self.add_ons),
            exclude_no_shows=self.exclude_no_shows,
        )

"""The rules a ticket draw runs by on stage (seed 003 "TEEDS", seed 000 Gold Reef City).

- 003: 5 winners per tier draw, "participants can only win once per draw" (a card that
  has won is out of the bin before the next pick), 90 seconds to present with ID and the
  ticket receipt, else a redraw; "a device will be used to reveal prizes".
- 000: "patrons can only win once per promotional day" (rules 12, 34, 74, 127, 139),
  so the day's earlier winners come in barred; +R500 if the winner shows the Tsogo Sun
  app registered (rule 20), +R500 +Play if registered and active on playTSOGO (rule 21).

Plain frozen values: the config builds them, the draw records them in `draw.opened`
(`to_dict`) and the verifier reads them back (`from_dict`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

LAST_DIGITS_MIN = 2
LAST_DIGITS_MAX = 4


class WinLimit(StrEnum):
    PER_DRAW = "per_draw"  # 003: once per draw
    PER_DAY = "per_day"  # 000: once per promotional day, across that day's draws


class DocumentType(StrEnum):
    """The identification accepted on stage (003: SA ID, driving licence, passport)."""

    SA_ID = "sa_id"
    DRIVING_LICENCE = "driving_licence"
    PASSPORT = "passport"


class Presenter(StrEnum):
    WINNER = "winner"
    PROXY = "proxy"


class PrizeKind(StrEnum):
    CASH = "cash"
    PLUS_PLAY = "plus_play"
    VOUCHER = "voucher"
    ITEM = "item"
    # what the stage games (selector.stagegames) give, on the draw's award and its letter
    CAR = "car"
    CAR_SPOT = "car_spot"  # a car draw qualifying spot (amount 0)
    SAFE = "safe"  # the cracked digit safe's progressive
    VAULT_SHARE = "vault_share"  # a share of the uncracked vault, 20 Dec 21:30


class AddOnRequirement(StrEnum):
    APP_REGISTERED = "app_registered"
    ONLINE_ACTIVE = "online_active"


def _printable_id(what: str, value: object) -> str:
    if not isinstance(value, str) or not value or not value.isprintable() or value != value.strip():
        raise ValueError(f"{what} must be a non-empty printable string without edge spaces")
    if any(c.isspace() for c in value):
        raise ValueError(f"{what} {value!r} must not contain whitespace")
    return value


def last_digits(value: str) -> str:
    """The last 2 to 4 digits of a document, as the host records them.

    The host never records a whole ID number (privacy): only the document type and
    these few digits, enough to tell the person on stage from another."""
    if (
        not isinstance(value, str)
        or not value.isascii()
        or not value.isdigit()
        or not LAST_DIGITS_MIN <= len(value) <= LAST_DIGITS_MAX
    ):
        raise ValueError(
            f"last digits must be {LAST_DIGITS_MIN} to {LAST_DIGITS_MAX} ASCII digits "
            "(never a whole ID number)"
        )
    return value


@dataclass(frozen=True, slots=True)
class PrizeSpec:
    amount: int  # minor currency units (cents)
    kind: PrizeKind

    def __post_init__(self) -> None:
        if isinstance(self.amount, bool) or not isinstance(self.amount, int) or self.amount < 0:
            raise ValueError(f"prize amount must be an integer >= 0, not {self.amount!r}")
        object.__setattr__(self, "kind", PrizeKind(self.kind))

    def to_dict(self) -> dict[str, Any]:
        return {"amount": self.amount, "kind": self.kind.value}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PrizeSpec:
        return cls(amount=d["amount"], kind=PrizeKind(d["kind"]))


@dataclass(frozen=True, slots=True)
class AddOn:
    """An extra a verified winner gets when they show what it requires (000 rules 20-21)."""

    id: str
    name: str
    prizes: tuple[PrizeSpec, ...]
    requires: AddOnRequirement

    def __post_init__(self) -> None:
        _printable_id("add-on id", self.id)
        if not isinstance(self.name, str) or not self.name.strip() or not self.name.isprintable():
            raise ValueError(f"add-on {self.id!r}: name must be non-empty printable text")
        object.__setattr__(self, "prizes", tuple(self.prizes))
        if not self.prizes:
            raise ValueError(f"add-on {self.id!r}: needs at least one prize")
        for p in self.prizes:
            if not isinstance(p, PrizeSpec):
                raise ValueError(f"add-on {self.id!r}: prizes must be PrizeSpec values")
        object.__setattr__(self, "requires", AddOnRequirement(self.requires))

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "prizes": [p.to_dict() for p in self.prizes],
            "requires": self.requires.value,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> AddOn:
        return cls(
            id=d["id"],
            name=d["name"],
            prizes=tuple(PrizeSpec.from_dict(p) for p in d["prizes"]),
            requires=AddOnRequirement(d["requires"]),
        )


# Seed 000 rules 20-21, as a config may name them.
GOLD_REEF_ADD_ONS: tuple[AddOn, ...] = (
    AddOn("app", "Tsogo Sun app registered", (PrizeSpec(50_000, PrizeKind.CASH),),
          AddOnRequirement.APP_REGISTERED),
    AddOn("online", "playTSOGO registered and active", (PrizeSpec(50_000, PrizeKind.PLUS_PLAY),),
          AddOnRequirement.ONLINE_ACTIVE),
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class DrawRules:
    """How one ticket draw runs on stage."""

    winners: int = 5
    win_limit: WinLimit = WinLimit.PER_DRAW
    present_seconds: int = 90
    # by position 1..winners; missing or None: revealed by a prize device at the stage
    prizes: tuple[PrizeSpec | None, ...] = ()
    add_ons: tuple[AddOn, ...] = ()
    exclude_no_shows: bool = True  # a no-show is not drawn again in the same draw
    exclude_voided: bool = True

    def __post_init__(self) -> None:
        # 0 winners: a car day's 21:00 finalist draw when the spots are already all held
        for name, least in (("winners", 0), ("present_seconds", 1)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < least:
                raise ValueError(f"draw rules: {name} must be an integer >= {least}, not {v!r}")
        object.__setattr__(self, "win_limit", WinLimit(self.win_limit))
        object.__setattr__(self, "prizes", tuple(self.prizes))
        object.__setattr__(self, "add_ons", tuple(self.add_ons))
        if len(self.prizes) > self.winners:
            raise ValueError(
                f"draw rules: {len(self.prizes)} position prizes for {self.winners} winners"
            )
        for i, p in enumerate(self.prizes, 1):
            if p is not None and not isinstance(p, PrizeSpec):
                raise ValueError(f"draw rules: prize of position {i} must be a PrizeSpec or None")
        seen: set[str] = set()
        for a in self.add_ons:
            if not isinstance(a, AddOn):
                raise ValueError("draw rules: add_ons must be AddOn values")
            if a.id in seen:
                raise ValueError(f"draw rules: add-on id {a.id!r} is used twice")
            seen.add(a.id)
        for name in ("exclude_no_shows", "exclude_voided"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"draw rules: {name} must be true or false")

    def prize_for(self, position: int) -> PrizeSpec | None:
        """The prize the rules set for a position; None: a device reveals it on stage."""
        if not 1 <= position <= self.winners:
            raise ValueError(f"position {position} is outside 1..{self.winners}")
        return self.prizes[position - 1] if position <= len(self.prizes) else None

    def add_on(self, add_on_id: str) -> AddOn | None:
        return next((a for a in self.add_ons if a.id == add_on_id), None)

    def to_dict(self) -> dict[str, Any]:
        """As `draw.opened` records them (the verifier reads them back)."""
        return {
            "winners": self.winners,
            "win_limit": self.win_limit.value,
            "present_seconds": self.present_seconds,
            "exclude_no_shows": self.exclude_no_shows,
            "exclude_voided": self.exclude_voided,
            "prizes": [None if p is None else p.to_dict() for p in self.prizes],
            "add_ons": [a.to_dict() for a in self.add_ons],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DrawRules:
        return cls(
            winners=d["winners"],
            win_limit=WinLimit(d["win_limit"]),
            present_seconds=d["present_seconds"],
            prizes=tuple(None if p is None else PrizeSpec.from_dict(p) for p in d["prizes"]),
            add_ons=tuple(AddOn.from_dict(a) for a in d["add_ons"]),
            exclude_no_shows=d["exclude_no_shows"],
            exclude_voided=d["exclude_voided"],
        )

"""FloorEvent validation: the edge must refuse what the core cannot reason about.

Money is integer minor units and never negative, time is always timezone-aware, and
every event carries an id for dedupe.  The core trusts these invariants, so a bad
event has to fail at construction, not somewhere deep in the floor.
"""

from __future__ import annotations

import dataclasses
import math
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from typing import Any

import pytest

from selector.events import (
    CardInserted,
    CardRemoved,
    FloorEvent,
    GamePlayed,
    MachineStatus,
    MachineStatusChanged,
    PlayerUpserted,
    PointsEarned,
    TableRatingClosed,
    TableRatingOpened,
    TableRatingUpdated,
    TicketsGranted,
    Tier,
)
from tests.builders import NOON, SAST

NAIVE = datetime(2026, 4, 25, 12, 0)


def head(**over: Any) -> dict[str, Any]:
    """A valid event header, with some fields replaced."""
    base: dict[str, Any] = {"event_id": "e1", "source": "test", "ts": NOON}
    base.update(over)
    return base


ALL_EVENTS: list[tuple[type[FloorEvent], dict[str, Any]]] = [
    (CardInserted, {"machine": "M01", "card": "C1"}),
    (CardRemoved, {"machine": "M01", "card": "C1"}),
    (GamePlayed, {"machine": "M01", "wager": 1000}),
    (MachineStatusChanged, {"machine": "M01", "status": MachineStatus.ONLINE}),
    (TableRatingOpened, {"table": "T1", "seat": 1, "card": "C1"}),
    (TableRatingUpdated, {"table": "T1", "seat": 1, "card": "C1", "average_bet": 1, "minutes": 1}),
    (TableRatingClosed, {"table": "T1", "seat": 1, "card": "C1", "average_bet": 1, "minutes": 1}),
    (PointsEarned, {"card": "C1", "points": 1.0}),
    (
        PlayerUpserted,
        {"card": "C1", "tier": Tier.TEN, "display_name": "X", "age_verified": True},
    ),
    (TicketsGranted, {"card": "C1", "bin_id": "sat-cash-2025-10-04", "tickets": 1}),
]
EVENT_IDS = [cls.__name__ for cls, _ in ALL_EVENTS]


@pytest.mark.parametrize(("cls", "fields"), ALL_EVENTS, ids=EVENT_IDS)
def test_naive_timestamp_is_rejected(cls: type[FloorEvent], fields: dict[str, Any]) -> None:
    """A naive time has no instant: the window and day rules would silently guess."""
    with pytest.raises(ValueError, match="timezone-aware"):
        cls(**head(ts=NAIVE), **fields)


@pytest.mark.parametrize(("cls", "fields"), ALL_EVENTS, ids=EVENT_IDS)
def test_empty_event_id_is_rejected(cls: type[FloorEvent], fields: dict[str, Any]) -> None:
    """Ingest dedupes by event id; an empty id would collapse unrelated events."""
    with pytest.raises(ValueError, match="event_id"):
        cls(**head(event_id=""), **fields)


@pytest.mark.parametrize(("cls", "fields"), ALL_EVENTS, ids=EVENT_IDS)
def test_valid_event_is_built_and_frozen(cls: type[FloorEvent], fields: dict[str, Any]) -> None:
    """Every event type builds from valid fields and cannot be changed afterwards."""
    event = cls(**head(), **fields)
    assert event.epoch == NOON.timestamp()
    with pytest.raises(AttributeError):
        event.event_id = "other"  # type: ignore[misc]


def test_tzinfo_whose_offset_is_none_counts_as_naive() -> None:
    """A tzinfo that returns no offset is as unusable as none at all."""

    class NoOffset(tzinfo):
        def utcoffset(self, dt: datetime | None) -> timedelta | None:
            return None

        def tzname(self, dt: datetime | None) -> str | None:
            return None

        def dst(self, dt: datetime | None) -> timedelta | None:
            return None

    ts = datetime(2026, 4, 25, 12, 0, tzinfo=NoOffset())
    with pytest.raises(ValueError, match="timezone-aware"):
        CardInserted(**head(ts=ts), machine="M01", card="C1")


@pytest.mark.parametrize(("wager", "win"), [(-1, 0), (0, -1), (-1000, -1000)])
def test_negative_wager_or_win_rejected(wager: int, win: int) -> None:
    """A negative wager would take points away; a meter glitch must not reach the core."""
    with pytest.raises(ValueError, match="wager and win"):
        GamePlayed(**head(), machine="M01", wager=wager, win=win)


def test_zero_wager_and_win_are_valid() -> None:
    """A free game (zero wager) is real play and must be accepted."""
    game = GamePlayed(**head(), machine="M01", wager=0, win=0)
    assert game.wager == 0
    assert game.win == 0


@pytest.mark.parametrize("cls", [TableRatingUpdated, TableRatingClosed])
@pytest.mark.parametrize(("bet", "minutes"), [(-1, 1.0), (1, -0.5), (-1, -1.0)])
def test_negative_average_bet_or_minutes_rejected(
    cls: type[TableRatingUpdated | TableRatingClosed], bet: int, minutes: float
) -> None:
    """Rating figures feed points directly: negatives would un-earn points."""
    with pytest.raises(ValueError, match="average_bet and minutes"):
        cls(**head(), table="T1", seat=1, card="C1", average_bet=bet, minutes=minutes)


@pytest.mark.parametrize("cls", [TableRatingUpdated, TableRatingClosed])
def test_zero_rating_figures_are_valid(
    cls: type[TableRatingUpdated | TableRatingClosed],
) -> None:
    """A rating just opened has zero minutes; that must not be an error."""
    event = cls(**head(), table="T1", seat=1, card="C1", average_bet=0, minutes=0.0)
    assert event.minutes == 0.0


@pytest.mark.parametrize("cls", [TableRatingUpdated, TableRatingClosed])
@pytest.mark.parametrize("minutes", [math.nan, math.inf])
def test_non_finite_minutes_rejected(
    cls: type[TableRatingUpdated | TableRatingClosed], minutes: float
) -> None:
    """NaN slips past `minutes < 0` and inf is unbounded; either crashes the floor later."""
    with pytest.raises(ValueError):
        cls(**head(), table="T1", seat=1, card="C1", average_bet=10_000, minutes=minutes)


@pytest.mark.parametrize("points", [math.nan, math.inf])
def test_non_finite_points_rejected(points: float) -> None:
    """Validated at the edge means a NaN/inf point count never reaches the floor."""
    with pytest.raises(ValueError):
        PointsEarned(**head(), card="C1", points=points)


def test_rating_opened_negative_average_bet_rejected() -> None:
    """Money is never negative: the open event must be validated like update and close."""
    with pytest.raises(ValueError):
        TableRatingOpened(**head(), table="T1", seat=1, card="C1", average_bet=-1)


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"tickets": 0}, "tickets must be an integer >= 1"),
        ({"tickets": -5}, "tickets must be an integer >= 1"),
        ({"tickets": True}, "tickets must be an integer >= 1"),
        ({"bin_id": ""}, "bin_id must not be empty"),
        ({"card": "60 01"}, "card id"),
    ],
)
def test_tickets_granted_needs_a_card_a_bin_and_at_least_one_ticket(
    fields: dict[str, Any], match: str
) -> None:
    """Grants only ever add tickets: a zero or negative count is a broken feed."""
    good: dict[str, Any] = {"card": "C1", "bin_id": "b1", "tickets": 3}
    with pytest.raises(ValueError, match=match):
        TicketsGranted(**head(), **{**good, **fields})
    assert TicketsGranted(**head(), **good).reason == ""


@pytest.mark.parametrize(
    "ts",
    [
        NOON,
        NOON.astimezone(UTC),
        NOON.astimezone(timezone(timedelta(hours=-5))),
        NOON.astimezone(timezone(timedelta(hours=5, minutes=30))),
    ],
    ids=["sast", "utc", "minus5", "plus0530"],
)
def test_epoch_equals_timestamp_whatever_the_offset(ts: datetime) -> None:
    """epoch is derived once at the edge and is the same for one instant in any offset."""
    event = CardInserted(**head(ts=ts), machine="M01", card="C1")
    assert event.epoch == ts.timestamp()
    assert event.epoch == NOON.timestamp()


def test_epoch_is_not_an_init_argument_and_not_compared() -> None:
    """epoch is derived, never supplied: a caller cannot pass a contradicting value."""
    with pytest.raises(TypeError):
        CardInserted(**head(), machine="M01", card="C1", epoch=0.0)  # type: ignore[call-arg]
    a = CardInserted(**head(), machine="M01", card="C1")
    b = CardInserted(**head(ts=NOON.astimezone(UTC)), machine="M01", card="C1")
    assert a.epoch == b.epoch


def test_sast_zone_is_plus_two_hours() -> None:
    """Sanity of the test zone: Johannesburg is UTC+2 with no DST."""
    assert NOON.utcoffset() == timedelta(hours=2)
    assert datetime(2026, 1, 1, tzinfo=SAST).utcoffset() == timedelta(hours=2)


def _text_fields(cls: type[FloorEvent], fields: dict[str, Any]) -> list[str]:
    """The event's text fields a test may spoil: every str but the card (check_card's)."""
    built = cls(**head(), **fields)
    names = [f.name for f in dataclasses.fields(cls) if f.init and f.name not in ("card", "ts")]
    optional = ("block_reason", "photo_url")  # None by default
    return [n for n in names if type(getattr(built, n)) is str or n in optional]


TEXT_CASES = [
    (cls, fields, name) for cls, fields in ALL_EVENTS for name in _text_fields(cls, fields)
]
UNCLEAN = ["Thandi \ud800", "dir-\udfff", "a\x00b", "a\nb", "bad\x7f", "x\x1b[31m", "a\u2028b"]


@pytest.mark.parametrize(("cls", "fields", "name"), TEXT_CASES,
                         ids=[f"{c.__name__}.{n}" for c, _, n in TEXT_CASES])  # fmt: skip
def test_unclean_text_in_any_field_is_refused_like_a_card_id(
    cls: type[FloorEvent], fields: dict[str, Any], name: str
) -> None:
    """A lone surrogate cannot be journaled; controls and separators break logs and
    screens: the core refuses them on construction, whatever adapter built the event."""
    for value in UNCLEAN:
        with pytest.raises(ValueError, match=f"{name}: holds U\\+"):
            cls(**{**head(), **fields, name: value})
    clean = "Zoë N\u00a0Ndlovu 👩\u200d👩"  # non-ASCII, a no-break space, a ZWJ sequence
    assert getattr(cls(**{**head(), **fields, name: clean}), name) == clean


def test_every_text_field_of_a_player_is_checked() -> None:
    names = {n for c, _, n in TEXT_CASES if c is PlayerUpserted}
    assert names == {"event_id", "source", "display_name", "block_reason", "photo_url"}

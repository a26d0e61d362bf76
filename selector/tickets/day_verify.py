"""The once-per-promotional-day limit across a day's ticket draws, checked from their
records: each draw verified (selector.tickets.draw_verify), then no card wins two per-day
draws of the day, and every later draw opened with the earlier winners barred."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from selector.records import Record
from selector.tickets.draw_picks import AWARDED, NO_SHOW, OPENED, PICKED, PRESENTED, VOIDED
from selector.tickets.draw_rules import WinLimit
from selector.tickets.draw_verify import verify_draw
from selector.verify import Mismatch

_WON = ("verified", "awarded")


def _as_dicts(records: Sequence[Record | dict[str, Any]]) -> list[dict[str, Any]]:
    return [r.to_dict() if isinstance(r, Record) else r for r in records]


@dataclass(slots=True)
class _DayDraw:
    draw_id: str
    opened_at: datetime
    opened_index: int
    day: str
    per_day: bool
    barred: Mapping[str, str]
    winners: dict[str, tuple[int, int, datetime]]  # card -> (record index, pick, at)


def _day_draw(draw_id: str, recs: list[dict[str, Any]]) -> _DayDraw | None:
    opened = next((i for i, r in enumerate(recs) if r.get("type") == OPENED), None)
    if opened is None:
        return None
    o = recs[opened]["data"]
    cards: dict[int, str] = {}
    state: dict[int, tuple[str, int, datetime]] = {}  # pick -> (state, record index, at)
    moves = {PRESENTED: "verified", AWARDED: "awarded", NO_SHOW: "no_show", VOIDED: "void"}
    for i, r in enumerate(recs):
        d = r["data"]
        at = datetime.fromisoformat(r["at"])
        if r["type"] == PICKED:
            cards[d["pick"]] = d["card"]
            state[d["pick"]] = ("pending", i, at)
        elif r["type"] in moves and d["pick"] in state:
            was = state[d["pick"]]
            # a win dates from its presentation; the award keeps that date
            keep = was[0] == "verified" and r["type"] == AWARDED
            state[d["pick"]] = (moves[r["type"]], *(was[1:] if keep else (i, at)))
    winners: dict[str, tuple[int, int, datetime]] = {}
    for n, (s, i, at) in state.items():
        if s in _WON:
            winners.setdefault(cards[n], (i, n, at))
    return _DayDraw(
        draw_id, datetime.fromisoformat(recs[opened]["at"]), opened, o["day"],
        o["rules"]["win_limit"] == WinLimit.PER_DAY, o["barred"], winners,
    )  # fmt: skip


def verify_day(
    draws: Mapping[str, Sequence[Record | dict[str, Any]]],
) -> list[tuple[str, Mismatch]]:
    """Each draw of one promotional day verified, then the once-per-day limit across the
    day's per-day draws: no card wins two of them, and every later draw opened with the
    earlier draws' winners barred (those who had won by the time it opened)."""
    out: list[tuple[str, Mismatch]] = []
    infos: list[_DayDraw] = []
    for draw_id, records in draws.items():
        recs = _as_dicts(records)
        out += [(draw_id, m) for m in verify_draw(recs)]
        try:
            info = _day_draw(draw_id, recs)
        except (KeyError, TypeError, ValueError) as e:
            out.append((draw_id, Mismatch(0, None, f"malformed records: {e!r}")))
            continue
        if info is None:
            out.append((draw_id, Mismatch(0, None, "no draw.opened record")))
            continue
        infos.append(info)
    days = sorted({x.day for x in infos})
    if len(days) > 1:
        for x in infos:
            if x.day != days[0]:
                out.append((x.draw_id, Mismatch(x.opened_index, None, f"draw is on {x.day}, "
                                                f"not the day's {days[0]}")))  # fmt: skip
    earlier: dict[str, tuple[str, datetime]] = {}  # card -> (draw id, won at)
    for x in sorted((x for x in infos if x.per_day), key=lambda x: (x.opened_at, x.draw_id)):
        for card, (won_in, won_at) in sorted(earlier.items()):
            if won_at <= x.opened_at and card not in x.barred:
                out.append(
                    (
                        x.draw_id,
                        Mismatch(
                            x.opened_index,
                            None,
                            f"{card} won {won_in} earlier that day but was not barred at open",
                        ),
                    )
                )
        for card, (i, n, at) in sorted(x.winners.items()):
            if card in earlier:
                out.append(
                    (
                        x.draw_id,
                        Mismatch(
                            i,
                            n,
                            f"{card} already won {earlier[card][0]} on the same promotional day",
                        ),
                    )
                )
            else:
                earlier[card] = (x.draw_id, at)
    return out

"""The ticket draw verifier: a full draw verifies clean from its records alone (as JSON),
and every kind of tampering is named by record position and pick.

These draws open with derivation v2, as every draw did before v3 (a pick in one record):
what they check holds for draws restored after the upgrade. tests/test_ticket_draw_v3.py
covers v3 (a pick's bin made durable first, the witness).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest

from selector.fairness import DERIVATION_V2
from selector.tickets.day_verify import verify_day
from selector.tickets.draw_rules import GOLD_REEF_ADD_ONS, DrawRules, WinLimit
from selector.tickets.draw_session import TicketDrawSession
from selector.tickets.draw_verify import verify_draw
from selector.verify import Mismatch
from tests.test_ticket_draw_rules import BIN, DAY, PROXY, R1000, SAST, SEED, Host, new_draw, seed_of

Records = list[dict[str, Any]]


def plain(s: TicketDrawSession) -> Records:
    recs: Records = json.loads(json.dumps([r.to_dict() for r in s.records]))
    return recs


def full_draw(barred: dict[str, str] | None = None) -> TicketDrawSession:
    """Three winners with everything a stage sees: a barred proxy entry, an add-on, a
    position prize, late entries and a late bar, a no-show and its redraw, a proxy, a
    device prize, a void and its redraw."""
    rules = DrawRules(winners=3, prizes=(R1000,), add_ons=GOLD_REEF_ADD_ONS)
    bars = {"PX": "proxy_for:A"} if barred is None else barred
    s, h = new_draw({**BIN, "PX": 4}, rules, bars, derivation=DERIVATION_V2)
    p1 = h.draw()
    h.present(p1)
    s.add_on(h.cmd(), p1.number, "app", True)
    h.award(p1, R1000, "position", "")
    s.update_bin({"N1": 6, "N2": 2})
    s.bar("G", "proxy_for:C")
    p2 = h.draw()
    s.no_show(h.cmd(), p2.number)
    p3 = h.draw()
    h.present(p3, presenter="proxy", document="passport", last_digits="4821", proxy=PROXY)
    h.award(p3)
    p4 = h.draw()
    s.void(h.cmd(), p4.number, "self-excluded")
    p5 = h.draw()
    h.present(p5)
    h.close()
    return s


@pytest.fixture(scope="module")
def clean() -> Records:
    return plain(full_draw())


def index_of(recs: Records, type_: str, pick: int | None = None) -> int:
    return next(
        i for i, r in enumerate(recs)
        if r["type"] == type_ and (pick is None or r["data"].get("pick") == pick)
    )  # fmt: skip


def found(bad: list[Mismatch], position: int, pick: int | None, text: str) -> bool:
    return any(m.position == position and m.pick == pick and text in m.message for m in bad)


def test_a_full_draw_verifies_clean(clean: Records) -> None:
    assert verify_draw(clean) == []
    types = [r["type"] for r in clean]
    assert types.count("draw.picked") == 5 and types[-1] == "draw.closed"
    picked = [r["data"] for r in clean if r["type"] == "draw.picked"]
    assert [(d["position"], d["attempt"]) for d in picked] == [
        (1, 0),
        (2, 0),
        (2, 1),
        (3, 0),
        (3, 1),
    ]
    assert picked[1]["changes"] == [["N1", 6], ["N2", 2]] and picked[1]["barred"] == {
        "G": "proxy_for:C"
    }


def tamper(recs: Records, fn: Callable[[Records], object]) -> Records:
    out = copy.deepcopy(recs)
    fn(out)
    return out


def test_a_changed_winner_is_named(clean: Records) -> None:
    i = index_of(clean, "draw.picked", 3)
    card = clean[i]["data"]["card"]
    other = next(c for c in ("A", "B", "C", "D") if c != card)

    def edit(r: Records) -> None:
        r[i]["data"]["card"] = other

    bad = verify_draw(tamper(clean, edit))
    assert found(bad, i, 3, f"winner {other} recorded, ticket"), bad


def test_a_changed_seed_is_named(clean: Records) -> None:
    def edit(r: Records) -> None:
        r[-1]["data"]["seed"] = seed_of("another").hex()

    bad = verify_draw(tamper(clean, edit))
    assert found(bad, len(clean) - 1, None, "does not match the commitment"), bad


@pytest.mark.parametrize("delta", [1, -1], ids=["added ticket", "removed ticket"])
def test_a_changed_bin_is_named(clean: Records, delta: int) -> None:
    def edit(r: Records) -> None:
        r[0]["data"]["bin"][2][1] += delta

    bad = verify_draw(tamper(clean, edit))
    assert found(bad, 0, None, "bin does not match its recorded digest"), bad
    assert found(bad, 0, None, "tickets, recorded"), bad


def test_a_changed_late_entry_is_named(clean: Records) -> None:
    i = index_of(clean, "draw.picked", 2)

    def edit(r: Records) -> None:
        r[i]["data"]["changes"][0][1] = 7  # N1: 6 -> 7 tickets

    bad = verify_draw(tamper(clean, edit))
    assert found(bad, i, 2, "eligible bin digest/count/total do not match"), bad


def test_a_barred_card_left_in_the_bin_is_named() -> None:
    """A draw that recorded PX as barred at open but drew over a bin that still held it."""
    recs = plain(full_draw(barred={}))

    def edit(r: Records) -> None:
        r[0]["data"]["barred"] = {"PX": "proxy_for:A"}

    bad = verify_draw(tamper(recs, edit))
    first = index_of(recs, "draw.picked", 1)
    assert found(bad, first, 1, "barred card(s) left in the bin: PX"), bad


def test_a_late_presentation_is_named(clean: Records) -> None:
    i = index_of(clean, "draw.presented", 3)
    deadline = datetime.fromisoformat(clean[index_of(clean, "draw.picked", 3)]["data"]["deadline"])

    def edit(r: Records) -> None:
        r[i]["at"] = (deadline + timedelta(microseconds=1)).isoformat()

    bad = verify_draw(tamper(clean, edit))
    assert found(bad, i, 3, "after its deadline"), bad
    at_deadline = tamper(clean, lambda r: r[i].__setitem__("at", deadline.isoformat()))
    assert verify_draw(at_deadline) == []


def test_a_position_over_the_quota_is_named(clean: Records) -> None:
    i = index_of(clean, "draw.picked", 5)

    def edit(r: Records) -> None:
        r[i]["data"]["position"] = 4

    bad = verify_draw(tamper(clean, edit))
    assert found(bad, i, 5, "position 4 exceeds the draw's 3 winners"), bad

    def fewer(r: Records) -> None:
        r[0]["data"]["rules"]["winners"] = 2

    bad = verify_draw(tamper(clean, fewer))
    assert found(bad, i, 5, "position 3 exceeds the draw's 2 winners"), bad


def test_a_redraw_without_a_no_show_and_an_award_without_a_presentation_are_named(
    clean: Records,
) -> None:
    ns = index_of(clean, "draw.no_show", 2)
    bad = verify_draw(tamper(clean, lambda r: r.pop(ns)))
    assert found(bad, ns, 3, "redraw into position 2 while its pick 2 is pending"), bad
    pr = index_of(clean, "draw.presented", 1)
    bad = verify_draw(tamper(clean, lambda r: r.pop(pr)))
    assert any("add-on for a pick that is pending" in m.message for m in bad), bad
    assert any("award of a pick that is pending, not presented" in m.message for m in bad), bad


def test_pick_numbers_and_attempts_are_checked(clean: Records) -> None:
    i = index_of(clean, "draw.picked", 3)
    bad = verify_draw(tamper(clean, lambda r: r[i]["data"].__setitem__("attempt", 0)))
    assert found(bad, i, 3, "attempt 0, but position 2 had 1 pick(s) before"), bad
    bad = verify_draw(tamper(clean, lambda r: r[i]["data"].__setitem__("pick", 4)))
    assert found(bad, i, 4, "pick number 4, expected 3"), bad


def test_an_unclosed_draw_is_not_verified() -> None:
    s, h = new_draw(BIN)
    h.draw()
    bad = verify_draw(s.records)
    assert [m.message for m in bad] == ["draw is not closed: its seed is not revealed"]


# ------------------------------------------------------------------ the day


def day_draw(draw_id: str, hour: int, entries: dict[str, int], barred: dict[str, str]) -> Records:
    rules = DrawRules(winners=1, win_limit=WinLimit.PER_DAY)
    at = datetime(2025, 10, 1, hour, 0, tzinfo=SAST)
    s, h = new_draw(entries, rules, barred, draw_id=draw_id, at=at, day=at.date())
    h.present(h.draw())
    h.close()
    return plain(s)


def test_verify_day_catches_a_same_day_double_winner() -> None:
    """000: once per promotional day.  The 20:00 draw opened without barring the 13:00
    winner, who then won again: both the missing bar and the double win are named."""
    noon = day_draw("wed-13h00", 13, {"W": 1_000_000_000, "x": 1}, {})
    evening = day_draw("wed-20h00", 20, {"W": 1_000_000_000, "y": 1}, {})
    card = [r["data"]["card"] for r in (*noon, *evening) if r["type"] == "draw.picked"]
    assert card == ["W", "W"]
    bad = verify_day({"wed-13h00": noon, "wed-20h00": evening})
    assert ("wed-20h00", Mismatch(0, None, "W won wed-13h00 earlier that day but was not "
                                  "barred at open")) in bad  # fmt: skip
    assert any(d == "wed-20h00" and m.pick == 1 and "W already won wed-13h00" in m.message
               for d, m in bad)  # fmt: skip
    barred = day_draw("wed-20h00", 20, {"W": 1_000_000_000, "y": 1}, {"W": "won_today:wed-13h00"})
    assert verify_day({"wed-13h00": noon, "wed-20h00": barred}) == []
    other_day = copy.deepcopy(barred)
    other_day[0]["data"]["day"] = "2025-10-02"
    assert any("not the day's 2025-10-01" in m.message for _, m in verify_day(
        {"wed-13h00": noon, "wed-20h00": other_day}))  # fmt: skip


def test_a_200000_card_draw_verifies() -> None:
    """The reference digest is recomputed before every pick (~0.3 s each at 200,000
    cards); five picks with late entries verify."""
    entries = {f"{7_000_000 + i}": 1 + (i * 31) % 17 for i in range(200_000)}
    s = TicketDrawSession("draw:big", "big", "bin-big", DAY, DrawRules(winners=5))
    h = Host(s)
    h.open(entries, {"7000003": "won_today:x"}, SEED)
    for j in range(5):
        s.update_bin({f"8{j}{i:05d}": 2 for i in range(50)} | {f"{7_000_100 + j}": 0})
        h.present(h.draw())
    h.close()
    assert verify_draw(s.records) == []  # how long it takes: bench/ticket_draws.py

"""The ticket ledger's mechanics: records, idempotency, replay, audit, restart, and the
floor feeding it points through `points_sink` (cells included)."""

from __future__ import annotations

import json
from datetime import date, datetime, time, timedelta
from typing import Any

import pytest

from selector.events import Tier
from selector.floor import Floor, PointsCell
from selector.promotion import EarnRules, Promotion
from selector.tickets import (
    Cause,
    PeriodRule,
    PlayerStanding,
    Refusal,
    RefusalReason,
    TicketLedger,
    TicketPlan,
    TicketProgram,
    TicketsCredited,
    TicketsEntered,
    receipt_number,
    recompute,
    record_from_dict,
    verification_code,
)
from tests.builders import Events, small_layout
from tests.test_tickets_plans import SAST, at, draw, gold_reef_plan, golden_horse_plan
from tests.test_tickets_seeds import earn, enter, entered, ledger_for, member, refused

DAY = date(2025, 10, 4)  # a 000 Saturday cash draw day
SAT = "sat-cash-2025-10-04"


def test_records_round_trip_through_json_with_stable_keys() -> None:
    credit = TicketsCredited(
        card="C1", bin_id="b", tickets=3, cause=Cause.POINTS, ref="e9", at=at(DAY, 10)
    )
    entry = TicketsEntered(
        card="C1",
        bin_id="b",
        tickets=3,
        channel="kiosk",  # type: ignore[arg-type]
        request_id="k1-77",
        receipt_no="b-000001",
        at=at(DAY, 11),
    )
    for rec in (credit, entry):
        assert record_from_dict(json.loads(json.dumps(rec.to_dict()))) == rec
    assert list(credit.to_dict()) == ["type", "card", "bin_id", "tickets", "cause", "ref", "at"]
    assert list(entry.to_dict()) == [
        "type",
        "card",
        "bin_id",
        "tickets",
        "channel",
        "request_id",
        "receipt_no",
        "at",
    ]
    assert entry.to_dict()["type"] == "tickets.entered"
    assert credit.to_dict()["at"] == "2025-10-04T10:00:00+02:00"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"type": "tickets.bought"}, "not a tickets record"),
        ({"type": "tickets.credited", "card": "C1"}, "missing field 'bin_id'"),
        (
            {
                "type": "tickets.credited",
                "card": "C1",
                "bin_id": "b",
                "tickets": 0,
                "cause": "points",
                "ref": "e",
                "at": "2025-10-04T10:00:00+02:00",
            },
            "tickets must be",
        ),
        (
            {
                "type": "tickets.credited",
                "card": "C 1",
                "bin_id": "b",
                "tickets": 1,
                "cause": "points",
                "ref": "e",
                "at": "2025-10-04T10:00:00+02:00",
            },
            "whitespace",
        ),
        (
            {
                "type": "tickets.credited",
                "card": "C1",
                "bin_id": "b",
                "tickets": 1,
                "cause": "points",
                "ref": "e",
                "at": "2025-10-04T10:00:00",
            },
            "timezone-aware",
        ),
    ],
)
def test_malformed_records_are_refused(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        record_from_dict(data)


def test_receipt_numbers_follow_the_bin_and_codes_are_short() -> None:
    assert receipt_number("car-2025-10-25", 7) == "car-2025-10-25-000007"
    code = verification_code("ab" * 32)
    assert len(code) == 9 and code[4] == "-" and code == verification_code("ab" * 32)
    assert code != verification_code("ac" + "ab" * 31)


def test_an_entry_is_idempotent_by_request_id() -> None:
    ledger = ledger_for("000", C1=Tier.JACK)
    earn(ledger, "C1", at(DAY, 9), 100)
    first = ledger.enter("C1", SAT, "kiosk", "kiosk-3:0001", at(DAY, 10), member(Tier.JACK))
    assert isinstance(ledger.take_records()[-1], TicketsEntered)
    again = ledger.enter("C1", SAT, "kiosk", "kiosk-3:0001", at(DAY, 10, 0, 2), member(Tier.JACK))
    assert again is first and ledger.take_records() == []
    # the same id for another card, bin or channel: refused, nothing recorded
    for card, bin_id, channel in (
        ("C2", SAT, "kiosk"),
        ("C1", "car-2025-10-25", "kiosk"),
        ("C1", SAT, "app"),
    ):
        result = ledger.enter(
            card, bin_id, channel, "kiosk-3:0001", at(DAY, 11), member(Tier.JACK, playing_now=True)
        )
        assert refused(result) is RefusalReason.REQUEST_ID_REUSED
    # a draw id names its bin: the retry through a draw id of that bin is the same entry
    assert (
        ledger.enter(
            "C1",
            "sat-cash-2025-10-04-2100",
            "kiosk",
            "kiosk-3:0001",
            at(DAY, 12),
            member(Tier.JACK),
        )
        is first
    )
    assert ledger.take_records() == [] and ledger.refusals["request_id_reused"] == 3


def test_an_entry_activates_all_available_and_later_tickets_make_a_second_receipt() -> None:
    ledger = ledger_for("000", C1=Tier.TEN)
    earn(ledger, "C1", at(DAY, 9), 120)
    one = entered(enter(ledger, "C1", SAT, at(DAY, 10), Tier.TEN))
    assert (one.tickets, one.receipt_no) == (10 + 2, f"{SAT}-000001")
    assert (
        refused(enter(ledger, "C1", SAT, at(DAY, 10, 5), Tier.TEN))
        is RefusalReason.NOTHING_TO_ENTER
    )
    earn(ledger, "C1", at(DAY, 11), 30)  # 150 points: a third ticket
    two = entered(enter(ledger, "C1", SAT, at(DAY, 12), Tier.TEN))
    assert (two.tickets, two.receipt_no) == (1, f"{SAT}-000002")
    assert ledger.entries(SAT) == [("C1", 13)] and ledger.available("C1", SAT) == 0


def test_unknown_draws_and_players_are_refused_and_counted() -> None:
    ledger = ledger_for("000")
    assert (
        refused(enter(ledger, "C1", "sat-2030", at(DAY, 10), Tier.ACE))
        is RefusalReason.UNKNOWN_DRAW
    )
    result = ledger.enter("C9", SAT, "kiosk", "r-x", at(DAY, 10), PlayerStanding(None))
    assert refused(result) is RefusalReason.UNKNOWN_PLAYER
    assert dict(ledger.refusals) == {"unknown_draw": 1, "unknown_player": 1}
    with pytest.raises(KeyError, match="unknown draw or bin"):
        ledger.available("C1", "sat-2030")


def test_external_credits_are_idempotent_by_event_id_and_bad_ones_refused() -> None:
    ledger = ledger_for("000")
    first = ledger.credit_external("C1", SAT, 4, "cms-ticket-1", at(DAY, 9))
    assert isinstance(first, TicketsCredited) and first.cause is Cause.EXTERNAL
    assert ledger.credit_external("C1", SAT, 4, "cms-ticket-1", at(DAY, 9, 1)) is first
    assert ledger.credited("C1", SAT) == 4 and len(ledger.take_records()) == 1
    bad = [
        ledger.credit_external("C1", "nope", 1, "e2", at(DAY, 9)),
        ledger.credit_external("C1", SAT, 0, "e3", at(DAY, 9)),
        ledger.credit_external("C 1", SAT, 1, "e4", at(DAY, 9)),
    ]
    assert [b.reason for b in bad if isinstance(b, Refusal)] == [
        RefusalReason.UNKNOWN_DRAW,
        RefusalReason.INVALID_CREDIT,
        RefusalReason.INVALID_CREDIT,
    ]


def test_a_configured_cap_limits_what_can_be_entered() -> None:
    p = TicketProgram(
        program_id="p",
        promotion_id="x",
        period=PeriodRule.day_to_draw(),
        rates={Tier.JACK: 50},
        cap=5,
    )
    plan = TicketPlan([p], [draw("d", "p", at(DAY, 20), time(8), time(19, 55))])
    ledger = TicketLedger(plan, tier_of={"C1": Tier.JACK}.get)
    earn(ledger, "C1", at(DAY, 9), 500)
    assert ledger.credited("C1", "d") == 10 and ledger.available("C1", "d") == 5
    assert entered(enter(ledger, "C1", "d", at(DAY, 10), Tier.JACK)).tickets == 5
    assert ledger.available("C1", "d") == 0


def test_a_tier_change_counts_from_the_tickets_already_credited() -> None:
    tiers = {"C1": Tier.JACK}
    ledger = ledger_for("000")
    ledger = TicketLedger(ledger.plan, tier_of=tiers.get)
    bin_id = "car-2025-10-25"
    earn(ledger, "C1", at(date(2025, 10, 1), 9), 300)
    assert ledger.credited_from_points("C1", bin_id) == 3
    tiers["C1"] = Tier.QUEEN  # same car rate: nothing changes
    earn(ledger, "C1", at(date(2025, 10, 2), 9), 100)
    assert ledger.credited_from_points("C1", bin_id) == 4


def test_points_of_an_unknown_card_count_once_its_tier_is_known() -> None:
    tiers: dict[str, Tier] = {}
    ledger = TicketLedger(gold_reef_plan(), tier_of=tiers.get)
    earn(ledger, "C1", at(DAY, 9), 120)
    assert ledger.credited("C1", SAT) == 0
    tiers["C1"] = Tier.ACE
    earn(ledger, "C1", at(DAY, 10), 30)  # the next boundary settles everything due
    assert ledger.credited_from_points("C1", SAT) == 3


def test_late_points_of_an_interval_that_ended_still_count_for_it() -> None:
    """Queen Thursdays of one month share a start; a rating update stamped 19:59 that
    arrives after other play at 20:05 still counts for the 20:00 draw."""
    ledger = ledger_for("000", Q1=Tier.QUEEN, Q2=Tier.QUEEN)
    thu = date(2025, 10, 2)
    earn(ledger, "Q1", at(thu, 10), 90)
    earn(ledger, "Q2", at(thu, 20, 5), 10)  # time passes the 2 Oct draw
    earn(ledger, "Q1", at(thu, 19, 59), 20)  # late
    assert ledger.credited_from_points("Q1", "queen-2025-10-02") == 1
    assert ledger.credited_from_points("Q1", "queen-2025-10-09") == 1
    assert ledger.points_milli("Q1", "queen-2025-10-02") == 110_000
    assert ledger.points_milli("Q2", "queen-2025-10-02") == 0
    assert ledger.points_milli("Q2", "queen-2025-10-09") == 10_000


def test_replay_rebuilds_credits_and_entries_from_the_records_alone() -> None:
    ledger = ledger_for("000", C1=Tier.KING, C2=Tier.JACK)
    earn(ledger, "C1", at(DAY, 9), 333)
    earn(ledger, "C2", at(DAY, 9), 77)
    entered(enter(ledger, "C1", SAT, at(DAY, 10), Tier.KING))
    ledger.credit_raps_winner("C2", Tier.JACK, "S1", 1, at(DAY, 10))
    records = ledger.take_records()
    again = TicketLedger(ledger.plan)
    again.replay([record_from_dict(r.to_dict()) for r in records])
    for card in ("C1", "C2"):
        assert again.credited(card, SAT) == ledger.credited(card, SAT)
        assert again.available(card, SAT) == ledger.available(card, SAT)
    assert again.entries(SAT) == ledger.entries(SAT)
    # the replayed ledger goes on where the first left off: receipts, idempotency
    nxt = entered(again.enter("C2", SAT, "kiosk", "r-new", at(DAY, 11), member(Tier.JACK)))
    assert nxt.receipt_no == f"{SAT}-000002"
    first_request = next(r for r in records if isinstance(r, TicketsEntered)).request_id
    assert again.enter("C1", SAT, "kiosk", first_request, at(DAY, 12), member(Tier.KING)) == (
        next(r for r in records if isinstance(r, TicketsEntered))
    )


def test_replay_refuses_records_that_break_the_rules() -> None:
    ledger = ledger_for("000")
    credit = TicketsCredited(
        card="C1", bin_id=SAT, tickets=2, cause=Cause.EXTERNAL, ref="x1", at=at(DAY, 9)
    )
    too_many = TicketsEntered(
        card="C1",
        bin_id=SAT,
        tickets=3,
        channel="kiosk",  # type: ignore[arg-type]
        request_id="r1",
        receipt_no=f"{SAT}-000001",
        at=at(DAY, 10),
    )
    with pytest.raises(ValueError, match=r"record 2: .* entered 3 tickets .* only 2"):
        ledger.replay([credit, too_many])
    with pytest.raises(ValueError, match="credited twice"):
        TicketLedger(ledger.plan).replay([credit, credit])


def test_recompute_finds_every_broken_rule() -> None:
    plan = gold_reef_plan()
    good = TicketLedger(plan, tier_of={"C1": Tier.JACK}.get)
    earn(good, "C1", at(DAY, 9), 100)
    entered(enter(good, "C1", SAT, at(DAY, 10), Tier.JACK))
    records = [r.to_dict() for r in good.take_records()]
    assert recompute(records, plan)["ok"]
    tampered = [*records[:-1], {**records[-1], "tickets": 99}]
    assert "entered 99 tickets" in recompute(tampered, plan)["errors"][0]
    late = [*records[:-1], {**records[-1], "at": at(DAY, 21).isoformat()}]
    assert "outside the entry windows" in recompute(late, plan)["errors"][0]
    twice = [*records, {**records[-1], "receipt_no": f"{SAT}-000002"}]
    assert "entered twice" in recompute(twice, plan)["errors"][0]
    skipped = [*records[:-1], {**records[-1], "receipt_no": f"{SAT}-000005"}]
    assert "out of sequence" in recompute(skipped)["errors"][0]  # without the plan too
    junk = recompute([*records, {"type": "tickets.credited"}, {**records[0], "bin_id": "zz"}], plan)
    n = len(records)
    assert [e.split(":")[0] for e in junk["errors"]] == [f"record {n + 1}", f"record {n + 2}"]
    assert not junk["ok"] and junk["records"] == n + 2


def test_status_is_what_a_kiosk_shows() -> None:
    ledger = ledger_for("000", C1=Tier.QUEEN)
    earn(ledger, "C1", at(date(2025, 10, 1), 9), 262)
    rows = {s.draw_id: s for s in ledger.status("C1", at(date(2025, 10, 2), 9))}
    q = rows["queen-2025-10-02"]
    assert (q.points, q.credited, q.entered, q.available, q.bonus_due) == (262, 2, 0, 2, 10)
    assert q.points_to_next == 38 and q.entry_open
    assert q.earning_start == at(date(2025, 10, 1), 8) and q.earning_end == at(
        date(2025, 10, 2), 20
    )
    assert "wed-2025-10-01-1300" not in rows  # held already
    assert not rows["car-2025-10-25-1500"].entry_open
    assert "queen-2025-11-06" not in rows  # its earning has not begun


# ------------------------------------------------------------------ the floor feeds it


def ledger_floor(plan: TicketPlan, **earn_kw: Any) -> tuple[Floor, TicketLedger]:
    floor_box: list[Floor] = []
    ledger = TicketLedger(plan, tier_of=lambda card: floor_box[0].tier_of(card))
    floor = Floor(
        small_layout(), [Promotion("raps")], EarnRules(**earn_kw), points_sink=ledger.points_sink
    )
    floor_box.append(floor)
    return floor, ledger


def test_the_floor_feeds_slot_and_table_points_outside_the_raps_window_too() -> None:
    floor, ledger = ledger_floor(gold_reef_plan())
    ev = Events(at(DAY, 19, 30))  # after the 08:00-19:00 RAPS window
    floor.apply(ev.player("C1", tier=Tier.JACK))
    floor.apply(ev.card_in("M01", "C1"))
    floor.apply_many([ev.game("M01", wager=1000) for _ in range(49)])  # R10 = 1 point
    assert ledger.credited("C1", SAT) == 0
    assert ledger.points_milli("C1", SAT) == 49_000  # what the floor kept back is counted
    floor.apply(ev.game("M01", wager=1000))
    assert ledger.credited_from_points("C1", SAT) == 1
    credit = ledger.take_records()[0]
    assert isinstance(credit, TicketsCredited) and credit.ref == "e52"  # the 50th game
    # a table rating credits what its cumulative figures earned since the last update
    floor.apply(ev.player("C2", tier=Tier.ACE))
    floor.apply(ev.rating_open("T1", 1, "C2"))
    floor.apply(ev.rating_update("T1", 1, "C2", bet=10_000, minutes=60))
    floor.apply(ev.rating_close("T1", 1, "C2", bet=10_000, minutes=110))
    assert ledger.points_milli("C2", SAT) == 110_000 and ledger.credited_from_points("C2", SAT) == 2
    assert floor.points("raps", "C1", at(DAY, 19, 30)) == 0  # RAPS points untouched


def test_points_from_the_casino_system_feed_the_ledger_in_events_mode() -> None:
    floor, ledger = ledger_floor(gold_reef_plan(), points_source="events")
    ev = Events(at(DAY, 9))
    floor.apply(ev.player("C1", tier=Tier.TEN))
    floor.apply_many([ev.points("C1", 12.5) for _ in range(8)])
    assert ledger.credited_from_points("C1", SAT) == 2
    assert ledger.points_to_next_ticket("C1", SAT, at(DAY, 10)) == 50  # 100 exactly: 50 to go
    assert ledger.credited_from_points("C1", "car-2025-10-25") == 1


def test_a_plain_sink_that_leaves_the_room_at_zero_sees_every_point() -> None:
    seen: list[tuple[str, float, int, str]] = []

    def sink(cell: PointsCell, epoch: float, milli: int, event_id: str) -> None:
        seen.append((cell.card, epoch, milli, event_id))

    floor = Floor(small_layout(), [Promotion("raps")], EarnRules(), points_sink=sink)
    ev = Events(at(DAY, 9))
    floor.apply(ev.player("C1"))
    floor.apply(ev.card_in("M01", "C1"))
    floor.apply_many([ev.game("M01", wager=500) for _ in range(3)])
    floor.apply(ev.game("M02", wager=500))  # uncarded: no points
    # the directory entry offers 0 points (to ready the cell), then every game's points
    assert [(c, m) for c, _, m, _ in seen] == [("C1", 0)] + [("C1", 500)] * 3


def test_a_cards_very_first_points_on_a_ticket_boundary_credit_it_there() -> None:
    floor, ledger = ledger_floor(gold_reef_plan(), points_source="events")
    ev = Events(at(DAY, 9))
    floor.apply(ev.player("C1", tier=Tier.JACK))
    floor.apply(ev.points("C1", 49.999))  # kept back in the new card's cell
    assert ledger.take_records() == [] and ledger.points_milli("C1", SAT) == 49_999
    floor.apply(ev.player("C2", tier=Tier.JACK))
    floor.apply(ev.points("C2", 50))
    assert [(r.card, r.bin_id, r.tickets) for r in ledger.take_records()] == [("C2", SAT, 1)]


def test_a_card_known_from_the_directory_earns_without_a_call_until_its_boundary() -> None:
    calls: list[int] = []
    floor, ledger = ledger_floor(gold_reef_plan())

    def counting(cell: PointsCell, epoch: float, milli: int, event_id: str) -> None:
        calls.append(milli)
        ledger.points_sink(cell, epoch, milli, event_id)

    floor._points_sink = counting
    ev = Events(at(DAY, 9))
    floor.apply(ev.player("C1", tier=Tier.KING))
    floor.apply(ev.card_in("M01", "C1"))
    floor.apply_many([ev.game("M01", wager=1000) for _ in range(50)])  # 50 points
    assert calls == [0, 1000]  # the directory entry, then the game reaching 50 points
    assert ledger.credited_from_points("C1", SAT) == 1


def test_an_event_outside_every_period_costs_the_floor_no_call() -> None:
    calls = []
    floor, ledger = ledger_floor(gold_reef_plan())

    def counting(cell: PointsCell, epoch: float, milli: int, event_id: str) -> None:
        calls.append(cell.card)
        ledger.points_sink(cell, epoch, milli, event_id)

    floor._points_sink = counting
    ev = Events(datetime(2026, 3, 1, 12, tzinfo=SAST))  # after the promotion
    floor.apply(ev.player("C1"))
    floor.apply(ev.card_in("M01", "C1"))
    floor.apply_many([ev.game("M01", wager=2500) for _ in range(500)])
    assert len(calls) == 1


def test_a_new_floors_cell_takes_over_what_the_old_one_kept_back() -> None:
    ledger = TicketLedger(gold_reef_plan(), tier_of={"C1": Tier.JACK}.get)
    old, new = PointsCell("C1"), PointsCell("C1")
    ledger.points_sink(old, at(DAY, 9).timestamp(), 10_000, "e1")
    old.room -= 30_000  # what a floor keeps back
    assert ledger.points_milli("C1", SAT) == 40_000
    ledger.points_sink(new, at(DAY, 9, 5).timestamp(), 10_000, "e2")
    assert ledger.points_milli("C1", SAT) == 50_000 and ledger.credited("C1", SAT) == 1
    assert old.hi == float("-inf")  # retired: its holder calls at the next point
    new.room -= 5_000
    ledger.points_sink(old, at(DAY, 9, 6).timestamp(), 1_000, "e3")  # both cells' points count
    assert ledger.points_milli("C1", SAT) == 56_000


def test_restart_restores_the_points_toward_tickets_with_the_floor() -> None:
    plan = gold_reef_plan()
    floor, ledger = ledger_floor(plan)
    ev = Events(at(DAY, 9))
    floor.apply(ev.player("C1", tier=Tier.QUEEN))
    floor.apply(ev.card_in("M01", "C1"))
    floor.apply_many([ev.game("M01", wager=1000) for _ in range(130)])
    records = ledger.take_records()
    snap = json.loads(
        json.dumps({"floor": floor.snapshot(), "tickets": ledger.snapshot(floor.now)})
    )
    floor2, ledger2 = ledger_floor(plan)
    ledger2.replay(records)
    ledger2.restore(snap["tickets"])
    floor2.restore(snap["floor"])
    for f, led in ((floor, ledger), (floor2, ledger2)):
        f.apply_many([ev.game("M01", wager=1000, at=ev.now) for _ in range(20)])
        assert led.credited_from_points("C1", SAT) == 3 and led.points_milli("C1", SAT) == 150_000
    with pytest.raises(ValueError, match="fresh ledger"):
        ledger2.restore(snap["tickets"])


def test_restore_into_changed_draws_keeps_the_open_totals() -> None:
    """The 21:30 vault draw is added mid-day: the day's bin now ends at 21:30."""
    plan = gold_reef_plan()
    ledger = TicketLedger(plan, tier_of={"C1": Tier.JACK}.get)
    day = date(2025, 12, 20)
    earn(ledger, "C1", at(day, 9), 40)
    snap = ledger.snapshot(at(day, 9, 30).timestamp())
    fewer = TicketPlan(
        plan.programs, [d for d in plan.draws if d.draw_id != "sat-cash-2025-12-20-2130"]
    )
    ledger2 = TicketLedger(fewer, tier_of={"C1": Tier.JACK}.get)
    ledger2.restore(snap)
    assert ledger2.points_milli("C1", "sat-cash-2025-12-20") == 40_000
    earn(ledger2, "C1", at(day, 10), 10)
    assert ledger2.credited_from_points("C1", "sat-cash-2025-12-20") == 1


def test_the_003_plan_credits_through_the_floor_each_tier_group() -> None:
    floor, ledger = ledger_floor(golden_horse_plan())
    ev = Events(at(date(2026, 4, 20), 12))
    for i, tier in enumerate((Tier.TEN, Tier.QUEEN, Tier.ACE), start=1):
        floor.apply(ev.player(f"C{i}", tier=tier))
        floor.apply(ev.card_in(f"M0{i}", f"C{i}"))
    for _ in range(40):
        ev.tick(1)
        floor.apply_many([ev.game(f"M0{i}", wager=5000) for i in (1, 2, 3)])  # 5 points a game
    assert [
        ledger.credited(f"C{i}", f"{p}-0425")
        for i, p in ((1, "teeds-tj"), (2, "teeds-q"), (3, "teeds-ka"))
    ] == [4, 2, 1]
    assert ledger.status("C3", ev.now + timedelta(days=5))[0].draw_id == "teeds-tj-0425"


def test_naive_times_are_refused_rather_than_read_in_the_hosts_zone() -> None:
    ledger = ledger_for("000")
    with pytest.raises(ValueError, match="timezone-aware"):
        ledger.enter("C1", SAT, "kiosk", "r1", datetime(2025, 10, 4, 10), member(Tier.JACK))
    with pytest.raises(ValueError, match="timezone-aware"):
        ledger.credit_raps_winner("C1", Tier.ACE, "S1", 1, datetime(2025, 10, 4, 10))

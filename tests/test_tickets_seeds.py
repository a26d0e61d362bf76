"""Every ticket rule of both seeds, one named test each (../shared/seeds/).

003 Golden Horse TEEDS: tickets per tier (Ten & Jack 50 points, Queen 100, King & Ace
200), 7-day periods without roll-over, uncapped, app bonus and RAPS-winner bonus by
tier, exclusions (rules 1-3), entries cannot be bought (rule 9).
000 Gold Reef City "Turn up the heat": Saturday cash 50 points a ticket, car draws 100
points from 08:00 on 27 Sep 2025, Queen Thursdays (Queen only, 10 free tickets + 1 per
100 points in the month until just before each draw), complimentary tickets by tier,
tickets valid for one draw only, entry windows, the 21:30 vault draw on 20 Dec sharing
that day's tickets, app entries only while playing (rule 7).
"""

from __future__ import annotations

import itertools
from datetime import date, datetime

import pytest

from selector.events import Exclusion, Tier
from selector.tickets import (
    Cause,
    Channel,
    PlayerStanding,
    Refusal,
    RefusalReason,
    TicketLedger,
    TicketsCredited,
    TicketsEntered,
    recompute,
)
from tests.test_tickets_plans import (
    APP_BONUS_003,
    RAPS_BONUS_003,
    at,
    gold_reef_plan,
    golden_horse_plan,
)

_ids = itertools.count(1)
APR25, MAY2, MAY9 = date(2026, 4, 25), date(2026, 5, 2), date(2026, 5, 9)


def ledger_for(plan_name: str = "003", **tiers: Tier) -> TicketLedger:
    plan = golden_horse_plan() if plan_name == "003" else gold_reef_plan()
    return TicketLedger(plan, tier_of=dict(tiers).get)


def earn(ledger: TicketLedger, card: str, when: datetime, points: float) -> str:
    eid = f"pts-{next(_ids)}"
    ledger.credit_points(card, None, when.timestamp(), round(points * 1000), eid)
    return eid


def member(tier: Tier, **kw: bool | frozenset[Exclusion]) -> PlayerStanding:
    return PlayerStanding(tier, age_verified=True, **kw)  # type: ignore[arg-type]


def enter(
    ledger: TicketLedger,
    card: str,
    bin_id: str,
    when: datetime,
    tier: Tier,
    channel: str = "kiosk",
    **kw: bool,
) -> TicketsEntered | Refusal:
    return ledger.enter(card, bin_id, channel, f"req-{next(_ids)}", when, member(tier, **kw))


def entered(result: TicketsEntered | Refusal) -> TicketsEntered:
    assert isinstance(result, TicketsEntered), result
    return result


def refused(result: TicketsEntered | Refusal) -> RefusalReason:
    assert isinstance(result, Refusal), result
    return result.reason


# ------------------------------------------------------------------ 003 TEEDS


@pytest.mark.parametrize(
    ("tier", "program", "tickets"),
    [
        (Tier.TEN, "teeds-tj", 4),
        (Tier.JACK, "teeds-tj", 4),
        (Tier.QUEEN, "teeds-q", 2),
        (Tier.KING, "teeds-ka", 1),
        (Tier.ACE, "teeds-ka", 1),
    ],
)
def test_003_points_per_ticket_by_tier(tier: Tier, program: str, tickets: int) -> None:
    """Ten & Jack: 50 points a ticket; Queen: 100; King & Ace: 200."""
    ledger = ledger_for(C1=tier)
    earn(ledger, "C1", at(date(2026, 4, 20), 12), 200)
    assert ledger.credited("C1", f"{program}-0425") == tickets
    others = {"teeds-tj", "teeds-q", "teeds-ka"} - {program}
    assert all(ledger.credited("C1", f"{p}-0425") == 0 for p in others)


def test_003_seven_day_periods_do_not_roll_over() -> None:
    """70 points in the first week: 1 ticket for 25 Apr, the 20 left do not move on."""
    ledger = ledger_for(C1=Tier.JACK)
    earn(ledger, "C1", at(date(2026, 4, 19), 10), 70)
    earn(ledger, "C1", at(APR25, 10), 30)  # the week of the 2 May draw
    assert ledger.credited("C1", "teeds-tj-0425") == 1
    assert ledger.credited("C1", "teeds-tj-0502") == 0  # 20 + 30 would have been a ticket
    assert ledger.points_to_next_ticket("C1", "teeds-tj-0502", at(APR25, 12)) == 20


def test_003_points_in_a_week_without_a_draw_earn_nothing() -> None:
    ledger = ledger_for(C1=Tier.KING)
    earn(ledger, "C1", at(MAY9, 10), 5000)
    assert ledger.take_records() == []
    assert all(ledger.credited("C1", b) == 0 for b in ledger.plan.bins)


def test_003_points_after_a_draw_do_not_count_for_it() -> None:
    """A containing window is cut at the draw: 20:30 play is not for the 20:00 draw."""
    ledger = TicketLedger(golden_horse_plan("containing"), tier_of={"C1": Tier.TEN}.get)
    earn(ledger, "C1", at(APR25, 19, 59), 50)
    earn(ledger, "C1", at(APR25, 20, 30), 50)
    assert ledger.credited("C1", "teeds-tj-0425") == 1


def test_003_leftover_points_are_kept_and_shown() -> None:
    """ "38 more points to your next ticket" """
    ledger = ledger_for(C1=Tier.JACK)
    earn(ledger, "C1", at(date(2026, 4, 20), 10), 62)
    assert ledger.credited("C1", "teeds-tj-0425") == 1
    assert ledger.points_to_next_ticket("C1", "teeds-tj-0425", at(date(2026, 4, 20), 11)) == 38
    assert ledger.points_to_next_ticket("C1", "teeds-tj-0425", at(APR25, 1)) is None  # over
    assert ledger.points_to_next_ticket("C1", "teeds-q-0425", at(APR25, 1)) is None  # no rate


def test_003_ticket_earning_is_uncapped() -> None:
    ledger = ledger_for(C1=Tier.TEN)
    earn(ledger, "C1", at(date(2026, 4, 21), 10), 50 * 1000)
    assert ledger.credited("C1", "teeds-tj-0425") == 1000
    assert entered(enter(ledger, "C1", "teeds-tj-0425", at(APR25, 9), Tier.TEN)).tickets == 1000


@pytest.mark.parametrize("tier", list(Tier))
def test_003_app_registered_members_get_bonus_tickets_by_tier(tier: Tier) -> None:
    ledger = ledger_for()
    program = next(p for p in ledger.plan.programs if tier in p.tiers)
    bin_id = f"{program.program_id}-0425"
    assert (
        entered(enter(ledger, "APP", bin_id, at(APR25, 9), tier, app_registered=True)).tickets
        == (APP_BONUS_003[tier])
    )
    assert (
        refused(enter(ledger, "NOAPP", bin_id, at(APR25, 9), tier))
        is RefusalReason.NOTHING_TO_ENTER
    )
    credit = next(r for r in ledger.take_records() if isinstance(r, TicketsCredited))
    assert (credit.cause, credit.ref) == (Cause.APP_BONUS, f"app_bonus:{tier.value}")


def test_003_raps_winners_get_bonus_tickets_for_their_tier_groups_draw_that_evening() -> None:
    ledger = ledger_for()
    records = ledger.credit_raps_winner("Q1", Tier.QUEEN, "S-20260425-1800", 3, at(APR25, 18, 20))
    assert [(r.bin_id, r.tickets, r.cause, r.ref) for r in records] == [
        ("teeds-q-0425", RAPS_BONUS_003[Tier.QUEEN], Cause.RAPS_WINNER, "S-20260425-1800#3")
    ]
    # awarding the same pick again (a retried command) credits nothing more
    assert (
        ledger.credit_raps_winner("Q1", Tier.QUEEN, "S-20260425-1800", 3, at(APR25, 18, 25)) == []
    )
    ace = ledger.credit_raps_winner("A1", Tier.ACE, "S-20260425-1800", 4, at(APR25, 18, 30))
    assert [r.bin_id for r in ace] == ["teeds-ka-0425"]
    assert entered(enter(ledger, "Q1", "teeds-q-0425", at(APR25, 19), Tier.QUEEN)).tickets == 10


def test_003_a_raps_win_after_the_evenings_entries_close_counts_for_the_next_draw() -> None:
    ledger = ledger_for()
    late = ledger.credit_raps_winner("J1", Tier.JACK, "S-late", 1, at(APR25, 19, 56))
    assert [r.bin_id for r in late] == ["teeds-tj-0502"]


def test_003_each_tier_group_enters_only_its_own_draw() -> None:
    ledger = ledger_for(Q1=Tier.QUEEN)
    earn(ledger, "Q1", at(date(2026, 4, 20), 10), 300)
    assert refused(enter(ledger, "Q1", "teeds-tj-0425", at(APR25, 9), Tier.QUEEN)) is (
        RefusalReason.TIER_NOT_IN_PROGRAM
    )
    assert entered(enter(ledger, "Q1", "teeds-q-0425", at(APR25, 9), Tier.QUEEN)).tickets == 3


@pytest.mark.parametrize(
    ("standing", "reason"),
    [
        (PlayerStanding(Tier.JACK, age_verified=False), RefusalReason.AGE_NOT_VERIFIED),
        (
            member(Tier.JACK, exclusions=frozenset({Exclusion.SELF_EXCLUDED})),
            RefusalReason.SELF_EXCLUDED,
        ),
        (
            member(Tier.JACK, exclusions=frozenset({Exclusion.REFUSAL_OF_ENTRY})),
            RefusalReason.REFUSAL_OF_ENTRY,
        ),
        (
            member(Tier.JACK, exclusions=frozenset({Exclusion.STAFF_OR_ASSOCIATE})),
            RefusalReason.STAFF_OR_ASSOCIATE,
        ),
        (PlayerStanding(None), RefusalReason.UNKNOWN_PLAYER),
    ],
)
def test_003_rules_1_to_3_exclusions_apply_to_tickets(
    standing: PlayerStanding, reason: RefusalReason
) -> None:
    ledger = ledger_for(C1=Tier.JACK)
    earn(ledger, "C1", at(date(2026, 4, 20), 10), 500)
    result = ledger.enter("C1", "teeds-tj-0425", "kiosk", "r1", at(APR25, 9), standing)
    assert refused(result) is reason
    assert ledger.available("C1", "teeds-tj-0425") == 10  # kept, but not enterable
    assert ledger.refusals[reason.value] == 1


def test_003_rule_9_entries_cannot_be_bought() -> None:
    """Only points, complimentary, app bonus, RAPS-winner bonus and the casino's own feed
    credit tickets; there is no way to record a purchase."""
    assert {c.value for c in Cause} == {
        "points",
        "complimentary",
        "app_bonus",
        "raps_winner",
        "external",
    }
    with pytest.raises(ValueError):
        TicketsCredited(
            card="C1",
            bin_id="b",
            tickets=5,
            cause="purchase",  # type: ignore[arg-type]
            ref="till-7",
            at=at(APR25, 9),
        )


# ------------------------------------------------------------------ 000 Turn up the heat

SAT_CASH, CAR_OCT = "sat-cash-2025-10-04", "car-2025-10-25"


def test_000_saturday_cash_draws_50_points_a_ticket_for_every_tier() -> None:
    ledger = ledger_for("000", **{f"C{t.value}": t for t in Tier})
    for t in Tier:
        earn(ledger, f"C{t.value}", at(date(2025, 10, 4), 10), 120)
        assert ledger.credited_from_points(f"C{t.value}", SAT_CASH) == 2


def test_000_car_draws_100_points_a_ticket_from_0800_on_27_september_until_each_draw() -> None:
    ledger = ledger_for("000", C1=Tier.TEN)
    earn(ledger, "C1", at(date(2025, 9, 27), 7, 59), 1000)  # before the start: nothing
    earn(ledger, "C1", at(date(2025, 9, 27), 8), 150)
    earn(ledger, "C1", at(date(2025, 10, 10), 20), 100)
    assert ledger.credited_from_points("C1", CAR_OCT) == 2
    earn(ledger, "C1", at(date(2025, 10, 25), 21, 5), 100)  # after October's last car draw
    assert ledger.credited_from_points("C1", CAR_OCT) == 2
    assert ledger.credited_from_points("C1", "car-2025-11-29") == 3  # the same points count again
    assert ledger.credited_from_points("C1", "car-2025-12-27") == 3


def test_000_queen_thursdays_earn_in_the_month_until_just_before_each_draw() -> None:
    ledger = ledger_for("000", Q1=Tier.QUEEN)
    earn(ledger, "Q1", at(date(2025, 10, 1), 7, 59), 500)  # before 08:00 on the 1st
    earn(ledger, "Q1", at(date(2025, 10, 1), 8), 100)
    earn(ledger, "Q1", at(date(2025, 10, 2), 19, 59, 59), 100)  # just before the 20:00 draw
    earn(ledger, "Q1", at(date(2025, 10, 2), 20), 100)  # at the draw: for the next ones
    earn(ledger, "Q1", at(date(2025, 11, 1), 9), 300)  # November: November's draws only
    got = {b: ledger.credited_from_points("Q1", b) for b in ledger.plan.bins if "queen" in b}
    assert got["queen-2025-10-02"] == 2
    assert got["queen-2025-10-09"] == got["queen-2025-10-26"] == got["queen-2025-10-30"] == 3
    assert got["queen-2025-11-06"] == 3
    assert got["queen-2025-12-04"] == 0


def test_000_queen_thursdays_are_queen_only_with_10_free_tickets() -> None:
    ledger = ledger_for("000", Q1=Tier.QUEEN, K1=Tier.KING)
    earn(ledger, "Q1", at(date(2025, 10, 1), 9), 250)
    day = date(2025, 10, 2)
    assert entered(enter(ledger, "Q1", "queen-2025-10-02", at(day, 8), Tier.QUEEN)).tickets == 12
    assert refused(enter(ledger, "K1", "queen-2025-10-02", at(day, 8), Tier.KING)) is (
        RefusalReason.TIER_NOT_IN_PROGRAM
    )
    earn(ledger, "K1", at(date(2025, 10, 1), 9), 10_000)
    assert ledger.credited("K1", "queen-2025-10-02") == 0


@pytest.mark.parametrize(
    ("tier", "free"),
    [(Tier.ACE, 50), (Tier.KING, 40), (Tier.QUEEN, 30), (Tier.JACK, 20), (Tier.TEN, 10)],
)
def test_000_complimentary_tickets_per_draw_by_tier(tier: Tier, free: int) -> None:
    ledger = ledger_for("000")
    day = date(2025, 10, 25)
    assert entered(enter(ledger, "C1", CAR_OCT, at(day, 9), tier)).tickets == free
    assert (
        refused(enter(ledger, "C1", CAR_OCT, at(day, 10), tier)) is RefusalReason.NOTHING_TO_ENTER
    )
    assert ledger.grant_bonuses("C1", CAR_OCT, tier, at(day, 11)) == []  # once per draw
    assert entered(enter(ledger, "C1", SAT_CASH, at(date(2025, 10, 4), 9), tier)).tickets == free


def test_000_a_ticket_is_valid_for_one_draw_only() -> None:
    """Rule 8: "Ticket receipts printed will be valid for the 13h00 draw only"."""
    ledger = ledger_for("000", C1=Tier.JACK)
    wed = date(2025, 10, 1)
    earn(ledger, "C1", at(wed, 9), 100)  # counts for both of the day's draws
    noon = entered(enter(ledger, "C1", "wed-2025-10-01-1300", at(wed, 10), Tier.JACK))
    assert noon.tickets == 2 and noon.bin_id == "wed-2025-10-01-1300"
    assert ledger.entries("wed-2025-10-01-2000") == []
    assert ledger.entries("wed-2025-10-01-1300") == [("C1", 2)]
    evening = entered(enter(ledger, "C1", "wed-2025-10-01-2000", at(wed, 14), Tier.JACK))
    assert evening.tickets == 2 and ledger.available("C1", "wed-2025-10-01-1300") == 0


@pytest.mark.parametrize(
    ("bin_id", "when", "ok"),
    [
        ("wed-2025-10-01-1300", (2025, 10, 1, 7, 59, 59), False),
        ("wed-2025-10-01-1300", (2025, 10, 1, 8, 0, 0), True),
        ("wed-2025-10-01-1300", (2025, 10, 1, 12, 54, 59), True),
        ("wed-2025-10-01-1300", (2025, 10, 1, 12, 55, 0), False),
        ("wed-2025-10-01-2000", (2025, 10, 1, 12, 59, 59), False),
        ("wed-2025-10-01-2000", (2025, 10, 1, 13, 0, 0), True),
        ("wed-2025-10-01-2000", (2025, 10, 1, 19, 55, 0), False),
        ("sat-cash-2025-10-04", (2025, 10, 4, 8, 0, 0), True),
        ("sat-cash-2025-10-04", (2025, 10, 4, 20, 54, 59), True),
        ("sat-cash-2025-10-04", (2025, 10, 4, 20, 55, 0), False),
        ("sat-cash-2025-10-04", (2025, 10, 3, 12, 0, 0), False),  # another day
    ],
)
def test_000_entry_windows(bin_id: str, when: tuple[int, ...], ok: bool) -> None:
    """08:00-12:55 for 13:00, 13:00-19:55 for 20:00, 08:00-20:55 on Saturdays."""
    ledger = ledger_for("000")
    ledger.credit_external("C1", bin_id, 3, f"ext-{bin_id}", at(date(2025, 9, 30), 9))
    y, mo, d, h, mi, s = when
    result = enter(ledger, "C1", bin_id, at(date(y, mo, d), h, mi, s), Tier.JACK)
    if ok:
        free = ledger.plan.bins[bin_id].program.complimentary.get(Tier.JACK, 0)
        assert entered(result).tickets == 3 + free
    else:
        assert refused(result) is RefusalReason.OUTSIDE_ENTRY_WINDOW


def test_000_the_2130_vault_draw_uses_the_tickets_entered_for_that_days_draws() -> None:
    """Rule 136: the same tickets as the draws on 20 Dec 2025."""
    ledger = ledger_for("000", C1=Tier.KING)
    day = date(2025, 12, 20)
    earn(ledger, "C1", at(day, 9), 100)
    first = entered(enter(ledger, "C1", "sat-cash-2025-12-20-1500", at(day, 10), Tier.KING))
    assert first.tickets == 40 + 2 and first.bin_id == "sat-cash-2025-12-20"
    earn(ledger, "C1", at(day, 16), 50)  # earned after the 15:00 draw: a second receipt
    second = entered(enter(ledger, "C1", "sat-cash-2025-12-20-2100", at(day, 17), Tier.KING))
    assert second.tickets == 1 and second.receipt_no != first.receipt_no
    bins = {
        ledger.plan.draw(d).bin_id for d in ("sat-cash-2025-12-20-1900", "sat-cash-2025-12-20-2130")
    }
    assert bins == {"sat-cash-2025-12-20"}
    assert ledger.entries("sat-cash-2025-12-20-2130") == [("C1", 43)]


def test_000_rule_7_app_entries_need_the_player_playing_now() -> None:
    ledger = ledger_for("000", C1=Tier.ACE)
    day = date(2025, 10, 25)
    when = at(day, 12)
    assert refused(enter(ledger, "C1", CAR_OCT, when, Tier.ACE, channel="app")) is (
        RefusalReason.NOT_PLAYING
    )
    app = entered(enter(ledger, "C1", CAR_OCT, when, Tier.ACE, channel="app", playing_now=True))
    assert app.channel is Channel.APP and app.tickets == 50


def test_000_entries_recompute_from_the_records_alone() -> None:
    ledger = ledger_for("000", C1=Tier.QUEEN, C2=Tier.TEN)
    day = date(2025, 10, 25)
    earn(ledger, "C1", at(date(2025, 10, 1), 10), 333)
    earn(ledger, "C2", at(date(2025, 10, 20), 10), 99)
    for card, tier in (("C1", Tier.QUEEN), ("C2", Tier.TEN)):
        entered(enter(ledger, card, CAR_OCT, at(day, 9), tier))
    result = recompute([r.to_dict() for r in ledger.take_records()], ledger.plan)
    assert result["ok"], result["errors"]
    assert (
        result["bins"][CAR_OCT]["entered"] == dict(ledger.entries(CAR_OCT)) == {"C1": 33, "C2": 10}
    )
    assert result["bins"][CAR_OCT]["by_cause"] == {"complimentary": 40, "points": 3}

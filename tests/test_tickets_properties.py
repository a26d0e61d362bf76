"""Property tests: random play, entries, bonuses and restarts never break the ledger.

Hypothesis writes points events (in and out of time order, across period bounds, for
known and unknown cards) fed through a real Floor, so the floor's cells keep points back
as in production, interleaved with kiosk and app entries (request ids reused), RAPS
wins, external credits (some invalid) and restarts (floor and ledger snapshots, records
replayed).  After the run:

- the records recompute without a single broken rule, and the recomputed entries and
  credits equal the ledger's;
- no entry lies outside an entry window of its bin; nothing is negative;
- the tickets credited for points equal floor(points in the bin's interval / rate),
  computed from the events alone; so does the ledger's points total;
- replaying the records gives the same ledger, and the run with restarts wrote exactly
  the records of the same run without them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from selector.events import PlayerUpserted, PointsEarned, Tier
from selector.floor import Floor
from selector.promotion import EarnRules, Promotion
from selector.tickets import (
    PeriodRule,
    PlayerStanding,
    TicketDraw,
    TicketLedger,
    TicketPlan,
    TicketProgram,
    recompute,
    record_from_dict,
)
from tests.builders import small_layout
from tests.test_tickets_plans import SAST, at, draw

D = date(2025, 10, 4)
T0 = at(D, 7)  # events fall from 07:00 on D to 17:00 the day after
CARDS = ("C0", "C1", "C2", "C3", "C4")


def property_plan() -> TicketPlan:
    """Nested cumulative intervals with a shared bin, per-day bins and a 7-day window."""
    programs = [
        TicketProgram(
            program_id="cum",
            promotion_id="p",
            period=PeriodRule.fixed_start_to_draw(datetime(2025, 10, 4, 8)),
            rates={Tier.JACK: 50, Tier.QUEEN: 100, Tier.KING: 200},
            complimentary={Tier.JACK: 2},
        ),
        TicketProgram(
            program_id="day",
            promotion_id="p",
            period=PeriodRule.day_to_draw(time(8)),
            rates={Tier.TEN: 30, Tier.JACK: 30},
            app_bonus={Tier.TEN: 1},
        ),
        TicketProgram(
            program_id="week",
            promotion_id="p",
            period=PeriodRule.fixed_windows(datetime(2025, 9, 27), 7),
            rates={Tier.ACE: 70},
            raps_winner_bonus={Tier.ACE: 3, Tier.JACK: 1},
            cap=4,
        ),
    ]
    d1 = D + timedelta(days=1)
    draws = [
        draw("A", "cum", at(D, 13), time(8), time(12, 55)),
        draw("B1", "cum", at(D, 20), time(8), time(19, 55), bin_id="B"),
        draw("B2", "cum", at(D, 20, 30), time(8), time(20, 25), bin_id="B"),
        draw("C", "cum", at(d1, 13), time(8), time(12, 55)),
        draw("E", "day", at(D, 15), time(8), time(14, 55)),
        draw("F", "day", at(d1, 15), time(9), time(14, 55)),
        draw("W", "week", at(D, 22), time(8), time(21, 55)),
    ]
    return TicketPlan(programs, draws)


PLAN = property_plan()
BINS = sorted(PLAN.bins)
minutes = st.integers(0, 34 * 60)


def entry_time(d: TicketDraw, where: str) -> int:
    """Minutes after T0 at or around the bounds of a draw's entry window."""
    opens, closes = (round((t - T0).total_seconds() / 60) for t in (d.opens, d.closes))
    return {
        "before": opens - 1,
        "open": opens,
        "mid": (opens + closes) // 2,
        "last": closes - 1,
        "close": closes,
    }[where]


WHERE = st.sampled_from(["before", "open", "mid", "mid", "last", "close"])
# exact multiples of the rates too: a first event right on a ticket boundary
points_op = st.tuples(
    st.just("points"),
    st.sampled_from(CARDS),
    minutes,
    st.sampled_from([30, 50, 70, 100, 200]) | st.integers(0, 300),
)
enter_op = st.builds(
    lambda card, d, where, channel, req, playing, app: (
        "enter",
        card,
        entry_time(d, where),
        channel,
        req,
        d.bin_id,
        playing,
        app,
    ),
    st.sampled_from(CARDS),
    st.sampled_from(PLAN.draws),
    WHERE,
    st.sampled_from(["kiosk", "app"]),
    st.integers(0, 5),
    st.booleans(),
    st.booleans(),
)
op = st.one_of(
    points_op,
    points_op,
    points_op,
    enter_op,
    enter_op,
    st.tuples(
        st.just("raps"), st.sampled_from(CARDS), minutes, st.integers(0, 2), st.integers(1, 3)
    ),
    st.tuples(
        st.just("external"),
        st.sampled_from(CARDS),
        st.sampled_from([*BINS, "nope"]),
        st.integers(-1, 5),
        st.integers(0, 4),
    ),
    st.tuples(st.just("restart")),
)
tiers = st.lists(st.sampled_from([*Tier, None]), min_size=len(CARDS), max_size=len(CARDS))


@dataclass
class Run:
    floor: Floor
    ledger: TicketLedger
    records: list[dict[str, Any]]
    points: list[tuple[str, float, int]]  # (card, epoch, milli) of every points event


def build(plan: TicketPlan) -> tuple[Floor, TicketLedger]:
    box: list[Floor] = []
    ledger = TicketLedger(plan, tier_of=lambda card: box[0].tier_of(card))
    floor = Floor(
        small_layout(),
        [Promotion("raps")],
        EarnRules(points_source="events"),
        points_sink=ledger.points_sink,
    )
    box.append(floor)
    return floor, ledger


def restart(run: Run) -> None:
    """What the daemon does after kill -9: records from the journal, snapshots taken together."""
    snap = json.loads(
        json.dumps({"floor": run.floor.snapshot(), "tickets": run.ledger.snapshot(run.floor.now)})
    )
    run.records += [r.to_dict() for r in run.ledger.take_records()]
    run.floor, run.ledger = build(PLAN)
    run.ledger.replay([record_from_dict(r) for r in run.records])
    run.ledger.restore(snap["tickets"])
    run.floor.restore(snap["floor"])


def play(card_tiers: list[Tier | None], ops: list[tuple[Any, ...]], restarts: bool) -> Run:
    floor, ledger = build(PLAN)
    run = Run(floor, ledger, [], [])
    for i, (card, tier) in enumerate(zip(CARDS, card_tiers, strict=True)):
        if tier is not None:
            floor.apply(
                PlayerUpserted(
                    event_id=f"dir{i}",
                    source="cms",
                    ts=T0 - timedelta(hours=1),
                    card=card,
                    tier=tier,
                    display_name=card,
                    age_verified=True,
                )
            )
    for n, o in enumerate(ops):
        kind = o[0]
        if kind == "points":
            _, card, minute, pts = o
            ts = T0 + timedelta(minutes=minute)
            run.floor.apply(
                PointsEarned(event_id=f"p{n}", source="cms", ts=ts, card=card, points=pts)
            )
            run.points.append((card, ts.timestamp(), pts * 1000))
        elif kind == "enter":
            _, card, minute, channel, req, bin_id, playing, app = o
            prof = run.floor.profile(card)
            who = PlayerStanding.from_profile(prof, app_registered=app, playing_now=playing)
            run.ledger.enter(card, bin_id, channel, f"r{req}", T0 + timedelta(minutes=minute), who)
        elif kind == "raps":
            _, card, minute, session, pick = o
            tier = run.floor.tier_of(card)
            if tier is not None:
                run.ledger.credit_raps_winner(
                    card, tier, f"S{session}", pick, T0 + timedelta(minutes=minute)
                )
        elif kind == "external":
            _, card, bin_id, tickets, eid = o
            run.ledger.credit_external(card, bin_id, tickets, f"x{eid}", T0)
        elif restarts:
            restart(run)
    run.records += [r.to_dict() for r in run.ledger.take_records()]
    return run


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(card_tiers=tiers, ops=st.lists(op, min_size=10, max_size=80))
def test_the_ledger_keeps_its_books(
    card_tiers: list[Tier | None], ops: list[tuple[Any, ...]]
) -> None:
    run = play(card_tiers, ops, restarts=True)
    ledger = run.ledger
    audit = recompute(run.records, PLAN)
    assert audit["ok"], audit["errors"]
    for bin_id in BINS:
        got = audit["bins"].get(bin_id, {"entered": {}, "credited": {}})
        assert got["entered"] == dict(ledger.entries(bin_id))
        for card in CARDS:
            assert got["credited"].get(card, 0) == ledger.credited(card, bin_id)
            assert 0 <= ledger.available(card, bin_id) <= ledger.credited(card, bin_id)
    for r in run.records:
        assert r["tickets"] > 0
        if r["type"] == "tickets.entered":
            assert PLAN.bins[r["bin_id"]].entry_open(datetime.fromisoformat(r["at"]).timestamp())
    # points tickets from the events alone
    for card, tier in zip(CARDS, card_tiers, strict=True):
        for b in PLAN.bins.values():
            milli = sum(m for c, t, m in run.points if c == card and b.start <= t < b.end)
            d = b.divisors.get(tier) if tier is not None else None
            expected = milli // d if d is not None else 0
            assert ledger.credited_from_points(card, b.bin_id) == expected, (card, b.bin_id)
            if b.divisors:
                assert ledger.points_milli(card, b.bin_id) == milli
    # replay reproduces the state, and restarts changed nothing
    again = TicketLedger(PLAN)
    again.replay([record_from_dict(r) for r in run.records])
    for bin_id in BINS:
        assert again.entries(bin_id) == ledger.entries(bin_id)
        assert all(again.available(c, bin_id) == ledger.available(c, bin_id) for c in CARDS)
    assert play(card_tiers, ops, restarts=False).records == run.records


def test_the_property_plan_has_what_the_properties_need() -> None:
    """Shared bin, nested intervals of one start, a late-event-prone group."""
    assert len(PLAN.bins["B"].draws) == 2
    starts = {PLAN.bins[b].start for b in ("A", "B", "C")}
    assert len(starts) == 1
    assert datetime.fromtimestamp(PLAN.bins["W"].start, SAST) == at(D, 0)

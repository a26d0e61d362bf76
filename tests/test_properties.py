"""Property tests: random floors and random staff commands never break the draw's rules.

Hypothesis writes event streams over a small floor (cards in and out, games with
wagers, machine status, table ratings, directory changes with exclusions, tiers and
age verification, late events, clock advances) interleaved with session commands (draws, verify,
award, no-show, void, claim-timer expiry, with command ids sometimes reused).  After
every step we check what the seed's rules and DESIGN.md promise:

- a drawn card was eligible at that moment by a fresh `Floor.check`, was not excluded,
  sits at the pool's kind of place, and was not already won or pending in the session;
- filled slots (pending, verified, awarded) per pool never exceed the quota;
- each incremental pool equals the pool recomputed from scratch with `Floor.check`;
- the same events, commands and seed give the same records (replayability);
- verify accepts the closed honest session and rejects an altered card, seed or pool
  order.

Time starts at 12:00 and mostly moves by seconds, with occasional jumps of hours, so
the qualifying window closes and local days roll over inside some runs; the day change
also has its own deterministic tests below.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from selector.events import Exclusion, MachineStatus, PoolKind, Tier
from selector.floor import ELIGIBLE, Floor
from selector.promotion import EarnRules, Promotion, SessionRules
from selector.records import Record
from selector.session import (
    FILLED,
    CommandConflict,
    DrawSession,
    Outcome,
    PickState,
    Prize,
    PrizeKind,
    SessionError,
)
from selector.verify import verify_session
from tests.builders import (
    Events,
    command,
    local,
    raps_floor,
    seated_slot_player,
    seated_table_player,
    small_layout,
)

CARDS = [f"C{i}" for i in range(8)]
MACHINES = [f"M{i:02d}" for i in range(1, 9)]  # M01-M03 Main Floor, M04-M08 Salon Prive
TABLES = ["T1", "T2"]
SEATS = 3
KINDS = ("slots", "tables")
PROMOTIONS = ("raps", "vip")


def make_floor() -> Floor:
    """Two promotions so the pools are exercised under different rules at once: the
    seed's RAPS (50 points, every tier and area) and a stricter one (queen and up, not in
    the Salon Prive, 10 points, 60 s of continuous play before joining the pool)."""
    return Floor(
        small_layout(machines=len(MACHINES), tables=len(TABLES), seats=SEATS),
        [
            Promotion("raps"),
            Promotion(
                "vip",
                threshold_points=10,
                tiers=frozenset({Tier.QUEEN, Tier.KING, Tier.ACE}),
                areas_excluded=frozenset({"Salon Prive"}),
                min_active_seconds=60,
            ),
        ],
        EarnRules(),
        idle_seconds=120,
    )


# --------------------------------------------------------------------- strategies

card = st.sampled_from(CARDS)
machine = st.sampled_from(MACHINES)
table = st.sampled_from(TABLES)
seat = st.integers(1, SEATS)
minutes = st.sampled_from([0, 1, 5, 20, 60, 90])
wager = st.sampled_from([0, 1000, 20_000, 60_000])
pick_no = st.sampled_from([0, 0, 0, 1, 2, 3, 4])  # 0: the latest pick
# a small id space so that ids are sometimes reused, for the same or another command
cid = st.integers(0, 25).map(lambda i: f"cmd-{i}")

floor_step = st.one_of(
    st.tuples(st.just("card_in"), machine, card),
    st.tuples(st.just("card_out"), machine, card),
    st.tuples(st.just("game"), machine, wager),
    st.tuples(st.just("play"), card, wager),
    st.tuples(st.just("status"), machine, st.sampled_from(list(MachineStatus))),
    st.tuples(st.just("rating_open"), table, seat, card),
    st.tuples(st.just("rating_update"), table, seat, card, minutes),
    st.tuples(st.just("rating_close"), table, seat, card, minutes),
    st.tuples(
        st.just("player"),
        card,
        st.sampled_from(list(Tier)),
        st.booleans() | st.just(True),  # mostly age-verified
        st.frozensets(st.sampled_from(list(Exclusion)), max_size=2)
        | st.just(frozenset[Exclusion]()),
    ),
    st.tuples(st.just("tick"), st.integers(0, 100)),
    st.tuples(st.just("advance"), st.integers(0, 100)),
)
# now and then hours pass: the qualifying window closes, local days roll over
jump_step = st.tuples(st.just("jump"), st.integers(1, 14))
# events that arrive late (stamped up to 5 minutes before the floor's clock), as they do
# when a SMIB buffers or a rating terminal reconnects
late = st.integers(1, 300)
late_step = st.one_of(
    st.tuples(st.just("late_game"), machine, wager, late),
    st.tuples(st.just("late_card_in"), machine, card, late),
    st.tuples(st.just("late_rating_update"), table, seat, card, minutes, late),
)
draw_step = st.tuples(st.just("draw"), cid, st.sampled_from(KINDS))
session_step = st.one_of(
    draw_step,
    st.tuples(st.just("verify"), cid, pick_no),
    st.tuples(st.just("award"), cid, pick_no, st.sampled_from(["E1", "E2"])),
    st.tuples(st.just("no_show"), cid, pick_no),
    st.tuples(st.just("void"), cid, pick_no, st.sampled_from(["wrong seat", "no ID"])),
    st.tuples(st.just("expire"), st.integers(0, 100)),
)
Step = tuple[Any, ...]
# half floor events (some late), a quarter draws, a quarter other session commands
# (one_of alone would weight by the number of branches, leaving draws at a few percent)
_weighted = {"floor": floor_step, "late": late_step, "draw": draw_step, "session": session_step}
steps = st.lists(
    st.sampled_from(
        ["floor", "floor", "floor", "late", "draw", "draw", "session", "session"]
    ).flatmap(_weighted.__getitem__),
    min_size=10,
    max_size=80,
)
rules = st.builds(
    SessionRules,
    quotas=st.fixed_dictionaries(
        {PoolKind.SLOTS: st.integers(1, 3), PoolKind.TABLES: st.integers(1, 2)}
    ),
    claim_seconds=st.sampled_from([30.0, 90.0]),
    exclude_no_shows=st.booleans(),
    exclude_voided=st.booleans(),
)
seeds = st.binary(min_size=32, max_size=32)

# Warm-up: a few cards get a directory entry, a seat and enough points, so draws
# usually have someone to pick from; the random steps then disturb that floor.
warmup = st.lists(st.sampled_from(CARDS), unique=True, min_size=2, max_size=6)


# --------------------------------------------------------------------- interpreter


@dataclass
class Run:
    """One execution of a program: floor, session, clock and what the checks saw."""

    floor: Floor
    session: DrawSession
    ev: Events
    draws: int = 0
    replays: int = 0
    refused: Counter[str] = field(default_factory=Counter)


def brute_force_pool(
    floor: Floor, promotion: str, kind: str, cards: Sequence[str] = CARDS
) -> set[str]:
    """The pool from scratch: every known card that a fresh check calls eligible and
    that sits at this kind of place."""
    out = set()
    for c in cards:
        loc = floor.location(c)
        if floor.check(promotion, c) == ELIGIBLE and loc is not None and loc.kind == kind:
            out.add(c)
    return out


def assert_pools_match(floor: Floor) -> None:
    """Pools equal their from-scratch recomputation once the floor's timers are caught up
    with its own clock (the latest event time or advance): no time is added, so a `tick`
    without `advance` still leaves the next events to arrive on a clock that moved on."""
    floor.advance(datetime.fromtimestamp(floor.now, UTC))
    for promotion in PROMOTIONS:
        for kind in KINDS:
            pool = list(floor.pool(promotion, kind))
            assert pool == sorted(set(pool)), "pool must be canonical"
            assert set(pool) == brute_force_pool(floor, promotion, kind), (promotion, kind)


def assert_quota(session: DrawSession) -> None:
    for kind in KINDS:
        filled = [p for p in session.picks if p.kind == kind and p.state in FILLED]
        quota = session.rules.quotas.get(PoolKind(kind), 0)
        assert len(filled) <= quota, (kind, filled)
        assert len({p.slot for p in filled}) == len(filled)  # one filled pick per slot
        assert all(1 <= p.slot <= quota for p in filled)


def apply_floor_step(run: Run, step: Step) -> None:
    floor, ev = run.floor, run.ev
    match step:
        case ("card_in", m, c):
            floor.apply(ev.card_in(m, c))
        case ("card_out", m, c):
            floor.apply(ev.card_out(m, c))
        case ("game", m, wager):
            floor.apply(ev.game(m, wager=wager))
        case ("play", c, wager):  # a game wherever this card is seated at a slot, if anywhere
            loc = floor.location(c)
            if loc is not None and loc.machine is not None:
                floor.apply(ev.game(loc.machine, wager=wager))
        case ("status", m, status):
            floor.apply(ev.machine_status(m, status))
        case ("rating_open", t, s, c):
            floor.apply(ev.rating_open(t, s, c))
        case ("rating_update", t, s, c, mins):
            floor.apply(ev.rating_update(t, s, c, bet=10_000, minutes=mins))
        case ("rating_close", t, s, c, mins):
            floor.apply(ev.rating_close(t, s, c, bet=10_000, minutes=mins))
        case ("player", c, tier, age_ok, exclusions):
            floor.apply(ev.player(c, tier=tier, age_verified=age_ok, exclusions=exclusions))
        case ("late_game", m, wager, back):
            floor.apply(ev.game(m, wager=wager, at=ev.now - timedelta(seconds=back)))
        case ("late_card_in", m, c, back):
            floor.apply(ev.card_in(m, c, at=ev.now - timedelta(seconds=back)))
        case ("late_rating_update", t, s, c, mins, back):
            at = ev.now - timedelta(seconds=back)
            floor.apply(ev.rating_update(t, s, c, bet=10_000, minutes=mins, at=at))
        case ("tick", seconds):
            ev.tick(seconds)
        case ("advance", seconds):
            floor.advance(ev.tick(seconds))
        case ("jump", hours):
            ev.tick(hours * 3600)
        case _:  # pragma: no cover
            raise AssertionError(step)


def apply_session_step(run: Run, step: Step) -> None:
    """Run one staff command; refused commands are fine, broken rules are not."""
    s, ev = run.session, run.ev
    if step[0] == "expire":
        ev.tick(step[1])
        s.expire(ev.now)
        return
    cmd = command(step[1], ev.now)
    if len(step) > 2 and step[0] != "draw" and step[2] == 0:
        step = (step[0], step[1], len(s.picks), *step[3:])  # 0 names the latest pick
    known = s.answered(cmd.command_id)  # a retry (or a conflicting reuse) of this id
    before = len(s.records)
    try:
        match step:
            case ("draw", _, kind):
                out = s.draw(cmd, kind)
            case ("verify", _, n):
                out = s.verify(cmd, n)
            case ("award", _, n, envelope):
                out = s.award(cmd, n, Prize(10_000, PrizeKind.CASH, envelope))
            case ("no_show", _, n):
                out = s.no_show(cmd, n)
            case ("void", _, n, reason):
                out = s.void(cmd, n, reason)
            case _:  # pragma: no cover
                raise AssertionError(step)
    except CommandConflict:
        assert known
        assert len(s.records) == before
        run.refused[f"{step[0]}: id reused"] += 1
        return
    except SessionError as e:
        run.refused[f"{step[0]}: {str(e).split()[-1]}"] += 1
        return
    if out.replayed:
        assert known
        assert len(s.records) == before, "a retried command must change nothing"
        run.replays += 1
        return
    assert not known
    if step[0] == "draw":
        check_draw(run, out)


def check_draw(run: Run, out: Outcome) -> None:
    """The rules a fresh draw must keep, checked right after it, at its moment."""
    s, floor = run.session, run.floor
    # commands are never stamped before the floor's events here, so after the draw's own
    # `advance` the pool agrees with a fresh check and no re-check can fail
    assert all(r.type != "pick.recheck_failed" for r in out.records)
    # the other picks' states now are their states at the draw (after its expiry)
    barring = set(FILLED)
    if s.rules.exclude_no_shows:
        barring.add(PickState.NO_SHOW)
    if s.rules.exclude_voided:
        barring.add(PickState.VOID)
    others = s.picks[:-1] if out.pick is not None else s.picks
    barred = {p.card for p in others if p.state in barring}
    kind = out.records[-1].data["kind"]
    live = [c for c in floor.pool(s.promotion_id, kind) if c not in barred]
    if out.pick is None:
        assert out.no_eligible
        assert live == [], "no_eligible while someone could have been drawn"
        return
    run.draws += 1
    pick = out.pick
    assert floor.check(s.promotion_id, pick.card) == ELIGIBLE
    prof = floor.profile(pick.card)
    assert prof is not None
    assert prof.age_verified
    assert not prof.exclusions
    loc = floor.location(pick.card)
    assert loc is not None
    assert loc.kind == pick.kind
    assert pick.card not in barred
    # the recorded snapshot is the live pool minus the barred, in canonical order
    rec = out.records[-1]
    assert rec.type == "pick.drawn"
    assert rec.data["pool"] == live
    assert rec.data["pool"][rec.data["index"]] == pick.card


def execute(program: list[Step], warm: list[str], session_rules: SessionRules, seed: bytes) -> Run:
    floor = make_floor()
    ev = Events()
    for i, c in enumerate(warm):  # half at slots, half at tables, all qualified
        if i % 2 == 0:
            seated_slot_player(floor, ev, c, MACHINES[i // 2], points=1, tier=Tier.QUEEN)
            floor.apply(ev.game(MACHINES[i // 2], wager=60_000))
        else:
            seated_table_player(floor, ev, c, TABLES[i // 2 % 2], i // 4 + 1, tier=Tier.KING)
    session = DrawSession("prop-session", "raps", floor, session_rules)
    session.open(command("open", ev.now), seed)
    run = Run(floor, session, ev)
    for step in program:
        if step[0] in ("draw", "verify", "award", "no_show", "void", "expire"):
            apply_session_step(run, step)
        else:
            apply_floor_step(run, step)
        assert_quota(session)
        assert_pools_match(floor)
    session.close(command("close", ev.now), force=True)
    return run


def records_of(run: Run) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = json.loads(json.dumps([r.to_dict() for r in run.session.records]))
    return out


# ---------------------------------------------------------------------- properties


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=steps, warm=warmup, session_rules=rules, seed=seeds)
def test_random_floors_and_commands_keep_the_rules(
    program: list[Step], warm: list[str], session_rules: SessionRules, seed: bytes
) -> None:
    """All invariants after every step, replayability, and verification at close."""
    run = execute(program, warm, session_rules, seed)
    recs = records_of(run)

    # same events, commands and seed: the same records, byte for byte
    again = execute(program, warm, session_rules, seed)
    assert records_of(again) == recs

    # the honest closed session verifies, from live records and from JSON
    assert verify_session(run.session.records) == []
    assert verify_session(recs) == []
    assert verify_session([Record.from_dict(r) for r in recs]) == []

    # any single altered seed is refused
    ci = next(i for i, r in enumerate(recs) if r["type"] == "session.closed")
    forged = json.loads(json.dumps(recs))
    forged[ci]["data"]["seed"] = bytes(b ^ 0x80 for b in seed).hex()
    assert verify_session(forged)

    for i, r in enumerate(recs):
        if r["type"] != "pick.drawn":
            continue
        d = r["data"]
        # an altered winner (another pool member, or a stranger) is refused at that pick
        others = [c for c in d["pool"] if c != d["card"]]
        for other in [*others[:1], "STRANGER"]:
            forged = json.loads(json.dumps(recs))
            forged[i]["data"]["card"] = other
            bad = verify_session(forged)
            assert any(m.position == i and m.pick == d["pick"] for m in bad), bad
        # a pool out of canonical order is refused at that pick
        if len(d["pool"]) >= 2:
            forged = json.loads(json.dumps(recs))
            pool = forged[i]["data"]["pool"]
            pool[0], pool[-1] = pool[-1], pool[0]
            bad = verify_session(forged)
            assert any(m.position == i and "canonical" in m.message for m in bad), bad


@settings(max_examples=300, deadline=None)
@given(program=steps, warm=warmup, seed=seeds)
def test_pools_match_a_from_scratch_recomputation(
    program: list[Step], warm: list[str], seed: bytes
) -> None:
    """The incremental pools alone (no session): cheaper, so more floors per run.  The
    session rules are the seed's defaults; `execute` checks pools after every step."""
    run = execute([s for s in program if s[0] != "draw"], warm, SessionRules(), seed)
    run.floor.advance(run.ev.now)
    assert_pools_match(run.floor)


def test_replays_of_a_command_change_nothing() -> None:
    """Deterministic companion to the property test: a retried draw returns its first
    pick; the same id used for another command is refused as a conflict."""
    floor = raps_floor()
    ev = Events()
    seated_slot_player(floor, ev, "A", "M01")
    seated_slot_player(floor, ev, "B", "M02")
    s = DrawSession("s", "raps", floor)
    s.open(command("o", ev.now), bytes(32))
    first = s.draw(command("d", ev.now), "slots")
    n = len(s.records)
    retry = s.draw(command("d", ev.now + timedelta(seconds=1)), "slots")
    assert retry.replayed
    assert retry.pick is first.pick
    assert len(s.records) == n
    try:
        s.verify(command("d", ev.now), 1)
    except CommandConflict:
        pass
    else:  # pragma: no cover
        raise AssertionError("a reused id for another command must conflict")
    assert s.picks[0].state == PickState.PENDING


# ------------------------------------------------------------- across local days


def test_pools_follow_the_day_change() -> None:
    """Points count per local day, so at midnight yesterday's 60 points no longer
    qualify.  `Floor.check` says so; the incremental pool must agree after `advance`.

    Regression guard: before commit 45a5740 nothing re-evaluated players when the local
    day changed, so yesterday's qualifiers still seated stayed in the pools; the day
    roll-over in `Floor.advance` fixed that."""
    floor = raps_floor()
    ev = Events(local(18, 0))
    seated_slot_player(floor, ev, "SLOT", "M01")
    seated_table_player(floor, ev, "TABLE", "T1", 1)
    assert brute_force_pool(floor, "raps", "slots", ["SLOT", "TABLE"]) == {"SLOT"}
    # the slot player keeps playing through midnight, the table rating stays open
    ev.now = local(23, 59, 0)
    floor.apply(ev.game("M01", wager=0))
    floor.advance(ev.now)
    assert set(floor.pool("raps", "slots")) == {"SLOT"}
    ev.now = local(0, 1, 0, day=26)
    floor.apply(ev.game("M01", wager=0))
    floor.advance(ev.now)
    assert floor.check("raps", "SLOT") == "below_threshold"
    assert floor.check("raps", "TABLE") == "below_threshold"
    assert (set(floor.pool("raps", "slots")), set(floor.pool("raps", "tables"))) == (set(), set())


def test_a_draw_after_midnight_never_picks_yesterdays_qualifier() -> None:
    """Whatever the pool says, the fresh re-check at the draw keeps yesterday's
    qualifiers out, and the session still verifies."""
    floor = raps_floor()
    ev = Events(local(18, 0))
    seated_slot_player(floor, ev, "OLD", "M01")
    ev.now = local(23, 59, 0)
    floor.apply(ev.game("M01", wager=0))
    ev.now = local(8, 30, 0, day=26)
    floor.apply(ev.game("M01", wager=0))
    seated_slot_player(floor, ev, "NEW", "M02")
    s = DrawSession("next-day", "raps", floor, SessionRules(quotas={PoolKind.SLOTS: 1}))
    s.open(command("o", ev.now), bytes(range(32)))
    out = s.draw(command("d", ev.now), "slots")
    assert out.pick is not None
    assert out.pick.card == "NEW"
    s.verify(command("v", ev.now), 1)
    s.close(command("c", ev.now))
    assert verify_session(s.records) == []

"""selector.verify: an honest session verifies; every kind of tampering is named.

These sessions open with derivation v1, as every session did before v3: what they check
holds for sessions restored after the upgrade (tests/test_verify_v3.py covers v3 and the
witness).

An inspector runs `verify_session` on the journal of a closed session.  It must accept
every honest session (including no-shows, voids, redraws, claim-timer expiries and
failed re-checks) and must reject any edit to a pick, a pool, the seed or the
commitment, naming the pick that no longer holds.  The records are also pushed through
JSON, because the inspector reads them from a file, not from memory.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest

from selector.events import PoolKind
from selector.fairness import DERIVATION_V1, commitment, pick_index, pool_digest
from selector.floor import Floor
from selector.promotion import EarnRules, Promotion, SessionRules
from selector.records import Record
from selector.session import DrawSession, Prize, PrizeKind
from selector.verify import Mismatch, verify_session
from tests.builders import (
    Events,
    command,
    raps_floor,
    seated_slot_player,
    seated_table_player,
    small_layout,
)

SEED = hashlib.sha256(b"test_verify fixed seed").digest()
SESSION_ID = "2026-04-25-raps-1"
SLOT_CARDS = [f"S{i:02d}" for i in range(1, 9)]
TABLE_CARDS = [f"T{i:02d}" for i in range(1, 7)]

Recs = list[dict[str, Any]]


class Script:
    """Runs commands against a session with unique command ids and a moving clock."""

    def __init__(self, session: DrawSession, start: datetime) -> None:
        self.session = session
        self.now = start
        self._n = 0

    def cmd(self, seconds: float = 5) -> Any:
        self.now += timedelta(seconds=seconds)
        self._n += 1
        return command(f"cmd-{self._n}", self.now)

    def draw(self, kind: str) -> int:
        out = self.session.draw(self.cmd(), kind)
        assert out.pick is not None, out
        return out.pick.number

    def draw_verified(self, kind: str) -> int:
        """Draw, then verify the winner with a later command (never `verify(cmd(),
        draw())`: the verify's time would be taken before the draw's)."""
        number = self.draw(kind)
        self.session.verify(self.cmd(), number)
        return number


def seated_floor(idle_seconds: float = 3600.0) -> tuple[Floor, Events]:
    """Eight qualified slot players and six qualified table players.

    The idle limit is an hour so the scripted players stay active for the whole
    script without having to replay games between commands."""
    floor = Floor(small_layout(), [Promotion("raps")], EarnRules(), idle_seconds=idle_seconds)
    ev = Events()
    for i, card in enumerate(SLOT_CARDS, start=1):
        seated_slot_player(floor, ev, card, f"M{i:02d}")
    for i, card in enumerate(TABLE_CARDS):
        seated_table_player(floor, ev, card, f"T{i // 3 + 1}", i % 3 + 1)
    return floor, ev


def honest_session(seed: bytes = SEED) -> DrawSession:
    """A full session: awards, a staff no-show, voids (pending and verified) with
    redraws, two picks pending at once that the claim timer turns into no-shows,
    and a forced close that voids the last pending pick. No-shows are barred for the
    rest of the session (the stricter option a promotion may choose), so that verify's
    check of that bar is exercised too."""
    floor, ev = seated_floor()
    s = DrawSession(SESSION_ID, "raps", floor, SessionRules(exclude_no_shows=True))
    run = Script(s, ev.now)
    s.open(run.cmd(), seed, derivation=DERIVATION_V1)
    p1 = run.draw("slots")
    s.verify(run.cmd(), p1)
    s.award(run.cmd(), p1, Prize(50_000, PrizeKind.CASH, "E07"))
    p2 = run.draw("slots")
    s.no_show(run.cmd(), p2)
    p3 = run.draw("slots")  # redraw into slot 2
    s.verify(run.cmd(), p3)
    p4 = run.draw("tables")
    s.void(run.cmd(), p4, "wrong seat announced")
    p5 = run.draw("tables")  # redraw into table slot 1
    s.verify(run.cmd(), p5)
    s.award(run.cmd(), p5, Prize(20_000, PrizeKind.PLUS_PLAY, "E12"))
    run.draw("slots")  # p6, slot 3
    run.draw("slots")  # p7, slot 4, drawn while p6 is pending
    run.now += timedelta(seconds=91)
    assert len(s.expire(run.now)) == 2  # both become no-shows by the claim timer
    p8 = run.draw("slots")  # slot 3, attempt 1
    s.verify(run.cmd(), p8)
    s.void(run.cmd(), p8, "ID does not match the card")
    run.draw_verified("slots")  # p9, slot 3, attempt 2
    run.draw("tables")  # p10, left pending: the forced close voids it
    s.close(run.cmd(), force=True)
    return s


@pytest.fixture(scope="module")
def session() -> DrawSession:
    return honest_session()


def as_json(records: list[Record]) -> Recs:
    """What an inspector reads: the records after a trip through JSON (a deep copy)."""
    out: Recs = json.loads(json.dumps([r.to_dict() for r in records]))
    return out


def drawn(recs: Recs, pick: int) -> dict[str, Any]:
    """The data of the pick.drawn record of a pick number."""
    return next(r["data"] for r in recs if r["type"] == "pick.drawn" and r["data"]["pick"] == pick)


def position(recs: Recs, type_: str) -> int:
    return next(i for i, r in enumerate(recs) if r["type"] == type_)


def picks_named(bad: list[Mismatch]) -> set[int | None]:
    return {m.pick for m in bad}


def assert_names_pick(bad: list[Mismatch], pick: int, words: str) -> None:
    """The first mismatch is at `pick` and some mismatch at `pick` says `words`."""
    assert bad, "tampering went unnoticed"
    assert bad[0].pick == pick, bad
    assert any(m.pick == pick and words in m.message for m in bad), bad


def redo_pick(d: dict[str, Any], seed: bytes = SEED, session_id: str = SESSION_ID) -> None:
    """Make a (tampered) pool self-consistent: digest, size, index and winner recomputed
    from the seed, so only checks other than the arithmetic can catch the change."""
    d["pool_digest"] = pool_digest(d["pool"])
    d["pool_size"] = len(d["pool"])
    d["index"], d["rejected_blocks"] = pick_index(
        seed, session_id, d["pick"], d["attempt"], d["pool_digest"], len(d["pool"])
    )
    d["card"] = d["pool"][d["index"]]


# ------------------------------------------------------------------ honest sessions


def test_the_honest_script_covers_every_record_type(session: DrawSession) -> None:
    """Guard for the fixture itself: the tampering tests rely on these paths existing."""
    types = [r.type for r in session.records]
    for t in ("pick.verified", "pick.awarded", "pick.no_show", "pick.voided", "session.closed"):
        assert t in types
    assert types.count("pick.drawn") == 10
    no_show_by = [r.data["by"] for r in session.records if r.type == "pick.no_show"]
    assert sorted(no_show_by) == ["claim_timer", "claim_timer", "staff"]
    reasons = [r.data["reason"] for r in session.records if r.type == "pick.voided"]
    assert reasons == ["wrong seat announced", "ID does not match the card", "session closed"]
    attempts = [
        (r.data["slot"], r.data["attempt"]) for r in session.records if r.type == "pick.drawn"
    ]
    assert (3, 2) in attempts  # a slot drawn three times


def test_honest_session_verifies(session: DrawSession) -> None:
    assert verify_session(session.records) == []


def test_honest_session_verifies_after_a_json_round_trip(session: DrawSession) -> None:
    assert verify_session(as_json(session.records)) == []


def test_honest_session_verifies_from_records_rebuilt_from_dicts(session: DrawSession) -> None:
    rebuilt = [Record.from_dict(d) for d in as_json(session.records)]
    assert [r.to_dict() for r in rebuilt] == as_json(session.records)
    assert verify_session(rebuilt) == []


@pytest.mark.parametrize("i", range(6))
def test_honest_sessions_verify_for_many_seeds(i: int) -> None:
    """Not one lucky seed: the same script verifies whatever the seed."""
    s = honest_session(hashlib.sha256(f"verify-seed-{i}".encode()).digest())
    assert verify_session(as_json(s.records)) == []


def test_verify_does_not_trust_or_mutate_its_input(session: DrawSession) -> None:
    recs = as_json(session.records)
    before = copy.deepcopy(recs)
    verify_session(recs)
    assert recs == before


# ----------------------------------------------------------------------- tampering


def test_altered_winner_card(session: DrawSession) -> None:
    recs = as_json(session.records)
    d = drawn(recs, 3)
    d["card"] = d["pool"][(d["index"] + 1) % len(d["pool"])]
    assert_names_pick(verify_session(recs), 3, "winner")


def test_winner_replaced_by_someone_outside_the_pool(session: DrawSession) -> None:
    recs = as_json(session.records)
    drawn(recs, 5)["card"] = "NOT-IN-POOL"
    assert_names_pick(verify_session(recs), 5, "winner")


def test_altered_index(session: DrawSession) -> None:
    recs = as_json(session.records)
    d = drawn(recs, 4)
    d["index"] = (d["index"] + 1) % d["pool_size"]
    bad = verify_session(recs)
    assert_names_pick(bad, 4, "index")
    assert picks_named(bad) == {4}


def test_altered_seed_in_close_record(session: DrawSession) -> None:
    """A different revealed seed breaks the commitment; the close record is named (the
    seed belongs to the session, not to one pick)."""
    recs = as_json(session.records)
    ci = position(recs, "session.closed")
    seed = bytearray(bytes.fromhex(recs[ci]["data"]["seed"]))
    seed[0] ^= 1
    recs[ci]["data"]["seed"] = seed.hex()
    bad = verify_session(recs)
    assert len(bad) == 1
    assert bad[0].position == ci
    assert bad[0].pick is None
    assert "commitment" in bad[0].message


@pytest.mark.parametrize("seed", ["", "zz", "00" * 31, None])
def test_malformed_revealed_seed(session: DrawSession, seed: str | None) -> None:
    recs = as_json(session.records)
    ci = position(recs, "session.closed")
    if seed is None:
        del recs[ci]["data"]["seed"]
    else:
        recs[ci]["data"]["seed"] = seed
    bad = verify_session(recs)
    assert [(m.position, m.pick) for m in bad] == [(ci, None)]


def test_altered_commitment_in_open_record(session: DrawSession) -> None:
    recs = as_json(session.records)
    oi = position(recs, "session.opened")
    recs[oi]["data"]["commitment"] = commitment(bytes(32))
    bad = verify_session(recs)
    assert len(bad) == 1
    assert bad[0].pick is None
    assert "commitment" in bad[0].message


def test_seed_and_commitment_both_replaced(session: DrawSession) -> None:
    """An operator who swaps seed and commitment together (after seeing the pools) passes
    the commitment check, but then no pick follows from the new seed: each is named."""
    recs = as_json(session.records)
    other = hashlib.sha256(b"chosen after the fact").digest()
    recs[position(recs, "session.opened")]["data"]["commitment"] = commitment(other)
    recs[position(recs, "session.closed")]["data"]["seed"] = other.hex()
    bad = verify_session(recs)
    # with 10 picks from pools of <= 8, a few may coincide by chance; most must not
    named = picks_named(bad)
    assert None not in named
    assert len(named) >= 5, bad


def test_pool_with_a_card_removed(session: DrawSession) -> None:
    recs = as_json(session.records)
    d = drawn(recs, 6)
    d["pool"].remove(next(c for c in d["pool"] if c != d["card"]))
    bad = verify_session(recs)
    assert_names_pick(bad, 6, "digest")
    assert any(m.pick == 6 and "pool size" in m.message for m in bad)


def test_pool_with_a_card_added(session: DrawSession) -> None:
    recs = as_json(session.records)
    d = drawn(recs, 7)
    d["pool"] = sorted([*d["pool"], "S99"])
    bad = verify_session(recs)
    assert_names_pick(bad, 7, "digest")
    assert any(m.pick == 7 and "pool size" in m.message for m in bad)


def test_pool_reordered(session: DrawSession) -> None:
    recs = as_json(session.records)
    d = drawn(recs, 1)
    d["pool"][0], d["pool"][1] = d["pool"][1], d["pool"][0]
    bad = verify_session(recs)
    assert_names_pick(bad, 1, "canonical")
    assert any(m.pick == 1 and "digest" in m.message for m in bad)


def test_pool_reordered_with_digest_recomputed(session: DrawSession) -> None:
    """Even a self-consistent reordered pool (digest, index, winner redone) is caught:
    the canonical order is part of the proof."""
    recs = as_json(session.records)
    d = drawn(recs, 2)
    d["pool"].reverse()
    redo_pick(d)
    assert_names_pick(verify_session(recs), 2, "canonical")


def test_altered_pool_digest(session: DrawSession) -> None:
    recs = as_json(session.records)
    drawn(recs, 8)["pool_digest"] = pool_digest(["S01"])
    bad = verify_session(recs)
    assert_names_pick(bad, 8, "digest")


def test_altered_pool_size(session: DrawSession) -> None:
    recs = as_json(session.records)
    drawn(recs, 9)["pool_size"] += 1
    assert_names_pick(verify_session(recs), 9, "pool size")


def _barred_card_case(session: DrawSession, barring: int, later: int) -> tuple[Recs, str]:
    recs = as_json(session.records)
    card = drawn(recs, barring)["card"]
    d = drawn(recs, later)
    assert card not in d["pool"]  # the honest session left them out
    d["pool"] = sorted([*d["pool"], card])
    redo_pick(d)
    return recs, card


@pytest.mark.parametrize(
    ("barring", "later", "why"),
    [
        (1, 2, "already won (verified, then awarded)"),
        (5, 10, "already won at tables"),
        (6, 7, "pending when the later pick was drawn"),
        (2, 3, "no-show, barred by the session's rules"),
        (4, 5, "voided, barred by default"),
        (8, 9, "verified then voided"),
    ],
)
def test_barred_player_inserted_into_a_later_pool(
    session: DrawSession, barring: int, later: int, why: str
) -> None:
    """Digest, size, index and winner are all recomputed for the doctored pool, so the
    barred-player check, and the pool the draw's `pick.requested` made durable (whose
    digest the chain holds), stand between the edit and a clean verification.  (If the
    recomputed winner differs, later pools may then hold the new winner too, so later
    picks can be named as well, but only ever for barred players.)"""
    recs, _card = _barred_card_case(session, barring, later)
    bad = verify_session(recs)
    assert bad, why
    di = next(
        i for i, r in enumerate(recs) if r["type"] == "pick.drawn" and r["data"]["pick"] == later
    )
    # first: the pool is not the one the request made durable; then, at the same record,
    # the barred player in it
    assert (bad[0].position, bad[0].pick) == (di, later), bad
    assert bad[0].message == "drawn from a pool other than the one requested", bad
    assert bad[1].position == di and bad[1].message == "barred player(s) in the pool: 1", bad
    allowed = ("barred player", "other than the one requested")
    assert all(any(a in m.message for a in allowed) for m in bad), bad


def test_unclosed_session_is_refused(session: DrawSession) -> None:
    recs = [r for r in as_json(session.records) if r["type"] != "session.closed"]
    bad = verify_session(recs)
    assert len(bad) == 1
    assert bad[0].pick is None
    assert "not closed" in bad[0].message


def test_open_session_is_refused_before_close() -> None:
    """The live session (seed still secret) cannot be verified, whatever it holds."""
    floor, ev = seated_floor()
    s = DrawSession(SESSION_ID, "raps", floor)
    s.open(command("o", ev.now), SEED, derivation=DERIVATION_V1)
    s.draw(command("d", ev.now), "slots")
    bad = verify_session(s.records)
    assert [(m.pick, "not closed" in m.message) for m in bad] == [(None, True)]


def test_quota_lowered_in_the_open_record(session: DrawSession) -> None:
    """With the slot quota edited down to 2, the third filled slot is named."""
    recs = as_json(session.records)
    recs[position(recs, "session.opened")]["data"]["quotas"]["slots"] = 2
    bad = verify_session(recs)
    # p1 awarded, p2 no-show, p3 verified (2 filled), p6 drawn -> third filled slot
    assert_names_pick(bad, 6, "quota")


def test_quota_exceeded_by_an_extra_pick() -> None:
    """A forged extra pick that is otherwise perfect (pool without barred players, digest,
    index, winner all from the revealed seed) is caught by the quota (and by the close's
    summary and the missing request)."""
    floor, ev = seated_floor()
    rules = SessionRules(quotas={PoolKind.SLOTS: 2, PoolKind.TABLES: 1})
    s = DrawSession(SESSION_ID, "raps", floor, rules)
    run = Script(s, ev.now)
    s.open(run.cmd(), SEED, derivation=DERIVATION_V1)
    for kind in ("slots", "slots", "tables"):
        run.draw_verified(kind)
    s.close(run.cmd())
    recs = as_json(s.records)
    assert verify_session(recs) == []
    last = drawn(recs, 2)
    forged = copy.deepcopy(last)
    forged.update(pick=4, slot=3, attempt=0)
    forged["pool"] = [c for c in SLOT_CARDS if c not in {drawn(recs, 1)["card"], last["card"]}]
    redo_pick(forged)
    ci = position(recs, "session.closed")
    at = datetime.fromisoformat(recs[ci - 1]["at"])  # its claim deadline as the rules give it
    forged["deadline"] = (at + timedelta(seconds=rules.claim_seconds)).isoformat()
    recs.insert(ci, {**recs[ci - 1], "type": "pick.drawn", "data": forged})
    bad = verify_session(recs)
    assert [(m.position, m.pick) for m in bad] == [(ci, 4), (ci, 4), (ci + 1, None), (ci + 1, None)]
    assert bad[0].message == "pick.drawn without a pick.requested before it", bad
    assert bad[1].message == "slots quota 2 exceeded", bad
    assert bad[2].message == "close says 3 picks, the records hold 4", bad
    assert bad[3].message.startswith("close's outcomes {'verified': 3}"), bad


def test_pick_numbers_must_run_in_order(session: DrawSession) -> None:
    recs = as_json(session.records)
    drawn(recs, 4)["pick"] = 5
    di = next(i for i, r in enumerate(recs) if r["type"] == "pick.drawn" and r["data"]["pick"] == 5)
    bad = verify_session(recs)
    # first, at that record: the draw is not the one requested (pick 4), no pick 5 was
    # requested, and its number skips 4
    assert [(m.position, m.pick) for m in bad[:3]] == [(di, 5)] * 3, bad
    assert bad[0].message.startswith(
        "pick.drawn names pick 5, kind tables, slot 1, attempt 0; the open request is pick 4"
    ), bad
    assert bad[1].message == "pick.drawn without a pick.requested before it", bad
    assert bad[2].message == "pick number 5, expected 4", bad


def test_record_from_another_session(session: DrawSession) -> None:
    recs = as_json(session.records)
    i = next(i for i, r in enumerate(recs) if r["type"] == "pick.verified")
    recs[i]["session_id"] = "another"
    assert any(m.position == i and "another session" in m.message for m in verify_session(recs))


def test_mismatch_names_record_and_pick() -> None:
    assert str(Mismatch(7, 3, "winner X")) == "record 7 (pick 3): winner X"
    assert str(Mismatch(7, None, "seed")) == "record 7: seed"


# ------------------------------------------------------------- failed re-checks


def stale_pool_session(
    seed: bytes, then: Callable[[DrawSession, Floor, Events, Script], None]
) -> DrawSession:
    """A floor whose incremental pool is honestly stale at the moment of a draw.

    Card STALE played its last game at t0; an event stamped t0 + 150 s (an uncarded game
    on another machine, e.g. a SMIB clock running ahead) moves the floor's clock past
    STALE's idle limit, but the draw's command is stamped t0 + 100 s, so `advance` does
    not fire STALE's idle timer: STALE is still in the pool while the fresh
    `Floor.check` calls it idle.  If the seed lands on STALE, the session records
    `pick.recheck_failed` and draws again from the pool without it.  That is the
    public-API route to a failed re-check; `then` continues the session."""
    floor = raps_floor()
    ev = Events()
    seated_slot_player(floor, ev, "FRESH", "M02")
    seated_slot_player(floor, ev, "STALE", "M01")
    t0 = ev.now
    floor.apply(ev.game("M02", wager=0, at=t0 + timedelta(seconds=140)))  # FRESH still plays
    floor.apply(ev.game("M10", wager=0, at=t0 + timedelta(seconds=150)))  # uncarded
    s = DrawSession(SESSION_ID, "raps", floor)
    run = Script(s, t0)
    s.open(run.cmd(0), seed, derivation=DERIVATION_V1)
    run.now = t0 + timedelta(seconds=95)
    then(s, floor, ev, run)
    return s


def _draw_once(s: DrawSession, floor: Floor, ev: Events, run: Script) -> None:
    run.draw_verified("slots")
    s.close(run.cmd())


def _seeds_with_a_recheck(
    then: Callable[[DrawSession, Floor, Events, Script], None], want: int
) -> list[DrawSession]:
    """Deterministically try seeds until `want` sessions hit the failed re-check."""
    found = []
    for i in range(200):
        s = stale_pool_session(hashlib.sha256(f"stale-{i}".encode()).digest(), then)
        if any(r.type == "pick.recheck_failed" for r in s.records):
            found.append(s)
            if len(found) == want:
                return found
    raise AssertionError("no seed hit the stale card")  # pragma: no cover


def test_failed_recheck_then_draw_verifies() -> None:
    """Re-check failure and the redraw from the reduced pool recompute from the seed."""
    for s in _seeds_with_a_recheck(_draw_once, want=4):
        types = [r.type for r in s.records]
        assert types[1:4] == ["pick.requested", "pick.recheck_failed", "pick.drawn"]
        assert s.records[1].data["pool_digest"] == pool_digest(["FRESH", "STALE"])
        fail = s.records[2].data
        assert (fail["card"], fail["reason"]) == ("STALE", "idle")
        assert fail["pool_digest"] == pool_digest(["FRESH", "STALE"])
        assert s.records[3].data["pool"] == ["FRESH"]
        assert verify_session(as_json(s.records)) == []


def test_failed_recheck_with_altered_card_is_named() -> None:
    """A re-check record naming a card the seed did not choose is caught."""
    caught = 0
    for s in _seeds_with_a_recheck(_draw_once, want=4):
        recs = as_json(s.records)
        recs[2]["data"]["card"] = "GHOST"  # seed picks from [FRESH, GHOST]
        full = ["FRESH", "GHOST"]
        seed = bytes.fromhex(recs[-1]["data"]["seed"])
        index, _ = pick_index(seed, SESSION_ID, 1, 0, pool_digest(full), 2)
        bad = verify_session(recs)
        if full[index] == "FRESH":  # the seed contradicts the record: must be named
            assert_names_pick(bad, 1, "re-check")
            caught += 1
    assert caught  # at least one seed exercised the check


def test_failed_recheck_naming_the_eventual_winner_is_refused() -> None:
    """CORE WEAKNESS (selector/verify.py, _check_pick): a `pick.recheck_failed` record
    altered to name the card that then won (STALE -> FRESH) verifies clean.  The record
    contradicts itself twice: the removed card is still in the final pool, and its
    `pool_digest` (SHA-256 of [FRESH, STALE]) is not the digest of the pool verify
    rebuilds ([FRESH]); verify compares neither, so the edit erases STALE from the proof."""
    s = _seeds_with_a_recheck(_draw_once, want=1)[0]
    recs = as_json(s.records)
    recs[2]["data"]["card"] = "FRESH"
    assert_names_pick(verify_session(recs), 1, "re-check")


def test_failed_recheck_records_by_hand() -> None:
    """Verify's re-check arithmetic on hand-made records: three cards, the seed's first
    choice is declared ineligible, the pick is redrawn from the other two."""
    seed = hashlib.sha256(b"hand-made").digest()
    full = ["A", "B", "C"]
    first, _ = pick_index(seed, "H", 1, 0, pool_digest(full), 3)
    rest = [c for c in full if c != full[first]]
    index, _ = pick_index(seed, "H", 1, 0, pool_digest(rest), 2)
    at = datetime(2026, 4, 25, 18, 0).isoformat()
    actor = {"user": "ann", "role": "marketing"}

    def rec(type_: str, **data: Any) -> dict[str, Any]:
        return {"type": type_, "session_id": "H", "at": at, "actor": actor, "data": data}

    recs = [
        rec("session.opened", commitment=commitment(seed), quotas={"slots": 1}),
        rec(
            "pick.requested",
            pick=1,
            kind="slots",
            slot=1,
            attempt=0,
            pool_size=3,
            pool_digest=pool_digest(full),
        ),
        rec(
            "pick.recheck_failed",
            pick=1,
            card=full[first],
            reason="idle",
            pool_digest=pool_digest(full),
        ),
        rec(
            "pick.drawn",
            pick=1,
            kind="slots",
            slot=1,
            attempt=0,
            card=rest[index],
            pool=rest,
            pool_size=2,
            pool_digest=pool_digest(rest),
            index=index,
        ),
        rec("session.closed", seed=seed.hex(), picks=1, outcomes={"pending": 1}),
    ]
    assert verify_session(recs) == []

    def seed_choice(pool: list[str]) -> str:
        return pool[pick_index(seed, "H", 1, 0, pool_digest(pool), len(pool))[0]]

    # a ghost card the seed would not have chosen from the pool it claims to come from
    ghost = next(g for g in "DEFGH" if seed_choice(sorted([*rest, g])) != g)
    wrong = copy.deepcopy(recs)
    wrong[2]["data"]["card"] = ghost
    assert_names_pick(verify_session(wrong), 1, "re-check")


def _no_eligible_then_draw(s: DrawSession, floor: Floor, ev: Events, run: Script) -> None:
    """STALE is the only card in the pool; its re-check fails and nothing is left
    (`pick.no_eligible`, pick number 1 not used).  A new player qualifies and the
    next draw is pick 1 again, from an honest pool."""
    floor.apply(ev.card_out("M02", "FRESH", at=run.now))
    out = s.draw(run.cmd(), "slots")
    assert out.no_eligible
    ev.now = run.now + timedelta(seconds=120)
    seated_slot_player(floor, ev, "NEW", "M03")
    run.now = ev.now
    run.draw_verified("slots")
    s.close(run.cmd())


def test_recheck_failures_of_a_no_eligible_draw_do_not_leak_into_the_next_pick() -> None:
    """CORE BUG (selector/verify.py): `failed` (re-check failures per pick number) is not
    cleared on `pick.no_eligible`.  The session reuses the pick number for its next draw,
    so verify replays the earlier attempt's failures against the new pool and reports
    an honest session as tampered ("failed re-check named STALE, seed gives NEW")."""
    sessions = _seeds_with_a_recheck(_no_eligible_then_draw, want=8)
    for s in sessions:
        types = [r.type for r in s.records]
        assert types[1:6] == [
            "pick.requested",
            "pick.recheck_failed",
            "pick.no_eligible",
            "pick.requested",
            "pick.drawn",
        ]
    failures = {
        s.records[0].data["commitment"][:12]: [str(m) for m in verify_session(as_json(s.records))]
        for s in sessions
    }
    assert failures == {k: [] for k in failures}

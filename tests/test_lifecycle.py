"""selector.lifecycle: a session's life as a state machine, checked without its seed.

Each test takes the honest session of tests/test_verify.py (every record type, redraws,
claim-timer no-shows, a forced close), breaks one rule the way an insider editing the
journal would, and checks that the first mismatch is the broken step, at its record,
with its pick, in words that say what is wrong.  `verify_session` (which runs the
lifecycle too, in record order) must name the same first mismatch for a closed session.
"""

from __future__ import annotations

import copy
from datetime import datetime, timedelta
from typing import Any

import pytest

from selector.lifecycle import Mismatch, verify_lifecycle
from selector.session import DrawSession
from selector.verify import verify_session
from tests.test_verify import Recs, as_json, honest_session


@pytest.fixture(scope="module")
def honest() -> DrawSession:
    return honest_session()


@pytest.fixture
def recs(honest: DrawSession) -> Recs:
    return as_json(honest.records)


def at(recs: Recs, type_: str, pick: int | None = None, nth: int = 0) -> int:
    """The position of the nth record of a type (of one pick)."""
    found = [
        i
        for i, r in enumerate(recs)
        if r["type"] == type_ and (pick is None or r["data"].get("pick") == pick)
    ]
    return found[nth]


def like(recs: Recs, type_: str, pick: int, **data: Any) -> dict[str, Any]:
    """A copy of the pick's record of a type, with data changed."""
    r = copy.deepcopy(recs[at(recs, type_, pick)])
    r["data"].update(data)
    return r


def first(bad: list[Mismatch], position: int, pick: int | None, words: str) -> None:
    assert bad, "the broken step went unnoticed"
    assert (bad[0].position, bad[0].pick) == (position, pick), bad
    assert words in bad[0].message, bad


def both(recs: Recs, position: int, pick: int | None, words: str) -> list[Mismatch]:
    """The lifecycle and the whole verification name the same first mismatch."""
    bad = verify_lifecycle(recs)
    first(bad, position, pick, words)
    first(verify_session(recs), position, pick, words)
    return bad


def test_the_honest_session_holds(recs: Recs) -> None:
    assert verify_lifecycle(recs) == []


# ------------------------------------------------------------- a pick's steps


@pytest.mark.parametrize(
    ("pick", "step", "after", "state"),
    [
        (1, "pick.awarded", "pick.drawn", "pending"),  # awarded without being verified
        (2, "pick.verified", "pick.no_show", "no_show"),  # verified after its no-show
        (3, "pick.no_show", "pick.verified", "verified"),  # a no-show once verified
        (1, "pick.voided", "pick.awarded", "awarded"),  # an award taken back
        (3, "pick.verified", "pick.verified", "verified"),  # verified twice
        (4, "pick.awarded", "pick.voided", "void"),  # a void turned into an award
        (2, "pick.no_show", "pick.no_show", "no_show"),  # two no-shows
    ],
)
def test_every_illegal_step_is_named(
    recs: Recs, pick: int, step: str, after: str, state: str
) -> None:
    """A step inserted right after the record that left the pick in `state`."""
    source = next(r for r in recs if r["type"] == step)  # any record of that type
    r = copy.deepcopy(source)
    r["data"].update(pick=pick, kind=recs[at(recs, "pick.drawn", pick)]["data"]["kind"])
    r["actor"] = {"user": "ann", "role": "marketing"}
    r["data"]["by"] = "staff" if step == "pick.no_show" else r["data"].get("by")
    r["at"] = recs[at(recs, after, pick)]["at"]
    where = at(recs, after, pick) + 1
    recs.insert(where, r)
    both(recs, where, pick, f"pick {pick} is {state}: {step} is no legal step from it")


def test_a_pick_drawn_twice(recs: Recs) -> None:
    """Pick 3's request and draw written again after it: the second request is not for
    the next pick number, and the draw is named as a second one."""
    i = at(recs, "pick.drawn", 3) + 1
    recs[i:i] = [like(recs, "pick.requested", 3), like(recs, "pick.drawn", 3)]
    bad = both(recs, i, 3, "pick number 3 requested, expected 4")
    assert any(m.position == i + 1 and "pick 3 drawn twice" in m.message for m in bad), bad


def test_a_pick_drawn_twice_in_a_journal_without_requests(recs: Recs) -> None:
    """Journals written before requests existed hold draws to the numbering directly."""
    old = [r for r in recs if r["type"] != "pick.requested"]
    assert verify_lifecycle(old) == []
    i = next(j for j, r in enumerate(old) if r["type"] == "pick.drawn" and r["data"]["pick"] == 3)
    old.insert(i + 1, copy.deepcopy(old[i]))
    bad = verify_lifecycle(old)
    first(bad, i + 1, 3, "pick number 3 drawn, expected 4")
    assert any("pick 3 drawn twice" in m.message for m in bad), bad


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("picks", 9, "close says 9 picks, the records hold 10"),
        ("outcomes", {"awarded": 2, "verified": 3, "no_show": 3, "void": 2}, "close's outcomes"),
        ("outcomes", {}, "close's outcomes"),
    ],
)
def test_a_tampered_close_summary(recs: Recs, field: str, value: Any, words: str) -> None:
    ci = at(recs, "session.closed")
    recs[ci]["data"][field] = value
    bad = both(recs, ci, None, words)
    assert len(bad) == 1, bad


def test_records_after_the_close_before_the_open_and_a_second_open(recs: Recs) -> None:
    after = copy.deepcopy(recs[at(recs, "pick.voided", 4)])
    recs.append(after)
    first(verify_lifecycle(recs), len(recs) - 1, 4, "pick.voided after the session's close")
    early = [recs[at(recs, "pick.requested", 1)], *recs[:-1]]
    first(verify_lifecycle(early), 0, 1, "pick.requested before the session was opened")
    twice = [*recs[:1], copy.deepcopy(recs[0]), *recs[1:-1]]
    first(verify_lifecycle(twice), 1, None, "a second session.opened")


# ------------------------------------------------------- numbering of draws


def renumber(recs: Recs, pick: int, **data: Any) -> tuple[int, int]:
    """Change fields of a pick's request and draw alike (the pair stays consistent)."""
    ri, di = at(recs, "pick.requested", pick), at(recs, "pick.drawn", pick)
    recs[ri]["data"].update(data)
    recs[di]["data"].update(data)
    return ri, di


def test_a_draw_not_into_the_lowest_free_slot(recs: Recs) -> None:
    """Pick 6 said to fill slot 4 while slot 3 was free."""
    ri, _ = renumber(recs, 6, slot=4)
    bad = both(recs, ri, 6, "slots slot 4 requested, but the lowest free is 3")
    # pick 7 then asks for slot 4 again, which pick 6 holds: named too
    assert any(m.pick == 7 and "lowest free is 3" in m.message for m in bad), bad


def test_a_draw_into_a_full_quota(recs: Recs) -> None:
    """Pick 10 (tables) said to be into table slot 3 of a quota of 4... of 2."""
    oi = at(recs, "session.opened")
    recs[oi]["data"]["quotas"]["tables"] = 1
    ri = at(recs, "pick.requested", 10)
    bad = verify_lifecycle(recs)
    first(bad, ri, 10, "tables slot 2 requested, but all 1 are filled")


@pytest.mark.parametrize(("pick", "attempt", "earlier"), [(8, 0, 1), (9, 1, 2), (6, 1, 0)])
def test_an_attempt_other_than_the_draws_before_it(
    recs: Recs, pick: int, attempt: int, earlier: int
) -> None:
    ri, _ = renumber(recs, pick, attempt=attempt)
    slot = recs[ri]["data"]["slot"]
    both(
        recs,
        ri,
        pick,
        f"attempt {attempt} requested for slots slot {slot}, which was drawn {earlier} time(s)",
    )


# -------------------------------------------------------------- the requests


def test_a_draw_without_its_request(recs: Recs) -> None:
    ri = at(recs, "pick.requested", 5)
    del recs[ri]
    both(recs, ri, 5, "pick.drawn without a pick.requested before it")


def test_a_draw_that_is_not_the_one_requested(recs: Recs) -> None:
    di = at(recs, "pick.drawn", 6)
    recs[di]["data"]["attempt"] = 1
    both(recs, di, 6, "pick.drawn names pick 6, kind slots, slot 3, attempt 1; the open request")


def test_two_requests_open_at_once(recs: Recs) -> None:
    ri = at(recs, "pick.requested", 6)
    recs.insert(ri + 1, like(recs, "pick.requested", 6))
    both(recs, ri + 1, 6, "a second request while pick 6's is open")


def test_an_abandoned_request_that_was_not_open(recs: Recs) -> None:
    di = at(recs, "pick.drawn", 6)
    gone = like(recs, "pick.requested", 6)
    gone["type"] = "pick.abandoned"
    recs.insert(di + 1, gone)
    first(verify_lifecycle(recs), di + 1, 6, "pick.abandoned without a pick.requested before it")


def test_an_abandoned_request_and_a_no_eligible_end_it(recs: Recs) -> None:
    """The honest other endings: abandoned for a draw of the other kind, or nothing left
    (the pick number not used up); a no_eligible that names another attempt is named."""
    ri = at(recs, "pick.requested", 6)
    gone = like(recs, "pick.requested", 6)
    gone["type"] = "pick.abandoned"
    empty = like(recs, "pick.requested", 6)
    empty["type"] = "pick.no_eligible"
    recs[ri:ri] = [like(recs, "pick.requested", 6), gone, like(recs, "pick.requested", 6), empty]
    assert verify_lifecycle(recs) == []
    recs[ri + 3]["data"]["attempt"] = 5
    first(verify_lifecycle(recs), ri + 3, 6, "pick.no_eligible names pick 6, kind slots")


def test_a_failed_recheck_outside_its_request(recs: Recs) -> None:
    di = at(recs, "pick.drawn", 6)
    failed = {**copy.deepcopy(recs[di]), "type": "pick.recheck_failed"}
    recs.insert(di + 1, failed)
    both(recs, di + 1, 6, "a failed re-check of pick 6 outside its request")


# ---------------------------------------------------------------- no-shows


def test_a_claim_timer_no_show_before_the_deadline(recs: Recs) -> None:
    ni = at(recs, "pick.no_show", 6)
    deadline = datetime.fromisoformat(recs[at(recs, "pick.drawn", 6)]["data"]["deadline"])
    recs[ni]["at"] = (deadline - timedelta(seconds=1)).isoformat()
    both(recs, ni, 6, f"a claim-timer no-show at {recs[ni]['at']}, before {deadline.isoformat()}")


def test_a_claim_timer_no_show_made_by_a_person(recs: Recs) -> None:
    ni = at(recs, "pick.no_show", 7)
    recs[ni]["actor"] = {"user": "ann", "role": "marketing"}
    both(recs, ni, 7, "a claim-timer no-show made by ann (marketing)")


@pytest.mark.parametrize(
    ("actor", "by", "words"),
    [
        ({"user": "system", "role": "timer"}, "staff", "a staff no-show made by the system"),
        ({"user": "ann", "role": "marketing"}, "walked", "a no-show by 'walked'"),
    ],
)
def test_a_staff_no_show_must_be_a_person_s(
    recs: Recs, actor: dict[str, str], by: str, words: str
) -> None:
    ni = at(recs, "pick.no_show", 2)
    recs[ni]["actor"] = actor
    recs[ni]["data"]["by"] = by
    both(recs, ni, 2, words)


def test_a_malformed_record_is_named_not_raised(recs: Recs) -> None:
    ri = at(recs, "pick.requested", 3)
    del recs[ri]["data"]["slot"]
    first(verify_lifecycle(recs), ri, 3, "malformed 'pick.requested' record")

"""Issue 15 item 6 and issue 18's "Add" items, in the core: a winner's claim on a real floor.

Seed 003: "the winners will be located by the marketing team, accompanied by security.
Should the winner not be at the machine, they will be given 90 seconds to present
themselves."  A pending pick goes drawn -> en route (security acknowledges, officer
named) -> absent (the winner is not there); the countdown starts at the draw or at
absent (`claim_starts`); a winner not reached within `max_en_route_seconds` escalates
once; an admin extends a running countdown once, with a reason.  Every step is
journaled, restored after a restart and checked by `raps verify` from the records.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from selector.anomalies import session_report
from selector.claims import ClaimPhase, ClaimStart
from selector.promotion import SessionRules
from selector.records import Actor, Record
from selector.session import DrawSession, PickState, SessionError
from selector.verify import verify_lifecycle, verify_session
from tests.test_session_rules import (
    SECURITY,
    SLOTS,
    Handheld,
    fill_floor,
    open_session,
    session_floor,
    types,
)

ADMIN = Actor("ada", "admin")
ABSENT = SessionRules(claim_starts=ClaimStart.ABSENT, max_en_route_seconds=120)
SEED = bytes(range(32))


def absent_session(rules: SessionRules = ABSENT) -> tuple[DrawSession, Handheld]:
    floor, ev = session_floor()
    fill_floor(floor, ev, slots=6, tables=0)
    return open_session(floor, rules, seed=SEED)


def dicts(s: DrawSession) -> list[dict[str, Any]]:
    return [r.to_dict() for r in s.records]


def closed(s: DrawSession, hh: Handheld) -> list[dict[str, Any]]:
    s.close(hh.cmd(), force=True)
    return dicts(s)


# ------------------------------------------------------------------ the steps


def test_drawn_en_route_absent_then_the_countdown_runs_from_absent() -> None:
    s, hh = absent_session()
    opened = s.records[0].data
    assert (opened["claim_starts"], opened["max_en_route_seconds"]) == ("absent", 120)
    pick = s.draw(hh.cmd(), SLOTS).pick
    assert pick is not None and pick.deadline is None  # no countdown on a large floor walk
    assert s.records[-1].data["deadline"] is None
    # the walk takes five minutes: no no-show, however long (the escalation is separate)
    assert "pick.no_show" not in types(s.expire(pick.drawn_at + timedelta(minutes=5)))
    out = s.en_route(hh.cmd(10, SECURITY), pick.number, "  Sipho   Dlamini ")
    rec = out.records[-1]
    assert (rec.type, rec.actor, rec.data["officer"]) == (
        "pick.en_route",
        SECURITY,
        "Sipho Dlamini",
    )
    assert pick.claim.phase == ClaimPhase.EN_ROUTE and pick.claim.officer == "Sipho Dlamini"
    found = s.absent(hh.cmd(40), pick.number)
    assert found.records[-1].type == "pick.absent"
    assert pick.deadline == hh.now + timedelta(seconds=90)
    assert found.records[-1].data["deadline"] == pick.deadline.isoformat()
    assert s.expire(pick.deadline - timedelta(seconds=0.001)) == []
    [rec] = s.expire(pick.deadline)
    assert (rec.type, rec.at, rec.data["by"]) == ("pick.no_show", pick.deadline, "claim_timer")
    assert verify_session(closed(s, hh)) == []


def test_at_the_draw_the_countdown_runs_from_the_draw_and_absent_keeps_it() -> None:
    """The default (and every session before this change): 90 s from the draw."""
    floor, ev = session_floor()
    fill_floor(floor, ev, slots=3, tables=0)
    s, hh = open_session(floor, seed=SEED)
    assert s.records[0].data["claim_starts"] == "draw"
    pick = s.draw(hh.cmd(), SLOTS).pick
    assert pick is not None and pick.deadline == pick.drawn_at + timedelta(seconds=90)
    s.en_route(hh.cmd(5, SECURITY), pick.number, "Sipho")
    s.absent(hh.cmd(20), pick.number)
    assert pick.deadline == pick.drawn_at + timedelta(seconds=90)
    assert s.records[-1].data["deadline"] == pick.deadline.isoformat()
    s.verify(hh.cmd(10), pick.number)  # present after all
    assert pick.state == PickState.VERIFIED
    assert verify_session(closed(s, hh)) == []


def test_steps_out_of_order_are_refused() -> None:
    s, hh = absent_session()
    pick = s.draw(hh.cmd(), SLOTS).pick
    assert pick is not None
    s.en_route(hh.cmd(1, SECURITY), pick.number, "Sipho")
    with pytest.raises(SessionError, match="Sipho is already on the way"):
        s.en_route(hh.cmd(1, SECURITY), pick.number, "Sipho")
    s.en_route(hh.cmd(1, SECURITY), pick.number, "Lerato")  # another officer takes over
    assert s.records[-1].data["previous_officer"] == "Sipho"
    with pytest.raises(SessionError, match="which officer"):
        s.en_route(hh.cmd(1, SECURITY), pick.number, "   ")
    s.absent(hh.cmd(1), pick.number)
    with pytest.raises(SessionError, match="already found absent"):
        s.absent(hh.cmd(1), pick.number)
    with pytest.raises(SessionError, match="already found absent"):
        s.en_route(hh.cmd(1, SECURITY), pick.number, "Thabo")
    s.verify(hh.cmd(1), pick.number)
    for step in (
        lambda: s.absent(hh.cmd(1), pick.number),
        lambda: s.en_route(hh.cmd(1, SECURITY), pick.number, "Thabo"),
        lambda: s.extend(hh.cmd(1, ADMIN), pick.number, 30, "lift broken"),
    ):
        with pytest.raises(SessionError, match="verified: no"):
            step()


def test_every_step_is_retry_safe_and_a_reused_id_conflicts() -> None:
    s, hh = absent_session()
    pick = s.draw(hh.cmd(), SLOTS).pick
    assert pick is not None
    go = hh.cmd(5, SECURITY)
    first = s.en_route(go, pick.number, "Sipho")
    again = s.en_route(go, pick.number, " Sipho ")
    assert again.replayed and again.records == first.records
    with pytest.raises(SessionError, match="already used"):
        s.en_route(go, pick.number, "Lerato")
    there = hh.cmd(30)
    assert s.absent(there, pick.number).records[-1].type == "pick.absent"
    assert s.absent(there, pick.number).replayed
    more = hh.cmd(10, ADMIN)
    s.extend(more, pick.number, 60, "winner on the phone, coming down")
    assert s.extend(more, pick.number, 60, "winner on the phone, coming down").replayed
    assert types(s.records).count("pick.extended") == 1


# ----------------------------------------------------------------- escalation


def test_a_winner_nobody_acknowledges_escalates_once_at_the_limit() -> None:
    s, hh = absent_session()
    pick = s.draw(hh.cmd(), SLOTS).pick
    assert pick is not None
    assert s.expire(pick.drawn_at + timedelta(seconds=119)) == []
    assert s.timer_due(pick.drawn_at + timedelta(seconds=120))
    [rec] = s.expire(pick.drawn_at + timedelta(seconds=125))
    assert rec.type == "pick.escalated" and rec.at == pick.drawn_at + timedelta(seconds=120)
    assert rec.actor == Actor("system", "escalation")
    assert (rec.data["reason"], rec.data["limit_seconds"]) == ("not_acknowledged", 120)
    assert s.expire(pick.drawn_at + timedelta(hours=1)) == []  # once
    assert not s.timer_due(pick.drawn_at + timedelta(hours=1))
    assert pick.state == PickState.PENDING


def test_en_route_too_long_escalates_from_the_acknowledgement() -> None:
    s, hh = absent_session()
    pick = s.draw(hh.cmd(), SLOTS).pick
    assert pick is not None
    s.en_route(hh.cmd(100, SECURITY), pick.number, "Sipho")
    assert s.expire(pick.drawn_at + timedelta(seconds=219)) == []
    [rec] = s.expire(pick.drawn_at + timedelta(seconds=220))
    assert (rec.data["reason"], rec.data["officer"]) == ("en_route_too_long", "Sipho")
    assert rec.data["since"] == (pick.drawn_at + timedelta(seconds=100)).isoformat()


def test_a_winner_found_absent_in_time_never_escalates() -> None:
    s, hh = absent_session()
    pick = s.draw(hh.cmd(), SLOTS).pick
    assert pick is not None
    s.absent(hh.cmd(60), pick.number)
    recs = s.expire(pick.drawn_at + timedelta(hours=1))
    assert types(recs) == ["pick.no_show"]


def test_the_timer_runs_its_steps_in_time_order_and_a_no_show_ends_escalation() -> None:
    """One late tick: pick 1's no-show at 90 s comes before pick 2's escalation at
    120 s, and pick 1 never escalates (its no-show came first)."""
    floor, ev = session_floor()
    fill_floor(floor, ev, slots=3, tables=0)
    rules = SessionRules(claim_seconds=90, max_en_route_seconds=100)
    s, hh = open_session(floor, rules, seed=SEED)
    one = s.draw(hh.cmd(), SLOTS).pick
    two = s.draw(hh.cmd(20), SLOTS).pick
    assert one is not None and two is not None
    s.extend(hh.cmd(1, ADMIN), two.number, 300, "winner in the restroom, on the way")
    recs = s.expire(one.drawn_at + timedelta(seconds=200))
    assert [(r.type, r.data["pick"]) for r in recs] == [
        ("pick.no_show", one.number),
        ("pick.escalated", two.number),
    ]
    assert [r.at for r in recs] == sorted(r.at for r in recs)
    # nothing but the session being open still (an anomaly at the journal's end)
    assert [a for a in session_report(dicts(s)).anomalies if "still open" not in a] == []


def test_no_limit_no_escalation() -> None:
    s, hh = absent_session(SessionRules(claim_starts="absent", max_en_route_seconds=None))
    pick = s.draw(hh.cmd(), SLOTS).pick
    assert pick is not None
    assert s.expire(pick.drawn_at + timedelta(hours=3)) == []
    assert not s.timer_due(pick.drawn_at + timedelta(hours=3))


# ------------------------------------------------------------------ extension


def test_an_admin_extends_a_running_countdown_once_and_the_timer_honours_it() -> None:
    s, hh = absent_session()
    pick = s.draw(hh.cmd(), SLOTS).pick
    assert pick is not None
    with pytest.raises(SessionError, match="has not started"):
        s.extend(hh.cmd(1, ADMIN), pick.number, 60, "lift out of order")
    s.absent(hh.cmd(30), pick.number)
    old = pick.deadline
    assert old is not None
    for seconds, reason, why in ((60, "  ", "needs a reason"), (0, "x y", "above 0"),
                                 (601, "x y", "at most 600")):  # fmt: skip
        with pytest.raises(SessionError, match=why):
            s.extend(hh.cmd(1, ADMIN), pick.number, seconds, reason)
    out = s.extend(hh.cmd(10, ADMIN), pick.number, 60, "winner on the phone,  coming down")
    rec = out.records[-1]
    assert rec.type == "pick.extended" and rec.actor == ADMIN
    assert rec.data["reason"] == "winner on the phone, coming down"
    assert rec.data["previous_deadline"] == old.isoformat()
    assert pick.deadline == old + timedelta(seconds=60)
    assert rec.data["deadline"] == pick.deadline.isoformat()
    with pytest.raises(SessionError, match="already extended once"):
        s.extend(hh.cmd(1, ADMIN), pick.number, 30, "again")
    assert s.expire(old + timedelta(seconds=30)) == []  # the old deadline is gone
    with pytest.raises(SessionError, match="no_show"):
        s.verify(hh.cmd(200), pick.number)  # the new one passed: the timer ran first
    assert s.records[-1].at == old + timedelta(seconds=60)
    records = closed(s, hh)
    assert verify_session(records) == []
    notes = session_report(records).notes
    assert any(
        "extended by 60 s" in n and "ada (admin)" in n and "winner on the phone" in n for n in notes
    ), notes


# ------------------------------------------------------------- restore, replay


def test_a_restart_keeps_every_claim_step_and_answers_retries() -> None:
    floor, ev = session_floor()
    fill_floor(floor, ev, slots=6, tables=0)
    s, hh = open_session(floor, ABSENT, seed=SEED)
    one = s.draw(hh.cmd(), SLOTS).pick
    two = s.draw(hh.cmd(1), SLOTS).pick
    assert one is not None and two is not None
    go = hh.cmd(5, SECURITY)
    s.en_route(go, one.number, "Sipho")
    s.absent(hh.cmd(5), two.number)
    s.extend(hh.cmd(5, ADMIN), two.number, 45, "winner coming from the car park")
    s.expire(one.drawn_at + timedelta(seconds=130))  # pick 1 escalates at 125 s
    # the schedule now says "draw": what the session opened with stands (the journal)
    again = DrawSession.restore("S1", "raps", floor, SessionRules(), list(s.records), SEED)
    assert again.rules.claim_starts == ClaimStart.ABSENT
    assert again.rules.max_en_route_seconds == 120
    for a, b in zip(s.picks, again.picks, strict=True):
        assert (a.deadline, a.claim) == (b.deadline, b.claim)
    assert again.picks[0].claim.escalated_at is not None
    assert again.en_route(go, one.number, "Sipho").replayed
    assert again.picks[1].claim.extended_by == "ada"
    assert verify_lifecycle(again.records) == []


def test_a_journal_from_before_the_claim_steps_restores_as_draw_mode() -> None:
    floor, ev = session_floor()
    fill_floor(floor, ev, slots=3, tables=0)
    s, hh = open_session(floor, seed=SEED)
    s.draw(hh.cmd(), SLOTS)
    old = []
    for r in s.records:
        d = {k: v for k, v in r.data.items() if k not in ("claim_starts", "max_en_route_seconds")}
        old.append(Record(r.type, r.session_id, r.at, r.actor, d))
    rules = SessionRules(claim_starts="absent", max_en_route_seconds=5)
    again = DrawSession.restore("S1", "raps", floor, rules, old, SEED)
    assert again.rules.claim_starts == ClaimStart.DRAW
    assert again.rules.max_en_route_seconds is None  # it opened without escalation
    assert again.picks[0].deadline == again.picks[0].drawn_at + timedelta(seconds=90)


# -------------------------------------------------- verify: what a forger leaves


def tampered(records: list[dict[str, Any]], type_: str, n: int = 0, **data: Any) -> list[Any]:
    """The records with the n-th `type_` record's data (and "at") changed."""
    out = [dict(r, data=dict(r["data"])) for r in records]
    found = [r for r in out if r["type"] == type_][n]
    if "at" in data:
        found["at"] = data.pop("at")
    found["data"].update(data)
    return out


def story() -> tuple[DrawSession, list[dict[str, Any]]]:
    """Pick 1 escalates and is found absent, then extended; the timer ends it; pick 2 is
    verified from en route."""
    s, hh = absent_session()
    one = s.draw(hh.cmd(), SLOTS).pick
    assert one is not None
    s.expire(hh.now + timedelta(seconds=125))
    s.absent(hh.cmd(130), one.number)
    s.extend(hh.cmd(10, ADMIN), one.number, 30, "winner paged, on the way")
    s.expire(hh.now + timedelta(seconds=200))
    two = s.draw(hh.cmd(200), SLOTS).pick
    assert two is not None
    s.en_route(hh.cmd(5, SECURITY), two.number, "Sipho")
    s.verify(hh.cmd(60), two.number)
    return s, closed(s, hh)


def test_the_honest_story_verifies() -> None:
    _, records = story()
    assert [r["type"] for r in records if r["type"].startswith("pick.") and "pick" in r["data"]]
    assert verify_session(records) == []
    assert session_report(records).anomalies == []


@pytest.mark.parametrize(
    ("type_", "change", "message"),
    [
        ("pick.no_show", {"at": "2026-04-25T18:06:00+02:00"}, "claim-timer no-show at"),
        ("pick.escalated", {"at": "2026-04-25T18:05:30+02:00"}, "before its limit"),
        ("pick.absent", {"deadline": "2026-04-25T18:30:00+02:00"}, "absent with deadline"),
        ("pick.extended", {"deadline": "2026-04-25T18:30:00+02:00"}, "previous deadline +"),
        ("pick.drawn", {"deadline": "2026-04-25T18:30:00+02:00"}, "drawn with deadline"),
    ],
)
def test_a_step_off_its_derived_time_is_a_mismatch(
    type_: str, change: dict[str, Any], message: str
) -> None:
    _, records = story()
    bad = verify_session(tampered(records, type_, **change))
    assert any(message in str(m) for m in bad), bad


def test_steps_out_of_order_in_a_journal_are_mismatches() -> None:
    _, records = story()
    ext = next(r for r in records if r["type"] == "pick.extended")
    at = records.index(ext) + 1
    twice = [*records[:at], ext, *records[at:]]  # a second extension of pick 1
    assert any("extended a second time" in str(m) for m in verify_lifecycle(twice))
    late = [*records[:-1], ext, records[-1]]  # one after its no-show
    assert any("no longer pending" in str(m) for m in verify_lifecycle(late))
    absent = next(r for r in records if r["type"] == "pick.absent")
    route = dict(absent, type="pick.en_route", data={**absent["data"], "officer": "X"})
    after = records.index(absent) + 1
    late = [*records[:after], route, *records[after:]]
    assert any(
        "en route after the winner was found absent" in str(m) for m in verify_lifecycle(late)
    )
    # a claim-timer no-show while the countdown waits for "absent"
    s, hh = absent_session()
    pick = s.draw(hh.cmd(), SLOTS).pick
    assert pick is not None
    forged = [
        *dicts(s),
        Record(
            "pick.no_show",
            "S1",
            hh.now + timedelta(seconds=90),
            Actor.system(),
            {
                "pick": pick.number,
                "kind": "slots",
                "slot": 1,
                "card": pick.card,
                "by": "claim_timer",
            },
        ).to_dict(),
    ]
    assert any("before the countdown started" in str(m) for m in verify_lifecycle(forged))


def test_a_staff_no_show_before_the_countdown_ran_out_is_an_anomaly() -> None:
    s, hh = absent_session()
    one = s.draw(hh.cmd(), SLOTS).pick
    two = s.draw(hh.cmd(1), SLOTS).pick
    assert one is not None and two is not None
    s.no_show(hh.cmd(30), one.number)  # nobody even found them absent
    s.absent(hh.cmd(1), two.number)
    s.extend(hh.cmd(1, ADMIN), two.number, 60, "winner paged")
    s.no_show(hh.cmd(100), two.number)  # after the 90 s, before the extended deadline
    report = session_report(closed(s, hh))
    assert any("pick 1" in a and "had not started" in a for a in report.anomalies), report
    assert any("pick 2" in a and "(49 s left)" in a for a in report.anomalies), report


def test_the_claim_mode_changes_no_winner() -> None:
    """The claim steps touch no derivation: the same seed and floor give the same
    winners whichever moment the countdown starts."""
    winners = []
    for rules in (SessionRules(), ABSENT):
        floor, ev = session_floor()
        fill_floor(floor, ev, slots=6, tables=0)
        s, hh = open_session(floor, rules, seed=SEED)
        winners.append([s.draw(hh.cmd(1), SLOTS).pick.card for _ in range(3)])  # type: ignore[union-attr]
    assert winners[0] == winners[1]


# ------------------------------------------- what the inspector's check enforces


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"seconds": 100_000.0}, "an extension of 100000 s"),
        ({"reason": "  "}, "without a reason"),
        ({"reason": None}, "without a reason"),
        ({"actor": {"user": "mo", "role": "marketing"}}, "extended by 'marketing'"),
    ],
)
def test_an_extension_the_rules_forbid_fails_verify(change: dict[str, Any], message: str) -> None:
    """The daemon refuses these; a journal edited to hold one must not verify either (and
    must not crash the restore that runs the same lifecycle check)."""
    _, records = story()
    forged = [dict(r) for r in records]
    ext = next(r for r in forged if r["type"] == "pick.extended")
    if "actor" in change:
        ext["actor"] = change["actor"]
    else:
        ext["data"] = {**ext["data"], **change}
        if change.get("reason", "") is None:
            del ext["data"]["reason"]
    assert any(message in str(m) for m in verify_lifecycle(forged)), verify_lifecycle(forged)


def test_a_verification_after_the_countdown_ran_out_fails_verify() -> None:
    _, records = story()
    verified = next(r for r in records if r["type"] == "pick.verified")
    drawn = next(
        r
        for r in records
        if r["type"] == "pick.drawn" and r["data"]["pick"] == verified["data"]["pick"]
    )
    assert drawn["data"]["deadline"] is None  # absent mode: no countdown, a verify any time
    s, hh = absent_session(SessionRules())  # the countdown runs from the draw
    pick = s.draw(hh.cmd(), SLOTS).pick
    assert pick is not None and pick.deadline is not None
    s.verify(hh.cmd(30), pick.number)
    honest = closed(s, hh)
    assert verify_lifecycle(honest) == []
    late = tampered(honest, "pick.verified", at=(pick.deadline + timedelta(seconds=5)).isoformat())
    assert any("after its countdown ran out" in str(m) for m in verify_lifecycle(late))


def test_a_missing_escalation_is_an_anomaly() -> None:
    _, records = story()
    assert session_report(records).anomalies == []
    gone = [r for r in records if r["type"] != "pick.escalated"]
    assert verify_session(gone) == []  # no winner changes: it is for the inspector to see
    [anomaly] = session_report(gone).anomalies
    assert "pick 1 was not reached within 120 s" in anomaly and "pick.absent" in anomaly

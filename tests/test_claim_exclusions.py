"""Issue 15 item 4: an exclusion that arrives while a winner waits.

"Any exclusion for a pending or verified-not-awarded winner must block verification and
award, alert the handheld and the dispatch screen, and the pick must be voided with the
exclusion as reason (journaled), then redrawn."  Each kind (self-exclusion, refusal of
entry, staff, a manual block), a pending and a verified winner, by the claim timer's tick
alone (no command in between) and by the next command; a forced close; and the daemon's
own tick.  The screens' alerts are in tests/test_claim_browser.py.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from selector.events import Exclusion
from selector.records import Actor
from selector.session import PickState, SessionError
from selector.verify import verify_session
from tests.builders import Events
from tests.daemon_helpers import (
    SESSION,
    Clock,
    Handheld,
    card,
    client_for,
    floor_config,
    running_service,
    seat_players,
)
from tests.test_session_rules import ENVELOPE, SLOTS, fill_floor, open_session, session_floor


def exclude(ev: Events, who: str, kind: Exclusion) -> object:
    block = "Banned by the GM" if kind == Exclusion.MANUAL_BLOCK else None
    return ev.player(who, name="Excluded W.", exclusions=frozenset({kind}), block_reason=block)


@pytest.mark.parametrize("verified", [False, True], ids=["pending", "verified"])
@pytest.mark.parametrize("kind", list(Exclusion), ids=[k.value for k in Exclusion])
def test_the_tick_voids_an_excluded_winner_and_the_slot_is_drawn_again(
    kind: Exclusion, verified: bool
) -> None:
    floor, ev = session_floor()
    fill_floor(floor, ev, slots=4, tables=0)
    s, hh = open_session(floor)
    pick = s.draw(hh.cmd(), SLOTS).pick
    assert pick is not None
    if verified:
        s.verify(hh.cmd(5), pick.number)
    floor.apply(exclude(ev, pick.card, kind))  # type: ignore[arg-type]
    assert [p.number for p in s.excluded_winners()] == [pick.number]
    assert s.timer_due(hh.now)
    [rec] = s.expire(hh.now)  # the claim timer's tick: no command in between
    assert (rec.type, rec.actor) == ("pick.voided", Actor("system", "exclusion"))
    assert rec.data["reason"] == f"excluded: {kind.value}" and "command_id" not in rec.data
    assert (pick.state, pick.void_reason) == (PickState.VOID, f"excluded: {kind.value}")
    with pytest.raises(SessionError, match=f"excluded: {kind.value}: the pick is void"):
        s.verify(hh.cmd(1), pick.number)
    with pytest.raises(SessionError, match=f"excluded: {kind.value}"):
        s.award(hh.cmd(1), pick.number, ENVELOPE)
    again = s.draw(hh.cmd(1), SLOTS)
    assert again.pick is not None and again.pick.slot == pick.slot
    assert again.pick.card != pick.card
    assert pick.card not in again.records[-1].data["pool"]
    s.close(hh.cmd(1), force=True)
    assert verify_session([r.to_dict() for r in s.records]) == []


def test_the_next_command_voids_first_and_is_refused_with_the_reason() -> None:
    """Before any tick: the award of a verified winner who self-excluded meanwhile."""
    floor, ev = session_floor()
    fill_floor(floor, ev, slots=3, tables=0)
    s, hh = open_session(floor)
    pick = s.draw(hh.cmd(), SLOTS).pick
    assert pick is not None
    s.verify(hh.cmd(5), pick.number)
    floor.apply(exclude(ev, pick.card, Exclusion.SELF_EXCLUDED))  # type: ignore[arg-type]
    before = len(s.records)
    with pytest.raises(SessionError, match="excluded: self_excluded"):
        s.award(hh.cmd(5), pick.number, ENVELOPE)
    assert [r.type for r in s.records[before:]] == ["pick.voided"]  # journaled all the same
    assert pick.prize is None


def test_a_forced_close_voids_the_excluded_with_their_reason_before_the_pending() -> None:
    floor, ev = session_floor()
    fill_floor(floor, ev, slots=4, tables=0)
    s, hh = open_session(floor)
    one = s.draw(hh.cmd(), SLOTS).pick
    two = s.draw(hh.cmd(1), SLOTS).pick
    three = s.draw(hh.cmd(1), SLOTS).pick
    assert one is not None and two is not None and three is not None
    s.verify(hh.cmd(1), three.number)
    floor.apply(exclude(ev, one.card, Exclusion.REFUSAL_OF_ENTRY))  # type: ignore[arg-type]
    floor.apply(exclude(ev, three.card, Exclusion.MANUAL_BLOCK))  # type: ignore[arg-type]
    out = s.close(hh.cmd(1), force=True)
    voids = [(r.data["pick"], r.data["reason"], r.actor.role) for r in out.records
             if r.type == "pick.voided"]  # fmt: skip
    assert voids == [
        (one.number, "excluded: refusal_of_entry", "exclusion"),
        (three.number, "excluded: manual_block", "exclusion"),
        (two.number, "session closed", "marketing"),
    ]
    assert out.records[-1].data["outcomes"]["void"] == 3
    assert verify_session([r.to_dict() for r in s.records]) == []


def test_a_close_without_force_is_not_held_up_by_an_excluded_winner() -> None:
    """The excluded pending winner is voided first, so nothing is left pending."""
    floor, ev = session_floor()
    fill_floor(floor, ev, slots=2, tables=0)
    s, hh = open_session(floor)
    pick = s.draw(hh.cmd(), SLOTS).pick
    assert pick is not None
    floor.apply(exclude(ev, pick.card, Exclusion.SELF_EXCLUDED))  # type: ignore[arg-type]
    out = s.close(hh.cmd(1))
    assert [r.type for r in out.records] == ["pick.voided", "session.closed"]


@pytest.mark.asyncio
async def test_the_daemon_s_tick_voids_a_pending_winner_and_the_api_answers_409(
    tmp_path: Path,
) -> None:
    cfg = floor_config(f"sqlite:///{tmp_path / 'raps.db'}", tmp_path)
    clock = Clock()
    async with running_service(cfg, clock) as service, client_for(service, cfg) as client:
        seat_players(service, slots=[(card(i), f"M0{i}") for i in range(1, 4)])
        hh = Handheld(client)
        assert (await hh.post("open")).status_code == 200
        pick = (await hh.post("draw", kind="slots")).json()["pick"]
        drawn = next(
            e.record["data"]["card"]
            for e in await service.journal.session_entries(SESSION)
            if e.record["type"] == "pick.drawn"
        )
        ev = Events(clock.now)
        ev._ids = itertools.count(900_000)  # not the seating events' ids
        assert service.ingest([exclude(ev, drawn, Exclusion.SELF_EXCLUDED)], "cms") == 1  # type: ignore[list-item]
        await service.tick()  # no command in between
        records = [e.record for e in await service.journal.session_entries(SESSION)]
        void = records[-1]
        assert void["type"] == "pick.voided" and void["actor"] == {
            "user": "system",
            "role": "exclusion",
        }
        summary = await hh.summary()
        assert summary["picks"][0]["state"] == "void"
        r = await hh.post(f"picks/{pick['pick']}/verify")
        assert r.status_code == 409 and "excluded: self_excluded" in r.json()["detail"]

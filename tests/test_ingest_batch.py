"""A batch of floor events costs one call into the core (issue 20), and says the same.

`Floor.apply_many` names every event it refuses through its hook, (index, reason), and an
event it fails on ends the call with what came before applied; `raps.ingest_batch`
(`Service.ingest`'s work) hands a batch to the core in one call and reports, per event,
exactly what the daemon reported when it applied them one at a time: applied, duplicate,
the floor log's backlog full, the core's reason, or `internal_error` for the one event the
core failed on while the rest of the batch applies.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raps.ingest_batch import INTERNAL_ERROR, apply_batch
from raps.service import Service
from selector.events import AnyFloorEvent, PlayerUpserted, PoolKind, TicketsGranted
from selector.floor import Floor
from tests.builders import NOON, Events, raps_floor
from tests.daemon_helpers import Clock
from tests.test_mqtt_poison import make_service

BOOM = "Boom"  # a directory entry with this name makes the (patched) core raise


def explosive(floor: Floor) -> list[str]:
    """Make the floor's directory handler raise on BOOM; returns the cards it failed on."""
    real = floor._dispatch[PlayerUpserted]
    failed: list[str] = []

    def handler(ev: PlayerUpserted) -> str | None:
        if ev.display_name == BOOM:
            failed.append(ev.card)
            raise OverflowError("date value out of range")
        return real(ev)

    floor._dispatch[PlayerUpserted] = handler
    return failed


def test_the_hook_names_each_refused_event_by_its_index() -> None:
    floor, ev = raps_floor(), Events()
    batch: list[AnyFloorEvent] = [
        ev.player("6000000001"),
        ev.game("M99"),  # no such machine
        ev.card_in("M01", "6000000001"),
        ev.rating_open("T9", 1, "6000000002"),  # no such table
        ev.game("M01", wager=50_000),
    ]
    seen: list[tuple[int, str]] = []
    assert floor.apply_many(batch, lambda i, reason: seen.append((i, reason))) == 2
    assert [i for i, _ in seen] == [1, 3]
    assert seen[0][1] == "unknown_machine"
    assert seen[1][1] == floor.last_rejection
    assert list(floor.pool("raps", PoolKind.SLOTS)) == ["6000000001"]


def test_a_failing_event_ends_the_call_with_what_came_before_applied() -> None:
    floor, ev = raps_floor(), Events()
    failed = explosive(floor)
    first = [ev.player("6000000001"), ev.card_in("M01", "6000000001")]
    later = ev.game("M01", wager=50_000, at=NOON + timedelta(seconds=30))
    batch = [*first, later, ev.player("6000000002", name=BOOM), ev.player("6000000003")]
    events = iter(batch)
    with pytest.raises(OverflowError):
        floor.apply_many(events)
    assert failed == ["6000000002"]
    # the game before the failure is applied: clock moved, pool settled
    assert floor.now == later.epoch
    assert list(floor.pool("raps", PoolKind.SLOTS)) == ["6000000001"]
    # the caller goes on with the rest of the same iterator
    assert floor.apply_many(events) == 0
    assert floor.profile("6000000003") is not None
    assert floor.profile("6000000002") is None


# ----------------------------------------------------------- one call == one by one


def one_by_one(
    floor: Floor, events: Sequence[AnyFloorEvent], room: int, seen: set[str],
    grant: Callable[[TicketsGranted], str | None],
) -> list[str | None]:  # fmt: skip
    """What Service.ingest_detailed did before batching: Floor.apply per event."""
    reasons: list[str | None] = []
    applied = 0
    for ev in events:
        reason: str | None
        if applied >= room:
            reason = "floor_log_backlog"
        elif ev.event_id in seen:
            reason = "duplicate"
        else:
            seen.add(ev.event_id)
            try:
                reason = grant(ev) if type(ev) is TicketsGranted else floor.apply(ev)
            except Exception:
                seen.discard(ev.event_id)
                reason = INTERNAL_ERROR
        applied += reason is None
        reasons.append(reason)
    return reasons


def batched(
    floor: Floor, events: Sequence[AnyFloorEvent], room: int, seen: set[str],
    grant: Callable[[TicketsGranted], str | None],
) -> tuple[list[str | None], list[str]]:  # fmt: skip
    faults: list[str] = []

    def remember(event_id: str) -> bool:
        if event_id in seen:
            return False
        seen.add(event_id)
        return True

    reasons = apply_batch(
        floor, events, room, remember, seen.discard, grant,
        lambda ev, e: faults.append(ev.event_id),
    )  # fmt: skip
    return reasons, faults


def grant(ev: TicketsGranted) -> str | None:
    return None if ev.tickets % 2 else "bin_closed"


CARDS = ["6000000001", "6000000002", "6000000003"]
MACHINES = ["M01", "M02", "M03", "M99"]


@st.composite
def floor_batches(draw: Any) -> list[AnyFloorEvent]:
    """Directory entries (some that make the core fail), cards in and out, games, points,
    ticket grants, unknown machines, repeated ids, timestamps moving on or back."""
    n = draw(st.integers(1, 40))
    out: list[AnyFloorEvent] = []
    at = NOON
    for k in range(n):
        at += timedelta(seconds=draw(st.integers(-5, 120)))
        card, machine = draw(st.sampled_from(CARDS)), draw(st.sampled_from(MACHINES))
        eid = f"e{draw(st.integers(0, k))}" if draw(st.booleans()) else f"e{k}"
        head: dict[str, Any] = {"event_id": eid, "source": "t", "ts": at}
        kind = draw(st.integers(0, 6))
        ev = Events(at)
        made: AnyFloorEvent
        if kind == 0:
            name = BOOM if draw(st.integers(0, 5)) == 0 else "Thandi M."
            made = ev.player(card, name=name)
        elif kind == 1:
            made = ev.card_in(machine, card)
        elif kind == 2:
            made = ev.card_out(machine, card)
        elif kind == 3:
            made = ev.points(card, draw(st.sampled_from([5.0, 30.0, 60.0])))
        elif kind == 4:
            made = TicketsGranted(**head, card=card, bin_id="b1", tickets=draw(st.integers(1, 4)))
        else:
            made = ev.game(machine, wager=draw(st.sampled_from([1_000, 25_000])))
        out.append(replace(made, **head))
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=floor_batches(), second=floor_batches(), room=st.integers(0, 60))
def test_one_call_per_batch_gives_what_one_by_one_gave(
    first: list[AnyFloorEvent], second: list[AnyFloorEvent], room: int
) -> None:
    """Same reasons per event, same faults, same floor afterwards (state, pools, counters),
    over two batches (duplicates across batches, the room left by the first)."""
    a, b = raps_floor(), raps_floor()
    explosive(a), explosive(b)
    seen_a: set[str] = set()
    seen_b: set[str] = set()
    for events in (first, second):
        want = one_by_one(a, events, room, seen_a, grant)
        got, faults = batched(b, events, room, seen_b, grant)
        assert got == want
        assert faults == [
            e.event_id for e, r in zip(events, got, strict=True) if r == INTERNAL_ERROR
        ]
        room -= sum(r is None for r in got)
        assert seen_a == seen_b
    a.advance(NOON + timedelta(hours=3))
    b.advance(NOON + timedelta(hours=3))
    assert a.snapshot() == b.snapshot()
    for kind in PoolKind:
        assert list(a.pool("raps", kind)) == list(b.pool("raps", kind))
    assert a.rejections == b.rejections and a.counters() == b.counters()


# ------------------------------------------------------------- through the service


@pytest.mark.asyncio
async def test_service_reports_every_event_of_a_batch(tmp_path: Path) -> None:
    svc: Service = await make_service(tmp_path, Clock(), backlog=5)
    try:
        failed = explosive(svc.floor)
        calls: list[int] = []
        real = svc.floor.apply_many

        def counted(events: Any, hook: Any = None) -> int:
            calls.append(1)
            return real(events, hook)

        svc.floor.apply_many = counted  # type: ignore[method-assign]
        at = svc.clock() - timedelta(minutes=1)
        ev = Events(at)
        batch: list[AnyFloorEvent] = [
            ev.player("6000012345"),
            ev.game("M99"),
            ev.player("6000012346", name=BOOM),
            ev.card_in("M01", "6000012345"),
        ]
        batch.append(batch[0])  # redelivered in the same batch
        batch += [ev.game("M01", wager=1_000) for _ in range(3)] + [ev.game("M01")]
        reasons = svc.ingest_detailed(batch, "t")
        assert reasons == [
            None, "unknown_machine", INTERNAL_ERROR, None, "duplicate", None, None, None,
            "floor_log_backlog",
        ]  # fmt: skip
        assert failed == ["6000012346"]
        assert len(calls) == 2  # one call, and one more for what followed the failure
        assert [e.event_id for _, _, e in svc._unflushed] == [
            batch[i].event_id for i, r in enumerate(reasons) if r is None
        ]
        metric = svc.metrics.events_rejected.labels("t", INTERNAL_ERROR)
        assert metric._value.get() == 1
        # the failed one, redelivered, fails again (it was not remembered as seen)
        await svc.flush_events()
        assert svc.ingest_detailed([batch[2]], "t") == [INTERNAL_ERROR]
        assert failed == ["6000012346", "6000012346"]
    finally:
        await svc.engine.dispose()

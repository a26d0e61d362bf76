"""One batch of floor events into the core in one call (issue 20): `Service.ingest`'s work.

The events the core may take (room left in the floor log's backlog, not a duplicate, not
the casino's own ticket grants, which go to the ticket desk) are handed to
`Floor.apply_many` lazily, so every check sees what the core did with the events before
it (a rejected event takes no room).  The core names each event it refuses through its
hook; an event it fails on (an exception) is refused alone as `internal_error`, its id
forgotten so a redelivery is refused again, and the call goes on with the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from selector.events import AnyFloorEvent, TicketsGranted
from selector.floor import Floor

INTERNAL_ERROR = "internal_error"


def apply_batch(
    floor: Floor,
    events: Sequence[AnyFloorEvent],
    room: int,
    remember: Callable[[str], bool],
    forget: Callable[[str], None],
    grant: Callable[[TicketsGranted], str | None],
    fault: Callable[[AnyFloorEvent, Exception], None],
) -> list[str | None]:
    """Per event None (applied) or why not; at most `room` events are applied.

    remember(event_id) is False for a duplicate; forget(event_id) undoes it for an event
    that failed; grant applies a TicketsGranted; fault is told of each failure."""
    reasons: list[str | None] = [None] * len(events)
    handed: list[int] = []  # indices of the events handed to the core, in order
    applied = 0
    first = 0  # index in `handed` of the current apply_many call's first event

    def feed() -> Iterator[AnyFloorEvent]:
        nonlocal applied
        for i, ev in enumerate(events):
            if applied >= room:
                reasons[i] = "floor_log_backlog"
            elif not remember(ev.event_id):
                reasons[i] = "duplicate"
            elif type(ev) is TicketsGranted:
                try:
                    reasons[i] = grant(ev)
                except Exception as e:
                    forget(ev.event_id)
                    reasons[i] = INTERNAL_ERROR
                    fault(ev, e)
                if reasons[i] is None:
                    applied += 1
            else:
                handed.append(i)
                applied += 1  # given back by `rejected` if the core refuses it
                yield ev

    def rejected(index: int, reason: str) -> None:
        nonlocal applied
        reasons[handed[first + index]] = reason
        applied -= 1

    batch = feed()
    while True:
        first = len(handed)
        try:
            floor.apply_many(batch, rejected)
            return reasons
        except Exception as e:  # the event being applied; the generator goes on after it
            i = handed[-1]
            forget(events[i].event_id)
            reasons[i] = INTERNAL_ERROR
            applied -= 1
            fault(events[i], e)

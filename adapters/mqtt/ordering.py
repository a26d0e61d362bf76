"""Out-of-order place events: the few late messages that would move a player back.

MQTT keeps the order of one publisher's messages on one topic, but not across topics
or publishers, and a redelivery after a reconnect can arrive after newer traffic.
The core applies events in arrival order and already tolerates most lateness (a late
game keeps the machine's newest game time, late points of an earlier day are
ignored, rating figures are cumulative).  What it cannot tell is that a card-in or a
rating open is older than what it knows, and applying one would put a player back
at a place they have left; a late removal could take a seated player away.  This
guard keeps the newest timestamp of the events that place players and rejects,
as `stale`, the events the rules in docs/mqtt.md ("Ordering") call stale.

Equal timestamps are never stale: arrival order decides.  A redelivered copy of an
event the guard already let through is not stale either: the core drops it as a
duplicate.  The guard keeps its state in memory; after a restart the first event of
each machine, seat and card is accepted as it comes.
"""

from __future__ import annotations

from collections import deque

from selector.events import (
    AnyFloorEvent,
    CardInserted,
    CardRemoved,
    MachineStatusChanged,
    PlayerUpserted,
    TableRatingClosed,
    TableRatingOpened,
    TableRatingUpdated,
)

REMEMBERED_IDS = 100_000  # event ids of passed place events, to tell redeliveries


class OrderGuard:
    def __init__(self, remembered: int = REMEMBERED_IDS) -> None:
        # place ("m:MACHINE" or "t:TABLE:SEAT") -> (newest place event epoch, its card)
        self._place: dict[str, tuple[float, str]] = {}
        # card -> (newest place event epoch, its place)
        self._card: dict[str, tuple[float, str]] = {}
        self._status: dict[str, float] = {}  # machine -> newest status epoch
        self._profile: dict[str, float] = {}  # card -> newest directory entry epoch
        self._ids: set[str] = set()
        self._id_order: deque[str] = deque()
        self._remembered = remembered

    def check(self, ev: AnyFloorEvent) -> str | None:
        """None when the event may be applied (and it is recorded), else why it is stale."""
        kind = type(ev)
        if kind not in _GUARDED:
            return None  # games, points: never stale
        if ev.event_id in self._ids:
            return None  # a redelivery: the core's dedupe answers 'duplicate'
        reason = self._stale(ev)
        if reason is None:
            self._record(ev)
        return reason

    def _stale(self, ev: AnyFloorEvent) -> str | None:
        t = ev.epoch
        if isinstance(ev, MachineStatusChanged):
            last = self._status.get(ev.machine)
            if last is not None and t < last:
                return f"older than the machine's newest status ({_ago(last - t)})"
            return None
        if isinstance(ev, PlayerUpserted):
            last = self._profile.get(ev.card)
            if last is not None and t < last:
                return f"older than the card's newest directory entry ({_ago(last - t)})"
            return None
        if not isinstance(ev, _PLACE_EVENTS):
            return None
        place = _place_of(ev)
        at_place = self._place.get(place)
        of_card = self._card.get(ev.card)
        if isinstance(ev, TableRatingUpdated):
            # a late cumulative update of the same rating is harmless: figures only grow
            if at_place is not None and t < at_place[0] and at_place[1] != ev.card:
                return f"older than the newest rating at the seat ({_ago(at_place[0] - t)})"
            if of_card is not None and t < of_card[0] and of_card[1] != place:
                return f"older than the card's newest move ({_ago(of_card[0] - t)})"
            return None
        if at_place is not None and t < at_place[0]:
            return f"older than the newest card event at {place[2:]} ({_ago(at_place[0] - t)})"
        if not isinstance(ev, CardRemoved) and of_card is not None and t < of_card[0]:
            # a late card-in, rating open or close elsewhere would move the player back
            return f"older than the card's newest move ({_ago(of_card[0] - t)})"
        return None

    def _record(self, ev: AnyFloorEvent) -> None:
        t = ev.epoch
        if isinstance(ev, MachineStatusChanged):
            self._status[ev.machine] = max(t, self._status.get(ev.machine, t))
        elif isinstance(ev, PlayerUpserted):
            self._profile[ev.card] = max(t, self._profile.get(ev.card, t))
        elif isinstance(ev, _PLACE_EVENTS) and not isinstance(ev, TableRatingUpdated):
            place = _place_of(ev)
            if t >= self._place.get(place, (t, ""))[0]:
                self._place[place] = (t, ev.card)
            if t >= self._card.get(ev.card, (t, ""))[0]:
                self._card[ev.card] = (t, place)
        self._ids.add(ev.event_id)
        self._id_order.append(ev.event_id)
        if len(self._id_order) > self._remembered:
            self._ids.discard(self._id_order.popleft())


_GUARDED: frozenset[type] = frozenset(
    {
        CardInserted,
        CardRemoved,
        MachineStatusChanged,
        TableRatingOpened,
        TableRatingUpdated,
        TableRatingClosed,
        PlayerUpserted,
    }
)


_PLACE_EVENTS = (
    CardInserted,
    CardRemoved,
    TableRatingOpened,
    TableRatingUpdated,
    TableRatingClosed,
)
PlaceEvent = CardInserted | CardRemoved | TableRatingOpened | TableRatingUpdated | TableRatingClosed


def _place_of(ev: PlaceEvent) -> str:
    if isinstance(ev, CardInserted | CardRemoved):
        return f"m:{ev.machine}"
    return f"t:{ev.table}:{ev.seat}"


def _ago(seconds: float) -> str:
    return f"{seconds:.3f} s older"

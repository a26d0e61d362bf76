"""The versioned MQTT topic tree of one site, in one place.

Inbound (floor systems publish, RAPS subscribes at QoS 1):

    {prefix}/{site}/slots/{machine}/events     card_inserted, card_removed, game_played,
                                                machine_status
    {prefix}/{site}/tables/{table}/events      table_rating_opened / _updated / _closed
    {prefix}/{site}/players                    player_upserted (directory and exclusions)
    {prefix}/{site}/points                     points_earned
    {prefix}/{site}/tickets                    tickets_granted (the casino's own ticket feed)

Outbound (RAPS publishes):

    {prefix}/{site}/deadletter                 every inbound message that was not applied
    {prefix}/{site}/draws/{session}/events     draw records (raps.service.Service._publish)
    {prefix}/{site}/draws/{session}/head       journal head, retained
    {prefix}/{site}/draws/{session}/summary    session summary when closed, retained

The prefix carries the version (`raps/v1` by default): a breaking change of any
payload gets a new prefix, so old and new publishers can run side by side.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Kind(StrEnum):
    """Which inbound topic a message came from; also the metric source suffix."""

    SLOTS = "slots"
    TABLES = "tables"
    PLAYERS = "players"
    POINTS = "points"
    TICKETS = "tickets"


# payload types allowed on each kind of topic (the type names of adapters.wire.codec)
TYPES_BY_KIND: dict[Kind, frozenset[str]] = {
    Kind.SLOTS: frozenset({"card_inserted", "card_removed", "game_played", "machine_status"}),
    Kind.TABLES: frozenset({"table_rating_opened", "table_rating_updated", "table_rating_closed"}),
    Kind.PLAYERS: frozenset({"player_upserted"}),
    Kind.POINTS: frozenset({"points_earned"}),
    Kind.TICKETS: frozenset({"tickets_granted"}),
}
# the kinds whose topic is one level under the site, named by the kind
_FLAT_KINDS = {k.value: k for k in (Kind.PLAYERS, Kind.POINTS, Kind.TICKETS)}
# the payload field that must equal the {machine} / {table} level of the topic
ID_FIELD: dict[Kind, str] = {Kind.SLOTS: "machine", Kind.TABLES: "table"}

_FORBIDDEN_IN_LEVEL = frozenset("/+#\0")


def check_level(value: str, what: str) -> str:
    """A value used as one topic level: non-empty, no '/', no wildcards."""
    if not value or any(c in _FORBIDDEN_IN_LEVEL for c in value):
        raise ValueError(f"{what} {value!r} cannot be an MQTT topic level")
    return value


@dataclass(frozen=True, slots=True)
class TopicRef:
    """An inbound topic, parsed: its kind and the machine or table it names."""

    kind: Kind
    ident: str | None = None


@dataclass(frozen=True, slots=True)
class Topics:
    prefix: str
    site: str

    def __post_init__(self) -> None:
        check_level(self.site, "site id")
        if not self.prefix or self.prefix.startswith("/") or self.prefix.endswith("/"):
            raise ValueError(f"topic prefix {self.prefix!r} must be levels like 'raps/v1'")
        if any(c in self.prefix for c in "+#\0"):
            raise ValueError(f"topic prefix {self.prefix!r} must not contain wildcards")

    @property
    def base(self) -> str:
        return f"{self.prefix}/{self.site}"

    # ---------------------------------------------------------------- inbound

    def slots(self, machine: str) -> str:
        return f"{self.base}/slots/{check_level(machine, 'machine id')}/events"

    def tables(self, table: str) -> str:
        return f"{self.base}/tables/{check_level(table, 'table id')}/events"

    @property
    def players(self) -> str:
        return f"{self.base}/players"

    @property
    def points(self) -> str:
        return f"{self.base}/points"

    @property
    def tickets(self) -> str:
        return f"{self.base}/tickets"

    def subscriptions(self) -> list[str]:
        """The filters the ingest subscribes to (QoS 1)."""
        return [
            f"{self.base}/slots/+/events",
            f"{self.base}/tables/+/events",
            self.players,
            self.points,
            self.tickets,
        ]

    def for_event(self, type_name: str, payload: dict[str, object]) -> str:
        """The topic a publisher must use for a payload (simulators and tests)."""
        for kind, types in TYPES_BY_KIND.items():
            if type_name in types:
                if kind == Kind.SLOTS:
                    return self.slots(str(payload["machine"]))
                if kind == Kind.TABLES:
                    return self.tables(str(payload["table"]))
                return f"{self.base}/{kind.value}"
        raise ValueError(f"no inbound topic carries {type_name!r}")

    def parse(self, topic: str) -> TopicRef | None:
        """The inbound topic's kind and id, or None for a topic outside the tree."""
        base = self.base
        if not topic.startswith(base) or topic[len(base) : len(base) + 1] != "/":
            return None
        rest = topic[len(base) + 1 :].split("/")
        if len(rest) == 1:
            flat = _FLAT_KINDS.get(rest[0])
            return None if flat is None else TopicRef(flat)
        if len(rest) == 3 and rest[2] == "events" and rest[1]:
            if rest[0] == "slots":
                return TopicRef(Kind.SLOTS, rest[1])
            if rest[0] == "tables":
                return TopicRef(Kind.TABLES, rest[1])
        return None

    # --------------------------------------------------------------- outbound

    @property
    def deadletter(self) -> str:
        return f"{self.base}/deadletter"

    @property
    def barrier(self) -> str:
        """A filter the ingest unsubscribes from on stop, never used for messages."""
        return f"{self.base}/ingest/barrier"

    def draws(self, session: str) -> str:
        """The folder of a draw session: .../events, .../head, .../summary."""
        return f"{self.base}/draws/{check_level(session, 'session id')}"

"""Journal records: the plain-data trail of every draw-related state change.

The core only produces them; the daemon chains, persists and publishes them.
`to_dict` gives a JSON-ready form whose keys are part of the journal format
(docs/journal.md), so renaming a field is a format change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

SYSTEM_TIMER = "timer"


@dataclass(frozen=True, slots=True)
class Actor:
    """Who did it: a signed-in user and the role they acted in, or the system."""

    user: str
    role: str

    @classmethod
    def system(cls, what: str = SYSTEM_TIMER) -> Actor:
        return cls(user="system", role=what)


@dataclass(frozen=True, slots=True)
class Record:
    type: str
    session_id: str
    at: datetime
    actor: Actor
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self, *, plain: bool = True) -> dict[str, Any]:
        """JSON-ready; with plain=False a pick's pool stays the core's read-only view of
        its snapshot (the journal stores it as a delta, so 10,000 cards are not copied)."""
        data = self.data
        if plain and "pool" in data and not isinstance(data["pool"], list):
            data = {**data, "pool": list(data["pool"])}
        return {
            "type": self.type,
            "session_id": self.session_id,
            "at": self.at.isoformat(),
            "actor": {"user": self.actor.user, "role": self.actor.role},
            "data": data,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Record:
        return cls(
            type=d["type"],
            session_id=d["session_id"],
            at=datetime.fromisoformat(d["at"]),
            actor=Actor(d["actor"]["user"], d["actor"]["role"]),
            data=dict(d.get("data", {})),
        )

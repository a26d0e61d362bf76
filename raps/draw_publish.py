"""A RAPS session's records on MQTT, after their commit: each record (no pool, masked
card) on `.../draws/{session}/events`, the journal head retained on `.../head`, and the
summary retained on `.../summary` once the session is closed (docs/mqtt.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from raps.chain import Head
from raps.session_views import public_record, session_summary
from selector.records import Record
from selector.session import DrawSession, SessionState


class Publisher(Protocol):
    async def publish(self, topic: str, payload: dict[str, Any], retain: bool = False) -> None: ...


async def publish_draw(
    publisher: Publisher, prefix: str, s: DrawSession, records: Sequence[Record], head: Head | None
) -> None:
    """Publish what a commit added; raises what the broker raises (the caller logs it:
    the journal is the record, a broker outage must not stop draws)."""
    topic = f"{prefix}/{s.session_id}"
    head_payload = {
        "session_id": s.session_id,
        "seq": head.seq if head else 0,
        "hash": head.hash if head else None,
    }
    for rec in records:
        await publisher.publish(f"{topic}/events", public_record(rec))
    await publisher.publish(f"{topic}/head", head_payload, retain=True)
    if s.state == SessionState.CLOSED:
        await publisher.publish(f"{topic}/summary", session_summary(s, head), retain=True)

"""A RAPS session's records on MQTT, after their commit: each record (no pool, masked
card) on `.../draws/{session}/events` with the signed journal head after the commit
attached, that head retained on `.../head`, the session's signed commitment retained on
`.../commitment` once it opens, and the summary retained on `.../summary` once it is
closed (docs/mqtt.md, raps/heads.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from raps.chain import Head
from raps.heads import HeadSigner, Publisher
from raps.session_views import public_record, session_summary
from selector.records import Record
from selector.session import DrawSession, SessionState

__all__ = ["Publisher", "publish_draw"]


async def publish_draw(
    publisher: Publisher,
    prefix: str,
    s: DrawSession,
    records: Sequence[Record],
    head: Head | None,
    heads: HeadSigner,
) -> None:
    """Publish what a commit added; raises what the broker raises (the caller logs it:
    the journal is the record, a broker outage must not stop draws)."""
    topic = f"{prefix}/{s.session_id}"
    signed: dict[str, Any] | None = heads.head(head) if head is not None else None
    for rec in records:
        await publisher.publish(f"{topic}/events", {**public_record(rec), "head": signed})
    if signed is not None:
        await publisher.publish(f"{topic}/head", signed, retain=True)
    if head is not None and records and records[-1].type == "session.opened":
        # the open is its command's last record: its journal entry is the head
        await publisher.publish(
            f"{topic}/commitment", heads.commitment(records[-1], head), retain=True
        )
    if s.state == SessionState.CLOSED:
        await publisher.publish(f"{topic}/summary", session_summary(s, head), retain=True)

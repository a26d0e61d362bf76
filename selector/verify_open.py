"""verify's checks on a session that is still open, with its seed (still secret).

The daemon unseals an open session's seed when it restores the session; before it lets
the session run again it recomputes every pick the way `raps verify` will once the seed
is revealed (selector.verify), so a journal edited while the session was open (a record
deleted in the middle, a winner changed and the chain rebuilt) is refused at restore
instead of carried on. The recomputation is verify_session's own, on the records
followed by the close the session would make now; only what it finds in the records
themselves counts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from selector.fairness import commitment
from selector.lifecycle import Mismatch, as_dicts
from selector.records import Record
from selector.verify import verify_session


def verify_open_session(records: Iterable[Record | dict[str, Any]], seed: bytes) -> list[Mismatch]:
    """Every mismatch in an open session's records (pools included), given its seed; a
    closed session is verified with the seed its close revealed."""
    recs = as_dicts(records)
    if any(r.get("type") == "session.closed" for r in recs):
        return verify_session(recs)
    opened = [(i, r) for i, r in enumerate(recs) if r.get("type") == "session.opened"]
    if len(opened) == 1 and opened[0][1].get("data", {}).get("commitment") != commitment(seed):
        return [Mismatch(opened[0][0], None, "the seed does not match the commitment at open")]
    if not recs:
        return []
    close = {
        "type": "session.closed",
        "session_id": recs[0].get("session_id"),
        "at": recs[-1].get("at"),
        "actor": {"user": "system", "role": "restore"},
        "data": {"seed": seed.hex(), "commitment": commitment(seed)},
    }
    return [m for m in verify_session([*recs, close]) if m.position < len(recs)]

"""verify's checks on a ticket draw the daemon restores, open (seed still secret) or closed.

Before a restored draw runs again (or answers for its winners) the daemon holds its
records to `raps verify`'s own checks (selector.tickets.draw_verify): one open and
nothing after the close, pick and request numbering, positions and attempts, one pick
at a time, legal presentations, add-ons, awards, no-shows and voids, no barred card
drawn, the witness's signatures, and every ticket recomputed from the seed (an open
draw's unsealed seed, a closed draw's revealed one). The bins are the one thing taken as
recorded: the restore has rebuilt each in the draw's own tree and matched its digest and
the winner holding the ticket (TicketDrawSession.restore), so the check costs a few
hashes per pick, not a rehash of a 200,000-card bin. An open draw is checked as the
close it would make now would leave it; only what is found in its records counts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from selector.fairness import commitment
from selector.records import Record
from selector.tickets.draw_picks import CLOSED, OPENED
from selector.tickets.draw_verify import verify_draw
from selector.verify import Mismatch


def verify_restored_draw(
    records: Iterable[Record | dict[str, Any]], seed: bytes | None
) -> list[Mismatch]:
    """Every mismatch in a draw's records, its bins taken as recorded; `seed`: the
    draw's unsealed seed (None: a draw never opened)."""
    recs = [r.to_dict() if isinstance(r, Record) else r for r in records]
    if not recs:
        return []
    if any(r.get("type") == CLOSED for r in recs):
        return verify_draw(recs, trust_bins=True)
    opened = recs[0].get("data", {}) if recs[0].get("type") == OPENED else {}
    if seed is None or opened.get("commitment") != commitment(seed):
        return [Mismatch(0, None, "the seed does not match the commitment at open")]
    close = {
        "type": CLOSED,
        "session_id": recs[0].get("session_id"),
        "at": recs[-1].get("at"),
        "actor": {"user": "system", "role": "restore"},
        "data": {"draw_id": opened.get("draw_id"), "seed": seed.hex()},
    }
    return [m for m in verify_draw([*recs, close], trust_bins=True) if m.position < len(recs)]

"""What an inspector should look at in a RAPS session that verifies: the report beside
the recomputation.

Two kinds of line.  Notes are the session's human decisions, each with who and why:
every void and every no-show (by the claim timer or by staff).  Anomalies are what an
honest session does not show and an insider's might: a staff no-show before the claim
window could have run out, an abandoned draw attempt (a pool requested and never drawn
from, which is what vetoing a winner by failing its commit leaves), the journal's time
going backwards, and the rehearsal flag changing inside a session.  `raps verify` exits
with 3 when a journal that verifies has anomalies, 1 when it does not verify.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass
class SessionReport:
    notes: list[str] = field(default_factory=list)
    anomalies: list[str] = field(default_factory=list)


def _who(r: dict[str, Any]) -> str:
    a = r.get("actor") or {}
    return f"{a.get('user')} ({a.get('role')})"


def session_report(records: Iterable[dict[str, Any]]) -> SessionReport:
    """Notes and anomalies of one session's records, in journal order."""
    rep = SessionReport()
    claim = 0.0
    drawn_at: dict[int, datetime] = {}
    requested: dict[int, str] = {}
    rehearsal: bool | None = None
    last_at: datetime | None = None
    closed = False
    for r in records:
        t, d = r.get("type"), r.get("data") or {}
        try:
            at = datetime.fromisoformat(str(r.get("at")))
        except ValueError:
            continue
        if last_at is not None and at < last_at:
            rep.anomalies.append(
                f"{t} at {at.isoformat()} is before the record it follows "
                f"({last_at.isoformat()}): the journal's time went backwards"
            )
        last_at = at if last_at is None else max(last_at, at)
        flag = d.get("rehearsal")
        if isinstance(flag, bool):
            if rehearsal is not None and flag != rehearsal:
                rep.anomalies.append(
                    f"{t} at {at.isoformat()} says rehearsal={flag}, the session "
                    f"opened with rehearsal={rehearsal}"
                )
            rehearsal = flag if rehearsal is None else rehearsal
        n = int(d.get("pick") or 0)
        if t == "session.opened":
            claim = float(d.get("claim_seconds", 0) or 0)
        elif t == "pick.requested":
            requested[n] = str(d.get("pool_digest"))
        elif t in ("pick.drawn", "pick.no_eligible"):
            requested.pop(n, None)
            if t == "pick.drawn":
                drawn_at[n] = at
        elif t == "pick.abandoned":
            requested.pop(n, None)
            rep.anomalies.append(
                f"pick {n} ({d.get('kind')}): the pool requested at "
                f"{at.isoformat()} was abandoned, never drawn from "
                f"({d.get('reason')}), by {_who(r)}"
            )
        elif t == "pick.voided":
            rep.notes.append(
                f"pick {n} voided at {at.isoformat()} by {_who(r)}: {d.get('reason')!r}"
            )
        elif t == "pick.no_show":
            since = (at - drawn_at[n]).total_seconds() if n in drawn_at else None
            how = "by the claim timer" if d.get("by") == "claim_timer" else f"by {_who(r)}"
            after = "" if since is None else f", {since:.0f} s after the draw"
            rep.notes.append(f"pick {n} no-show at {at.isoformat()} {how}{after}")
            if d.get("by") != "claim_timer" and since is not None and since < claim:
                rep.anomalies.append(
                    f"pick {n} marked a no-show by {_who(r)} {since:.0f} s after "
                    f"the draw, before its {claim:.0f} s to present ran out"
                )
        elif t == "session.closed":
            closed = True
    if closed:
        for n, digest in sorted(requested.items()):
            rep.anomalies.append(
                f"pick {n}: a pool was requested (digest {digest[:12]}...) and "
                "never drawn from before the close"
            )
    return rep

"""What an inspector should look at in a RAPS session that verifies: the report beside
the recomputation.

Two kinds of line.  Notes are the session's human decisions, each with who and why:
every void, every no-show (by the claim timer or by staff), every extension of a claim
countdown (by whom, how long, why) and every escalation of a winner nobody reached.
Anomalies are what an honest session does not show and an insider's might: a staff
no-show before the claim countdown could have run out (before it started, when it
starts at "absent", or before an extended deadline), an abandoned draw attempt (a pool
requested and never drawn from, which is what vetoing a winner by failing its commit
leaves), the journal's time going backwards, the rehearsal flag changing inside a
session, and a winner not reached within the en-route limit with no escalation.  `raps verify` exits
with 3 when a journal that verifies has anomalies, 1 when it does not verify.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from selector.claim_verify import claim_anomalies


@dataclass
class SessionReport:
    notes: list[str] = field(default_factory=list)
    anomalies: list[str] = field(default_factory=list)


def _who(r: dict[str, Any]) -> str:
    a = r.get("actor") or {}
    return f"{a.get('user')} ({a.get('role')})"


def session_report(records: Iterable[dict[str, Any]]) -> SessionReport:
    """Notes and anomalies of one session's records, in journal order."""
    records = list(records)
    rep = SessionReport()
    claim = 0.0
    drawn_at: dict[int, datetime] = {}
    # pick -> its claim deadline as the records make it (None: the countdown waits)
    deadline: dict[int, datetime | None] = {}
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
        elif t in ("pick.absent", "pick.extended"):
            deadline[n] = _when(d.get("deadline"))
            if t == "pick.extended":
                rep.notes.append(
                    f"pick {n}: claim countdown extended by {d.get('seconds')} s to "
                    f"{d.get('deadline')} at {at.isoformat()} by {_who(r)}: {d.get('reason')!r}"
                )
        elif t == "pick.escalated":
            why = _ESCALATED.get(str(d.get("reason")), str(d.get("reason")))
            officer = f" (officer {d['officer']})" if d.get("officer") else ""
            rep.notes.append(
                f"pick {n} escalated at {at.isoformat()}: {why} within "
                f"{d.get('limit_seconds')} s{officer}"
            )
        elif t == "pick.requested":
            requested[n] = str(d.get("pool_digest"))
        elif t in ("pick.drawn", "pick.no_eligible"):
            requested.pop(n, None)
            if t == "pick.drawn":
                drawn_at[n] = at
                # journals older than the claim steps carry no deadline: draw + claim
                deadline[n] = (
                    _when(d.get("deadline")) if "deadline" in d else at + timedelta(seconds=claim)
                )
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
            due = deadline.get(n, at)
            if d.get("by") != "claim_timer" and (due is None or at < due):
                early = f"pick {n} marked a no-show by {_who(r)} {since or 0:.0f} s after the draw"
                rep.anomalies.append(
                    f"{early}, before the winner was found absent: its {claim:.0f} s to "
                    "present had not started"
                    if due is None
                    else f"{early}, before its {claim:.0f} s to present ran out "
                    f"({(due - at).total_seconds():.0f} s left)"
                )
        elif t == "session.closed":
            closed = True
    rep.anomalies.extend(claim_anomalies(records))
    if closed:
        for n, digest in sorted(requested.items()):
            rep.anomalies.append(
                f"pick {n}: a pool was requested (digest {digest[:12]}...) and "
                "never drawn from before the close"
            )
    return rep


_ESCALATED = {
    "not_acknowledged": "security had not acknowledged the winner",
    "en_route_too_long": "security was en route too long",
}


def _when(text: Any) -> datetime | None:
    try:
        return None if text is None else datetime.fromisoformat(str(text))
    except ValueError:
        return None

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
session, a winner not reached within the en-route limit with no escalation, a session
left open at the end of the journal, a live session still open after its scheduled
window ended, and a pick drawn without its witness (derivation v3: the witness could not
be reached and the session allowed a fallback); a session opened without any witness is a
note.  `raps verify` exits with 3 when a journal that verifies has anomalies, 1 when it
does not verify.
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


def unwitnessed_pick(d: dict[str, Any]) -> str | None:
    """Why a v3 pick of a witnessed draw went without the witness's signature, if it did."""
    w = d.get("witness")
    if isinstance(w, dict) and w.get("signature") is None:
        return f"without the witness's signature (request {w.get('request')}): {w.get('reason')}"
    return None


def session_report(
    records: Iterable[dict[str, Any]],
    *,
    ends: datetime | None = None,
    journal_end: datetime | None = None,
) -> SessionReport:
    """Notes and anomalies of one session's records, in journal order. `ends`: the end
    of the session's scheduled window (None: it has none); `journal_end`: the time of
    the last record of the journal (or export) the session was read from."""
    rep = SessionReport()
    recs = list(records)
    claim = 0.0
    drawn_at: dict[int, datetime] = {}
    # pick -> its claim deadline as the records make it (None: the countdown waits)
    deadline: dict[int, datetime | None] = {}
    requested: dict[int, str] = {}
    rehearsal: bool | None = None
    last_at: datetime | None = None
    closed = False
    for r in recs:
        t, d = r.get("type"), r.get("data") or {}
        try:
            at = datetime.fromisoformat(str(r.get("at")))
        except ValueError:
            continue
        if at.tzinfo is None:
            continue  # not the daemon's (aware) time: the chain or the lifecycle names it
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
            if "witness" in d and d["witness"] is None:
                rep.notes.append(
                    f"opened at {at.isoformat()} without a witness (declared unwitnessed): "
                    "the key holder could predict its picks"
                )
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
            unwitnessed = unwitnessed_pick(d)
            if unwitnessed is not None:
                rep.anomalies.append(f"pick {n} drawn at {at.isoformat()} {unwitnessed}")
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
    rep.anomalies.extend(claim_anomalies(recs))
    if closed:
        for n, digest in sorted(requested.items()):
            rep.anomalies.append(
                f"pick {n}: a pool was requested (digest {digest[:12]}...) and "
                "never drawn from before the close"
            )
    if any(r.get("type") == "session.opened" for r in recs):
        rep.anomalies += _open_too_long(recs, rehearsal, ends, journal_end or last_at)
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


def _open_too_long(
    recs: list[dict[str, Any]],
    rehearsal: bool | None,
    ends: datetime | None,
    journal_end: datetime | None,
) -> list[str]:
    """A session left open at the end of the journal; a live one still open after its
    scheduled window ended (a rehearsal has no window)."""
    live = ends is not None and not rehearsal
    close = next((r for r in recs if r.get("type") == "session.closed"), None)
    if close is None:
        end = journal_end.isoformat() if journal_end else "?"
        past = live and journal_end is not None and ends is not None and journal_end > ends
        window = f", past its window's end ({ends.isoformat()})" if past and ends else ""
        return [f"the session is still open at the end of the journal ({end}){window}"]
    try:
        at = datetime.fromisoformat(str(close.get("at")))
        late_close = live and ends is not None and at > ends
    except (ValueError, TypeError):  # an unreadable time: the lifecycle names the record
        return []
    if late_close and ends is not None:
        late = (at - ends).total_seconds() / 60
        return [
            f"closed at {at.isoformat()}, {late:.0f} min after its window ended "
            f"({ends.isoformat()}): it stayed open past its window"
        ]
    return []


def draw_report(records: Iterable[dict[str, Any]]) -> SessionReport:
    """Notes and anomalies of one ticket draw's records (derivation v3): a draw opened
    without a witness (a note), a pick drawn without the witness's signature, and a bin
    requested and never drawn from before the close (what vetoing a winner by failing its
    commit, then abandoning the draw, would leave)."""
    rep = SessionReport()
    requested: dict[int, str] = {}
    for r in records:
        t, d = r.get("type"), r.get("data") or {}
        n = int(d.get("pick") or 0)
        if t == "draw.opened" and "witness" in d and d["witness"] is None:
            rep.notes.append(f"opened at {r.get('at')} without a witness (declared unwitnessed)")
        elif t == "draw.requested":
            requested[n] = str(d.get("bin_digest"))
        elif t == "draw.picked":
            requested.pop(n, None)
            unwitnessed = unwitnessed_pick(d)
            if unwitnessed is not None:
                rep.anomalies.append(f"pick {n} drawn at {r.get('at')} {unwitnessed}")
        elif t == "draw.closed":
            for number, digest in sorted(requested.items()):
                rep.anomalies.append(
                    f"pick {number}: a bin was requested (digest {digest[:12]}...) and never "
                    "drawn from before the close"
                )
            requested.clear()
    return rep

"""The end-of-session report (marketing and the auditor): every pick with its times,
outcome, who acted and the prize, built from the session's journal records.  Cards are
masked and names shortened as on every screen; the full trail is the journal export."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from raps.dispatch_views import Act, actor_text, pick_acts
from raps.redact import mask_card, short_name
from selector.records import Record

COLUMNS = (
    "pick",
    "pool",
    "slot",
    "attempt",
    "winner",
    "tier",
    "card",
    "area",
    "location",
    "drawn_at",
    "drawn_by",
    "en_route_at",
    "en_route_by",
    "absent_at",
    "absent_by",
    "escalated_at",
    "extended_seconds",
    "extended_by",
    "extension_reason",
    "deadline",
    "resolved_at",
    "resolved_by",
    "outcome",
    "outcome_at",
    "outcome_by",
    "prize_amount",
    "prize_kind",
    "envelope",
    "void_reason",
)

CLAIM_STEPS = ("pick.en_route", "pick.absent", "pick.escalated", "pick.extended")

_OUTCOME = {
    "pick.verified": "verified",
    "pick.awarded": "awarded",
    "pick.no_show": "no_show",
    "pick.voided": "void",
}


def _where(loc: dict[str, Any]) -> str:
    if loc.get("kind") == "slots":
        return f"Bank {loc.get('bank')} · Machine {loc.get('number')}"
    return f"Table {loc.get('table')} · Seat {loc.get('seat')}"


def _when(at: datetime | None, tz: ZoneInfo) -> str:
    return "" if at is None else at.astimezone(tz).isoformat()


def _who(act: Act | None) -> str:
    return "" if act is None else actor_text(act.actor, act.data)


def claim_acts(records: Sequence[Record]) -> dict[int, dict[str, Act]]:
    """Each pick's claim steps (selector.claims), the last record of each type."""
    out: dict[int, dict[str, Act]] = {}
    for rec in records:
        number = rec.data.get("pick")
        if rec.type in CLAIM_STEPS and isinstance(number, int):
            out.setdefault(number, {})[rec.type] = Act(rec.type, rec.at, rec.actor, rec.data)
    return out


def _claim_columns(steps: dict[str, Act], tz: ZoneInfo) -> dict[str, str]:
    """When security went, who found the winner absent, the escalation and extension."""
    go, gone = steps.get("pick.en_route"), steps.get("pick.absent")
    up, more = steps.get("pick.escalated"), steps.get("pick.extended")
    return {
        "en_route_at": _when(go.at if go else None, tz),
        "en_route_by": str(go.data.get("officer", "")) if go else "",
        "absent_at": _when(gone.at if gone else None, tz),
        "absent_by": _who(gone),
        "escalated_at": _when(up.at if up else None, tz),
        "extended_seconds": f"{float(more.data['seconds']):g}" if more else "",
        "extended_by": _who(more),
        "extension_reason": str(more.data.get("reason", "")) if more else "",
    }


def _deadline(drawn: dict[str, Any], steps: dict[str, Act], tz: ZoneInfo) -> str:
    """The pick's last deadline: the extension's, absent's (the countdown's start) or
    the draw's; empty while a countdown waiting for "absent" never started."""
    for step in ("pick.extended", "pick.absent"):
        if step in steps and steps[step].data.get("deadline"):
            return _when(datetime.fromisoformat(steps[step].data["deadline"]), tz)
    at = drawn.get("deadline")
    return _when(datetime.fromisoformat(at), tz) if at else ""


def report_rows(records: Sequence[Record], timezone: str) -> list[dict[str, str]]:
    """One row per pick (redraws included), in draw order, every value as text."""
    tz = ZoneInfo(timezone)
    rows: list[dict[str, str]] = []
    claims = claim_acts(records)
    for number, acts in sorted(pick_acts(records).items()):
        drawn = acts.drawn
        if drawn is None:
            continue
        d = drawn.data
        out = acts.outcome
        kind = out.type if out is not None else ""
        prize = out.data if kind == "pick.awarded" and out is not None else {}
        amount = prize.get("amount")
        rows.append(
            {
                "pick": str(number),
                "pool": str(d.get("kind", "")),
                "slot": str(d.get("slot", "")),
                "attempt": str(d.get("attempt", 0)),
                "winner": short_name(str(d.get("display_name", ""))),
                "tier": str(d.get("tier", "")),
                "card": mask_card(str(d.get("card", ""))),
                "area": str(d.get("location", {}).get("area", "")),
                "location": _where(d.get("location", {})),
                "drawn_at": _when(drawn.at, tz),
                "drawn_by": _who(drawn),
                **_claim_columns(claims.get(number, {}), tz),
                "deadline": _deadline(d, claims.get(number, {}), tz),
                "resolved_at": _when(acts.resolved.at if acts.resolved else None, tz),
                "resolved_by": _who(acts.resolved),
                "outcome": _OUTCOME.get(kind, "pending"),
                "outcome_at": _when(out.at if out else None, tz),
                "outcome_by": _who(out),
                "prize_amount": "" if amount is None else f"{amount / 100:.2f}",
                "prize_kind": str(prize.get("prize_kind", "")),
                "envelope": str(prize.get("envelope", "")),
                "void_reason": str(out.data.get("reason", ""))
                if out is not None and kind == "pick.voided"
                else "",
            }
        )
    return rows


def session_acts(records: Sequence[Record], timezone: str) -> dict[str, str]:
    """When the session opened and closed, and by whom."""
    tz = ZoneInfo(timezone)
    out = {"opened_at": "", "opened_by": "", "closed_at": "", "closed_by": ""}
    for rec in records:
        for what in ("opened", "closed"):
            if rec.type == f"session.{what}":
                out[f"{what}_at"] = _when(rec.at, tz)
                out[f"{what}_by"] = actor_text(rec.actor)
    return out


def prize_totals(rows: Sequence[dict[str, str]]) -> dict[str, int]:
    """Prizes awarded, in minor units, per kind."""
    totals: dict[str, int] = {}
    for r in rows:
        if r["outcome"] == "awarded" and r["prize_amount"]:
            cents = round(float(r["prize_amount"]) * 100)
            totals[r["prize_kind"]] = totals.get(r["prize_kind"], 0) + cents
    return totals


def report_csv(rows: Sequence[dict[str, str]]) -> str:
    """The rows as CSV (RFC 4180, a header line first)."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\r\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: _cell(v) for k, v in r.items()})
    return buf.getvalue()


def _cell(value: str) -> str:
    """A spreadsheet never runs a cell as a formula (CSV injection)."""
    return "'" + value if value[:1] in ("=", "+", "-", "@") else value

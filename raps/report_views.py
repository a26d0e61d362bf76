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


def report_rows(records: Sequence[Record], timezone: str) -> list[dict[str, str]]:
    """One row per pick (redraws included), in draw order, every value as text."""
    tz = ZoneInfo(timezone)
    rows: list[dict[str, str]] = []
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
                "deadline": _when(datetime.fromisoformat(d["deadline"]), tz)
                if d.get("deadline")
                else "",
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

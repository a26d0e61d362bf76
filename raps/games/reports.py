"""The promotion's prize report (marketing and the auditor): every prize once (the
ticket draws' letters and the stage ledger joined, selector.stagegames.prizeview), with
totals per draw, per day and per kind, the digit safe's history and the prizes not yet
collected; as JSON, CSV and a printable page.

Names are shortened and cards masked, as on every screen; the full trail is the journal.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from html import escape
from typing import Any, Protocol

from raps.redact import mask_card, short_name
from raps.tickets.stage import StageDesk
from selector.stagegames.ledger import StageLedger
from selector.stagegames.prizeview import PrizeRow, prize_rows, totals
from selector.tickets.announcing import kind_label, money

COLUMNS = ("draw_id", "draw_name", "day", "position", "winner", "card", "amount", "kind",
           "add_on", "letter_no", "state", "ref")  # fmt: skip
UNCOLLECTED = ("awaiting", "overdue")


class Prizes(Protocol):
    """What the report reads of the game desk (raps.games.desk.GameDesk)."""

    @property
    def stage(self) -> StageDesk: ...

    @property
    def ledger(self) -> StageLedger: ...


def rows(desk: Prizes, now: datetime) -> list[PrizeRow]:
    stage = desk.stage

    def position_of(session_id: str, pick: int) -> int | None:
        draw = session_id.removeprefix("draw:")
        s = stage.sessions.get(draw)
        if s is None or not session_id.startswith("draw:"):
            return pick  # a car's letter: its pick is the finalist's spot
        return s.picks[pick - 1].position if 1 <= pick <= len(s.picks) else None

    def day_of(draw_id: str) -> date | None:
        sd = stage.draws.get(draw_id)
        return None if sd is None else sd.day

    return prize_rows(stage.prizes.letters(), desk.ledger.entries, now, position_of, day_of)


def _names(stage: StageDesk) -> dict[str, str]:
    """Each letter's winner name, shortened (as screens show it), by card."""
    return {x.winner_card: short_name(x.winner_name) for x in stage.prizes.letters()}


def report(desk: Prizes, now: datetime, site_name: str, tz: str) -> dict[str, Any]:
    stage, led = desk.stage, desk.ledger
    got = rows(desk, now)
    names = _names(stage)
    shown = [_shown(r, stage, names) for r in got]
    history = [
        {"type": t, "what": what, "change": change, "value": value, "at": at}
        for t, what, change, value, at in (led.safe_history() if led.started else [])
    ]
    return {
        "site": site_name,
        "timezone": tz,
        "generated_at": now.isoformat(),
        "columns": list(COLUMNS),
        "prizes": shown,
        "by_draw": totals(got, lambda r: r.draw_id),
        "by_day": totals(got, lambda r: "" if r.day is None else r.day.isoformat()),
        "by_kind": totals(got, lambda r: r.kind),
        "safe": {
            "value": led.safe_value if led.started else None,
            "ever_cracked": led.ever_cracked,
            "shared": led.shared,
            "history": history,
        },
        "uncollected": [p for p in shown if p["state"] in UNCOLLECTED],
        "csv": "/api/prizes/report.csv",
        "page": "/prizes/report",
    }


def _shown(r: PrizeRow, stage: StageDesk, names: Mapping[str, str]) -> dict[str, Any]:
    sd = stage.draws.get(r.draw_id)
    return {
        **r.to_dict(),
        "draw_name": sd.draw.name if sd is not None else r.draw_id,
        "winner": names.get(r.card, ""),
        "card": mask_card(r.card),
    }


def report_csv(prizes: Sequence[Mapping[str, Any]]) -> str:
    """The prizes as CSV (RFC 4180, a header first); amounts in rand with two decimals."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\r\n", extrasaction="ignore")
    w.writeheader()
    for p in prizes:
        row = {k: "" if p.get(k) is None else str(p[k]) for k in COLUMNS}
        row["amount"] = f"{int(p['amount']) / 100:.2f}"
        w.writerow({k: _cell(v) for k, v in row.items()})
    return buf.getvalue()


def _cell(value: str) -> str:
    """A spreadsheet never runs a cell as a formula (CSV injection)."""
    return "'" + value if value[:1] in ("=", "+", "-", "@") else value


def report_html(rep: Mapping[str, Any]) -> str:
    """The printable summary (A4): totals, the safe's history, what is not collected."""

    def table(head: Sequence[str], body: Sequence[Sequence[str]]) -> str:
        th = "".join(f"<th>{escape(h)}</th>" for h in head)
        trs = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>"
                      for r in body)  # fmt: skip
        return f"<table><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>"

    def sums(d: Mapping[str, int], label: str) -> str:
        body = [(k or "-", money(v)) for k, v in d.items()]
        return table((label, "total"), [*body, ("all", money(sum(d.values())))])

    safe = rep["safe"]
    history = [(h["at"][:16].replace("T", " "), h["what"], money(h["change"]), money(h["value"]))
               for h in safe["history"]]  # fmt: skip
    open_ = [(p["letter_no"] or "", p["draw_name"], p["winner"], p["card"],
              f"{money(p['amount'])} {kind_label(p['kind'])}", p["state"])
             for p in rep["uncollected"]]  # fmt: skip
    value = "not started" if safe["value"] is None else money(safe["value"])
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Prize report</title>
<link rel="stylesheet" href="/static/prizes-report.css"></head><body>
<h1>Prize report: {escape(rep["site"])}</h1>
<p class="meta">Generated {escape(rep["generated_at"][:16].replace("T", " "))}
({escape(rep["timezone"])}); {len(rep["prizes"])} prize line(s); the digit safe: {value}
{"(cracked at least once)" if safe["ever_cracked"] else ""}. Print it from the browser.</p>
<h2>Totals by kind</h2>{sums({kind_label(k): v for k, v in rep["by_kind"].items()}, "kind")}
<h2>Prizes per day</h2>{sums(rep["by_day"], "day")}
<h2>Prizes per draw</h2>{sums(rep["by_draw"], "draw")}
<h2>The digit safe's history</h2>{table(("when", "draw or reason", "change", "value"), history)}
<h2>Not collected yet</h2>{table(("letter", "draw", "winner", "card", "prize", "state"), open_)}
</body></html>
"""

"""The promotion's prize report (marketing and the auditor): every prize once (the
ticket draws' letters and the stage ledger joined, selector.stagegames.prizeview), with
totals per kind, and per draw and per day by kind (cash, +Play, a car's nominal value
and the safe's payouts are never added into one figure), the digit safe's history and
the prizes not yet collected; as JSON, two CSVs (the prizes, the totals) and a
printable page.

Names are shortened and cards masked, as on every screen (a prize with no letter, a car
qualifying spot, takes the name from the floor's player profile); the full trail is the
journal.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime
from html import escape
from typing import Any, Protocol

from raps.redact import mask_card, short_name
from raps.tickets.stage import StageDesk
from selector.stagegames.ledger import StageLedger
from selector.stagegames.prizeview import PrizeRow, kind_totals, prize_rows, totals
from selector.tickets.announcing import kind_label, money

COLUMNS = ("draw_id", "draw_name", "day", "position", "winner", "card", "amount", "kind",
           "add_on", "letter_no", "state", "ref", "detail")  # fmt: skip
TOTAL_COLUMNS = ("by", "draw_id", "draw_name", "day", "kind", "amount")
MONEY_DETAIL = frozenset({"buy_back"})  # detail values in minor units
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


def _names(stage: StageDesk, cards: Sequence[str]) -> dict[str, str]:
    """Each winner's name, shortened (as screens show it), by card: the letter's, else
    (a prize with no letter: a qualifying spot) the floor's player profile."""
    out = {x.winner_card: x.winner_name for x in stage.prizes.letters()}
    floor = stage.tickets.floor
    for card in cards:
        named = out.get(card, card) != card
        prof = floor.profile(card) if floor is not None and not named else None
        if prof is not None:
            out[card] = prof.display_name
    # a name that is the card itself (no profile when the letter was issued) is not shown
    return {c: "" if n == c else short_name(n) for c, n in out.items()}


def report(desk: Prizes, now: datetime, site_name: str, tz: str) -> dict[str, Any]:
    stage, led = desk.stage, desk.ledger
    got = rows(desk, now)
    names = _names(stage, [r.card for r in got])
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
        "by_kind": totals(got, lambda r: r.kind),
        "by_draw": kind_totals(got, lambda r: r.draw_id),  # draw -> kind -> total
        "by_day": kind_totals(got, lambda r: "" if r.day is None else r.day.isoformat()),
        "draws": {r.draw_id: _draw_name(stage, r.draw_id) for r in got},
        "safe": {
            "value": led.safe_value if led.started else None,
            "ever_cracked": led.ever_cracked,
            "shared": led.shared,
            "history": history,
        },
        "uncollected": [p for p in shown if p["state"] in UNCOLLECTED],
        "csv": "/api/prizes/report.csv",
        "totals_csv": "/api/prizes/report-totals.csv",
        "page": "/prizes/report",
    }


def _draw_name(stage: StageDesk, draw_id: str) -> str:
    sd = stage.draws.get(draw_id)
    return sd.draw.name if sd is not None else draw_id


def _shown(r: PrizeRow, stage: StageDesk, names: Mapping[str, str]) -> dict[str, Any]:
    return {
        **r.to_dict(),
        "draw_name": _draw_name(stage, r.draw_id),
        "winner": names.get(r.card, ""),
        "card": mask_card(r.card),
    }


def _rand(cents: int) -> str:
    return f"{cents / 100:.2f}"


def detail_text(detail: Mapping[str, Any], money_text: Callable[[int], str] = _rand) -> str:
    """A prize's detail in one cell: 'buy_back=310000.00; vehicle=Sedan' (a value not
    given, such as no buy-back taken, is left out)."""
    parts = []
    for k, v in sorted(detail.items()):
        if v is None:
            continue
        shown = money_text(v) if k in MONEY_DETAIL and isinstance(v, int) else str(v)
        parts.append(f"{k}={shown}")
    return "; ".join(parts)


def _csv(columns: Sequence[str], rows: Sequence[Mapping[str, str]]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, lineterminator="\r\n", extrasaction="ignore")
    w.writeheader()
    for row in rows:
        w.writerow({k: _cell(row.get(k, "")) for k in columns})
    return buf.getvalue()


def report_csv(prizes: Sequence[Mapping[str, Any]]) -> str:
    """The prizes as CSV (RFC 4180, a header first), one prize line a row; amounts in
    rand with two decimals, the detail as `name=value` pairs (the buy-back in rand)."""
    rows = []
    for p in prizes:
        row = {k: "" if p.get(k) is None else str(p[k]) for k in COLUMNS}
        row["amount"] = _rand(int(p["amount"]))
        row["detail"] = detail_text(p.get("detail") or {})
        rows.append(row)
    return _csv(COLUMNS, rows)


def report_totals_csv(rep: Mapping[str, Any]) -> str:
    """The totals as CSV: one row per kind (`by` = kind), per draw and kind (`draw`) and
    per day and kind (`day`); amounts in rand with two decimals."""
    draws: Mapping[str, str] = rep["draws"]
    day_of = {p["draw_id"]: p["day"] or "" for p in rep["prizes"]}
    rows = [{"by": "kind", "kind": k, "amount": _rand(v)} for k, v in rep["by_kind"].items()]
    for draw_id, kinds in rep["by_draw"].items():
        rows += [{"by": "draw", "draw_id": draw_id, "draw_name": draws.get(draw_id, draw_id),
                  "day": day_of.get(draw_id, ""), "kind": k, "amount": _rand(v)}
                 for k, v in kinds.items()]  # fmt: skip
    for day, kinds in rep["by_day"].items():
        rows += [{"by": "day", "day": day, "kind": k, "amount": _rand(v)} for k, v in kinds.items()]
    return _csv(TOTAL_COLUMNS, rows)


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

    def by_kind(d: Mapping[str, Mapping[str, int]], label: str, names: Mapping[str, str]) -> str:
        body = [(names.get(k, k) or "-", kind_label(kind), money(v))
                for k, kinds in d.items() for kind, v in kinds.items()]  # fmt: skip
        return table((label, "kind", "total"), body)

    def prize_text(p: Mapping[str, Any]) -> str:
        detail = detail_text(p.get("detail") or {}, money)
        text = f"{money(p['amount'])} {kind_label(p['kind'])}"
        return f"{text} ({detail})" if detail else text

    safe = rep["safe"]
    history = [(h["at"][:16].replace("T", " "), h["what"], money(h["change"]), money(h["value"]))
               for h in safe["history"]]  # fmt: skip
    open_ = [(p["letter_no"] or "", p["draw_name"], p["winner"], p["card"], prize_text(p),
              p["state"]) for p in rep["uncollected"]]  # fmt: skip
    kinds = [(kind_label(k), money(v)) for k, v in rep["by_kind"].items()]
    value = "not started" if safe["value"] is None else money(safe["value"])
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Prize report</title>
<link rel="stylesheet" href="/static/prizes-report.css"></head><body>
<h1>Prize report: {escape(rep["site"])}</h1>
<p class="meta">Generated {escape(rep["generated_at"][:16].replace("T", " "))}
({escape(rep["timezone"])}); {len(rep["prizes"])} prize line(s); the digit safe: {value}
{"(cracked at least once)" if safe["ever_cracked"] else ""}. Print it from the browser.</p>
<h2>Totals by kind</h2>{table(("kind", "total"), kinds)}
<h2>Prizes per day</h2>{by_kind(rep["by_day"], "day", {})}
<h2>Prizes per draw</h2>{by_kind(rep["by_draw"], "draw", rep["draws"])}
<h2>The digit safe's history</h2>{table(("when", "draw or reason", "change", "value"), history)}
<h2>Not collected yet</h2>{table(("letter", "draw", "winner", "card", "prize", "state"), open_)}
</body></html>
"""

"""raps/report_views.py and raps/dispatch_views.py without a browser: a real session's
journal records (drawn, verified, awarded, a staff no-show, the claim timer's no-show,
a void after verification, a redraw, close) turned into the dispatch history's "who
resolved, when" and the end-of-session report's rows, CSV and totals."""

from __future__ import annotations

import csv
import io
from datetime import datetime, timedelta

from raps.dispatch_views import actor_text, pick_acts, resolution, with_resolutions
from raps.redact import announced_name, mask_card, short_name
from raps.report_views import COLUMNS, prize_totals, report_csv, report_rows, session_acts
from raps.session_views import session_summary
from selector.records import Actor, Record
from selector.session import DrawSession, Prize, PrizeKind
from tests.builders import SAST
from tests.test_session_rules import (
    SLOTS,
    TABLES,
    Handheld,
    fill_floor,
    open_session,
    session_floor,
)

SUPERVISOR = Actor("sam", "admin")


def a_session() -> tuple[DrawSession, dict[str, datetime]]:
    """Six picks: #1 verified then awarded (by a supervisor), #2 a staff no-show, #3 the
    claim timer's no-show, #4 verified then voided, #5 and #6 (redraws) still pending."""
    floor, ev = session_floor()
    fill_floor(floor, ev)
    s, hh = open_session(floor, seed=bytes(32))
    at = {}
    for kind in (SLOTS, SLOTS, TABLES, SLOTS):
        s.draw(hh.cmd(after=5), kind)
    at["verify1"] = (c := hh.cmd(after=10)).at
    s.verify(c, 1)
    s.no_show(hh.cmd(after=1), 2)
    s.verify(hh.cmd(after=1), 4)
    at["award1"] = (c := hh.cmd(after=20, actor=SUPERVISOR)).at
    s.award(c, 1, Prize(150_000, PrizeKind.PLUS_PLAY, "E-17"))
    at["void4"] = (c := hh.cmd(after=1)).at
    s.void(c, 4, "=HYPERLINK(1)")
    at["timer"] = hh.now + timedelta(seconds=120)
    s.expire(at["timer"])  # #3 (and nothing verified) runs out of claim time
    s.draw(hh.cmd(after=1), SLOTS)
    s.draw(hh.cmd(after=1), TABLES)
    return s, at


def test_pick_acts_follow_each_pick_from_draw_to_its_last_outcome() -> None:
    s, at = a_session()
    acts = pick_acts(s.records)
    assert sorted(acts) == [1, 2, 3, 4, 5, 6]
    one = acts[1]
    assert one.drawn is not None and one.drawn.type == "pick.drawn"
    # resolved is the first record out of "pending"; the outcome the latest one
    assert one.resolved is not None and one.resolved.type == "pick.verified"
    assert one.resolved.at == at["verify1"]
    assert one.outcome is not None and one.outcome.type == "pick.awarded"
    assert one.outcome.actor == SUPERVISOR
    four = acts[4]
    assert four.resolved and four.resolved.type == "pick.verified"
    assert four.outcome and four.outcome.type == "pick.voided" and four.outcome.at == at["void4"]
    assert acts[3].resolved and acts[3].resolved.actor == Actor("system", "timer")
    assert acts[5].resolved is None and acts[5].outcome is None  # still pending
    # records of other kinds and without a pick number are passed over
    noise = [Record("session.opened", "S1", at["timer"], SUPERVISOR, {}),
             Record("pick.verified", "S1", at["timer"], SUPERVISOR, {"pick": "x"})]  # fmt: skip
    assert pick_acts(noise) == {}


def test_actor_text_names_people_and_the_claim_timer() -> None:
    assert actor_text(Actor("ann", "marketing")) == "ann (marketing)"
    assert actor_text(Actor("system", "timer")) == "claim timer"
    assert actor_text(Actor("system", "exclusion")) == "system (exclusion)"
    assert actor_text(Actor("system", "x"), {"by": "claim_timer"}) == "claim timer"


def test_the_dispatch_history_gets_when_and_who_resolved_each_pick() -> None:
    s, at = a_session()
    view = with_resolutions(session_summary(s, None), s.records)
    by = {p["pick"]: p for p in view["picks"]}
    assert by[1]["resolved_at"] == at["verify1"].isoformat()
    assert by[1]["resolved_by"] == "ann (marketing)"  # the verify, not the later award
    assert by[3]["resolved_by"] == "claim timer"
    # the claim timer's no-show counts from the claim deadline, whenever the tick came
    assert datetime.fromisoformat(by[3]["resolved_at"]) == datetime.fromisoformat(by[3]["deadline"])
    assert (by[5]["resolved_at"], by[5]["resolved_by"]) == (None, None)
    assert resolution(None) == {"resolved_at": None, "resolved_by": None}
    # the screens' own fields are untouched: masked card, first name and initial
    assert all(p["card"].startswith("*") for p in view["picks"])


def test_report_rows_have_every_pick_with_times_outcome_who_and_prize() -> None:
    s, at = a_session()
    rows = report_rows(s.records, "Africa/Johannesburg")
    assert [r["pick"] for r in rows] == ["1", "2", "3", "4", "5", "6"]
    assert all(tuple(r) == COLUMNS for r in rows)
    one, two, three, four, five, six = rows
    assert (one["outcome"], one["prize_amount"], one["prize_kind"], one["envelope"]) == (
        "awarded", "1500.00", "plus_play", "E-17")  # fmt: skip
    assert one["outcome_by"] == "sam (admin)" and one["resolved_by"] == "ann (marketing)"
    assert datetime.fromisoformat(one["resolved_at"]) == at["verify1"]
    assert datetime.fromisoformat(one["outcome_at"]) == at["award1"]
    assert one["drawn_at"].endswith("+02:00")  # the site's time zone
    assert two["outcome"] == "no_show" and two["resolved_by"] == "ann (marketing)"
    assert three["outcome"] == "no_show" and three["resolved_by"] == "claim timer"
    assert (four["outcome"], four["void_reason"]) == ("void", "=HYPERLINK(1)")
    assert four["resolved_by"] == "ann (marketing)"  # verified first, voided later
    assert five["outcome"] == six["outcome"] == "pending"
    assert (five["attempt"], five["slot"]) == ("1", "2")  # the redraw of slot 2
    assert six["pool"] == "tables" and six["attempt"] == "1"
    acts = pick_acts(s.records)
    for r in rows:  # never a full card number or a surname
        drawn = acts[int(r["pick"])].drawn
        assert drawn is not None
        assert r["card"] == mask_card(drawn.data["card"]) != drawn.data["card"]
        assert r["winner"] == short_name(drawn.data["display_name"])
    assert prize_totals(rows) == {"plus_play": 150_000}


def test_the_report_csv_is_rfc4180_and_never_a_formula() -> None:
    s, _ = a_session()
    rows = report_rows(s.records, "Africa/Johannesburg")
    text = report_csv(rows)
    assert text.startswith(",".join(COLUMNS) + "\r\n")
    back = list(csv.DictReader(io.StringIO(text)))
    assert [r["pick"] for r in back] == [r["pick"] for r in rows]
    # a cell starting with = + - @ gets a leading quote: a spreadsheet never runs it
    assert back[3]["void_reason"] == "'=HYPERLINK(1)"
    assert report_csv([]) == ",".join(COLUMNS) + "\r\n"


def test_session_acts_say_who_opened_and_closed_and_when() -> None:
    floor, ev = session_floor()
    fill_floor(floor, ev)
    hh = Handheld()
    s, hh = open_session(floor, seed=bytes(32), hh=hh)
    opened = session_acts(s.records, "Africa/Johannesburg")
    assert opened["opened_by"] == "ann (marketing)" and opened["closed_at"] == ""
    c = hh.cmd(after=60, actor=SUPERVISOR)
    s.close(c)
    acts = session_acts(s.records, "Africa/Johannesburg")
    assert acts["closed_by"] == "sam (admin)"
    assert datetime.fromisoformat(acts["closed_at"]) == c.at.astimezone(SAST)


def test_announced_name_follows_the_promotions_setting() -> None:
    assert announced_name("Thandi  Mokoena", "full") == "Thandi Mokoena"
    assert announced_name("Thandi Mokoena", "first") == "Thandi"
    assert announced_name("Thandi Zanele Mokoena", "first_initial") == "Thandi M."
    assert announced_name("Cher", "first_initial") == "Cher"
    assert announced_name("", "full") == ""

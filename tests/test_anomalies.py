"""selector.anomalies: the NOTE and ANOMALY lines `raps verify` prints beside a session
that verifies (issue 17 item 4).

The honest session of tests/test_verify.py has every human decision (a staff no-show,
two claim-timer no-shows, voids with reasons, a forced close); each test checks the
exact lines, then changes one thing an honest session does not show.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from selector.anomalies import session_report
from selector.session import DrawSession
from tests.test_verify import Recs, as_json, honest_session


@pytest.fixture(scope="module")
def honest() -> DrawSession:
    return honest_session()


@pytest.fixture
def recs(honest: DrawSession) -> Recs:
    return as_json(honest.records)


def test_notes_name_every_void_and_no_show_with_who_and_why(recs: Recs) -> None:
    rep = session_report(recs)
    assert rep.notes == [
        "pick 2 no-show at 2026-04-25T12:00:30+02:00 by ann (marketing), 5 s after the draw",
        "pick 4 voided at 2026-04-25T12:00:50+02:00 by ann (marketing): 'wrong seat announced'",
        "pick 6 no-show at 2026-04-25T12:02:40+02:00 by the claim timer, 90 s after the draw",
        "pick 7 no-show at 2026-04-25T12:02:45+02:00 by the claim timer, 90 s after the draw",
        "pick 8 voided at 2026-04-25T12:03:01+02:00 by ann (marketing): "
        "'ID does not match the card'",
        "pick 10 voided at 2026-04-25T12:03:21+02:00 by ann (marketing): 'session closed'",
    ]
    # the one thing an honest session with a hasty no-show shows: the no-show itself
    assert rep.anomalies == [
        "pick 2 marked a no-show by ann (marketing) 5 s after the draw, before its 90 s to "
        "present ran out (85 s left)"
    ]


def test_time_going_backwards(recs: Recs) -> None:
    i = next(i for i, r in enumerate(recs) if r["type"] == "pick.verified")
    before = datetime.fromisoformat(recs[i - 1]["at"])
    recs[i]["at"] = (before - timedelta(minutes=3)).isoformat()
    found = [a for a in session_report(recs).anomalies if "went backwards" in a]
    assert found == [
        "pick.verified at 2026-04-25T11:57:10+02:00 is before the record it follows "
        "(2026-04-25T12:00:10+02:00): the journal's time went backwards"
    ]


def test_a_rehearsal_flag_change(recs: Recs) -> None:
    i = next(i for i, r in enumerate(recs) if r["type"] == "pick.awarded")
    recs[i]["data"]["rehearsal"] = True
    found = [a for a in session_report(recs).anomalies if "rehearsal" in a]
    assert found == [
        "pick.awarded at 2026-04-25T12:00:20+02:00 says rehearsal=True, the session "
        "opened with rehearsal=False"
    ]


def test_a_session_left_open(recs: Recs) -> None:
    open_ = [r for r in recs if r["type"] != "session.closed"]
    end = datetime.fromisoformat(open_[-1]["at"]) + timedelta(hours=2)
    assert session_report(open_, journal_end=end).anomalies[-1] == (
        "the session is still open at the end of the journal (2026-04-25T14:03:21+02:00)"
    )
    # without the journal's end: the session's own last record
    assert session_report(open_).anomalies[-1].endswith("(2026-04-25T12:03:21+02:00)")


def test_a_live_session_open_after_its_window(recs: Recs) -> None:
    ends = datetime.fromisoformat("2026-04-25T12:01:00+02:00")
    closed_late = (
        "closed at 2026-04-25T12:03:21+02:00, 2 min after its window ended "
        "(2026-04-25T12:01:00+02:00): it stayed open past its window"
    )
    assert session_report(recs, ends=ends).anomalies[-1] == closed_late
    assert closed_late not in session_report(recs, ends=ends + timedelta(hours=1)).anomalies
    open_ = [r for r in recs if r["type"] != "session.closed"]
    later = ends + timedelta(hours=1)
    assert session_report(open_, ends=ends, journal_end=later).anomalies[-1] == (
        "the session is still open at the end of the journal (2026-04-25T13:01:00+02:00), "
        "past its window's end (2026-04-25T12:01:00+02:00)"
    )


def test_a_rehearsal_has_no_window(recs: Recs) -> None:
    for r in recs:
        r["data"]["rehearsal"] = True
    ends = datetime.fromisoformat("2026-04-25T12:01:00+02:00")
    assert not [a for a in session_report(recs, ends=ends).anomalies if "window" in a]


def test_unreadable_times_are_skipped_not_raised(recs: Recs) -> None:
    recs[3]["at"] = "yesterday"
    recs[4]["at"] = "2026-04-25T12:00:20"  # no offset: not the daemon's
    recs[-1]["at"] = "later"
    rep = session_report(recs, ends=datetime.fromisoformat("2026-04-25T12:01:00+02:00"))
    assert len(rep.notes) == 6  # records 3 and 4 (a verify, an award) make no notes
    assert not [a for a in rep.anomalies if "window" in a or "still open" in a]


def test_a_report_that_cannot_be_read_is_named_not_raised(recs: Recs) -> None:
    """A naive claim deadline (no offset: not the daemon's) makes the no-show check
    compare naive and aware times: raps verify names it instead of crashing."""
    from raps.audit import Report, _note_report

    drawn = next(r for r in recs if r["type"] == "pick.drawn" and r["data"]["pick"] == 2)
    drawn["data"]["deadline"] = "2026-04-25T12:01:55"
    rep = Report()
    _note_report(rep, "S", recs, None, None)
    assert rep.anomalies["S"][0].startswith("the records cannot be read for the report: ")

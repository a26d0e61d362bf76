"""Proxies for ticket draws (003 rules 11-12, 000 rules 15-17): the form's deadline, one
proxy per member, one member per proxy, a proxy who also plays, retries and replay."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from selector.records import Actor, Record
from selector.session import Command, CommandConflict
from selector.tickets.draw_rules import DocumentType
from selector.tickets.proxies import (
    NOMINATED,
    WITHDRAWN,
    ProxyBook,
    ProxyConflict,
    ProxyReason,
    ProxyRefused,
    proxy_deadline,
)

SAST = ZoneInfo("Africa/Johannesburg")
DRAW = "queen-2026-04-25"
DRAW_AT = datetime(2026, 4, 25, 21, 0, tzinfo=SAST)  # 003: Queen tier at 21h00
DEADLINE = proxy_deadline(DRAW_AT)  # 20:45
EARLY = datetime(2026, 4, 25, 14, 0, tzinfo=SAST)
DESK = Actor("nomsa", "rewards")
US = timedelta(microseconds=1)
PLAYING = {"M1", "M2", "M3", "P9"}  # cards with entries in the draw's bin


def cmd(command_id: str, at: datetime = EARLY) -> Command:
    return Command(command_id, DESK, at)


def nominate(
    book: ProxyBook,
    command_id: str,
    member: str = "M1",
    name: str = "Sipho Dlamini",
    document: str = "sa_id",
    last_digits: str = "087",
    at: datetime = EARLY,
    **kw: Any,
) -> Any:
    kw.setdefault("participants", PLAYING)
    kw.setdefault("deadline", DEADLINE)
    kw.setdefault("draw_id", DRAW)
    return book.nominate(
        cmd(command_id, at), member=member, name=name, document=document,
        last_digits=last_digits, **kw,
    )  # fmt: skip


def refused(reason: ProxyReason, fn: Callable[[], Any]) -> ProxyRefused:
    with pytest.raises(ProxyRefused) as info:
        fn()
    assert info.value.reason == reason
    assert info.value.reason.value in str(info.value)
    return info.value


def test_deadline_is_fifteen_minutes_before_the_draw() -> None:
    assert proxy_deadline(DRAW_AT) == datetime(2026, 4, 25, 20, 45, tzinfo=SAST) == DEADLINE
    assert proxy_deadline(DRAW_AT, 30) == datetime(2026, 4, 25, 20, 30, tzinfo=SAST)


def test_a_nomination_is_recorded_with_its_fields() -> None:
    book = ProxyBook()
    n = nominate(book, "c1", name="  Sipho Dlamini ", document=DocumentType.SA_ID)
    assert n.member == "M1" and n.name == "Sipho Dlamini" and n.document is DocumentType.SA_ID
    assert n.last_digits == "087" and n.proxy_card is None and n.barred_card is None
    assert book.proxy_for(DRAW, "M1") == n
    assert book.proxy_for(DRAW, "M2") is None
    assert book.proxy_for("another-draw", "M1") is None
    assert book.nominations(DRAW) == [n]
    assert book.barred(DRAW) == {}
    [rec] = book.records
    assert rec.type == NOMINATED
    assert rec.session_id == f"proxies:{DRAW}"
    assert rec.at == EARLY and rec.actor == DESK
    assert rec.data == {
        "command_id": "c1", "draw_id": DRAW, "member": "M1", "name": "Sipho Dlamini",
        "document": "sa_id", "last_digits": "087", "proxy_card": None, "barred_card": None,
        "deadline": DEADLINE.isoformat(),
    }  # fmt: skip


def test_the_deadline_itself_is_accepted_one_microsecond_later_is_not() -> None:
    book = ProxyBook()
    assert nominate(book, "c1", at=DEADLINE).at == DEADLINE
    e = refused(
        ProxyReason.AFTER_DEADLINE,
        lambda: nominate(book, "c2", member="M2", last_digits="11", at=DEADLINE + US),
    )
    assert "20:45" in e.detail
    assert len(book.records) == 1


def test_forms_are_taken_from_the_opening_time_when_one_is_given() -> None:
    book = ProxyBook()
    opens = datetime(2026, 4, 25, 8, 0, tzinfo=SAST)  # 000 rule 15: from 08h00
    refused(ProxyReason.BEFORE_OPEN, lambda: nominate(book, "c1", at=opens - US, opens=opens))
    assert nominate(book, "c2", at=opens, opens=opens).at == opens


def test_one_proxy_per_member_per_draw_and_withdraw_frees_it() -> None:
    book = ProxyBook()
    first = nominate(book, "c1")
    refused(
        ProxyReason.MEMBER_HAS_PROXY,
        lambda: nominate(book, "c2", name="Lerato Khumalo", last_digits="55"),
    )
    out = book.withdraw(cmd("c3"), draw_id=DRAW, member="M1", deadline=DEADLINE)
    assert out == first
    assert book.proxy_for(DRAW, "M1") is None
    assert book.records[-1].type == WITHDRAWN
    assert book.records[-1].data == {"command_id": "c3", "draw_id": DRAW, "member": "M1"}
    second = nominate(book, "c4", name="Lerato Khumalo", last_digits="55")
    assert book.nominations(DRAW) == [second]


def test_withdrawing_needs_a_proxy_and_the_deadline() -> None:
    book = ProxyBook()
    refused(
        ProxyReason.NO_PROXY,
        lambda: book.withdraw(cmd("w0"), draw_id=DRAW, member="M1", deadline=DEADLINE),
    )
    nominate(book, "c1")
    refused(
        ProxyReason.AFTER_DEADLINE,
        lambda: book.withdraw(cmd("w1", DEADLINE + US), draw_id=DRAW, member="M1",
                              deadline=DEADLINE),
    )  # fmt: skip
    book.withdraw(cmd("w2", DEADLINE), draw_id=DRAW, member="M1", deadline=DEADLINE)
    assert book.proxy_for(DRAW, "M1") is None


def test_a_proxy_represents_one_participant_per_draw() -> None:
    book = ProxyBook()
    nominate(book, "c1", member="M1", name="Sipho Dlamini", last_digits="087")
    # the same person, however the desk spells the name's spacing and case (003 rule 12)
    refused(
        ProxyReason.PROXY_REPRESENTS_ANOTHER,
        lambda: nominate(book, "c2", member="M2", name="  SIPHO   dlamini", last_digits="087"),
    )
    # another person: other last digits, or another document type
    nominate(book, "c3", member="M2", name="Sipho Dlamini", last_digits="088")
    nominate(book, "c4", member="M3", name="Sipho Dlamini", document="passport")
    # the same draw elsewhere is another draw
    nominate(book, "c5", member="M1", draw_id="king-2026-04-25")
    assert len(book.nominations(DRAW)) == 3


def test_a_member_proxy_is_known_by_their_card_too() -> None:
    book = ProxyBook()
    nominate(book, "c1", member="M1", proxy_card="X7")
    refused(
        ProxyReason.PROXY_REPRESENTS_ANOTHER,
        lambda: nominate(book, "c2", member="M2", name="Other Name", last_digits="99",
                         proxy_card="X7"),
    )  # fmt: skip


def test_a_proxy_freed_by_a_withdrawal_may_stand_for_another() -> None:
    book = ProxyBook()
    nominate(book, "c1", member="M1")
    book.withdraw(cmd("c2"), draw_id=DRAW, member="M1", deadline=DEADLINE)
    assert nominate(book, "c3", member="M2").member == "M2"


def test_bar_entry_accepts_a_playing_proxy_and_bars_their_card() -> None:
    book = ProxyBook(ProxyConflict.BAR_ENTRY)
    n = nominate(book, "c1", member="M1", proxy_card="P9")
    assert n.barred_card == "P9"
    assert book.records[-1].data["barred_card"] == "P9"
    assert book.barred(DRAW) == {"P9": "proxy_for:M1"}
    book.withdraw(cmd("c2"), draw_id=DRAW, member="M1", deadline=DEADLINE)
    assert book.barred(DRAW) == {}


def test_refuse_nomination_refuses_a_playing_proxy() -> None:
    book = ProxyBook(ProxyConflict.REFUSE_NOMINATION)
    refused(ProxyReason.PROXY_IS_PARTICIPANT, lambda: nominate(book, "c1", proxy_card="P9"))
    assert book.records == [] and book.barred(DRAW) == {}
    # a draw may pass its own policy, whatever the book's default
    assert nominate(book, "c2", proxy_card="P9", conflict="bar_entry").barred_card == "P9"


def test_a_member_proxy_without_entries_is_barred_should_they_enter_later() -> None:
    for policy in ProxyConflict:
        book = ProxyBook(policy)
        n = nominate(book, "c1", member="M1", proxy_card="X7")  # X7 has no entries
        assert n.barred_card is None
        assert book.barred(DRAW) == {"X7": "proxy_for:M1"}


def test_the_member_must_be_a_participant() -> None:
    book = ProxyBook()
    refused(ProxyReason.MEMBER_NOT_PARTICIPANT, lambda: nominate(book, "c1", member="NOPE"))
    # participation may come as a callable (the daemon's view of the bin)
    n = nominate(book, "c2", member="NOPE", participants=lambda card: card == "NOPE")
    assert n.member == "NOPE"


def test_a_member_is_not_their_own_proxy_and_a_proxy_does_not_nominate() -> None:
    book = ProxyBook()
    refused(ProxyReason.PROXY_IS_MEMBER, lambda: nominate(book, "c1", proxy_card="M1"))
    nominate(book, "c2", member="M1", proxy_card="M2")  # M2 stands for M1, barred
    refused(
        ProxyReason.MEMBER_IS_PROXY,
        lambda: nominate(book, "c3", member="M2", name="Lerato Khumalo", last_digits="55"),
    )


@pytest.mark.parametrize(
    ("document", "digits"),
    [
        ("id_card", "087"),
        ("", "087"),
        ("sa_id", "7"),
        ("sa_id", "12345"),
        ("sa_id", "8001015009087"),  # a whole ID number is never taken
        ("sa_id", "08a"),
        ("passport", "١٢٣"),  # digits, but not ASCII ones
        ("passport", " 087"),
    ],
)
def test_bad_documents_are_refused(document: str, digits: str) -> None:
    book = ProxyBook()
    refused(ProxyReason.BAD_DOCUMENT, lambda: nominate(book, "c1", document=document,
                                                       last_digits=digits))  # fmt: skip
    assert book.records == []


@pytest.mark.parametrize("name", ["", "   ", "x" * 81, "Sipho\nDlamini", "Sipho\u202e"])
def test_bad_names_are_refused(name: str) -> None:
    refused(ProxyReason.BAD_NAME, lambda: nominate(ProxyBook(), "c1", name=name))


def test_bad_cards_are_refused() -> None:
    refused(ProxyReason.BAD_CARD, lambda: nominate(ProxyBook(), "c1", member="M 1"))
    refused(ProxyReason.BAD_CARD, lambda: nominate(ProxyBook(), "c1", proxy_card=""))


def test_longest_name_and_document_kinds_are_accepted() -> None:
    book = ProxyBook()
    n = nominate(book, "c1", name="x" * 80, document="driving_licence", last_digits="1234")
    assert n.document is DocumentType.DRIVING_LICENCE


def test_a_retry_returns_the_first_answer_and_records_nothing() -> None:
    book = ProxyBook()
    first = nominate(book, "c1")
    again = nominate(book, "c1", at=DEADLINE + timedelta(hours=1))  # late, but a retry
    assert again == first and len(book.records) == 1
    assert book.answered("c1") and not book.answered("c2")
    w = book.withdraw(cmd("w1"), draw_id=DRAW, member="M1", deadline=DEADLINE)
    assert book.withdraw(cmd("w1"), draw_id=DRAW, member="M1", deadline=DEADLINE) == w
    assert len(book.records) == 2
    # the nomination's retry still answers what it first answered
    assert nominate(book, "c1") == first
    assert book.proxy_for(DRAW, "M1") is None


def test_a_command_id_reused_for_another_request_is_an_error() -> None:
    book = ProxyBook()
    nominate(book, "c1")
    with pytest.raises(CommandConflict):
        nominate(book, "c1", member="M2")
    with pytest.raises(CommandConflict):
        book.withdraw(cmd("c1"), draw_id=DRAW, member="M1", deadline=DEADLINE)
    assert len(book.records) == 1


def test_a_refused_command_can_be_retried_once_the_rule_allows_it() -> None:
    book = ProxyBook()
    refused(ProxyReason.MEMBER_NOT_PARTICIPANT, lambda: nominate(book, "c1", member="M4"))
    assert nominate(book, "c1", member="M4", participants={"M4"}).member == "M4"


def test_naive_times_are_an_error() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        nominate(ProxyBook(), "c1", at=datetime(2026, 4, 25, 14, 0))


def _journal(records: list[Record]) -> list[Record]:
    """As the daemon restores them: through the journal's JSON."""
    return [Record.from_dict(json.loads(json.dumps(r.to_dict()))) for r in records]


def test_replay_rebuilds_the_book() -> None:
    book = ProxyBook(ProxyConflict.BAR_ENTRY)
    nominate(book, "c1", member="M1", proxy_card="P9")
    nominate(book, "c2", member="M2", name="Lerato Khumalo", last_digits="55")
    nominate(book, "c3", member="M3", name="Thabo Nkosi", last_digits="12",
             document="passport")  # fmt: skip
    book.withdraw(cmd("c4"), draw_id=DRAW, member="M2", deadline=DEADLINE)
    nominate(book, "c5", member="M1", draw_id="king-2026-04-25")
    other = Record("draw.opened", f"draw:{DRAW}", EARLY, DESK, {})  # skipped by replay
    again = ProxyBook.replay([other, *_journal(book.records)])
    assert again.nominations(DRAW) == book.nominations(DRAW)
    assert again.nominations("king-2026-04-25") == book.nominations("king-2026-04-25")
    assert again.barred(DRAW) == book.barred(DRAW) == {"P9": "proxy_for:M1"}
    assert again.records == []  # replayed records are not made again
    # retries after a restart still answer the same, and conflicts are still caught
    assert nominate(again, "c1", proxy_card="P9") == book.proxy_for(DRAW, "M1")
    w = again.withdraw(cmd("c4"), draw_id=DRAW, member="M2", deadline=DEADLINE)
    assert w.name == "Lerato Khumalo"
    with pytest.raises(CommandConflict):
        nominate(again, "c3", member="M2")
    assert again.records == []


def test_apply_refuses_records_that_cannot_follow() -> None:
    book = ProxyBook()
    nominate(book, "c1")
    rec = book.records[0]
    with pytest.raises(ValueError, match="already has a proxy"):
        ProxyBook.replay([rec, rec])
    with pytest.raises(ValueError, match="not a proxy record"):
        ProxyBook().apply(Record("draw.opened", "x", EARLY, DESK, {}))
    with pytest.raises(ValueError, match="malformed"):
        ProxyBook().apply(Record(NOMINATED, "x", EARLY, DESK, {"draw_id": DRAW}))
    withdrawn = Record(WITHDRAWN, rec.session_id, EARLY, DESK,
                       {"command_id": "w", "draw_id": DRAW, "member": "M1"})  # fmt: skip
    with pytest.raises(ValueError, match="no proxy to withdraw"):
        ProxyBook().apply(withdrawn)

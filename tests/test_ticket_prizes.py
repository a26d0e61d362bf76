"""The prize ledger (003 rules 11, 13-14, 16; 000 rules 16, 19-21): letters issued once
per award, collected by the winner within 15 days, overdue ones listed, replay."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from selector.records import Actor, Record
from selector.session import Command, CommandConflict
from selector.tickets.announcing import announcement, describe, money, prize_text
from selector.tickets.draw_rules import GOLD_REEF_ADD_ONS, DocumentType, PrizeKind, PrizeSpec
from selector.tickets.prizes import (
    COLLECTED,
    LETTER,
    Letter,
    LetterAddOn,
    PrizeLedger,
    PrizeLine,
    PrizeReason,
    PrizeRefused,
)
from selector.tickets.records import verification_code

SAST = ZoneInfo("Africa/Johannesburg")
DRAW = "queen-2026-04-25"
SESSION = f"draw:{DRAW}"
AWARDED = datetime(2026, 4, 25, 21, 4, 30, tzinfo=SAST)
DUE = AWARDED + timedelta(days=15)
HOST = Actor("thandi", "marketing")
DESK = Actor("nomsa", "rewards")
DIGEST = "5f" * 32
US = timedelta(microseconds=1)
TYPED = {"kind": "typed", "text": "Z. Ngcobo"}
DRAWN = {"kind": "drawn", "sha256": "AB" * 32}


def issue(ledger: PrizeLedger, command_id: str = "i1", pick: int = 1, **kw: Any) -> Letter:
    args: dict[str, Any] = {
        "draw_id": DRAW, "draw_name": "Queen tier 21h00", "session_id": SESSION,
        "pick": pick, "winner_card": "100200300", "winner_name": "Zoë Ngcobo",
        "prizes": [(500_000, "cash")], "awarded_at": AWARDED, "digest_hex": DIGEST,
    }  # fmt: skip
    args.update(kw)
    return ledger.issue(Command(command_id, HOST, args["awarded_at"]), **args)


def collect(
    ledger: PrizeLedger, letter_no: str, command_id: str = "k1", at: datetime = AWARDED, **kw: Any
) -> Letter:
    args: dict[str, Any] = {"document": "sa_id", "last_digits": "087", "signature": TYPED}
    args.update(kw)
    return ledger.collect(Command(command_id, DESK, at), letter_no, **args)


def refused(reason: PrizeReason, fn: Callable[[], Any]) -> PrizeRefused:
    with pytest.raises(PrizeRefused) as info:
        fn()
    assert info.value.reason == reason
    return info.value


def test_a_letter_is_issued_with_every_field() -> None:
    ledger = PrizeLedger()
    letter = issue(
        ledger, add_ons=[{"id": "app", "name": "Tsogo Sun app", "prizes": [[50_000, "cash"]]}]
    )
    assert letter.letter_no == "PL-000001"
    assert letter.verification_code == verification_code(DIGEST)
    assert letter.collect_by == DUE == datetime(2026, 5, 10, 21, 4, 30, tzinfo=SAST)
    assert letter.collect_by.tzinfo is not None
    assert letter.prizes == (PrizeLine(500_000, "cash"),)
    assert letter.add_ons == (LetterAddOn("app", "Tsogo Sun app", (PrizeLine(50_000, "cash"),)),)
    assert letter.total == 550_000
    assert not letter.collected and letter.collected_at is None
    assert ledger.letter("PL-000001") == letter == ledger.by_pick(SESSION, 1)
    [rec] = ledger.records
    assert rec.type == LETTER and rec.session_id == "prizes" and rec.actor == HOST
    assert rec.data == {
        "command_id": "i1", "draw_id": DRAW, "letter_no": "PL-000001",
        "verification_code": verification_code(DIGEST), "digest": DIGEST,
        "draw_name": "Queen tier 21h00", "session_id": SESSION, "pick": 1,
        "winner_card": "100200300", "winner_name": "Zoë Ngcobo",
        "prizes": [{"amount": 500_000, "kind": "cash"}],
        "add_ons": [{"id": "app", "name": "Tsogo Sun app",
                     "prizes": [{"amount": 50_000, "kind": "cash"}]}],
        "currency": "ZAR", "awarded_at": AWARDED.isoformat(), "collect_days": 15,
        "collect_by": DUE.isoformat(),
    }  # fmt: skip
    json.dumps(rec.to_dict())
    json.dumps(letter.to_dict())


def test_letter_numbers_are_the_ledgers_sequence() -> None:
    ledger = PrizeLedger()
    nos = [issue(ledger, f"i{n}", pick=n).letter_no for n in range(1, 4)]
    assert nos == ["PL-000001", "PL-000002", "PL-000003"]
    assert [x.letter_no for x in ledger.letters()] == nos


def test_a_prize_is_recorded_once_whatever_the_command_id() -> None:
    ledger = PrizeLedger()
    first = issue(ledger, "i1")
    assert issue(ledger, "i1") == first  # a retry
    assert issue(ledger, "another", prizes=[(1, "cash")]) == first  # re-issued after restart
    assert len(ledger.records) == 1
    with pytest.raises(CommandConflict):
        issue(ledger, "i1", pick=2)
    refused(PrizeReason.PICK_HAS_LETTER, lambda: issue(ledger, "i9", winner_card="999"))
    assert len(ledger.records) == 1


def test_add_ons_come_as_the_draw_rules_define_them() -> None:
    letter = issue(
        PrizeLedger(), prizes=[PrizeSpec(2_000_000, PrizeKind.CASH)], add_ons=GOLD_REEF_ADD_ONS
    )
    assert letter.prizes == (PrizeLine(2_000_000, "cash"),)
    assert [a.id for a in letter.add_ons] == ["app", "online"]
    assert letter.add_ons[1].prizes == (PrizeLine(50_000, "plus_play"),)
    assert letter.total == 2_100_000


@pytest.mark.parametrize(
    "kw",
    [
        {"prizes": []},
        {"prizes": [(-1, "cash")]},
        {"prizes": [(True, "cash")]},
        {"prizes": [(100, "")]},
        {"prizes": [(100,)]},
        {"add_ons": [{"id": "app", "name": "x", "prizes": []}]},
        {"add_ons": ["app"]},
        {"collect_days": 0},
        {"pick": 0},
        {"winner_name": ""},
        {"winner_name": "Zoë\nNgcobo"},
        {"winner_card": "100 200"},
        {"draw_name": ""},
    ],
)
def test_bad_letters_are_refused(kw: dict[str, Any]) -> None:
    ledger = PrizeLedger()
    refused(PrizeReason.BAD_PRIZE, lambda: issue(ledger, **kw))
    assert ledger.records == [] and ledger.letters() == []


def test_a_bad_digest_or_a_naive_time_is_an_error() -> None:
    with pytest.raises(ValueError):
        issue(PrizeLedger(), digest_hex="zz")
    with pytest.raises(ValueError, match="timezone-aware"):
        issue(PrizeLedger(), awarded_at=datetime(2026, 4, 25, 21, 0))


def test_the_winner_collects_and_signs() -> None:
    ledger = PrizeLedger()
    no = issue(ledger).letter_no
    letter = collect(ledger, no, at=AWARDED + timedelta(days=2), document=DocumentType.PASSPORT,
                     last_digits="4321", signature=DRAWN)  # fmt: skip
    assert letter.collected and letter.collected_at == AWARDED + timedelta(days=2)
    c = letter.collection
    assert c is not None and c.by == "nomsa" and c.document is DocumentType.PASSPORT
    assert c.signature.kind == "drawn" and c.signature.value == "ab" * 32
    rec = ledger.records[-1]
    assert rec.type == COLLECTED and rec.session_id == "prizes" and rec.actor == DESK
    assert rec.data == {
        "command_id": "k1", "draw_id": DRAW, "letter_no": no, "document": "passport",
        "last_digits": "4321", "signature": {"kind": "drawn", "sha256": "ab" * 32},
        "by": "nomsa",
    }  # fmt: skip
    assert ledger.collected() == [letter]


def test_collect_by_itself_is_accepted_one_microsecond_later_is_forfeit() -> None:
    ledger = PrizeLedger()
    on_time, late = issue(ledger, "i1", pick=1), issue(ledger, "i2", pick=2)
    assert collect(ledger, on_time.letter_no, "k1", at=DUE).collected
    e = refused(PrizeReason.EXPIRED, lambda: collect(ledger, late.letter_no, "k2", at=DUE + US))
    assert "forfeit" in e.detail
    assert ledger.overdue(DUE + US) == [late]


def test_collect_days_is_configurable() -> None:
    letter = issue(PrizeLedger(), collect_days=30)
    assert letter.collect_by == AWARDED + timedelta(days=30)


def test_refusals_at_the_desk() -> None:
    ledger = PrizeLedger()
    no = issue(ledger).letter_no
    refused(PrizeReason.UNKNOWN_LETTER, lambda: collect(ledger, "PL-999999"))
    refused(PrizeReason.PROXY_CANNOT_COLLECT, lambda: collect(ledger, no, collected_by="proxy"))
    refused(PrizeReason.BAD_COLLECTOR, lambda: collect(ledger, no, collected_by="cousin"))
    bad: list[tuple[PrizeReason, dict[str, Any]]] = [
        (PrizeReason.BAD_DOCUMENT, {"document": "id_card"}),
        (PrizeReason.BAD_DOCUMENT, {"last_digits": "8001015009087"}),  # never a whole ID
        (PrizeReason.BAD_DOCUMENT, {"last_digits": "7"}),
        (PrizeReason.NO_SIGNATURE, {"signature": {}}),
        (PrizeReason.NO_SIGNATURE, {"signature": None}),
        (PrizeReason.NO_SIGNATURE, {"signature": {"kind": "typed", "text": "  "}}),
        (PrizeReason.NO_SIGNATURE, {"signature": {"kind": "drawn", "sha256": ""}}),
        (PrizeReason.BAD_SIGNATURE, {"signature": {"kind": "drawn", "sha256": "not-hex"}}),
        (PrizeReason.BAD_SIGNATURE, {"signature": {"kind": "ink"}}),
        (PrizeReason.BAD_SIGNATURE, {"signature": {"kind": "typed", "text": "x" * 121}}),
    ]
    for i, (reason, kw) in enumerate(bad):
        with pytest.raises(PrizeRefused) as info:
            collect(ledger, no, f"bad{i}", **kw)
        assert info.value.reason == reason, kw
    assert len(ledger.records) == 1  # only the letter: every refusal recorded nothing
    collect(ledger, no, "k1")
    refused(PrizeReason.ALREADY_COLLECTED, lambda: collect(ledger, no, "k2"))


def test_a_collection_retry_returns_the_same_letter() -> None:
    ledger = PrizeLedger()
    no = issue(ledger).letter_no
    first = collect(ledger, no, "k1", at=DUE)
    # the desk's retry after a lost reply, even once the window has closed
    assert collect(ledger, no, "k1", at=DUE + timedelta(days=1)) == first
    assert len(ledger.records) == 2
    with pytest.raises(CommandConflict):
        collect(ledger, no, "k1", last_digits="99")
    with pytest.raises(CommandConflict):
        collect(ledger, no, "i1")  # the letter's own command id


def test_awaiting_overdue_and_collected() -> None:
    ledger = PrizeLedger()
    a = issue(ledger, "i1", pick=1)
    b = issue(ledger, "i2", pick=2, awarded_at=AWARDED + timedelta(days=1))
    c = issue(ledger, "i3", pick=3)
    collect(ledger, c.letter_no, "k3")
    assert ledger.awaiting(AWARDED) == [a, b]
    assert ledger.overdue(AWARDED) == []
    assert ledger.awaiting(DUE) == [a, b]  # collect_by itself is still on time
    assert ledger.overdue(DUE + US) == [a]
    assert ledger.awaiting(DUE + US) == [b]
    later = DUE + timedelta(days=2)
    assert ledger.overdue(later) == [a, b] and ledger.awaiting(later) == []
    assert [x.letter_no for x in ledger.collected()] == [c.letter_no]


def _journal(records: list[Record]) -> list[Record]:
    return [Record.from_dict(json.loads(json.dumps(r.to_dict()))) for r in records]


def test_replay_rebuilds_the_ledger() -> None:
    ledger = PrizeLedger()
    a = issue(ledger, "i1", pick=1, add_ons=GOLD_REEF_ADD_ONS)
    b = issue(ledger, "i2", pick=2, winner_name="Thabo Nkosi", prizes=[(0, "car")])
    collect(ledger, a.letter_no, "k1", signature=DRAWN)
    other = Record("draw.opened", SESSION, AWARDED, HOST, {})
    again = PrizeLedger.replay([other, *_journal(ledger.records)])
    assert again.letters() == ledger.letters()
    assert [x.to_dict() for x in again.letters()] == [x.to_dict() for x in ledger.letters()]
    assert again.awaiting(DUE) == ledger.awaiting(DUE) == [ledger.letter(b.letter_no)]
    assert again.records == []
    # numbering goes on, retries still answer, a prize is still recorded once
    assert issue(again, "i3", pick=3).letter_no == "PL-000003"
    assert issue(again, "zzz", pick=1) == ledger.letter(a.letter_no)
    assert collect(again, a.letter_no, "k1", signature=DRAWN) == ledger.letter(a.letter_no)
    with pytest.raises(CommandConflict):
        collect(again, b.letter_no, "k1")
    assert [r.type for r in again.records] == [LETTER]


def test_apply_refuses_records_that_cannot_follow() -> None:
    ledger = PrizeLedger()
    no = issue(ledger).letter_no
    collect(ledger, no)
    letter_rec, collected_rec = ledger.records
    with pytest.raises(ValueError, match="already has a letter"):
        PrizeLedger.replay([letter_rec, letter_rec])
    with pytest.raises(ValueError, match="unknown or already collected"):
        PrizeLedger.replay([collected_rec])
    with pytest.raises(ValueError, match="unknown or already collected"):
        PrizeLedger.replay([letter_rec, collected_rec, collected_rec])
    with pytest.raises(ValueError, match="not a prize record"):
        PrizeLedger().apply(Record("draw.opened", "x", AWARDED, HOST, {}))
    with pytest.raises(ValueError, match="malformed"):
        PrizeLedger().apply(Record(LETTER, "prizes", AWARDED, HOST, {"letter_no": "PL-1"}))


@pytest.mark.parametrize(
    ("minor", "currency", "text"),
    [
        (500_000, "ZAR", "R5,000.00"),
        (0, "ZAR", "R0.00"),
        (5, "ZAR", "R0.05"),
        (50_000, "zar", "R500.00"),
        (123_456_789, "ZAR", "R1,234,567.89"),
        (-150, "ZAR", "-R1.50"),
        (100, "USD", "USD 1.00"),
    ],
)
def test_money(minor: int, currency: str, text: str) -> None:
    assert money(minor, currency) == text


def test_prize_texts() -> None:
    assert money(500_000) == "R5,000.00"
    assert describe(PrizeLine(500_000, "cash")) == "R5,000.00 cash"
    assert describe(PrizeLine(50_000, "plus_play")) == "R500.00 +Play"
    assert describe(PrizeLine(0, "car")) == "car"
    lines = [PrizeLine(500_000, "cash"), PrizeLine(50_000, "cash"), PrizeLine(50_000, "plus_play")]
    assert prize_text(lines[:1]) == "R5,000.00 cash"
    assert prize_text(lines) == "R5,000.00 cash, R500.00 cash and R500.00 +Play"
    assert prize_text([]) == ""


def test_the_announcement() -> None:
    text = announcement("Thandi M.", "R5,000.00 cash", "the main stage")
    assert text == (
        "Congratulations Thandi M., you have won R5,000.00 cash. Please come to the main "
        "stage with your ID and your ticket receipt within 90 seconds."
    )
    assert announcement("Thandi M.", "a car", "the Rewards Desk", seconds=120).endswith(
        "the Rewards Desk with your ID and your ticket receipt within 120 seconds."
    )

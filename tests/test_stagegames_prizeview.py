"""One view of every prize (issue 19): the letters' lines and add-ons, and the stage
entries no letter pays (a qualifying spot), each once, with its collection state."""

from __future__ import annotations

from datetime import timedelta

from selector.session import Command
from selector.stagegames.game import Award, PrizeKind
from selector.stagegames.ledger import StageLedger
from selector.stagegames.prizeview import kind_totals, prize_rows, totals
from selector.tickets.prizes import PrizeLedger
from tests.test_stagegames_kit import HOST, SAT, cmd

DRAW = "sat-cash-2025-10-04-2100"


def test_every_prize_is_one_row_with_its_letter_and_state() -> None:
    stage = StageLedger()
    stage.start(cmd())
    stage.offer_safe(cmd(), DRAW, f"stage:safe:{DRAW}", stage.safe_value)
    keep = Award(DRAW, 1, "6001", 300_000, PrizeKind.CASH, "podium:safe")
    crack = Award(DRAW, 1, "6001", 10_000_000, PrizeKind.SAFE, "safe")
    spot = Award("car-1500", 2, "6002", 0, PrizeKind.CAR_SPOT, "car-spots:c#2")
    for a in (keep, crack, spot):
        stage.post(cmd(), a, SAT)
    letters = PrizeLedger()
    at = cmd().at
    letter = letters.issue(
        Command("letter-1", HOST, at), draw_id=DRAW, draw_name="Sat 21:00",
        session_id=f"draw:{DRAW}", pick=1, winner_card="6001", winner_name="Zoe N",
        prizes=[(300_000, "cash"), (10_000_000, "safe")],
        add_ons=[{"id": "app", "name": "App", "prizes": [(50_000, "cash")]}],
        awarded_at=at, digest_hex="ab" * 32,
    )  # fmt: skip
    rows = prize_rows(letters.letters(), stage.entries, at, lambda s, p: 1, lambda d: SAT)
    assert [(r.kind, r.amount, r.add_on, r.letter_no, r.state) for r in rows] == [
        ("cash", 300_000, None, letter.letter_no, "awaiting"),
        ("safe", 10_000_000, None, letter.letter_no, "awaiting"),
        ("cash", 50_000, "app", letter.letter_no, "awaiting"),
        ("car_spot", 0, None, None, "no_letter"),
    ]
    assert rows[1].ref == "safe" and rows[3].position == 2 and rows[0].day == SAT
    assert totals(rows, lambda r: r.kind) == {"cash": 350_000, "safe": 10_000_000, "car_spot": 0}
    later = prize_rows(letters.letters(), stage.entries, at + timedelta(days=16),
                       lambda s, p: 1, lambda d: SAT)  # fmt: skip
    assert later[0].state == "overdue" and later[3].state == "no_letter"


def test_the_car_keeps_its_vehicle_and_buy_back_and_totals_stay_per_kind() -> None:
    stage = StageLedger()
    stage.start(cmd())
    detail = (("buy_back", 31_000_000), ("vehicle", "Sedan"))
    car = Award("car-2100", 2, "6003", 38_000_000, PrizeKind.CAR, "car:x:Sedan", detail)
    cash = Award("car-2100", 1, "6004", 500_000, PrizeKind.CASH, "car-spots:c#1")
    for a in (car, cash):
        stage.post(cmd(), a, SAT)
    letters = PrizeLedger()
    at = cmd().at
    letters.issue(
        Command("letter-car", HOST, at), draw_id="car-2100", draw_name="Car 21:00",
        session_id="stage:car:car-2100", pick=2, winner_card="6003", winner_name="Ann B",
        prizes=[(38_000_000, "car")], add_ons=[], awarded_at=at, digest_hex="cd" * 32,
    )  # fmt: skip
    rows = prize_rows(letters.letters(), stage.entries, at, lambda s, p: p, lambda d: SAT)
    assert [(r.kind, r.detail) for r in rows] == [("car", detail), ("cash", ())]
    assert rows[0].to_dict()["detail"] == {"buy_back": 31_000_000, "vehicle": "Sedan"}
    assert kind_totals(rows, lambda r: r.draw_id) == {
        "car-2100": {"car": 38_000_000, "cash": 500_000}
    }

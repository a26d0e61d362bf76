"""The 21:00 digit safe (000 rules 124-126) and the 20 Dec vault share (rules 135-138),
with the progressive's property tests: the ledger's value always equals an independent
model of the safe (a running balance: base, +R20,000 per uncracked safe draw, paid out
and reset on a crack, emptied by the vault share), is never negative, and replaying the
records gives the same ledger."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from selector.stagegames.derive import below
from selector.stagegames.game import Award, DrawGame, GameState, PrizeKind, StageError
from selector.stagegames.ledger import ProgressiveRules, StageLedger
from selector.stagegames.safe import SafeGame, SafeOdds
from selector.stagegames.verify import verify_game, verify_ledger
from tests.test_stagegames_kit import SAT, cards, cmd, seed

W = cards(5)
PRIZES = [1_000_000, 800_000, 700_000, 600_000, 500_000]
DEC20 = date(2025, 12, 20)


def _safe(label: str, odds: SafeOdds | None = None, value: int = 10_000_000) -> SafeGame:
    g = SafeGame(f"safe:{label}", f"sat-{label}-2100", SAT, W, PRIZES, value, odds)
    g.open(cmd(), seed(label))
    return g


def _code(g: SafeGame, position: int) -> str:
    return g.code_text(below(seed(g.game_id[5:]), g.game_id, f"safe-code|{position}", 1000))


def test_rule_125_declining_keeps_the_podium_prize() -> None:
    g = _safe("r125-decline")
    for card in W:
        g.decline(cmd(), card)
    assert g.state is GameState.FINISHED and not g.cracked
    assert [a.amount for a in g.awards()] == PRIZES


def test_rule_125_trying_forfeits_two_thousand() -> None:
    g = _safe("r125-try")
    rec = g.attempt(cmd(), W[0])
    assert rec.data["forfeit"] == 200_000 and rec.data["keep"] == 800_000
    with pytest.raises(StageError, match="turn"):
        g.decline(cmd(), W[1])  # W[0] is still at the safe
    wrong = next(f"{c:03d}" for c in range(1000) if f"{c:03d}" != _code(g, 1))
    g.guess(cmd(), W[0], wrong)
    with pytest.raises(StageError, match="already tried"):
        g.guess(cmd(), W[0], wrong)
    with pytest.raises(StageError, match="3 digits"):
        g.guess(cmd(), W[0], "12")
    assert g.awards()[0].amount == 800_000


def test_rule_126_cracking_wins_the_safe_and_ends_the_tries_of_the_draw() -> None:
    g = _safe("r126-crack", value=12_000_000)
    g.decline(cmd(), W[0])
    g.attempt(cmd(), W[1])
    rec = g.guess(cmd(), W[1], _code(g, 2))
    assert rec.data["correct"] and g.cracked_by == 2
    with pytest.raises(StageError, match="cracked"):
        g.attempt(cmd(), W[2])
    for card in W[2:]:
        g.decline(cmd(), card)
    safe = [a for a in g.awards() if a.kind is PrizeKind.SAFE]
    assert safe == [Award(g.draw_id, 2, W[1], 12_000_000, PrizeKind.SAFE, f"safe:{g.game_id}")]
    g.close(cmd())
    assert verify_game(g.records) == []


def test_the_odds_are_configured_and_stated() -> None:
    assert SafeOdds(digits=3, tries=3).text() == "a 3-digit code, 3 tries: 3 in 1,000 per attempt"
    assert SafeOdds("chance", numerator=1, denominator=50).text() == "1 in 50 per attempt"
    g = _safe("odds")
    assert g.records[0].data["config"]["odds_text"].startswith("a 3-digit code")
    with pytest.raises(StageError):
        SafeOdds(digits=2, tries=100)
    with pytest.raises(StageError):
        SafeOdds("chance", numerator=0, denominator=10)


def test_a_chance_safe_is_realised_by_the_committed_seed() -> None:
    odds = SafeOdds("chance", numerator=1, denominator=4)
    g = _safe("chance", odds)
    g.attempt(cmd(), W[0])
    with pytest.raises(StageError, match="spin"):
        g.guess(cmd(), W[0], "123")
    rec = g.spin(cmd(), W[0])
    value = below(seed("chance"), g.game_id, "safe-chance|1", 4)
    assert rec.data["value"] == value and rec.data["cracked"] == (value < 1)


def _ledger(rules: ProgressiveRules | None = None) -> StageLedger:
    led = StageLedger(rules)
    led.start(cmd())
    return led


SAFE = DrawGame.PODIUM_SAFE.value


def _offer(led: StageLedger, draw: str) -> None:
    led.offer_safe(cmd(), draw, f"stage:safe:{draw}", led.safe_value)


def _no_crack(led: StageLedger, draw: str) -> None:
    _offer(led, draw)
    led.safe_draw_closed(cmd(), draw, SAFE, cracked=False)


def test_rule_126_base_one_hundred_thousand_plus_twenty_per_2100_draw_not_won() -> None:
    led = _ledger()
    assert led.safe_value == 10_000_000
    _no_crack(led, "sat-cash-2025-10-04-2100")
    assert led.safe_value == 12_000_000
    with pytest.raises(StageError, match="already offered"):
        _offer(led, "sat-cash-2025-10-04-2100")
    with pytest.raises(StageError, match="already closed"):
        led.safe_draw_closed(cmd(), "sat-cash-2025-10-04-2100", SAFE, cracked=False)
    _offer(led, "sat-cash-2025-11-01-2100")
    with pytest.raises(StageError, match="ledger says"):
        led.safe_draw_closed(cmd(), "sat-cash-2025-11-01-2100", SAFE, cracked=True)  # not paid
    led.safe_draw_closed(cmd(), "sat-cash-2025-11-01-2100", SAFE, cracked=False)
    assert led.safe_value == 14_000_000


def test_rule_126_only_a_2100_draw_that_offered_the_safe_grows_it() -> None:
    """Wednesday and Thursday draws, 15:00, 19:00, the car draws and the 21:30 vault
    share leave the safe as it is; so does a 21:00 draw whose safe was never offered."""
    led = _ledger()
    for draw, kind in (
        ("wed-2025-10-01-2000", DrawGame.PODIUM),
        ("queen-2025-10-02-2000", DrawGame.PODIUM),
        ("sat-cash-2025-10-04-1500", DrawGame.PODIUM_BONUS),
        ("sat-cash-2025-10-04-1900", DrawGame.PADDLES),
        ("car-2025-10-25-1500", DrawGame.CAR_SPOTS),
        ("car-2025-10-25-2100", DrawGame.CAR_FINAL),
        ("sat-cash-2025-12-20-2130", DrawGame.VAULT_SHARE),
    ):
        with pytest.raises(StageError, match="does not grow the safe"):
            led.safe_draw_closed(cmd(), draw, kind.value, cracked=False)
    with pytest.raises(StageError, match="not offered"):
        led.safe_draw_closed(cmd(), "sat-cash-2025-10-04-2100", SAFE, cracked=False)
    with pytest.raises(StageError, match="not offered"):
        led.post(cmd(), Award("d9", 1, "6000001", 10_000_000, PrizeKind.SAFE, "safe:x"), SAT)
    assert led.safe_value == 10_000_000 and len(led.records) == 1
    # configured otherwise (grows_at), the 19:00 paddles draws count too
    wide = _ledger(ProgressiveRules(grows_at=(SAFE, DrawGame.PADDLES.value)))
    wide.safe_draw_closed(cmd(), "sat-cash-2025-10-04-1900", DrawGame.PADDLES.value, False)
    assert wide.safe_value == 12_000_000
    # the offer states the value the ledger holds, nothing else
    with pytest.raises(StageError, match="holds"):
        led.offer_safe(cmd(), "d1", "stage:safe:d1", 9_000_000)


def test_rule_126_a_cracked_draw_adds_nothing_and_the_safe_starts_again_at_base() -> None:
    led = _ledger()
    _no_crack(led, "d1")
    _offer(led, "d2")
    with pytest.raises(StageError, match="holds"):
        led.post(cmd(), Award("d2", 2, "6000002", 10_000_000, PrizeKind.SAFE, "safe:x"), SAT)
    led.post(cmd(), Award("d2", 2, "6000002", 12_000_000, PrizeKind.SAFE, "safe:x"), SAT)
    assert led.safe_value == 10_000_000 and led.ever_cracked  # reset to the base
    rec = led.safe_draw_closed(cmd(), "d2", SAFE, cracked=True)
    assert rec.data["increment"] == 0 and led.safe_value == 10_000_000


def test_rule_135_138_an_uncracked_vault_is_shared_among_five() -> None:
    led = _ledger()
    for i in range(3):
        _no_crack(led, f"d{i}")
    value = led.safe_value
    assert value == 16_000_000 and not led.ever_cracked
    with pytest.raises(StageError, match="5 winners"):
        led.share_vault(cmd(), "sat-cash-2025-12-20-2130", DEC20, W[:4])
    entries = led.share_vault(cmd(), "sat-cash-2025-12-20-2130", DEC20, W)
    assert [e.award.amount for e in entries] == [3_200_000] * 5
    assert sum(e.award.amount for e in entries) == value and led.safe_value == 0
    with pytest.raises(StageError, match="shared"):
        _offer(led, "d9")


def test_rule_135_no_vault_share_once_the_safe_was_cracked() -> None:
    led = _ledger()
    _offer(led, "d1")
    led.post(cmd(), Award("d1", 1, "6000009", 10_000_000, PrizeKind.SAFE, "safe:x"), SAT)
    with pytest.raises(StageError, match="cracked"):
        led.share_vault(cmd(), "v", DEC20, W)


def test_rule_135_no_vault_share_while_a_2100_draw_has_the_safe_in_play() -> None:
    """20 Dec: the 21:00 safe is offered before the 21:30 share; sharing under it would
    close the safe its winners are playing for (its draw could then never close)."""
    led = _ledger()
    _offer(led, "sat-cash-2025-12-20-2100")
    assert led.in_play() == ["sat-cash-2025-12-20-2100"]
    with pytest.raises(StageError, match="in play at draw sat-cash-2025-12-20-2100"):
        led.share_vault(cmd(), "sat-cash-2025-12-20-2130", DEC20, W)
    assert not led.shared and led.entries == []
    led.safe_draw_closed(cmd(), "sat-cash-2025-12-20-2100", SAFE, cracked=False)
    assert led.in_play() == []
    shares = led.share_vault(cmd(), "sat-cash-2025-12-20-2130", DEC20, W)
    assert sum(e.award.amount for e in shares) == 12_000_000  # the 21:00 miss grew it first


def test_a_second_award_under_the_same_key_is_refused_unless_it_is_the_same() -> None:
    led = _ledger()
    first = Award("d1", 3, "6000003", 700_000, PrizeKind.CASH, "podium:d1#3")
    entry = led.post(cmd(), first, SAT)
    assert led.post(cmd(), first, SAT) == entry  # a re-post: the first entry, nothing new
    made = len(led.records)
    for other, day in (
        (Award("d1", 3, "6000003", 800_000, PrizeKind.CASH, "podium:d1#3"), SAT),
        (Award("d1", 3, "6000004", 700_000, PrizeKind.CASH, "podium:d1#3"), SAT),
        (first, DEC20),
    ):
        with pytest.raises(StageError, match="already records"):
            led.post(cmd(), other, day)
    assert len(led.records) == made and led.entries == [entry]


def test_a_vault_remainder_goes_a_cent_each_to_the_earliest() -> None:
    led = _ledger(ProgressiveRules(base=1_003))
    shares = [e.award.amount for e in led.share_vault(cmd(), "v", DEC20, W)]
    assert shares == [201, 201, 201, 200, 200]


def test_every_ledger_record_carries_its_command_id_and_a_retry_changes_nothing() -> None:
    led = _ledger()
    c = cmd()
    led.offer_safe(c, "d1", "stage:safe:d1", led.safe_value)
    led.offer_safe(c, "d1", "stage:safe:d1", led.safe_value)  # the same command again
    assert [r.type for r in led.records] == ["stage.safe_base", "stage.safe_offered"]
    assert all(r.data["command_id"] for r in led.records)
    again = StageLedger.replay(led.records)  # the rules come from the start record
    assert again.rules == led.rules and again.offered("d1")
    made = len(again.records)
    again.offer_safe(c, "d1", "stage:safe:d1", led.safe_value)  # answered from the journal
    assert len(again.records) == made


# -- the progressive, by property, against an independent model -----------------------

_op = st.one_of(
    st.tuples(st.just("draw"), st.booleans()),  # a 21:00 draw closes; True: cracked there
    st.tuples(st.just("cash"), st.integers(0, 2_000_000)),
    st.tuples(st.just("share"), st.just(0)),
    st.tuples(st.just("paddles"), st.just(0)),  # a 19:00 draw: never grows the safe
)


class _Safe:
    """The safe as a person with a notebook keeps it: one running balance."""

    def __init__(self) -> None:
        self.balance = 100_000_00
        self.open = True
        self.paid: list[int] = []

    def draw(self, cracked: bool) -> None:
        if not self.open:
            return
        if cracked:
            self.paid.append(self.balance)
            self.balance = 100_000_00  # starts again at the base
        else:
            self.balance += 20_000_00

    def share(self, ever_cracked: bool) -> None:
        if self.open and not ever_cracked:
            self.paid.append(self.balance)
            self.balance, self.open = 0, False


def _run(ops: list[tuple[str, object]]) -> tuple[StageLedger, _Safe]:
    led, model = _ledger(), _Safe()
    for n, (op, arg) in enumerate(ops):
        day = SAT + timedelta(days=7 * n)
        cracked_before = led.ever_cracked
        try:
            if op == "draw":
                _offer(led, f"d{n}")
                if arg:
                    a = Award(f"d{n}", 1, f"7{n:05d}", led.safe_value, PrizeKind.SAFE, f"s{n}")
                    led.post(cmd(), a, day)
                led.safe_draw_closed(cmd(), f"d{n}", SAFE, cracked=bool(arg))
            elif op == "cash":
                assert isinstance(arg, int)
                led.post(cmd(), Award(f"c{n}", 1, f"8{n:05d}", arg, PrizeKind.CASH, "p"), day)
            elif op == "paddles":
                led.safe_draw_closed(cmd(), f"p{n}", DrawGame.PADDLES.value, cracked=False)
            else:
                led.share_vault(cmd(), f"v{n}", day, [f"9{n:03d}{i}" for i in range(5)])
        except StageError:
            pass  # refused: nothing recorded
        if op == "draw":
            model.draw(bool(arg))
        elif op == "share":
            model.share(cracked_before)
        assert led.safe_value == model.balance >= 0
    return led, model


@settings(max_examples=150, deadline=None)
@given(st.lists(_op, max_size=25))
def test_the_value_always_equals_an_independent_model_of_the_safe(
    ops: list[tuple[str, object]],
) -> None:
    led, model = _run(ops)
    payouts = [e.award.amount for e in led.entries if e.award.kind in (PrizeKind.SAFE,)]
    shared = [e.award.amount for e in led.entries if e.award.kind is PrizeKind.VAULT_SHARE]
    assert payouts + ([sum(shared)] if shared else []) == model.paid
    again = StageLedger.replay(led.records)
    assert again.safe_value == led.safe_value
    assert [r.to_dict() for r in again.records] == [r.to_dict() for r in led.records]
    assert again.entries == led.entries
    ok, bad = verify_ledger([r.to_dict() for r in led.records])
    assert bad == [] and ok is not None and ok.safe_value == led.safe_value


def test_replay_refuses_a_changed_increment_or_payout() -> None:
    led = _ledger()
    _no_crack(led, "d1")
    _offer(led, "d2")
    led.post(cmd(), Award("d2", 1, "6000001", 12_000_000, PrizeKind.SAFE, "s"), SAT)
    recs = [r.to_dict() for r in led.records]
    recs[2]["data"]["increment"] = 4_000_000
    _, bad = verify_ledger(recs)
    assert bad and "record 2" in bad[0].message
    recs = [r.to_dict() for r in led.records]
    recs[4]["data"]["amount"] = 13_000_000
    assert verify_ledger(recs)[1]
    assert verify_ledger([r.to_dict() for r in led.records[:3]] * 2)[1]  # a repeated draw

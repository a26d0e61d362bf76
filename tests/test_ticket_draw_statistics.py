"""Statistical checks that ticket draws follow the exact law: each card in proportion to
its tickets, and a sequence of winners by successive removal.

How to read these tests (the same method as tests/test_statistics.py)
-------------------------------------------------------------------
- Every draw seed is derived deterministically (SHA-256 of a label and a counter), so
  every run sees exactly the same picks: no flakiness to tolerate, and a failure is a
  real change in the drawing code.
- Each fit test is a chi-square goodness-of-fit (scipy.stats.chisquare) of observed
  counts against the exact probabilities and fails when p < ALPHA = 1e-4.  There are
  three fit tests below, so with fresh random seeds the chance of any false alarm in a
  run would be below 3e-4 (< 1e-3).  Every cell's expected count is at least 5.
- Every fit test has a power check: a deliberately biased sampler, fed the same seeds at
  the same sample size, IS rejected by the same test at the same threshold, so no test
  passes because it is blind.
- Volume comes from `selector.fairness.ticket_index_v3` (derivation v3, a draw without a
  witness: a zero mix) and the reference
  `selector.bindigest.locate` directly; the full TicketDrawSession path is sampled at a
  smaller size and each of its draws must equal the direct computation, which ties the
  volume tests to the real code.
- The integer scaling is checked exhaustively, not statistically: every value of a
  16-bit source, fed once through `scale_to_index` and `locate`, gives each card exactly
  its share of the accepted values.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from datetime import timedelta
from functools import cache
from itertools import permutations

import pytest
from scipy.stats import chisquare

from selector.bindigest import bin_digest, locate
from selector.fairness import (
    NO_WITNESS,
    hmac_blocks,
    pick_message_v3,
    scale_to_index,
    ticket_index_v3,
)
from selector.tickets.draw_rules import DrawRules
from selector.tickets.draw_session import TicketDrawSession
from tests.test_ticket_draw_rules import DAY, Host

ALPHA = 1e-4

# sample sizes; the smallest expected count per cell in brackets
N_SINGLE = 30_000  # single picks over WEIGHTS (total 53)         [566]
N_SEQUENCE = 20_000  # ordered 5 of SEQ_BIN's 6 cards (720 cells)   [7.7]
N_SESSION = 3_000  # full TicketDrawSession first picks over WEIGHTS [56]
N_SESSION_SEQ = 400  # full five-winner draws, each equal to the direct computation

WEIGHTS = [1, 1, 2, 3, 5, 8, 13, 20]
BIN8: list[tuple[str, int]] = [(f"T{i}", w) for i, w in enumerate(WEIGHTS)]
SEQ_BIN: list[tuple[str, int]] = [("S0", 2), ("S1", 3), ("S2", 3), ("S3", 4), ("S4", 4), ("S5", 5)]
K = 5

Items = tuple[tuple[str, int], ...]
Sampler = Callable[[bytes, str], tuple[str, ...]]


def seed_of(label: str, i: int) -> bytes:
    """Reproducible, independent-looking 256-bit seeds."""
    return hashlib.sha256(f"raps-ticket-statistics/{label}/{i}".encode()).digest()


def session_id(i: int) -> str:
    return f"draw:stat-{i}"


def chi_square_p(observed: Counter[Hashable], law: dict[Hashable, float]) -> float:
    """p-value of observed counts against exact cell probabilities."""
    assert set(observed) <= set(law), set(observed) - set(law)
    assert abs(sum(law.values()) - 1) < 1e-9
    n = sum(observed.values())
    f_obs = [observed.get(cell, 0) for cell in law]
    f_exp = [n * p for p in law.values()]
    assert min(f_exp) >= 5, "chi-square needs expected counts of at least 5 per cell"
    return float(chisquare(f_obs, f_exp).pvalue)


def tally(sampler: Sampler, n: int, label: str) -> Counter[Hashable]:
    return Counter(sampler(seed_of(label, i), session_id(i)) for i in range(n))


def weighted_law(items: Sequence[tuple[str, int]]) -> dict[Hashable, float]:
    total = sum(w for _, w in items)
    return {(c,): w / total for c, w in items}


def successive_removal_law(items: Sequence[tuple[str, int]], k: int) -> dict[Hashable, float]:
    """Each ordered sequence of k distinct cards: prod w_i / (W - w_1 - ... - w_{i-1})."""
    weight = dict(items)
    total = sum(weight.values())
    law: dict[Hashable, float] = {}
    for seq in permutations(weight, k):
        p, left = 1.0, total
        for card in seq:
            p *= weight[card] / left
            left -= weight[card]
        law[seq] = p
    return law


# ------------------------------------------------------------- direct samplers


@cache
def digest_of(items: Items) -> str:
    return bin_digest(items)


def pick(seed: bytes, sid: str, number: int, attempt: int, items: Items) -> str:
    """One pick exactly as docs/fairness.md derives it (reference code only)."""
    total = sum(w for _, w in items)
    ticket, _ = ticket_index_v3(seed, sid, number, attempt, digest_of(items), NO_WITNESS, total)
    return items[locate(items, ticket)][0]


def fair_single(seed: bytes, sid: str) -> tuple[str, ...]:
    return (pick(seed, sid, 1, 0, tuple(BIN8)),)


def fair_sequence(seed: bytes, sid: str) -> tuple[str, ...]:
    """K winners, each a first attempt at its position, each removed before the next."""
    items = tuple(SEQ_BIN)
    won: list[str] = []
    for n in range(1, K + 1):
        card = pick(seed, sid, n, 0, items)
        won.append(card)
        items = tuple(x for x in items if x[0] != card)
    return tuple(won)


def first_block(seed: bytes, sid: str, items: Items) -> int:
    return next(hmac_blocks(seed, pick_message_v3(sid, 1, 0, digest_of(items), NO_WITNESS)))


def biased_short_word(seed: bytes, sid: str) -> tuple[str, ...]:
    """Bug: a 6-bit word reduced modulo the total (64 % 53 = 11: tickets 0..10 twice as
    likely), the modulo bias rejection sampling exists to prevent."""
    items = tuple(BIN8)
    return (items[locate(items, (first_block(seed, sid, items) & 63) % 53)][0],)


def biased_off_by_one(seed: bytes, sid: str) -> tuple[str, ...]:
    """Bug: tickets counted from 1 (every card's range shifted by one ticket): the first
    card can never win, the last wins one ticket more."""
    items = tuple(BIN8)
    ticket, _ = ticket_index_v3(seed, sid, 1, 0, digest_of(items), NO_WITNESS, 53)
    return (items[locate(items, min(ticket + 1, 52))][0],)


def biased_unweighted(seed: bytes, sid: str) -> tuple[str, ...]:
    """Bug: every card equally likely, whatever its tickets (the v1 law on a ticket bin)."""
    items = tuple(BIN8)
    return (items[first_block(seed, sid, items) % len(items)][0],)


def biased_neighbour_on_collision(seed: bytes, sid: str) -> tuple[str, ...]:
    """Bug: every pick over the whole bin; drawing an earlier winner gives the position to
    the next card not yet drawn (in canonical order), so neighbours gain."""
    items = tuple(SEQ_BIN)
    cards = [c for c, _ in items]
    won: list[str] = []
    for n in range(1, K + 1):
        i = cards.index(pick(seed, sid, n, 0, items))
        while cards[i] in won:
            i = (i + 1) % len(cards)
        won.append(cards[i])
    return tuple(won)


def biased_unweighted_redraws(seed: bytes, sid: str) -> tuple[str, ...]:
    """Bug: the first winner by tickets, the later ones uniform over the remaining cards."""
    items = tuple(SEQ_BIN)
    won = [pick(seed, sid, 1, 0, items)]
    for n in range(2, K + 1):
        rest = tuple(x for x in items if x[0] not in won)
        digest = digest_of(rest)
        block = next(hmac_blocks(seed, pick_message_v3(sid, n, 0, digest, NO_WITNESS)))
        won.append(rest[block % len(rest)][0])
    return tuple(won)


# ----------------------------------------------------------------- the tests


def test_single_picks_follow_the_tickets() -> None:
    """N_SINGLE = 30,000 first picks (each from its own seed) over tickets
    [1, 1, 2, 3, 5, 8, 13, 20]: chi-square against w / 53, 7 d.o.f., p < 1e-4 rejects."""
    counts = tally(fair_single, N_SINGLE, "single")
    assert len(counts) == len(BIN8)
    assert chi_square_p(counts, weighted_law(BIN8)) >= ALPHA, counts


@pytest.mark.parametrize("biased", [biased_short_word, biased_off_by_one, biased_unweighted])
def test_single_pick_test_rejects_a_biased_sampler(biased: Sampler) -> None:
    """Power: same seeds, same 30,000 picks, same threshold."""
    counts = tally(biased, N_SINGLE, "single")
    assert chi_square_p(counts, weighted_law(BIN8)) < ALPHA, counts


def test_ordered_winners_follow_the_successive_removal_law() -> None:
    """N_SEQUENCE = 20,000 draws of K = 5 winners from 6 cards with tickets
    [2, 3, 3, 4, 4, 5]: every one of the 720 ordered sequences has probability
    prod w_i / (W - sum of the earlier winners) (smallest expected count 7.7);
    chi-square, 719 d.o.f., p < 1e-4 rejects."""
    law = successive_removal_law(SEQ_BIN, K)
    assert min(law.values()) * N_SEQUENCE >= 5
    counts = tally(fair_sequence, N_SEQUENCE, "sequence")
    assert chi_square_p(counts, law) >= ALPHA


@pytest.mark.parametrize("biased", [biased_neighbour_on_collision, biased_unweighted_redraws])
def test_ordered_winners_test_rejects_a_biased_redraw(biased: Sampler) -> None:
    """Power: same seeds, same 20,000 draws, same threshold."""
    counts = tally(biased, N_SEQUENCE, "sequence")
    assert chi_square_p(counts, successive_removal_law(SEQ_BIN, K)) < ALPHA


# ------------------------------------------------------------ the full path


def session_first(seed: bytes, sid: str) -> tuple[str, ...]:
    s = TicketDrawSession(sid, sid.removeprefix("draw:"), "bin", DAY, DrawRules(winners=1))
    h = Host(s)
    h.open(dict(BIN8), seed=seed)
    return (h.draw().card,)


def test_first_picks_through_draw_sessions_follow_the_tickets() -> None:
    """N_SESSION = 3,000 real draws (open, draw) over the 8-card bin: each winner equals
    the direct computation, and the counts fit w / 53 (chi-square, p < 1e-4 rejects);
    the biased samplers are rejected at this sample size too."""
    counts = Counter[Hashable]()
    for i in range(N_SESSION):
        seed, sid = seed_of("session-first", i), session_id(i)
        cards = session_first(seed, sid)
        assert cards == fair_single(seed, sid)
        counts[cards] += 1
    law = weighted_law(BIN8)
    assert chi_square_p(counts, law) >= ALPHA, counts
    for biased in (biased_short_word, biased_off_by_one, biased_unweighted):
        assert chi_square_p(tally(biased, N_SESSION, "session-first"), law) < ALPHA, biased


def test_five_winner_draws_through_sessions_equal_the_direct_computation() -> None:
    """N_SESSION_SEQ = 400 real draws of 5 winners with a no-show (redraw into position 2,
    attempt 1) and a late entry before the fourth pick: every pick is exactly the one
    the reference computation gives over the bin as it stood."""
    for i in range(N_SESSION_SEQ):
        seed, sid = seed_of("session-sequence", i), session_id(i)
        s = TicketDrawSession(sid, f"stat-{i}", "bin", DAY, DrawRules(winners=5))
        h = Host(s)
        h.open(dict(SEQ_BIN), seed=seed)
        items = tuple(SEQ_BIN)
        script = [(1, 0, "present"), (2, 0, "no_show"), (3, 1, "present"), (4, 0, "present"),
                  (5, 0, "present"), (6, 0, "present")]  # fmt: skip
        for number, attempt, then in script:
            if number == 4:
                s.update_bin({"S9": 7})
                items = tuple(sorted((*items, ("S9", 7))))
            p = h.draw()
            assert (p.number, p.attempt) == (number, attempt)
            assert p.card == pick(seed, sid, number, attempt, items), (i, number)
            items = tuple(x for x in items if x[0] != p.card)
            if then == "present":
                h.present(p)
            else:
                h.now += timedelta(seconds=10)
                s.no_show(h.cmd(), p.number)
        assert [p.position for p in s.picks] == [1, 2, 2, 3, 4, 5]


# ---------------------------------------------------- exhaustive integer scaling


@pytest.mark.parametrize(
    "weights", [[1, 2], [1, 2, 3, 14], [1, 9, 90, 900], [1, 2, 3, 65_529]], ids=str
)
def test_every_16_bit_value_once_gives_each_card_exactly_its_tickets(weights: list[int]) -> None:
    """Fed every value of a 16-bit source once, `scale_to_index` accepts a multiple of
    the total (2^16 - 2^16 mod total), every ticket exactly equally often, so `locate`
    gives each card exactly its tickets' share: no bias, by construction."""
    total = sum(weights)
    items = [(f"W{i}", w) for i, w in enumerate(weights)]
    source = iter(range(1 << 16))
    tickets: Counter[int] = Counter()
    cards: Counter[str] = Counter()
    while True:
        try:
            t, _ = scale_to_index(total, source.__next__, 16)
        except StopIteration:
            break
        tickets[t] += 1
        cards[items[locate(items, t)][0]] += 1
    accepted = (1 << 16) - (1 << 16) % total
    assert sum(tickets.values()) == accepted and accepted % total == 0
    assert len(tickets) == total and set(tickets.values()) == {accepted // total}
    assert cards == {c: w * accepted // total for c, w in items}

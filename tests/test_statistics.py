"""Statistical checks that picks follow the exact law: uniform, and uniform again after
a no-show or a void, never "the next in the list".

How to read these tests
-----------------------
- Every session seed is derived deterministically (SHA-256 of a label and a counter), so
  every run sees exactly the same picks: a test that passes today passes tomorrow; there
  is no flakiness to tolerate, and a failure is a real change in the drawing code.
- Each test is a chi-square goodness-of-fit (scipy.stats.chisquare) of observed counts
  against the exact probabilities, and fails when p < ALPHA = 1e-4.  There are six such
  fit tests below, so if the picker were perfect and the seeds were fresh random draws,
  the chance of any false alarm in a run would be below 6e-4 (< 1e-3).
- Every fit test has a power check: a deliberately biased picker, fed the same seeds at
  the same sample size, IS rejected by the same test at the same threshold.  That proves
  each test can fail, i.e. that it is not passing because it is blind.
- Volume comes from calling the derivation directly (`selector.fairness.ticket_index_v3`,
  derivation v3 as a session without a witness draws: tens of thousands of picks, well
  under a second), and the full `DrawSession` path is sampled too, at a
  smaller size; the full-path tests also assert that each session's picks are exactly
  the ones the direct computation gives, which ties the volume tests to the real code.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from functools import cache
from itertools import permutations, product

import pytest
from scipy.stats import chisquare

from selector.bindigest import bin_digest
from selector.events import PoolKind
from selector.fairness import NO_WITNESS, hmac_blocks, pick_message_v3, ticket_index_v3
from selector.floor import Floor
from selector.promotion import SessionRules
from selector.session import DrawSession
from tests.builders import Events, command, raps_floor, seated_slot_player

ALPHA = 1e-4

# sample sizes (see the module docstring); expected count per cell in brackets
N_FIRST = 50_000  # first picks from a pool of 10          [5,000 per card]
N_REDRAW = 40_000  # (first, redraw) pairs, pool of 5       [2,000 per ordered pair]
N_SESSION = 6_000  # full DrawSession runs per test          [>= 100 per cell]

Picker = Callable[[bytes, str, Sequence[str]], tuple[str, ...]]


def seed_of(label: str, i: int) -> bytes:
    """Reproducible, independent-looking 256-bit seeds."""
    return hashlib.sha256(f"raps-statistics/{label}/{i}".encode()).digest()


def session_id(i: int) -> str:
    return f"2026-04-25-stat-{i}"


def chi_square_p(observed: Counter[Hashable], law: dict[Hashable, float]) -> float:
    """p-value of observed counts against exact cell probabilities."""
    assert set(observed) <= set(law), set(observed) - set(law)
    assert abs(sum(law.values()) - 1) < 1e-9
    n = sum(observed.values())
    f_obs = [observed.get(cell, 0) for cell in law]
    f_exp = [n * p for p in law.values()]
    assert min(f_exp) >= 5, "chi-square needs expected counts of at least 5 per cell"
    return float(chisquare(f_obs, f_exp).pvalue)


def tally(picker: Picker, pool: Sequence[str], n: int, label: str) -> Counter[Hashable]:
    return Counter(picker(seed_of(label, i), session_id(i), pool) for i in range(n))


def uniform_law(pool: Sequence[str]) -> dict[Hashable, float]:
    return {(c,): 1 / len(pool) for c in pool}


def without_replacement_law(pool: Sequence[str], draws: int) -> dict[Hashable, float]:
    """Each ordered sequence of distinct cards: 1 / (k (k-1) ... (k-draws+1))."""
    cells = list(permutations(pool, draws))
    return {cell: 1 / len(cells) for cell in cells}


def with_replacement_law(pool: Sequence[str], draws: int) -> dict[Hashable, float]:
    cells = list(product(pool, repeat=draws))
    return {cell: 1 / len(cells) for cell in cells}


# ----------------------------------------------------------------- pickers


@cache
def pool_digest(pool: tuple[str, ...]) -> str:
    """Derivation v3: the pool as a bin of weight 1 per card (the reference code)."""
    return bin_digest([(c, 1) for c in pool])


def draw(seed: bytes, sid: str, number: int, attempt: int, pool: Sequence[str]) -> str:
    """One pick exactly as the session makes it (docs/fairness.md, derivation v3)."""
    digest = pool_digest(tuple(pool))
    index, _ = ticket_index_v3(seed, sid, number, attempt, digest, NO_WITNESS, len(pool))
    return pool[index]


def fair_first(seed: bytes, sid: str, pool: Sequence[str]) -> tuple[str, ...]:
    return (draw(seed, sid, 1, 0, pool),)


def fair_redraw(seed: bytes, sid: str, pool: Sequence[str]) -> tuple[str, ...]:
    """Pick 1, a no-show (barred), then pick 2 = attempt 1 of the same slot over the rest."""
    first = draw(seed, sid, 1, 0, pool)
    second = draw(seed, sid, 2, 1, [c for c in pool if c != first])
    return first, second


def first_block(seed: bytes, sid: str, pool: Sequence[str]) -> int:
    msg = pick_message_v3(sid, 1, 0, pool_digest(tuple(pool)), NO_WITNESS)
    return next(hmac_blocks(seed, msg))


def biased_off_by_one(seed: bytes, sid: str, pool: Sequence[str]) -> tuple[str, ...]:
    """Bug: `% (n - 1)`, the last card of the pool can never win."""
    return (pool[first_block(seed, sid, pool) % (len(pool) - 1)],)


def biased_short_word(seed: bytes, sid: str, pool: Sequence[str]) -> tuple[str, ...]:
    """Bug: a 5-bit word reduced modulo n (32 % 10 = 2: the first two cards win 4/32,
    the others 3/32), the modulo bias rejection sampling exists to prevent."""
    return (pool[(first_block(seed, sid, pool) & 31) % len(pool)],)


def biased_next_in_list(seed: bytes, sid: str, pool: Sequence[str]) -> tuple[str, ...]:
    """Bug: after a no-show, the slot goes to the next card in the list."""
    first = draw(seed, sid, 1, 0, pool)
    return first, pool[(pool.index(first) + 1) % len(pool)]


def biased_skip_on_collision(seed: bytes, sid: str, pool: Sequence[str]) -> tuple[str, ...]:
    """Bug: redraw over the whole pool and, on hitting the no-show, take the next card:
    the no-show's neighbour wins the redraw twice as often (2/5 instead of 1/4)."""
    first = draw(seed, sid, 1, 0, pool)
    second = draw(seed, sid, 2, 1, pool)
    if second == first:
        second = pool[(pool.index(first) + 1) % len(pool)]
    return first, second


# ----------------------------------------------------------- full session path


@cache
def slot_floor(k: int) -> Floor:
    """k qualified slot players; sessions only read this floor (all at one instant)."""
    floor = raps_floor()
    ev = Events()
    for i in range(k):
        seated_slot_player(floor, ev, f"P{i}", f"M{i + 1:02d}")
    return floor


def session_run(k: int, script: str, exclude_no_shows: bool = True) -> Picker:
    """A picker that runs a real DrawSession on the k-player floor.

    script: 'd' draw; 'n' the latest pick is a no-show; 'v' the latest pick is voided.
    Returns the drawn cards in order."""
    floor = slot_floor(k)
    at = Events().now
    rules = SessionRules(quotas={PoolKind.SLOTS: 1}, exclude_no_shows=exclude_no_shows)

    def picker(seed: bytes, sid: str, pool: Sequence[str]) -> tuple[str, ...]:
        s = DrawSession(sid, "raps", floor, rules)
        s.open(command("open", at), seed)
        cards: list[str] = []
        for j, step in enumerate(script):
            cid = f"c{j}"
            if step == "d":
                out = s.draw(command(cid, at), "slots")
                assert out.pick is not None
                barred = cards if exclude_no_shows else []
                assert out.records[-1].data["pool"] == [c for c in pool if c not in barred]
                cards.append(out.pick.card)
            elif step == "n":
                s.no_show(command(cid, at), len(s.picks))
            else:
                s.void(command(cid, at), len(s.picks), "wrong person")
        return tuple(cards)

    return picker


# ---------------------------------------------------------------- (a) uniform


POOL_10 = [f"P{i}" for i in range(10)]
POOL_5 = [f"P{i}" for i in range(5)]


def test_first_picks_are_uniform() -> None:
    """N_FIRST = 50,000 first picks (each from its own session seed) from a pool of 10:
    chi-square against 1/10 each, 9 degrees of freedom, must not reject at p < 1e-4."""
    counts = tally(fair_first, POOL_10, N_FIRST, "first")
    assert len(counts) == 10
    assert chi_square_p(counts, uniform_law(POOL_10)) >= ALPHA, counts


@pytest.mark.parametrize("biased", [biased_off_by_one, biased_short_word])
def test_first_pick_test_rejects_a_biased_picker(biased: Picker) -> None:
    """Power: the same test, same seeds, same 50,000 picks, rejects a biased picker."""
    counts = tally(biased, POOL_10, N_FIRST, "first")
    assert chi_square_p(counts, uniform_law(POOL_10)) < ALPHA, counts


def test_first_picks_through_draw_sessions_are_uniform() -> None:
    """N_SESSION = 6,000 real sessions (open, draw) on a floor of 6 qualified slot
    players: each pick equals the direct computation, and the 6 cards are uniform
    (chi-square, 5 d.o.f., p < 1e-4 rejects)."""
    pool = [f"P{i}" for i in range(6)]
    real = session_run(6, "d")
    counts = Counter[Hashable]()
    for i in range(N_SESSION):
        seed, sid = seed_of("session-first", i), session_id(i)
        cards = real(seed, sid, pool)
        assert cards == fair_first(seed, sid, pool)
        counts[cards] += 1
    assert chi_square_p(counts, uniform_law(pool)) >= ALPHA, counts
    # power at this sample size
    biased = tally(biased_off_by_one, pool, N_SESSION, "session-first")
    assert chi_square_p(biased, uniform_law(pool)) < ALPHA


# ---------------------------------------------------- (b) no-shows and redraws


def test_redraw_after_a_no_show_follows_the_exact_law() -> None:
    """N_REDRAW = 40,000 sessions, pool of 5: pick, no-show, redraw.  Each ordered pair
    (first, second) of distinct cards must have probability 1/20 (uniform first, then
    uniform over the 4 others); chi-square, 19 d.o.f., p < 1e-4 rejects.  The joint
    table also catches a redraw that depends on the first pick."""
    counts = tally(fair_redraw, POOL_5, N_REDRAW, "redraw")
    assert len(counts) == 20
    assert chi_square_p(counts, without_replacement_law(POOL_5, 2)) >= ALPHA, counts


@pytest.mark.parametrize("biased", [biased_next_in_list, biased_skip_on_collision])
def test_redraw_test_rejects_a_biased_redraw(biased: Picker) -> None:
    """Power: same seeds, same 40,000 sessions, same threshold; "next in the list after
    a no-show" and "skip to the neighbour on a collision" are both rejected."""
    counts = tally(biased, POOL_5, N_REDRAW, "redraw")
    assert chi_square_p(counts, without_replacement_law(POOL_5, 2)) < ALPHA, counts


def test_redraw_through_draw_sessions_follows_the_exact_law() -> None:
    """N_SESSION = 6,000 real sessions on 5 players: draw, staff no-show, draw (redraw
    into the same slot).  Pairs equal the direct computation; 20 cells of 1/20 each
    (300 expected per cell), chi-square p < 1e-4 rejects; the biased pickers are
    rejected at this sample size too."""
    real = session_run(5, "dnd")
    counts = Counter[Hashable]()
    for i in range(N_SESSION):
        seed, sid = seed_of("session-redraw", i), session_id(i)
        cards = real(seed, sid, POOL_5)
        assert cards == fair_redraw(seed, sid, POOL_5)
        counts[cards] += 1
    law = without_replacement_law(POOL_5, 2)
    assert chi_square_p(counts, law) >= ALPHA, counts
    for biased in (biased_next_in_list, biased_skip_on_collision):
        assert chi_square_p(tally(biased, POOL_5, N_SESSION, "session-redraw"), law) < ALPHA


def test_redraws_after_a_no_show_and_a_void_follow_the_exact_law() -> None:
    """N_SESSION = 6,000 real sessions on 5 players: draw, no-show, redraw, void, redraw.
    Every ordered triple of distinct cards has probability 1/60 (100 expected per cell);
    chi-square, 59 d.o.f., p < 1e-4 rejects.  Power: a third pick that takes the card
    after the voided one (over the players not yet drawn) is rejected."""
    real = session_run(5, "dndvd")
    counts = Counter[Hashable]()
    for i in range(N_SESSION):
        counts[real(seed_of("session-triple", i), session_id(i), POOL_5)] += 1
    law = without_replacement_law(POOL_5, 3)
    assert len(counts) == 60
    assert chi_square_p(counts, law) >= ALPHA, counts

    def biased(seed: bytes, sid: str, pool: Sequence[str]) -> tuple[str, ...]:
        first, second = fair_redraw(seed, sid, pool)
        rest = [c for c in pool if c != first]
        after = rest[(rest.index(second) + 1) % len(rest)]
        return first, second, after

    assert chi_square_p(tally(biased, POOL_5, N_SESSION, "session-triple"), law) < ALPHA


def test_redraw_may_pick_the_no_show_again_when_no_shows_are_not_barred() -> None:
    """With exclude_no_shows=False ("can be selected more than once"), the redraw is
    uniform over the whole pool, the no-show included: N_SESSION = 6,000 real sessions
    on 4 players, 16 ordered pairs of 1/16 (375 expected), chi-square p < 1e-4 rejects.
    Power: barring the no-show anyway (4 cells empty) is rejected."""
    pool = [f"P{i}" for i in range(4)]
    real = session_run(4, "dnd", exclude_no_shows=False)
    counts = Counter[Hashable]()
    for i in range(N_SESSION):
        counts[real(seed_of("session-unbarred", i), session_id(i), pool)] += 1
    law = with_replacement_law(pool, 2)
    assert len(counts) == 16
    assert chi_square_p(counts, law) >= ALPHA, counts
    barred = tally(fair_redraw, pool, N_SESSION, "session-unbarred")
    assert chi_square_p(barred, law) < ALPHA

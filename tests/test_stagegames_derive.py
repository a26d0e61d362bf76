"""Derivation stage-v1: pinned vectors, uniform shuffles, and the CSPRNG rule.

The chi-square tests count every position of a Fisher-Yates shuffle (and every
permutation of a small one) over seeds derived deterministically, so they are
reproducible; the threshold p < 1e-4 rarely false-alarms, and each test shows that a
deliberately biased shuffle is rejected at the same sample size.
"""

from __future__ import annotations

import ast
import hashlib
import hmac
import itertools
import struct
from collections import Counter
from pathlib import Path

import pytest
from scipy.stats import chisquare

from selector.stagegames import derive
from selector.stagegames.derive import below, message, new_seed, shuffle, stream
from tests.test_stagegames_kit import seed

ALPHA = 1e-4
PKG = Path(__file__).resolve().parent.parent / "selector" / "stagegames"


def test_message_is_domain_separated_and_length_prefixed() -> None:
    m = message("podium:queen-2025-10-02", "podium")
    gid = b"podium:queen-2025-10-02"
    assert m == b"raps-stage-v1" + struct.pack(">I", len(gid)) + gid + b"\x00\x00\x00\x06podium"
    # shifting a byte between game id and purpose changes the message
    assert message("ab", "c") != message("a", "bc")


def test_stream_is_hmac_sha256_of_message_and_counter() -> None:
    s = seed("stream")
    words = stream(s, "g", "boxes")
    for k in range(3):
        want = hmac.new(s, message("g", "boxes") + struct.pack(">I", k), hashlib.sha256)
        assert words() == int.from_bytes(want.digest(), "big")


def test_worked_example_of_the_docs_is_pinned() -> None:
    """docs/fairness.md, "Stage games (stage-v1)": seed SHA-256("example seed")."""
    s = hashlib.sha256(b"example seed").digest()
    assert shuffle(s, "bonus:sat-cash-2025-10-04-1500", "boxes", list(range(1, 13))) == [
        *EXAMPLE_BOXES
    ]
    assert below(s, "safe:sat-cash-2025-10-04-2100", "safe-code|1", 1000) == EXAMPLE_CODE
    assert shuffle(s, "podium:queen-2025-10-02", "podium", [1, 2, 3, 4, 5]) == [1, 3, 4, 5, 2]
    first = stream(s, "bonus:sat-cash-2025-10-04-1500", "boxes")()
    assert f"{first:064x}".startswith("521470ce7ce1225f")


EXAMPLE_BOXES = (8, 12, 5, 3, 6, 11, 4, 2, 9, 1, 7, 10)
EXAMPLE_CODE = 621


def test_shuffle_keeps_the_items_and_depends_on_every_input() -> None:
    items = list(range(25))
    a = shuffle(seed("x"), "g", "reveals", items)
    assert sorted(a) == items and a != items
    assert shuffle(seed("x"), "g", "reveals", items) == a  # deterministic
    assert shuffle(seed("y"), "g", "reveals", items) != a
    assert shuffle(seed("x"), "h", "reveals", items) != a
    assert shuffle(seed("x"), "g", "paddles", items) != a
    assert shuffle(seed("x"), "g", "p", []) == [] and shuffle(seed("x"), "g", "p", [7]) == [7]


def test_a_short_seed_is_refused() -> None:
    with pytest.raises(ValueError):
        stream(b"short", "g", "p")


def _p(observed: Counter[object], cells: list[object]) -> float:
    n = sum(observed.values())
    return float(chisquare([observed[c] for c in cells], [n / len(cells)] * len(cells)).pvalue)


def _biased_shuffle(s: bytes, gid: str, purpose: str, items: list[int]) -> list[int]:
    """The classic mistake: j uniform over the whole list at every step."""
    words = stream(s, gid, purpose)
    out = list(items)
    for i in range(len(out) - 1, 0, -1):
        j = derive.uniform(words, len(out))
        out[i], out[j] = out[j], out[i]
    return out


def test_every_permutation_of_four_is_equally_likely() -> None:
    """24 permutations, 4,800 shuffles (200 expected each), 23 d.o.f."""
    cells: list[object] = list(itertools.permutations(range(4)))
    fair: Counter[object] = Counter()
    biased: Counter[object] = Counter()
    for i in range(4_800):
        s = seed(f"perm4/{i}")
        fair[tuple(shuffle(s, "g", "p", [0, 1, 2, 3]))] += 1
        biased[tuple(_biased_shuffle(s, "g", "p", [0, 1, 2, 3]))] += 1
    assert _p(fair, cells) >= ALPHA, fair
    assert _p(biased, cells) < ALPHA


def test_each_box_holds_each_symbol_uniformly() -> None:
    """Where item 0 of 12 lands over 3,000 shuffles (250 expected per box), 11 d.o.f."""
    cells: list[object] = list(range(12))
    fair: Counter[object] = Counter()
    biased: Counter[object] = Counter()
    for i in range(3_000):
        s = seed(f"box12/{i}")
        fair[shuffle(s, "bonus:g", "boxes", list(range(12))).index(0)] += 1
        biased[_biased_shuffle(s, "bonus:g", "boxes", list(range(12))).index(0)] += 1
    assert _p(fair, cells) >= ALPHA, fair
    assert _p(biased, cells) < ALPHA


def test_a_safe_code_digit_is_uniform() -> None:
    """The first digit of 3-digit codes over 2,000 seeds (200 expected per digit)."""
    cells: list[object] = list(range(10))
    counts: Counter[object] = Counter(
        below(seed(f"code/{i}"), "safe:g", "safe-code|1", 1000) // 100 for i in range(2_000)
    )
    assert _p(counts, cells) >= ALPHA, counts
    skewed: Counter[object] = Counter({**counts, 0: counts[0] + 120})
    assert _p(skewed, cells) < ALPHA


def test_seeds_come_from_secrets_never_random() -> None:
    """The CSPRNG rule: new_seed is secrets.token_bytes(32), and no stage-game module
    imports `random` (the import contracts also forbid it in selector)."""
    a, b = new_seed(), new_seed()
    assert len(a) == 32 and a != b
    src = (PKG / "derive.py").read_text("utf-8")
    assert "secrets.token_bytes(SEED_BYTES)" in src
    for path in PKG.glob("*.py"):
        tree = ast.parse(path.read_text("utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            assert not any(n == "random" or n.startswith("random.") for n in names), path

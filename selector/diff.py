"""The difference between two sorted, duplicate-free card lists, found quickly when small.

Consecutive pools differ by a handful of players among thousands. Both lists are
walked side by side; equal runs are skipped a block at a time with C-speed slice
comparisons (the block doubles while runs keep matching), and only blocks that
differ are merged card by card.
"""

from __future__ import annotations

from collections.abc import Sequence

_MIN_BLOCK = 16


def sorted_delta(
    base: Sequence[str], now: Sequence[str], limit: int
) -> tuple[list[str], list[str]] | None:
    """(added, removed) from base to now, both sorted and duplicate-free; None past limit.

    Equal runs are skipped a block at a time (the block doubles while runs keep
    matching); only blocks that differ are merged card by card.
    """
    added: list[str] = []
    removed: list[str] = []
    i = j = 0
    nb, nn = len(base), len(now)
    block = _MIN_BLOCK
    while i < nb and j < nn:
        if base[i : i + block] == now[j : j + block]:
            i += block
            j += block
            block *= 2
            continue
        if block > _MIN_BLOCK:
            block = max(_MIN_BLOCK, block // 4)
            continue
        stop = i + block
        while i < stop and i < nb and j < nn:
            x, y = base[i], now[j]
            if x == y:
                i += 1
                j += 1
            elif x < y:
                removed.append(x)
                i += 1
            else:
                added.append(y)
                j += 1
        if len(added) + len(removed) > limit:
            return None
    removed.extend(base[i:])
    added.extend(now[j:])
    if len(added) + len(removed) > limit:
        return None
    return added, removed

"""Did you mean: the known name closest to a misspelt one (CLI.md, "Did you mean").

One rule for every name a user types (commands, tables, columns, profiles): a known
name within two edits (insertions, deletions, substitutions or swaps of two
neighbouring characters: the optimal string alignment distance) is suggested; of
several, the closest, then the first in sorted order.
"""

from __future__ import annotations

from collections.abc import Iterable

MAX_EDITS = 2
"""The most edits a suggestion may be away from the typed name."""


def distance(a: str, b: str) -> int:
    """The number of edits (insert, delete, substitute, swap two neighbours) from ``a`` to ``b``."""
    before: list[int] = []
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            best = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y))
            if i > 1 and j > 1 and x == b[j - 2] and a[i - 2] == y:
                best = min(best, before[j - 2] + 1)
            current.append(best)
        before, previous = previous, current
    return previous[-1]


def closest(name: str, known: Iterable[str]) -> str | None:
    """The known name nearest ``name`` within :data:`MAX_EDITS` edits (not ``name`` itself), or None."""
    scored = sorted((distance(name, k), k) for k in set(known) if k != name and abs(len(k) - len(name)) <= MAX_EDITS)
    return scored[0][1] if scored and scored[0][0] <= MAX_EDITS else None


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'scan'?)`` for the closest known name, or the empty string."""
    match = closest(name, known)
    return "" if match is None else f" (did you mean {match!r}?)"

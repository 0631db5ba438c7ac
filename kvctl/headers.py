"""File headers as column names: the one rule of ``table create --from``, ``put --file``
(CSV/TSV headers) and ``import`` (the input's columns).

A header that is already a valid column name (letters, digits and ``_``, not starting
with a digit) keeps it. Any other header: each run of characters outside
``[A-Za-z0-9_]`` becomes ``_``, leading and trailing ``_`` are trimmed and a leading
digit gets a ``_`` prefix (``od280/od315`` → ``od280_od315``, ``1st`` → ``_1st``); a
header left with no name (empty, or only punctuation: ``%``) becomes ``column_N``, N its
1-based position. A name taken by an earlier header (in file order) gets the first
free suffix ``_2``, ``_3``...: the first header keeps the name.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence

_VALID = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_OUTSIDE = re.compile(r"[^A-Za-z0-9_]+")


def _base(header: str, position: int) -> str:
    """The column name of one header, before names taken twice are told apart."""
    if _VALID.match(header):
        return header
    name = _OUTSIDE.sub("_", header).strip("_")
    if not name:
        return f"column_{position}"
    return f"_{name}" if name[0].isdigit() else name


def column_names(headers: Sequence[str]) -> list[str]:
    """The column name of each header, in order (see the module docstring)."""
    names: list[str] = []
    taken: set[str] = set()
    for position, header in enumerate(headers, start=1):
        name = base = _base(header, position)
        suffix = 2
        while name in taken:
            name, suffix = f"{base}_{suffix}", suffix + 1
        taken.add(name)
        names.append(name)
    return names


def renamed(headers: Sequence[str]) -> list[tuple[str, str]]:
    """``(header, column name)`` of each header whose column name differs from it."""
    return [(h, n) for h, n in zip(headers, column_names(headers)) if h != n]


def report(headers: Sequence[str]) -> None:
    """On stderr, one line per renamed header: ``renamed header 'od280/od315' -> od280_od315``."""
    for header, name in renamed(headers):
        print(f"renamed header {header!r} -> {name}", file=sys.stderr)

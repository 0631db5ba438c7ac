"""The contract's total order (SPI.md "Order"), written out case by case.

Values here are canonical (as :func:`spi.types.validate_value` returns them), so two
values of one column always have the same Python type.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def compare_values(a: Any, b: Any) -> int:
    """-1, 0 or 1 as ``a`` sorts before, with or after ``b`` (same column).

    Null sorts before every value. Numbers compare numerically (-0.0 equals 0.0) and
    NaN sorts after every number, infinity included, and equals itself. Strings
    compare by code point (which is UTF-8 byte order), bytes unsigned
    lexicographically, false before true, timestamps chronologically: Python's own
    ``<`` does each of those for the canonical types.
    """
    if a is None or b is None:
        return int(a is not None) - int(b is not None)
    if isinstance(a, float) and isinstance(b, float):
        a_nan, b_nan = math.isnan(a), math.isnan(b)
        if a_nan or b_nan:
            return int(a_nan) - int(b_nan)
    return int(a > b) - int(a < b)


def compare_tuples(a: Sequence[Any], b: Sequence[Any]) -> int:
    """Lexicographic :func:`compare_values` over two tuples (a shorter prefix first)."""
    for x, y in zip(a, b):
        c = compare_values(x, y)
        if c:
            return c
    return int(len(a) > len(b)) - int(len(a) < len(b))

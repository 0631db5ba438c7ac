"""The pure write rules (spi/writerules.py) on their own: what every path that writes
a row (TableBase, the ordered store's fast paths, PostgreSQL's statements) follows.
The conformance suite checks each provider applies them."""

from __future__ import annotations

import math

import pytest

import spi
from spi.errors import InvalidFieldError
from spi.types import FieldType
from spi.writerules import created, increment_bounds, incremented, merged, next_version, swaps

SPEC = spi.TableSpec(
    "t", [spi.Field("k", "long"), spi.Field("n", "int"), spi.Field("x", "double")], ["k"], indexes=["n"]
)


def test_versions_start_at_one_and_count_up() -> None:
    assert next_version(None) == 1
    assert next_version(7) == 8


def test_rows_are_created_whole_and_merged_over_the_old_one() -> None:
    assert created(SPEC, (1,), {"n": 2}) == {"k": 1, "n": 2, "x": None}
    assert merged(None, SPEC, {"k": 1, "x": 0.5}) == {"k": 1, "n": None, "x": 0.5}
    assert merged({"k": 1, "n": 2, "x": None}, SPEC, {"x": 0.5}) == {"k": 1, "n": 2, "x": 0.5}


def test_increments_count_null_as_zero_and_stay_in_the_type() -> None:
    assert incremented(SPEC, "n", FieldType.INT, None, 5) == 5
    assert incremented(SPEC, "x", FieldType.DOUBLE, 1.5, 1) == 2.5
    with pytest.raises(InvalidFieldError, match="out of range"):
        incremented(SPEC, "n", FieldType.INT, 2**31 - 1, 1)
    lo, hi = increment_bounds(FieldType.INT, 10)
    assert (lo, hi) == (-(2**31) - 10, 2**31 - 1 - 10)


@pytest.mark.parametrize(
    ("current", "expected", "swapped"),
    [
        (None, None, True),
        (1, None, False),
        (None, 1, False),
        (1, 1, True),
        (math.nan, math.nan, True),
        (0.0, -0.0, True),
    ],
)
def test_compare_and_swap_compares_under_the_contracts_equality(
    current: object, expected: object, swapped: bool
) -> None:
    assert swaps(current, expected) is swapped

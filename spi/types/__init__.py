"""Field types, value validation and the one total order shared by every provider.

Each :class:`FieldType` has a type object (``FieldType.LONG.impl``, a
:class:`ColumnType`) that holds its rules; the functions here are the shorthand the
rest of spi calls. Adding a type is one :class:`ColumnType` subclass in a module of
this package, its :class:`FieldType` member, and its tests.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from spi.types.base import MAX_KEY_BYTES, MAX_VALUE_BYTES, ColumnType, FieldType, describe, impl_of, size_limit
from spi.types.booleans import BoolType
from spi.types.floats import FloatType, to_float32
from spi.types.integers import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, IntegerType
from spi.types.strings import BytesType, StringType
from spi.types.timestamps import TimestampType

__all__ = [
    "INT32_MAX",
    "INT32_MIN",
    "INT64_MAX",
    "INT64_MIN",
    "MAX_KEY_BYTES",
    "MAX_VALUE_BYTES",
    "BoolType",
    "BytesType",
    "ColumnType",
    "FieldType",
    "FloatType",
    "IntegerType",
    "StringType",
    "TimestampType",
    "checker",
    "describe",
    "impl_of",
    "size_limit",
    "sort_key",
    "to_float32",
    "validate_value",
    "values_equal",
]

assert all(isinstance(t.impl, ColumnType) for t in FieldType), "every field type has its type object"


def validate_value(ftype: FieldType, value: Any, column: str, *, in_key: bool = False, indexed: bool = False) -> Any:
    """Check ``value`` against the column's type and return its canonical form.

    Canonical forms: ``float``/``double`` as Python floats (``float`` rounded to
    float32, -0.0 as 0.0, one NaN), ``bytes`` as ``bytes``, timestamps as aware UTC
    datetimes. ``None`` is allowed outside the key. Raises :class:`InvalidFieldError`
    for a wrong type or range and :class:`LimitExceededError` for an oversize value.
    """
    return impl_of(ftype).validate(value, column, in_key=in_key, indexed=indexed)


def checker(ftype: FieldType, column: str, *, in_key: bool = False, indexed: bool = False) -> Callable[[Any], Any]:
    """:func:`validate_value` for one column, as a one-argument function that accepts
    the common already-canonical values first (:meth:`ColumnType.checker`)."""
    return impl_of(ftype).checker(column, in_key=in_key, indexed=indexed)


def sort_key(value: Any) -> Any:
    """A Python sort key implementing the contract's order for one non-null value.

    Identical to Python's own order for every type except floats, where NaN sorts
    above every number (as PostgreSQL does), so comparisons are total.
    """
    if isinstance(value, float):
        return (1, 0.0) if math.isnan(value) else (0, value)
    return value


def values_equal(a: Any, b: Any) -> bool:
    """Equality under the contract's order (NaN equals NaN, -0.0 equals 0.0)."""
    return bool(sort_key(a) == sort_key(b))

"""Field types, value validation and the one total order shared by every provider."""

from __future__ import annotations

import datetime as dt
import math
import struct
from collections.abc import Callable
from enum import StrEnum
from typing import Any

from spi.errors import InvalidFieldError, LimitExceededError

MAX_KEY_BYTES = 1024
"""Largest string or bytes value allowed in a key or indexed column."""
MAX_VALUE_BYTES = 16 * 1024 * 1024
"""Largest string or bytes value allowed anywhere."""

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class FieldType(StrEnum):
    """The column types of the contract."""

    INT = "int"
    LONG = "long"
    FLOAT = "float"
    DOUBLE = "double"
    STRING = "string"
    BYTES = "bytes"
    BOOL = "bool"
    TIMESTAMP = "timestamp"

    @property
    def is_integer(self) -> bool:
        """True for ``int`` and ``long``."""
        return self in (FieldType.INT, FieldType.LONG)

    @property
    def is_numeric(self) -> bool:
        """True for the four number types."""
        return self in _NUMERIC


_NUMERIC = frozenset({FieldType.INT, FieldType.LONG, FieldType.FLOAT, FieldType.DOUBLE})
_INT_RANGE = {FieldType.INT: (INT32_MIN, INT32_MAX), FieldType.LONG: (INT64_MIN, INT64_MAX)}
_FLOAT32 = struct.Struct(">f")


def to_float32(value: float) -> float:
    """Round a Python float to the nearest IEEE 32-bit float (overflow is an error)."""
    return float(_FLOAT32.unpack(_FLOAT32.pack(value))[0])


def describe(value: Any) -> str:
    """``repr(value)`` for an error message, cut to 60 characters (an integer too long
    to write out in decimal is shown by its number of digits)."""
    if isinstance(value, int) and value.bit_length() > 200:
        return f"an integer of about {int(value.bit_length() * math.log10(2))} digits"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def validate_value(ftype: FieldType, value: Any, column: str, *, in_key: bool = False, indexed: bool = False) -> Any:
    """Check ``value`` against the column's type and return its canonical form.

    Canonical forms: ``float``/``double`` as Python floats (``float`` rounded to
    float32, -0.0 as 0.0, one NaN), ``bytes`` as ``bytes``, timestamps as aware UTC
    datetimes. ``None`` is allowed outside the key. Raises :class:`InvalidFieldError`
    for a wrong type or range and :class:`LimitExceededError` for an oversize value.
    """
    # Fast paths for the common exact types; anything else takes the full checks below.
    kind = type(value)
    if kind is int and ftype in _INT_RANGE:
        lo, hi = _INT_RANGE[ftype]
        if lo <= value <= hi:
            return value
    elif kind is str and ftype is FieldType.STRING:
        limit = MAX_KEY_BYTES if in_key or indexed else MAX_VALUE_BYTES
        if value.isascii() and "\x00" not in value and len(value) <= limit:
            return value
    elif kind is float and ftype is FieldType.DOUBLE and value == value:
        return value + 0.0
    if value is None:
        if in_key:
            raise InvalidFieldError(f"key column {column!r} cannot be null", column=column)
        return None
    if ftype in _INT_RANGE:
        if not isinstance(value, int) or isinstance(value, bool):
            raise _type_error(ftype, value, column)
        lo, hi = _INT_RANGE[ftype]
        if not lo <= value <= hi:
            raise InvalidFieldError(
                f"value {describe(value)} is out of range for {ftype} column {column!r} ({lo}..{hi})",
                column=column,
            )
        return int(value)
    if ftype in (FieldType.FLOAT, FieldType.DOUBLE):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _type_error(ftype, value, column)
        try:
            number = float(value)
            if ftype is FieldType.FLOAT:
                number = to_float32(number)
        except OverflowError:
            raise InvalidFieldError(
                f"value {describe(value)} is out of range for {ftype} column {column!r}",
                column=column,
            ) from None
        if math.isnan(number):
            if in_key:
                raise InvalidFieldError(f"NaN is not allowed in key column {column!r}", column=column)
            return math.nan
        return number + 0.0  # -0.0 + 0.0 == 0.0: one zero everywhere
    if ftype is FieldType.STRING:
        if not isinstance(value, str):
            raise _type_error(ftype, value, column)
        if "\x00" in value:
            raise InvalidFieldError(f"string for column {column!r} contains a NUL character", column=column)
        try:
            size = len(value.encode("utf-8"))
        except UnicodeEncodeError:
            raise InvalidFieldError(
                f"string for column {column!r} is not valid Unicode (lone surrogate)", column=column
            ) from None
        _check_size(size, column, in_key or indexed)
        return value
    if ftype is FieldType.BYTES:
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise _type_error(ftype, value, column)
        data = bytes(value)
        _check_size(len(data), column, in_key or indexed)
        return data
    if ftype is FieldType.BOOL:
        if not isinstance(value, bool):
            raise _type_error(ftype, value, column)
        return value
    if ftype is FieldType.TIMESTAMP:
        if not isinstance(value, dt.datetime):
            raise _type_error(ftype, value, column)
        if value.tzinfo is None or value.utcoffset() is None:
            raise InvalidFieldError(
                f"timestamp for column {column!r} has no timezone; give an aware datetime (UTC)",
                column=column,
            )
        try:
            return value.astimezone(dt.UTC)
        except OverflowError:
            raise InvalidFieldError(
                f"timestamp {value.isoformat()} for column {column!r} is outside years 1-9999 in UTC",
                column=column,
            ) from None
    raise InvalidFieldError(f"unknown type {ftype!r} for column {column!r}", column=column)


def checker(ftype: FieldType, column: str, *, in_key: bool = False, indexed: bool = False) -> Callable[[Any], Any]:
    """:func:`validate_value` for one column, as a one-argument function.

    The common already-canonical values (ints in range, short ASCII strings without
    NUL, non-NaN floats of a ``double`` column, bools) are accepted by a check
    specialised for the column; anything else takes :func:`validate_value`, so the
    results and errors are the same.
    """

    def general(value: Any) -> Any:
        if value is None and not in_key:
            return None  # nulls are common in bulk data: skip the type dispatch
        return validate_value(ftype, value, column, in_key=in_key, indexed=indexed)

    if ftype in _INT_RANGE:
        lo, hi = _INT_RANGE[ftype]

        def check_int(value: Any) -> Any:
            if type(value) is int and lo <= value <= hi:
                return value
            return general(value)

        return check_int
    if ftype is FieldType.STRING:
        limit = MAX_KEY_BYTES if in_key or indexed else MAX_VALUE_BYTES

        def check_str(value: Any) -> Any:
            # An ASCII string's length is its UTF-8 size.
            if type(value) is str and len(value) <= limit and value.isascii() and "\x00" not in value:
                return value
            return general(value)

        return check_str
    if ftype is FieldType.DOUBLE:

        def check_double(value: Any) -> Any:
            if type(value) is float and value == value:  # not NaN
                return value + 0.0  # -0.0 + 0.0 == 0.0
            return general(value)

        return check_double
    if ftype is FieldType.BOOL:

        def check_bool(value: Any) -> Any:
            return value if type(value) is bool else general(value)

        return check_bool
    return general


def _check_size(size: int, column: str, key_limited: bool) -> None:
    if key_limited and size > MAX_KEY_BYTES:
        raise LimitExceededError(
            f"value for key or indexed column {column!r} is {size} bytes; the limit is {MAX_KEY_BYTES}",
            column=column,
        )
    if size > MAX_VALUE_BYTES:
        raise LimitExceededError(
            f"value for column {column!r} is {size} bytes; the limit is {MAX_VALUE_BYTES}", column=column
        )


def _type_error(ftype: FieldType, value: Any, column: str) -> InvalidFieldError:
    return InvalidFieldError(
        f"column {column!r} is {ftype}; got {type(value).__name__} {describe(value)}", column=column
    )


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

"""``float`` (IEEE 32-bit: values are rounded to float32 on write) and ``double``.

Canonical values: Python floats, -0.0 as 0.0, one NaN (allowed outside keys), which
sorts above +inf. Key encoding: the IEEE double big-endian, positive numbers with
the sign bit set, negative ones bit-inverted.
"""

from __future__ import annotations

import math
import re
import struct
from typing import Any

from spi.errors import InvalidFieldError
from spi.types.base import ColumnType, FieldType, describe
from spi.types.integers import MASK, SIGN, U64

_NUMBER = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")
"""A number written as such (not ``nan`` nor ``inf``)."""
_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_D64 = struct.Struct(">d")
_FLOAT32 = struct.Struct(">f")


def to_float32(value: float) -> float:
    """Round a Python float to the nearest IEEE 32-bit float (overflow is an error)."""
    return float(_FLOAT32.unpack(_FLOAT32.pack(value))[0])


class FloatType(ColumnType):
    """A binary floating-point number; ``single``: rounded to 32 bits."""

    numeric = True
    checksum_tag = 2
    json_kinds = frozenset({float, int})
    placeholder = "number"

    def __init__(self, field_type: FieldType, single: bool) -> None:
        super().__init__(field_type)
        self.single = single
        self.widens_to = FieldType.DOUBLE if single else None
        self.incrementable = not single  # type: ignore[misc]  # a float32 sum would round at each step
        self.arrow = ("float32", ()) if single else ("float64", ())  # type: ignore[misc]
        self.postgres = "float4" if single else "float8"  # type: ignore[misc]

    def canonical(self, value: Any, column: str, limit: int, in_key: bool) -> Any:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.type_error(value, column)
        try:
            number = float(value)
            if self.single:
                number = to_float32(number)
        except OverflowError:
            raise InvalidFieldError(
                f"value {describe(value)} is out of range for {self.field_type} column {column!r}", column=column
            ) from None
        if math.isnan(number):
            if in_key:
                raise InvalidFieldError(f"NaN is not allowed in key column {column!r}", column=column)
            return math.nan
        return number + 0.0  # -0.0 + 0.0 == 0.0: one zero everywhere

    def fast_check(self, limit: int) -> str | None:
        # A double's non-NaN float is canonical once -0.0 is made 0.0, which an inline
        # check cannot do: the checker's own fast path does it (see checker).
        return None

    def checker(self, column: str, *, in_key: bool = False, indexed: bool = False) -> Any:
        general = super().checker(column, in_key=in_key, indexed=indexed)
        if self.single:
            return general

        def check_double(value: Any) -> Any:
            if type(value) is float and value == value:  # not NaN
                return value + 0.0  # -0.0 + 0.0 == 0.0
            return general(value)

        return check_double

    def encode(self, value: Any) -> bytes:
        bits = U64.unpack(_D64.pack(value + 0.0))[0]
        bits = bits ^ MASK if bits & SIGN else bits | SIGN
        return U64.pack(bits)

    def decode(self, data: bytes, pos: int) -> tuple[Any, int]:
        bits = U64.unpack_from(data, pos)[0]
        bits = bits ^ SIGN if bits & SIGN else bits ^ MASK
        return _D64.unpack(U64.pack(bits))[0], pos + 8

    def from_word(self, text: str, column: str) -> Any:
        try:
            return float(text)
        except ValueError:
            raise InvalidFieldError(
                f"column {column!r} is {self.field_type}; {describe(text)} is not a number", column=column
            ) from None

    def from_json(self, value: Any, column: str) -> Any:
        # JSON has no NaN or infinities: they are written as these strings (to_json_value).
        return _NON_FINITE.get(value, value) if isinstance(value, str) else value

    def infers_text(self, text: str) -> bool:
        return _NUMBER.fullmatch(text) is not None

    def infers_json(self, value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    def checksum_source(self) -> str:
        return "(_double(2, {v} + 0.0) if {v} == {v} else _nan)"


FLOAT = FloatType(FieldType.FLOAT, single=True)
DOUBLE = FloatType(FieldType.DOUBLE, single=False)

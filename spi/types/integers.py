"""``int`` (signed 32-bit) and ``long`` (signed 64-bit).

Key encoding: 8 bytes big-endian with the sign bit flipped, one width for both, so
widening ``int`` to ``long`` never re-encodes an index.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterable
from typing import Annotated, Any, ClassVar

from spi.errors import InvalidFieldError
from spi.types.base import ColumnType, FieldType, describe

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

U64 = struct.Struct(">Q")
SIGN = 1 << 63
"""Added to a signed 64-bit value, it gives its unsigned encoding's order."""
MASK = (1 << 64) - 1

_WHOLE_FLOAT = re.compile(r"\s*([+-]?\d+)\.0+\s*")
"""A float written with no fractional part (``433.0``), as pandas writes integer
columns that have gaps."""
_DIGITS = re.compile(r"[+-]?[0-9]+")


def encode_int(value: int) -> bytes:
    """The key encoding of a signed 64-bit integer."""
    return U64.pack((value + SIGN) & MASK)


def decode_int(data: bytes, pos: int) -> tuple[int, int]:
    """Inverse of :func:`encode_int`, at ``pos``."""
    return U64.unpack_from(data, pos)[0] - SIGN, pos + 8


class IntegerType(ColumnType):
    """A signed integer of :attr:`bits` bits."""

    integer = True
    numeric = True
    incrementable = True
    checksum_tag = 1
    json_kinds = frozenset({int})
    placeholder = "integer"

    def __init__(self, field_type: FieldType, bits: int, arrow: str, postgres: str) -> None:
        super().__init__(field_type)
        self.bits = bits
        self.widens_to = FieldType.LONG if bits < 64 else None
        self.min, self.max = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        self.arrow = (arrow, ())  # type: ignore[misc]
        self.postgres = postgres  # type: ignore[misc]
        digits = len(str(self.max)) - 1  # so many digits always fit
        self.text_pattern = rf"^-?[0-9]{{1,{digits}}}$"
        """A regex matching only decimal texts of values in range (for C-level parsing)."""

    arrow: ClassVar[tuple[str, tuple[Any, ...]]]

    def canonical(self, value: Any, column: str, limit: int, in_key: bool) -> Any:
        if type(value) is not int:
            if not isinstance(value, int) or isinstance(value, bool):
                raise self.type_error(value, column)
            value = int(value)
        if not self.min <= value <= self.max:
            raise InvalidFieldError(
                f"value {describe(value)} is out of range for {self.field_type} column {column!r} "
                f"({self.min}..{self.max})",
                column=column,
            )
        return value

    def fast_check(self, limit: int) -> str:
        return f"type(v) is int and {self.min} <= v <= {self.max}"

    def bulk_type(self, limit: int) -> Any:
        import msgspec  # lazy: only bulk loads build msgspec types

        return Annotated[int, msgspec.Meta(ge=self.min, le=self.max)]

    def encode(self, value: Any) -> bytes:
        return U64.pack((value + SIGN) & MASK)

    def encode_column(self, values: Iterable[Any]) -> list[bytes]:
        # Validated: value + 2**63 is in [0, 2**64), so no mask is needed.
        return list(map(U64.pack, map(SIGN.__add__, values)))

    def decode(self, data: bytes, pos: int) -> tuple[Any, int]:
        return decode_int(data, pos)

    def from_word(self, text: str, column: str) -> Any:
        return self.parse(text, column)

    def from_field(self, text: str, column: str) -> Any:
        return self.parse(text, column, whole_float=True)

    def from_json(self, value: Any, column: str) -> Any:
        return int(value) if isinstance(value, float) and value.is_integer() else value

    def parse(self, text: str, column: str, *, whole_float: bool = False) -> int:
        """A decimal integer; with ``whole_float`` also a float text with no fractional part."""
        try:
            return int(text, 10)
        except ValueError:
            pass
        match = _WHOLE_FLOAT.fullmatch(text) if whole_float else None
        whole = text.strip() if match is None else match.group(1)
        if _DIGITS.fullmatch(whole) is None:
            raise InvalidFieldError(
                f"column {column!r} is {self.field_type}; {describe(text)} is not an integer", column=column
            )
        try:
            return int(whole, 10)
        except ValueError:  # more digits than int() converts: beyond any integer column
            raise InvalidFieldError(
                f"column {column!r} is {self.field_type}; {describe(text)} is out of range", column=column
            ) from None

    def infers_text(self, text: str) -> bool:
        return _DIGITS.fullmatch(text) is not None and self.min <= int(text) <= self.max

    def infers_json(self, value: Any) -> bool:
        return type(value) is int and self.min <= value <= self.max

    def checksum_source(self) -> str:
        return "_fixed(1, {v})"


INT = IntegerType(FieldType.INT, 32, "int32", "int4")
LONG = IntegerType(FieldType.LONG, 64, "int64", "int8")

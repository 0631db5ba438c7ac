"""``bool``: ``true``/``false`` in text (any case); key encoding one byte, 0 or 1."""

from __future__ import annotations

from typing import Any

from spi.errors import InvalidFieldError
from spi.types.base import ColumnType, FieldType, describe


class BoolType(ColumnType):
    """True or false."""

    arrow = ("bool_", ())
    postgres = "bool"
    checksum_tag = 5
    json_kinds = frozenset({bool})

    def canonical(self, value: Any, column: str, limit: int, in_key: bool) -> Any:
        if not isinstance(value, bool):
            raise self.type_error(value, column)
        return value

    def fast_check(self, limit: int) -> str:
        return "type(v) is bool"

    def bulk_type(self, limit: int) -> Any:
        return bool

    def encode(self, value: Any) -> bytes:
        return b"\x01" if value else b"\x00"

    def decode(self, data: bytes, pos: int) -> tuple[Any, int]:
        return data[pos] == 1, pos + 1

    def from_word(self, text: str, column: str) -> Any:
        lowered = text.lower()
        if lowered not in ("true", "false"):
            raise InvalidFieldError(
                f"column {column!r} is bool; use true or false, not {describe(text)}", column=column
            )
        return lowered == "true"

    def infers_text(self, text: str) -> bool:
        return text.lower() in ("true", "false")

    def infers_json(self, value: Any) -> bool:
        return isinstance(value, bool)

    def checksum_source(self) -> str:
        return "(_true if {v} else _false)"


BOOL = BoolType(FieldType.BOOL)

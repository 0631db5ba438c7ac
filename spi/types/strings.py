"""``string`` (UTF-8, no NUL character) and ``bytes``.

Key encoding (both, strings as their UTF-8): 0x00 is escaped as 0x00 0xFF and the
value ends with 0x00 0x01, so a key's parts can be told apart and compare in order.
A string or bytes value in a key or an indexed column holds at most
:data:`~spi.types.base.MAX_KEY_BYTES` bytes.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable
from itertools import repeat
from typing import Annotated, Any

from spi.errors import InvalidFieldError
from spi.types.base import ColumnType, FieldType

TERMINATOR = b"\x00\x01"


def encode_bytes(value: bytes) -> bytes:
    """The key encoding of ``value`` (escaped, terminated)."""
    return value.replace(b"\x00", b"\x00\xff") + TERMINATOR


def decode_bytes(data: bytes, pos: int) -> tuple[bytes, int]:
    """Inverse of :func:`encode_bytes`, at ``pos``."""
    end = data.index(TERMINATOR, pos)
    # An escaped 0x00 is 0x00 0xFF, so the first 0x00 0x01 is the terminator.
    return data[pos:end].replace(b"\x00\xff", b"\x00"), end + 2


def decode_base64(text: str, column: str) -> bytes:
    """Decode standard base64 (padding optional); a clear error otherwise."""
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise InvalidFieldError(
            f"column {column!r} is bytes; {text[:40]!r} is not valid base64", column=column
        ) from None


class StringType(ColumnType):
    """Unicode text."""

    arrow = ("string", ())
    postgres = "text"
    checksum_tag = 3
    json_kinds = frozenset({str})
    placeholder = "text"
    literal_hint = " (quote strings with single quotes)"

    def canonical(self, value: Any, column: str, limit: int, in_key: bool) -> Any:
        if not isinstance(value, str):
            raise self.type_error(value, column)
        if "\x00" in value:
            raise InvalidFieldError(f"string for column {column!r} contains a NUL character", column=column)
        try:
            size = len(value.encode("utf-8"))
        except UnicodeEncodeError:
            raise InvalidFieldError(
                f"string for column {column!r} is not valid Unicode (lone surrogate)", column=column
            ) from None
        self.check_size(size, column, limit)
        return value

    def fast_check(self, limit: int) -> str:
        # An ASCII string's length is its UTF-8 size.
        return f'type(v) is str and len(v) <= {limit} and v.isascii() and "\\x00" not in v'

    def bulk_type(self, limit: int) -> Any:
        import msgspec  # lazy: only bulk loads build msgspec types

        return Annotated[str, msgspec.Meta(max_length=limit)]  # characters; the bytes are checked after

    def encode(self, value: Any) -> bytes:
        return encode_bytes(value.encode("utf-8"))

    def encode_column(self, values: Iterable[Any]) -> list[bytes]:
        utf8 = map(str.encode, values)
        escaped = map(bytes.replace, utf8, repeat(b"\x00"), repeat(b"\x00\xff"))
        return list(map(bytes.__add__, escaped, repeat(TERMINATOR)))

    def decode(self, data: bytes, pos: int) -> tuple[Any, int]:
        raw, end = decode_bytes(data, pos)
        return raw.decode("utf-8"), end

    def checksum_source(self) -> str:
        return "_string({v})"


class BytesType(ColumnType):
    """Binary data; base64 in text and JSON (``b64:`` before it on the command line)."""

    arrow = ("binary", ())
    postgres = "bytea"
    checksum_tag = 4
    placeholder = "b64:base64"
    literal_hint = " (write bytes as 'b64:<base64>')"

    def canonical(self, value: Any, column: str, limit: int, in_key: bool) -> Any:
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise self.type_error(value, column)
        data = bytes(value)
        self.check_size(len(data), column, limit)
        return data

    def encode(self, value: Any) -> bytes:
        return encode_bytes(value)

    def decode(self, data: bytes, pos: int) -> tuple[Any, int]:
        return decode_bytes(data, pos)

    def from_word(self, text: str, column: str) -> Any:
        if not text.startswith("b64:"):
            raise InvalidFieldError(f"column {column!r} is bytes; write it as b64:<base64>", column=column)
        return decode_base64(text[4:], column)

    def from_field(self, text: str, column: str) -> Any:
        return decode_base64(text, column)

    def from_json(self, value: Any, column: str) -> Any:
        return decode_base64(value, column) if isinstance(value, str) else value

    def checksum_source(self) -> str:
        return "_bytes({v})"


STRING = StringType(FieldType.STRING)
BYTES = BytesType(FieldType.BYTES)

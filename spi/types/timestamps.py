"""``timestamp``: timezone-aware, UTC, microsecond precision, years 1 to 9999.

Text form ISO 8601 (``Z`` or ``±hh:mm``; no offset means UTC, a date alone is
midnight UTC). Key encoding: microseconds since the epoch, as a ``long``.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from typing import Any

from spi.errors import InvalidFieldError
from spi.types.base import ColumnType, FieldType, describe
from spi.types.integers import SIGN, U64, decode_int, encode_int

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def to_micros(value: dt.datetime) -> int:
    """Microseconds since the epoch of an aware datetime."""
    delta = value - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_micros(micros: int) -> dt.datetime:
    """The aware UTC datetime ``micros`` microseconds after the epoch."""
    return EPOCH + dt.timedelta(microseconds=micros)


class TimestampType(ColumnType):
    """A point in time (an aware ``datetime``, kept in UTC)."""

    arrow = ("timestamp", ("us", "UTC"))
    postgres = "timestamptz"
    checksum_tag = 6
    json_kinds = frozenset({str})
    placeholder = "2024-05-01T12:00:00Z"
    literal_hint = " (write timestamps as quoted ISO 8601)"

    def canonical(self, value: Any, column: str, limit: int, in_key: bool) -> Any:
        if not isinstance(value, dt.datetime):
            raise self.type_error(value, column)
        if value.tzinfo is None or value.utcoffset() is None:
            raise InvalidFieldError(
                f"timestamp for column {column!r} has no timezone; give an aware datetime (UTC)", column=column
            )
        try:
            return value.astimezone(dt.UTC)
        except OverflowError:
            raise InvalidFieldError(
                f"timestamp {value.isoformat()} for column {column!r} is outside years 1-9999 in UTC", column=column
            ) from None

    def encode(self, value: Any) -> bytes:
        return encode_int(to_micros(value))

    def encode_column(self, values: Iterable[Any]) -> list[bytes]:
        return list(map(U64.pack, map(SIGN.__add__, map(to_micros, values))))

    def decode(self, data: bytes, pos: int) -> tuple[Any, int]:
        micros, end = decode_int(data, pos)
        return from_micros(micros), end

    def from_word(self, text: str, column: str) -> Any:
        return self.parse(text, column)

    def from_json(self, value: Any, column: str) -> Any:
        return self.parse(value, column) if isinstance(value, str) else value

    def parse(self, text: str, column: str) -> dt.datetime:
        """ISO 8601 text as a valid timestamp (see the module's docstring)."""
        raw = text.strip()
        try:
            if len(raw) == 10 and raw[4] == "-":
                value = dt.datetime.combine(dt.date.fromisoformat(raw), dt.time())
            else:
                value = dt.datetime.fromisoformat(raw.replace("z", "Z"))
        except (ValueError, IndexError):
            raise InvalidFieldError(
                f"column {column!r} is a timestamp; {describe(text)} is not ISO 8601 (e.g. 2024-05-01T12:00:00Z)",
                column=column,
            ) from None
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return self.validate(value, column)

    def infers_text(self, text: str) -> bool:
        if _ISO_DATE.match(text) is None:
            return False
        try:
            self.parse(text, "")
        except InvalidFieldError:
            return False
        return True

    def infers_json(self, value: Any) -> bool:
        return isinstance(value, str) and self.infers_text(value)

    def checksum_source(self) -> str:
        return "_fixed(6, _micros({v}))"


TIMESTAMP = TimestampType(FieldType.TIMESTAMP)

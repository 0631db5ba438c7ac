"""Values as text and JSON: the CLI/TUI word syntax and the JSON/CSV file form.

One place for the rules every front end shares: numbers, ``true``/``false``,
timestamps as ISO 8601 (no offset means UTC), bytes as base64 (``b64:`` prefix on
the command line), ``null`` where a null is allowed.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import math
import re
import shlex
from collections.abc import Sequence
from typing import Any

from spi.errors import InvalidFieldError
from spi.spec import TableSpec
from spi.types import FieldType, describe, validate_value

_WHOLE_FLOAT = re.compile(r"\s*([+-]?\d+)\.0+\s*")
"""A float written with no fractional part (``433.0``), as pandas writes integer
columns that have gaps."""
_DIGITS = re.compile(r"[+-]?[0-9]+")
_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")
"""The control characters a terminal may act on (C0 but the line feed, DEL, C1)."""


def parse_timestamp(text: str, column: str) -> dt.datetime:
    """Parse ISO 8601 (``Z`` or ``±hh:mm`` offsets; none means UTC, a date is midnight UTC)."""
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
    return validate_value(FieldType.TIMESTAMP, value, column)


def decode_base64(text: str, column: str) -> bytes:
    """Decode standard base64 (padding optional); a clear error otherwise."""
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise InvalidFieldError(
            f"column {column!r} is bytes; {text[:40]!r} is not valid base64", column=column
        ) from None


def parse_word(spec: TableSpec, column: str, text: str) -> Any:
    """Parse a command-line value (``col=value``) by the column's type and validate it.

    ``null`` is null wherever a null is allowed, string columns included; in a
    string key column (never null) it is the text ``null``.
    """
    ftype = spec.type_of(column)
    in_key = spec.is_key(column)
    if text == "null" and not (in_key and ftype is FieldType.STRING):
        return validate_value(ftype, None, column, in_key=in_key)
    value: Any
    if ftype.is_integer:
        value = _integer(text, column, ftype)
    elif ftype in (FieldType.FLOAT, FieldType.DOUBLE):
        try:
            value = float(text)
        except ValueError:
            raise InvalidFieldError(
                f"column {column!r} is {ftype}; {describe(text)} is not a number", column=column
            ) from None
    elif ftype is FieldType.BOOL:
        lowered = text.lower()
        if lowered not in ("true", "false"):
            raise InvalidFieldError(
                f"column {column!r} is bool; use true or false, not {describe(text)}", column=column
            )
        value = lowered == "true"
    elif ftype is FieldType.TIMESTAMP:
        value = parse_timestamp(text, column)
    elif ftype is FieldType.BYTES:
        if not text.startswith("b64:"):
            raise InvalidFieldError(f"column {column!r} is bytes; write it as b64:<base64>", column=column)
        value = decode_base64(text[4:], column)
    else:
        value = text
    return validate_value(ftype, value, column, in_key=in_key, indexed=spec.is_indexed(column))


def _integer(text: str, column: str, ftype: FieldType, *, whole_float: bool = False) -> int:
    """A decimal integer; with ``whole_float`` also a float text with no fractional part."""
    try:
        return int(text, 10)
    except ValueError:
        pass
    match = _WHOLE_FLOAT.fullmatch(text) if whole_float else None
    whole = text.strip() if match is None else match.group(1)
    if _DIGITS.fullmatch(whole) is None:
        raise InvalidFieldError(f"column {column!r} is {ftype}; {describe(text)} is not an integer", column=column)
    try:
        return int(whole, 10)
    except ValueError:  # more digits than int() converts: beyond any integer column
        raise InvalidFieldError(
            f"column {column!r} is {ftype}; {describe(text)} is out of range", column=column
        ) from None


def require_key_text(spec: TableSpec, column: str, text: str) -> None:
    """Refuse an empty text for a key column where an empty field means "no value"
    (CSV/TSV fields, the dashboard's new-row form): a key needs a value."""
    if text == "" and spec.is_key(column):
        raise InvalidFieldError(f"key column {column!r} is empty; every key column needs a value", column=column)


def parse_field(spec: TableSpec, column: str, text: str) -> Any:
    """Convert a CSV/TSV field by the column's type and validate it.

    An empty field is null, except in a string column where it is the empty string;
    in a key column it is an error (a key needs a value). Bytes are base64 without
    the ``b64:`` prefix; an int/long may be written as a float with no fractional
    part (``433.0``); the text ``null`` or ``NA`` is just text (so it is an error in
    a non-string column).
    """
    ftype = spec.type_of(column)
    in_key = spec.is_key(column)
    value: Any
    require_key_text(spec, column, text)
    if ftype is FieldType.STRING:
        value = text
    elif text == "":
        value = None
    elif ftype is FieldType.BYTES:
        value = decode_base64(text, column)
    elif text == "null":
        raise InvalidFieldError(
            f"column {column!r} is {ftype}; leave the field empty for null, the text 'null' is not a value",
            column=column,
        )
    elif ftype.is_integer:
        value = _integer(text, column, ftype, whole_float=True)
    else:
        return parse_word(spec, column, text)
    return validate_value(ftype, value, column, in_key=in_key, indexed=spec.is_indexed(column))


def from_json_value(spec: TableSpec, column: str, value: Any) -> Any:
    """Convert a JSON value (bytes as base64, timestamps ISO 8601) to the column's type."""
    ftype = spec.type_of(column)
    if isinstance(value, str) and ftype is FieldType.TIMESTAMP:
        value = parse_timestamp(value, column)
    elif isinstance(value, str) and ftype is FieldType.BYTES:
        value = decode_base64(value, column)
    elif isinstance(value, float) and ftype.is_integer and value.is_integer():
        value = int(value)
    return validate_value(ftype, value, column, in_key=spec.is_key(column), indexed=spec.is_indexed(column))


def to_json_value(value: Any) -> Any:
    """A stored value as JSON: bytes → base64, timestamps → ISO 8601, NaN/inf → strings."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


def to_word(value: Any) -> str:
    """A value as written on the command line (what :func:`parse_word` reads):
    ``null``, ``true``/``false``, numbers, ISO 8601 timestamps, ``b64:...`` bytes,
    strings as they are."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        return "b64:" + base64.b64encode(value).decode("ascii")
    value = to_json_value(value)
    if isinstance(value, str):
        return value
    return json.dumps(value) if isinstance(value, (int, float)) else str(value)


def visible(text: str) -> str:
    """``text`` with every control character (C0 but ``\\n``, DEL, C1) written as a
    visible ``\\xNN`` escape (``\\x1b``, ``\\x0d``), so text from a value shown on a
    terminal can move no cursor, set no title and clear no screen. Line feeds stay:
    each display shows line breaks its own way."""
    if _CONTROL.search(text) is None:
        return text
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def key_words(spec: TableSpec, key: Sequence[Any]) -> str:
    """A key (values in key order) as ``col=value`` words, ``region=eu id=42``, each
    quoted for a POSIX shell where it needs it, as messages show keys."""
    return " ".join(shlex.quote(visible(f"{column}={to_word(value)}")) for column, value in zip(spec.primary_key, key))

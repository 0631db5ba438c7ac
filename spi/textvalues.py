"""Values as text and JSON: the CLI/TUI word syntax and the JSON/CSV file form.

One place for the rules every front end shares: numbers, ``true``/``false``,
timestamps as ISO 8601 (no offset means UTC), bytes as base64 (``b64:`` prefix on
the command line), ``null`` where a null is allowed.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import re
import shlex
from collections.abc import Sequence
from typing import Any

from spi.errors import InvalidFieldError
from spi.spec import TableSpec
from spi.types.strings import BYTES, STRING
from spi.types.timestamps import TIMESTAMP

_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")
"""The control characters a terminal may act on (C0 but the line feed, DEL, C1)."""


def parse_timestamp(text: str, column: str) -> dt.datetime:
    """Parse ISO 8601 (``Z`` or ``±hh:mm`` offsets; none means UTC, a date is midnight UTC)."""
    return TIMESTAMP.parse(text, column)


def parse_word(spec: TableSpec, column: str, text: str) -> Any:
    """Parse a command-line value (``col=value``) by the column's type and validate it.

    ``null`` is null wherever a null is allowed, string columns included; in a
    string key column (never null) it is the text ``null``.
    """
    impl = spec.type_of(column).impl
    in_key = spec.is_key(column)
    if text == "null" and not (in_key and impl is STRING):
        return impl.validate(None, column, in_key=in_key)
    return impl.validate(impl.from_word(text, column), column, in_key=in_key, indexed=spec.is_indexed(column))


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
    impl = spec.type_of(column).impl
    in_key = spec.is_key(column)
    require_key_text(spec, column, text)
    value: Any
    if impl is STRING:
        value = text
    elif text == "":
        value = None
    elif text == "null" and impl is not BYTES:
        raise InvalidFieldError(
            f"column {column!r} is {impl.field_type}; leave the field empty for null, the text 'null' is not a value",
            column=column,
        )
    else:
        value = impl.from_field(text, column)
    return impl.validate(value, column, in_key=in_key, indexed=spec.is_indexed(column))


def from_json_value(spec: TableSpec, column: str, value: Any) -> Any:
    """Convert a JSON value (bytes as base64, timestamps ISO 8601) to the column's type."""
    impl = spec.type_of(column).impl
    return impl.validate(
        impl.from_json(value, column), column, in_key=spec.is_key(column), indexed=spec.is_indexed(column)
    )


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

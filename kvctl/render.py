"""Stored values as text: the one place kvctl turns a cell value into output.

Every output format of the CLI and the dashboard render values here, so a value
reads the same everywhere (CLI.md, "Values on the command line and in files"):

- JSON forms come from :func:`spi.textvalues.to_json_value`: bytes as base64,
  timestamps as ISO 8601 with offset, NaN and infinities as strings;
- :func:`field` is a csv/tsv field (null is an empty field);
- :func:`word` (:func:`spi.textvalues.to_word`) is a value as typed on the command
  line (``null``, ``b64:...``), shown by the ``table`` output and by the dashboard's
  cells and row editor;
- :func:`bare` is the single value printed by put/update/delete/incr/count/cas.

Control characters never reach a terminal from a value (CLI.md, "Terminal output"):
:func:`visible` shows them as ``\\xNN`` in the table output and the dashboard;
csv/tsv written to a terminal get the same (:func:`terminal_lines`; to a pipe or a
file they are the data, unchanged); JSON escapes C0 as JSON must and :func:`json_safe`
writes DEL and C1 (``\\x7f`` to ``\\x9f``, which JSON allows raw and a terminal may take
for CSI) as ``\\u007f`` to ``\\u009f``, to a pipe too: the same JSON value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, TextIO

from spi.textvalues import to_json_value, visible
from spi.textvalues import to_word as word

__all__ = ["bare", "field", "is_terminal", "json_row", "json_safe", "terminal_lines", "visible", "word"]

_RAW_IN_JSON = re.compile(rb"\x7f|\xc2[\x80-\x9f]")
"""DEL and the C1 controls in UTF-8: what a JSON encoder leaves unescaped."""


def json_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A row with every value in its JSON form."""
    return {column: to_json_value(value) for column, value in row.items()}


def field(value: Any) -> str:
    """A value as a csv/tsv field: null is empty, booleans true/false, bytes base64."""
    kind = type(value)
    if kind is str:  # the common cases first: every cell of a long scan comes here
        return value  # type: ignore[no-any-return]
    if kind is int:
        return int.__repr__(value)
    if kind is float and value - value == 0.0:  # finite: JSON's text of a float is its repr
        return float.__repr__(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    value = to_json_value(value)
    return value if isinstance(value, str) else json.dumps(value)


def bare(value: Any) -> str:
    """A single value as printed by put/update/delete/incr/count/cas (null is ``null``)."""
    return "null" if value is None else field(value)


def json_safe(data: bytes) -> bytes:
    """UTF-8 JSON text with DEL and C1 characters written as ``\\u007f`` to ``\\u009f``
    escapes (the same JSON; C0 characters an encoder escapes already)."""
    if _RAW_IN_JSON.search(data) is None:
        return data
    return _RAW_IN_JSON.sub(lambda m: b"\\u%04x" % ord(m.group().decode()), data)


def terminal_lines(text: str) -> str:
    """csv/tsv lines for a terminal: control characters but tabs and line feeds shown
    as ``\\xNN`` (:func:`visible`)."""
    return "\t".join(map(visible, text.split("\t")))


def is_terminal(out: TextIO) -> bool:
    """Whether ``out`` is a terminal (what gets :func:`visible` control characters)."""
    isatty = getattr(out, "isatty", None)
    return bool(isatty and isatty())

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
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from spi.textvalues import to_json_value
from spi.textvalues import to_word as word

__all__ = ["bare", "field", "json_row", "word"]


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
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    value = to_json_value(value)
    return value if isinstance(value, str) else json.dumps(value)


def bare(value: Any) -> str:
    """A single value as printed by put/update/delete/incr/count/cas (null is ``null``)."""
    return "null" if value is None else field(value)

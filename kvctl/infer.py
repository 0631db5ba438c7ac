"""``table create --from FILE``: a table spec whose column types are inferred from a file.

The whole file is read (with ``put --file``'s ``--format/--null/--delimiter/--encoding``)
and each column gets the narrowest type that holds every value of it, empty and
``--null`` values left out:

| values (CSV/TSV text; JSON values)                          | type        |
| ----------------------------------------------------------- | ----------- |
| integers written as such (``42``; JSON integers) in 64 bits | ``long``    |
| numbers (``4.5``, ``1e3``, integers mixed with them)        | ``double``  |
| ``true``/``false`` (any case; JSON booleans)                | ``bool``    |
| ISO 8601 timestamps or dates (``2024-05-01T12:00:00Z``)     | ``timestamp`` |
| anything else, mixes of the above, no value at all          | ``string``  |

``2012/01/01`` is not ISO 8601, so it is a string. A key column with an empty (or
``--null``) value is bad input naming the line and column: nothing is created.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import spi
from kvctl.bulk import Input
from kvctl.inputs import InputError, TextOptions, choose_format, open_input

_CANDIDATES = (spi.FieldType.LONG, spi.FieldType.DOUBLE, spi.FieldType.BOOL, spi.FieldType.TIMESTAMP)
"""The types a value may show, narrowest first (anything else is a string); each
type object says which values show it (:meth:`spi.types.ColumnType.infers_text`)."""
_NUMBERS = frozenset({"long", "double"})


def _text_type(text: str) -> str:
    """The narrowest type of one CSV/TSV value."""
    return next((t.value for t in _CANDIDATES if t.impl.infers_text(text)), "string")


def _json_type(value: Any) -> str:
    """The narrowest type of one JSON value."""
    return next((t.value for t in _CANDIDATES if t.impl.infers_json(value)), "string")


def _wider(a: str | None, b: str) -> str:
    """The narrowest type holding values of types ``a`` (None: no value yet) and ``b``."""
    if a is None or a == b:
        return b
    return "double" if {a, b} <= _NUMBERS else "string"


def infer_spec(
    name: str, path: str, fmt: str | None, text: TextOptions, pk: Sequence[str], indexes: Sequence[str]
) -> spi.TableSpec:
    """The spec of table ``name`` with the columns of the file at ``path`` (``-``:
    stdin), their types inferred (see the module docstring)."""
    source = Input(path, text)
    try:
        with open_input(source.path) as stream:
            kind = choose_format(path, fmt, stream)
        text.check_format(kind)
        source.report_renames(kind)
        delimited = kind in ("csv", "tsv")
        types: dict[str, str | None] = {}
        for line, record in source.records(kind):
            for column, value in record.items():
                empty = value is None or value == "" or (delimited and value == text.null)
                if empty:
                    types.setdefault(column, None)
                    if column in pk:
                        raise InputError(source.source, line, "a key column needs a value", column)
                    continue
                kind_of = _text_type(value) if delimited else _json_type(value)
                types[column] = _wider(types.get(column), kind_of)
            for column in pk:
                if column not in record and delimited:
                    columns = ", ".join(record)
                    raise InputError(source.source, 1, f"--pk names {column!r}, not a column (columns: {columns})")
                if column not in record:
                    raise InputError(source.source, line, "a key column needs a value", column)
    finally:
        source.close()
    if not types:
        raise InputError(source.source, None, "holds no rows: no column types to infer")
    fields = [spi.Field(c, t or "string") for c, t in types.items()]
    return spi.TableSpec(name, fields, primary_key=list(pk), indexes=list(indexes))

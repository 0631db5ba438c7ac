"""Whole rows as lines of NDJSON or CSV/TSV, fast: what ``scan --all`` prints per row.

The values are those of :mod:`kvctl.render` (bytes as base64, timestamps ISO 8601
with offset, non-finite floats as strings, null as JSON null or an empty field);
these builders only make a row's line in fewer Python steps:

- :func:`json_line`: one compact JSON object, encoded by msgspec (about twenty times
  faster than :func:`json.dumps`); with the columns' types known, only timestamp and
  float columns are looked at per row (msgspec writes bytes as base64 itself).
- :func:`csv_line`: a line built by one generated expression per spec (no call per
  cell for strings, numbers and booleans); a line that needs quoting (a quote, a line
  break, or a delimiter inside a value) is left to :mod:`csv`, so the output is
  exactly ``csv.writer``'s (excel / excel-tab dialects, ``\\n`` line ends).
  :func:`csv_lines` makes a whole chunk of such lines in one generated comprehension.
- :func:`with_versions`: rows with their ``_version`` and ``_expires_at`` (``--versions``).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from kvctl.render import field, json_row
from spi.row import Row
from spi.textvalues import to_json_value
from spi.types import FieldType

RowLine = Callable[[Mapping[str, Any]], str]
RowLines = Callable[[list[Mapping[str, Any]]], str]
_CONVERTED = (FieldType.TIMESTAMP, FieldType.FLOAT, FieldType.DOUBLE)
"""Types whose values msgspec would write differently from :func:`to_json_value`
(it writes ``Z`` for UTC and null for NaN)."""


def _as_dict(row: Mapping[str, Any]) -> Mapping[str, Any]:
    """The row's values as a mapping msgspec encodes and the generated lines index
    (shared, not copied: only read)."""
    if type(row) is dict:
        return row
    values = getattr(row, "mapping", row)  # a Row of any type: its values (isinstance costs more)
    return values if type(values) is dict else dict(values)


def with_versions(rows: Iterable[Row]) -> Iterator[dict[str, Any]]:
    """Each row's values, then its ``_version`` and ``_expires_at`` (a timestamp, or
    None for a row that never expires: printed as ISO 8601, or null / an empty field)."""
    for row in rows:
        yield {**row.to_dict(), "_version": row.version, "_expires_at": row.expires_at}


def json_line(types: Mapping[str, FieldType] | None) -> Callable[[Mapping[str, Any]], bytes]:
    """``line(row)``: the row as one compact JSON object, UTF-8, no line end. ``types``
    (column → type, when known) lets it skip the values msgspec writes as we do."""
    import msgspec

    encode = msgspec.json.Encoder().encode
    if types is None:
        return lambda row: encode(json_row(row))
    special = [c for c, t in types.items() if t in _CONVERTED]
    if not special:
        return lambda row: encode(_as_dict(row))

    def line(row: Mapping[str, Any]) -> bytes:
        values = _as_dict(row)
        converted = None
        for c in special:
            v = values.get(c)
            if v is not None and (type(v) is not float or v - v != 0.0):  # a timestamp, NaN or ±inf
                if converted is None:
                    converted = dict(values)  # never change the row's own values
                converted[c] = to_json_value(v)
        return encode(values if converted is None else converted)

    return line


def csv_line(columns: list[str], types: Mapping[str, FieldType] | None, delimiter: str) -> RowLine:
    """``line(row)``: the csv (``delimiter`` ``,``) or tsv (``\\t``) line of ``row``'s
    ``columns``, with its line end, exactly as :mod:`csv` writes it."""
    return _csv_builders(columns, types, delimiter)[0]


def csv_lines(columns: list[str], types: Mapping[str, FieldType] | None, delimiter: str) -> RowLines:
    """``lines(rows)``: the :func:`csv_line` lines of a chunk of rows, as one text.

    With the columns' types known, the whole chunk is one generated comprehension
    (no call per row), checked once: no quote or carriage return anywhere, one line
    end and ``len(columns) - 1`` delimiters a row. A chunk that fails the check (a
    value needing quotes, a missing column) is made again line by line."""
    return _csv_builders(columns, types, delimiter)[1]


def _csv_builders(
    columns: list[str], types: Mapping[str, FieldType] | None, delimiter: str
) -> tuple[RowLine, RowLines]:
    dialect = "excel" if delimiter == "," else "excel-tab"

    def quoted(cells: list[str]) -> str:
        text = io.StringIO()
        csv.writer(text, dialect=dialect, lineterminator="\n").writerow(cells)
        return text.getvalue()

    def generic(row: Mapping[str, Any]) -> str:
        return quoted([field(row.get(c)) for c in columns])

    def generic_lines(rows: list[Mapping[str, Any]]) -> str:
        return "".join(map(generic, rows))

    if types is None or not columns:
        return generic, generic_lines
    cells = []
    for i, c in enumerate(columns):
        kind = types.get(c)
        if kind is FieldType.STRING:
            cells.append(f"{{values[C{i}] or ''}}")
        elif kind in (FieldType.INT, FieldType.LONG):
            cells.append(f"{{'' if (v{i} := values[C{i}]) is None else v{i}}}")
        elif kind in (FieldType.FLOAT, FieldType.DOUBLE):  # format() of a finite float is its repr
            cells.append(f"{{'' if (v{i} := values[C{i}]) is None else v{i} if v{i} - v{i} == 0.0 else field(v{i})}}")
        elif kind is FieldType.BOOL:
            cells.append(f"{{'' if (v{i} := values[C{i}]) is None else 'true' if v{i} else 'false'}}")
        else:
            cells.append(f"{{field(values.get(C{i}))}}")
    text = delimiter.join(cells).replace("\t", "\\t")
    source = (
        "def line(row):\n"
        "    values = as_dict(row)\n"
        "    try:\n"
        f'        text = f"{text}"\n'
        "    except KeyError:\n"
        "        return generic(row)\n"
        f"    if '\"' in text or '\\n' in text or '\\r' in text or text.count(D) != {len(columns) - 1} or not text:\n"
        "        return quoted([field(values.get(c)) for c in C])\n"
        "    return text + '\\n'\n"
        "def lines(rows):\n"
        "    try:\n"
        f'        text = "\\n".join([f"{text}" for r in rows for values in (as_dict(r),)])\n'
        "    except KeyError:\n"
        "        return ''.join(map(line, rows))\n"
        "    n = len(rows)\n"
        f"    if n and ({len(columns)} == 1 or '\"' in text or '\\r' in text or text.count('\\n') != n - 1\n"
        f"              or text.count(D) != {len(columns) - 1} * n):\n"
        "        return ''.join(map(line, rows))\n"
        "    return text + '\\n' if n else ''\n"
    )
    namespace: dict[str, Any] = {
        "C": tuple(columns),
        **{f"C{i}": c for i, c in enumerate(columns)},
        "D": delimiter,
        "as_dict": _as_dict,
        "field": field,
        "generic": generic,
        "quoted": quoted,
        "Row": Row,
    }
    exec(source, namespace)  # the source holds only generated names: column names come from C
    return namespace["line"], namespace["lines"]

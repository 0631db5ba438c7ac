"""Printing results: rows as a text grid (terminals), json, ndjson, csv or tsv.

Values are rendered by :mod:`kvctl.render` (CLI.md: bytes as base64, timestamps as
ISO 8601 with offset, null as JSON null or an empty csv/tsv field; the human table
shows values as typed on the command line, drawn by :mod:`kvctl.grid` as rows arrive).
No value sends a terminal a control character: see :mod:`kvctl.render`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Mapping
from enum import StrEnum
from itertools import islice
from typing import TYPE_CHECKING, Any, TextIO

from kvctl.render import bare, is_terminal, json_safe, terminal_lines, word
from spi.types import FieldType

if TYPE_CHECKING:
    from kvctl.grid import Grid
    from kvctl.rowtext import RowLines

CHUNK = 512
"""json/csv lines written at a time (one write instead of one per row)."""


class OutputFormat(StrEnum):
    """The ``-o/--output`` formats."""

    table = "table"
    json = "json"
    ndjson = "ndjson"
    csv = "csv"
    tsv = "tsv"


def dumps(obj: Any) -> str:
    """Compact JSON on one line, non-ASCII kept as is."""
    return json.dumps(obj, ensure_ascii=False, separators=(", ", ": "))


def print_value(value: Any, out: TextIO | None = None) -> None:
    """Print one bare value (whatever ``-o`` says; control characters visible on a terminal)."""
    out = out or sys.stdout
    text = bare(value)
    print(terminal_lines(text) if is_terminal(out) else text, file=out)


class RowPrinter:
    """Prints a stream of rows in one format, in bounded memory.

    ``single=True`` prints one object (``get``): a JSON object rather than an array.
    ``keys`` are the key columns, whose values the table output never cuts.
    """

    def __init__(
        self,
        fmt: OutputFormat,
        columns: Iterable[str],
        *,
        single: bool = False,
        out: TextIO | None = None,
        types: Mapping[str, FieldType] | None = None,
        keys: Iterable[str] = (),
    ) -> None:
        self.fmt = fmt
        self.columns = list(columns)
        self.keys = frozenset(keys)
        self.single = single
        self.out = out or sys.stdout
        self.count = 0
        self._grid: Grid | None = None
        self._lines: list[Any] = []  # json/csv lines not yet written (written in chunks)
        self._json: Callable[[Mapping[str, Any]], bytes] | None = None
        self._csv: Callable[[Mapping[str, Any]], str] | None = None
        self._csv_chunk: RowLines | None = None
        if fmt in (OutputFormat.csv, OutputFormat.tsv):
            from kvctl.rowtext import csv_line, csv_lines  # lazy: rows' modules (msgspec), not for --help

            delimiter = "," if fmt is OutputFormat.csv else "\t"
            self._csv = csv_line(self.columns, types, delimiter)
            self._csv_chunk = csv_lines(self.columns, types, delimiter)
            self._lines.append(csv_line(self.columns, None, delimiter)(dict(zip(self.columns, self.columns))))
        elif fmt in (OutputFormat.json, OutputFormat.ndjson):
            from kvctl.rowtext import json_line  # lazy: as above

            self._json = json_line(types)

    def add(self, row: Mapping[str, Any]) -> None:
        """Print one row (json and csv lines are written in chunks of :data:`CHUNK`)."""
        if self._json is not None:
            self._lines.append(self._json(row))
        elif self._csv is not None:
            self._lines.append(self._csv(row))
        else:
            if self._grid is None:
                self._grid = _grid(self.columns, self.out)
            values = [row.get(c) for c in self.columns]
            self._grid.add(
                list(map(word, values)),
                [type(v) is str and c not in self.keys for c, v in zip(self.columns, values)],
            )
        self.count += 1
        if len(self._lines) >= CHUNK:
            self._write_lines()

    def add_all(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Print every row of ``rows`` (json and csv lines made a chunk at a time)."""
        encode = self._json or self._csv
        if encode is None:
            for row in rows:
                self.add(row)
            return
        rows = iter(rows)
        while True:
            if self._lines:
                self._write_lines()
            chunk = list(islice(rows, CHUNK))
            if not chunk:
                return
            if self._csv_chunk is not None:
                self._lines.append(self._csv_chunk(chunk))  # the chunk's lines as one text
            else:
                self._lines.extend(map(encode, chunk))  # type: ignore[arg-type]
            self.count += len(chunk)

    def _write_lines(self) -> None:
        lines, self._lines = self._lines, []
        if self._csv is not None:
            text = "".join(lines)
            self.out.write(terminal_lines(text) if is_terminal(self.out) else text)
            return
        if self.fmt is OutputFormat.json and not self.single:
            start = b"[\n" if self.count == len(lines) else b",\n"
            data = json_safe(start + b",\n".join(lines))
        else:
            data = json_safe(b"\n".join(lines) + b"\n")
        binary = getattr(self.out, "buffer", None)
        if binary is None:
            self.out.write(data.decode("utf-8"))
        else:
            self.out.flush()  # whatever the text layer holds goes first
            binary.write(data)

    def close(self) -> None:
        """Finish the output (close the JSON array, draw the last table chunk)."""
        if self._lines:
            self._write_lines()
        if self.fmt is OutputFormat.json and not self.single:
            self.out.write("[]\n" if self.count == 0 else "\n]\n")
        elif self.fmt is OutputFormat.table:
            if self._grid is None and not self.single:
                self._grid = _grid(self.columns, self.out)  # an empty result still shows its columns
            if self._grid is not None:
                self._grid.close()
        self.out.flush()


def print_rows(fmt: OutputFormat, columns: Iterable[str], rows: Iterable[Mapping[str, Any]]) -> int:
    """Print every row of ``rows``; the number printed."""
    printer = RowPrinter(fmt, columns)
    printer.add_all(rows)
    printer.close()
    return printer.count


def print_document(fmt: OutputFormat, obj: Any) -> None:
    """Print a JSON document (json: indented, else one line)."""
    text = json.dumps(obj, ensure_ascii=False, indent=2) if fmt is OutputFormat.json else dumps(obj)
    print(json_safe(text.encode()).decode())


def _grid(columns: list[str], out: TextIO) -> Grid:
    """A text grid (imported when first drawn: it measures text with rich, which
    machine-readable output never needs, and ``kvctl get`` starts faster without)."""
    from kvctl.grid import Grid  # lazy: rich, only for a terminal's table

    return Grid(columns, out)

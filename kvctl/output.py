"""Printing results: rows as a rich table (terminals), json, ndjson, csv or tsv.

Values are rendered by :mod:`kvctl.render` (CLI.md: bytes as base64, timestamps as
ISO 8601 with offset, null as JSON null or an empty csv/tsv field; the human table
shows values as typed on the command line, drawn by :mod:`kvctl.grid` as rows arrive).
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any, TextIO

from kvctl.grid import Grid
from kvctl.render import bare, field, json_row, word


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
    """Print one bare value (whatever ``-o`` says)."""
    print(bare(value), file=out or sys.stdout)


class RowPrinter:
    """Prints a stream of rows in one format, in bounded memory.

    ``single=True`` prints one object (``get``): a JSON object rather than an array.
    """

    def __init__(
        self,
        fmt: OutputFormat,
        columns: Iterable[str],
        *,
        single: bool = False,
        out: TextIO | None = None,
    ) -> None:
        self.fmt = fmt
        self.columns = list(columns)
        self.single = single
        self.out = out or sys.stdout
        self.count = 0
        self._csv: Any = None
        self._grid: Grid | None = None
        if fmt in (OutputFormat.csv, OutputFormat.tsv):
            dialect = "excel" if fmt is OutputFormat.csv else "excel-tab"
            self._csv = csv.writer(self.out, dialect=dialect, lineterminator="\n")
            self._csv.writerow(self.columns)

    def add(self, row: Mapping[str, Any]) -> None:
        """Print (or buffer, for a table) one row."""
        fmt = self.fmt
        if fmt is OutputFormat.ndjson or (fmt is OutputFormat.json and self.single):
            print(dumps(json_row(row)), file=self.out)
        elif fmt is OutputFormat.json:
            self.out.write(("[\n" if self.count == 0 else ",\n") + dumps(json_row(row)))
        elif self._csv is not None:
            self._csv.writerow([field(row.get(c)) for c in self.columns])
        else:
            if self._grid is None:
                self._grid = Grid(self.columns, self.out)
            self._grid.add([word(row.get(c)) for c in self.columns])
        self.count += 1

    def close(self) -> None:
        """Finish the output (close the JSON array, draw the last table chunk)."""
        if self.fmt is OutputFormat.json and not self.single:
            self.out.write("[]\n" if self.count == 0 else "\n]\n")
        elif self.fmt is OutputFormat.table:
            if self._grid is None and not self.single:
                self._grid = Grid(self.columns, self.out)  # an empty result still shows its columns
            if self._grid is not None:
                self._grid.close()
        self.out.flush()


def print_rows(fmt: OutputFormat, columns: Iterable[str], rows: Iterable[Mapping[str, Any]]) -> int:
    """Print every row of ``rows``; the number printed."""
    printer = RowPrinter(fmt, columns)
    for row in rows:
        printer.add(row)
    printer.close()
    return printer.count


def print_document(fmt: OutputFormat, obj: Any) -> None:
    """Print a JSON document (json: indented, else one line)."""
    if fmt is OutputFormat.json:
        print(json.dumps(obj, ensure_ascii=False, indent=2))
    else:
        print(dumps(obj))

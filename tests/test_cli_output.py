"""The ``table`` output grid and csv fields (kvctl.grid, kvctl.render)."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spi
from kvctl.grid import SAMPLE_ROWS, Grid
from kvctl.output import OutputFormat, RowPrinter
from kvctl.render import field, json_row
from kvctl.rowtext import csv_line, csv_lines, json_line
from spi.types import FieldType


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _lines(out: io.StringIO) -> list[str]:
    return out.getvalue().splitlines()


def test_rows_are_drawn_once_the_sample_is_full_and_cut_to_its_widths(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    out = io.StringIO()
    grid = Grid(["k", "v"], out)
    for i in range(SAMPLE_ROWS - 1):
        grid.add([str(i), "x"], [True, True])
    assert out.getvalue() == ""  # still sampling
    grid.add(["last", "y"], [True, True])
    assert len(_lines(out)) == 3 + SAMPLE_ROWS  # top, header, rule, the sample
    grid.add(["a much longer key than any sampled", "two\nlines"], [True, True])
    grid.close()
    lines = _lines(out)
    assert lines[1] == "┃ k    ┃ v ┃"
    assert lines[-2] == "│ a m… │ … │"  # cut to the sampled widths; one line per row
    assert lines[-1] == "└──────┴───┘"
    assert len({len(line) for line in lines}) == 1  # every line the same width


def test_the_grid_fits_the_terminal_and_dims_null_only_in_colour(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    monkeypatch.delenv("NO_COLOR", raising=False)
    out = _Terminal()
    grid = Grid(["id", "text"], out)
    grid.add(["1", "y" * 100], [True, True])
    grid.add(["2", "null"], [True, True])
    grid.close()
    lines = _lines(out)
    assert all(len(line) <= 40 for line in lines if "\x1b" not in line)
    assert "y" * 20 in lines[3] and lines[3].rstrip("│ ").endswith("…")
    assert "\x1b[2m" in lines[4]
    monkeypatch.setenv("NO_COLOR", "1")
    plain = _Terminal()
    grid = Grid(["id"], plain)
    grid.add(["null"], [False])
    grid.close()
    assert "\x1b" not in plain.getvalue()


def test_empty_results_show_their_columns_and_single_rows_print_nothing_when_missing() -> None:
    out = io.StringIO()
    RowPrinter(OutputFormat.table, ["a", "b"], out=out).close()
    assert _lines(out) == ["┏━━━┳━━━┓", "┃ a ┃ b ┃", "┡━━━╇━━━┩", "└───┴───┘"]
    single = io.StringIO()
    RowPrinter(OutputFormat.table, ["a"], single=True, out=single).close()
    assert single.getvalue() == ""


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("", ""),
        ("a,b", "a,b"),
        (0, "0"),
        (-(2**63), str(-(2**63))),
        (None, ""),
        (True, "true"),
        (1.5, "1.5"),
        (float("nan"), "NaN"),
        (b"\x00\xff", "AP8="),
        (dt.datetime(2024, 5, 1, 12, tzinfo=dt.UTC), "2024-05-01T12:00:00+00:00"),
    ],
)
def test_csv_fields(value: object, text: str) -> None:
    assert field(value) == text


_TYPES = {
    "s": FieldType.STRING,
    "i": FieldType.INT,
    "l": FieldType.LONG,
    "b": FieldType.BOOL,
    "f": FieldType.FLOAT,
    "d": FieldType.DOUBLE,
    "y": FieldType.BYTES,
    "t": FieldType.TIMESTAMP,
}
_VALUES = {
    "s": st.text(alphabet=st.sampled_from(["a", ",", '"', "\n", "\r", "\t", " ", "é", "😀", "'"]), max_size=6),
    "i": st.integers(-(2**31), 2**31 - 1),
    "l": st.integers(-(2**63), 2**63 - 1),
    "b": st.booleans(),
    "f": st.floats(allow_nan=True, allow_infinity=True, width=32),
    "d": st.floats(allow_nan=True, allow_infinity=True),
    "y": st.binary(max_size=6),
    "t": st.datetimes(timezones=st.just(dt.UTC)),
}
_ROWS = st.fixed_dictionaries({c: st.none() | v for c, v in _VALUES.items()})


@settings(max_examples=300, deadline=None)
@given(st.lists(_ROWS, max_size=4), st.sampled_from(list(_TYPES)))
def test_fast_lines_match_csv_writer_and_json_dumps(rows: list[dict[str, Any]], only: str) -> None:
    """The generated csv/tsv lines (row by row and a chunk at once) and the msgspec JSON
    lines say exactly what csv.writer and json.dumps of the rendered values say, for
    every type, quoting case and column subset (one column alone included)."""
    for columns in (list(_TYPES), [only]):
        for delimiter, dialect in ((",", "excel"), ("\t", "excel-tab")):
            line = csv_line(columns, _TYPES, delimiter)
            for row in rows:
                expected = io.StringIO()
                csv.writer(expected, dialect=dialect, lineterminator="\n").writerow([field(row[c]) for c in columns])
                assert line(row) == expected.getvalue()
                assert line(spi.Row(row, 1)) == expected.getvalue()
            chunk = io.StringIO()  # a chunk's lines at once: the same text
            csv.writer(chunk, dialect=dialect, lineterminator="\n").writerows(
                [[field(r[c]) for c in columns] for r in rows]
            )
            lines = csv_lines(columns, _TYPES, delimiter)
            assert lines(rows) == chunk.getvalue()
            assert lines([spi.Row(r, 1) for r in rows]) == chunk.getvalue()
    for types in (_TYPES, None):
        encode = json_line(types)
        for row in rows:
            before = dict(row)
            as_row = spi.Row(dict(row), 1)  # a scan's row: its values are encoded, not copied
            expected = json.loads(json.dumps(json_row(row)))
            assert json.loads(encode(row)) == expected and json.loads(encode(as_row)) == expected
            assert row == before and as_row.mapping == before  # the values are left as they were


@pytest.mark.parametrize("all_at_once", [False, True])
def test_printed_json_and_csv_come_in_chunks_in_order(monkeypatch: pytest.MonkeyPatch, all_at_once: bool) -> None:
    rows = [{"k": i, "v": f"x{i}" if i != 700 else 'a "quoted", value'} for i in range(1300)]
    types = {"k": FieldType.LONG, "v": FieldType.STRING}
    for fmt in (OutputFormat.json, OutputFormat.ndjson, OutputFormat.csv):
        out = io.StringIO()
        printer = RowPrinter(fmt, ["k", "v"], out=out, types=types)
        if all_at_once:
            printer.add_all(iter(rows))
        else:
            for row in rows:
                printer.add(row)
        printer.close()
        text = out.getvalue()
        if fmt is OutputFormat.json:
            assert json.loads(text) == rows
        elif fmt is OutputFormat.ndjson:
            assert [json.loads(line) for line in text.splitlines()] == rows
        else:
            assert list(csv.DictReader(io.StringIO(text))) == [{"k": str(r["k"]), "v": r["v"]} for r in rows]

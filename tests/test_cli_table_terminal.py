"""Issue 38: ``-o table`` at 80 columns over real public data (vega_datasets), run as
a real process with ``COLUMNS=80``: numbers, keys, timestamps and column names are
never cut, only long strings shorten with ``…``, and rows that cannot fit print one
column per line (psql's expanded display)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from cli_support import Kvctl, run_process
from public_data import csv_rows, vega_csv
from rich.cells import cell_len

from kvctl.grid import SAMPLE_ROWS, Grid

WIDTH: dict[str, str | None] = {"COLUMNS": "80", "NO_COLOR": "1"}


@pytest.fixture
def url(tmp_path: Path) -> str:
    """A RocksDB store holding vega_datasets' us-employment (24 columns, month key) and airports."""
    url = f"rocksdb://{tmp_path / 'db'}"
    kv = Kvctl(url)
    kv.ok("table", "create", "employment", "--from", str(vega_csv("us-employment.csv")), "--pk", "month")
    kv.ok("put", "employment", "--file", str(vega_csv("us-employment.csv")))
    kv.ok("table", "create", "airports", "--from", str(vega_csv("airports.csv")), "--pk", "iata", "--null", "NA")
    kv.ok("put", "airports", "--file", str(vega_csv("airports.csv")), "--null", "NA")
    return url


def table(url: str, *args: str) -> list[str]:
    """The lines of ``kvctl ARGS -o table`` run as a process at 80 columns."""
    res = run_process("--url", url, *args, "-o", "table", env=WIDTH)
    assert res.code == 0, res
    return res.out.splitlines()


def test_wide_numbers_that_cannot_fit_print_one_column_per_line(url: str) -> None:
    first = csv_rows(vega_csv("us-employment.csv"))[0]
    lines = table(url, "scan", "employment", "--limit", "2")
    assert lines[0].startswith("-[ RECORD 1 ]") and sum(line.startswith("-[ RECORD ") for line in lines) == 2
    record = lines[1 : lines.index(next(line for line in lines[1:] if line.startswith("-[ RECORD 2 ]")))]
    fields = {name.strip(): value for name, _, value in (line.partition(" | ") for line in record)}
    assert fields.pop("month").startswith(first.pop("month") or "")  # a timestamp, whole
    assert {k: float(v) for k, v in fields.items()} == {k: float(v or "nan") for k, v in first.items()}
    assert all(cell_len(line) <= 80 for line in lines) and "…" not in "".join(lines)


def test_numbers_and_keys_stay_whole_while_long_strings_give_way(url: str) -> None:
    airports = csv_rows(vega_csv("airports.csv"))[:40]
    lines = table(url, "scan", "airports", "--limit", "40")
    assert lines[0].startswith("┏") and all(cell_len(line) <= 80 for line in lines), lines
    body = lines[3:-1]
    assert len(body) == 40 and any("…" in line for line in body)
    for line, row in zip(body, airports):
        cells = [c.strip() for c in line.strip("│").split("│")]
        assert cells[0] == row["iata"]
        assert [float(c) for c in cells[-2:]] == [float(row["latitude"] or 0), float(row["longitude"] or 0)], line


def test_stats_columns_are_named_whole(url: str) -> None:
    columns = ["nonfarm", "private_service_providing"]
    names = [f"{c}.{s}" for c in columns for s in ("min", "max", "nulls", "sum", "avg")]
    args = ["stats", "employment", *(a for c in columns for a in ("--column", c))]
    lines = table(url, *args)
    assert {line.partition(" | ")[0].strip() for line in lines[1:]} == {"count", *names}, lines
    assert "…" not in "".join(lines)
    res = run_process("--url", url, *args, "-o", "csv", env=WIDTH)
    assert res.out.splitlines()[0].split(",") == ["count", *names]
    res = run_process("--url", url, *args, "-o", "tsv", env=WIDTH)
    assert res.out.splitlines()[0].split("\t") == ["count", *names]


def test_a_number_after_the_sample_is_printed_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    out = io.StringIO()
    grid = Grid(["id", "text"], out)
    for i in range(SAMPLE_ROWS):  # the sample sets the widths: a later, wider number comes whole
        grid.add([str(i), "short"], [False, True])
    grid.add(["12345678901234567890", "x" * 100], [False, True])
    grid.close()
    last = out.getvalue().splitlines()[-2]
    assert "│ 12345678901234567890 │" in last and last.rstrip("│ ").endswith("…"), last

"""The ``table`` output grid and csv fields (kvctl.grid, kvctl.render)."""

from __future__ import annotations

import datetime as dt
import io

import pytest

from kvctl.grid import SAMPLE_ROWS, Grid
from kvctl.output import OutputFormat, RowPrinter
from kvctl.render import field


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
        grid.add([str(i), "x"])
    assert out.getvalue() == ""  # still sampling
    grid.add(["last", "y"])
    assert len(_lines(out)) == 3 + SAMPLE_ROWS  # top, header, rule, the sample
    grid.add(["a much longer key than any sampled", "two\nlines"])
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
    grid.add(["1", "y" * 100])
    grid.add(["2", "null"])
    grid.close()
    lines = _lines(out)
    assert all(len(line) <= 40 for line in lines if "\x1b" not in line)
    assert "y" * 20 in lines[3] and lines[3].rstrip("│ ").endswith("…")
    assert "\x1b[2m" in lines[4]
    monkeypatch.setenv("NO_COLOR", "1")
    plain = _Terminal()
    grid = Grid(["id"], plain)
    grid.add(["null"])
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

"""``-o table`` measured in display widths (CJK, emoji, zero-width characters), and
rows that cannot fit the terminal printed one column per line (issue 26)."""

from __future__ import annotations

import io

import pytest
from rich.cells import cell_len

from kvctl.grid import Grid


class Terminal(io.StringIO):
    """A terminal-like output (colour off with NO_COLOR)."""

    def isatty(self) -> bool:
        return True


def test_wide_and_zero_width_characters_keep_the_borders_in_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    out = io.StringIO()
    grid = Grid(["name", "v"], out)
    for name in ["東京", "żółw 🐢", "e\u0301\u200bx", "plain"]:
        grid.add([name, "1"], [True, False])
    grid.close()
    lines = out.getvalue().splitlines()
    assert len({cell_len(line) for line in lines}) == 1, lines  # every line as wide on screen
    assert "│ 東京    │ 1 │" in lines


def test_a_cut_wide_value_stays_in_its_column(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "30")
    monkeypatch.setenv("NO_COLOR", "1")
    out = Terminal()
    grid = Grid(["id", "text"], out)
    grid.add(["1", "漢字" * 30], [False, True])
    grid.close()
    lines = out.getvalue().splitlines()
    assert {cell_len(line) for line in lines} == {30} and lines[3].rstrip("│ ").endswith("…"), lines


def test_rows_that_cannot_fit_go_one_column_per_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    monkeypatch.setenv("NO_COLOR", "1")
    headers = [f"column{i}" for i in range(8)]
    out = Terminal()
    grid = Grid(headers, out)
    grid.add([f"value{i}" for i in range(8)], [True] * 8)
    grid.add(["null", "two\nlines", *["x"] * 6], [False] + [True] * 7)
    grid.close()
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("-[ RECORD 1 ]") and lines[1] == "column0 | value0"
    assert lines[9].startswith("-[ RECORD 2 ]") and lines[11] == "column1 | two⏎lines"
    assert len(lines) == 18 and not any("┃" in line or "│" in line for line in lines)

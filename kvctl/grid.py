"""The ``table`` output: a text grid drawn as rows arrive, in bounded memory.

Column widths come from the header and a bounded sample of the first rows
(:data:`SAMPLE_ROWS`), so the first rows appear at once and a long ``--all`` scan
never waits for, or holds, the whole result. The grid fits the terminal: when the
sampled widths do not, the widest columns give way. A cell wider than its column
(in the sample or later) is cut with ``…``: the table is for reading; ``-o json``
or ``csv`` give whole values. ``null`` is dim on a colour terminal (not with
``NO_COLOR``, nor when the output is not a terminal).

Widths are display widths (``rich.cells.cell_len``: a CJK character or an emoji
takes two columns, a combining mark or a zero-width space none), so the borders
line up on a terminal. When the columns do not fit the terminal even at
:data:`MIN_WIDTH` each (a terminal would wrap every line), the rows are printed one
column per line instead, as psql's expanded display (backslash x) does: a ``-[ RECORD N ]`` line, then
``column | value`` lines with whole values.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from typing import TextIO

from rich.cells import cell_len, set_cell_size

SAMPLE_ROWS = 200
"""Rows whose cells set the column widths (with the header)."""
MIN_WIDTH = 6
"""Narrowest a column gets when the grid is shrunk to fit the terminal."""
_DIM, _RESET = "\x1b[2m", "\x1b[0m"


class Grid:
    """Draws rows of text cells under ``headers`` (call :meth:`add` per row, then
    :meth:`close`)."""

    def __init__(self, headers: list[str], out: TextIO) -> None:
        self.headers = headers
        self.out = out
        self._sample: list[list[str]] | None = []
        self._widths: list[int] = []
        self._dim = _is_colour_terminal(out)
        self._records = 0
        """Rows printed one column per line so far (0: a grid, or nothing yet)."""
        self._expanded = False

    def add(self, cells: list[str]) -> None:
        """Draw one row (held until the sample is complete)."""
        if self._sample is None:
            self.out.write(self._record(cells) if self._expanded else self._line(cells))
            return
        self._sample.append(cells)
        if len(self._sample) >= SAMPLE_ROWS:
            self._flush_sample()

    def close(self) -> None:
        """Draw what is held and the bottom border."""
        if self._sample is not None:
            self._flush_sample()
        if not self._expanded:
            self.out.write("└" + "┴".join("─" * (w + 2) for w in self._widths) + "┘\n")

    def _flush_sample(self) -> None:
        sample = self._sample or []
        self._sample = None
        widths = [cell_len(h) for h in self.headers]
        for cells in sample:
            widths = [max(w, cell_len(_one_line(c))) for w, c in zip(widths, cells)]
        total = _terminal_width(self.out)
        self._widths = _fit(widths, total)
        if total is not None and sum(self._widths) + 3 * len(self._widths) + 1 > total:
            self._expanded = True  # would wrap: one column per line
            self.out.write("".join(self._record(cells) for cells in sample))
            return
        top = "┏" + "┳".join("━" * (w + 2) for w in self._widths) + "┓\n"
        head = "┃" + "┃".join(f" {_cut(h, w)} " for h, w in zip(self.headers, self._widths)) + "┃\n"
        rule = "┡" + "╇".join("━" * (w + 2) for w in self._widths) + "┩\n"
        self.out.write(top + head + rule + "".join(self._line(cells) for cells in sample))

    def _line(self, cells: Iterable[str]) -> str:
        parts = []
        for cell, width in zip(cells, self._widths):
            text = f" {_cut(cell, width)} "
            parts.append(_DIM + text + _RESET if self._dim and cell == "null" else text)
        return "│" + "│".join(parts) + "│\n"

    def _record(self, cells: list[str]) -> str:
        """One row as ``-[ RECORD N ]`` and a ``column | value`` line per column."""
        self._records += 1
        name_width = max((cell_len(h) for h in self.headers), default=0)
        lines = [f"-[ RECORD {self._records} ]" + "-" * max(name_width - 10, 3) + "\n"]
        for header, cell in zip(self.headers, cells):
            value = _one_line(cell)
            shown = _DIM + value + _RESET if self._dim and cell == "null" else value
            lines.append(f"{header}{' ' * (name_width - cell_len(header))} | {shown}\n")
        return "".join(lines)


def _one_line(text: str) -> str:
    """``text`` with its line breaks shown as ``⏎``."""
    if "\n" in text or "\r" in text:
        text = text.replace("\r\n", "⏎").replace("\n", "⏎").replace("\r", "⏎")
    return text


def _cut(text: str, width: int) -> str:
    """``text`` on one line, exactly ``width`` terminal columns: padded, or cut with …
    (display widths: wide characters count two, zero-width ones nothing)."""
    text = _one_line(text)
    if cell_len(text) <= width:
        return text + " " * (width - cell_len(text))
    return set_cell_size(text, max(width - 1, 0)) + "…"


def _fit(widths: list[int], total: int | None) -> list[int]:
    """``widths`` shrunk (widest first, not below MIN_WIDTH) so the grid fits ``total``
    characters; unchanged when it fits or the width is unknown."""
    if total is None:
        return widths
    budget = total - (3 * len(widths) + 1)  # borders and padding
    widths = [min(w, max(budget, MIN_WIDTH)) for w in widths]
    while sum(widths) > budget:
        widest = max(range(len(widths)), key=widths.__getitem__)
        if widths[widest] <= MIN_WIDTH:
            break
        widths[widest] -= 1
    return widths


def _terminal_width(out: TextIO) -> int | None:
    """The terminal's width when ``out`` is a terminal (or COLUMNS is set), else None."""
    if "COLUMNS" in os.environ or _isatty(out):
        return shutil.get_terminal_size().columns
    return None


def _is_colour_terminal(out: TextIO) -> bool:
    return _isatty(out) and not os.environ.get("NO_COLOR")


def _isatty(out: TextIO) -> bool:
    isatty = getattr(out, "isatty", None)
    return bool(isatty and isatty())

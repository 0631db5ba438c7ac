"""The ``table`` output: a text grid drawn as rows arrive, in bounded memory.

Column widths come from the header and a bounded sample of the first rows
(:data:`SAMPLE_ROWS`), so the first rows appear at once and a long ``--all`` scan
never waits for, or holds, the whole result. The grid fits the terminal: when the
sampled widths do not, the widest string columns give way. Only strings are cut
(with ``…``): a number, key, timestamp, boolean, bytes value or column name is
never cut (CLI.md, "Terminal output"); a later row's value of those wider than its
column is printed whole, pushing that line's border out. ``-o json`` or ``csv``
give whole values. ``null`` is dim on a colour terminal (not with ``NO_COLOR``,
nor when the output is not a terminal). Control characters in a value show as
``\\xNN`` escapes and line breaks as ``⏎`` (:func:`spi.textvalues.visible`): a
value never sends a terminal an escape sequence.

Widths are display widths (``rich.cells.cell_len``: a CJK character or an emoji
takes two columns, a combining mark or a zero-width space none), so the borders
line up on a terminal. When the columns do not fit the terminal with their strings
cut to :data:`MIN_WIDTH` (a terminal would wrap every line), the rows are printed
one column per line instead, as psql's expanded display (backslash x) does: a ``-[ RECORD N ]`` line, then
``column | value`` lines with whole values.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from typing import TextIO

from rich.cells import cell_len, set_cell_size

from kvctl.render import is_terminal, visible

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
        self._sample: list[tuple[list[str], list[bool]]] | None = []
        self._widths: list[int] = []
        self._dim = _is_colour_terminal(out)
        self._records = 0
        """Rows printed one column per line so far (0: a grid, or nothing yet)."""
        self._expanded = False

    def add(self, cells: list[str], cuttable: list[bool]) -> None:
        """Draw one row (held until the sample is complete); ``cuttable`` says which
        cells may be cut to fit (strings: not numbers, keys, timestamps, booleans)."""
        if self._sample is None:
            self.out.write(self._record(cells) if self._expanded else self._line(cells, cuttable))
            return
        self._sample.append((cells, cuttable))
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
        floors = list(widths)  # what a column cannot go below: its name, its values that are not cut
        for cells, cuttable in sample:
            for i, (cell, cut) in enumerate(zip(cells, cuttable)):
                width = cell_len(_one_line(cell))
                widths[i] = max(widths[i], width)
                floors[i] = max(floors[i], min(width, MIN_WIDTH) if cut else width)
        total = _terminal_width(self.out)
        self._widths = _fit(widths, floors, total)
        if total is not None and sum(self._widths) + 3 * len(self._widths) + 1 > total:
            self._expanded = True  # would wrap: one column per line
            self.out.write("".join(self._record(cells) for cells, _ in sample))
            return
        top = "┏" + "┳".join("━" * (w + 2) for w in self._widths) + "┓\n"
        head = "┃" + "┃".join(f" {_cut(h, w, False)} " for h, w in zip(self.headers, self._widths)) + "┃\n"
        rule = "┡" + "╇".join("━" * (w + 2) for w in self._widths) + "┩\n"
        self.out.write(top + head + rule + "".join(self._line(cells, cuttable) for cells, cuttable in sample))

    def _line(self, cells: Iterable[str], cuttable: Iterable[bool]) -> str:
        parts = []
        for cell, cut, width in zip(cells, cuttable, self._widths):
            text = f" {_cut(cell, width, cut)} "
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
    """``text`` on one line: line breaks shown as ``⏎``, other control characters as
    ``\\xNN`` (a lone carriage return is ``\\x0d``)."""
    if "\n" in text:
        text = text.replace("\r\n", "⏎").replace("\n", "⏎")
    return visible(text)


def _cut(text: str, width: int, cuttable: bool) -> str:
    """``text`` on one line, at least ``width`` terminal columns: padded, or (when
    ``cuttable``) cut with … to exactly ``width`` (display widths: wide characters
    count two, zero-width ones nothing)."""
    text = _one_line(text)
    if cell_len(text) <= width or not cuttable:
        return text + " " * (width - cell_len(text))
    return set_cell_size(text, max(width - 1, 0)) + "…"


def _fit(widths: list[int], floors: list[int], total: int | None) -> list[int]:
    """``widths`` shrunk (widest first, none below its floor) so the grid fits
    ``total`` characters if it can; unchanged when it fits or the width is unknown."""
    if total is None:
        return widths
    budget = total - (3 * len(widths) + 1)  # borders and padding
    widths = [max(f, min(w, budget)) for w, f in zip(widths, floors)]
    while sum(widths) > budget:
        shrinkable = [i for i, (w, f) in enumerate(zip(widths, floors)) if w > f]
        if not shrinkable:
            break
        widths[max(shrinkable, key=widths.__getitem__)] -= 1
    return widths


def _terminal_width(out: TextIO) -> int | None:
    """The terminal's width when ``out`` is a terminal (or COLUMNS is set), else None."""
    if "COLUMNS" in os.environ or is_terminal(out):
        return shutil.get_terminal_size().columns
    return None


def _is_colour_terminal(out: TextIO) -> bool:
    return is_terminal(out) and not os.environ.get("NO_COLOR")

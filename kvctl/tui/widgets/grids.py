"""The two grids of the dashboard: the table list and a page of rows.

Cells show values as typed on the command line (:func:`kvctl.render.word`: ``null``,
``b64:...`` bytes, ISO 8601 timestamps), cut to :data:`MAX_CELL` characters on one
line, control characters as ``\\xNN`` (:func:`kvctl.render.visible`); the row detail
shows them whole. A cell is a :class:`Cell`: one piece of text in one style, which
draws in half the time of a Rich ``Text`` (paging draws every cell of the new page).
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import DataTable

from kvctl.render import visible, word
from kvctl.tui.live import CHANGED, DELETED, NEW

MAX_CELL = 40
"""Characters of a value shown in a cell (the row detail shows all of it)."""
KEY_MARK = "⚷"
"""Marks the header of a key column (key columns come first, in bold)."""
MARKS = {CHANGED: ("●", "bold yellow"), NEW: ("+", "bold green"), DELETED: ("✗", "bold red")}
"""The label of a row the live view marks: what happened to it (see :mod:`kvctl.tui.live`)."""


class Cell:
    """One line of text in one style (a Rich renderable; ``str()`` is the text)."""

    __slots__ = ("style", "text", "width")

    def __init__(self, text: str, style: str = "") -> None:
        self.text = text
        self.style = style
        self.width = cell_len(text)

    def __str__(self) -> str:
        return self.text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """The text as one segment (the grid cuts it to the column's width)."""
        yield Segment(self.text, console.get_style(self.style) if self.style else None)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        """As wide as the text."""
        return Measurement(self.width, self.width)

    def struck(self) -> Cell:
        """The cell struck through and dim (a deleted row)."""
        return Cell(self.text, f"{self.style} strike dim".strip())


def cell(value: Any) -> Cell:
    """A value as a one-line cell: nulls dim, line breaks as ``↵``, other control
    characters as ``\\xNN``, long values cut with ``…``."""
    text = visible(word(value).replace("\r\n", "↵").replace("\n", "↵"))
    if len(text) > MAX_CELL:
        text = text[: MAX_CELL - 1] + "…"
    return Cell(text, "dim" if value is None else "")


def header(name: str, is_key: bool) -> Text:
    """A column's header: a key column bold and marked with :data:`KEY_MARK`."""
    return Text(f"{KEY_MARK} {name}", style="bold") if is_key else Text(name)


class KeyedGrid(DataTable[Any]):
    """A grid whose keys the footer shows, also after a load: Textual leaves a loading
    widget's keys out of the footer but does not bring them back when the loading ends
    (the table list's footer lacked "⏎ Open" after a slow first read)."""

    def watch_loading(self, loading: bool) -> None:
        """Show the keys that apply now (a loading grid takes none)."""
        if self.is_attached:
            self.screen.refresh_bindings()


class TablesGrid(KeyedGrid):
    """The table list: one row per table."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "Open", key_display="⏎", tooltip="Open the table's rows")
    ]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)


class RowsGrid(KeyedGrid):
    """One page of a table's rows. Moving past the first or last row, page up/down,
    home and end ask the rows screen for another page (:class:`PageRequested`)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "Open", key_display="⏎", tooltip="Row detail: every column in full"),
        Binding("pagedown", "page_down", "Page", key_display="PgDn", show=False, tooltip="Next page"),
        Binding("pageup", "page_up", "Page", key_display="PgUp", show=False, tooltip="Previous page"),
        Binding("home", "first_page", "First", key_display="Home", show=False, tooltip="First page"),
        Binding("end", "last_page", "Last", key_display="End", show=False, tooltip="Last page"),
    ]

    class PageRequested(Message):
        """The user moved past this page: ``direction`` is ``next``, ``previous``,
        ``first`` or ``last``; ``cursor`` where the cursor goes on the new page
        (``top``, ``bottom`` or ``same``)."""

        def __init__(self, direction: str, cursor: str) -> None:
            super().__init__()
            self.direction = direction
            self.cursor = cursor

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)

    @property
    def visible_rows(self) -> int:
        """How many rows fit on screen (the page size), at least 5."""
        return max(5, self.scrollable_content_region.height - 1)

    def action_cursor_down(self) -> None:
        """Down; from the last row, on to the next page."""
        if self.row_count and self.cursor_row >= self.row_count - 1:
            self.post_message(self.PageRequested("next", "top"))
        else:
            super().action_cursor_down()

    def action_cursor_up(self) -> None:
        """Up; from the first row, back to the previous page."""
        if self.cursor_row <= 0:
            self.post_message(self.PageRequested("previous", "bottom"))
        else:
            super().action_cursor_up()

    def action_page_down(self) -> None:
        """The next page (the cursor keeps its line)."""
        self.post_message(self.PageRequested("next", "same"))

    def action_page_up(self) -> None:
        """The previous page (the cursor keeps its line)."""
        self.post_message(self.PageRequested("previous", "same"))

    def action_first_page(self) -> None:
        """The first page, the cursor on its first row."""
        self.post_message(self.PageRequested("first", "top"))

    def action_last_page(self) -> None:
        """The last page, the cursor on its last row."""
        self.post_message(self.PageRequested("last", "bottom"))

    def show_rows(
        self,
        columns: tuple[str, ...],
        keys: tuple[str, ...],
        rows: list[Any],
        cursor: int,
        marks: list[str | None] | None = None,
    ) -> None:
        """Replace the grid's content by ``rows`` (mappings of ``columns``; key columns
        marked, :func:`header`) and put the cursor on row ``cursor``. ``marks`` (the live view)
        labels each row with what happened to it (:data:`MARKS`; None: nothing), and
        strikes through the rows deleted."""
        current = tuple(str(k.value) for k in self.columns)
        if current != columns:
            self.clear(columns=True)
            for name in columns:
                self.add_column(header(name, name in keys), key=name)
        else:
            self.clear()
        if marks is None:
            self.add_rows([cell(row.get(c)) for c in columns] for row in rows)
        else:
            for row, mark in zip(rows, marks):
                cells = [cell(row.get(c)) for c in columns]
                if mark == DELETED:
                    cells = [c.struck() for c in cells]
                symbol, style = MARKS.get(mark or "", (" ", ""))
                self.add_row(*cells, label=Text(symbol, style=style))
        if rows:
            self.move_cursor(row=min(max(cursor, 0), len(rows) - 1), animate=False, scroll=True)

"""The two grids of the dashboard: the table list and a page of rows.

Cells show values as typed on the command line (:func:`kvctl.render.word`: ``null``,
``b64:...`` bytes, ISO 8601 timestamps), cut to :data:`MAX_CELL` characters on one
line, control characters as ``\\xNN`` (:func:`kvctl.render.visible`); the row detail
shows them whole.
"""

from __future__ import annotations

from typing import Any, ClassVar

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


def cell(value: Any) -> Text:
    """A value as a one-line cell: nulls dim, line breaks as ``↵``, other control
    characters as ``\\xNN``, long values cut with ``…``."""
    text = visible(word(value).replace("\r\n", "↵").replace("\n", "↵"))
    if len(text) > MAX_CELL:
        text = text[: MAX_CELL - 1] + "…"
    return Text(text, style="dim" if value is None else "", no_wrap=True)


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
    """One page of a table's rows. Moving past the first or last row, and page
    up/down, ask the rows screen for the neighbouring page (:class:`PageRequested`)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "Open", key_display="⏎", tooltip="Row detail: every column in full"),
        Binding("pagedown", "page_down", "Page", key_display="PgDn", show=False, tooltip="Next page"),
        Binding("pageup", "page_up", "Page", key_display="PgUp", show=False, tooltip="Previous page"),
    ]

    class PageRequested(Message):
        """The user moved past this page: ``direction`` is ``next`` or ``previous``;
        ``cursor`` where the cursor goes on the new page (``top``, ``bottom`` or ``same``)."""

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
                    for text in cells:
                        text.stylize("strike dim")
                symbol, style = MARKS.get(mark or "", (" ", ""))
                self.add_row(*cells, label=Text(symbol, style=style))
        if rows:
            self.move_cursor(row=min(max(cursor, 0), len(rows) - 1), animate=False, scroll=True)

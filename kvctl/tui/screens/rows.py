"""A table's rows: a page that fills the screen, paged by key (``scan_page`` tokens;
``End`` reads the last page backwards, ``Home`` the first), filtered in ``--where``
syntax, ordered by the key or an index, with row detail, go to key,
add/edit/delete, copy, export (:mod:`kvctl.tui.screens.exporting`) and the live view
(``w``, :mod:`kvctl.tui.live`).

The screen owns what is shown (:class:`Query`, :class:`Position`); workers read pages
and counts and hand back results, which are dropped if the user has moved on. The
total is counted in the background (:mod:`kvctl.tui.counter`) and kept in the
session; the dashboard's own writes keep it exact, ``r`` counts again.
"""

from __future__ import annotations

import shlex
import time
from dataclasses import replace
from typing import Any, ClassVar

from textual import events, on, work
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.timer import Timer
from textual.widgets import DataTable, Header, Input, Static
from textual.worker import get_current_worker

import spi
from kvctl.tui.browser import (
    LAST_PAGE,
    Cursor,
    Order,
    PageView,
    Position,
    Query,
    count_change,
    delete_row,
    earlier_position,
    filter_example,
    hidden_cursor,
    jump_position,
    key_of,
    key_words,
    next_position,
    plural,
    previous_position,
    read_page,
)
from kvctl.tui.counter import count_rows
from kvctl.tui.history import FilterHistory
from kvctl.tui.screens import gone
from kvctl.tui.screens.detail import RowDetailScreen, SpecScreen, row_json
from kvctl.tui.screens.dialogs import ConfirmScreen, OrderScreen, PromptScreen
from kvctl.tui.screens.exporting import ExportingScreen
from kvctl.tui.screens.info import InfoScreen
from kvctl.tui.screens.live import WATCH_HELP, LiveScreen
from kvctl.tui.screens.row_form import RowFormScreen, Saved
from kvctl.tui.session import Session, error_text
from kvctl.tui.widgets.filter_bar import FilterBar
from kvctl.tui.widgets.footer import KeysFooter
from kvctl.tui.widgets.grids import RowsGrid

BUSY_AFTER = 0.15
"""Seconds a read may take before the loading indicator shows (no flicker on fast pages)."""
QUIET = 0.3
"""Seconds without a page read, from its start and from its showing, before the
background count goes on: paging through a table is never slowed by counting it (the
count waits for a pause)."""
CHROME = 9
"""Screen lines that are not rows: header, filter, grid borders and column names, status, footer."""


class RowsScreen(ExportingScreen, LiveScreen):
    """The rows of one table."""

    BINDINGS: ClassVar[list[BindingType]] = [
        # a priority binding runs as the key is read, so the keys typed right after / go
        # to the filter (see action_filter)
        Binding(
            "slash", "filter", "Filter", key_display="/", tooltip="Filter the rows (--where syntax)", priority=True
        ),
        Binding("a", "add", "Add", tooltip="Add a row"),
        Binding("e", "edit", "Edit", tooltip="Edit the row under the cursor"),
        Binding("d", "delete", "Delete", tooltip="Delete the row under the cursor (asks first)"),
        Binding("s", "spec", "Spec", tooltip="Show the table's spec"),
        Binding("i", "info", "Info", tooltip="Table info: rows, size, changes per minute, column stats, a histogram"),
        Binding("g", "goto", "Go to", tooltip="Go to a key (col=value words)"),
        Binding("o", "order", "Order", tooltip="Order by the key or an index"),
        Binding("r", "refresh", "Refresh", tooltip="Read the page and count again (keeps filter, order, position)"),
        Binding("x", "export", "Export", tooltip="Export the current view to a CSV, NDJSON or Parquet file"),
        Binding("c", "copy", "Copy", tooltip="Copy the row under the cursor as JSON"),
        Binding("w", "watch", "Watch", tooltip=WATCH_HELP),
        Binding("escape", "back", "Back", key_display="esc", tooltip="Back to the table list"),
    ]

    def __init__(self, session: Session, table: str, history: FilterHistory, *, live: bool = False) -> None:
        super().__init__(live=live)
        self.session = session
        self.table_name = table
        self.history = history
        self.spec: spi.TableSpec | None = None
        self.rows_query = Query(table)
        self.position = Position()
        self.view: PageView | None = None
        self._counting: tuple[Query, int] | None = None
        self._busy_timer: Timer | None = None
        self._page_size = 0
        self._pending: tuple[Position, Cursor, bool, bool] | None = None
        """The read on its way (position, cursor, reload_spec, previous), until shown."""
        self._refocus = False
        """The rows had the focus when the loading indicator covered them (a loading
        widget cannot keep the focus: Textual moves it on), so it goes back after."""
        self._last_read = 0.0
        self._example_of: spi.TableSpec | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield FilterBar(lambda: self.history.entries(self.table_name), id="filter")
        yield RowsGrid(id="rows")
        yield Static("", id="status")
        yield KeysFooter()

    def on_mount(self) -> None:
        """Read the first page now (sized for the screen; a resize corrects it)."""
        self.set_focus(self.grid)  # before the read shows the grid loading (unfocusable)
        self._load(Position(), Cursor(), reload_spec=True)
        if self.live_at_start:
            self.action_watch()

    @property
    def page_pending(self) -> bool:
        """True while a page read is on its way (not yet shown or failed)."""
        return self._pending is not None

    def _page_rows(self) -> int:
        """Rows that fit the grid (estimated from the screen before the first layout)."""
        if self.grid.size.height:
            return self.grid.visible_rows
        return max(5, self.app.size.height - CHROME)

    @property
    def grid(self) -> RowsGrid:
        """The rows grid."""
        return self.query_one(RowsGrid)

    @property
    def filter_bar(self) -> FilterBar:
        """The filter bar."""
        return self.query_one(FilterBar)

    def current_row(self) -> spi.Row | None:
        """The row under the cursor."""
        if self.view is None or not self.view.rows:
            return None
        index = self.grid.cursor_row
        return self.view.rows[index] if 0 <= index < len(self.view.rows) else None

    # ------------------------------------------------------------------ reading pages
    def _load(self, position: Position, cursor: Cursor, *, reload_spec: bool = False, previous: bool = False) -> None:
        if self._busy_timer is not None:
            self._busy_timer.stop()
        self._busy_timer = self.set_timer(BUSY_AFTER, self._show_busy)
        self._page_size = self._page_rows()
        self._last_read = time.monotonic()
        self._reading = True  # the live view holds its events until this page is shown
        self._pending = (position, cursor, reload_spec, previous)
        self._read(position, cursor, self.rows_query, self._page_size, reload_spec, previous)

    def _show_busy(self) -> None:
        if self._busy_timer is None:
            # The page came first: Textual's timer queues its call, so stopping the timer
            # does not take back a call already queued (the indicator stayed up over the
            # page shown, and the grid, loading, took no focus).
            return
        self._refocus = self._refocus or self.focused is self.grid
        self.grid.loading = True

    def _not_busy(self) -> None:
        if self._busy_timer is not None:
            self._busy_timer.stop()
            self._busy_timer = None
        self.grid.loading = False
        if self._refocus:
            self._refocus = False
            self.set_focus(self.grid)

    @work(thread=True, exclusive=True, group="page")
    def _read(
        self, position: Position, cursor: Cursor, query: Query, size: int, reload_spec: bool, previous: bool
    ) -> None:
        worker = get_current_worker()
        try:
            spec = self.session.spec(self.table_name) if reload_spec or self.spec is None else self.spec
            table = self.session.table(self.table_name)
            if previous:
                position = previous_position(table, spec, query, position, size)
            view = read_page(table, spec, query, position, size)
            cursor = hidden_cursor(table, view, cursor)  # in the worker: it may read
        except Exception as exc:
            if not worker.is_cancelled:
                self.app.call_from_thread(self._failed, exc)
            return
        if not worker.is_cancelled:
            self.app.call_from_thread(self._show, view, cursor)

    def _failed(self, exc: Exception) -> None:
        if gone(self, "#status"):
            return
        self._not_busy()
        self._reading, self._pending = False, None
        text = error_text(exc)
        self.query_one("#status", Static).update(f"error: {text}")
        self.notify(text, severity="error", timeout=10)

    def _show(self, view: PageView, cursor: Cursor) -> None:
        if not self.is_attached:
            return
        self._not_busy()
        self._pending = None
        self._last_read = time.monotonic()
        if not view.rows and not view.at_start and cursor.key is None:
            self._load(view.position, Cursor(line=10**9), previous=True)  # the page emptied: step back
            return
        self.spec, self.view, self.position = view.spec, view, view.position
        if self._example_of is not view.spec and (view.rows or self._example_of is None):
            self._example_of = view.spec  # once per spec: paging does not change the example
            self.filter_bar.show_example(filter_example(view.spec, view.rows[0] if view.rows else None))
        self.live_page(view, self._page_size)
        if self._count_of(view.query) is None and (self._counting is None or self._counting[0] != view.query):
            self._counting = (view.query, 0)
            self._count(view.spec, view.query)
        self._show_page(cursor)

    def _show_page(self, cursor: Cursor) -> None:
        """Show ``self.view`` (marked by the live view) with the cursor at ``cursor``."""
        view = self.view
        if view is None:
            return
        line = cursor.line
        if cursor.key is not None:
            keys = [key_of(view.spec, row) for row in view.rows]
            if cursor.key in keys:
                line = keys.index(cursor.key)
            elif cursor.missing:
                self.notify(cursor.missing)
        elif cursor.missing and not cursor.found(view.spec, view.rows):
            self.notify(cursor.missing)
        self.grid.show_rows(view.columns, view.spec.primary_key, view.rows, line, self.live_labels())
        self._show_status()

    def _count_of(self, query: Query) -> int | None:
        return self.session.counts.get(query.table, query.where_text)

    def _show_status(self) -> None:
        view = self.view
        if view is None:
            return
        parts = [self.table_name]
        shown = len(view.rows)
        total = self._count_of(view.query)
        first = view.first_row_of(total)
        if not shown:
            rows = ("no rows match" if view.query.where_text else "no rows") if view.at_start else "no rows here"
        elif first is not None:
            last = first + shown - 1
            rows = f"row {last:,}" if shown == 1 else f"rows {first:,}\u2013{last:,}"
        elif view.position.backward:  # numbered once the total is known
            after = view.position.offset or 0
            rows = (
                f"the last {plural(shown, 'row')}"
                if not after
                else f"{plural(shown, 'row')}, then {after:,} to the end"
            )
        else:
            rows = f"{plural(shown, 'row')} from {key_words(view.spec, view.rows[0])}"
        if not shown and view.at_start:
            pass  # "no rows": nothing to count
        elif total is not None:
            rows += f" of {total:,}"
        elif self._counting is not None and self._counting[0] == view.query:
            rows += f" of {self._counting[1]:,}+ (counting…)" if self._counting[1] else " (counting…)"
        elif self.live is not None:
            rows += " (r counts them)"  # the live view could not keep the total
        parts.append(rows)
        if view.query.where_text:
            parts.append(f"where {view.query.where_text}")
        if view.query.order != Order():
            parts.append(f"order by {view.query.order.label}")
        if self.exporting is not None:
            parts.append(f"exporting… {plural(self.exporting, 'row')}")
        if self.live is not None:
            parts.append(self._live_text())
        self.query_one("#status", Static).update(" · ".join(parts))

    @work(thread=True, exclusive=True, group="count")
    def _count(self, spec: spi.TableSpec, query: Query) -> None:
        worker = get_current_worker()

        def progress(n: int) -> bool:
            if n and not worker.is_cancelled:
                self.app.call_from_thread(self._count_progress, query, n)
            while not worker.is_cancelled and time.monotonic() - self._last_read < QUIET:
                time.sleep(QUIET / 4)
            return not worker.is_cancelled

        try:
            table = self.session.table(query.table)
            count = count_rows(table, spec, query.where(spec), progress, server=self.session.server)
            through = self.count_through()
        except Exception as exc:
            if not worker.is_cancelled:
                self.app.call_from_thread(self._failed, exc)
            return
        if count is not None and not worker.is_cancelled:
            self.session.counts.put(query.table, query.where_text, count, through)
            self.app.call_from_thread(self._count_progress, query, None)

    def _count_progress(self, query: Query, counted: int | None) -> None:
        if gone(self, "#status"):
            return
        self._counting = None if counted is None else (query, counted)
        self._show_status()

    @on(RowsGrid.PageRequested)
    def page(self, event: RowsGrid.PageRequested) -> None:
        """Show the next, previous, first or last page (the last page is one page of
        the reversed scan, and PgUp goes on back from there: no page counts rows)."""
        view = self.view
        if view is None:
            return
        line = {"top": 0, "bottom": 10**9}.get(event.cursor, self.grid.cursor_row)
        if event.direction == "first":
            self._load(Position(), Cursor(line=line))
        elif event.direction == "last":
            self._load(LAST_PAGE, Cursor(line=line))
        elif event.direction == "next":
            position = next_position(view)
            if position is None:
                if event.cursor == "same":
                    self.grid.move_cursor(row=len(view.rows) - 1)
                return
            self._load(position, Cursor(line=line))
        elif view.position.backward:
            self._load(earlier_position(view), Cursor(line=line))
        elif not view.at_start:
            self._load(view.position, Cursor(line=line), previous=True)
        elif event.cursor == "same":
            self.grid.move_cursor(row=0)

    def on_resize(self, event: events.Resize) -> None:
        """A new height is a new page size: read the page again from its start (or,
        while a page is on its way, that page: not the one it replaces)."""
        if self._page_rows() == self._page_size:
            return
        if self._pending is not None:
            position, cursor, reload_spec, previous = self._pending
            self._load(position, cursor, reload_spec=reload_spec, previous=previous)
        elif self.view is not None:
            self._load(self.position, self._cursor_here())

    def _cursor_here(self) -> Cursor:
        row = self.current_row()
        key = None if row is None or self.spec is None else key_of(self.spec, row)
        return Cursor(line=self.grid.cursor_row, key=key)

    # ------------------------------------------------------------------ filter, order, go to
    def action_filter(self) -> None:
        """Focus the filter at once: what is typed right after / goes into it (a deferred
        focus left the keys already read to the rows: the s of "status" opened the spec).
        In an input, / is a character."""
        if isinstance(self.focused, Input):
            raise SkipAction()
        self.set_focus(self.filter_bar.input)
        self._refocus = False  # typing a filter while a page loads: the focus stays there

    @on(FilterBar.Left)
    def filter_left(self) -> None:
        """Back to the rows (once they have loaded, when they are loading)."""
        self._refocus = self.grid.loading
        self.grid.focus()

    @on(Input.Submitted, "#where")
    def apply_filter(self, event: Input.Submitted) -> None:
        """Apply the where-clause; a bad one is shown at its position and changes nothing."""
        event.stop()
        if self.spec is None:
            self.notify("the table is still loading")
            return
        text = event.value.strip()
        query = replace(self.rows_query, where_text=text)
        try:
            query.where(self.spec)
        except spi.WhereSyntaxError as exc:
            self.filter_bar.show_error(str(exc), exc.position)
            return
        except spi.KvError as exc:
            found = text.find(exc.column) if exc.column else -1
            self.filter_bar.show_error(str(exc), found + 1 if found >= 0 else None)
            return
        self.filter_bar.applied(text)
        self.history.add(self.table_name, text)
        self.rows_query = query
        self._refocus = self.grid.loading  # a page still on its way: the rows take the focus once shown
        self.set_focus(self.grid)  # now: a deferred focus found the grid loading (unfocusable) when the read was slow
        self._load(Position(), Cursor())

    def action_order(self) -> None:
        """Pick the order: the key or an index."""
        if self.spec is None:
            return

        def chosen(order: Order | None) -> None:
            if order is not None and order != self.rows_query.order:
                self.rows_query = replace(self.rows_query, order=order)
                self._load(Position(), Cursor())

        self.app.push_screen(OrderScreen(self.spec, self.rows_query.order), chosen)

    def action_goto(self) -> None:
        """Ask for a key, or its first columns, and show the rows from there (in key
        order): the cursor on the key's row, or on the first row at or after the prefix."""
        spec = self.spec
        if spec is None:
            return

        def check(text: str) -> tuple[Position, tuple[Any, ...]]:
            return jump_position(spec, shlex.split(text))

        def chosen(found: tuple[Position, tuple[Any, ...]] | None) -> None:
            if found is None:
                return
            position, key = found
            if self.rows_query.order != Order():
                self.rows_query = replace(self.rows_query, order=Order())
                self.notify("showing key order: go to key works in key order")
            if len(key) == len(spec.primary_key):
                note = f"no row {key_words(spec, key)}; showing the rows after it"
                self._load(position, Cursor(key=key, missing=note))
            else:
                note = f"no row with {key_words(spec, key)}; showing the rows after it"
                self._load(position, Cursor(prefix=key, missing=note))

        placeholder = " ".join(f"{column}=…" for column in spec.primary_key)
        title = "Go to key (col=value words; the first key columns go to the first row at or after them)"
        self.app.push_screen(PromptScreen(title, check, placeholder=placeholder), chosen)

    def action_refresh(self) -> None:
        """Read the spec, the page and the count again; filter, order, position and cursor stay."""
        self.session.counts.forget(self.table_name)
        self._counting = None
        self._load(self.position, self._cursor_here(), reload_spec=True)

    # ------------------------------------------------------------------ row actions
    def _need_row(self) -> spi.Row | None:
        row = self.current_row()
        if row is None:
            self.notify("no row here")
        return row

    @on(DataTable.RowSelected, "#rows")
    def detail(self, event: DataTable.RowSelected) -> None:
        """Show every column of the row under the cursor."""
        row = self._need_row()
        if row is None or self.spec is None:
            return

        def closed(result: str | None) -> None:
            if result == "edit":
                self._edit(row)

        self.app.push_screen(RowDetailScreen(self.spec, row), closed)

    def action_add(self) -> None:
        """Add a row."""
        if self.spec is not None:
            self.app.push_screen(RowFormScreen(self.session, self.spec, None), self._saved)

    def action_edit(self) -> None:
        """Edit the row under the cursor."""
        row = self._need_row()
        if row is not None:
            self._edit(row)

    def _edit(self, row: spi.Row) -> None:
        if self.spec is not None:
            self.app.push_screen(RowFormScreen(self.session, self.spec, row), self._saved)

    def _saved(self, saved: Saved | None) -> None:
        spec = self.spec
        if saved is None or spec is None:
            return
        self._wrote(spec, saved.before, saved.after, saved.version)
        words = key_words(spec, saved.key)
        self.notify(f"{'added' if saved.before is None else 'saved'} {words} (version {saved.version})")
        note = None if saved.before is not None else f"{words} is not on this page (g goes to it)"
        self._load(self.position, Cursor(line=self.grid.cursor_row, key=saved.key, missing=note))

    def _wrote(self, spec: spi.TableSpec, before: Any, after: Any, version: int | None) -> None:
        """Keep the known counts exact after one of our writes (a count under way
        restarts); the live view counts it once, from its event or from here."""
        key = key_of(spec, after if after is not None else before)
        if self.live is None or self.live.own_write((key, version)):
            self.session.counts.adjust(self.table_name, lambda where, _: count_change(spec, where, before, after))
        if self._counting is not None:
            self._counting = None

    def action_delete(self) -> None:
        """Delete the row under the cursor, after a confirmation (focus on No)."""
        row = self._need_row()
        spec = self.spec
        if row is None or spec is None:
            return
        line = self.grid.cursor_row

        def answer(yes: bool | None) -> None:
            if yes:
                self._delete(spec, row, line)

        self.app.push_screen(ConfirmScreen(f"Delete row {key_words(spec, row)}?", "Delete"), answer)

    @work(thread=True, group="write")
    def _delete(self, spec: spi.TableSpec, row: spi.Row, line: int) -> None:
        try:
            deleted = delete_row(self.session.table(self.table_name), spec, row)
        except spi.VersionMismatchError:
            self.app.call_from_thread(
                self.notify, "not deleted: the row changed since it was shown (r shows it)", severity="error"
            )
            return
        except Exception as exc:
            self.app.call_from_thread(self.notify, f"not deleted: {error_text(exc)}", severity="error")
            return
        self.app.call_from_thread(self._deleted, spec, row, deleted, line)

    def _deleted(self, spec: spi.TableSpec, row: spi.Row, deleted: bool, line: int) -> None:
        if deleted:
            self._wrote(spec, row, None, None)
            self.notify(f"deleted {key_words(spec, row)}")
        else:
            self.notify(f"{key_words(spec, row)} was already deleted", severity="warning")
        if self.is_attached:
            self._load(self.position, Cursor(line=line))

    def action_copy(self) -> None:
        """Copy the row under the cursor as JSON."""
        row = self._need_row()
        if row is not None and self.spec is not None:
            self.app.copy_to_clipboard(row_json(row))
            self.notify(f"copied {key_words(self.spec, row)} as JSON")

    def action_spec(self) -> None:
        """Show the table's spec."""
        if self.spec is not None:
            self.app.push_screen(SpecScreen(self.spec))

    def action_info(self) -> None:
        """Show the table info view."""
        if self.spec is not None:
            counting = self._counting is not None and not self._counting[0].where_text  # every row
            self.app.push_screen(InfoScreen(self.session, self.spec, counting=counting))

    def action_back(self) -> None:
        """Back to the table list."""
        self.dismiss(None)

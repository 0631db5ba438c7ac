"""The dashboard application: a table list, a filterable page of rows, edits.

All provider I/O runs in thread workers so the UI never blocks; results come back
through ``call_from_thread``. Every operation is a short auto-commit call, so the
dashboard holds no lock while idle.
"""

from __future__ import annotations

from typing import Any

from textual import on, work
from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Footer, Header, Input, OptionList, Static

import spi
from kvctl.render import word
from kvctl.tui.browser import PageView, TableBrowser
from kvctl.tui.screens import ConfirmScreen, EditRowScreen


class DashboardApp(App[None]):
    """Browse and edit the tables of one provider."""

    CSS_PATH = "dashboard.tcss"
    TITLE = "kvctl dashboard"
    BINDINGS = [
        ("q", "quit", "Quit"),
        ("r", "refresh", "Refresh"),
        ("n", "next_page", "Next page"),
        ("p", "previous_page", "Prev page"),
        ("slash", "focus_where", "Filter"),
        ("a", "add_row", "Add"),
        ("e", "edit_row", "Edit"),
        ("d", "delete_row", "Delete"),
    ]

    def __init__(self, url: str, *, provider: Any = None) -> None:
        super().__init__()
        self.url = url
        self._provider = provider
        self.browser: TableBrowser | None = None
        self.view: PageView | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal():
            yield OptionList(id="tables")
            with Vertical(id="main"):
                yield Input(placeholder="where …  (e.g. status = 'open' and total > 10; Enter applies)", id="where")
                yield DataTable(id="rows", cursor_type="row", zebra_stripes=True)
                yield Static("", id="status")
        yield Footer()

    def on_mount(self) -> None:
        """Connect and list the tables."""
        self.sub_title = spi.mask_password(self.url)
        self.load_tables()

    # ------------------------------------------------------------------ workers
    @work(thread=True, exclusive=True, group="io")
    def load_tables(self) -> None:
        """List the provider's tables."""
        try:
            if self._provider is None:
                self._provider = spi.connect(self.url)
            names = self._provider.admin.list_tables()
        except spi.KvError as exc:
            self.call_from_thread(self.show_error, exc)
            return
        self.call_from_thread(self._show_tables, names)

    @work(thread=True, exclusive=True, group="io")
    def load_page(self, move: str = "current") -> None:
        """Read a page of the selected table (``move``: current, next or previous)."""
        browser = self.browser
        if browser is None:
            return
        try:
            view = {"next": browser.next_page, "previous": browser.previous_page}.get(move, browser.current)()
            total = browser.count()
        except spi.KvError as exc:
            self.call_from_thread(self.show_error, exc)
            return
        self.call_from_thread(self._show_page, view, total)

    @work(thread=True, exclusive=True, group="io")
    def save_row(self, row: spi.Row | None, edits: dict[str, str]) -> None:
        """Write an edited or new row, then reload the page."""
        assert self.browser is not None
        try:
            version = self.browser.save(row, edits)
        except spi.KvError as exc:
            self.call_from_thread(self.show_error, exc)
            return
        self.call_from_thread(self.show_status, f"saved (version {version})")
        self.call_from_thread(self.load_page)

    @work(thread=True, exclusive=True, group="io")
    def delete_row(self, row: spi.Row) -> None:
        """Delete a row (only at the version shown), then reload the page."""
        assert self.browser is not None
        try:
            self.browser.delete(row)
        except spi.KvError as exc:
            self.call_from_thread(self.show_error, exc)
            return
        self.call_from_thread(self.show_status, "deleted")
        self.call_from_thread(self.load_page)

    # ---------------------------------------------------------------- UI updates
    def _show_tables(self, names: list[str]) -> None:
        tables = self.query_one("#tables", OptionList)
        tables.clear_options()
        tables.add_options(names)
        self.show_status(f"{len(names)} table(s); pick one" if names else "no tables yet (kvctl table create …)")
        if names:
            tables.highlighted = 0
            self._open(names[0])

    def _open(self, name: str) -> None:
        assert self._provider is not None
        self.browser = TableBrowser(self._provider, name)
        self.query_one("#where", Input).value = ""
        self.load_page()

    def _show_page(self, view: PageView, total: int) -> None:
        self.view = view
        table = self.query_one("#rows", DataTable)
        table.clear(columns=True)
        table.add_columns(*view.columns)
        for i, row in enumerate(view.rows):
            table.add_row(*(word(row[c]) for c in view.columns), key=str(i))
        assert self.browser is not None
        more = "more: n" if view.has_next else "last page"
        where = f" where {self.browser.where_text}" if self.browser.where_text else ""
        self.show_status(f"{self.browser.name}{where}: {total} row(s), page {view.page_number} ({more})")

    def show_status(self, text: str) -> None:
        """Show a one-line status."""
        status = self.query_one("#status", Static)
        status.remove_class("error")
        status.update(text)

    def show_error(self, exc: Exception) -> None:
        """Show an error as one line (the operation changed nothing)."""
        status = self.query_one("#status", Static)
        status.add_class("error")
        status.update(f"error: {exc}")

    def selected_row(self) -> spi.Row | None:
        """The row under the cursor."""
        if self.view is None or not self.view.rows:
            return None
        index = self.query_one("#rows", DataTable).cursor_row
        return self.view.rows[index] if 0 <= index < len(self.view.rows) else None

    # ---------------------------------------------------------------- events
    @on(OptionList.OptionSelected, "#tables")
    def table_chosen(self, event: OptionList.OptionSelected) -> None:
        """Open the chosen table."""
        self._open(str(event.option.prompt))

    @on(Input.Submitted, "#where")
    def where_submitted(self, event: Input.Submitted) -> None:
        """Apply the filter (a bad one shows an error and keeps the old one)."""
        if self.browser is None:
            return
        try:
            self.browser.set_where(event.value)
        except spi.KvError as exc:
            self.show_error(exc)
            return
        self.load_page()
        self.query_one("#rows", DataTable).focus()

    # ---------------------------------------------------------------- actions
    def action_refresh(self) -> None:
        """Re-read the table list and the page."""
        self.load_tables()

    def action_next_page(self) -> None:
        """Next page."""
        self.load_page("next")

    def action_previous_page(self) -> None:
        """Previous page."""
        self.load_page("previous")

    def action_focus_where(self) -> None:
        """Focus the filter."""
        self.query_one("#where", Input).focus()

    def action_add_row(self) -> None:
        """Insert a new row."""
        if self.browser is not None:
            self._edit(None)

    def action_edit_row(self) -> None:
        """Edit the row under the cursor."""
        row = self.selected_row()
        if row is not None:
            self._edit(row)

    def _edit(self, row: spi.Row | None) -> None:
        assert self.browser is not None

        def done(edits: dict[str, str] | None) -> None:
            if edits:
                self.save_row(row, edits)

        self.push_screen(EditRowScreen(self.browser.spec, row), done)

    def action_delete_row(self) -> None:
        """Delete the row under the cursor, after confirmation."""
        row = self.selected_row()
        if row is None or self.browser is None:
            return
        key = ", ".join(f"{k}={word(v)}" for k, v in self.browser.key_of(row).items())

        def done(yes: bool | None) -> None:
            if yes:
                self.delete_row(row)

        self.push_screen(ConfirmScreen(f"Delete row {key}?"), done)

    def on_unmount(self) -> None:
        """Close the provider."""
        if self._provider is not None:
            self._provider.close()

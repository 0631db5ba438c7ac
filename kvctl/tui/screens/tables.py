"""The table list: name, rows, change feed and ttl of every table; ``w`` opens a
table's rows in the live view.

The names and specs are read in one worker; the row counts in another, table after
table (:mod:`kvctl.tui.counter`: one call each, a row counter or the server's count;
on a server once the list has been shown for :data:`SERVER_PAUSE`) and cached in the
session, so coming back to the list or opening a table shows them at once. ``r``
reads everything again.
"""

from __future__ import annotations

import contextlib
import time
from typing import ClassVar

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Header, Static
from textual.widgets.data_table import CellDoesNotExist
from textual.worker import get_current_worker

import spi
from kvctl.tui.counter import count_rows
from kvctl.tui.live import why_not_live
from kvctl.tui.messages import OpenTable
from kvctl.tui.screens.detail import SpecScreen, feed_text, ttl_text
from kvctl.tui.session import Session, error_text
from kvctl.tui.widgets.footer import KeysFooter
from kvctl.tui.widgets.grids import TablesGrid

COLUMNS = (("name", "name"), ("rows", "rows"), ("feed", "change feed"), ("ttl", "ttl"))
SERVER_PAUSE = 0.5
"""Seconds the list is shown before a server store (PostgreSQL) counts its tables: a
count there scans the table in the server, which a table opened at once would share."""


def count_text(count: int | None, counting: int | None = None) -> str:
    """A row count as shown: ``3,376``; ``1,200+…`` while counting; ``…`` before."""
    if count is not None:
        return f"{count:,}"
    return "…" if not counting else f"{counting:,}+…"


class TablesScreen(Screen[None]):
    """Every table of the store; enter opens one."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "spec", "Spec", tooltip="Show the table's spec"),
        Binding("r", "refresh", "Refresh", tooltip="Read the tables again and recount their rows"),
        Binding("w", "watch", "Watch", tooltip="Open the table's rows in the live view (needs a change feed)"),
    ]

    def __init__(self, session: Session) -> None:
        super().__init__()
        self.session = session
        self.specs: dict[str, spi.TableSpec] = {}
        self._select: str | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield TablesGrid(id="tables")
        yield Static("", id="status")
        yield KeysFooter()

    def on_mount(self) -> None:
        """Read the tables."""
        grid = self.query_one(TablesGrid)
        for key, label in COLUMNS:
            grid.add_column(label, key=key)
        self.action_refresh()

    @property
    def grid(self) -> TablesGrid:
        """The table list."""
        return self.query_one(TablesGrid)

    def selected(self) -> str | None:
        """The table under the cursor."""
        names = list(self.specs)
        row = self.grid.cursor_row
        return names[row] if 0 <= row < len(names) else None

    def action_refresh(self, select: str | None = None) -> None:
        """Read the tables again and recount them; the cursor stays on its table, or goes
        to ``select`` (a table just created or altered) once listed."""
        self._select = select
        self.grid.loading = True
        self._list(recount=bool(self.specs))

    @work(thread=True, exclusive=True, group="tables")
    def _list(self, recount: bool) -> None:
        try:
            names = self.session.provider.admin.list_tables()
            specs = {name: self.session.spec(name) for name in names}
        except Exception as exc:
            self.app.call_from_thread(self._failed, exc)
            return
        if recount:
            for name in names:
                self.session.counts.forget(name)
        self.session.table_names = list(names)
        self.app.call_from_thread(self._show, specs)

    def _failed(self, exc: Exception) -> None:
        self.grid.loading = False
        self.query_one("#status", Static).update(f"error: {error_text(exc)}")
        self.notify(error_text(exc), severity="error", timeout=10)

    def _show(self, specs: dict[str, spi.TableSpec]) -> None:
        keep = self._select if self._select in specs else self.selected()
        self._select = None
        self.specs = specs
        grid = self.grid
        grid.loading = False
        grid.clear()
        for name, spec in specs.items():
            known = self.session.counts.get(name, "")
            shown = f"{name} (frozen)" if spec.frozen else name  # its rows are read-only
            grid.add_row(shown, count_text(known), feed_text(spec), ttl_text(spec), key=name)
        if keep in specs:
            grid.move_cursor(row=list(specs).index(keep), animate=False)
        count = len(specs)
        status = f"{count} table{'' if count == 1 else 's'}" if count else "no tables yet: ctrl+p, Create a table"
        self.query_one("#status", Static).update(f"{status} · {self.session.label}")
        self._count([n for n in specs if self.session.counts.get(n, "") is None])

    @work(thread=True, exclusive=True, group="count")
    def _count(self, names: list[str]) -> None:
        worker = get_current_worker()
        if names and self.session.server:  # each count is a scan in the server: not while a table opens
            waited = time.monotonic() + SERVER_PAUSE
            while time.monotonic() < waited and not worker.is_cancelled:
                time.sleep(SERVER_PAUSE / 10)
        for name in names:
            try:
                spec = self.specs[name]

                def progress(n: int, name: str = name) -> bool:
                    if n and not worker.is_cancelled:
                        self.app.call_from_thread(self._counted, name, None, n)
                    return not worker.is_cancelled

                count = count_rows(self.session.table(name), spec, None, progress)
            except spi.TableNotFoundError:
                continue
            except Exception as exc:
                self.app.call_from_thread(self._failed, exc)
                return
            if count is None or worker.is_cancelled:
                return
            self.session.counts.put(name, "", count)
            self.app.call_from_thread(self._counted, name, count, None)

    def _counted(self, name: str, count: int | None, counting: int | None) -> None:
        if name in self.specs:
            text = count_text(count, counting)
            self.grid.update_cell(name, "rows", text, update_width=True)
            self.grid.check_idle()  # the new width waits for the grid's idle, which update_cell does not prompt
            # Textual may draw the cell before its column widens and keep that drawing
            # cached until the table changes again: the last count is set once more
            # after the next refresh, which draws it anew at the column's width.
            if count is not None:
                self.grid.call_after_refresh(self._redrawn, name, text)

    def _redrawn(self, name: str, text: str) -> None:
        with contextlib.suppress(CellDoesNotExist):  # the table list was read again since
            self.grid.update_cell(name, "rows", text)

    @on(DataTable.RowSelected, "#tables")
    def open_table(self, event: DataTable.RowSelected) -> None:
        """Open the chosen table's rows."""
        if event.row_key.value is not None:
            self.post_message(OpenTable(event.row_key.value))

    def action_watch(self) -> None:
        """Open the rows of the table under the cursor in the live view, if it records
        a change feed (else a notification says how to turn one on)."""
        name = self.selected()
        if name is None:
            return
        why = why_not_live(self.session, self.specs[name])
        if why is not None:
            self.notify(why, severity="warning", timeout=8)
            return
        self.post_message(OpenTable(name, live=True))

    def action_spec(self) -> None:
        """Show the spec of the table under the cursor."""
        name = self.selected()
        if name is not None:
            self.app.push_screen(SpecScreen(self.specs[name]))

    def on_screen_suspend(self, event: events.ScreenSuspend) -> None:
        """Another screen is on top: stop counting, so its reads get the store."""
        self.workers.cancel_group(self, "count")

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        """Coming back: show counts learnt meanwhile, and count the tables still unknown."""
        missing = []
        for name in self.specs:
            known = self.session.counts.get(name, "")
            self._counted(name, known, None)
            if known is None:
                missing.append(name)
        if missing:
            self._count(missing)

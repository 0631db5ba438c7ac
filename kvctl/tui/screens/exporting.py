"""Exporting the rows screen's view (``x``): every row of the current filter and order,
not only the page, to a CSV, NDJSON or Parquet file (:mod:`kvctl.tui.export`), in a
thread worker; the status line shows the rows written so far, a notification the end.
"""

from __future__ import annotations

from abc import abstractmethod
from pathlib import Path
from typing import Any

from textual import work
from textual.screen import Screen

import spi
from kvctl.tui.browser import Query, plural
from kvctl.tui.export import export_rows
from kvctl.tui.screens.dialogs import ConfirmScreen, ExportScreen
from kvctl.tui.session import Session, error_text


class ExportingScreen(Screen[None]):
    """The export action of a screen of one table's rows (a mixin of the rows screen)."""

    session: Session
    table_name: str
    spec: spi.TableSpec | None
    rows_query: Query
    exporting: int | None = None
    """The rows an export under way has written (None: no export running)."""

    @abstractmethod
    def _show_status(self) -> None:
        """Show the status line again (with :attr:`exporting`)."""

    def action_export(self) -> None:
        """Export every row of the current view (filter and order) to a file."""
        spec = self.spec
        if spec is None:
            return
        if self.exporting is not None:
            self.notify("an export is already running")
            return
        query = self.rows_query
        what = f"{self.table_name}" + (f" where {query.where_text}" if query.where_text else "")

        def chosen(choice: tuple[str, str] | None) -> None:
            if choice is None:
                return
            path, fmt = choice
            if not Path(path).expanduser().exists():
                self._start_export(spec, query, path, fmt)
                return

            def overwrite(yes: bool | None) -> None:
                if yes:
                    self._start_export(spec, query, path, fmt)

            self.app.push_screen(ConfirmScreen(f"{path} exists. Replace it?", "Replace"), overwrite)

        self.app.push_screen(ExportScreen(f"{self.table_name}.csv", what), chosen)

    def _start_export(self, spec: spi.TableSpec, query: Query, path: str, fmt: str) -> None:
        self.exporting = 0
        self._show_status()
        self._export(spec, query, path, fmt)

    @work(thread=True, exclusive=True, group="export")
    def _export(self, spec: spi.TableSpec, query: Query, path: str, fmt: str) -> None:
        def progress(n: int) -> None:
            self.app.call_from_thread(self._export_progress, n)

        try:
            rows = self.session.table(query.table).scan(**query.scan_options(spec))
            written = export_rows(spec, rows, path, fmt, progress)
        except Exception as exc:
            self.app.call_from_thread(self._exported, f"export failed: {error_text(exc)}", "error")
            return
        self.app.call_from_thread(self._exported, f"exported {plural(written, 'row')} to {path} ({fmt})", "information")

    def _export_progress(self, n: int) -> None:
        self.exporting = n
        if self.is_attached:
            self._show_status()

    def _exported(self, text: str, severity: Any) -> None:
        self.exporting = None
        self.notify(text, severity=severity, timeout=8)
        if self.is_attached:
            self._show_status()


__all__ = ["ExportingScreen"]

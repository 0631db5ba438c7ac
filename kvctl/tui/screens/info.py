"""The table info view (``i`` on the rows): the row count, the size, change events per
minute as a sparkline (or "no change feed"), every column's nulls, min and max, and
a histogram of a numeric column picked from a list (to begin with the first one that
is not a key column: :func:`kvctl.tui.info.histogram_column`).

Each part is read in its own thread worker (:mod:`kvctl.tui.info`) and shown as it
arrives; ``r`` reads them all again; picking another column reads only its histogram.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Header, Label, Select, Sparkline, Static
from textual.worker import get_current_worker

import spi
from kvctl.tui import info
from kvctl.tui.browser import plural
from kvctl.tui.session import Session, error_text
from kvctl.tui.widgets.footer import KeysFooter
from kvctl.tui.widgets.grids import cell, header

BAR = 40
"""Characters of the longest histogram bar."""
WHOLE = frozenset({spi.FieldType.INT, spi.FieldType.LONG})
"""The column types whose histogram buckets hold whole numbers."""


def histogram_text(hist: info.Histogram) -> Text:
    """A histogram as one line per bucket: its range, a bar and its count."""
    text = Text()
    if not hist.counts:
        return Text(f"{hist.column}: no finite values", style="dim")
    most = max(hist.counts) or 1
    ranges = [bucket_text(hist, i) for i in range(len(hist.counts))]
    width = max(len(r) for r in ranges)
    for label, count in zip(ranges, hist.counts):
        text.append(f"{label:>{width}} ", style="bold")
        text.append("█" * round(BAR * count / most) or ("▏" if count else ""), style="green")
        text.append(f" {count:,}\n")
    apart = [f"{hist.nan:,} NaN"] * bool(hist.nan) + [f"{hist.infinite:,} infinite"] * bool(hist.infinite)
    if apart:
        text.append(f"not counted above: {', '.join(apart)}\n", style="dim")
    return text


def bucket_text(hist: info.Histogram, i: int) -> str:
    """The range of bucket ``i``, an en dash between its bounds: ``35.3 - 69.6``; of
    whole numbers ``35 - 69``, or ``2008`` for a bucket of one number."""
    low, high = hist.bounds(i)
    if not hist.whole:
        return f"{low:,.6g} \u2013 {high:,.6g}"
    return f"{low}" if low == high else f"{low} \u2013 {high}"  # as the column's min and max read


def rate_text(counts: list[int]) -> str:
    """The caption of the change sparkline."""
    total = sum(counts)
    return (
        f"change events per minute, the last {info.MINUTES} minutes (oldest left): "
        f"{plural(total, 'event')}, at most {max(counts, default=0):,} in a minute"
    )


class InfoScreen(Screen[None]):
    """Facts about one table: count, size, change rate, column statistics, a histogram."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "refresh", "Refresh", tooltip="Read the table's facts again"),
        Binding("escape", "back", "Back", key_display="esc", tooltip="Back to the rows"),
    ]

    def __init__(self, session: Session, spec: spi.TableSpec) -> None:
        super().__init__()
        self.session = session
        self.spec = spec
        self.table_name = spec.name
        self._stats: dict[str, info.Column] = {}

    def compose(self) -> ComposeResult:
        """Summary, change rate, column statistics, histogram."""
        numeric = info.numeric_columns(self.spec)
        first = info.histogram_column(self.spec)
        yield Header()
        with VerticalScroll(id="info"):
            yield Label(f"Table {self.spec.name}", classes="title")
            yield Static("rows: counting…\nsize: measuring…", id="info-summary")
            yield Label("Changes", classes="subtitle")
            yield Static("reading the change feed…" if self.spec.changes else "no change feed", id="info-rate")
            if self.spec.changes:
                yield Sparkline([0] * info.MINUTES, id="info-sparkline")
            yield Label("Columns", classes="subtitle")
            yield DataTable(id="info-columns", cursor_type="none", show_cursor=False, zebra_stripes=True)
            yield Label("Histogram", classes="subtitle")
            if numeric:
                yield Select([(c, c) for c in numeric], value=first, allow_blank=False, id="info-column")
                yield Static("", id="info-histogram")
            else:
                yield Static("no numeric column", id="info-histogram", classes="hint")
        yield KeysFooter()

    def on_mount(self) -> None:
        """Set up the columns table and read everything."""
        grid = self.query_one("#info-columns", DataTable)
        for key, label in (("column", "column"), ("type", "type"), ("nulls", "nulls"), ("min", "min"), ("max", "max")):
            grid.add_column(label, key=key)
        for f in self.spec.fields:
            grid.add_row(header(f.name, self.spec.is_key(f.name)), str(f.type), "…", "", "", key=f.name)
        self.action_refresh()

    def action_refresh(self) -> None:
        """Read count, statistics, size, histogram and change rate again."""
        self.query_one("#info-columns").loading = True
        self._read_stats()
        self._read_size()
        if self.spec.changes:
            self._read_rate()

    def action_back(self) -> None:
        """Back to the rows."""
        self.dismiss(None)

    # ------------------------------------------------------------------ workers
    @work(thread=True, exclusive=True, group="info-stats")
    def _read_stats(self) -> None:
        try:
            count, columns = info.column_stats(self.session.table(self.table_name), self.spec)
        except Exception as exc:
            self.app.call_from_thread(self._failed, exc)
            return
        self.app.call_from_thread(self._show_stats, count, columns)

    @work(thread=True, exclusive=True, group="info-size")
    def _read_size(self) -> None:
        worker = get_current_worker()
        try:
            rows = self.session.table(self.table_name).scan()
            size = info.scan_sizes(row for row in rows if not worker.is_cancelled)
            disk = info.store_bytes(self.session.url)
        except Exception as exc:
            self.app.call_from_thread(self._failed, exc)
            return
        if not worker.is_cancelled:
            self.app.call_from_thread(self._show_size, size, disk)

    @work(thread=True, exclusive=True, group="info-rate")
    def _read_rate(self) -> None:
        worker = get_current_worker()
        try:
            counts = info.change_rate(
                self.session.provider, self.table_name, keep_going=lambda: not worker.is_cancelled
            )
        except Exception as exc:
            self.app.call_from_thread(self._failed, exc)
            return
        if counts is not None:
            self.app.call_from_thread(self._show_rate, counts)

    @work(thread=True, exclusive=True, group="info-histogram")
    def _read_histogram(self, column: str, low: Any, high: Any) -> None:
        worker = get_current_worker()
        try:
            rows = self.session.table(self.table_name).scan(columns=[column])
            values = (row[column] for row in rows)
            whole = self.spec.type_of(column) in WHOLE
            hist = info.histogram(values, column, low, high, lambda: not worker.is_cancelled, whole=whole)
        except Exception as exc:
            self.app.call_from_thread(self._failed, exc)
            return
        if hist is not None:
            self.app.call_from_thread(self._show_histogram, hist)

    # ------------------------------------------------------------------ showing
    def _failed(self, exc: Exception) -> None:
        if self.is_attached:
            self.query_one("#info-columns").loading = False
            self.notify(error_text(exc), severity="error", timeout=10)

    def _summary(self, rows: str | None = None, size: str | None = None) -> None:
        summary = self.query_one("#info-summary", Static)
        old_rows, _, old_size = str(summary.render()).partition("\n")
        summary.update(f"{rows or old_rows}\n{size or old_size}")

    def _show_stats(self, count: int, columns: list[info.Column]) -> None:
        if not self.is_attached:
            return
        self._summary(rows=f"rows: {count:,}")
        grid = self.query_one("#info-columns", DataTable)
        grid.loading = False
        self._stats = {c.name: c for c in columns}
        for c in columns:
            taken = c.type in info.STAT_TYPES
            grid.update_cell(c.name, "nulls", f"{c.nulls:,}", update_width=True)
            for key, value in (("min", c.min), ("max", c.max)):
                shown = cell(value) if taken and value is not None else Text("-", style="dim")
                grid.update_cell(c.name, key, shown, update_width=True)
        self._histogram_of(self._chosen())

    def _show_size(self, size: int, disk: int | None) -> None:
        if not self.is_attached:
            return
        text = f"size: {info.human_bytes(size)} of values"
        if disk is not None:
            text += f" · the store on disk: {info.human_bytes(disk)} (every table)"
        self._summary(size=text)

    def _show_rate(self, counts: list[int]) -> None:
        if not self.is_attached:
            return
        self.query_one("#info-sparkline", Sparkline).data = counts
        self.query_one("#info-rate", Static).update(rate_text(counts))

    def _show_histogram(self, hist: info.Histogram) -> None:
        if self.is_attached and hist.column == self._chosen():
            title = f"{hist.column}: {plural(sum(hist.counts), 'value')} in {len(hist.counts)} buckets\n"
            self.query_one("#info-histogram", Static).update(Text(title) + histogram_text(hist))

    def _chosen(self) -> str | None:
        found = self.query("#info-column")
        if not found:
            return None
        value = self.query_one("#info-column", Select).value
        return value if isinstance(value, str) else None

    def _histogram_of(self, column: str | None) -> None:
        stats = self._stats.get(column or "")
        if column is None or stats is None:
            return
        self.query_one("#info-histogram", Static).update(f"{column}: counting…")
        self._read_histogram(column, stats.min, stats.max)

    @on(Select.Changed, "#info-column")
    def column_picked(self, event: Select.Changed) -> None:
        """Draw the histogram of the column picked."""
        self._histogram_of(event.value if isinstance(event.value, str) else None)


__all__ = ["InfoScreen", "bucket_text", "histogram_text", "rate_text"]

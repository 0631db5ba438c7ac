"""The table info view (``i`` on the rows): the row count, the size, change events per
minute as a sparkline (or "no change feed"), every column's nulls, min and max, and
a histogram of a numeric column picked from a list (to begin with the first one that
is not a key column: :func:`kvctl.tui.info.histogram_column`).

Each part is read in its own thread worker (:mod:`kvctl.tui.info`) and shown as it
arrives; ``r`` reads them all again; picking another column reads only its histogram.
The count and what the key and the indexes answer (their columns' nulls, min and
max) show first, whatever the table's size; then the parts that read every row start:
the size, the other columns' statistics (in the server on PostgreSQL, in the same
pass as the size elsewhere: a note says how far it got) and the histogram, once its
column's min and max are known.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

from rich.console import RenderableType
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import DataTable, Header, Label, Select, Sparkline, Static
from textual.worker import get_current_worker

import spi
from kvctl.tui import info
from kvctl.tui.browser import plural
from kvctl.tui.screens import gone
from kvctl.tui.session import Session, error_text
from kvctl.tui.widgets.footer import KeysFooter
from kvctl.tui.widgets.grids import cell, header

BAR = 40
"""Characters of the longest histogram bar."""
COUNT_WAIT = 60.0
"""Seconds the view waits for the count the rows screen is taking before it counts."""
SETTLE = 0.5
"""Seconds between showing what the key and the indexes answer and starting the
reads of every row: the view is drawn, and can be left, before they load the
process (a view left at once never reads every row)."""


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

    def __init__(self, session: Session, spec: spi.TableSpec, *, counting: bool = False) -> None:
        super().__init__()
        self.session = session
        self.spec = spec
        self.table_name = spec.name
        self._counting = counting
        """The rows screen is counting every row: the count is waited for, not taken twice."""
        self._stats: dict[str, info.Column] = {}
        self._drawn: str | None = None
        """The column whose histogram is read or shown."""
        self._rest: Timer | None = None
        """Starts the reads of every row, :data:`SETTLE` seconds after the first answers."""
        self._reading = False
        """The reads of every row started."""
        self._server = False
        """The store computes statistics itself (:attr:`Session.server`)."""

    @property
    def reads_pending(self) -> bool:
        """True while the reads of every row wait to start (see :data:`SETTLE`)."""
        return self._rest is not None and not self._reading

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
            yield Static("", id="info-note", classes="hint")
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
        self._fill(grid)
        self.action_refresh()

    def _fill(self, grid: DataTable[RenderableType]) -> None:
        """One row per column of the table, with what is known of it (``…``: not yet;
        ``-``: none). The rows are added anew each time: Textual's ``update_cell``
        redraws a cell before it widens its column, and that narrow drawing stays
        cached until the table changes again (a value cut to its column's label)."""
        grid.clear()
        for f in self.spec.fields:
            c = self._stats.get(f.name)
            cells: list[RenderableType] = [header(f.name, self.spec.is_key(f.name)), str(f.type)]
            if c is None:
                cells += ["", "", ""]
            else:
                cells.append("…" if c.nulls is None else f"{c.nulls:,}")
                for value in (c.min, c.max):
                    if not c.ranged and c.type in info.STAT_TYPES:
                        cells.append("…")
                    else:
                        cells.append(cell(value) if value is not None else Text("-", style="dim"))
            grid.add_row(*cells, key=f.name)

    def action_refresh(self) -> None:
        """Read count, statistics, size, histogram and change rate again: what the key
        and the indexes answer first, then what reads every row."""
        fresh = bool(self._stats)  # r: counted again here
        if self._rest is not None:
            self._rest.stop()
        self._stats, self._drawn, self._rest, self._reading = {}, None, None, False
        self._summary(rows="rows: counting…", size="size: measuring…")
        self.query_one("#info-note", Static).display = False
        self._show_columns([info.Column(f.name, f.type) for f in self.spec.fields])
        self._read_count(fresh)
        self._read_quick()

    def action_back(self) -> None:
        """Back to the rows."""
        self.dismiss(None)

    # ------------------------------------------------------------------ workers
    @work(thread=True, exclusive=True, group="info-count")
    def _read_count(self, fresh: bool) -> None:
        """The row count: known from the rows screen (or being counted there) unless
        ``fresh``, else one ``count`` (a row counter or the server's count: no row
        read here)."""
        worker = get_current_worker()
        counts = self.session.counts
        deadline = time.monotonic() + (COUNT_WAIT if self._counting and not fresh else 0)
        try:
            count = None if fresh else counts.get(self.table_name, "")
            while count is None and time.monotonic() < deadline and not worker.is_cancelled:
                count = counts.wait(self.table_name, "", 0.1)
            if worker.is_cancelled:
                return
            if count is None:
                count = self.session.table(self.table_name).count()
        except Exception as exc:
            self.app.call_from_thread(self._failed, exc)
            return
        self.app.call_from_thread(self._summary, f"rows: {count:,}")

    @work(thread=True, exclusive=True, group="info-stats")
    def _read_quick(self) -> None:
        try:
            columns = info.quick_stats(self.session.table(self.table_name), self.spec)
            server = self.session.server
        except Exception as exc:
            self.app.call_from_thread(self._failed, exc)
            return
        self.app.call_from_thread(self._show_quick, columns, server)

    @work(thread=True, exclusive=True, group="info-server")
    def _read_server(self, columns: list[info.Column]) -> None:
        try:
            taken = info.server_stats(self.session.table(self.table_name), self.spec, columns)
        except Exception as exc:
            self.app.call_from_thread(self._failed, exc)
            return
        self.app.call_from_thread(self._show_columns, taken)

    @work(thread=True, exclusive=True, group="info-size")
    def _read_rows(self, columns: list[info.Column]) -> None:
        """The size, and the statistics of ``columns``, in one pass over every row."""
        worker = get_current_worker()

        def keep_going(n: int) -> bool:
            if n and columns and not worker.is_cancelled:
                self.app.call_from_thread(self._show_note, columns, n)
            return not worker.is_cancelled

        try:
            rows = self.session.table(self.table_name).scan()
            found = info.read_rows(rows, self.spec, columns, keep_going)
            disk = None if found is None else info.store_bytes(self.session.url)
        except Exception as exc:
            self.app.call_from_thread(self._failed, exc)
            return
        if found is not None:
            self.app.call_from_thread(self._show_size, found.size, disk)
            self.app.call_from_thread(self._show_columns, found.columns)

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
            whole = self.spec.type_of(column).is_integer
            hist = info.histogram(values, column, low, high, lambda: not worker.is_cancelled, whole=whole)
        except Exception as exc:
            self.app.call_from_thread(self._failed, exc)
            return
        if hist is not None:
            self.app.call_from_thread(self._show_histogram, hist)

    # ------------------------------------------------------------------ showing
    def _failed(self, exc: Exception) -> None:
        if not gone(self, "#info-columns"):
            self.notify(error_text(exc), severity="error", timeout=10)

    def _summary(self, rows: str | None = None, size: str | None = None) -> None:
        if gone(self, "#info-columns"):
            return
        summary = self.query_one("#info-summary", Static)
        old_rows, _, old_size = str(summary.render()).partition("\n")
        summary.update(f"{rows or old_rows}\n{size or old_size}")

    def _show_quick(self, columns: list[info.Column], server: bool) -> None:
        """What the key and the indexes answer; the reads of every row start
        :data:`SETTLE` seconds later."""
        if gone(self, "#info-columns"):
            return
        self._show_columns(columns)
        self._server = server
        self._rest = self.set_timer(SETTLE, self._read_the_rest)

    def _read_the_rest(self) -> None:
        """Start the reads of every row: the size, the columns the key and the indexes
        do not answer, the histogram and the change rate."""
        if gone(self, "#info-columns"):
            return
        self._reading = True
        left = [c for c in self._stats.values() if not c.known]
        if self._server and left:
            self._read_server(left)
        self._read_rows([] if self._server else left)
        if left:
            self._show_note(left, 0, self._server)
        if self.spec.changes:
            self._read_rate()
        self._histogram_of(self._chosen())

    def _show_columns(self, columns: list[info.Column]) -> None:
        """Show what is known of ``columns`` (``…``: not yet; ``-``: none) and draw the
        histogram picked once its column's min and max are known."""
        if gone(self, "#info-columns"):
            return
        for c in columns:
            self._stats[c.name] = c
        self._fill(self.query_one("#info-columns", DataTable))
        if all(c.known for c in self._stats.values()):
            self.query_one("#info-note", Static).display = False
        if self._drawn is None and self._reading:
            self._histogram_of(self._chosen())

    def _show_note(self, columns: list[info.Column], read: int, server: bool = False) -> None:
        """Say which columns' statistics take reading every row, and how far it got."""
        if gone(self, "#info-columns") or all(self._stats[c.name].known for c in columns):
            return
        names = ", ".join(c.name for c in columns)
        how = "counted in the server" if server else f"reading every row ({plural(read, 'row')} read)"
        note = self.query_one("#info-note", Static)
        note.update(f"nulls, min and max of {names}: {how}…")
        note.display = True

    def _show_size(self, size: int, disk: int | None) -> None:
        if gone(self, "#info-columns"):
            return
        text = f"size: {info.human_bytes(size)} of values"
        if disk is not None:
            text += f" · the store on disk: {info.human_bytes(disk)} (every table)"
        self._summary(size=text)

    def _show_rate(self, counts: list[int]) -> None:
        if gone(self, "#info-columns"):
            return
        self.query_one("#info-sparkline", Sparkline).data = counts
        self.query_one("#info-rate", Static).update(rate_text(counts))

    def _show_histogram(self, hist: info.Histogram) -> None:
        if not gone(self, "#info-columns") and hist.column == self._chosen():
            title = f"{hist.column}: {plural(sum(hist.counts), 'value')} in {len(hist.counts)} buckets\n"
            self.query_one("#info-histogram", Static).update(Text(title) + histogram_text(hist))

    def _chosen(self) -> str | None:
        found = self.query("#info-column")
        if not found:
            return None
        value = self.query_one("#info-column", Select).value
        return value if isinstance(value, str) else None

    def _histogram_of(self, column: str | None) -> None:
        """Read the histogram of ``column`` once its min and max are known."""
        stats = self._stats.get(column or "")
        if column is None or stats is None:
            return
        if not stats.ranged:
            self.query_one("#info-histogram", Static).update(f"{column}: waiting for its min and max…")
            return
        self._drawn = column
        self.query_one("#info-histogram", Static).update(f"{column}: counting…")
        self._read_histogram(column, stats.min, stats.max)

    @on(Select.Changed, "#info-column")
    def column_picked(self, event: Select.Changed) -> None:
        """Draw the histogram of the column picked."""
        self._drawn = None
        self._histogram_of(event.value if isinstance(event.value, str) else None)


__all__ = ["InfoScreen", "bucket_text", "histogram_text", "rate_text"]

"""The live view of a table's rows (``w``): the part of the rows screen that follows
the table's change feed. :class:`LiveScreen` is the rows screen's base: it runs the
watch in a thread worker (:func:`kvctl.tui.live.follow`), applies what arrived every
:data:`kvctl.tui.live.TICK` seconds to the page on screen, marks the rows changed,
keeps the counts, and stops on ``w``, on leaving the screen, or when the table is
dropped or its feed turned off (a notification says so).
"""

from __future__ import annotations

import time
from abc import abstractmethod

from textual import work
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.timer import Timer
from textual.worker import get_current_worker

import spi
from kvctl.tui.browser import Cursor, PageView, Position
from kvctl.tui.live import TICK, Applied, Feed, LivePage, LiveState, counts_change, ended_text, follow, start_feed
from kvctl.tui.session import Session, error_text

WATCH_HELP = "Live view: rows update as writes commit; w again stops (needs a change feed)"
"""What ``w`` does, on the help screen and in the palette."""


class LiveScreen(Screen[None]):
    """A screen of one table's page of rows that can follow the table's change feed."""

    session: Session
    table_name: str
    spec: spi.TableSpec | None
    view: PageView | None
    position: Position

    def __init__(self, *, live: bool = False) -> None:
        super().__init__()
        self.live: LiveState | None = None
        """The live view, while it is on."""
        self.live_at_start = live
        """Start the live view when the screen opens."""
        self._reading = False
        """A page is being read: the live view holds its events until it is shown."""
        self._tick: Timer | None = None

    @abstractmethod
    def _load(self, position: Position, cursor: Cursor, *, reload_spec: bool = False) -> None:
        """Read the page at ``position`` (in a worker) and show it."""

    @abstractmethod
    def _cursor_here(self) -> Cursor:
        """The cursor where it is now (on its row's key)."""

    @abstractmethod
    def _show_page(self, cursor: Cursor) -> None:
        """Show ``self.view`` with the cursor at ``cursor``."""

    @abstractmethod
    def _show_status(self) -> None:
        """Show the status line again."""

    def live_labels(self) -> list[str | None] | None:
        """The marks of the rows on the page (None: the live view is off)."""
        return None if self.live is None or self.live.page is None else self.live.page.labels()

    def count_through(self) -> int:
        """(In a worker, right after a count.) The revision a count just taken includes
        if the live view is on (the events after it change the count), else 0. A count
        taken while other processes write is as exact as ``kvctl count`` then."""
        live = self.live
        return 0 if live is None or live.feed is None else self.session.provider.revision()

    def live_page(self, view: PageView, page_size: int) -> None:
        """A page was read: the live view applies its events to it from now on."""
        self._reading = False
        if self.live is not None:
            self.live.page = LivePage(view, self.live.marks, 2 * page_size)

    def action_watch(self) -> None:
        """Start the live view (rows change as writes commit), or stop it."""
        if self.live is not None:
            self._stop_live("live view stopped")
            return
        self.live = LiveState()
        self._show_live()
        self._watch(self.live)

    @work(thread=True, exclusive=True, group="live")
    def _watch(self, state: LiveState) -> None:
        worker = get_current_worker()
        try:
            feed = start_feed(self.session, self.table_name)
        except Exception as exc:
            if not worker.is_cancelled:
                self.app.call_from_thread(self._stop_live, error_text(exc), "warning")
            return
        if not worker.is_cancelled:
            self.app.call_from_thread(self._live_started, state, feed)
            follow(self.session.provider, self.table_name, feed, lambda: worker.is_cancelled)

    def _live_started(self, state: LiveState, feed: Feed) -> None:
        if self.live is not state or not self.is_attached:
            return
        state.feed = feed
        self._show_live()
        self._tick = self.set_interval(TICK, self._live_tick)
        self._load(self.position, self._cursor_here(), reload_spec=True)  # at least as new as the feed's start

    def _live_tick(self) -> None:
        """Apply what the watch delivered. Nothing is taken while a page is being read:
        the page may be newer than events still waiting, which then apply over it."""
        state = self.live
        if state is None or state.feed is None or self._reading:
            return
        batch = state.feed.take()
        page, now = state.page, time.monotonic()
        if page is None:  # no page shown (its read failed): the next read shows the events
            applied = Applied()
        else:
            applied = page.apply(batch.events, now)
            self._count_events(state, page.view.spec, applied)
            if page.expire(now) or applied.changed:
                cursor = self._cursor_here()
                self.view = page.view
                self._show_page(cursor)
        if batch.error is not None:
            self._stop_live(ended_text(self.table_name, batch.error), "warning")
            return
        if batch.overflow:  # events were dropped: the counts are not known any more
            self.session.counts.forget(self.table_name)
        if applied.reread or applied.new_columns or batch.overflow:
            self._load(self.position, self._cursor_here(), reload_spec=applied.new_columns)
        if batch.events or batch.overflow:
            self._show_live()

    def _count_events(self, state: LiveState, spec: spi.TableSpec, applied: Applied) -> None:
        """Keep the known counts of the table current (the dashboard's own writes are
        counted when made)."""
        changes = [(before, event) for before, event in applied.counts if not state.counted(event, spec.primary_key)]
        if changes:
            self.session.counts.adjust(self.table_name, counts_change(spec, changes))

    def _live_text(self) -> str:
        state = self.live
        if state is None or state.feed is None:
            return "live (starting…)"
        return f"live · revision {state.feed.revision:,}"

    def _show_live(self) -> None:
        self.sub_title = None if self.live is None else f"{self._live_text()} · {self.session.label}"
        self._show_status()

    def _stop_live(self, note: str | None = None, severity: SeverityLevel = "information") -> None:
        """End the live view: the watch stops (within a second) and the marks go."""
        state, self.live = self.live, None
        if state is None:
            return
        self.workers.cancel_group(self, "live")
        if self._tick is not None:
            self._tick.stop()
            self._tick = None
        if note:
            self.notify(note, severity=severity, timeout=8)
        if state.page is not None and self.view is not None:
            cursor = self._cursor_here()
            self.view = state.page.settled()
            self._show_page(cursor)
        self._show_live()

    def on_unmount(self) -> None:
        """Leaving the screen ends the live view."""
        self.live = None
        self.workers.cancel_group(self, "live")

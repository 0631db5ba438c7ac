"""The dashboard's live view without UI: following a table's change feed in a worker
thread (:func:`follow`), handing its events to the screen (:class:`Feed`), and
applying them to the page on screen (:class:`LivePage`).

The watch runs in short calls (:data:`WAIT` seconds without an event ends one) so
the worker notices promptly that it should stop; each call resumes after the last
revision seen, so no event is missed or repeated. The screen takes what arrived at
most every :data:`TICK` seconds, so a burst of writes costs one redraw per tick.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import spi
from kvctl.feeds import fed_spec, no_feed
from kvctl.tui.browser import PageView, counted, key_of
from kvctl.tui.session import Session, error_text
from spi.capabilities import Capability
from spi.changes import PUT
from spi.filters import evaluate
from spi.primitives import sort_position

TICK = 0.1
"""Seconds between two updates of the screen from the feed."""
WAIT = 0.5
"""Seconds one watch call waits for an event before the worker looks whether to stop."""
MARK_SECONDS = 5.0
"""Seconds a changed row stays marked (a deleted row stays shown, struck through)."""
MAX_PENDING = 2_000
"""Rows whose events may wait for the screen; past that they are dropped and the page
is read again (a bulk load must not fill the memory or freeze the screen)."""

CHANGED, NEW, DELETED = "changed", "new", "deleted"
"""What happened to a marked row: changed in place, new on the page, deleted."""

Key = tuple[Any, ...]


def start_feed(session: Session, table: str) -> Feed:
    """The feed of a live view of ``table``, starting after the current revision (every
    later event is shown); :class:`kvctl.errors.CliError` if the provider or the
    table records no feed (the message names the command that turns it on)."""
    spec = fed_spec(session.provider, table)
    return Feed(spec.primary_key, session.provider.revision())


def why_not_live(session: Session, spec: spi.TableSpec) -> str | None:
    """Why a live view of ``spec``'s table cannot start (None: it can); needs no I/O
    once the provider is connected."""
    provider = session.provider
    if Capability.CHANGES not in provider.capabilities:
        return f"the provider at {spi.mask_password(provider.url)} does not record change feeds"
    return None if spec.changes else no_feed(spec.name)


def ended_text(table: str, exc: BaseException) -> str:
    """Why a live view stopped, as a notification."""
    if isinstance(exc, spi.TableNotFoundError):
        return f"table {table!r} was dropped: the live view stopped"
    if isinstance(exc, spi.SchemaError):
        return f"the live view stopped: {no_feed(table)}"
    return f"the live view stopped: {error_text(exc)} (w starts it again)"


@dataclass(frozen=True)
class Batch:
    """What the watch delivered since the screen last looked."""

    events: list[spi.Change]
    """The latest event of each row changed, in the order they arrived."""
    revision: int
    """The last revision seen."""
    overflow: bool = False
    """Too many rows changed: events were dropped, the page must be read again."""
    error: BaseException | None = None
    """What ended the watch (after ``events``)."""


class Feed:
    """Events on their way from the watch thread to the screen: for each row only its
    latest event is kept (it says everything the screen shows), at most
    :data:`MAX_PENDING` rows."""

    def __init__(self, primary_key: tuple[str, ...], since: int) -> None:
        self._primary_key = primary_key
        self._lock = threading.Lock()
        self._pending: dict[Key, spi.Change] = {}
        self._overflow = False
        self._error: BaseException | None = None
        self.revision = since
        """The last revision seen (the watch resumes after it)."""

    def put(self, event: spi.Change) -> None:
        """Hand over one event (from the watch thread)."""
        key = tuple(event.key[c] for c in self._primary_key)
        with self._lock:
            self._pending.pop(key, None)
            self._pending[key] = event
            self.revision = event.revision
            if len(self._pending) > MAX_PENDING:
                self._pending.clear()
                self._overflow = True

    def fail(self, exc: BaseException) -> None:
        """The watch ended with ``exc``."""
        with self._lock:
            self._error = exc

    def take(self) -> Batch:
        """Everything handed over since the last call."""
        with self._lock:
            batch = Batch(list(self._pending.values()), self.revision, self._overflow, self._error)
            self._pending.clear()
            self._overflow = False
            return batch


def follow(provider: spi.Provider, table: str, feed: Feed, stopped: Callable[[], bool]) -> None:
    """Hand the events of ``table`` after ``feed.revision`` to ``feed`` until ``stopped()``
    (asked after every event and at least every :data:`WAIT` seconds). An error that
    ends the watch (:class:`spi.TableNotFoundError`: the table was dropped;
    :class:`spi.SchemaError`: its feed was turned off) goes to the feed. A watch call
    ends only once it has delivered every event committed so far, so resuming after
    the last revision seen misses nothing."""
    try:
        while not stopped():
            events: Iterator[spi.Change | spi.Progress] = provider.watch(table, since=feed.revision, timeout=WAIT)
            try:
                for event in events:
                    if isinstance(event, spi.Change):  # no progress= asked: never a Progress
                        feed.put(event)
                    if stopped():
                        return
            finally:
                close = getattr(events, "close", None)
                if close is not None:
                    close()
    except Exception as exc:
        if not stopped():
            feed.fail(exc)


UNKNOWN: Any = object()
"""A row's state before an event when the page does not show it."""


def count_delta(where: spi.Expr | None, before: Any, event: spi.Change) -> int | None:
    """How ``event`` changes the count of rows matching ``where`` (None: every row;
    the result None: it cannot be told). ``before`` is the row before the event (None:
    no row; :data:`UNKNOWN`: not on the page). Without a filter it can always be told:
    a put at version 1 is a new row, a delete or expiry removes one."""
    if before is UNKNOWN and event.op == PUT and event.version == 1:
        before = None
    if before is not UNKNOWN:
        return counted(where, event.row) - counted(where, before)
    if where is not None:
        return None
    return 0 if event.op == PUT else -1


def counts_change(spec: spi.TableSpec, changes: list[tuple[Any, spi.Change]]) -> Callable[[str, int], int | None]:
    """How (the row before, the event) ``changes`` change a count under a filter's
    text that includes the events up to a revision (for
    :meth:`kvctl.tui.session.Counts.adjust`; each filter parsed once)."""

    def change(where_text: str, through: int) -> int | None:
        where = spi.parse_where(where_text, spec) if where_text else None
        total = 0
        for before, event in changes:
            if event.revision <= through:
                continue
            delta = count_delta(where, before, event)
            if delta is None:
                return None
            total += delta
        return total

    return change


@dataclass
class Mark:
    """A row marked on screen: what happened to it and until when (monotonic seconds)."""

    kind: str
    until: float


@dataclass
class Applied:
    """What applying a batch did to the page."""

    changed: bool = False
    """The rows on screen changed."""
    reread: bool = False
    """The page must be read again (too many new rows, or dropped events)."""
    new_columns: bool = False
    """A row has columns the spec shown does not: the table was altered."""
    counts: list[tuple[Any, spi.Change]] = field(default_factory=list)
    """(the row before, the event) of every event applied, for the counts."""


RECENT = 1_000
"""Events remembered as counted, for the dashboard's own writes whose event comes
before the write's own bookkeeping."""

Write = tuple[Key, int | None]
"""A write as the counts know it: the row's key and its new version (None: deleted)."""


@dataclass
class LiveState:
    """A rows screen's live view: its feed (None while starting), the page as events
    change it (None until a page is read) and the marks by key. The dashboard's own
    writes are counted once: by the screen when its event has not been counted yet
    (``own``: the event is then skipped), else by the event (``recent``)."""

    feed: Feed | None = None
    page: LivePage | None = None
    marks: dict[Key, Mark] = field(default_factory=dict)
    own: set[Write] = field(default_factory=set)
    recent: dict[Write, None] = field(default_factory=dict)

    def counted(self, event: spi.Change, primary_key: tuple[str, ...]) -> bool:
        """Whether ``event`` is one of the dashboard's own writes, counted already;
        if not, it is remembered as counted now."""
        write = (tuple(event.key[c] for c in primary_key), event.version)
        if write in self.own:
            self.own.discard(write)
            return True
        self.recent[write] = None
        if len(self.recent) > RECENT:
            del self.recent[next(iter(self.recent))]
        return False

    def own_write(self, write: Write) -> bool:
        """One of the dashboard's own writes is done: whether to count it now (False:
        its event came first and counted it)."""
        if write in self.recent:
            del self.recent[write]
            return False
        self.own.add(write)
        return True


class LivePage:
    """The page on screen kept current by events.

    A page covers the positions (in its order) from its first row (its start, on the
    first page) to its last row (its end, on the last page); a put of a row that
    matches the filter and falls inside is shown, in order; a row that leaves the
    filter or the page's range is removed; a delete or expiry marks the row deleted
    (it stays, struck through, until its mark ends). Changed rows are marked for
    :data:`MARK_SECONDS`; marks are kept by key across page reads.
    """

    def __init__(self, view: PageView, marks: dict[Key, Mark], limit: int) -> None:
        self.view = view
        self.marks = marks
        self._where = view.query.where(view.spec)
        self._order = view.query.order
        self._limit = limit
        first = None
        if view.position.anchor is not None:
            first = self._position(dict(zip(view.spec.primary_key, view.position.anchor)))
        elif view.rows and not view.at_start:
            first = self._position(view.rows[0])
        self._nothing_fits = not view.rows and not view.at_start and view.position.anchor is None
        self._first = first
        self._last = self._position(view.rows[-1]) if view.rows and not view.at_end else None
        for row in view.rows:  # read after the events applied so far: these rows exist
            if self.deleted(key_of(view.spec, row)):
                del self.marks[key_of(view.spec, row)]

    def _position(self, row: Mapping[str, Any]) -> bytes:
        return sort_position(self.view.spec, row, self._order.column)

    def _fits(self, row: spi.Row) -> bool:
        if self._nothing_fits or (self._where is not None and evaluate(self._where, row) is not True):
            return False
        at = self._position(row)
        if self._order.descending:
            return (self._first is None or at <= self._first) and (self._last is None or at >= self._last)
        return (self._first is None or at >= self._first) and (self._last is None or at <= self._last)

    def deleted(self, key: Key) -> bool:
        """Whether the row of ``key`` is shown as deleted."""
        mark = self.marks.get(key)
        return mark is not None and mark.kind == DELETED

    def apply(self, events: list[spi.Change], now: float) -> Applied:
        """Apply ``events`` (in order) to the page."""
        spec = self.view.spec
        shown = {key_of(spec, row): row for row in self.view.rows}
        done = Applied()
        until = now + MARK_SECONDS
        for event in events:
            key = tuple(event.key[c] for c in spec.primary_key)
            on_page = key in shown and not self.deleted(key)
            done.counts.append((shown[key] if on_page else None if key in shown else UNKNOWN, event))
            if event.row is None or event.version is None:
                if on_page:
                    self.marks[key] = Mark(DELETED, until)
                    done.changed = True
                continue
            done.new_columns = done.new_columns or not set(event.row) <= set(spec.columns)
            row = spi.Row({**dict.fromkeys(spec.columns), **event.row}, event.version)  # older rows lack new columns
            if self._fits(row):
                shown[key] = row
                self.marks[key] = Mark(CHANGED if on_page else NEW, until)
                done.changed = True
            elif key in shown:
                del shown[key]
                self.marks.pop(key, None)
                done.changed = True
        if done.changed:
            rows = sorted(shown.values(), key=self._position, reverse=self._order.descending)
            self.view = PageView(spec, self.view.query, self.view.position, rows, self.view.next_token)
            done.reread = len(rows) > self._limit
        return done

    def expire(self, now: float) -> bool:
        """End the marks whose time is up (removing the rows marked deleted); whether
        the page changed."""
        ended = [key for key, mark in self.marks.items() if mark.until <= now]
        if not ended:
            return False
        gone = {key for key in ended if self.marks[key].kind == DELETED}
        for key in ended:
            del self.marks[key]
        spec = self.view.spec
        if gone:
            rows = [row for row in self.view.rows if key_of(spec, row) not in gone]
            self.view = PageView(spec, self.view.query, self.view.position, rows, self.view.next_token)
        return True

    def settled(self) -> PageView:
        """The page without the rows marked deleted (when the live view ends)."""
        spec = self.view.spec
        return replace(self.view, rows=[row for row in self.view.rows if not self.deleted(key_of(spec, row))])

    def labels(self) -> list[str | None]:
        """The mark of each row on the page (None: unmarked)."""
        spec = self.view.spec
        return [getattr(self.marks.get(key_of(spec, row)), "kind", None) for row in self.view.rows]


__all__ = [
    "CHANGED",
    "DELETED",
    "MARK_SECONDS",
    "NEW",
    "TICK",
    "UNKNOWN",
    "WAIT",
    "Applied",
    "Batch",
    "Feed",
    "LivePage",
    "LiveState",
    "Mark",
    "count_delta",
    "counts_change",
    "ended_text",
    "follow",
    "start_feed",
    "why_not_live",
]

"""``kvctl copy --follow``: after the copy, apply the source tables' change events to
the destination as they commit, one destination transaction per source revision.

The copy read each table's rows *after* reading the source revision R it records as
the table's applied position, so its rows may already hold some changes after R.
Replaying the events after R over them converges all the same: a put writes the
whole row with its version and expiry and a delete removes the key, so once every
event after R is applied each key holds what its last event (or, without one since
R, the copy) says — the source's state. No transaction holds the source while a
table is copied.

Events are read with ``changes`` (every followed table at once, in revision order,
up to the source's current revision) and applied a revision at a time
(:func:`kvctl.replay.apply_revision`: rows and positions in one transaction; a
revision is held in memory while it is applied). Between reads the follower waits
for a commit to a followed table: one thread per table watches it, only to wake the
follower (the events themselves are read by ``changes``, so a revision is applied
whole even when it touches several tables). Lag goes to stderr (CLI.md).
"""

from __future__ import annotations

import datetime as dt
import itertools
import sys
import threading
import time
from collections.abc import Iterator
from operator import attrgetter

import spi
from kvctl.errors import NotDone
from kvctl.replay import Target, apply_revision

LAG_EVERY = 1.0
"""Seconds between two lag lines while behind (and how long behind before the first)."""
RECORD_EVERY = 10.0
"""Seconds between records of positions moved on only by revisions that touched no
followed table (so a quiet table's resume point keeps up with the feed's retention)."""
WATCH_SPAN = 1.0
"""Seconds a waking watch waits without an event before it looks whether to stop."""


class _Waker:
    """Wakes the follower when the source commits to a followed table (each table's
    ``watch`` in a thread of its own; a watch's error is raised by :meth:`check`)."""

    def __init__(self, source: spi.Provider, tables: list[str]) -> None:
        self.signal = threading.Event()
        self._stop = threading.Event()
        self._error: BaseException | None = None
        since = source.revision()
        self._threads = [
            threading.Thread(target=self._watch, args=(source, table, since), daemon=True, name=f"wake-{table}")
            for table in tables
        ]
        for thread in self._threads:
            thread.start()

    def _watch(self, source: spi.Provider, table: str, since: int) -> None:
        try:
            while not self._stop.is_set():
                for event in source.watch(table, since=since, timeout=WATCH_SPAN):
                    since = event.revision
                    self.signal.set()
                    if self._stop.is_set():
                        return
        except Exception as exc:  # the table was dropped, its feed turned off, the store lost
            self._error = exc
            self.signal.set()

    def check(self) -> None:
        """Raise what ended a watch, if anything did."""
        if self._error is not None:
            raise self._error

    def close(self) -> None:
        """Stop the watches (each ends within about :data:`WATCH_SPAN` seconds)."""
        self._stop.set()
        for thread in self._threads:
            thread.join(WATCH_SPAN * 2)


class _Lag:
    """The ``lag:`` lines on stderr: while the oldest unapplied commit is more than
    :data:`LAG_EVERY` old, one every :data:`LAG_EVERY` seconds; ``lag: 0`` on each
    catching up after applying something (and on the first)."""

    def __init__(self, source: spi.Provider) -> None:
        self._source = source
        self._printed = 0.0
        self._quiet = False  # nothing applied since the last "lag: 0"

    def behind(self, applied: int, oldest: dt.datetime) -> None:
        """About to apply the commit at ``oldest``, the last one applied being ``applied``."""
        self._quiet = False
        now = time.monotonic()
        age = (dt.datetime.now(dt.UTC) - oldest).total_seconds()
        if age >= LAG_EVERY and now - self._printed >= LAG_EVERY:
            _say(f"lag: {max(1, self._source.revision() - applied)} revisions, {int(age)} s")
            self._printed = now

    def caught_up(self) -> None:
        """Every revision committed before this round was applied."""
        if not self._quiet:
            _say("lag: 0 revisions, 0 s")
        self._quiet = True


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def follow(
    source: spi.Provider,
    destination: spi.Provider,
    targets: dict[str, Target],
    positions: dict[str, int],
    *,
    until_caught_up: bool,
) -> None:
    """Apply the events of the source tables (the keys of ``targets``, each going to
    its target) after each one's applied position in ``positions``, until interrupted
    or, ``until_caught_up``, until every revision committed before it caught up is
    applied. A compacted resume point: exit 1."""
    tables = list(targets)
    done = min(positions.values())  # every followed event up to here is applied
    recorded = dict(positions)
    waker = _Waker(source, tables)
    lag = _Lag(source)
    last_record = time.monotonic()
    try:
        while True:
            waker.signal.clear()
            waker.check()
            current = source.revision()
            for revision, group in _revisions(source, tables, done):
                lag.behind(done, group[0].time)
                due = [(targets[e.table], e) for e in group if revision > positions[e.table]]
                if due:
                    apply_revision(destination, revision, due)
                    for target, _ in due:
                        positions[target.table] = recorded[target.table] = revision
                done = revision
            done = max(done, current)
            for table in tables:
                positions[table] = max(positions[table], done)
            lag.caught_up()
            stale = [targets[t] for t in tables if recorded[t] < done]
            if stale and (until_caught_up or time.monotonic() - last_record >= RECORD_EVERY):
                apply_revision(destination, done, [], stale)
                recorded.update(dict.fromkeys((t.table for t in stale), done))
                last_record = time.monotonic()
            if until_caught_up:
                return
            waker.signal.wait(LAG_EVERY)
    finally:
        waker.close()


def _revisions(source: spi.Provider, tables: list[str], since: int) -> Iterator[tuple[int, list[spi.Change]]]:
    """The source's events of ``tables`` after ``since``, a revision at a time."""
    try:
        events = source.changes(tables, since=since)
    except spi.errors.RevisionCompactedError as exc:
        raise NotDone(
            f"the source's change feed no longer holds the events after revision {since} (the oldest resume "
            f"point it keeps is revision {exc.oldest}): copy the tables again to follow from now"
        ) from None
    for revision, group in itertools.groupby(events, key=attrgetter("revision")):
        yield revision, list(group)


__all__ = ["follow"]

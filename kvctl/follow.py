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
(:meth:`kvctl.replay.Replayer.apply`: rows and positions in one transaction; a
revision is held in memory while it is applied). Between reads the follower waits
for a commit to a followed table: one thread per table watches it, only to wake the
follower (the events themselves are read by ``changes``, so a revision is applied
whole even when it touches several tables). Lag goes to stderr (CLI.md).

A follower runs for days, so a conflict that outlasts the destination's own retries
(``run``'s; bench/chaos.py saw one end a follower on PostgreSQL right after a crash)
does not end it: the revision is applied again after a pause that doubles up to
:data:`CONFLICT_PAUSES`' last, with one stderr line per streak (:func:`_patiently`;
an apply is idempotent).
"""

from __future__ import annotations

import datetime as dt
import itertools
import sys
import threading
import time
from collections.abc import Callable, Iterator
from functools import partial
from operator import attrgetter
from typing import TypeVar

import spi
from kvctl.errors import NotDone
from kvctl.partway import Tally
from kvctl.replay import Replayer, Target

LAG_EVERY = 1.0
"""Seconds between two lag lines while behind (and how long behind before the first)."""
CAUGHT_UP_EVERY = 10.0
"""Seconds at least between two unchanged caught-up lines."""
RECORD_EVERY = 10.0
"""Seconds between records of positions moved on only by revisions that touched no
followed table (so a quiet table's resume point keeps up with the feed's retention)."""
WATCH_SPAN = 1.0
"""Seconds a waking watch waits without an event before it looks whether to stop."""
CONFLICT_PAUSES = (0.1, 5.0)
"""Seconds the follower waits before applying a revision again after a conflict: the
first pause, doubled after each further conflict up to the second."""

T = TypeVar("T")


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
    """The ``lag:`` lines on stderr, each after the local time: while the oldest
    unapplied commit is more than :data:`LAG_EVERY` old, one at least every
    :data:`LAG_EVERY` seconds (from a thread of its own, so a long revision or read
    does not hold them up); ``lag: 0 revisions, 0 s`` on catching up: on the first
    round, after a line saying it was behind, and (within :data:`CAUGHT_UP_EVERY`
    seconds) after applying something, the same line at most every
    :data:`CAUGHT_UP_EVERY` seconds."""

    _TICK = 0.05

    def __init__(self, source: spi.Provider) -> None:
        self._source = source
        self._lock = threading.Lock()
        self._behind: tuple[int, dt.datetime] | None = None  # (last applied, oldest unapplied commit)
        self._printed = 0.0  # when the last line was printed
        self._caught_up = 0.0  # when the last caught-up line was printed (0: not the last line)
        self._unsaid = False  # applied something since the last caught-up line
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, daemon=True, name="lag")
        self._thread.start()

    def behind(self, applied: int, oldest: dt.datetime) -> None:
        """About to apply the commit at ``oldest``, the last one applied being ``applied``."""
        with self._lock:
            self._behind = (applied, oldest)
        self._report()

    def caught_up(self, applied_any: bool) -> None:
        """Every revision committed before this round was applied (``applied_any``:
        some of this round's)."""
        with self._lock:
            self._behind = None
            self._unsaid = self._unsaid or applied_any
            now = time.monotonic()
            if self._caught_up == 0.0 or (self._unsaid and now - self._caught_up >= CAUGHT_UP_EVERY):
                _say("lag: 0 revisions, 0 s")
                self._printed = self._caught_up = now
                self._unsaid = False

    def _tick(self) -> None:
        while not self._stop.wait(self._TICK):
            self._report()

    def _report(self) -> None:
        """A lag line, if behind by more than :data:`LAG_EVERY` and none was printed
        in the last :data:`LAG_EVERY` seconds (less a tick, so lines are never further apart)."""
        with self._lock:
            behind, printed = self._behind, self._printed
        if behind is None:
            return
        age = (dt.datetime.now(dt.UTC) - behind[1]).total_seconds()
        if age < LAG_EVERY or time.monotonic() - printed < LAG_EVERY - 2 * self._TICK:
            return
        try:
            revisions = max(1, self._source.revision() - behind[0])
        except spi.KvError:  # the store is gone: the follower says so
            return
        with self._lock:
            if self._behind is behind and self._printed == printed:  # still behind, and no line since
                _say(f"lag: {revisions} revisions, {int(age)} s")
                self._printed, self._caught_up = time.monotonic(), 0.0

    def close(self) -> None:
        """Stop the thread."""
        self._stop.set()
        self._thread.join()


def _say(line: str) -> None:
    print(time.strftime("%H:%M:%S ") + line, file=sys.stderr, flush=True)


def follow(
    source: spi.Provider,
    destination: spi.Provider,
    targets: dict[str, Target],
    positions: dict[str, int],
    tally: Tally,
    *,
    until_caught_up: bool,
) -> None:
    """Apply the events of the source tables (the keys of ``targets``, each going to
    its target) after each one's applied position in ``positions``, counting the
    revisions applied in ``tally``, until interrupted or, ``until_caught_up``, until
    every revision committed before it caught up is applied. A compacted resume
    point: exit 1."""
    tables = list(targets)
    done = min(positions.values())  # every followed event up to here is applied
    recorded = dict(positions)
    waker = _Waker(source, tables)
    lag = _Lag(source)
    replayer = Replayer(destination)
    last_record = time.monotonic()
    try:
        while True:
            waker.signal.clear()
            waker.check()
            current = source.revision()
            applied_any = False
            for revision, group in _revisions(source, tables, done):
                lag.behind(done, group[0].time)
                due = [(targets[e.table], e) for e in group if revision > positions[e.table]]
                if due:
                    _patiently(partial(_apply_counted, replayer, tally, revision, due))
                    applied_any = True
                    for target, _ in due:
                        positions[target.table] = recorded[target.table] = revision
                done = revision
            done = max(done, current)
            for table in tables:
                positions[table] = max(positions[table], done)
            lag.caught_up(applied_any)
            stale = [targets[t] for t in tables if recorded[t] < done]
            if stale and (until_caught_up or time.monotonic() - last_record >= RECORD_EVERY):
                _patiently(partial(replayer.apply, done, [], stale))
                recorded.update(dict.fromkeys((t.table for t in stale), done))
                last_record = time.monotonic()
            if until_caught_up:
                return
            waker.signal.wait(LAG_EVERY)
    finally:
        lag.close()
        waker.close()


def _apply_counted(replayer: Replayer, tally: Tally, revision: int, due: list[tuple[Target, spi.Change]]) -> None:
    """Apply one source revision, counting it in ``tally`` when it wrote something (an
    interrupt never falls between the commit and the count)."""
    with tally.committing():
        if replayer.apply(revision, due):
            tally.applied()


def _patiently(work: Callable[[], T]) -> T:
    """``work()``, called again after each :class:`spi.ConflictError` it ends in (the
    destination's ``run`` gave up retrying), after a pause of :data:`CONFLICT_PAUSES`
    (outside any deferral of Ctrl-C: an interrupt ends the wait); the first conflict
    of a streak is said on stderr."""
    pause, longest = CONFLICT_PAUSES
    while True:
        try:
            return work()
        except spi.ConflictError as exc:
            if pause == CONFLICT_PAUSES[0]:
                _say(f"conflict on the destination, applying again (every {longest:g} s at most): {exc}")
            time.sleep(pause)
            pause = min(pause * 2, longest)


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

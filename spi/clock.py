"""The clock that decides when rows expire, and a clock that tests move by hand.

A provider asks its clock for "now" whenever it decides whether a row has expired
(reads, scans, counts, conditional writes, writes and loads that meet an expired row,
sweeps) and when it gives a written row its expiry (now plus the ttl). A clock is any
callable returning nanoseconds since the epoch, as :func:`time.time_ns` does, which is
every provider's default (on PostgreSQL the default is the server's clock, see
``docs/spi.md``, "Testing with a clock").

Tests give a provider a :class:`ManualClock` instead and move it past a ttl rather than
sleeping the ttl out::

    clock = ManualClock()
    p = spi.connect("memory://", clock=clock)  # or: p.clock = clock
    p.table("t").upsert(row, ttl=60)
    clock.advance(61)  # the row has expired, for every operation

The first-party providers take a clock as the attribute ``provider.clock`` (which
:func:`spi.connect`'s ``clock=`` sets); a transaction uses the clock its provider had
when it began.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Hashable
from typing import Protocol

__all__ = ["SYSTEM_CLOCK", "Clock", "ManualClock", "is_live", "is_system_clock", "now_micros"]


class Clock(Hashable, Protocol):
    """What decides expiry: called without arguments, it answers now in nanoseconds
    since the epoch (UTC), as :func:`time.time_ns` does. Hashable (as functions and
    plain objects are): a provider may key statements it caches by its clock."""

    def __call__(self) -> int:
        """Now, in nanoseconds since the epoch."""
        ...


SYSTEM_CLOCK: Clock = time.time_ns
"""The default clock: the machine's wall clock (:func:`time.time_ns` itself, so the
default costs nothing beyond the call it always was)."""


def now_micros(clock: Clock) -> int:
    """Now on ``clock`` in microseconds since the epoch: the unit row expiry is kept
    and decided in."""
    return clock() // 1000


def is_live(expires: int | None, now: int) -> bool:
    """The one liveness rule: a row expiring at ``expires`` (microseconds since the
    epoch; None: never) is live before that moment and gone from it on, ``now``
    included. Scans generated for speed (``spi/kv/layout.py``, ``spi/kv/scan.py``)
    and PostgreSQL's SQL (``live_sql`` in ``providers/postgres/write_sql.py``,
    ``providers/postgres/schema.py``) state the same comparison inline."""
    return expires is None or expires > now


def is_system_clock(clock: Clock | None) -> bool:
    """Whether ``clock`` is the default (None counts as the default)."""
    return clock is None or clock is SYSTEM_CLOCK


class ManualClock:
    """A clock that stands still until a test moves it: it starts at ``start``
    (nanoseconds since the epoch; default: the wall clock's now) and changes only by
    :meth:`advance` and :meth:`set`. Safe to read from any thread (a provider's
    background sweeper reads it too)."""

    def __init__(self, start: int | None = None) -> None:
        self._now = time.time_ns() if start is None else int(start)
        self._lock = threading.Lock()

    def __call__(self) -> int:
        """Now on this clock, in nanoseconds since the epoch."""
        return self._now

    def advance(self, seconds: float) -> None:
        """Move the clock ``seconds`` forward (0 or more; a clock that decides expiry
        never goes back, or expired rows would come back to life)."""
        if not seconds >= 0:
            raise ValueError(f"a clock only moves forward, got {seconds!r} seconds")
        with self._lock:
            self._now += round(seconds * 1_000_000_000)

    def set(self, when: dt.datetime) -> None:
        """Move the clock forward to the aware datetime ``when``."""
        if when.tzinfo is None:
            raise ValueError("set the clock to an aware datetime")
        target = (when - _EPOCH) // dt.timedelta(microseconds=1) * 1000
        with self._lock:
            if target < self._now:
                raise ValueError(f"a clock only moves forward: {when.isoformat()} is before {self.now().isoformat()}")
            self._now = target

    def now(self) -> dt.datetime:
        """Now on this clock, as an aware UTC datetime (microsecond precision)."""
        return _EPOCH + dt.timedelta(microseconds=self._now // 1000)

    def __repr__(self) -> str:
        return f"ManualClock({self.now().isoformat()})"


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

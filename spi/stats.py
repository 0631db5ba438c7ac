"""Counters of what a provider's calls did, for ``p.stats()`` (issue 27).

A fast path that silently stops being taken shows up in no error, only in a
benchmark; these counters make it visible to a test, and ``kvctl --debug`` logs the
same moments through :mod:`logging`. Counting happens only off the fast paths (a
retry, a fallback, a wait), so the everyday calls pay nothing for it.

Names (each a count since the provider was opened; RocksDB's ``lock_waits`` and
``handoffs`` count per database directory in this process):

``conflict_retries``
    transactions run again after a :class:`~spi.errors.ConflictError` (``p.run``
    and auto-commit calls).
``fast_path_misses``
    one-off calls (``p.table(T).read``, single-key writes) that ran as a whole
    transaction instead of their fast path: the first call on a table, a spec
    changed meanwhile, a new row (RocksDB), a change-fed table (PostgreSQL writes).
``lock_waits``, ``handoffs``
    RocksDB: sessions that waited for another thread's, and databases closed so a
    waiting process could open them.
``sweeps``, ``swept_rows``, ``sweep_errors``
    rounds of the background sweep, the expired rows they removed, and the rounds
    that failed (the next round tries again; the error is logged).
``batches_ahead``
    PostgreSQL: batches of an auto-commit ``load`` written as new rows alongside the
    batch before them, on a second connection (counted per batch of thousands of
    rows: a load whose batches stop going two at a time shows here).
``watch_reconnects``
    etcd: watch streams (what wakes the watches) opened again on another member
    after the one serving them failed.
"""

from __future__ import annotations

import threading
from collections import Counter

NAMES = (
    "conflict_retries",
    "fast_path_misses",
    "lock_waits",
    "handoffs",
    "sweeps",
    "swept_rows",
    "sweep_errors",
    "batches_ahead",
    "watch_reconnects",
)
"""Every counter ``p.stats()`` reports (0 until it happens)."""


class Counters:
    """Named event counts, safe to bump from any thread."""

    __slots__ = ("_counts", "_lock")

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def add(self, name: str, n: int = 1) -> None:
        """Count ``n`` more of ``name``."""
        with self._lock:
            self._counts[name] += n

    def snapshot(self, *others: Counters) -> dict[str, int]:
        """Every counter of :data:`NAMES` (with ``others``' counts added)."""
        totals = dict.fromkeys(NAMES, 0)
        for counters in (self, *others):
            with counters._lock:
                for name, n in counters._counts.items():
                    totals[name] = totals.get(name, 0) + n
        return totals


__all__ = ["NAMES", "Counters"]

"""The background sweep of expired rows that a provider runs while it is open.

Expired rows are invisible at once (every read checks the expiry); a sweep removes
them from storage and, on a change-fed table, records their ``"expire"`` events.
Writes that meet an expired row sweep it, ``admin.sweep(name)`` sweeps a table at
once, and :class:`BackgroundSweeper` sweeps every table each ``sweep_interval``
seconds (URL option ``?sweep_interval=SECONDS``, 0: off) from a daemon thread that
starts with the provider's first table or transaction and ends at ``close()``.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable

from spi.stats import Counters

log = logging.getLogger(__name__)

DEFAULT_SWEEP_INTERVAL = 60.0
"""Seconds between background sweeps (``?sweep_interval=``)."""


class BackgroundSweeper:
    """Calls ``sweep()`` (rows removed) every ``interval`` seconds from a daemon
    thread, from :meth:`start` until :meth:`stop`, counting rounds, rows and failures
    in ``counters``. It holds ``sweep`` weakly: a provider that is dropped without
    ``close()`` ends its sweeper too."""

    def __init__(self, sweep: Callable[[], int], interval: float, counters: Counters) -> None:
        self._sweep = weakref.WeakMethod(sweep)  # type: ignore[arg-type]
        self._counters = counters
        self._interval = interval
        self._stopped = threading.Event()
        self._started = interval <= 0

    def start(self) -> None:
        """Start the thread (once; a no-op when the interval is 0)."""
        if self._started:
            return
        self._started = True
        threading.Thread(target=self._run, name="kvctl-sweeper", daemon=True).start()

    def stop(self) -> None:
        """Stop the thread (it ends after the sweep in progress, if any)."""
        self._stopped.set()

    def _run(self) -> None:
        while not self._stopped.wait(self._interval):
            sweep = self._sweep()
            if sweep is None:
                return
            try:
                removed = sweep()
            except Exception as exc:  # a busy or unreachable store: the next round tries again
                self._counters.add("sweep_errors")
                log.warning("background sweep failed (the next one in %g s tries again): %s", self._interval, exc)
            else:
                self._counters.add("sweeps")
                self._counters.add("swept_rows", removed)
                log.debug("background sweep removed %d expired rows", removed)
            del sweep

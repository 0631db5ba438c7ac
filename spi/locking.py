"""An exclusive, thread-aware lock with a busy timeout, for single-writer stores."""

from __future__ import annotations

import threading

from spi.errors import KvError, ProviderUnavailableError


class ExclusiveLock:
    """One holder at a time; waiting past ``timeout`` seconds is an error.

    Re-acquiring from the thread that holds it raises at once instead of
    deadlocking (a transaction opened inside another on the same store).
    """

    def __init__(self, what: str) -> None:
        self._lock = threading.Lock()
        self._owner: int | None = None
        self._what = what

    def acquire(self, timeout: float) -> None:
        """Take the lock, waiting up to ``timeout`` seconds."""
        if self._owner == threading.get_ident():
            raise KvError(
                f"a transaction is already open on {self._what} in this thread; "
                "use that transaction instead of opening another one (it would deadlock)"
            )
        if not self._lock.acquire(timeout=timeout):
            raise ProviderUnavailableError(
                f"{self._what} is busy: another transaction held it for more than {timeout:g} s"
            )
        self._owner = threading.get_ident()

    def release(self) -> None:
        """Give the lock up."""
        self._owner = None
        self._lock.release()

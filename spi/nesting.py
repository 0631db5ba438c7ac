"""One open transaction per provider per thread.

A transaction opened on a provider from a thread that already has one open on it
raises :class:`KvError` at once, on every provider (docs/spi.md, "Transactions").
The exclusive stores (memory, RocksDB) could only deadlock there, and on the
optimistic or server-side ones (etcd, PostgreSQL) the inner transaction would be a
second, independent one that may wait for the outer one's locks or conflict with
it: neither is what a caller who nests means, so every provider refuses the same way.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Protocol, TypeVar

from spi.errors import KvError


class _Ending(Protocol):
    @property
    def finished(self) -> bool: ...


TX = TypeVar("TX", bound=_Ending)


class ThreadTransactions:
    """The transaction each thread has open on one provider (weakly held)."""

    def __init__(self, what: str) -> None:
        self._what = what
        self._local = threading.local()

    def begin(self, make: Callable[[], TX]) -> TX:
        """``make()`` a new transaction, unless this thread has one open here."""
        held: weakref.ref[_Ending] | None = getattr(self._local, "tx", None)
        current = held() if held is not None else None
        if current is not None and not current.finished:
            raise KvError(
                f"a transaction is already open on {self._what} in this thread; "
                "use that transaction instead of opening another one"
            )
        tx = make()
        self._local.tx = weakref.ref(tx)
        return tx


__all__ = ["ThreadTransactions"]

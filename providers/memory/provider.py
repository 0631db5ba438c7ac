"""``memory://``: the :mod:`spi.kv` engine over a ``SortedDict``."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from sortedcontainers import SortedDict

from spi.capabilities import Capability
from spi.changes import DEFAULT_RETENTION
from spi.errors import UrlError
from spi.kv import KvProvider, OrderedStore, StoreSession
from spi.locking import ExclusiveLock
from spi.sweeper import DEFAULT_SWEEP_INTERVAL
from spi.urloptions import UrlOptions

DEFAULT_BUSY_TIMEOUT = 30.0


class _MemorySession(StoreSession):
    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def get(self, key: bytes) -> bytes | None:
        return self._store.data.get(key)  # type: ignore[no-any-return]

    def iterate(self, lo: bytes, hi: bytes | None, reverse: bool) -> Iterator[tuple[bytes, bytes]]:
        data = self._store.data
        for k in data.irange(lo, hi, inclusive=(True, False), reverse=reverse):
            yield k, data[k]

    def values(self, lo: bytes, hi: bytes | None, reverse: bool) -> Iterator[bytes]:
        data = self._store.data
        return map(data.__getitem__, data.irange(lo, hi, inclusive=(True, False), reverse=reverse))

    def keys(self, lo: bytes, hi: bytes | None) -> Iterator[bytes]:
        return self._store.data.irange(lo, hi, inclusive=(True, False))  # type: ignore[no-any-return]

    def commit(self, range_deletes: list[tuple[bytes, bytes]], keys: list[bytes], values: list[bytes | None]) -> None:
        data = self._store.data
        for lo, hi in range_deletes:
            for k in list(data.irange(lo, hi, inclusive=(True, False))):
                del data[k]
        for k, v in zip(keys, values):
            if v is None:
                data.pop(k, None)
            else:
                data[k] = v

    def release(self) -> None:
        self._store.lock.release()

    def generation(self) -> int:
        # Only this process's sessions write a memory store.
        return self._store.generation

    def advance_generation(self) -> None:
        self._store.generation += 1

    def known_revision(self) -> int:
        return self._store.announced  # only this process's sessions write a memory store

    def announce(self, revision: int) -> None:
        store = self._store
        store.announced = revision
        if store.listeners:
            with store.changed:
                store.changed.notify_all()


class MemoryStore(OrderedStore):
    """A process-local sorted map with one exclusive session at a time."""

    def __init__(self, busy_timeout: float) -> None:
        self.data: SortedDict = SortedDict()
        self.generation = 0
        self.lock = ExclusiveLock("the memory:// store")
        self._busy_timeout = busy_timeout
        self.announced = 0
        """The last revision a commit announced (the change marker)."""
        self.changed = threading.Condition()
        """Notified by every announcement while watchers wait: they wake at once."""
        self.listeners = 0

    def session(self, read_only: bool = False) -> StoreSession:
        self.lock.acquire(self._busy_timeout)
        return _MemorySession(self)

    def change_marker(self) -> Any:
        return self.announced

    def wait_for_change(self, marker: Any, timeout: float) -> None:
        with self.changed:
            self.listeners += 1
            try:
                self.changed.wait_for(lambda: self.announced != marker, timeout)
            finally:
                self.listeners -= 1


class MemoryProvider(KvProvider):
    """The in-memory provider; every ``connect("memory://")`` is a fresh store.

    URL options: ``?busy_timeout=SECONDS`` (default 30) bounds how long a
    transaction waits for another thread's transaction to finish;
    ``?changes_retention=SECONDS`` (default 7 days, 0: until compacted) how long
    change-feed events are kept; ``?sweep_interval=SECONDS`` (default 60, 0: never)
    how often the provider sweeps expired rows in the background.
    """

    capabilities: frozenset[str] = frozenset(
        {
            Capability.TRANSACTIONS,
            Capability.SECONDARY_INDEXES,
            Capability.VERIFY,
            Capability.THREADS,
            Capability.CHANGES,
            Capability.EXPIRY,
        }
    )

    @classmethod
    def from_url(cls, url: str, *, create: bool = True) -> MemoryProvider:
        """Open ``memory://`` (no host or path allowed). ``create`` changes nothing:
        every connection is a new, empty store of its own, with nothing to create."""
        parts = urlsplit(url)
        if parts.netloc or parts.path not in ("", "/"):
            raise UrlError(f"memory URLs take no host or path: use memory://, not {url!r}")
        options = UrlOptions.parse(parts.query, "memory://")
        timeout = options.seconds("busy_timeout", DEFAULT_BUSY_TIMEOUT)
        retention = options.seconds("changes_retention", DEFAULT_RETENTION)
        sweep_interval = options.seconds("sweep_interval", DEFAULT_SWEEP_INTERVAL)
        options.finish()
        return cls(url, MemoryStore(timeout), changes_retention=retention, sweep_interval=sweep_interval)

    @property
    def store_id(self) -> str:
        """``memory://`` and a number of this store (each connect is a store of its own)."""
        return f"memory://#{id(self._store):x}"

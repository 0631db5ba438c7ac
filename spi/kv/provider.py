"""The provider of the ordered-store engine: a store, its admin and its transactions."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from spi.changes import DEFAULT_RETENTION, check_watch, watching
from spi.clock import Clock
from spi.errors import KvError
from spi.keys import KeyLike
from spi.kv.autocommit import KvAutoCommitTable
from spi.kv.feed import FeedSettings
from spi.kv.layout import LayoutCache
from spi.kv.store import OrderedStore, StoreSession
from spi.kv.transaction import KvTransaction
from spi.nesting import ThreadTransactions
from spi.provider import ProviderBase
from spi.sweeper import DEFAULT_SWEEP_INTERVAL, BackgroundSweeper

if TYPE_CHECKING:  # imported when first used: a one-off read or count needs neither
    from spi.changes import Change, Progress
    from spi.kv.admin import KvAdmin


class KvProvider(ProviderBase):
    """A provider over an :class:`OrderedStore`; subclasses supply the store."""

    def __init__(
        self,
        url: str,
        store: OrderedStore,
        *,
        changes_retention: float = DEFAULT_RETENTION,
        sweep_interval: float = DEFAULT_SWEEP_INTERVAL,
    ) -> None:
        super().__init__(url)
        self._store = store
        self._feed = FeedSettings(changes_retention)
        self.layouts = LayoutCache()
        """Decoded table layouts, shared by this provider's transactions and reads."""
        self._admin: KvAdmin | None = None
        self._transactions = ThreadTransactions(self.url)
        self.closed = False
        """True once :meth:`close` ran (every call then fails)."""
        self._sweeper = BackgroundSweeper(self.sweep_expired, sweep_interval, self.counters)

    @property
    def admin(self) -> KvAdmin:
        """Table management."""
        if self._admin is None:
            from spi.kv.admin import KvAdmin

            self._admin = KvAdmin(self.transaction, self.session, self.layouts)
        return self._admin

    @property
    def clock(self) -> Clock:
        """The clock that decides when rows expire (:mod:`spi.clock`; default
        :func:`time.time_ns`): every read, scan, count, write, load and sweep of this
        provider asks it for now. Tests set a :class:`spi.clock.ManualClock` and
        advance it instead of sleeping out a ttl; a transaction keeps the clock it
        began with."""
        return self.layouts.clock

    @clock.setter
    def clock(self, clock: Clock) -> None:
        if not callable(clock):
            raise TypeError(f"a clock is a callable answering nanoseconds since the epoch, got {clock!r}")
        self.layouts.clock = clock

    def transaction(self) -> KvTransaction:
        """A new serializable transaction (waits for exclusive access)."""
        self._sweeper.start()
        return self._transactions.begin(self._begin)

    def _begin(self) -> KvTransaction:
        return KvTransaction(self._transaction_session(), self.layouts, self._feed)

    def _transaction_session(self) -> StoreSession:
        """The session a new transaction runs on (etcd: one that guesses the generation)."""
        return self.session()

    def session(self, read_only: bool = False) -> StoreSession:
        """Exclusive access to the store (waits up to the busy timeout); ``read_only``:
        the session will not commit."""
        if self.closed:
            raise KvError(f"provider {self.url} is closed")
        return self._store.session(read_only)

    def _brief_session(self) -> StoreSession:
        if self.closed:
            raise KvError(f"provider {self.url} is closed")
        return self._store.brief_session()

    def table(self, name: str) -> KvAutoCommitTable:
        """An auto-commit handle: each call one store session (a write commits once)."""
        self._sweeper.start()
        return KvAutoCommitTable(self, name, self.session, self.layouts, self._store, self._feed)

    def revision(self) -> int:
        """The store's current revision (0 before the first recorded write)."""
        from spi.kv import changes as feed_reads

        return feed_reads.revision(self.session)

    def changes(
        self,
        tables: str | Sequence[str] | None = None,
        *,
        since: int = 0,
        key: KeyLike | None = None,
        prefix: KeyLike | None = None,
        limit: int | None = None,
        prev: bool = False,
        ops: Iterable[str] | None = None,
    ) -> Iterator[Change]:
        """Recorded events after ``since`` up to the current revision (see :mod:`spi.kv.changes`)."""
        from spi.kv import changes as feed_reads

        return feed_reads.changes(self.session, self.layouts, tables, since, key, prefix, limit, prev, ops)

    def watch(
        self,
        table: str,
        *,
        key: KeyLike | None = None,
        prefix: KeyLike | None = None,
        since: int | None = None,
        timeout: float | None = None,
        prev: bool = False,
        ops: Iterable[str] | None = None,
        progress: float | None = None,
        initial: bool = False,
    ) -> Iterator[Change | Progress]:
        """Recorded, then live events of ``table`` (see :mod:`spi.kv.changes`); a
        watching provider sweeps in the background too, so expiries reach it."""
        from spi.kv import changes as feed_reads

        args = check_watch(table, key, prefix, since, timeout, prev, ops, progress, initial)
        self._sweeper.start()
        return watching(
            self,
            args,
            key,
            prefix,
            lambda a: feed_reads.watch(self._brief_session, self.layouts, self._store, a, key, prefix),
        )

    def compact(self, revision: int) -> None:
        """Forget the events with revision <= ``revision``."""
        from spi.kv import changes as feed_reads

        feed_reads.compact(self.transaction, revision)

    def close(self) -> None:
        """Release the store."""
        if not self.closed:
            self.closed = True
            self._sweeper.stop()
            self._store.close()

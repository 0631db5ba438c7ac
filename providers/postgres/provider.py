"""``PostgresProvider``: the SPI's entry point, over a :class:`PgDatabase`."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeVar

from providers.postgres import changes as feed_reads
from providers.postgres.admin import PgAdmin
from providers.postgres.autocommit import PgAutoCommitTable
from providers.postgres.database import PgDatabase
from providers.postgres.transaction import PgTransaction, begin
from providers.postgres.url import PgSettings, parse_url
from spi.capabilities import SHARED_DURABLE, Capability
from spi.changes import Change, Progress, check_watch, watching
from spi.clock import SYSTEM_CLOCK, Clock
from spi.keys import KeyLike
from spi.nesting import ThreadTransactions
from spi.provider import ProviderBase, TransactionBase
from spi.sweeper import BackgroundSweeper

log = logging.getLogger(__name__)
T = TypeVar("T")


class PostgresProvider(ProviderBase):
    """Logical tables as real PostgreSQL tables in one schema (see the package docs)."""

    capabilities: frozenset[str] = SHARED_DURABLE | {Capability.SQL}

    def __init__(self, settings: PgSettings, secret: str | None, *, create: bool = True) -> None:
        super().__init__(settings.masked)
        self.schema = settings.schema
        self._store_id = settings.store_id
        self._db = PgDatabase(settings, secret, create=create)
        self._admin = PgAdmin(self._db)
        self._retention = settings.changes_retention
        self._sweeper = BackgroundSweeper(self.sweep_expired, settings.sweep_interval, self.counters)
        self._transactions = ThreadTransactions(self.url)

    @property
    def clock(self) -> Clock:
        """The clock that decides when rows expire (:mod:`spi.clock`): by default
        (:func:`time.time_ns`, which stands for it here) the server's, which the SQL
        reads itself; a test clock (a :class:`spi.clock.ManualClock`) is passed to the
        statements that decide expiry as a parameter (``kv_now``), only once one is
        set (the statements cached per table are built anew then)."""
        return SYSTEM_CLOCK if self._db.clock is None else self._db.clock

    @clock.setter
    def clock(self, clock: Clock) -> None:
        if not callable(clock):
            raise TypeError(f"a clock is a callable answering nanoseconds since the epoch, got {clock!r}")
        self._db.use_clock(clock)

    @property
    def store_id(self) -> str:
        """``postgresql://HOST:PORT/DATABASE?schema=SCHEMA`` (no user or password)."""
        return self._store_id

    @property
    def arrow_conninfo(self) -> str:
        """The libpq connection string of Arrow scans (read-only sessions; holds the password)."""
        return self._db.arrow_conninfo

    @classmethod
    def from_url(cls, url: str, *, create: bool = True) -> PostgresProvider:
        """Open ``postgresql+psycopg://user:pw@host:port/db?schema=NAME`` (connects lazily).

        The first transaction creates the schema and kvctl's catalog in it if missing;
        with ``create=False`` it raises :class:`UrlError` naming the schema instead.
        """
        settings = parse_url(url)
        return cls(settings, settings.sa_url.password, create=create)

    @property
    def admin(self) -> PgAdmin:
        """Table management (DDL in transactions)."""
        return self._admin

    def transaction(
        self, *, isolation: str | None = None, exclusive: bool = False, read_only: bool = False
    ) -> PgTransaction:
        """A new SERIALIZABLE transaction (or ``isolation``, ``read_only``); ``exclusive``
        first waits for the schema's retry lock. One open transaction per thread
        (:mod:`spi.nesting`)."""
        self._sweeper.start()
        return self._transactions.begin(
            lambda: begin(self._db, isolation=isolation, exclusive=exclusive, read_only=read_only)
        )

    def run(self, fn: Callable[[TransactionBase], T], retries: int = 10) -> T:
        """Run ``fn(tx)``, retrying on :class:`ConflictError` (re-raised after ``retries``).

        The first attempt is optimistic. Retries queue on a per-schema advisory lock
        taken before the transaction starts, so under contention they run one after
        the other on fresh snapshots instead of colliding again: no backoff.
        """
        attempts = itertools.count()

        def attempt() -> T:
            with self.transaction(exclusive=next(attempts) > 0) as tx:
                return fn(tx)

        return self.retried(attempt, retries, backoff=False)

    def table(self, name: str) -> PgAutoCommitTable:
        """An auto-commit handle (point reads take a single round trip)."""
        self._sweeper.start()
        return PgAutoCommitTable(self, name, self._db)

    def revision(self) -> int:
        """The schema's current revision (0 before the first recorded write)."""
        return feed_reads.revision(self._db)

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
        """Recorded events after ``since`` up to the current revision."""
        return feed_reads.changes(self._db, tables, since, key, prefix, limit, prev, ops)

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
        """Recorded, then live events of ``table`` (LISTEN/NOTIFY, and a read every
        second); a watching provider sweeps in the background too, so expiries reach it."""
        args = check_watch(table, key, prefix, since, timeout, prev, ops, progress, initial)
        self._sweeper.start()
        return watching(self, args, key, prefix, lambda a: feed_reads.watch(self._db, a, key, prefix))

    def compact(self, revision: int) -> None:
        """Forget the events with revision <= ``revision``."""
        feed_reads.compact(self._db, revision)

    def sweep_expired(self) -> int:
        """Sweep every table's expired rows, then forget the change-feed events older
        than ``?changes_retention`` (what the background sweep runs)."""
        removed = super().sweep_expired()
        feed_reads.apply_retention(self._db, self._retention)
        return removed

    def close(self) -> None:
        """Close the held connections and dispose of the connection pools."""
        self._sweeper.stop()
        self._db.close()

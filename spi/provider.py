"""Providers, transactions and the auto-commit table handle.

A provider subclasses :class:`ProviderBase` and implements ``transaction`` (a new
:class:`TransactionBase`) and an :class:`~spi.protocols.Admin`. Retrying on conflicts, the
auto-commit handle and context management are implemented here, once.
"""

from __future__ import annotations

import contextlib
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import chain
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar

from spi.aggregate import Group
from spi.changes import Change, Progress, no_change_feeds
from spi.checksum import SEGMENT_ROWS, Checksum, Segment
from spi.errors import ConflictError, InvalidFieldError, TableNotFoundError
from spi.filters import Expr
from spi.keys import KeyLike, Range
from spi.load import AheadWriter, run_load
from spi.primitives import ColumnBatch
from spi.protocols import Admin, Provider
from spi.row import Page, Row
from spi.scanning import merge_scans, transpose
from spi.spec import TableSpec
from spi.stats import Counters
from spi.table import TableBase
from spi.validate import check_batch_size, check_limit, check_projection

if TYPE_CHECKING:
    import pyarrow as pa

log = logging.getLogger(__name__)
T = TypeVar("T")

AUTOCOMMIT_PAGE = 1000
"""Rows an auto-commit scan reads per transaction."""


class TransactionBase(ABC):
    """A serializable transaction: commit on a clean exit, roll back on an exception."""

    def __init__(self) -> None:
        self._tables: dict[str, TableBase] = {}
        self._done = False

    @abstractmethod
    def _open_table(self, name: str) -> TableBase:
        """The table handle for ``name`` in this transaction (TableNotFoundError if missing)."""

    @abstractmethod
    def _commit(self) -> None:
        """Make the transaction's writes durable and visible (ConflictError if it lost)."""

    @abstractmethod
    def _rollback(self) -> None:
        """Discard the transaction's writes and release what it holds."""

    def table(self, name: str) -> TableBase:
        """The table ``name`` as seen by this transaction."""
        if self._done:
            raise InvalidFieldError("this transaction has ended; open a new one")
        handle = self._tables.get(name)
        if handle is None:
            handle = self._tables[name] = self._open_table(name)
        return handle

    @property
    def finished(self) -> bool:
        """True once the transaction's ``with`` block has ended (committed, rolled
        back, or failed to commit)."""
        return self._done

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._done = True
        if exc_type is None:
            self._commit()
        else:
            self._rollback()


class ProviderBase(Provider, ABC):
    """What every provider offers: admin, transactions, run, auto-commit tables."""

    capabilities: frozenset[str] = frozenset()
    autocommit_retries = 100
    """Conflict retries of each auto-commit call (``run`` defaults to 10)."""

    def __init__(self, url: str) -> None:
        self.url = url
        """The URL with any password masked as ``***``."""
        self.counters = Counters()
        """What this provider's calls did (:meth:`stats`)."""

    def stats(self) -> dict[str, int]:
        """Counts of retries, fast-path misses, waits and sweeps since the provider
        was opened (the names: :data:`spi.stats.NAMES`, documented there)."""
        return self.counters.snapshot()

    @property
    @abstractmethod
    def admin(self) -> Admin:
        """Table management."""

    @property
    def store_id(self) -> str:
        """The store this provider opened, without credentials (here the masked URL;
        providers whose URLs can name one store in several ways normalise it)."""
        return self.url

    @abstractmethod
    def transaction(self) -> TransactionBase:
        """A new serializable transaction (use it as a context manager)."""

    def close(self) -> None:
        """Release connections and files; the provider is unusable afterwards."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.url}>"

    def run(self, fn: Callable[[TransactionBase], T], retries: int = 10) -> T:
        """Run ``fn(tx)`` in a transaction, retrying on :class:`ConflictError`
        with jittered exponential backoff; re-raises after ``retries`` retries."""

        def attempt() -> T:
            with self.transaction() as tx:
                return fn(tx)

        return self.retried(attempt, retries)

    def retried(self, fn: Callable[[], T], retries: int = 10, *, backoff: bool = True) -> T:
        """``fn()``, called again on :class:`ConflictError` as :meth:`run` retries
        (counted and logged); for a call that opens its own transactions. The one
        retry loop of every provider: ``backoff=False`` retries at once, for a caller
        whose retries queue on a lock instead (PostgreSQL's :meth:`run`)."""
        attempt = 0
        while True:
            try:
                return fn()
            except ConflictError as exc:
                if attempt >= retries:
                    raise
                self.counters.add("conflict_retries")
                if backoff:
                    import random  # only a retry needs it (1 ms of start-up otherwise)

                    pause = random.uniform(0, min(0.2, 0.002 * 2**attempt))
                    log.debug("conflict (%s): retry %d of %d after %.1f ms", exc, attempt + 1, retries, pause * 1000)
                    time.sleep(pause)
                else:
                    log.debug("conflict (%s): retry %d of %d", exc, attempt + 1, retries)
                attempt += 1

    def table(self, name: str) -> AutoCommitTable:
        """An auto-commit handle: each call is its own transaction."""
        return AutoCommitTable(self, name)

    def sweep_expired(self) -> int:
        """Sweep every table's expired rows now (what the background sweep runs, see
        :mod:`spi.sweeper`); how many rows were removed."""
        admin = self.admin
        removed = 0
        for name in admin.list_tables():
            with contextlib.suppress(TableNotFoundError):  # dropped meanwhile
                removed += admin.sweep(name)
        return removed

    # Change feeds: providers that declare Capability.CHANGES override these four.
    def revision(self) -> int:
        """The store's current revision (see :mod:`spi.changes`)."""
        raise no_change_feeds(type(self).__name__)

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
        """Recorded events after ``since`` (see :mod:`spi.changes`)."""
        raise no_change_feeds(type(self).__name__)

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
        """Recorded, then live events of one table (see :mod:`spi.changes`)."""
        raise no_change_feeds(type(self).__name__)

    def compact(self, revision: int) -> None:
        """Forget events with revision <= ``revision`` (see :mod:`spi.changes`)."""
        raise no_change_feeds(type(self).__name__)


class AutoCommitTable:
    """A table handle whose every call runs in its own transaction (retried on conflict).

    Providers may run a call as less than a transaction where the result is the same
    (:meth:`_write`, :meth:`_read`): PostgreSQL's single-key writes are one statement,
    the ordered-store engine's one commit of one store session. Scans read page by page, each page its own short transaction, so a long scan
    holds nothing between pages and the caller may write while iterating; each page
    is consistent, the whole scan is not a snapshot (use a transaction for that).
    """

    page_size = AUTOCOMMIT_PAGE
    """Rows per page (per transaction) of an auto-commit scan."""

    def __init__(self, provider: ProviderBase, name: str) -> None:
        self._provider = provider
        self.name = name

    def _call(self, op: Callable[[TableBase], T]) -> T:
        """Run ``op`` on the table in its own transaction, retried on conflict."""
        return self._provider.run(lambda tx: op(tx.table(self.name)), retries=self._provider.autocommit_retries)

    def _write(self, op: Callable[[TableBase], T]) -> T:
        """Run the single-key write ``op`` (here as :meth:`_call`; providers may run it
        as one engine operation)."""
        return self._call(op)

    def _read(self, op: Callable[[TableBase], T]) -> T:
        """Run the read-only ``op`` on one consistent view of the table (here a
        transaction; providers may read a snapshot without the write machinery)."""
        return self._call(op)

    @property
    def spec(self) -> TableSpec:
        """The table's current spec."""
        return self._read(lambda t: t.spec)

    def upsert(self, row: Mapping[str, Any], *, ttl: int | float | None = None) -> int:
        """See :meth:`TableBase.upsert`."""
        return self._write(lambda t: t.upsert(row, ttl=ttl))

    def insert(self, row: Mapping[str, Any], *, ttl: int | float | None = None) -> int:
        """See :meth:`TableBase.insert`."""
        return self._write(lambda t: t.insert(row, ttl=ttl))

    def replace(self, row: Mapping[str, Any], *, version: int | None = None, ttl: int | float | None = None) -> int:
        """See :meth:`TableBase.replace`."""
        return self._write(lambda t: t.replace(row, version=version, ttl=ttl))

    def update(
        self,
        key: KeyLike,
        changes: Mapping[str, Any],
        *,
        default: Mapping[str, Any] | None = None,
        version: int | None = None,
        ttl: int | float | None = None,
    ) -> int:
        """See :meth:`TableBase.update`."""
        return self._write(lambda t: t.update(key, changes, default=default, version=version, ttl=ttl))

    def delete(self, key: KeyLike, *, version: int | None = None) -> bool:
        """See :meth:`TableBase.delete`."""
        return self._write(lambda t: t.delete(key, version=version))

    def increment(self, key: KeyLike, column: str, amount: int | float = 1) -> int | float:
        """See :meth:`TableBase.increment`."""
        return self._write(lambda t: t.increment(key, column, amount))

    def compare_and_swap(self, key: KeyLike, column: str, expected: Any, new: Any) -> bool:
        """See :meth:`TableBase.compare_and_swap`."""
        return self._write(lambda t: t.compare_and_swap(key, column, expected, new))

    def update_range(
        self,
        range: Range | None = None,
        *,
        where: Expr | None = None,
        changes: Mapping[str, Any],
    ) -> int:
        """See :meth:`TableBase.update_range` (one transaction)."""
        return self._call(lambda t: t.update_range(range, where=where, changes=changes))

    def delete_range(self, range: Range | None = None, *, where: Expr | None = None) -> int:
        """See :meth:`TableBase.delete_range` (one transaction)."""
        return self._call(lambda t: t.delete_range(range, where=where))

    def load(
        self,
        rows: Iterable[Mapping[str, Any]],
        *,
        mode: str = "upsert",
        batch_size: int = 10_000,
        progress: Callable[[int], None] | None = None,
        keep_versions: bool = False,
        ttl: int | float | None = None,
    ) -> int:
        """Bulk load; each batch commits in its own transaction (the rows' expiry
        counts from the load's start)."""
        plan = self._call(lambda t: t.load_plan(ttl, keep_versions))
        return run_load(
            lambda batch, m, kept: self._call(lambda t: t.write_prepared(batch, m, kept, plan.expires)),
            plan.preparer,
            rows,
            mode=mode,
            batch_size=batch_size,
            progress=progress,
            keep_versions=keep_versions,
            write_ahead=None if keep_versions else self._load_ahead(plan.expires),
        )

    def _load_ahead(self, expires: int | None) -> AheadWriter | None:
        """How a load of rows expiring at ``expires`` (microseconds since the epoch;
        None: never) writes a batch while the one before it is written
        (:data:`spi.load.AheadWriter`), or None (here): one batch at a time."""
        return None

    def read(self, key: KeyLike, *, columns: Iterable[str] | None = None) -> Row | None:
        """See :meth:`TableBase.read`."""
        return self._read(lambda t: t.read(key, columns=columns))

    def read_many(self, keys: Iterable[KeyLike], *, columns: Iterable[str] | None = None) -> list[Row | None]:
        """See :meth:`TableBase.read_many` (one transaction)."""
        key_list = list(keys)
        return self._read(lambda t: t.read_many(key_list, columns=columns))

    def scan_page(
        self,
        range: Range | None = None,
        *,
        where: Expr | None = None,
        order_by: str | None = None,
        descending: bool = False,
        limit: int,
        after: str | None = None,
        columns: Iterable[str] | None = None,
    ) -> Page:
        """See :meth:`TableBase.scan_page`."""
        cols = None if columns is None else list(columns)
        return self._read(
            lambda t: t.scan_page(
                range, where=where, order_by=order_by, descending=descending, limit=limit, after=after, columns=cols
            )
        )

    def scan(
        self,
        range: Range | None = None,
        *,
        where: Expr | None = None,
        order_by: str | None = None,
        descending: bool = False,
        limit: int | None = None,
        columns: Iterable[str] | None = None,
    ) -> Iterator[Row]:
        """Stream rows page by page (the first page is read now, so errors raise here)."""
        n = check_limit(limit)
        cols = None if columns is None else list(columns)
        size = self.page_size if n is None else min(n, self.page_size)
        first = self.scan_page(range, where=where, order_by=order_by, descending=descending, limit=size, columns=cols)
        if n == 0:
            return iter(())

        def pages() -> Iterator[list[Row]]:
            page, left = first, n
            while True:
                yield page.rows
                if left is not None:
                    left -= len(page.rows)
                if page.next_token is None or left == 0:
                    return
                page = self.scan_page(
                    range,
                    where=where,
                    order_by=order_by,
                    descending=descending,
                    limit=self.page_size if left is None else min(left, self.page_size),
                    after=page.next_token,
                    columns=cols,
                )

        return chain.from_iterable(pages())  # the rows flattened in C, not a generator step each

    def scan_batches(
        self,
        range: Range | None = None,
        *,
        where: Expr | None = None,
        columns: Iterable[str] | None = None,
        batch_size: int = 10_000,
    ) -> Iterator[ColumnBatch]:
        """See :meth:`TableBase.scan_batches`: each batch is one page read in its own
        short transaction (the first now, so errors raise here), like :meth:`scan`."""
        return (batch for _, batch in self._paged_batches(range, where, columns, batch_size))

    def scan_arrow(
        self,
        range: Range | None = None,
        *,
        where: Expr | None = None,
        columns: Iterable[str] | None = None,
        batch_size: int = 10_000,
    ) -> Iterator[pa.RecordBatch]:
        """See :meth:`TableBase.scan_arrow`: :meth:`scan_batches` pages as Arrow, each
        typed by the spec its page was read with."""
        from spi.arrow import record_batches

        return record_batches(self._paged_batches(range, where, columns, batch_size))

    def _paged_batches(
        self, range: Range | None, where: Expr | None, columns: Iterable[str] | None, batch_size: int
    ) -> Iterator[tuple[TableSpec, ColumnBatch]]:
        """Pages as column batches with the spec each was read with (the first page
        is read now, so errors raise here)."""
        size = check_batch_size(batch_size)
        cols = None if columns is None else list(columns)

        def page(after: str | None) -> tuple[Page, TableSpec, tuple[str, ...]]:
            def op(t: TableBase) -> tuple[Page, TableSpec, tuple[str, ...]]:
                got = t.scan_page(range, where=where, limit=size, after=after, columns=cols)
                return got, t.spec, check_projection(t.spec, cols) or t.spec.columns

            return self._read(op)

        first = page(None)

        def batches() -> Iterator[tuple[TableSpec, ColumnBatch]]:
            current, spec, names = first
            while True:
                if current.rows:
                    yield spec, transpose(current.rows, names)
                if current.next_token is None:
                    return
                current, spec, names = page(current.next_token)

        return batches()

    def multi_scan(
        self,
        ranges: Sequence[Range],
        *,
        where: Expr | None = None,
        limit: int | None = None,
        columns: Iterable[str] | None = None,
    ) -> Iterator[Row]:
        """See :meth:`TableBase.multi_scan` (each range paged)."""
        return merge_scans(self.spec, self.scan, ranges, where=where, limit=limit, columns=columns)

    def count(self, range: Range | None = None, *, where: Expr | None = None) -> int:
        """See :meth:`TableBase.count`."""
        return self._read(lambda t: t.count(range, where=where))

    def aggregate(
        self,
        range: Range | None = None,
        *,
        where: Expr | None = None,
        group_by: Iterable[str] = (),
        columns: Iterable[str] = (),
    ) -> list[Group]:
        """See :meth:`spi.aggregate.Aggregates.aggregate` (one consistent read)."""
        grouped, stats = list(group_by), list(columns)
        return self._read(lambda t: t.aggregate(range, where=where, group_by=grouped, columns=stats))

    def checksum(
        self,
        range: Range | None = None,
        *,
        where: Expr | None = None,
        columns: Iterable[str] | None = None,
        versions: bool = False,
    ) -> Checksum:
        """See :meth:`spi.checksum.Checksums.checksum` (one consistent read)."""
        cols = None if columns is None else list(columns)
        return self._read(lambda t: t.checksum(range, where=where, columns=cols, versions=versions))

    def segments(
        self,
        range: Range | None = None,
        *,
        where: Expr | None = None,
        columns: Iterable[str] | None = None,
        versions: bool = False,
        size: int = SEGMENT_ROWS,
        limit: int | None = None,
    ) -> list[Segment]:
        """See :meth:`spi.checksum.Checksums.segments` (one consistent read)."""
        cols = None if columns is None else list(columns)
        return self._read(
            lambda t: t.segments(range, where=where, columns=cols, versions=versions, size=size, limit=limit)
        )

    def split(self, n: int) -> list[Range]:
        """See :meth:`TableBase.split`."""
        return self._read(lambda t: t.split(n))

    def explain(
        self,
        range: Range | None = None,
        *,
        where: Expr | None = None,
        order_by: str | None = None,
    ) -> str:
        """See :meth:`TableBase.explain`."""
        return self._read(lambda t: t.explain(range, where=where, order_by=order_by))

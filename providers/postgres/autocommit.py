"""Auto-commit point reads and single-key writes as one statement: a single round trip.

An auto-commit ``read`` is one SELECT, and an auto-commit ``upsert``, ``insert``,
``replace``, ``update``, ``delete``, ``increment`` or ``compare_and_swap`` of a table
without a change feed one INSERT/UPDATE/DELETE (:mod:`providers.postgres.table_writes`), so
each runs as an implicit transaction on an autocommit connection (the session default
is SERIALIZABLE): no BEGIN/COMMIT, no pre-ping, no separate catalog query. Every
statement checks the spec fingerprint in the catalog, so a spec changed by another
process is noticed in the same round trip. Anything unusual (unknown or changed table,
a conflict, a failed condition to explain, a broken connection) falls back to the
ordinary transaction path, which gives the exact answer or error: the statement
changed nothing in those cases. A change-fed table's write is the same single
statement with the feed's next revision, its events and the NOTIFY in it
(:mod:`providers.postgres.event_sql`).
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from sqlalchemy.engine import Dialect

from providers.postgres.arrow import adbc_batches
from providers.postgres.database import PgDatabase
from providers.postgres.errors import CONFLICT_STATES, STALE_PLAN
from providers.postgres.table import PgTable
from providers.postgres.table_sql import ReadStatement, TableSql
from providers.postgres.transaction import PgTransaction, begin
from spi.errors import KvError
from spi.filters import Expr
from spi.keys import KeyLike, Range
from spi.load import AheadWriter
from spi.primitives import ColumnBatch, Stored
from spi.provider import AutoCommitTable, ProviderBase
from spi.row import Page, Row
from spi.sorting import SortPlan
from spi.table import TableBase
from spi.validate import check_batch_size

if TYPE_CHECKING:
    import pyarrow as pa

T = TypeVar("T")
log = logging.getLogger(__name__)


class Fallback(Exception):
    """The single-statement path cannot answer; use a normal transaction."""


class CommittedFallback(AssertionError):
    """A single-statement call asked for a transaction after its statement had
    committed: a bug (falling back would apply the write twice)."""


class _OneStatement:
    """A :class:`~providers.postgres.session.PgSession` of one auto-commit SELECT for
    :meth:`PgTable.read`: it answers :meth:`fetch_row`, and anything else would need
    a transaction (:class:`Fallback`)."""

    ended = False

    def __init__(self, db: PgDatabase, statement: ReadStatement | None, *, records_events: bool = False) -> None:
        self._db = db
        self._statement = statement  # None: a write, which reads no row
        self.records_events = records_events  # a change-fed table's write: its statement records its events
        self.events: list[Any] = []  # never recorded: the statement records them, or none are made
        self._now: int | None = None
        self.committed = False
        """Whether a write statement changed the table: from then on nothing may fall back."""

    @property
    def dialect(self) -> Dialect:
        """The provider's dialect."""
        return self._db.dialect

    def fetch_row(self, sql: TableSql, key: tuple[Any, ...]) -> Stored | None:
        """The stored row with ``key``, or None; :class:`Fallback` when the statement
        fails or the catalog no longer has this spec."""
        statement, db = self._statement, self._db
        if statement is None:
            raise self.fallback("a write's statement reads no row (it needs a transaction)")
        kept = db.take_autocommit()
        try:
            row = kept[1].execute(statement.text, statement.params(sql.spec.name, key), prepare=True).fetchone()
        except BaseException as exc:
            db.give_back(kept, broken=True)
            if not isinstance(exc, Exception):
                raise
            db.forget_table(sql.spec.name)  # learnt again by the transaction that answers instead
            log.debug(
                "read of %r: the statement failed (%s: %s); in a transaction instead",
                sql.spec.name,
                type(exc).__name__,
                exc,
            )
            raise self.fallback("the statement failed") from None
        db.give_back(kept)
        if row is None or row[0] != statement.fingerprint:
            self._db.forget_table(sql.spec.name)
            raise self.fallback("the catalog no longer holds the spec the statement was built for")
        self._now = row[1]
        if row[-2] is None:  # no version: the outer join found no row
            return None
        return sql.stored(row[2:])

    def write(self, text: str, params: Mapping[str, Any], fingerprint: str | None) -> tuple[Any, ...] | None:
        """Run a single-statement write as its own transaction: its row (None: a lean
        statement wrote nothing); :class:`Fallback` when it fails or a checked
        statement finds the catalog no longer has this spec (it changed nothing)."""
        db = self._db
        kept = db.take_autocommit()
        try:
            row = kept[1].execute(text, params, prepare=True).fetchone()
        except BaseException as exc:
            # A statement the server refused leaves an autocommit session as it was,
            # but a plan made stale by DDL stays stale: that connection goes.
            state = getattr(exc, "sqlstate", None)
            db.give_back(kept, broken=state is None or state == STALE_PLAN)
            if not isinstance(exc, Exception):
                raise
            if state not in CONFLICT_STATES:
                db.forget_table(params["kv_name"])
            log.debug(
                "write to %r: the statement failed (%s: %s); in a transaction instead",
                params["kv_name"],
                type(exc).__name__,
                exc,
            )
            raise self.fallback("the statement failed") from None
        db.give_back(kept)
        if fingerprint is not None and (row is None or row[0] != fingerprint):
            db.forget_table(params["kv_name"])
            raise self.fallback(
                "the catalog no longer holds the spec the statement was built for"
            )  # it changed nothing
        # A row whose second value is null matched nothing and wrote nothing (see
        # NativeWrites._statement); any other changed the table.
        self.committed = row is not None and row[1] is not None
        return None if row is None else tuple(row)

    def server_micros(self) -> int:
        """The server's clock when the row was read (what decides whether it expired)."""
        if self._now is None:
            raise self.fallback("it needs the server's clock of a row read, and none was")
        return int(self._now)

    def fallback(self, reason: str) -> Fallback:
        """The exception that hands the call to a transaction: :class:`Fallback`, or
        :class:`CommittedFallback` once a write statement committed (the rule that
        makes a fallback safe, enforced here rather than by each caller)."""
        if self.committed:
            raise CommittedFallback(
                f"a single-statement write needed a transaction after its statement committed: {reason}"
            )
        return Fallback(reason)

    def _needs_transaction(self, *_args: Any, **_kwargs: Any) -> NoReturn:
        raise self.fallback("it needs a transaction")

    errors = execute = query = literal_sql = driver_connection = temp_name = track = relation_exists = (
        _needs_transaction
    )


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while a page of rows is built.

    A page is thousands of small containers that all survive until it is consumed;
    collecting meanwhile only promotes them and triggers full collections. Rows hold
    no cycles, so pausing for one bounded page costs nothing.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _until_exhausted(tx: PgTransaction, batches: Iterator[T]) -> Iterator[T]:
    """``batches``, then commit ``tx`` (roll it back if iteration fails or stops early)."""
    with tx:
        yield from batches


GIVE_WAY_CHECK = 0.05
"""Seconds between the checks of a batch written ahead for sessions waiting on it."""


class _GiveWay(Exception):
    """A batch written ahead rolls back: another session waits for one of its keys."""


def _why(exc: Exception) -> str:
    """Why a one-statement call handed over to a transaction, for the debug log."""
    if isinstance(exc, Fallback):
        return str(exc)
    return f"it raised {type(exc).__name__}: {exc} (the spec may have changed since it was cached)"


def _pg(table: TableBase) -> PgTable:
    """A PostgreSQL transaction's table, typed as such."""
    assert isinstance(table, PgTable)
    return table


class PgAutoCommitTable(AutoCommitTable):
    """The auto-commit handle, with ``read`` as a single statement when possible and
    ``scan_batches`` streamed from one read-only snapshot."""

    page_size = 10_000
    """Bigger pages than the default: a page costs a few round trips however long it is."""

    def __init__(self, provider: ProviderBase, name: str, db: PgDatabase) -> None:
        super().__init__(provider, name)
        self._db = db

    def read(self, key: KeyLike, *, columns: Iterable[str] | None = None) -> Row | None:
        """See :meth:`TableBase.read` (identical results, one round trip)."""
        cached = self._db.cached_read(self.name)
        reason = "the table's statements are not known yet"
        if cached is not None:
            sql, statement = cached
            table = PgTable(_OneStatement(self._db, statement), sql)
            try:
                return table.read(key, columns=columns)
            except (Fallback, KvError) as exc:  # an error may come from a spec changed since it was cached
                reason = _why(exc)
        self._missed("read", reason)
        return super().read(key, columns=columns)

    def _write(self, op: Callable[[TableBase], T]) -> T:
        """Run the single-key write ``op`` (``upsert``, ``insert``, ``replace``,
        ``update``, ``delete``, ``increment``, ``compare_and_swap``) as one statement
        when the table's spec is known and it has no change feed, else (or on
        :class:`Fallback`) in a transaction."""
        cached = self._db.cached_read(self.name)
        reason = "the table's statements are not known yet"
        if cached is not None:
            session = _OneStatement(self._db, None, records_events=cached[0].spec.changes)
            try:
                return op(PgTable(session, cached[0]))
            except (Fallback, KvError) as exc:
                if session.committed:  # a user's error after the write (a fallback raises CommittedFallback)
                    raise
                reason = _why(exc)  # nothing was written; an error may come from a spec changed since it was cached
        self._missed("write", reason)
        return self._call(op)

    def _load_ahead(self, expires: int | None) -> AheadWriter | None:
        """A batch of new rows written while the one before it is, on a second
        connection, so the server inserts two batches at once (a bulk load waits on the
        server's index work, not on the client).

        Its transaction is READ COMMITTED: it reads nothing but the key slots it
        fills (a taken one makes it write nothing; the unique index decides that the
        same way at any level) and, on a change-fed table, the revision counter, which
        it updates only once the batch before has committed: at SERIALIZABLE its
        snapshot, taken by the COPY, would predate that commit and the update would
        fail as a conflict. Revisions still follow commit order (the counter's row
        lock).

        While it waits for its turn it holds its keys, so it checks every
        :data:`GIVE_WAY_CHECK` seconds whether another session waits for one of them,
        and if so rolls back and is written after the batch before: that session may be
        what the batch before waits for (two loads of overlapping keys), a cycle through
        this process that the server's deadlock detector cannot see."""

        def write(batch: Any, mode: str, turn: Callable[[float], bool]) -> bool:
            def attempt() -> bool:
                try:
                    with begin(self._db, isolation="READ COMMITTED") as tx:
                        if not _pg(tx.table(self.name)).load_new(batch, mode, expires):
                            return False
                        while not turn(GIVE_WAY_CHECK):
                            if tx.blocks_others():
                                raise _GiveWay
                        return True
                except _GiveWay:
                    log.debug("load of %r: a batch written ahead gave way to a session waiting for its keys", self.name)
                    return False

            ahead = self._provider.retried(attempt, retries=self._provider.autocommit_retries)
            if ahead:
                self._provider.counters.add("batches_ahead")
            return ahead

        return write

    def _missed(self, what: str, reason: str) -> None:
        """Count and log (with its ``reason``) a one-off call that runs as a transaction
        instead of one statement (see :mod:`spi.stats`)."""
        self._provider.counters.add("fast_path_misses")
        log.debug("%s on %r: in a transaction, as %s", what, self.name, reason)

    def scan_batches(
        self,
        range: Range | None = None,
        *,
        where: Expr | None = None,
        columns: Iterable[str] | None = None,
        batch_size: int = 10_000,
    ) -> Iterator[ColumnBatch]:
        """See :meth:`TableBase.scan_batches`: one REPEATABLE READ, READ ONLY transaction
        streams the whole scan through a server-side cursor (errors in the arguments
        raise here). It is a consistent snapshot that never fails with a conflict and
        blocks no writer; it does hold back VACUUM and block DDL on the table (drop,
        schema changes) until the iteration ends or the iterator is closed."""
        tx, batches = self._in_snapshot(
            lambda t: t.scan_batches(range, where=where, columns=columns, batch_size=batch_size)
        )
        return _until_exhausted(tx, batches)

    def sort_rows(self, plan: SortPlan) -> tuple[Iterator[Row], int]:
        """See :meth:`PgTable.sort_rows`: the count and the sorted rows from one
        snapshot, as :meth:`scan_batches` reads it."""
        tx, (rows, count) = self._in_snapshot(lambda t: t.sort_rows(plan))
        return _until_exhausted(tx, rows), count

    def explain_sort(self, plan: SortPlan) -> str:
        """See :meth:`PgTable.explain_sort`."""
        return self._read(lambda t: _pg(t).explain_sort(plan))

    def _in_snapshot(self, read: Callable[[PgTable], T]) -> tuple[PgTransaction, T]:
        """``read`` of the table in a new REPEATABLE READ, READ ONLY transaction, left
        open for what it returns to stream from (rolled back if ``read`` fails)."""
        tx = begin(self._db, isolation="REPEATABLE READ", read_only=True)
        try:
            return tx, read(_pg(tx.table(self.name)))
        except BaseException as exc:
            tx.__exit__(type(exc), exc, exc.__traceback__)
            raise

    def scan_arrow(
        self,
        range: Range | None = None,
        *,
        where: Expr | None = None,
        columns: Iterable[str] | None = None,
        batch_size: int = 10_000,
    ) -> Iterator[pa.RecordBatch]:
        """See :meth:`TableBase.scan_arrow`: one SELECT on its own read-only connection
        through the ADBC driver, decoded from binary COPY into Arrow in C (see
        :mod:`providers.postgres.arrow`); errors in the arguments raise here."""
        size = check_batch_size(batch_size)
        with begin(self._db, isolation="REPEATABLE READ", read_only=True) as tx:
            statement, schema = _pg(tx.table(self.name)).arrow_select(range, where=where, columns=columns)
        db = self._db
        return adbc_batches(db.arrow_conninfo, statement, schema, size, db.url, db.secret)

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
        """See :meth:`TableBase.scan_page` (the page is built with the collector paused)."""
        with paused_gc():
            return super().scan_page(
                range, where=where, order_by=order_by, descending=descending, limit=limit, after=after, columns=columns
            )


__all__ = ["Fallback", "PgAutoCommitTable"]

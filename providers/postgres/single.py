"""Auto-commit point reads as one statement: a single round trip.

An auto-commit ``read`` is one SELECT, so it runs as an implicit transaction on an
autocommit connection (the session default is SERIALIZABLE): no BEGIN/COMMIT, no
pre-ping, no separate catalog query. The statement joins the catalog row and checks
the spec fingerprint, so a spec changed by another process is noticed in the same
round trip. Anything unusual (unknown or changed table, conflict, broken connection)
falls back to the ordinary transaction path, which gives the exact answer or error.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar, cast

import sqlalchemy as sa

from providers.postgres.table import PgTable, TableSql
from spi.filters import Expr
from spi.keys import KeyLike, Range
from spi.provider import AutoCommitTable
from spi.row import Page, Row
from spi.table import ColumnBatch, Stored
from spi.validate import check_batch_size

if TYPE_CHECKING:
    import pyarrow as pa

    from providers.postgres.provider import PgTransaction, PostgresProvider

T = TypeVar("T")


class Fallback(Exception):
    """The single-statement path cannot answer; use a normal transaction."""


class ReadStatement:
    """The compiled catalog-checked point read of one table."""

    def __init__(self, sql: TableSql, catalog: sa.Table, dialect: Any) -> None:
        t = sql.table
        joined = catalog.outerjoin(
            t, sa.and_(*(t.c[k] == sa.bindparam(n) for k, n in zip(sql.spec.primary_key, sql.key_names)))
        )
        stmt = (
            sa.select(catalog.c.fingerprint, *t.columns)
            .select_from(joined)
            .where(catalog.c.name == sa.bindparam("kv_name"))
        )
        self.text = str(stmt.compile(dialect=dialect))
        self.fingerprint = sql.spec.fingerprint()


class _OneStatement:
    """Stands in for a transaction for :meth:`PgTable._get`: one autocommit SELECT."""

    def __init__(self, provider: PostgresProvider, sql: TableSql, statement: ReadStatement) -> None:
        self._provider = provider
        self._sql = sql
        self._statement = statement

    def fetch_row(self, sql: TableSql, key: tuple[Any, ...]) -> Stored | None:
        params = {"kv_name": sql.spec.name, **sql.key_params(key)}
        try:
            row = self._provider.autocommit_connection().execute(self._statement.text, params, prepare=True).fetchone()
        except Exception:
            self._provider.drop_autocommit_connection()  # broken session or stale prepared plan: start afresh
            raise Fallback from None
        if row is None or row[0] != self._statement.fingerprint:
            self._provider.forget_table(sql.spec.name)
            raise Fallback
        if row[-1] is None:
            return None
        return sql.stored(row[1:])


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


class PgAutoCommitTable(AutoCommitTable):
    """The auto-commit handle, with ``read`` as a single statement when possible and
    ``scan_batches`` streamed from one read-only snapshot."""

    _provider: PostgresProvider
    page_size = 10_000
    """Bigger pages than the default: a page costs a few round trips however long it is."""

    def read(self, key: KeyLike, *, columns: Iterable[str] | None = None) -> Row | None:
        """See :meth:`TableBase.read` (identical results, one round trip)."""
        cached = self._provider.cached_read(self.name)
        if cached is not None:
            sql, statement = cached
            table = PgTable(cast("PgTransaction", _OneStatement(self._provider, sql, statement)), sql)
            try:
                return table.read(key, columns=columns)
            except Fallback:
                pass
        return super().read(key, columns=columns)

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
        tx = self._provider.transaction(isolation="REPEATABLE READ", read_only=True)
        try:
            batches = tx.table(self.name).scan_batches(range, where=where, columns=columns, batch_size=batch_size)
        except BaseException as exc:
            tx.__exit__(type(exc), exc, exc.__traceback__)
            raise
        return _until_exhausted(tx, batches)

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
        from providers.postgres.arrow import adbc_batches

        size = check_batch_size(batch_size)
        with self._provider.transaction(isolation="REPEATABLE READ", read_only=True) as tx:
            table = tx.table(self.name)
            assert isinstance(table, PgTable)
            statement, schema = table.arrow_select(range, where=where, columns=columns)
        provider = self._provider
        return adbc_batches(provider.arrow_conninfo, statement, schema, size, provider.url, provider.secret)

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


__all__ = ["Fallback", "PgAutoCommitTable", "ReadStatement"]

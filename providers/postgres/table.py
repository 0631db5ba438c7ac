"""Table primitives over one SQLAlchemy connection inside a serializable transaction."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import sqlalchemy as sa
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.expression import ClauseElement, Executable

from providers.postgres.aggregate import aggregate_select, read_groups
from providers.postgres.batch import LoadBatch, PgLoadPreparer
from providers.postgres.checksum import checksum_select, read_checksum, read_segments, segments_select
from providers.postgres.feed import OP_DELETE, OP_EXPIRE, delete_event, put_event, put_runs
from providers.postgres.load import load_batch, load_new
from providers.postgres.scan_sql import count_select, key_histogram, range_condition, scan_select
from providers.postgres.schema import EXPIRES, VERSION, expiry_now
from providers.postgres.session import PgSession
from providers.postgres.table_sql import TableSql
from providers.postgres.table_writes import NativeWrites
from spi.aggregate import Group
from spi.arrow import arrow_schema
from spi.checksum import Checksum, Segment
from spi.clock import now_micros
from spi.codec import from_micros
from spi.errors import KvError
from spi.filters import Expr
from spi.keys import Range, ResolvedRange, key_of, quantile_cuts, ranges_between
from spi.primitives import ColumnBatch, Kept, ScanRequest, Stored
from spi.row import Row
from spi.sorting import SortPlan
from spi.validate import check_projection

if TYPE_CHECKING:
    import pyarrow as pa

STREAM_ABOVE = 10_000
"""Scans that may return more rows than this stream through a server-side cursor."""
FETCH_ROWS = 2000
"""Rows fetched per round trip from a server-side cursor."""
LIST_AT_ONCE = 50_000
"""A page built into one list (held whole anyway) is fetched in one round trip up to
this many rows: a server-side cursor would add a round trip per :data:`FETCH_ROWS`."""
STATS_APART = 0.05
"""The planner's statistics serve :meth:`PgTable.split` while at most this fraction of
the rows changed since the last ANALYZE (autovacuum analyzes after 10%), and at most
this fraction holds the column's most common values (which the histogram leaves out)."""
STATS_BUCKETS_PER_RANGE = 20
"""Histogram buckets :meth:`PgTable.split` wants per range: ranges end on bucket bounds,
so each is within a bucket (5%) of its share. At the default statistics target (100
buckets) the statistics serve up to 5 ranges."""


T = TypeVar("T")


class Explain(Executable, ClauseElement):
    """``EXPLAIN <statement>`` with the statement's parameters bound."""

    inherit_cache = False

    def __init__(self, statement: Any) -> None:
        self.statement = statement


@compiles(Explain, "postgresql")
def _compile_explain(element: Explain, compiler: Any, **kw: Any) -> str:
    return "EXPLAIN " + compiler.process(element.statement, **kw)


class _Cursor(Generic[T]):
    """Rows of a streaming scan, fetched in chunks and built by ``build``; refuses
    to go on once its transaction ended."""

    def __init__(self, tx: PgSession, result: Any, build: Callable[[list[Any]], list[T]]) -> None:
        self._tx = tx
        self._result = result
        self._build = build
        self._chunk: Iterator[T] = iter(())

    def __iter__(self) -> _Cursor[T]:
        return self

    def __next__(self) -> T:
        if self._tx.ended:
            raise KvError("this scan's transaction has ended; scans are valid only inside their transaction")
        row = next(self._chunk, None)
        if row is None:
            with self._tx.errors():
                rows = self._result.fetchmany(FETCH_ROWS)
            if not rows:
                self.close()
                raise StopIteration
            self._chunk = iter(self._build(rows))
            row = next(self._chunk)
        return row

    def close(self) -> None:
        """Close the server-side cursor (a server gone meanwhile: ProviderUnavailableError)."""
        with self._tx.errors():
            self._result.close()


def _column_batches(
    tx: PgSession,
    cursor: Any,
    columns: tuple[str, ...],
    converters: dict[str, Callable[[Any], Any]],
    batch_size: int,
) -> Iterator[ColumnBatch]:
    """Fetch ``batch_size`` tuples at a time from a server-side cursor and transpose
    them: no per-row objects beyond the driver's tuples."""
    try:
        while True:
            if tx.ended:
                raise KvError("this scan's transaction has ended; scans are valid only inside their transaction")
            with tx.errors():
                rows = cursor.fetchmany(batch_size)
            if not rows:
                return
            batch: ColumnBatch = {}
            for name, values in zip(columns, zip(*rows)):
                convert = converters.get(name)
                batch[name] = list(values) if convert is None else [None if v is None else convert(v) for v in values]
            done = len(rows) < batch_size
            del rows
            yield batch
            if done:
                return
    finally:
        if not tx.ended:
            with tx.errors():
                cursor.close()


class PgTable(NativeWrites):
    """One PostgreSQL table inside one transaction (its writes single statements, see
    :mod:`providers.postgres.table_writes`)."""

    def __init__(self, tx: PgSession, sql: TableSql) -> None:
        super().__init__(sql.spec)
        self._tx = tx
        self._sql = sql
        self._events = tx.events if sql.spec.changes else None  # a table without a feed: one test per write

    def _get(self, key: tuple[Any, ...]) -> Stored | None:
        return self._tx.fetch_row(self._sql, key)

    def _clock(self) -> int:
        """Now on the server's clock, which decides expiry (a round trip, made only by
        writes that set an expiry or meet one; a one-statement read has it already),
        or on the provider's test clock (:mod:`spi.clock`) when it has one."""
        clock = self._sql.clock
        return self._tx.server_micros() if clock is None else now_micros(clock)

    def _put(
        self, key: tuple[Any, ...], values: dict[str, Any], version: int, old: Stored | None, expires: int | None
    ) -> None:
        if self._events is not None:
            prev = None if old is None else old.values
            self._events.append(put_event(self.spec, key, values, version, expires, prev))
        expires_at = None if expires is None else from_micros(expires)
        if old is None:
            self._tx.execute(self._sql.insert, {**values, VERSION: version, EXPIRES: expires_at})
            return
        params = self._sql.key_params(key)
        for c in self.spec.columns:
            if not self.spec.is_key(c):
                params[f"kv_v_{c}"] = values[c]
        params["kv_version_new"] = version
        params["kv_expires_new"] = expires_at
        self._tx.execute(self._sql.update, params)

    def _remove(self, key: tuple[Any, ...], old: Stored, *, expired: bool = False) -> None:
        if self._events is not None:
            self._events.append(delete_event(self.spec, key, old.values, OP_EXPIRE if expired else OP_DELETE))
        self._tx.execute(self._sql.delete, self._sql.key_params(key))

    def sweep(self, limit: int) -> tuple[int, bool]:
        """Remove up to ``limit`` expired rows, in (expiry, key) order as every provider
        sweeps: how many, and whether there may be more."""
        t = self._sql.table
        keys = [t.c[k] for k in self.spec.primary_key]
        doomed = (
            sa.select(*keys)
            .where(t.c[EXPIRES] <= expiry_now(t))
            .order_by(t.c[EXPIRES], *keys)
            .limit(limit)
            .with_for_update()
        )
        if self._events is not None:  # the rows too: each event's prev
            doomed = doomed.add_columns(*t.columns)
        rows = self._tx.execute(doomed).fetchall()
        found = [tuple(r[: len(keys)]) for r in rows]
        if found:
            self._tx.execute(t.delete().where(sa.tuple_(*keys).in_(found)))
            if self._events is not None:
                gone = self._sql.stored_many([r[len(keys) :] for r in rows])
                self._events.extend(delete_event(self.spec, k, s.values, OP_EXPIRE) for k, s in zip(found, gone))
        return len(found), len(found) == limit

    def expired_between(self, span: ResolvedRange) -> bool:
        """True when a row in ``span`` has expired and is not swept yet."""
        t = self._sql.table
        stmt = (
            sa.select(sa.literal(1))
            .select_from(t)
            .where(*range_condition(t, self.spec, span), t.c[EXPIRES] <= expiry_now(t))
            .limit(1)
        )
        return self._tx.execute(stmt).first() is not None

    def _scan(self, request: ScanRequest) -> Iterator[Stored]:
        return self._fetch(request, self._sql.stored_many)

    def _scan_rows(self, request: ScanRequest) -> Iterator[Row]:
        return self._fetch(request, self._sql.rows_many)

    def _scan_list(self, request: ScanRequest) -> list[Row]:
        """A page's rows in one list, built a fetched chunk at a time (no step per row)."""
        if request.limit is not None and request.limit <= LIST_AT_ONCE:
            return self._fetch_all(self._select(request), self._sql.rows_many)
        cursor = self._tx.query(self._select(request), stream=True)
        rows: list[Row] = []
        try:
            while True:
                with self._tx.errors():
                    chunk = cursor.fetchmany(FETCH_ROWS)
                if not chunk:
                    return rows
                rows += self._sql.rows_many(chunk)
        finally:
            with self._tx.errors():
                cursor.close()

    def _fetch(self, request: ScanRequest, build: Callable[[list[Any]], list[T]]) -> Iterator[T]:
        """The rows of a scan built by ``build``: fetched at once when ``limit`` is small,
        else streamed through a server-side cursor."""
        stmt = self._select(request)
        if request.limit is not None and request.limit <= STREAM_ABOVE:
            return iter(self._fetch_all(stmt, build))
        return self._tx.track(_Cursor(self._tx, self._tx.query(stmt, stream=True), build))

    def _select(self, request: ScanRequest) -> Any:
        return scan_select(
            self._sql.table,
            self.spec,
            request.key_range,
            request.where,
            order_by=request.order_by,
            descending=request.descending,
            after=request.after,
            limit=request.limit,
        )

    def _fetch_all(self, stmt: Any, build: Callable[[list[Any]], list[T]]) -> list[T]:
        cursor = self._tx.query(stmt)
        with self._tx.errors():
            rows = cursor.fetchall()
        cursor.close()
        return build(rows)

    def _scan_batches(self, request: ScanRequest, columns: tuple[str, ...], batch_size: int) -> Iterator[ColumnBatch]:
        stmt = scan_select(self._sql.table, self.spec, request.key_range, request.where, columns=columns)
        cursor = self._tx.track(self._tx.query(stmt, stream=True))
        return _column_batches(self._tx, cursor, columns, self._sql.column_converters, batch_size)

    def arrow_select(
        self,
        range: Range | None = None,
        *,
        where: Expr | None = None,
        columns: Iterable[str] | None = None,
    ) -> tuple[str, pa.Schema]:
        """The SELECT of :meth:`scan_arrow` with every value rendered as a literal by
        psycopg's client-side quoting (for a connection that takes no parameters),
        and the Arrow schema of its rows."""
        proj = check_projection(self.spec, columns)
        names = self.spec.columns if proj is None else proj
        request = self._request(range, where, None, False, None, None)
        stmt = scan_select(self._sql.table, self.spec, request.key_range, request.where, columns=names)
        return self._tx.literal_sql(stmt), arrow_schema(self.spec, names)

    def _count(self, key_range: ResolvedRange, where: Expr | None) -> int:
        return int(self._tx.execute(count_select(self._sql.table, self.spec, key_range, where)).scalar_one())

    def _aggregate(self, request: ScanRequest, group_by: tuple[str, ...], columns: tuple[str, ...]) -> list[Group]:
        """One GROUP BY statement (:mod:`providers.postgres.aggregate`)."""
        stmt = aggregate_select(self._sql.table, self.spec, request.key_range, request.where, group_by, columns)
        return read_groups(self.spec, self._tx.execute(stmt).fetchall(), group_by, columns)

    def _checksum(self, request: ScanRequest, columns: tuple[str, ...], versions: bool) -> Checksum:
        """One aggregate statement (:mod:`providers.postgres.checksum`)."""
        stmt = checksum_select(self._sql.table, self.spec, request.key_range, request.where, columns, versions)
        return read_checksum(self._tx.execute(stmt).one())

    def _segments(
        self, request: ScanRequest, columns: tuple[str, ...], versions: bool, size: int, limit: int | None
    ) -> list[Segment]:
        """One statement numbering the rows in key order (:mod:`providers.postgres.checksum`)."""
        table, where = self._sql.table, request.where
        stmt = segments_select(table, self.spec, request.key_range, where, columns, versions, size, limit)
        return read_segments(self.spec, self._tx.execute(stmt).fetchall())

    def _split(self, n: int) -> list[Range]:
        """Ranges of similar row counts: cut at the planner's histogram of the first key
        column when it is fresh and fine enough (no table read at all), else exactly."""
        if n <= 1:
            return [Range()]
        return self._split_by_statistics(n) or self._split_exactly(n)

    def _split_by_statistics(self, n: int) -> list[Range] | None:
        """Ranges cut at the bounds of the first key column's histogram; None when there
        is none, when more than ``STATS_APART`` of the rows changed since it was taken
        or are left out of it, or when it has fewer than ``STATS_BUCKETS_PER_RANGE``
        buckets per range. ANALYZE samples 30,000 rows (at the default statistics
        target): a bound is within about a percent of the true quantile."""
        found = self._tx.execute(key_histogram(self._sql.table, self.spec)).first()
        if found is None:
            return None
        bounds, common, changed, live = found
        if common > STATS_APART or changed > STATS_APART * max(live, 1):
            return None
        if len(bounds) - 1 < STATS_BUCKETS_PER_RANGE * n:
            return None
        cuts = quantile_cuts(bounds[:-1], n)
        return ranges_between([(cut,) for cut in cuts])

    def _split_exactly(self, n: int) -> list[Range]:
        """Ranges of ``count / n`` rows: each boundary is found by skipping that many
        keys from the previous one in the primary key index (every key read once, no
        sort, no window materialising the table)."""
        t = self._sql.table
        keys = [t.c[k] for k in self.spec.primary_key]
        step = max(1, self._count(ResolvedRange.everything(), None) // n)
        starts: list[tuple[Any, ...]] = []
        for _ in range(n - 1):
            after = ResolvedRange(starts[-1], True, None, False) if starts else ResolvedRange.everything()
            stmt = sa.select(*keys).where(*range_condition(t, self.spec, after)).order_by(*keys).offset(step).limit(1)
            row = self._tx.execute(stmt).first()
            if row is None:
                break
            starts.append(tuple(row))
        return ranges_between(starts)

    def sort_rows(self, plan: SortPlan) -> tuple[Iterator[Row], int]:
        """The rows of a sorted scan (:func:`spi.sorting.sorted_scan`), sorted by the
        server (ORDER BY the column, nulls first, then the key; streamed through a
        server-side cursor unless the limit is small), and a count(*) of the matching
        rows run first in this transaction."""
        request = plan.request
        count = self._count(request.key_range, request.where)
        return self._scan_rows(request), count

    def explain_sort(self, plan: SortPlan) -> str:
        """The server's plan of :meth:`sort_rows`, reading nothing."""
        return self._explain_select(self._select(plan.request))

    def _explain(self, key_range: ResolvedRange, where: Expr | None, order_by: str | None) -> str:
        return self._explain_select(scan_select(self._sql.table, self.spec, key_range, where, order_by=order_by))

    def _explain_select(self, stmt: Any) -> str:
        """The SELECT ``stmt`` with its parameters and the server's EXPLAIN of it."""
        compiled = stmt.compile(dialect=self._tx.dialect, compile_kwargs={"render_postcompile": True})
        params = ", ".join(f"{k}={v!r}" for k, v in compiled.params.items())
        plan = "\n".join(r[0] for r in self._tx.execute(Explain(stmt)).fetchall())
        return f"SQL: {' '.join(str(compiled).split())}\nparameters: {params or '(none)'}\nplan:\n{plan}"

    def _load_preparer(self) -> PgLoadPreparer:
        """Rows validated into COPY tuples as they are read."""
        return PgLoadPreparer(self.spec)

    def _load_batch(self, batch: LoadBatch, mode: str, expires: int | None) -> None:
        def sequential(rows: list[dict[str, Any]], m: str) -> None:
            super(PgTable, self)._load_batch(rows, m, expires)

        written = None if self._events is None else self._record_load
        expiries: list[dt.datetime | None] | None = None
        if expires is not None:
            expiries = [from_micros(expires)] * len(batch)
        load_batch(self, batch, mode, sequential, None, expiries, written=written)

    def load_new(self, batch: LoadBatch, mode: str, expires: int | None) -> bool:
        """Write the batch as new rows, expiring at ``expires`` (microseconds), in one
        COPY if no key of it is taken (True), else write nothing (False); a change-fed
        table records their events (see :func:`~providers.postgres.load.load_new`)."""
        written = None if self._events is None else self._record_load
        return load_new(self, batch, mode, None if expires is None else from_micros(expires), written)

    def _load_kept(self, batch: LoadBatch, mode: str, kept: Kept) -> None:
        def sequential(rows: list[dict[str, Any]], m: str) -> None:
            super(PgTable, self)._load_kept(rows, m, kept)

        written = None if self._events is None else self._record_load
        expiries: list[dt.datetime | None] | None = None
        if any(e is not None for e in kept.expires):
            expiries = [None if e is None else from_micros(e) for e in kept.expires]
        load_batch(self, batch, mode, sequential, kept.versions, expiries, written=written)

    @property
    def sql_table(self) -> sa.Table:
        """The SQLAlchemy table."""
        return self._sql.table

    @property
    def session(self) -> PgSession:
        """The transaction this table runs in."""
        return self._tx

    def _record_load(self, keys: list[Any], rows: list[Any], as_given: bool) -> None:
        """The events of a bulk-loaded batch, in input order: from the rows as given
        (``as_given``, see :func:`~providers.postgres.load.load_batch`) or as written."""
        assert self._events is not None
        spec, one = self.spec, len(self.spec.primary_key) == 1
        if as_given:
            self._events += put_runs(spec, keys, rows)
            return
        written = {key_of(spec, s.values): s for s in map(self._sql.stored, rows)}
        for key in keys:
            stored = written[(key,) if one else key]
            # Only a batch COPYed as new gets here (load_batch sends a change-fed batch
            # that meets a taken key row by row): every row is an insert, without prev.
            event = put_event(spec, (key,) if one else key, stored.values, stored.version, stored.expires, None, True)
            self._events.append(event)

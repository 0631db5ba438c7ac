"""``PostgresProvider``: the engine, serializable transactions and the table cache."""

from __future__ import annotations

import functools
import itertools
import threading
import weakref
from collections.abc import Callable
from contextlib import AbstractContextManager, suppress
from typing import Any, TypeVar

import sqlalchemy as sa

from providers.postgres.errors import wrapped
from providers.postgres.schema import catalog_table
from providers.postgres.single import PgAutoCommitTable, ReadStatement
from providers.postgres.table import FETCH_ROWS, PgTable, TableSql
from providers.postgres.url import PgSettings, parse_url
from spi.errors import ConflictError, KvError, TableNotFoundError
from spi.provider import ProviderBase, TransactionBase
from spi.spec import TableSpec
from spi.table import Stored

T = TypeVar("T")
RETRY_LOCK = 0x6B77
"""First key of the per-schema advisory lock that retried transactions queue on."""
_retry_lock = threading.local()
"""Whether this thread holds the retry lock (a nested retry must not wait for it)."""


class PgTransaction(TransactionBase):
    """One SQLAlchemy connection in a SERIALIZABLE transaction (READ COMMITTED for DDL)."""

    def __init__(
        self,
        provider: PostgresProvider,
        *,
        isolation: str | None = None,
        exclusive: bool = False,
        read_only: bool = False,
    ) -> None:
        super().__init__()
        self._provider = provider
        self.ended = False
        self._cursors: weakref.WeakSet[Any] = weakref.WeakSet()
        self._temp_names = itertools.count(1)
        self.dialect = provider.engine.dialect
        self._exclusive = False
        with self.errors():
            self._conn = provider.engine.connect()
            if isolation is not None:
                self._conn.execution_options(isolation_level=isolation)
            if read_only:
                self._conn.execution_options(postgresql_readonly=True)
            # Begin now (no SQL is sent yet) so statements run on the driver connection
            # belong to the transaction SQLAlchemy commits.
            self._conn.begin()
        if exclusive:
            try:
                self._session_lock(True)
            except BaseException:
                self._close()
                raise

    def _session_lock(self, take: bool) -> None:
        """Take or release the schema's retry lock, outside any transaction.

        Taken before BEGIN, so the transaction's snapshot is taken after the lock is
        granted: retries queue here instead of colliding again.
        """
        fn = sa.func.pg_advisory_lock if take else sa.func.pg_advisory_unlock
        statement = sa.select(fn(RETRY_LOCK, sa.func.hashtext(sa.literal(self._provider.schema, sa.Text))))
        compiled = statement.compile(dialect=self.dialect)
        with self.errors():
            raw = self._conn.connection.driver_connection
            raw.autocommit = True
            try:
                raw.execute(str(compiled), compiled.params)
            finally:
                raw.autocommit = False
        self._exclusive = take
        _retry_lock.held = take

    def errors(self) -> AbstractContextManager[None]:
        """A context turning driver errors into :mod:`spi.errors` (password masked)."""
        return wrapped(self._provider.url, self._provider.secret)

    def execute(self, statement: Any, params: Any = None, *, stream: bool = False) -> Any:
        """Run one SQLAlchemy statement in this transaction."""
        if self.ended:
            raise KvError("this transaction has ended; open a new one")
        options = {"stream_results": True, "max_row_buffer": FETCH_ROWS} if stream else None
        with self.errors():
            if options is None:
                return self._conn.execute(statement, params)
            return self._conn.execute(statement, params, execution_options=options)

    def query(self, statement: Any, *, stream: bool = False) -> Any:
        """Run a SELECT on the driver connection; the psycopg cursor (server-side when
        ``stream``) yields plain tuples, skipping SQLAlchemy's per-row result objects."""
        if self.ended:
            raise KvError("this transaction has ended; open a new one")
        text, params = self.compile(statement)
        with self.errors():
            raw = self._conn.connection.driver_connection
            if stream:
                cursor = raw.cursor(name=f"kv_scan_{next(self._temp_names)}", binary=True)
                cursor.itersize = FETCH_ROWS
            else:
                cursor = raw.cursor(binary=True)
            cursor.execute(text, params)
        return cursor

    def compile(self, statement: Any) -> tuple[str, dict[str, Any]]:
        """A SQLAlchemy statement as the driver's SQL text and its processed parameters."""
        compiled = statement.compile(dialect=self.dialect)
        processors = compiled._bind_processors
        params = {k: processors[k](v) if k in processors else v for k, v in compiled.params.items()}
        return str(compiled), params

    def fetch_row(self, sql: TableSql, key: tuple[Any, ...]) -> Stored | None:
        """The stored row with ``key``, or None."""
        row = self.execute(sql.get, sql.key_params(key)).first()
        return None if row is None else sql.stored(row)

    def driver_connection(self) -> Any:
        """The psycopg connection under this transaction (for COPY)."""
        with self.errors():
            return self._conn.connection.driver_connection

    def temp_name(self) -> str:
        """A temporary table name unique within this transaction."""
        return f"kv_load_{next(self._temp_names)}"

    def track(self, cursor: Any) -> Any:
        """Remember an open scan so the transaction closes it when it ends."""
        self._cursors.add(cursor)
        return cursor

    def spec(self, name: str) -> TableSpec:
        """The spec of table ``name`` as this transaction sees the catalog."""
        catalog = self._provider.catalog
        row = self.execute(catalog.select().where(catalog.c.name == name)).first()
        if row is None:
            raise TableNotFoundError(f"table {name!r} does not exist in schema {self._provider.schema!r}")
        return TableSpec.from_dict(row.spec)

    def _open_table(self, name: str) -> PgTable:
        sql = self._provider.table_sql(self.spec(name))
        self._provider.remember_table(sql)
        return PgTable(self, sql)

    def _finish(self) -> None:
        self.ended = True
        for cursor in list(self._cursors):
            with suppress(Exception):
                cursor.close()

    def _commit(self) -> None:
        try:
            self._finish()
            with self.errors():
                self._conn.commit()
        finally:
            self._close()

    def _rollback(self) -> None:
        try:
            self._finish()
            with self.errors():
                self._conn.rollback()
        except KvError:
            pass  # the connection is gone: its transaction is gone with it
        finally:
            self._close()

    def _close(self) -> None:
        try:
            if self._exclusive:
                try:
                    self._session_lock(False)
                except KvError:
                    self._conn.invalidate()  # never hand a connection holding the lock back to the pool
                    _retry_lock.held = False
            with self.errors():
                self._conn.close()
        except KvError:
            pass


class PostgresProvider(ProviderBase):
    """Logical tables as real PostgreSQL tables in one schema (see the package docs)."""

    capabilities = frozenset({"transactions", "secondary_indexes", "verify", "threads", "processes", "sql"})

    def __init__(self, settings: PgSettings, secret: str | None) -> None:
        super().__init__(settings.masked)
        self.schema = settings.schema
        self.secret = secret
        self._settings = settings
        self.engine = self._make_engine(isolation_level="SERIALIZABLE", pool_pre_ping=True)
        self._autocommit_engine: Any = None
        self.catalog = catalog_table(self.schema)
        self._sql: dict[TableSpec, TableSql] = {}
        self._by_name: dict[str, Any] = {}
        self._local = threading.local()
        self._held: list[Any] = []
        self._ready = False
        self._lock = threading.Lock()
        self._closed = False
        from providers.postgres.admin import PgAdmin

        self._admin = PgAdmin(self)

    def _make_engine(self, **options: Any) -> Any:
        import sqlalchemy as sa

        return sa.create_engine(
            self._settings.sa_url, connect_args=self._settings.connect_args, **self._settings.pool, **options
        )

    @functools.cached_property
    def arrow_conninfo(self) -> str:
        """The libpq connection string of Arrow scans (read-only sessions; holds the password)."""
        from providers.postgres.arrow import conninfo

        return conninfo(self._settings)

    @classmethod
    def from_url(cls, url: str) -> PostgresProvider:
        """Open ``postgresql+psycopg://user:pw@host:port/db?schema=NAME`` (connects lazily)."""
        settings = parse_url(url)
        return cls(settings, settings.sa_url.password)

    @property
    def admin(self) -> Any:
        """Table management (DDL in transactions)."""
        return self._admin

    def transaction(
        self, *, isolation: str | None = None, exclusive: bool = False, read_only: bool = False
    ) -> PgTransaction:
        """A new SERIALIZABLE transaction (or ``isolation``, ``read_only``); ``exclusive``
        first waits for the schema's retry lock."""
        if self._closed:
            raise KvError(f"provider {self.url} is closed")
        self.ensure_schema()
        return PgTransaction(self, isolation=isolation, exclusive=exclusive, read_only=read_only)

    def run(self, fn: Callable[[TransactionBase], T], retries: int = 10) -> T:
        """Run ``fn(tx)``, retrying on :class:`ConflictError` (re-raised after ``retries``).

        The first attempt is optimistic. Retries queue on a per-schema advisory lock
        taken before the transaction starts, so under contention they run one after
        the other on fresh snapshots instead of colliding again and backing off.
        """
        attempt = 0
        while True:
            try:
                with self.transaction(exclusive=attempt > 0 and not getattr(_retry_lock, "held", False)) as tx:
                    return fn(tx)
            except ConflictError:
                if attempt >= retries:
                    raise
                attempt += 1

    def table(self, name: str) -> PgAutoCommitTable:
        """An auto-commit handle (point reads take a single round trip)."""
        return PgAutoCommitTable(self, name)

    def remember_table(self, sql: TableSql) -> None:
        """Note a table's SQL for single-statement reads (verified on every use)."""
        entry = self._by_name.get(sql.spec.name)
        if entry is None or entry[0] is not sql:
            self._by_name[sql.spec.name] = (sql, ReadStatement(sql, self.catalog, self.engine.dialect))

    def forget_table(self, name: str) -> None:
        """Drop a table from the single-statement cache."""
        self._by_name.pop(name, None)

    def cached_read(self, name: str) -> tuple[TableSql, ReadStatement] | None:
        """The cached SQL and point-read statement of a table, if any."""
        return None if self._closed else self._by_name.get(name)

    def autocommit_connection(self) -> Any:
        """This thread's psycopg connection in autocommit mode, where every statement is
        an implicit SERIALIZABLE transaction; kept checked out between reads."""
        held = getattr(self._local, "conn", None)
        if held is not None:
            return held[1]
        with self._lock:
            if self._closed:
                raise KvError(f"provider {self.url} is closed")
            if self._autocommit_engine is None:
                self._autocommit_engine = self._make_engine(isolation_level="AUTOCOMMIT", pool_pre_ping=False)
            fairy = self._autocommit_engine.raw_connection()
            self._held.append(fairy)
        self._local.conn = (fairy, fairy.driver_connection)
        return fairy.driver_connection

    def drop_autocommit_connection(self) -> None:
        """Discard this thread's autocommit connection (after an error)."""
        held = getattr(self._local, "conn", None)
        if held is not None:
            self._local.conn = None
            with self._lock:
                if held[0] in self._held:
                    self._held.remove(held[0])
            held[0].invalidate()

    def ensure_schema(self) -> None:
        """Create the schema and catalog once per provider (if missing)."""
        if self._ready:
            return
        with self._lock:
            if not self._ready:
                self._admin.create_schema()
                self._ready = True

    def table_sql(self, spec: TableSpec) -> TableSql:
        """The (cached) SQL objects of a spec."""
        sql = self._sql.get(spec)
        if sql is None or sql.spec.columns != spec.columns:
            sql = self._sql[spec] = TableSql(spec, self.schema)
        return sql

    def close(self) -> None:
        """Dispose of the connection pool."""
        if not self._closed:
            with self._lock:
                self._closed = True
                held, self._held = self._held, []
            for fairy in held:
                fairy.close()
            self.engine.dispose()
            if self._autocommit_engine is not None:
                self._autocommit_engine.dispose()

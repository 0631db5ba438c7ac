"""``PostgresProvider``: the engine, serializable transactions and the table cache."""

from __future__ import annotations

import itertools
import threading
import weakref
from contextlib import AbstractContextManager
from typing import Any

from providers.postgres.errors import wrapped
from providers.postgres.schema import catalog_table
from providers.postgres.table import FETCH_ROWS, PgTable, TableSql
from providers.postgres.url import PgSettings, parse_url
from spi.errors import KvError, TableNotFoundError
from spi.provider import ProviderBase, TransactionBase
from spi.spec import TableSpec


class PgTransaction(TransactionBase):
    """One SQLAlchemy connection in a SERIALIZABLE transaction (READ COMMITTED for DDL)."""

    def __init__(self, provider: PostgresProvider, *, isolation: str | None = None) -> None:
        super().__init__()
        self._provider = provider
        self.ended = False
        self._cursors: weakref.WeakSet[Any] = weakref.WeakSet()
        self._temp_names = itertools.count(1)
        self.dialect = provider.engine.dialect
        with self.errors():
            self._conn = provider.engine.connect()
            if isolation is not None:
                self._conn.execution_options(isolation_level=isolation)

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
        return PgTable(self, self._provider.table_sql(self.spec(name)))

    def _finish(self) -> None:
        self.ended = True
        for cursor in list(self._cursors):
            try:
                cursor.close()
            except Exception:  # noqa: BLE001 - closing a broken cursor must not hide the outcome
                pass

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
            with self.errors():
                self._conn.close()
        except KvError:
            pass


class PostgresProvider(ProviderBase):
    """Logical tables as real PostgreSQL tables in one schema (see the package docs)."""

    capabilities = frozenset({"transactions", "secondary_indexes", "verify", "threads", "processes", "sql"})

    def __init__(self, settings: PgSettings, secret: str | None) -> None:
        import sqlalchemy as sa

        super().__init__(settings.masked)
        self.schema = settings.schema
        self.secret = secret
        self.engine = sa.create_engine(
            settings.sa_url,
            pool_pre_ping=True,
            isolation_level="SERIALIZABLE",
            connect_args=settings.connect_args,
            **settings.pool,
        )
        self.catalog = catalog_table(self.schema)
        self._sql: dict[TableSpec, TableSql] = {}
        self._ready = False
        self._lock = threading.Lock()
        self._closed = False
        from providers.postgres.admin import PgAdmin

        self._admin = PgAdmin(self)

    @classmethod
    def from_url(cls, url: str) -> PostgresProvider:
        """Open ``postgresql+psycopg://user:pw@host:port/db?schema=NAME`` (connects lazily)."""
        settings = parse_url(url)
        return cls(settings, settings.sa_url.password)

    @property
    def admin(self) -> Any:
        """Table management (DDL in transactions)."""
        return self._admin

    def transaction(self, *, isolation: str | None = None) -> PgTransaction:
        """A new SERIALIZABLE transaction."""
        if self._closed:
            raise KvError(f"provider {self.url} is closed")
        self.ensure_schema()
        return PgTransaction(self, isolation=isolation)

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
            self._closed = True
            self.engine.dispose()

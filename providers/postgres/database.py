"""What one provider's transactions and auto-commit reads share: :class:`PgDatabase`."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from providers.postgres.arrow import conninfo
from providers.postgres.errors import wrapped
from providers.postgres.schema import catalog_table
from providers.postgres.table_sql import ReadStatement, TableSql
from providers.postgres.url import PgSettings
from providers.postgres.watchdog import Watchdog
from spi.clock import Clock, is_system_clock
from spi.errors import KvError
from spi.spec import TableSpec

if TYPE_CHECKING:
    import psycopg
    from sqlalchemy.pool import PoolProxiedConnection


class PgDatabase:
    """The engine, the schema and its catalog table, the SQL built per spec, the
    point-read statements of the tables in use, and the kept auto-commit
    connections those reads run on."""

    def __init__(self, settings: PgSettings, secret: str | None, *, create: bool = True) -> None:
        self.url = settings.masked
        self.schema = settings.schema
        self.secret = secret
        self.create = create
        """Whether the first transaction may create the schema and catalog (else: UrlError)."""
        self._settings = settings
        self._watchdog = Watchdog(lambda: self.arrow_conninfo, settings.connect_timeout, self.url)
        self.engine = self._make_engine(isolation_level="SERIALIZABLE", pool_pre_ping=True)
        self.dialect = self.engine.dialect
        self.catalog = catalog_table(self.schema)
        self._autocommit_engine: sa.Engine | None = None
        self.clock: Clock | None = None
        """The test clock that decides expiry (:mod:`spi.clock`; None: the server's)."""
        self._sql: dict[TableSpec, TableSql] = {}
        self._reads: dict[str, tuple[TableSql, ReadStatement]] = {}
        self._held: list[PoolProxiedConnection] = []
        self._free: list[tuple[PoolProxiedConnection, psycopg.Cursor[Any]]] = []
        self._listener: tuple[PoolProxiedConnection, Any] | None = None
        self._ready = False
        self._lock = threading.Lock()
        self._closed = False

    def _make_engine(self, **options: Any) -> sa.Engine:
        engine = sa.create_engine(
            self._settings.sa_url, connect_args=self._settings.connect_args, **self._settings.pool, **options
        )
        sa.event.listen(engine, "connect", self._connected)
        return engine

    def _connected(self, conn: psycopg.Connection[Any], _record: Any) -> None:
        self._watchdog.watch(conn)

    @functools.cached_property
    def arrow_conninfo(self) -> str:
        """The libpq connection string of Arrow scans (read-only sessions; holds the password)."""
        return conninfo(self._settings)

    def errors(self) -> AbstractContextManager[None]:
        """A context turning driver errors into :mod:`spi.errors` (password masked)."""
        return wrapped(self.url, self.secret, self._watchdog.verdict)

    def check_open(self) -> None:
        """Raise :class:`KvError` once the provider is closed."""
        if self._closed:
            raise KvError(f"provider {self.url} is closed")

    @property
    def ready(self) -> bool:
        """Whether a transaction found (or made) the schema and catalog."""
        return self._ready

    def ensure_schema(self, create: Callable[[PgDatabase], None]) -> None:
        """Run ``create(self)``, which makes the schema and catalog if missing, until
        one call succeeds (once per provider; concurrent callers wait for it)."""
        if self._ready:
            return
        with self._lock:
            if not self._ready:
                create(self)
                self._ready = True

    def table_sql(self, spec: TableSpec) -> TableSql:
        """The (cached) SQL objects of a spec."""
        sql = self._sql.get(spec)
        if sql is None or sql.spec.columns != spec.columns or sql.spec.frozen != spec.frozen:
            sql = self._sql[spec] = TableSql(spec, self.schema, self.clock)
        return sql

    def use_clock(self, clock: Clock) -> None:
        """Decide expiry on ``clock`` from now on (the default clock: on the server's),
        in every statement built after this: the SQL cached per spec is dropped."""
        self.clock = None if is_system_clock(clock) else clock
        self._sql.clear()
        self._reads.clear()

    def remember_table(self, sql: TableSql) -> None:
        """Note a table's SQL for single-statement reads (verified on every use)."""
        entry = self._reads.get(sql.spec.name)
        if entry is None or entry[0] is not sql:
            self._reads[sql.spec.name] = (sql, ReadStatement(sql, self.catalog, self.dialect))

    def forget_table(self, name: str) -> None:
        """Drop a table from the single-statement cache."""
        self._reads.pop(name, None)

    def cached_read(self, name: str) -> tuple[TableSql, ReadStatement] | None:
        """The cached SQL and point-read statement of a table, if any."""
        return None if self._closed else self._reads.get(name)

    def take_autocommit(self) -> tuple[PoolProxiedConnection, psycopg.Cursor[Any]]:
        """A kept psycopg connection in autocommit mode (every statement an implicit
        SERIALIZABLE transaction) and its cursor, for one statement; hand it back
        with :meth:`give_back`.

        Connections and their cursors are kept on a free list between statements (a
        cursor made per statement costs about 10 µs; a connection, milliseconds), so
        there are never more of them than statements that ran at once, whatever the
        number of threads that read. A server that cannot be reached (down, starting
        again) raises :class:`spi.ProviderUnavailableError`."""
        with self._lock:
            self.check_open()
            if self._free:
                return self._free.pop()
            if self._autocommit_engine is None:
                self._autocommit_engine = self._make_engine(isolation_level="AUTOCOMMIT", pool_pre_ping=False)
            with self.errors():
                fairy = self._autocommit_engine.raw_connection()
            self._held.append(fairy)
        raw = fairy.driver_connection
        assert raw is not None  # a checked-out connection always has one
        return fairy, raw.cursor()

    def give_back(self, kept: tuple[PoolProxiedConnection, psycopg.Cursor[Any]], *, broken: bool = False) -> None:
        """Return what :meth:`take_autocommit` gave; ``broken``: its statement failed,
        so the connection is discarded (a broken session, a stale prepared plan)."""
        with self._lock:
            if not broken and not self._closed:
                self._free.append(kept)
                return
            if kept[0] in self._held:
                self._held.remove(kept[0])
        if broken:
            kept[0].invalidate()
        else:
            kept[0].close()  # the provider closed meanwhile

    def take_listener(self) -> tuple[PoolProxiedConnection, Any] | None:
        """The parked LISTEN connection of a finished watch (and its psycopg
        connection), if any."""
        with self._lock:
            parked, self._listener = self._listener, None
        return parked

    def park_listener(self, listener: tuple[PoolProxiedConnection, Any]) -> bool:
        """Keep a finished watch's LISTEN connection for the next; False when one is
        kept already or the provider is closed (the caller closes it)."""
        with self._lock:
            if self._closed or self._listener is not None:
                return False
            self._listener = listener
            return True

    def close(self) -> None:
        """Close the held connections and dispose of the connection pools."""
        if not self._closed:
            with self._lock:
                self._closed = True
                held, self._held = self._held, []
                self._free = []
                listener, self._listener = self._listener, None
            for fairy in held:
                fairy.close()
            if listener is not None:
                listener[0].invalidate()
            self._watchdog.close()
            self.engine.dispose()
            if self._autocommit_engine is not None:
                self._autocommit_engine.dispose()

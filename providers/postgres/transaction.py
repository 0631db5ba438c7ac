"""Transactions: :class:`PgTransaction`, and :func:`begin`, which makes the schema
and its catalog on a provider's first transaction."""

from __future__ import annotations

import itertools
import threading
import weakref
from collections.abc import Mapping
from contextlib import AbstractContextManager, suppress
from typing import TYPE_CHECKING, Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Inspector
from sqlalchemy.schema import CreateSchema, CreateTable
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.expression import Executable

from providers.postgres.database import PgDatabase
from providers.postgres.feed import Event, record
from providers.postgres.schema import EXPIRES, SERVER_MICROS, expiry_index_name, qualified, quoted
from providers.postgres.session import AnyResult
from providers.postgres.table import FETCH_ROWS, PgTable
from providers.postgres.table_sql import TableSql
from spi.errors import ConflictError, KvError, TableNotFoundError, UrlError
from spi.primitives import Stored
from spi.provider import TransactionBase
from spi.spec import TableSpec

if TYPE_CHECKING:
    import psycopg

C = TypeVar("C")
DDL_LOCK = 0x6B76
"""First key of the transaction-scoped advisory lock that serialises DDL on a schema
(the second is the schema name's hash)."""
RETRY_LOCK = 0x6B77
"""First key of the per-schema advisory lock that retried transactions queue on."""
_retry_lock = threading.local()
"""Whether this thread holds the retry lock (a nested retry must not wait for it)."""


class PgTransaction(TransactionBase):
    """One SQLAlchemy connection in a SERIALIZABLE transaction (READ COMMITTED for DDL);
    a :class:`~providers.postgres.session.PgSession` for its tables."""

    records_events = False  # its events are recorded at commit

    def __init__(
        self,
        db: PgDatabase,
        *,
        isolation: str | None = None,
        exclusive: bool = False,
        read_only: bool = False,
    ) -> None:
        super().__init__()
        self._db = db
        self.ended = False
        self.events: list[Event] = []
        self._cursors: weakref.WeakSet[Any] = weakref.WeakSet()
        self._temp_names = itertools.count(1)
        self.dialect = db.dialect
        self._exclusive = False
        with self.errors():
            self._conn = db.engine.connect()
            if isolation is not None:
                self._conn.execution_options(isolation_level=isolation)
            if read_only:
                self._conn.execution_options(postgresql_readonly=True)
            # Begin now (no SQL is sent yet) so statements run on the driver connection
            # belong to the transaction SQLAlchemy commits.
            self._conn.begin()
        if exclusive and not getattr(_retry_lock, "held", False):
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
        statement = sa.select(fn(RETRY_LOCK, sa.func.hashtext(sa.literal(self._db.schema, sa.Text))))
        compiled = statement.compile(dialect=self.dialect)
        raw = self.driver_connection()
        with self.errors():
            raw.autocommit = True
            try:
                raw.execute(str(compiled), compiled.params)
            finally:
                raw.autocommit = False
        self._exclusive = take
        _retry_lock.held = take

    def lock_ddl(self) -> None:
        """Wait for the schema's DDL lock, held until this transaction ends."""
        self.execute(sa.select(sa.func.pg_advisory_xact_lock(DDL_LOCK, sa.func.hashtext(self._db.schema))))

    def errors(self) -> AbstractContextManager[None]:
        """A context turning driver errors into :mod:`spi.errors` (password masked)."""
        return self._db.errors()

    def execute(self, statement: Executable, params: Mapping[str, Any] | None = None) -> AnyResult:
        """Run one SQLAlchemy statement in this transaction."""
        if self.ended:
            raise KvError("this transaction has ended; open a new one")
        with self.errors():
            return self._conn.execute(statement, params)

    def query(self, statement: sa.Select[Any], *, stream: bool = False) -> psycopg.Cursor[Any]:
        """Run a SELECT on the driver connection; the psycopg cursor (server-side when
        ``stream``) yields plain tuples, skipping SQLAlchemy's per-row result objects."""
        if self.ended:
            raise KvError("this transaction has ended; open a new one")
        text, params = self._compile(statement)
        raw = self.driver_connection()
        with self.errors():
            cursor: psycopg.Cursor[Any]
            if stream:
                cursor = raw.cursor(name=f"kv_scan_{next(self._temp_names)}", binary=True)
                cursor.itersize = FETCH_ROWS
            else:
                cursor = raw.cursor(binary=True)
            cursor.execute(text, params)
        return cursor

    def literal_sql(self, statement: sa.Select[Any]) -> str:
        """``statement`` with every value rendered as a literal by psycopg's client-side
        quoting (for a connection that takes no parameters)."""
        from psycopg import ClientCursor

        text, params = self._compile(statement)
        with self.errors():
            return ClientCursor(self.driver_connection()).mogrify(text, params)

    def _compile(self, statement: sa.Select[Any]) -> tuple[str, dict[str, Any]]:
        """``statement`` as the driver's SQL text and its parameters, each converted as
        its type's bind processor for this dialect says (as SQLAlchemy does on execute)."""
        compiled = statement.compile(dialect=self.dialect)
        assert isinstance(compiled, SQLCompiler)
        params = compiled.params
        for bind, name in compiled.bind_names.items():
            process = bind.type.dialect_impl(self.dialect).bind_processor(self.dialect)
            if process is not None and name in params:
                params[name] = process(params[name])
        return str(compiled), params

    def fetch_row(self, sql: TableSql, key: tuple[Any, ...]) -> Stored | None:
        """The stored row with ``key``, or None."""
        row = self.execute(sql.get, sql.key_params(key)).first()
        return None if row is None else sql.stored(row)

    def write(self, text: str, params: Mapping[str, Any], fingerprint: str | None) -> tuple[Any, ...] | None:
        """Run a single-statement write (:mod:`providers.postgres.write_sql`) in this
        transaction: its first row (None: a lean statement wrote nothing);
        :class:`ConflictError` when a checked statement finds that another transaction
        changed the table's spec meanwhile (only a READ COMMITTED one can see that)."""
        if self.ended:
            raise KvError("this transaction has ended; open a new one")
        raw = self.driver_connection()
        with self.errors():
            row = raw.execute(text, params, prepare=True).fetchone()
        if fingerprint is None:
            return None if row is None else tuple(row)
        if row is None or row[0] != fingerprint:
            raise ConflictError(f"table {params['kv_name']!r} was changed by another transaction; retry")
        return tuple(row)

    def server_micros(self) -> int:
        """Now on the server's clock, in microseconds since the epoch."""
        return int(self.execute(sa.select(SERVER_MICROS)).scalar_one())

    def blocks_others(self) -> bool:
        """Whether another session waits for a lock this transaction holds."""
        waiting = sa.text(
            "SELECT EXISTS (SELECT 1 FROM pg_stat_activity"
            " WHERE wait_event_type = 'Lock' AND pg_backend_pid() = ANY (pg_blocking_pids(pid)))"
        )
        return bool(self.execute(waiting).scalar())

    def driver_connection(self) -> psycopg.Connection[Any]:
        """The psycopg connection under this transaction (for COPY)."""
        with self.errors():
            raw = self._conn.connection.driver_connection
        assert raw is not None  # a checked-out connection always has one
        return raw

    def inspector(self) -> Inspector:
        """A SQLAlchemy inspector reading the catalogs in this transaction."""
        with self.errors():
            return sa.inspect(self._conn)

    def relation_exists(self, *name: str) -> bool:
        """True if the (schema-qualified) ``name`` is taken by a table, index, view..."""
        found = sa.func.to_regclass(sa.literal(qualified(self.dialect, *name), sa.Text))
        return self.execute(sa.select(found)).scalar_one() is not None

    def temp_name(self) -> str:
        """A temporary table name unique within this transaction."""
        return f"kv_load_{next(self._temp_names)}"

    def track(self, cursor: C) -> C:
        """Remember an open scan so the transaction closes it when it ends."""
        self._cursors.add(cursor)
        return cursor

    def spec(self, name: str) -> TableSpec:
        """The spec of table ``name`` as this transaction sees the catalog."""
        catalog = self._db.catalog
        row = self.execute(catalog.select().where(catalog.c.name == name)).first()
        if row is None:
            raise TableNotFoundError(f"table {name!r} does not exist in schema {self._db.schema!r}")
        return TableSpec.from_catalog(row.spec)

    def _open_table(self, name: str) -> PgTable:
        sql = self._db.table_sql(self.spec(name))
        self._db.remember_table(sql)
        return PgTable(self, sql)

    def _finish(self) -> None:
        self.ended = True
        for cursor in list(self._cursors):
            with suppress(Exception):
                cursor.close()

    def _commit(self) -> None:
        try:
            if self.events:
                record(self, self._db.schema, self.events)  # the counter's row lock is held until the commit
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


def begin(
    db: PgDatabase, *, isolation: str | None = None, exclusive: bool = False, read_only: bool = False
) -> PgTransaction:
    """A new transaction on ``db``: SERIALIZABLE (or ``isolation``), ``read_only``;
    ``exclusive`` first waits for the schema's retry lock (unless this thread holds it).
    The provider's first transaction creates the schema and catalog if missing."""
    db.check_open()
    db.ensure_schema(_create_schema)
    return PgTransaction(db, isolation=isolation, exclusive=exclusive, read_only=read_only)


def holds_catalog(db: PgDatabase) -> bool:
    """Whether ``db``'s schema holds the kvctl catalog (known once a transaction
    began; else one look that creates nothing)."""
    if db.ready:
        return True
    db.check_open()
    with PgTransaction(db, isolation="READ COMMITTED") as tx:
        return tx.relation_exists(db.schema, db.catalog.name)


def _create_schema(db: PgDatabase) -> None:
    """CREATE SCHEMA and the catalog table if the catalog is missing (serialised by the
    DDL lock); a provider opened with ``create=False`` raises :class:`UrlError` instead.
    An existing catalog is only looked up: no lock, no DDL, so a role that may only
    read can use the provider."""
    with PgTransaction(db, isolation="READ COMMITTED") as tx:
        if tx.relation_exists(db.schema, db.catalog.name):
            _add_expiry(tx, db)
            return
        if not db.create:
            raise UrlError(
                f"PostgreSQL schema {db.schema!r} at {db.url} holds no kvctl tables "
                "(check ?schema=; nothing was created)"
            )
        tx.lock_ddl()
        tx.execute(CreateSchema(quoted(db.schema), if_not_exists=True))
        tx.execute(CreateTable(db.catalog, if_not_exists=True))


def _add_expiry(tx: PgTransaction, db: PgDatabase) -> None:
    """Give the tables made before rows could expire their expiry column and index
    (one catalog query when there are none; the change is metadata only)."""
    catalog = db.catalog
    relation = sa.func.to_regclass(
        sa.func.quote_ident(sa.literal(db.schema, sa.Text)) + "." + sa.func.quote_ident(catalog.c.name)
    )
    has_column = (
        sa.select(sa.literal(1))
        .select_from(sa.table("pg_attribute", sa.column("attrelid"), sa.column("attname"), sa.column("attisdropped")))
        .where(sa.column("attrelid") == relation, sa.column("attname") == EXPIRES, sa.not_(sa.column("attisdropped")))
    )
    missing = [r[0] for r in tx.execute(sa.select(catalog.c.name).where(~has_column.exists())).fetchall()]
    if not missing:
        return
    tx.lock_ddl()
    for name in missing:
        table = qualified(tx.dialect, db.schema, name)
        tx.execute(sa.text(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {EXPIRES} timestamptz"))
        index = qualified(tx.dialect, expiry_index_name(name))
        tx.execute(sa.text(f"CREATE INDEX IF NOT EXISTS {index} ON {table} ({EXPIRES}) WHERE {EXPIRES} IS NOT NULL"))

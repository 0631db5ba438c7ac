"""What a table runs its statements on: :class:`PgSession`.

:class:`~providers.postgres.table.PgTable` and the bulk load path depend on this
protocol, not on the transaction class, which comes after them.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import CursorResult, Dialect
from sqlalchemy.sql.expression import Executable

from providers.postgres.table_sql import TableSql
from spi.primitives import Stored

if TYPE_CHECKING:
    import psycopg

C = TypeVar("C")
AnyResult = CursorResult[*tuple[Any, ...]]
"""What SQLAlchemy returns for a statement whose row type it does not know."""


class PgSession(Protocol):
    """One transaction's statements, as a table uses them.

    :class:`~providers.postgres.transaction.PgTransaction` implements all of it; the
    auto-commit point read implements :meth:`fetch_row`, the auto-commit write
    :meth:`write`, and they refuse the rest.
    """

    @property
    def ended(self) -> bool:
        """True once the transaction committed or rolled back (its scans stop)."""

    @property
    def events(self) -> list[Any]:
        """The change-feed events of the transaction's writes, in call order
        (:data:`providers.postgres.feed.Event`); recorded at commit."""

    @property
    def records_events(self) -> bool:
        """True when each write statement records its own change events (the
        auto-commit write of a change-fed table): :attr:`events` then stays empty."""

    @property
    def dialect(self) -> Dialect:
        """The SQLAlchemy dialect statements are compiled for."""

    def errors(self) -> AbstractContextManager[None]:
        """A context turning driver errors into :mod:`spi.errors` (password masked)."""

    def fetch_row(self, sql: TableSql, key: tuple[Any, ...]) -> Stored | None:
        """The stored row with ``key``, or None."""

    def write(self, text: str, params: Mapping[str, Any], fingerprint: str | None) -> tuple[Any, ...] | None:
        """Run a single-statement write of :mod:`providers.postgres.write_sql`: its first row
        (for a checked statement, ``fingerprint`` given: the catalog's fingerprint, then
        what the write returned, nulls when it matched nothing, and it raises when the
        catalog no longer holds that spec; for a lean one: ``true`` and what it
        returned, or None when it wrote nothing)."""

    def server_micros(self) -> int:
        """Now on the server's clock, in microseconds since the epoch (expiry's clock)."""

    def execute(self, statement: Executable, params: Mapping[str, Any] | None = None) -> AnyResult:
        """Run one SQLAlchemy statement."""

    def query(self, statement: sa.Select[Any], *, stream: bool = False) -> psycopg.Cursor[Any]:
        """Run a SELECT on the driver connection: a psycopg cursor of plain tuples
        (server-side when ``stream``)."""

    def literal_sql(self, statement: sa.Select[Any]) -> str:
        """``statement`` with every value rendered as a literal (for a connection that
        takes no parameters)."""

    def driver_connection(self) -> psycopg.Connection[Any]:
        """The psycopg connection under the transaction (for COPY)."""

    def relation_exists(self, *name: str) -> bool:
        """True if the (schema-qualified) ``name`` is taken by a table, index, view..."""

    def temp_name(self) -> str:
        """A temporary table name unique within the transaction."""

    def track(self, cursor: C) -> C:
        """Remember an open scan (anything with ``close()``) to close when the transaction ends."""

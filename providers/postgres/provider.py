"""``PostgresProvider``: the SPI's entry point, over a :class:`PgDatabase`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from providers.postgres.admin import PgAdmin
from providers.postgres.database import PgDatabase
from providers.postgres.single import PgAutoCommitTable
from providers.postgres.transaction import PgTransaction, begin
from providers.postgres.url import PgSettings, parse_url
from spi.capabilities import Capability
from spi.errors import ConflictError
from spi.provider import ProviderBase, TransactionBase

T = TypeVar("T")


class PostgresProvider(ProviderBase):
    """Logical tables as real PostgreSQL tables in one schema (see the package docs)."""

    capabilities: frozenset[str] = frozenset(
        {
            Capability.TRANSACTIONS,
            Capability.SECONDARY_INDEXES,
            Capability.VERIFY,
            Capability.THREADS,
            Capability.PROCESSES,
            Capability.DURABLE,
            Capability.SQL,
        }
    )

    def __init__(self, settings: PgSettings, secret: str | None, *, create: bool = True) -> None:
        super().__init__(settings.masked)
        self.schema = settings.schema
        self._db = PgDatabase(settings, secret, create=create)
        self._admin = PgAdmin(self._db)

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
        first waits for the schema's retry lock."""
        return begin(self._db, isolation=isolation, exclusive=exclusive, read_only=read_only)

    def run(self, fn: Callable[[TransactionBase], T], retries: int = 10) -> T:
        """Run ``fn(tx)``, retrying on :class:`ConflictError` (re-raised after ``retries``).

        The first attempt is optimistic. Retries queue on a per-schema advisory lock
        taken before the transaction starts, so under contention they run one after
        the other on fresh snapshots instead of colliding again and backing off.
        """
        attempt = 0
        while True:
            try:
                with self.transaction(exclusive=attempt > 0) as tx:
                    return fn(tx)
            except ConflictError:
                if attempt >= retries:
                    raise
                attempt += 1

    def table(self, name: str) -> PgAutoCommitTable:
        """An auto-commit handle (point reads take a single round trip)."""
        return PgAutoCommitTable(self, name, self._db)

    def close(self) -> None:
        """Close the held connections and dispose of the connection pools."""
        self._db.close()

"""The interfaces front ends program against: :class:`Provider`, :class:`Transaction`,
:class:`Table` and :class:`Admin`.

``spi.connect`` returns a :class:`Provider`. Providers usually build on
:class:`spi.provider.ProviderBase`, which declares that it implements
:class:`Provider` so that mypy checks the whole chain (its transactions, their
tables and the auto-commit tables) against these protocols.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, Self, TypeVar, runtime_checkable

if TYPE_CHECKING:
    import pyarrow as pa

    from spi.aggregate import Group
    from spi.changes import Change, Progress
    from spi.checksum import Checksum, Segment
    from spi.filters import Expr
    from spi.keys import KeyLike, Range
    from spi.primitives import ColumnBatch
    from spi.row import Page, Row
    from spi.spec import TableSpec

T = TypeVar("T")


class Admin(Protocol):
    """Table management (``provider.admin``)."""

    def create(self, spec: TableSpec) -> None:
        """Create a table; :class:`TableExistsError` if it exists."""

    def create_or_update(self, spec: TableSpec) -> None:
        """Create, no-op for an equal spec, or apply a compatible change."""

    def exists(self, name: str) -> bool:
        """True if the table exists."""

    def get_spec(self, name: str) -> TableSpec:
        """The table's spec; :class:`TableNotFoundError` if missing."""

    def list_tables(self) -> list[str]:
        """Table names sorted by code point."""

    def drop(self, name: str, *, missing_ok: bool = False) -> None:
        """Drop a table and all its data."""

    def verify(self, name: str) -> list[str]:
        """Consistency problems found in a table (empty: none); needs capability ``verify``."""

    def create_staging(self, name: str) -> str:
        """Make an empty hidden table with table ``name``'s spec and return its name
        (``list_tables`` never shows it); first drop what earlier staging tables of
        ``name`` are left (see :mod:`spi.staging`)."""

    def swap_rows(self, name: str, other: str) -> None:
        """Exchange the rows (with their versions and index entries) of two tables with
        the same fields, key and indexes, atomically; each keeps its name and spec."""

    def sweep(self, name: str) -> int:
        """Remove the table's expired rows from storage now (each one's ``"expire"``
        event recorded on a change-fed table); how many were removed."""

    def freeze(self, name: str) -> None:
        """Make the table refuse every row write with :class:`FrozenTableError` (reads,
        sweeps, ``create_or_update`` and ``drop`` still work), durably and for every
        connection: a write that starts after ``freeze`` returns is refused, and one
        that wrote before commits before ``freeze`` returns or fails. A no-op when frozen."""

    def unfreeze(self, name: str) -> None:
        """Allow the table's row writes again (a no-op when it is not frozen)."""

    def is_frozen(self, name: str) -> bool:
        """True while the table is frozen; :class:`TableNotFoundError` if it is missing."""
        return self.get_spec(name).frozen


class Table(Protocol):
    """The operations on one table (SPI.md, "Operations on a table"): inside a
    transaction (``tx.table(name)``) or auto-commit (``provider.table(name)``).

    Not runtime-checkable on purpose: ``isinstance`` would read every member, and
    reading an auto-commit table's ``spec`` runs a transaction."""

    @property
    def name(self) -> str:
        """The table's name."""

    @property
    def spec(self) -> TableSpec:
        """The table's spec."""

    # ``ttl`` (seconds) gives the rows a write writes their expiry, overriding the
    # table's ``ttl``; without either they never expire.
    def upsert(self, row: Mapping[str, Any], *, ttl: int | float | None = None) -> int:
        """Insert, or merge the given columns into the existing row; the new version."""

    def insert(self, row: Mapping[str, Any], *, ttl: int | float | None = None) -> int:
        """Insert a new row; :class:`RowExistsError` if the key exists."""

    def replace(self, row: Mapping[str, Any], *, version: int | None = None, ttl: int | float | None = None) -> int:
        """Overwrite the whole row (unset columns become null), optionally conditionally."""

    def update(
        self,
        key: KeyLike,
        changes: Mapping[str, Any],
        *,
        default: Mapping[str, Any] | None = None,
        version: int | None = None,
        ttl: int | float | None = None,
    ) -> int:
        """Partial update of an existing row (created from ``default`` if missing)."""

    def delete(self, key: KeyLike, *, version: int | None = None) -> bool:
        """Delete a row; True if one was deleted."""

    def increment(self, key: KeyLike, column: str, amount: int | float = 1) -> int | float:
        """Add ``amount`` to a numeric column (a missing row starts at 0); the new value."""

    def compare_and_swap(self, key: KeyLike, column: str, expected: Any, new: Any) -> bool:
        """Set ``column`` to ``new`` if it holds ``expected`` (None: missing row or null)."""

    def update_range(self, range: Range | None = None, *, where: Expr | None = None, changes: Mapping[str, Any]) -> int:
        """Apply ``changes`` to every matching row; how many changed."""

    def delete_range(self, range: Range | None = None, *, where: Expr | None = None) -> int:
        """Delete every matching row; how many were deleted."""

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
        """Bulk load, each batch atomic; how many rows were written. With
        ``keep_versions`` each row (an :class:`spi.Row`, or anything with a ``version``)
        is written with its own version and ``expires_at`` instead of the next
        version and ``ttl``."""

    def read(self, key: KeyLike, *, columns: Iterable[str] | None = None) -> Row | None:
        """The row with this full key, or None."""

    def read_many(self, keys: Iterable[KeyLike], *, columns: Iterable[str] | None = None) -> list[Row | None]:
        """The rows with these keys, in the order of ``keys``."""

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
        """Stream the matching rows in bounded memory."""

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
        """One page of a scan and the token that resumes it."""

    def scan_batches(
        self,
        range: Range | None = None,
        *,
        where: Expr | None = None,
        columns: Iterable[str] | None = None,
        batch_size: int = 10_000,
    ) -> Iterator[ColumnBatch]:
        """The matching rows in key order as column batches."""

    def scan_arrow(
        self,
        range: Range | None = None,
        *,
        where: Expr | None = None,
        columns: Iterable[str] | None = None,
        batch_size: int = 10_000,
    ) -> Iterator[pa.RecordBatch]:
        """The matching rows in key order as Arrow record batches."""

    def multi_scan(
        self,
        ranges: Sequence[Range],
        *,
        where: Expr | None = None,
        limit: int | None = None,
        columns: Iterable[str] | None = None,
    ) -> Iterator[Row]:
        """The union of several ranges, each row once, in key order."""

    def count(self, range: Range | None = None, *, where: Expr | None = None) -> int:
        """How many rows match."""

    def aggregate(
        self,
        range: Range | None = None,
        *,
        where: Expr | None = None,
        group_by: Iterable[str] = (),
        columns: Iterable[str] = (),
    ) -> list[Group]:
        """Row counts per group of ``group_by`` values and statistics of ``columns``
        (see :mod:`spi.aggregate`)."""

    def checksum(
        self,
        range: Range | None = None,
        *,
        where: Expr | None = None,
        columns: Iterable[str] | None = None,
        versions: bool = False,
    ) -> Checksum:
        """The (count, sum of row hashes) of the matching rows, hashing their key,
        ``columns`` (default: every other column) and with ``versions`` their version,
        equal across providers for equal rows (see :mod:`spi.checksum`)."""

    def segments(
        self,
        range: Range | None = None,
        *,
        where: Expr | None = None,
        columns: Iterable[str] | None = None,
        versions: bool = False,
        size: int = 10_000,
        limit: int | None = None,
    ) -> list[Segment]:
        """The matching rows in key order cut into runs of ``size`` rows: each run's
        first key and checksum, at most ``limit`` runs (see :mod:`spi.checksum`)."""

    def split(self, n: int) -> list[Range]:
        """About ``n`` disjoint ranges of similar row counts covering the table."""

    def explain(self, range: Range | None = None, *, where: Expr | None = None, order_by: str | None = None) -> str:
        """How the provider runs such a scan."""


@runtime_checkable
class Transaction(Protocol):
    """A serializable transaction: a context manager that commits on a clean exit."""

    def table(self, name: str) -> Table:
        """The table ``name`` as this transaction sees it."""

    def __enter__(self) -> Self: ...

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


@runtime_checkable
class Provider(Protocol):
    """An open store (``spi.connect(url)``): admin, transactions, auto-commit tables."""

    url: str
    """The URL with any password masked as ``***``."""
    capabilities: frozenset[str]
    """What the provider supports beyond the core contract (:class:`spi.capabilities.Capability`)."""

    @property
    def admin(self) -> Admin:
        """Table management."""

    @property
    def store_id(self) -> str:
        """The store this provider opened, without credentials: two providers with the
        same ``store_id`` read and write the same tables (two URLs may name one store)."""

    def transaction(self) -> Transaction:
        """A new serializable transaction (use it as a context manager)."""

    def run(self, fn: Callable[[Transaction], T], retries: int = 10) -> T:
        """Run ``fn(tx)`` in a transaction, retrying it on :class:`ConflictError`."""

    def table(self, name: str) -> Table:
        """An auto-commit handle: each call is its own transaction."""

    def revision(self) -> int:
        """The store's current revision (0 before the first recorded write); needs
        capability ``changes``."""

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
        """Recorded events with revision > ``since`` up to the current revision, in
        (revision, call order); ``tables=None``: every change-fed table; ``ops``: only
        these operations; ``prev``: events carry the row before the write."""

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
        """The events after ``since`` (default: the current revision), then live events
        as transactions commit in any process; ends after ``timeout`` seconds without one.
        ``progress``: a :class:`spi.changes.Progress` bookmark every ``progress`` seconds
        without a matching event; ``initial``: the live rows first (SPI.md)."""

    def compact(self, revision: int) -> None:
        """Forget the events with revision <= ``revision``."""

    def stats(self) -> dict[str, int]:
        """Counts of what this provider's calls did since it was opened: conflict
        retries, fast-path misses, lock waits, sweeps (:mod:`spi.stats`)."""

    def close(self) -> None:
        """Release connections and files; the provider is unusable afterwards."""

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None: ...


__all__ = ["Admin", "Provider", "Table", "Transaction"]

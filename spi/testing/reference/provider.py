"""The reference provider: admin, transactions, ``run`` and auto-commit handles.

A transaction copies each table's row list when it first opens the table and, on
commit, puts its copies back; a rollback just forgets them. The model is meant for
one thread: a transaction whose tables another transaction committed to after it
copied them fails to commit with :class:`ConflictError`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import cmp_to_key
from types import TracebackType
from typing import Any, Self, TypeVar

from spi.changes import Change
from spi.errors import (
    ConflictError,
    InvalidFieldError,
    TableExistsError,
    TableNotFoundError,
)
from spi.spec import TableSpec, validate_name
from spi.staging import check_swappable, is_hidden, new_staging_name, stages
from spi.testing.reference.feed import Feed, Pending
from spi.testing.reference.order import compare_tuples
from spi.testing.reference.records import Record, StoredTable
from spi.testing.reference.table import ReferenceTable, load_batches

T = TypeVar("T")


class ReferenceAdmin:
    """Table management of a :class:`ReferenceProvider`."""

    def __init__(self, tables: dict[str, StoredTable], feed: Feed) -> None:
        self._tables = tables
        self._feed = feed

    def create(self, spec: TableSpec) -> None:
        """Create an empty table; :class:`TableExistsError` if it exists."""
        if spec.name in self._tables:
            raise TableExistsError(f"table {spec.name!r} already exists")
        self._tables[spec.name] = StoredTable(spec.with_frozen(False))

    def exists(self, name: str) -> bool:
        """True if the table exists."""
        return name in self._tables

    def get_spec(self, name: str) -> TableSpec:
        """The table's spec; :class:`TableNotFoundError` if it is missing."""
        return stored(self._tables, name).spec

    def list_tables(self) -> list[str]:
        """Table names in code point order (staging tables are hidden)."""
        return sorted(n for n in self._tables if not is_hidden(n))

    def drop(self, name: str, *, missing_ok: bool = False) -> None:
        """Forget a table; :class:`TableNotFoundError` if it is missing (unless ``missing_ok``)."""
        if name not in self._tables and missing_ok:
            return
        stored(self._tables, name).commits += 1  # a transaction that read it cannot commit
        del self._tables[name]

    def create_staging(self, name: str) -> str:
        """A new empty hidden table with ``name``'s spec, after dropping the earlier
        staging tables of ``name``; its name."""
        validate_name(name, "table")
        spec = stored(self._tables, name).spec
        spec.check_writable()  # a frozen table's rows are not replaced
        for leftover in [n for n in self._tables if stages(n, name)]:
            self.drop(leftover)
        staging = new_staging_name(name)
        self._tables[staging] = StoredTable(spec.renamed(staging))
        return staging

    def swap_rows(self, name: str, other: str) -> None:
        """Exchange the rows of two tables with the same fields, key and indexes; with a
        change feed on either, as one transaction of writes (see :func:`_exchange`)."""
        first, second = stored(self._tables, name), stored(self._tables, other)
        check_swappable(first.spec, second.spec)
        if first.spec.changes or second.spec.changes:
            with ReferenceTransaction(self._tables, self._feed) as tx:
                _exchange(tx.table(name), tx.table(other))
            return
        first.rows, second.rows = second.rows, first.rows
        first.commits += 1
        second.commits += 1

    def freeze(self, name: str) -> None:
        """Make the table refuse every row write (a transaction that opened it before
        cannot commit)."""
        self._set_frozen(name, True)

    def unfreeze(self, name: str) -> None:
        """Allow the table's row writes again."""
        self._set_frozen(name, False)

    def is_frozen(self, name: str) -> bool:
        """True while the table is frozen."""
        return stored(self._tables, name).spec.frozen

    def _set_frozen(self, name: str, frozen: bool) -> None:
        table = stored(self._tables, name)
        table.spec = table.spec.with_frozen(frozen)
        table.commits += 1


def _exchange(one: ReferenceTable, other: ReferenceTable) -> None:
    """Give each table the other's rows (SPI.md "Overwrites"): key by key in key order,
    ``one``'s write then ``other``'s, each a put of the other's row with its version or
    a delete of its own row where the other has none."""
    if one is other:
        return
    spec = one.spec
    olds = {id(t): {r.key(spec): r for r in t.rows} for t in (one, other)}
    keys: list[tuple[Any, ...]] = []
    for key in sorted([*olds[id(one)], *olds[id(other)]], key=cmp_to_key(compare_tuples)):
        if not keys or compare_tuples(keys[-1], key) != 0:
            keys.append(key)
    for key in keys:
        for table, source in ((one, other), (other, one)):
            new = _matching(olds[id(source)], key)
            if new is not None:
                table.write_kept(dict(new.values), "replace", new.version)
            elif _matching(olds[id(table)], key) is not None:
                table.delete(key)


def _matching(records: dict[tuple[Any, ...], Record], key: tuple[Any, ...]) -> Record | None:
    """The record whose key equals ``key`` in the total order (None: none)."""
    return next((r for k, r in records.items() if compare_tuples(k, key) == 0), None)


def stored(tables: dict[str, StoredTable], name: str) -> StoredTable:
    """The committed table ``name``; :class:`TableNotFoundError` if it is missing."""
    try:
        return tables[name]
    except KeyError:
        raise TableNotFoundError(f"table {name!r} does not exist") from None


class ReferenceTransaction:
    """A transaction over private copies of the tables it opens."""

    def __init__(self, tables: dict[str, StoredTable], feed: Feed) -> None:
        self._tables = tables
        self._feed = feed
        self._open: dict[str, tuple[int, ReferenceTable]] = {}  # name -> (commits seen, table)
        self._pending: Pending = []  # change-feed events, in call order
        self._done = False

    def table(self, name: str) -> ReferenceTable:
        """The table ``name`` as this transaction sees it."""
        if self._done:
            raise InvalidFieldError("this transaction has ended; open a new one")
        if name not in self._open:
            committed = stored(self._tables, name)
            feed = self._pending if committed.spec.changes else None
            self._open[name] = (committed.commits, ReferenceTable(committed.spec, list(committed.rows), feed))
        return self._open[name][1]

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._done = True
        if exc_type is None:
            self._commit()

    def _commit(self) -> None:
        for name, (seen, _) in self._open.items():
            if stored(self._tables, name).commits != seen:
                raise ConflictError(f"table {name!r} changed since this transaction read it; retry")
        for name, (_, table) in self._open.items():
            committed = self._tables[name]
            committed.rows = list(table.rows)  # a handle kept after the commit cannot reach it
            committed.commits += 1
        self._feed.commit(self._pending)


def _autocommit(operation: str) -> Callable[..., Any]:
    def call(self: ReferenceAutoCommit, *args: Any, **kwargs: Any) -> Any:
        return self._provider.run(lambda tx: getattr(tx.table(self.name), operation)(*args, **kwargs))

    call.__name__ = operation
    call.__doc__ = f"``{operation}`` in a transaction of its own (see :class:`ReferenceTable`)."
    return call


class ReferenceAutoCommit:
    """A table handle whose every call is its own transaction (a load: one per batch)."""

    def __init__(self, provider: ReferenceProvider, name: str) -> None:
        self._provider = provider
        self.name = name

    upsert = _autocommit("upsert")
    insert = _autocommit("insert")
    replace = _autocommit("replace")
    update = _autocommit("update")
    delete = _autocommit("delete")
    increment = _autocommit("increment")
    compare_and_swap = _autocommit("compare_and_swap")
    update_range = _autocommit("update_range")
    delete_range = _autocommit("delete_range")
    read = _autocommit("read")
    scan = _autocommit("scan")
    scan_page = _autocommit("scan_page")
    count = _autocommit("count")
    aggregate = _autocommit("aggregate")

    def load(
        self,
        rows: Iterable[Mapping[str, Any]],
        *,
        mode: str = "upsert",
        batch_size: int = 10_000,
        keep_versions: bool = False,
    ) -> int:
        """Bulk write; each batch commits in a transaction of its own. Rows written."""

        def write(chunk: list[Mapping[str, Any]], m: str, offset: int) -> None:
            self._provider.run(lambda tx: tx.table(self.name).load_batch(chunk, m, offset, keep_versions=keep_versions))

        return load_batches(rows, mode, batch_size, write)


class ReferenceProvider:
    """A provider for differential tests, written for clarity rather than speed.

    Rows are kept in Python lists and every operation scans them linearly, using only
    the SPI's spec and value validation from the engine: its order, filters, versions
    and errors are written out from SPI.md independently of the real providers.
    Construct it directly: ``ReferenceProvider()`` is a fresh, empty store.
    """

    def __init__(self) -> None:
        self._tables: dict[str, StoredTable] = {}
        self._feed = Feed()
        self.admin = ReferenceAdmin(self._tables, self._feed)

    def transaction(self) -> ReferenceTransaction:
        """A new transaction (a context manager: commit on exit, roll back on an exception)."""
        return ReferenceTransaction(self._tables, self._feed)

    def revision(self) -> int:
        """How many transactions recorded change-feed events."""
        return self._feed.revision

    def changes(
        self,
        tables: Any = None,
        *,
        since: Any = 0,
        key: Any = None,
        prefix: Any = None,
        limit: Any = None,
        prev: Any = False,
        ops: Any = None,
    ) -> Iterator[Change]:
        """The recorded events after ``since`` (see :class:`spi.testing.reference.feed.Feed`)."""
        specs = {name: table.spec for name, table in self._tables.items()}
        return self._feed.changes(specs, tables, since, key, prefix, limit, prev, ops)

    def compact(self, revision: Any) -> None:
        """Forget the events up to ``revision``."""
        self._feed.compact(revision)

    def run(self, fn: Callable[[ReferenceTransaction], T], retries: int = 10) -> T:
        """``fn(tx)`` in a transaction, retried up to ``retries`` times on :class:`ConflictError`."""
        attempt = 0
        while True:
            try:
                with self.transaction() as tx:
                    return fn(tx)
            except ConflictError:
                if attempt >= retries:
                    raise
                attempt += 1

    def table(self, name: str) -> ReferenceAutoCommit:
        """An auto-commit handle: each call is its own transaction."""
        return ReferenceAutoCommit(self, name)

    def close(self) -> None:
        """Forget every table."""
        self._tables.clear()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

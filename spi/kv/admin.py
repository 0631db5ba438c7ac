"""Table management of the ordered-store engine: the catalog, each call in its own
transaction."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from spi.clock import now_micros
from spi.codec import prefix_successor
from spi.errors import SchemaError, TableExistsError, TableNotFoundError, TransactionTooLargeError
from spi.fitting import Fitting
from spi.kv import index_build
from spi.kv.buffer import WriteBuffer
from spi.kv.layout import CATALOG, NEXT_ID, Layout, LayoutCache, catalog_key, pack, unpack
from spi.kv.overwrite import exchange_rows
from spi.kv.scan import Scanner
from spi.kv.store import StoreSession
from spi.kv.table import KvTable
from spi.kv.transaction import KvTransaction, stored_layout
from spi.kv.verify import verify_table
from spi.provider import Admin
from spi.spec import TableSpec, plan_schema_change, validate_name
from spi.staging import check_swappable, is_hidden, new_staging_name, stages, staging_base

SWEEP_BATCH = 1000
"""Expired rows a sweep removes per commit."""


class KvAdmin(Admin):
    """Catalog operations: changes each in its own transaction, lookups each on one
    read-only session."""

    def __init__(
        self, transaction: Callable[[], KvTransaction], session: Callable[[bool], StoreSession], layouts: LayoutCache
    ) -> None:
        self._tx = transaction
        self._session = session
        self._layouts = layouts

    @contextmanager
    def _reading(self) -> Iterator[WriteBuffer]:
        view = WriteBuffer(self._session(True), self._layouts.clock)  # nothing is ever buffered
        try:
            yield view
        finally:
            view.discard()

    def create(self, spec: TableSpec) -> None:
        """Create a table; TableExistsError if it exists."""
        _check_spec(spec)
        with self._tx() as tx:
            if tx.get(catalog_key(spec.name)) is not None:
                raise TableExistsError(f"table {spec.name!r} already exists")
            _create_in(tx, spec)

    def create_or_update(self, spec: TableSpec) -> None:
        """Create, no-op for an equal spec, or apply a compatible change (in one commit;
        indexes added to a table too large for one commit of the store are built in
        pieces: :mod:`spi.kv.index_build`)."""
        _check_spec(spec)
        try:
            self._create_or_update(spec)
        except TransactionTooLargeError:
            with self._tx() as tx:
                old = tx.layout(spec.name)
                change = plan_schema_change(old.spec, spec)
                if not change.added_indexes:
                    raise
                tx.feed_touched = old.spec.changes
                table_id, building = index_build.start_build(tx, old, spec, change)
                piece = self.sweep_batch(old)
            index_build.fill(self._tx, spec.name, table_id, building, piece)
            with self._tx() as tx:
                index_build.finish_build(tx, spec.name, table_id, building, spec)
                tx.feed_touched = spec.changes

    def _create_or_update(self, spec: TableSpec) -> None:
        with self._tx() as tx:
            if tx.get(catalog_key(spec.name)) is None:
                _create_in(tx, spec)
                return
            old = tx.layout(spec.name)
            change = plan_schema_change(old.spec, spec)
            if change.empty:
                return
            tx.feed_touched = old.spec.changes  # its watchers look again
            layout = Layout(
                spec.with_frozen(old.spec.frozen),
                old.columns + [f.name for f in change.added_fields],
                old.table_id,
                tuple(b for b in old.building if b not in spec.indexes),
            )
            for column in change.dropped_indexes:
                tx.delete_prefix(old.index_prefix(column))
            tx.save_layout(layout)
            if change.added_indexes:
                lo, hi = layout.row_prefix, prefix_successor(layout.row_prefix)
                for k, raw in tx.iterate(lo, hi, False):
                    row = layout.decode_row(raw)
                    enc = k[len(layout.row_prefix) :]
                    for column in change.added_indexes:
                        tx.put(layout.index_key(column, row.values[column], enc), b"")

    def exists(self, name: str) -> bool:
        """True if table ``name`` exists."""
        with self._reading() as view:
            return view.get(catalog_key(name)) is not None

    def get_spec(self, name: str) -> TableSpec:
        """The spec of table ``name``."""
        with self._reading() as view:
            return stored_layout(view, self._layouts, name).spec

    def list_tables(self) -> list[str]:
        """Every table name, sorted by code point."""
        with self._reading() as view:
            names = _names(view, CATALOG)
        return sorted(n for n in names if not is_hidden(n))

    def drop(self, name: str, *, missing_ok: bool = False) -> None:
        """Drop table ``name`` and all its rows and index entries."""
        with self._tx() as tx:
            if tx.get(catalog_key(name)) is None:
                if missing_ok:
                    return
                raise TableNotFoundError(f"table {name!r} does not exist")
            _drop_in(tx, name)

    def create_staging(self, name: str) -> str:
        """A new empty hidden table with ``name``'s spec (earlier ones of ``name`` dropped)."""
        validate_name(name, "table")
        staging = new_staging_name(name)
        with self._tx() as tx:
            spec = tx.layout(name).spec
            spec.check_writable()  # a frozen table's rows are not replaced: refused before anything is loaded
            for leftover in _names(tx, catalog_key(staging_base(name) + "_")):
                if stages(leftover, name):
                    _drop_in(tx, leftover)
            _create_in(tx, spec.renamed(staging))
        return staging

    def swap_rows(self, name: str, other: str) -> None:
        """Exchange the two tables' rows in one commit: each catalog entry takes the
        other's table id (and stored column layout); a change-fed table keeps its own
        and both tables' rows are rewritten, with their events (:mod:`spi.kv.overwrite`)."""
        with self._tx() as tx:
            first, second = tx.layout(name), tx.layout(other)
            check_swappable(first.spec, second.spec)
            for layout in (first, second):
                if layout.building:
                    raise SchemaError(
                        f"table {layout.spec.name!r} has an index still being built ({', '.join(layout.building)}); "
                        "add it again to finish it, then swap"
                    )
            if first.spec.changes or second.spec.changes:
                exchange_rows(tx, first, second)
                return
            tx.save_layout(Layout(first.spec, second.columns, second.table_id))
            tx.save_layout(Layout(second.spec, first.columns, first.table_id))

    def freeze(self, name: str) -> None:
        """Make the table refuse row writes (the flag is in its catalog entry: every
        session after this commit sees it)."""
        self._set_frozen(name, True)

    def unfreeze(self, name: str) -> None:
        """Allow the table's row writes again."""
        self._set_frozen(name, False)

    def _set_frozen(self, name: str, frozen: bool) -> None:
        with self._tx() as tx:
            old = tx.layout(name)
            if old.spec.frozen != frozen:
                tx.save_layout(Layout(old.spec.with_frozen(frozen), old.columns, old.table_id, old.building))

    def verify(self, name: str) -> list[str]:
        """Check every row decodes and every index entry matches its row (both ways)."""
        with self._tx() as tx:
            return verify_table(tx, name)

    def sweep_batch(self, layout: Layout) -> int:
        """Expired rows a sweep removes per commit (stores whose commits are bounded
        answer less than :data:`SWEEP_BATCH`)."""
        return SWEEP_BATCH

    def sweep(self, name: str) -> int:
        """Remove the table's rows expired by now on the provider's clock
        (:attr:`LayoutCache.clock`), in commits of up to :data:`SWEEP_BATCH` rows (halved
        while the store refuses a commit's size); how many were removed."""
        now = now_micros(self._layouts.clock)
        removed = 0
        fitting = Fitting()

        def commit(size: int) -> tuple[int, bool]:
            with self._tx() as tx:
                return KvTable(tx, tx.layout(name)).sweep(now, size)

        while True:
            with self._reading() as view:  # a look first: most sweeps find nothing to do
                layout = stored_layout(view, self._layouts, name)
                if not Scanner(view, layout).has_expired(now):
                    return removed
            _, (n, more) = fitting.attempt(self.sweep_batch(layout), commit)
            removed += n
            if not more:
                return removed


def _create_in(tx: KvTransaction, spec: TableSpec) -> None:
    raw = tx.get(NEXT_ID)
    table_id = 1 if raw is None else int(unpack(raw))
    tx.put(NEXT_ID, pack(table_id + 1))
    layout = Layout(spec.with_frozen(False), list(spec.columns), table_id)  # a new table is never frozen
    tx.save_layout(layout)
    tx.put(layout.count_key, pack(0))


def _names(view: WriteBuffer, prefix: bytes) -> list[str]:
    """The names of the catalog entries whose keys start with ``prefix``."""
    return [k[len(CATALOG) :].decode("utf-8") for k in view.keys(prefix, prefix_successor(prefix))]


def _drop_in(tx: KvTransaction, name: str) -> None:
    layout = tx.layout(name)
    tx.feed_touched = layout.spec.changes  # its watchers end
    tx.forget_layout(name)
    tx.delete_prefix(layout.prefix)


def _check_spec(spec: Any) -> None:
    if not isinstance(spec, TableSpec):
        raise SchemaError(f"expected a TableSpec, got {type(spec).__name__}")
    validate_name(spec.name, "table", internal=True)

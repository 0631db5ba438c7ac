"""Table management of the ordered-store engine: the catalog, each call in its own
transaction."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from spi.codec import prefix_successor
from spi.errors import SchemaError, TableExistsError, TableNotFoundError
from spi.kv.layout import CATALOG, NEXT_ID, Layout, catalog_key, pack, unpack
from spi.kv.transaction import KvTransaction
from spi.kv.verify import verify_table
from spi.provider import Admin
from spi.spec import TableSpec, plan_schema_change, validate_name


class KvAdmin(Admin):
    """Catalog operations, each in its own transaction."""

    def __init__(self, transaction: Callable[[], KvTransaction]) -> None:
        self._tx = transaction

    def create(self, spec: TableSpec) -> None:
        """Create a table; TableExistsError if it exists."""
        _check_spec(spec)
        with self._tx() as tx:
            if tx.get(catalog_key(spec.name)) is not None:
                raise TableExistsError(f"table {spec.name!r} already exists")
            _create_in(tx, spec)

    def create_or_update(self, spec: TableSpec) -> None:
        """Create, no-op for an equal spec, or apply a compatible change."""
        _check_spec(spec)
        with self._tx() as tx:
            if tx.get(catalog_key(spec.name)) is None:
                _create_in(tx, spec)
                return
            old = tx.layout(spec.name)
            change = plan_schema_change(old.spec, spec)
            if change.empty:
                return
            tx.feed_touched = old.spec.changes  # its watchers look again
            layout = Layout(spec, old.columns + [f.name for f in change.added_fields], old.table_id)
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
        with self._tx() as tx:
            return tx.get(catalog_key(name)) is not None

    def get_spec(self, name: str) -> TableSpec:
        """The spec of table ``name``."""
        with self._tx() as tx:
            return tx.layout(name).spec

    def list_tables(self) -> list[str]:
        """Every table name, sorted by code point."""
        with self._tx() as tx:
            names = [
                k[len(CATALOG) :].decode("utf-8") for k, _ in tx.iterate(CATALOG, prefix_successor(CATALOG), False)
            ]
        return sorted(names)

    def drop(self, name: str, *, missing_ok: bool = False) -> None:
        """Drop table ``name`` and all its rows and index entries."""
        with self._tx() as tx:
            if tx.get(catalog_key(name)) is None:
                if missing_ok:
                    return
                raise TableNotFoundError(f"table {name!r} does not exist")
            layout = tx.layout(name)
            tx.feed_touched = layout.spec.changes  # its watchers end
            tx.forget_layout(name)
            tx.delete_prefix(layout.prefix)

    def verify(self, name: str) -> list[str]:
        """Check every row decodes and every index entry matches its row (both ways)."""
        with self._tx() as tx:
            return verify_table(tx, name)


def _create_in(tx: KvTransaction, spec: TableSpec) -> None:
    raw = tx.get(NEXT_ID)
    table_id = 1 if raw is None else int(unpack(raw))
    tx.put(NEXT_ID, pack(table_id + 1))
    tx.save_layout(Layout(spec, list(spec.columns), table_id))


def _check_spec(spec: Any) -> None:
    if not isinstance(spec, TableSpec):
        raise SchemaError(f"expected a TableSpec, got {type(spec).__name__}")
    validate_name(spec.name, "table")

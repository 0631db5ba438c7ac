"""Adding indexes to a table in pieces, for stores whose commits are bounded (etcd).

A schema change that adds an index writes an entry for every row. In one commit that
is atomic, but a store that takes a bounded number of operations per commit refuses
it for a table of more than about a hundred rows (etcd's default 128). Then the index
is built in three steps, each its own commit:

1. The catalog entry lists the new index as *building* (:attr:`Layout.building`) and
   takes the rest of the change: from here on every write keeps the index's entries,
   as for any index, while reads do not use it (it is not in the spec).
2. Pieces of rows in key order, each a commit that reads them and puts their entries
   (cut smaller while the store refuses one). A row written meanwhile has its entry
   already; the optimistic stores check at commit that the rows a piece read did not
   change, so no piece writes an entry for a value that is gone.
3. The catalog entry moves the index from building into the spec: readers use it.

A build stopped part-way leaves the index building (kept up by writers, unused by
reads); the same schema change run again builds it again from the first row (its
puts are idempotent) and finishes it.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from functools import partial
from itertools import islice

from spi.codec import prefix_successor
from spi.errors import ConflictError
from spi.fitting import Fitting
from spi.kv.layout import Layout
from spi.kv.transaction import KvTransaction
from spi.spec import SchemaChange, TableSpec


def with_indexes(spec: TableSpec, indexes: list[str]) -> TableSpec:
    """``spec`` with ``indexes`` as its indexes (frozen state kept)."""
    built = TableSpec(spec.name, spec.fields, spec.primary_key, indexes, changes=spec.changes, ttl=spec.ttl)
    return built.with_frozen(spec.frozen)


def start_build(tx: KvTransaction, old: Layout, spec: TableSpec, change: SchemaChange) -> tuple[int, tuple[str, ...]]:
    """Step 1 in ``tx``: apply ``change`` with its added indexes building; the table id
    and the indexes to build."""
    for column in change.dropped_indexes:
        tx.delete_prefix(old.index_prefix(column))
    added = change.added_indexes
    meanwhile = with_indexes(spec, [i for i in spec.indexes if i not in added]).with_frozen(old.spec.frozen)
    building = (*(b for b in old.building if b not in added and b in spec.columns), *added)
    columns = old.columns + [f.name for f in change.added_fields]
    tx.save_layout(Layout(meanwhile, columns, old.table_id, building))
    return old.table_id, added


def fill(
    transaction: Callable[[], AbstractContextManager[KvTransaction]],
    name: str,
    table_id: int,
    columns: tuple[str, ...],
    piece: int,
) -> None:
    """Step 2: put the entries of the indexes ``columns`` for every row, ``piece`` rows
    a commit at first (fewer while the store refuses one: :class:`Fitting`)."""
    fitting = Fitting()
    after: bytes | None = None
    while True:
        _, (last, full) = fitting.attempt(piece, partial(_fill_piece, transaction, name, table_id, columns, after))
        if not full:
            return
        after = last


def _fill_piece(
    transaction: Callable[[], AbstractContextManager[KvTransaction]],
    name: str,
    table_id: int,
    columns: tuple[str, ...],
    after: bytes | None,
    rows: int,
) -> tuple[bytes | None, bool]:
    """One commit putting the entries of up to ``rows`` rows after the row key
    ``after``: the last row key it reached, and whether it took ``rows`` rows (more may
    follow)."""
    done, last = 0, None
    with transaction() as tx:
        layout = _still_building(tx, name, table_id, columns)
        lo = layout.row_prefix if after is None else after + b"\x00"
        for key, raw in islice(tx.iterate(lo, prefix_successor(layout.row_prefix), False), rows):
            row = layout.decode_row(raw)
            enc = key[len(layout.row_prefix) :]
            for column in columns:
                tx.put(layout.index_key(column, row.values[column], enc), b"")
            done, last = done + 1, key
    return last, done == rows


def finish_build(tx: KvTransaction, name: str, table_id: int, columns: tuple[str, ...], spec: TableSpec) -> None:
    """Step 3 in ``tx``: the built indexes join the spec (in ``spec``'s order when the
    table was not changed meanwhile)."""
    layout = _still_building(tx, name, table_id, columns)
    wanted = [i for i in spec.indexes if i in layout.spec.indexes or i in columns]
    wanted += [i for i in (*layout.spec.indexes, *columns) if i not in wanted]
    rest = tuple(b for b in layout.building if b not in columns)
    tx.save_layout(Layout(with_indexes(layout.spec, wanted), layout.columns, table_id, rest))


def _still_building(tx: KvTransaction, name: str, table_id: int, columns: tuple[str, ...]) -> Layout:
    """The table's layout, which must still be the one building ``columns``."""
    layout = tx.layout(name)
    if layout.table_id != table_id or any(c not in layout.building for c in columns):
        raise ConflictError(
            f"table {name!r} was dropped, swapped or altered while its index was built; run the change again"
        )
    return layout

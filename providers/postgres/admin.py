"""Table management: the catalog and transactional DDL.

DDL runs at READ COMMITTED under a transaction-scoped advisory lock on the schema,
so concurrent ``create_or_update`` calls (other processes, other hosts) apply one
after the other, each seeing what the previous one committed; data transactions
stay SERIALIZABLE and the DDL's table locks order them against schema changes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.schema import CreateIndex, CreateTable, DropTable

from providers.postgres.database import PgDatabase
from providers.postgres.feed import ensure_feed, touch
from providers.postgres.overwrite import record_swap
from providers.postgres.schema import (
    EXPIRES,
    VERSION,
    catalog_fingerprint,
    expiry_index_name,
    index_name,
    pkey_name,
    qualified,
    sql_type,
)
from providers.postgres.table import PgTable
from providers.postgres.transaction import PgTransaction, begin, holds_catalog
from spi.errors import ConflictError, SchemaError, TableExistsError, TableNotFoundError
from spi.provider import Admin
from spi.spec import TableSpec, plan_schema_change, validate_name
from spi.staging import check_swappable, is_hidden, new_staging_name, stages, staging_base

SWEEP_BATCH = 1000
"""Expired rows a sweep removes per transaction."""

T = TypeVar("T")


class PgAdmin(Admin):
    """Catalog reads and DDL, each call its own transaction."""

    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    @contextmanager
    def _ddl(self) -> Iterator[PgTransaction]:
        with begin(self._db, isolation="READ COMMITTED") as tx:
            tx.lock_ddl()
            yield tx

    def _row(self, tx: PgTransaction, name: str) -> Any:
        catalog = self._db.catalog
        return tx.execute(catalog.select().where(catalog.c.name == name)).first()

    def _save(self, tx: PgTransaction, spec: TableSpec, *, new: bool) -> None:
        catalog = self._db.catalog
        values = {"spec": spec.to_catalog(), "fingerprint": catalog_fingerprint(spec)}
        if new:
            tx.execute(catalog.insert().values(name=spec.name, **values))
        else:
            tx.execute(catalog.update().where(catalog.c.name == spec.name).values(**values))

    def _create_in(self, tx: PgTransaction, spec: TableSpec) -> None:
        table = self._db.table_sql(spec).table
        if tx.relation_exists(self._db.schema, spec.name):
            raise TableExistsError(
                f"schema {self._db.schema!r} already has a table {spec.name!r} that kvctl did not create"
            )
        tx.execute(CreateTable(table))
        for index in sorted(table.indexes, key=lambda i: str(i.name)):
            tx.execute(CreateIndex(index))
        if spec.changes:
            ensure_feed(tx, self._db.schema)
        self._save(tx, spec.with_frozen(False), new=True)  # a new table is never frozen

    def create(self, spec: TableSpec) -> None:
        """Create a table; :class:`TableExistsError` if it exists."""
        _check_spec(spec)
        with self._ddl() as tx:
            if self._row(tx, spec.name) is not None:
                raise TableExistsError(f"table {spec.name!r} already exists")
            self._create_in(tx, spec)

    def create_or_update(self, spec: TableSpec) -> None:
        """Create, no-op for an equal spec, or apply a compatible change in one transaction."""
        _check_spec(spec)
        with self._ddl() as tx:
            row = self._row(tx, spec.name)
            if row is None:
                self._create_in(tx, spec)
                return
            old = TableSpec.from_catalog(row.spec)
            change = plan_schema_change(old, spec)
            if change.empty:
                return
            spec = spec.with_frozen(old.frozen)  # a frozen table stays frozen
            if spec.changes:
                ensure_feed(tx, self._db.schema)
            if old.changes:
                touch(tx, self._db.schema)  # its watchers look again
            table = self._db.table_sql(spec).table
            schema = self._db.schema
            name = qualified(tx.dialect, schema, spec.name)
            for column in change.dropped_indexes:
                tx.execute(sa.text(f"DROP INDEX {qualified(tx.dialect, schema, index_name(spec.name, column))}"))
            for field in change.added_fields:
                added = qualified(tx.dialect, field.name)
                tx.execute(sa.text(f"ALTER TABLE {name} ADD COLUMN {added} {_type_sql(tx, field.type)}"))
            for field in change.widened:
                widened = qualified(tx.dialect, field.name)
                tx.execute(sa.text(f"ALTER TABLE {name} ALTER COLUMN {widened} TYPE {_type_sql(tx, field.type)}"))
            for index in sorted(table.indexes, key=lambda i: str(i.name)):
                if any(str(index.name) == index_name(spec.name, c) for c in change.added_indexes):
                    tx.execute(CreateIndex(index))
            self._save(tx, spec, new=False)

    def exists(self, name: str) -> bool:
        """True if table ``name`` exists."""
        with begin(self._db) as tx:
            return self._row(tx, name) is not None

    def get_spec(self, name: str) -> TableSpec:
        """The spec of table ``name``."""
        with begin(self._db) as tx:
            return tx.spec(name)

    def list_tables(self) -> list[str]:
        """Every table name, sorted by code point; none for a provider opened with
        ``create=False`` on a schema kvctl never wrote to (nothing is created)."""
        if not self._db.create and not holds_catalog(self._db):
            return []
        catalog = self._db.catalog
        with begin(self._db) as tx:
            names = [r[0] for r in tx.execute(sa.select(catalog.c.name)).fetchall()]
        return sorted(n for n in names if not is_hidden(n))

    def drop(self, name: str, *, missing_ok: bool = False) -> None:
        """Drop table ``name`` with its rows and indexes."""
        with self._ddl() as tx:
            row = self._row(tx, name)
            if row is None:
                if missing_ok:
                    return
                raise TableNotFoundError(f"table {name!r} does not exist")
            self._drop_in(tx, TableSpec.from_catalog(row.spec))

    def _drop_in(self, tx: PgTransaction, spec: TableSpec) -> None:
        tx.execute(DropTable(self._db.table_sql(spec).table, if_exists=True))
        if spec.changes:
            touch(tx, self._db.schema, dropped=spec.name)  # its events go; its watchers end
        catalog = self._db.catalog
        tx.execute(catalog.delete().where(catalog.c.name == spec.name))

    def create_staging(self, name: str) -> str:
        """A new empty hidden table with ``name``'s spec (earlier ones of ``name`` dropped)."""
        validate_name(name, "table")
        staging = new_staging_name(name)
        catalog = self._db.catalog
        with self._ddl() as tx:
            spec = tx.spec(name)
            spec.check_writable()  # a frozen table's rows are not replaced: refused before anything is loaded
            starts = catalog.c.name.startswith(staging_base(name) + "_", autoescape=True)
            for leftover, leftover_spec in tx.execute(
                sa.select(catalog.c.name, catalog.c.spec).where(starts)
            ).fetchall():
                if stages(leftover, name):
                    self._drop_in(tx, TableSpec.from_catalog(leftover_spec))
            self._create_in(tx, spec.renamed(staging))
        return staging

    def swap_rows(self, name: str, other: str) -> None:
        """Exchange the two tables' rows in one transaction: the tables (with their
        primary key constraints and indexes) trade names; the catalog stays as it is. A
        change-fed table's events are added first (:mod:`providers.postgres.overwrite`)."""
        with self._ddl() as tx:
            first, second = tx.spec(name), tx.spec(other)
            check_swappable(first, second)
            if name == other:
                return
            if first.changes or second.changes:
                record_swap(tx, self._db.schema, self._db.table_sql(first), self._db.table_sql(second))
            _rename(tx, self._db.schema, first, name, _PARKED)
            _rename(tx, self._db.schema, first, other, name)
            _rename(tx, self._db.schema, first, _PARKED, other)

    def sweep(self, name: str) -> int:
        """Remove the table's expired rows now, in transactions of up to
        :data:`SWEEP_BATCH` rows; how many were removed."""
        removed = 0
        while True:
            n, more = _retried(lambda: self._sweep_some(name))  # a writer touched the same rows: look again
            removed += n
            if not more:
                return removed

    def _sweep_some(self, name: str) -> tuple[int, bool]:
        with begin(self._db) as tx:
            table = tx.table(name)
            assert isinstance(table, PgTable)
            return table.sweep(SWEEP_BATCH)

    def freeze(self, name: str) -> None:
        """Make the table refuse row writes: the flag in its catalog row, which also
        changes the row's fingerprint, so every single-statement write built before
        (in any process) stops matching at once and the general path finds the table
        frozen.

        The freeze is SERIALIZABLE: it waits for the transactions that have written
        the table to end (``LOCK TABLE … IN SHARE MODE``, held to its commit, so writes
        meanwhile wait) and reads the table (a predicate lock on all of it), so a
        transaction that read the catalog before the freeze and writes the table after
        it fails with a conflict (retried, it finds the table frozen) rather than
        committing after ``freeze`` returned."""
        _retried(lambda: self._set_frozen(name, True))

    def unfreeze(self, name: str) -> None:
        """Allow the table's row writes again."""
        _retried(lambda: self._set_frozen(name, False))

    def _set_frozen(self, name: str, frozen: bool) -> None:
        with begin(self._db) as tx:
            tx.lock_ddl()
            spec = tx.spec(name)
            if spec.frozen == frozen:
                return
            if frozen:
                table = qualified(tx.dialect, self._db.schema, name)
                tx.execute(sa.text(f"LOCK TABLE {table} IN SHARE MODE"))
                tx.execute(sa.text(f"SELECT FROM {table} LIMIT 1"))
            self._save(tx, spec.with_frozen(frozen), new=False)

    def verify(self, name: str) -> list[str]:
        """Compare the catalog spec with the real table: columns, types, key, indexes."""
        problems: list[str] = []
        with begin(self._db) as tx:
            spec = tx.spec(name)
            expected = self._db.table_sql(spec).table
            actual = _reflect(tx, self._db.schema, name)
            if actual is None:
                return [f"table {name!r} is in the catalog but missing from schema {self._db.schema!r}"]
            columns, key, indexes = actual
            for f in spec.fields:
                want = _type_sql(tx, f.type)
                got = columns.get(f.name)
                if got is None:
                    problems.append(f"column {f.name!r} is missing")
                elif got != want:
                    problems.append(f"column {f.name!r} is {got}, expected {want}")
            if columns.get(VERSION) != "BIGINT":
                problems.append(f"version column {VERSION!r} is missing or not bigint")
            if columns.get(EXPIRES) != "TIMESTAMP WITH TIME ZONE":
                problems.append(f"expiry column {EXPIRES!r} is missing or not timestamptz")
            if key != list(spec.primary_key):
                problems.append(f"primary key is ({', '.join(key)}), expected ({', '.join(spec.primary_key)})")
            for index in expected.indexes:
                if str(index.name) not in indexes:
                    problems.append(f"index {index.name!r} is missing")
        return problems


_PARKED = "kv_swap"
"""Where :meth:`PgAdmin.swap_rows` parks a table for a moment (no user or staging
table can have the name, and the rename is undone before the transaction ends)."""


def _rename(tx: PgTransaction, schema: str, spec: TableSpec, source: str, target: str) -> None:
    """Rename the table ``source`` (with ``spec``'s fields, key and indexes) to
    ``target``, with its primary key constraint and indexes (named after the table)."""
    q = functools.partial(qualified, tx.dialect)
    tx.execute(sa.text(f"ALTER TABLE {q(schema, source)} RENAME TO {q(target)}"))
    tx.execute(
        sa.text(f"ALTER TABLE {q(schema, target)} RENAME CONSTRAINT {q(pkey_name(source))} TO {q(pkey_name(target))}")
    )
    renamed = [(index_name(source, column), index_name(target, column)) for column in spec.indexes]
    for old, new in [*renamed, (expiry_index_name(source), expiry_index_name(target))]:
        tx.execute(sa.text(f"ALTER INDEX {q(schema, old)} RENAME TO {q(new)}"))


def _retried(work: Callable[[], T], attempts: int = 10) -> T:
    """``work()``, run again after a :class:`ConflictError` up to ``attempts`` times."""
    attempt = 0
    while True:
        try:
            return work()
        except ConflictError:
            attempt += 1
            if attempt > attempts:
                raise


def _type_sql(tx: PgTransaction, ftype: Any) -> str:
    return str(sql_type(ftype).compile(dialect=tx.dialect))


def _reflect(tx: PgTransaction, schema: str, name: str) -> tuple[dict[str, str], list[str], set[str]] | None:
    inspector = tx.inspector()
    with tx.errors():
        if not inspector.has_table(name, schema=schema):
            return None
        columns = {
            c["name"]: str(c["type"].compile(dialect=tx.dialect)) for c in inspector.get_columns(name, schema=schema)
        }
        key = list(inspector.get_pk_constraint(name, schema=schema)["constrained_columns"])
        indexes = {str(i["name"]) for i in inspector.get_indexes(name, schema=schema)}
    return columns, key, indexes


def _check_spec(spec: Any) -> None:
    if not isinstance(spec, TableSpec):
        raise SchemaError(f"expected a TableSpec, got {type(spec).__name__}")
    validate_name(spec.name, "table", internal=True)


__all__ = ["PgAdmin"]

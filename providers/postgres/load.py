"""The bulk load path: COPY (binary) straight into the table, or into a temporary
table followed by one ``INSERT ... SELECT ... ON CONFLICT`` with the same version
arithmetic as one upsert/insert/replace per row.

A batch none of whose keys is taken is copied straight into the table (every row is
new: version 1), under a savepoint that the first key taken rolls back (a unique
violation); then it goes through a temporary table. A batch with a
key twice keeps the sequential per-row path, so later rows see earlier ones. Both
COPYs send the batch's tuples as they are (values, then version 1); a load that keeps
versions sends each row's own version instead and sets it on a conflict too. A load
whose rows expire sends their expiry too. A batch that meets a taken key while its key
range holds an expired row not swept yet takes the per-row path, which sweeps it first
(as every write that meets one does: its version starts again at 1, its ``"expire"``
event is recorded); a batch COPYed as new meets no row, so that range is not scanned.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable
from typing import Any, Protocol

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert

from providers.postgres.batch import LoadBatch
from providers.postgres.copy_arrow import SIGNATURE, TRAILER, copy_data, int8_field, timestamp_field
from providers.postgres.schema import EXPIRES, VERSION, type_name
from providers.postgres.session import PgSession
from spi.codec import to_micros
from spi.errors import KvError, RowExistsError
from spi.keys import ResolvedRange
from spi.spec import TableSpec
from spi.textvalues import key_words
from spi.validate import validate_row


class LoadTarget(Protocol):
    """What :func:`load_batch` needs of the table it loads (a ``PgTable``)."""

    spec: TableSpec

    @property
    def session(self) -> PgSession: ...

    @property
    def sql_table(self) -> sa.Table: ...

    def expired_between(self, span: ResolvedRange) -> bool: ...


def load_batch(
    table: LoadTarget,
    batch: LoadBatch,
    mode: str,
    sequential: Callable[[list[dict[str, Any]], str], None],
    versions: list[int] | None,
    expiries: list[dt.datetime | None] | None,
    *,
    written: Callable[[list[Any], list[Any], bool], None] | None = None,
) -> None:
    """Write a validated batch into ``table`` exactly like one write per row, in bulk
    (``sequential`` writes a batch row by row: one that repeats a key, or meets an
    expired row); with ``versions``, row ``i`` is written with version ``versions[i]``,
    with ``expiries`` expiring at ``expiries[i]``. ``written``, if given, gets the
    batch's keys and every row written, for a change feed's events: the rows as given
    (``True``: every column in spec order, then the version, in input order) when the
    batch was one plain insert, else as the table now holds them (``False``: every
    column, then the version and the expiry, as fetched, in any order)."""
    tx, spec, target = table.session, table.spec, table.sql_table
    try_new = True
    if written is None and versions is None:
        copied = _copied_arrow(table, batch, None if expiries is None else expiries[0])  # one expiry for all
        if copied:
            return
        try_new = copied is None  # False: a key of the batch is taken, or repeated in it
    if not _prepared_for(spec, batch):
        batch = _revalidated(spec, batch)
    keys = batch.keys()
    groups = list(batch.groups(mode))
    span = _span(batch, keys)
    # A batch COPYed as new in one go meets no row, expired or not: its key range is
    # scanned for expired rows (a scan that grows with the table) only when its COPY
    # fails on a taken key, or when it takes several. A change-fed batch of several
    # groups (a partial upsert's column sets) goes row by row: its events need each
    # row's prev, which only a single group's failed COPY hands back to that path.
    if len(set(keys)) < len(keys) or (len(groups) > 1 and (written is not None or table.expired_between(span))):
        sequential(batch.dicts(), mode)
        return
    returned: list[Any] | None = None if written is None else []
    as_given = False
    try:
        for columns, positions, rows in groups:
            group_keys = keys if len(positions) == len(keys) else [keys[i] for i in positions]
            if versions is not None:
                rows = [(*row[:-1], versions[i]) for row, i in zip(rows, positions)]
            if expiries is not None:
                rows = [(*row, expiries[i]) for row, i in zip(rows, positions)]
            as_given = _load_group(
                tx,
                spec,
                target,
                columns,
                rows,
                batch,
                group_keys,
                mode,
                returned,
                kept=versions is not None,
                expiring=expiries is not None,
                expired=(lambda: table.expired_between(span)) if len(groups) == 1 else None,
                try_new=try_new,
            )
    except _MetExpired:
        sequential(batch.dicts(), mode)
        return
    if written is not None and returned is not None:
        written(keys, returned, as_given)


def load_new(
    table: LoadTarget,
    batch: LoadBatch,
    mode: str,
    expires: dt.datetime | None,
    written: Callable[[list[Any], list[Any], bool], None] | None = None,
) -> bool:
    """Write a validated batch as new rows (version 1, expiring at ``expires``) in one
    COPY if none of its keys is taken, expired or not (True); else write nothing
    (False), as for a batch that repeats a key or sets different columns in different
    rows. New rows are what any mode writes for keys not taken. ``written`` gets what
    :func:`load_batch` gives it."""
    if written is None:
        copied = _copied_arrow(table, batch, expires)
        if copied is not None:
            return copied
    tx, spec, target = table.session, table.spec, table.sql_table
    if not _prepared_for(spec, batch):
        batch = _revalidated(spec, batch)
    keys = batch.keys()
    groups = list(batch.groups(mode))
    if len(groups) != 1 or len(set(keys)) < len(keys):
        return False
    columns, _, rows = groups[0]
    if expires is not None:
        rows = [(*row, expires) for row in rows]
    names, types = _layout(spec, columns, expiring=expires is not None)
    if not _copied_as_new(tx, target, names, types, rows):
        return False
    if written is not None:
        new, as_given = _as_written(spec, columns, rows, expiring=expires is not None, whole=columns == spec.columns)
        written(keys, new, as_given)
    return True


def _as_written(
    spec: TableSpec, columns: tuple[str, ...], rows: list[tuple[Any, ...]], *, expiring: bool, whole: bool
) -> tuple[list[Any], bool]:
    """The rows a COPY as new wrote (tuples of ``columns``, the version, the expiry when
    ``expiring``), for a change feed's events: as given when they are ``whole`` (every
    column, the whole batch: True), else every column (null where ``columns`` has
    none), the version and the expiry (False)."""
    if whole:
        return rows, True
    n = len(columns)
    at = {c: i for i, c in enumerate(columns)}  # a partial upsert group: the other columns are null
    return [
        [*(r[at[c]] if c in at else None for c in spec.columns), r[n], r[n + 1] if expiring else None] for r in rows
    ], False


class _MetExpired(Exception):
    """A batch's key range holds an expired row not swept yet (and nothing of the batch
    is written): it takes the per-row path, which sweeps what it meets."""


def _span(batch: LoadBatch, keys: list[Any]) -> ResolvedRange:
    """The key range from the smallest to the largest of ``keys``."""
    return ResolvedRange(batch.key_tuple(min(keys)), True, batch.key_tuple(max(keys)), True)


def _prepared_for(spec: TableSpec, batch: LoadBatch) -> bool:
    """Whether ``batch`` was validated for ``spec`` as it is (else the table changed since)."""
    return batch.spec is spec or (batch.spec == spec and batch.spec.columns == spec.columns)


def _revalidated(spec: TableSpec, batch: LoadBatch) -> LoadBatch:
    """A batch prepared for another spec (the table changed since), validated anew."""
    rows: list[Any] = []
    for i, row in enumerate(batch.dicts()):
        try:
            rows.append(validate_row(spec, row))
        except KvError as exc:
            exc.row_index = i
            raise
    return LoadBatch(spec, rows)


def _load_group(
    tx: PgSession,
    spec: TableSpec,
    target: sa.Table,
    columns: tuple[str, ...],
    rows: list[tuple[Any, ...]],
    batch: LoadBatch,
    keys: list[Any],
    mode: str,
    returned: list[Any] | None,
    *,
    kept: bool,
    expiring: bool,
    expired: Callable[[], bool] | None,
    try_new: bool = True,
) -> bool:
    """One group of a batch (tuples of ``columns``, the version, and the expiry when
    ``expiring``); ``returned`` (when not None: a change-fed batch, which is one
    group) gets the rows inserted: as given when they are complete (then True), else
    every column, then the version and the expiry. Raises :class:`_MetExpired`, having
    written nothing, when a key is taken and ``expired`` (if given) says the batch's
    key range holds an expired row, or, for a change-fed batch, whenever a key is
    taken (its events need each row's prev: the per-row path gives them). Without
    ``try_new`` (a COPY as new of the batch failed already) it goes straight to the
    temporary table."""
    names, types = _layout(spec, columns, expiring=expiring)
    if try_new and _copied_as_new(tx, target, names, types, rows):
        # Every row was an insert (at version 1, or its own).
        if returned is None:
            return False
        whole = columns == spec.columns and len(rows) == len(batch.rows)
        new, as_given = _as_written(spec, columns, rows, expiring=expiring, whole=whole)
        returned.extend(new)
        return as_given
    if expired is not None and (returned is not None or expired()):
        raise _MetExpired  # also a change-fed batch over taken keys: per row, each event with its prev
    temp = _temp_table(tx, target, tuple(names))
    _copy(tx, None, temp.name, names, types, rows)
    if mode == "insert":
        _refuse_existing(tx, spec, target, temp, batch, keys)
    select = sa.select(*(temp.c[c] for c in names))
    stmt = pg_insert(target).from_select(names, select)
    if mode != "insert":
        changed = columns if mode == "upsert" else spec.columns
        values: dict[str, Any] = {c: stmt.excluded[c] for c in changed if not spec.is_key(c)}
        values[VERSION] = stmt.excluded[VERSION] if kept else target.c[VERSION] + 1
        values[EXPIRES] = stmt.excluded[EXPIRES] if expiring else None
        stmt = stmt.on_conflict_do_update(index_elements=[target.c[k] for k in spec.primary_key], set_=values)
    tx.execute(stmt)  # not change-fed: a fed batch over taken keys went row by row (see the raise above)
    return False


def _layout(spec: TableSpec, columns: tuple[str, ...], *, expiring: bool) -> tuple[list[str], list[str]]:
    """The columns a COPY of tuples of ``columns`` writes (then the version, and the
    expiry when ``expiring``), and their binary COPY types."""
    names = [*columns, VERSION, *([EXPIRES] if expiring else [])]
    types = [*(type_name(spec.type_of(c)) for c in columns), "int8", *(["timestamptz"] if expiring else [])]
    return names, types


def _copied_as_new(
    tx: PgSession, target: sa.Table, columns: list[str], types: list[str], rows: list[tuple[Any, ...]]
) -> bool:
    """COPY the rows straight into the table if none of their keys is taken (True),
    else write nothing (False): the COPY runs under a savepoint that the first key taken
    (a unique violation) rolls back. (Asking first whether the batch's key range is
    empty cost a range scan per batch and said no to every batch of a file in date
    order, whose batches' key ranges overlap.)"""
    return _copy(tx, target.schema, target.name, columns, types, rows, unless_taken=True)


def _copied_arrow(table: LoadTarget, batch: LoadBatch, expires: dt.datetime | None) -> bool | None:
    """COPY a batch that came as Arrow straight into the table as new rows (version 1,
    expiring at ``expires``), its Arrow buffers encoded as they are
    (:mod:`providers.postgres.copy_arrow`): True if none of its keys was taken or
    repeated, else False (nothing written); None when it cannot go this way (it came
    as rows, for another spec, or its types have no encoding there)."""
    spec = table.spec
    if batch.arrow is None or not _prepared_for(spec, batch):
        return None
    trailing = int8_field(1) + (b"" if expires is None else timestamp_field(to_micros(expires)))
    names, types = _layout(spec, spec.columns, expiring=expires is not None)
    data = copy_data(batch.arrow, trailing, len(names))
    if data is None:
        return None
    target = table.sql_table
    return _copy(table.session, target.schema, target.name, names, types, data, unless_taken=True)


def _refuse_existing(
    tx: PgSession, spec: TableSpec, target: sa.Table, temp: sa.Table, batch: LoadBatch, keys: list[Any]
) -> None:
    """Raise :class:`RowExistsError` for the first row (in input order) whose key is taken."""
    key_columns = [temp.c[k] for k in spec.primary_key]
    on_key = sa.and_(*(temp.c[k] == target.c[k] for k in spec.primary_key))
    cursor = tx.query(sa.select(*key_columns).join(target, on_key))
    with tx.errors():
        taken = set(cursor.fetchall())  # binary: values exactly as validated (real too)
    cursor.close()
    if taken:
        key = next(batch.key_tuple(k) for k in keys if batch.key_tuple(k) in taken)
        raise RowExistsError(f"a row with key {key_words(spec, key)} already exists in {spec.name!r}", key=key)


def _temp_table(tx: PgSession, target: sa.Table, columns: tuple[str, ...]) -> sa.Table:
    temp = sa.Table(
        tx.temp_name(),
        sa.MetaData(),
        *(sa.Column(target.c[c].name, target.c[c].type) for c in columns),
        prefixes=["TEMPORARY"],
        postgresql_on_commit="DROP",
    )
    tx.execute(sa.schema.CreateTable(temp))
    return temp


def _copy(
    tx: PgSession,
    schema: str | None,
    name: str,
    columns: list[str],
    types: list[str],
    rows: list[tuple[Any, ...]] | memoryview,
    *,
    unless_taken: bool = False,
) -> bool:
    """COPY ``rows`` (tuples, or binary COPY tuples of :func:`copy_data`) into a table
    (True); with ``unless_taken``, under a savepoint that a key already taken rolls back
    (then False: nothing written)."""
    import psycopg
    from psycopg import sql

    target = sql.Identifier(name) if schema is None else sql.Identifier(schema, name)
    statement = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)").format(
        target, sql.SQL(", ").join(sql.Identifier(c) for c in columns)
    )
    conn = tx.driver_connection()
    with tx.errors():
        try:
            with (
                conn.transaction() if unless_taken else contextlib.nullcontext(),
                conn.cursor() as cursor,
                cursor.copy(statement) as copy,
            ):
                if isinstance(rows, memoryview):
                    copy.write(SIGNATURE)
                    copy.write(rows)
                    copy.write(TRAILER)
                else:
                    copy.set_types(types)
                    write = copy.write_row
                    for row in rows:
                        write(row)
        except psycopg.errors.UniqueViolation:
            if not unless_taken:
                raise
            return False
    return True

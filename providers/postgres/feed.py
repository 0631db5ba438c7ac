"""The write side of PostgreSQL change feeds: the feed's two tables, the events a
transaction collects, and recording them in the writing transaction.

- ``kv_revision``: one row, the schema's revision counter and the revision the feed
  is compacted through;
- ``kv_changes``: one row per event, keyed by (revision, seq): the table, the op,
  the key (the order-preserving key encoding of :mod:`spi.codec`, so a key or prefix
  filter is a byte range), the row after the write (msgpack ``{column: value}``) and
  its version, the commit time.

A transaction that wrote a change-fed table updates the counter row just before it
commits, inserts its events with the new revision (COPY) and sends a NOTIFY, all in
itself. The counter's row lock is held until the commit, so a second writer's update
waits for the first to commit (and, at SERIALIZABLE, fails as a conflict and is
retried): revisions follow commit order, and a reader that has seen revision R sees
every transaction up to R. The cost: change-fed writers of one schema commit one at a
time (they still run their statements concurrently until the commit).
"""

from __future__ import annotations

import functools
from typing import Any

import msgspec
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as pg

from providers.postgres.schema import derived_name, qualified, quoted
from providers.postgres.session import PgSession
from spi.codec import encode_key
from spi.spec import TableSpec

CHANGES = "kv_changes"
REVISION = "kv_revision"
OP_PUT, OP_DELETE, OP_EXPIRE, OP_DROP = 0, 1, 2, 3
"""Stored ops: positions in :data:`spi.changes.OPS`, and a dropped table's marker
(which ends its watchers; ``changes`` skips it)."""

Event = tuple[str, int, bytes, bytes | None, int | None]
"""A collected event: (table, op, encoded key, packed row or None, version or None)."""

_pack = msgspec.msgpack.Encoder().encode


@functools.lru_cache(maxsize=16)
def feed_tables(schema: str) -> tuple[sa.Table, sa.Table]:
    """The ``kv_changes`` and ``kv_revision`` tables of ``schema``."""
    metadata = sa.MetaData(schema=quoted(schema))
    changes = sa.Table(
        CHANGES,
        metadata,
        sa.Column("revision", sa.BigInteger, primary_key=True),
        sa.Column("seq", sa.Integer, primary_key=True),
        sa.Column("table_name", sa.Text(collation="C"), nullable=False),
        sa.Column("op", sa.SmallInteger, nullable=False),
        sa.Column("key", pg.BYTEA, nullable=False),
        sa.Column("row", pg.BYTEA),
        sa.Column("version", sa.BigInteger),
        sa.Column("time", pg.TIMESTAMP(timezone=True), nullable=False),
    )
    revision = sa.Table(
        REVISION,
        metadata,
        sa.Column("id", sa.SmallInteger, primary_key=True),
        sa.Column("revision", sa.BigInteger, nullable=False),
        sa.Column("compacted", sa.BigInteger, nullable=False),
    )
    return changes, revision


def channel(schema: str) -> str:
    """The NOTIFY channel of ``schema``'s feed."""
    return derived_name("kvctl_changes", schema)


def ensure_feed(tx: PgSession, schema: str) -> None:
    """Create the feed's tables if missing (the caller holds the DDL lock)."""
    changes, revision = feed_tables(schema)
    tx.execute(sa.schema.CreateTable(changes, if_not_exists=True))
    tx.execute(sa.schema.CreateTable(revision, if_not_exists=True))
    tx.execute(pg.insert(revision).values(id=1, revision=0, compacted=0).on_conflict_do_nothing())
    # Retention finds the newest event older than its cutoff with one probe of this index.
    index = qualified(tx.dialect, derived_name("kv_changes_time", schema))
    tx.execute(sa.text(f"CREATE INDEX IF NOT EXISTS {index} ON {qualified(tx.dialect, schema, CHANGES)} (time)"))


def put_event(spec: TableSpec, key: tuple[Any, ...], values: dict[str, Any], version: int) -> Event:
    """The event of a write that left ``values`` at ``version`` under ``key``."""
    return (spec.name, OP_PUT, encode_key(spec.key_types, key), _pack(values), version)


def delete_event(spec: TableSpec, key: tuple[Any, ...], op: int = OP_DELETE) -> Event:
    """The event of the removal of the row under ``key`` (``op``: a delete or an expiry)."""
    return (spec.name, op, encode_key(spec.key_types, key), None, None)


def next_revision(tx: PgSession, schema: str) -> tuple[int, Any]:
    """Take the next revision (row-locking the counter until the commit); it and the
    server's clock."""
    _, revision = feed_tables(schema)
    stmt = (
        sa.update(revision)
        .where(revision.c.id == 1)
        .values(revision=revision.c.revision + 1)
        .returning(revision.c.revision, sa.func.clock_timestamp())
    )
    number, now = tx.execute(stmt).one()
    return int(number), now


SMALL = 64
"""Up to this many events are recorded by one statement; more by a COPY."""


def record(tx: PgSession, schema: str, events: list[Event]) -> int:
    """Record ``events`` under the next revision, in ``tx``; the revision."""
    if len(events) > SMALL:
        return _record_many(tx, schema, events)
    return _record_few(tx, schema, events)


def _record_many(tx: PgSession, schema: str, events: list[Event]) -> int:
    """Take the revision, COPY the events, notify (a bulk load's batch)."""
    from psycopg import sql

    number, now = next_revision(tx, schema)
    statement = sql.SQL(
        "COPY {} (revision, seq, table_name, op, key, row, version, time) FROM STDIN (FORMAT BINARY)"
    ).format(sql.Identifier(schema, CHANGES))
    with tx.errors(), tx.driver_connection().cursor() as cursor, cursor.copy(statement) as copy:
        copy.set_types(["int8", "int4", "text", "int2", "bytea", "bytea", "int8", "timestamptz"])
        for seq, (table, op, key, row, version) in enumerate(events, 1):
            copy.write_row((number, seq, table, op, key, row, version, now))
    notify(tx, schema, number)
    return number


def _record_few(tx: PgSession, schema: str, events: list[Event]) -> int:
    """One statement, one round trip: take the revision, insert the events from
    arrays, notify."""
    from psycopg import sql

    statement = sql.SQL(
        "WITH r AS (UPDATE {revision} SET revision = revision + 1 WHERE id = 1"
        " RETURNING revision, clock_timestamp() AS at),"
        " n AS (SELECT pg_notify({channel}, r.revision::text) FROM r)"
        " INSERT INTO {changes} (revision, seq, table_name, op, key, row, version, time)"
        " SELECT r.revision, e.seq, e.name, e.op, e.key, e.row, e.version, r.at FROM r, n,"
        " unnest(%s::int4[], %s::text[], %s::int2[], %s::bytea[], %s::bytea[], %s::int8[])"
        " AS e(seq, name, op, key, row, version) RETURNING revision"
    ).format(
        revision=sql.Identifier(schema, REVISION),
        channel=sql.Literal(channel(schema)),
        changes=sql.Identifier(schema, CHANGES),
    )
    tables, ops, keys, rows, versions = (list(column) for column in zip(*events))
    seqs = list(range(1, len(events) + 1))
    with tx.errors():
        found = tx.driver_connection().execute(statement, (seqs, tables, ops, keys, rows, versions)).fetchone()
    assert found is not None  # a row per event
    return int(found[0])


def notify(tx: PgSession, schema: str, number: int) -> None:
    """Wake the schema's watchers when ``tx`` commits."""
    tx.execute(sa.select(sa.func.pg_notify(channel(schema), str(number))))


def touch(tx: PgSession, schema: str, dropped: str | None = None) -> None:
    """Take a revision without events, so watchers look again (a change-fed table
    altered); for a ``dropped`` table, forget its events and leave its marker."""
    number, now = next_revision(tx, schema)
    if dropped is not None:
        changes, _ = feed_tables(schema)
        tx.execute(sa.delete(changes).where(changes.c.table_name == dropped))
        values = {"revision": number, "seq": 1, "table_name": dropped, "op": OP_DROP, "key": b"", "time": now}
        tx.execute(sa.insert(changes).values(**values))
    notify(tx, schema, number)


__all__ = [
    "OP_DELETE",
    "OP_DROP",
    "OP_EXPIRE",
    "OP_PUT",
    "Event",
    "channel",
    "delete_event",
    "ensure_feed",
    "feed_tables",
    "put_event",
    "record",
    "touch",
]

"""The read side of PostgreSQL change feeds: ``revision``, ``changes``, ``watch``,
``compact`` (the write side and the tables are :mod:`providers.postgres.feed`).

Each read is one short REPEATABLE READ transaction: the counter and the events in
one snapshot, so every event up to the counter is there (the counter's row lock
orders commits). A watch LISTENs on the schema's channel on a connection of its
own, and reads again when notified, or every second in any case.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import msgspec
import sqlalchemy as sa

from providers.postgres.database import PgDatabase
from providers.postgres.feed import OP_DROP, OP_PUTS, OP_SET, OP_SETS, PUT_OPS, channel, feed_tables
from providers.postgres.transaction import PgTransaction, begin
from spi.changes import (
    OPS,
    Change,
    Progress,
    Wanted,
    WatchArgs,
    check_revision,
    check_tables,
    check_wanted,
    chunked,
    follow,
    key_filter,
    require_feed,
)
from spi.codec import decode_key, from_micros, prefix_successor
from spi.errors import InvalidFieldError, RevisionCompactedError, TableNotFoundError
from spi.keys import KeyLike
from spi.spec import TableSpec
from spi.validate import check_limit

CHUNK = 1000
"""Events read per transaction."""
_unpack = msgspec.msgpack.Decoder().decode


def _read(db: PgDatabase) -> PgTransaction:
    return begin(db, isolation="REPEATABLE READ", read_only=True)


def _counter(tx: PgTransaction, db: PgDatabase) -> tuple[int, int]:
    """(revision, compacted through) as ``tx`` sees them; (0, 0) before any feed."""
    _, revision = feed_tables(db.schema)
    if not tx.relation_exists(db.schema, revision.name):
        return 0, 0
    found = tx.execute(sa.select(revision.c.revision, revision.c.compacted).where(revision.c.id == 1)).first()
    return (0, 0) if found is None else (int(found[0]), int(found[1]))


class _Reader:
    """A ``changes`` or ``watch`` call: its tables and filter, and how far it has read."""

    def __init__(
        self,
        db: PgDatabase,
        names: list[str] | None,
        key: KeyLike | None,
        prefix: KeyLike | None,
        wanted: Wanted = Wanted(),
    ) -> None:
        self._db = db
        self._names = names
        self._key, self._prefix = key, prefix
        self._wanted = wanted
        self._done = 0  # every revision up to this one is read
        self._after = (0, 0)  # the last (revision, seq) read
        self._watching = False

    def _specs(self, tx: PgTransaction) -> dict[str, TableSpec]:
        if self._names is None:
            catalog = self._db.catalog
            found = (TableSpec.from_catalog(row.spec) for row in tx.execute(sa.select(catalog.c.spec)))
            return {spec.name: spec for spec in found if spec.changes}
        return {name: require_feed(tx.spec(name)) for name in self._names}

    def _check(self, compacted: int) -> None:
        if compacted > self._done:
            raise RevisionCompactedError(
                f"the change feed is compacted through revision {compacted}: events after revision "
                f"{self._done} are gone; read from revision {compacted} or later",
                oldest=compacted,
            )

    def start(self, since: int | None, *, watching: bool = False) -> int:
        """Check the tables and ``since`` in a first read; the current revision."""
        self._watching = watching
        with _read(self._db) as tx:
            specs = self._specs(tx)
            current, compacted = _counter(tx, self._db)
        if self._key is not None or self._prefix is not None:
            (spec,) = specs.values()
            key_filter(spec, self._key, self._prefix)  # checks the key now
        self._done = current if since is None else since
        self._after = (self._done, 2**31)
        self._check(compacted)
        return current

    def read(self, end: int | None, limit: int | None) -> tuple[list[Change], bool]:
        """Up to ``limit`` (and :data:`CHUNK`) events after the position, up to revision
        ``end`` (None: the current one), and whether more may follow."""
        changes, _ = feed_tables(self._db.schema)
        with _read(self._db) as tx:
            specs = self._specs(tx)
            current, compacted = _counter(tx, self._db)
            self._check(compacted)
            last = current if end is None else end
            n = CHUNK if limit is None else min(limit, CHUNK)
            c = changes.c
            stmt = (
                sa.select(c.revision, c.seq, c.table_name, c.op, c.key, c.row, c.version, c.time)
                .where(sa.tuple_(c.revision, c.seq) > sa.tuple_(*self._after), c.revision <= last)
                .where(c.table_name.in_(list(specs)))
                .order_by(c.revision, c.seq)
                .limit(n)
            )
            wanted: tuple[bytes, bool] | None = None
            if self._key is not None or self._prefix is not None:
                (spec,) = specs.values()
                wanted = key_filter(spec, self._key, self._prefix)  # type: ignore[assignment]
                assert wanted is not None
                following = prefix_successor(wanted[0])
                if wanted[1]:
                    on_key = c.key == wanted[0]
                else:
                    on_key = sa.and_(c.key >= wanted[0], *([c.key < following] if following is not None else []))
                # A drop ends a keyed watch too; a run's keys are filtered as it is read.
                stmt = stmt.where(sa.or_(on_key, c.op.in_([OP_DROP, OP_PUTS, OP_SETS])))
            rows = tx.execute(stmt).fetchall() if specs else []
        out: list[Change] = []
        for revision, seq, change in _events(rows, specs, wanted, self._after, self._wanted):
            if len(out) == n:
                return out, True  # the position stays after the last event returned
            self._after, self._done = (revision, seq), revision - 1
            if isinstance(change, _Dropped):
                if self._watching:
                    raise TableNotFoundError(f"table {change.table!r} was dropped")
            elif change is not None:
                out.append(change)
        if len(rows) == n:
            return out, True
        self._done = max(self._done, last)
        self._after = (self._done, 2**31)
        return out, False

    def position(self) -> int:
        """The revision every event up to which has been read."""
        return self._done


class _Dropped(NamedTuple):
    """A dropped table's marker in the feed."""

    table: str


def _events(
    rows: Sequence[Any],
    specs: dict[str, TableSpec],
    wanted: tuple[bytes, bool] | None,
    after: tuple[int, int],
    kept: Wanted,
) -> Iterator[tuple[int, int, Change | _Dropped | None]]:
    """The events of fetched rows with their positions, a run's one by one from the
    first after ``after`` (None where a run's key or op is filtered out)."""
    puts_kept = kept.keeps(0)
    for revision, seq, table, op, key, row, version, when in rows:
        if op == OP_DROP:
            yield revision, seq, _Dropped(table)
        elif op not in (OP_PUTS, OP_SETS):
            if not kept.keeps(0 if op in PUT_OPS else op):
                yield revision, seq, None
                continue
            stored = _unpack(bytes(row)) if row else None
            yield revision, seq, _change(specs[table], revision, op, bytes(key), stored, version, when, kept.prev)
        else:
            puts = _unpack(bytes(row))
            first = seq - len(puts) + 1
            for at, (put_key, values, put_version, *expires) in enumerate(puts, first):
                if (revision, at) <= after:
                    continue
                if not puts_kept or (
                    wanted is not None and not (put_key == wanted[0] if wanted[1] else put_key.startswith(wanted[0]))
                ):
                    yield revision, at, None
                else:
                    stored = (values, *expires, True, None) if op == OP_SETS else values
                    yield revision, at, _change(specs[table], revision, op, put_key, stored, put_version, when, False)


def _change(
    spec: TableSpec, revision: int, op: int, key: bytes, stored: Any, version: Any, when: Any, prev: bool
) -> Change:
    """The event of a stored ``op`` (see :data:`providers.postgres.feed.OP_SET`)."""
    keys = dict(zip(spec.primary_key, decode_key(spec.key_types, key)[0]))
    columns = spec.columns
    if op not in PUT_OPS:
        before = None if stored is None or not prev else {c: stored.get(c) for c in columns}
        return Change(revision, spec.name, OPS[op], keys, None, None, when, None, before)
    if op not in (OP_SET, OP_SETS):  # written before created, prev and expiries were recorded
        return Change(revision, spec.name, OPS[0], keys, {c: stored.get(c) for c in columns}, version, when)
    values, expires, created, old = stored
    before = None if old is None or not prev else {c: old.get(c) for c in columns}
    at = None if expires is None else from_micros(expires)
    row = {c: values.get(c) for c in columns}
    return Change(revision, spec.name, OPS[0], keys, row, version, when, created, before, at)


def revision(db: PgDatabase) -> int:
    """The schema's current revision."""
    with _read(db) as tx:
        return _counter(tx, db)[0]


def changes(
    db: PgDatabase,
    tables: str | Sequence[str] | None,
    since: int,
    key: KeyLike | None,
    prefix: KeyLike | None,
    limit: int | None,
    prev: bool = False,
    ops: Any = None,
) -> Iterator[Change]:
    """See :meth:`spi.protocols.Provider.changes` (the first chunk is read now)."""
    n = check_limit(limit)
    reader = _Reader(db, check_tables(tables, key, prefix), key, prefix, check_wanted(prev, ops))
    end = reader.start(check_revision(since))
    if n == 0:
        return iter(())
    first, more = reader.read(end, n)
    return chunked(first, more, lambda left: reader.read(end, left), n)


class _Listener:
    """NOTIFY of the schema's channel, on a connection of its own (a
    :class:`spi.changes.ChangeSignal`). The provider keeps the last one closed for
    the next watch (a watch in short calls, as the dashboard's, would otherwise
    open a connection per call); a notification it kept meanwhile only makes that
    watch read once more."""

    def __init__(self, db: PgDatabase) -> None:
        self._db = db
        self._seen = 0
        parked = db.take_listener()
        if parked is not None and not parked[1].broken:
            self._fairy, self._conn = parked
            return
        if parked is not None:
            parked[0].invalidate()
        with db.errors():
            self._fairy = db.engine.raw_connection()
            conn: Any = self._fairy.driver_connection
            conn.autocommit = True
            self._conn = conn
            conn.execute(f'LISTEN "{channel(db.schema)}"')

    def mark(self) -> Any:
        return self._seen

    def wait(self, marker: Any, timeout: float) -> None:
        if self._seen != marker:
            return
        with self._db.errors():
            for _ in self._conn.notifies(timeout=timeout, stop_after=1):
                self._seen += 1

    def close(self) -> None:
        """Park the connection for the next watch, or (one is parked already, or the
        connection broke) close it: it never goes back to the pool, still listening."""
        if (
            self._conn.closed
            or self._conn.info.transaction_status != 0
            or not self._db.park_listener((self._fairy, self._conn))
        ):
            self._fairy.invalidate()


def watch(db: PgDatabase, args: WatchArgs, key: KeyLike | None, prefix: KeyLike | None) -> Iterator[Change | Progress]:
    """See :meth:`spi.protocols.Provider.watch` (the checked ``args``; the table and
    ``since`` are checked now)."""
    reader = _Reader(db, args.names, key, prefix, args.wanted)
    reader.start(args.since, watching=True)
    listener = _Listener(db)

    def run() -> Iterator[Change | Progress]:
        try:
            yield from follow(lambda: reader.read(None, None), reader.position, listener, args)
        finally:
            listener.close()

    return run()


def compact(db: PgDatabase, through: int) -> None:
    """Forget the events with revision <= ``through`` (at most the current revision)."""
    check_revision(through, "revision")
    with begin(db, isolation="READ COMMITTED") as tx:
        current, compacted = _counter(tx, db)
        if through > current:
            raise InvalidFieldError(f"cannot compact through revision {through}: the store is at revision {current}")
        _forget_through(tx, db, through, compacted)


def apply_retention(db: PgDatabase, retention: float) -> None:
    """Forget the events committed more than ``retention`` seconds ago (server clock;
    0: keep them until compacted): the background sweep runs this."""
    if retention <= 0:
        return
    changes_table, _ = feed_tables(db.schema)
    with begin(db, isolation="READ COMMITTED") as tx:
        current, compacted = _counter(tx, db)
        if current == 0:
            return
        cutoff = sa.func.statement_timestamp() - sa.func.make_interval(0, 0, 0, 0, 0, 0, retention)
        newest_old = (
            sa.select(changes_table.c.revision)
            .where(changes_table.c.time < cutoff)
            .order_by(changes_table.c.time.desc())
            .limit(1)
        )
        found = tx.execute(newest_old).scalar()
        if found is not None:
            _forget_through(tx, db, int(found), compacted)


def _forget_through(tx: PgTransaction, db: PgDatabase, through: int, compacted: int) -> None:
    """Delete the events with revision <= ``through`` and record the new compaction
    point (nothing when the feed is compacted that far already)."""
    changes_table, counter = feed_tables(db.schema)
    if through > compacted:
        tx.execute(sa.delete(changes_table).where(changes_table.c.revision <= through))
        tx.execute(sa.update(counter).where(counter.c.id == 1).values(compacted=through))


__all__ = ["apply_retention", "changes", "compact", "revision", "watch"]

"""The read side of the ordered-store engine's change feed: ``revision``,
``changes``, ``watch`` and ``compact`` (the write side is :mod:`spi.kv.feed`).

Reads run in short store sessions of about :data:`CHUNK` events each, so a long
feed never holds the store (RocksDB: its path) between chunks. Each session
resolves the tables again: a table dropped since ends the read with
``TableNotFoundError``, one whose feed was turned off with ``SchemaError``. A watch
waits between reads on the store's change marker (:meth:`OrderedStore.change_marker`),
which every commit that takes a revision moves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

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
from spi.kv.buffer import WriteBuffer
from spi.kv.feed import (
    OP_CREATE,
    OP_PUT,
    OP_UPDATE,
    PUBLIC_OPS,
    compacted_through,
    current_revision,
    forget_through,
    log_of,
    parse_page,
    split_update,
)
from spi.kv.layout import CATALOG, Layout, LayoutCache
from spi.kv.store import OrderedStore, StoreSession
from spi.kv.transaction import KvTransaction, stored_layout
from spi.validate import check_limit

CHUNK = 1000
"""Events read per store session."""
RECHECK = 2.0
"""Seconds a watch waits at most before it reads again without a signal."""
_ROW_PREFIX = 6  # len(Layout.row_prefix): 01 tid(4) 00


class _Selection:
    """The tables and key filter of one ``changes`` or ``watch`` call, resolved in
    each session (the first resolution pins the tables' ids)."""

    def __init__(
        self, names: list[str] | None, key: KeyLike | None, prefix: KeyLike | None, wanted: Wanted = Wanted()
    ) -> None:
        self.names = names
        self.key = key
        self.prefix = prefix
        self.wanted = wanted
        self._ids: dict[str, int] = {}
        self._filter: tuple[bytes, bool] | None = None

    def resolve(self, view: WriteBuffer, cache: LayoutCache) -> dict[bytes, Layout]:
        """The change-fed tables to read, by row prefix."""
        if self.names is None:
            entries = view.iterate(CATALOG, prefix_successor(CATALOG), False)
            found = [cache.get(raw) for _, raw in entries]
            return {lay.row_prefix: lay for lay in found if lay.spec.changes}
        tables = {}
        for name in self.names:
            layout = stored_layout(view, cache, name)
            if self._ids.setdefault(name, layout.table_id) != layout.table_id:
                raise TableNotFoundError(f"table {name!r} was dropped (a table of that name was created since)")
            require_feed(layout.spec)
            tables[layout.row_prefix] = layout
        if (self.key is not None or self.prefix is not None) and self._filter is None:
            (layout,) = tables.values()
            encoded, exact = key_filter(layout.spec, self.key, self.prefix)  # type: ignore[misc]
            self._filter = (layout.row_prefix + encoded, exact)
        return tables

    def matches(self, row_key: bytes) -> bool:
        """True if an event of the row stored under ``row_key`` passes the key filter."""
        if self._filter is None:
            return True
        wanted, exact = self._filter
        return row_key == wanted if exact else row_key.startswith(wanted)


def _decode(layout: Layout, revision: int, op: int, row_key: bytes, data: bytes, when: Any, prev: bool) -> Change:
    """The event of a stored ``op`` with its bytes (see :data:`spi.kv.feed.OP_PUT`);
    ``prev``: decode the row before the write too."""
    spec = layout.spec
    key = dict(zip(spec.primary_key, decode_key(spec.key_types, row_key, _ROW_PREFIX)[0]))
    old: bytes = b""
    if op == OP_UPDATE:
        data, old = split_update(data)
    elif op not in (OP_PUT, OP_CREATE):
        data, old = b"", data
    before = layout.decode_row(old).values if prev and old else None
    if not data:
        return Change(revision, spec.name, OPS[op], key, None, None, when, None, before)
    row = layout.decode_row(data)
    created = None if op == OP_PUT else op == OP_CREATE
    expires = None if row.expires is None else from_micros(row.expires)
    return Change(revision, spec.name, OPS[0], key, row.values, row.version, when, created, before, expires)


class _Reader:
    """Reads a selection's events from a position on, one session at a time."""

    def __init__(self, session: Callable[[], StoreSession], cache: LayoutCache, selection: _Selection) -> None:
        self._session = session
        self._cache = cache
        self._selection = selection
        self._done = 0  # every revision up to this one is read
        self._at = (1, 0)  # the first (revision, page) not read whole...
        self._skip = 0  # ...and how many of its events are read

    def start(self, since: int | None) -> int:
        """Resolve the selection and check ``since`` in a first session; reading
        starts after ``since`` (None: the current revision). Returns the current revision."""
        view = WriteBuffer(self._session())
        try:
            self._selection.resolve(view, self._cache)
            current = current_revision(view)
            self._done = current if since is None else since
            self._at = (self._done + 1, 0)
            self._check_compaction(view)
            return current
        finally:
            view.discard()

    def _check_compaction(self, view: WriteBuffer) -> None:
        oldest = compacted_through(view)
        if oldest > self._done:
            raise RevisionCompactedError(
                f"the change feed is compacted through revision {oldest}: events after revision "
                f"{self._done} are gone; read from revision {oldest} or later",
                oldest=oldest,
            )

    def read(self, end: int | None, limit: int | None) -> tuple[list[Change], bool]:
        """Up to ``limit`` matching events (reading about :data:`CHUNK`) from the
        position up to revision ``end`` (None: the current one), and whether more may follow."""
        view = WriteBuffer(self._session())
        try:
            tables = self._selection.resolve(view, self._cache)
            self._check_compaction(view)
            last = current_revision(view) if end is None else end
            out: list[Change] = []
            scanned = 0
            matches = self._selection.matches
            keeps, prev = self._selection.wanted
            pages = log_of(view).pages(view, *self._at, last)
            try:
                for revision, page, v in pages:
                    micros, events = parse_page(v)
                    when = from_micros(micros)
                    skip = self._skip if (revision, page) == self._at else 0
                    self._done = revision - 1
                    for i in range(skip, len(events)):
                        op, row_key, stored = events[i]
                        layout = tables.get(row_key[:_ROW_PREFIX])
                        if layout is not None and (keeps is None or PUBLIC_OPS[op] in keeps) and matches(row_key):
                            out.append(_decode(layout, revision, op, row_key, stored, when, prev))
                            if limit is not None and len(out) >= limit:
                                self._at, self._skip = (revision, page), i + 1
                                return out, True
                    self._at, self._skip = (revision, page + 1), 0
                    scanned += len(events) - skip
                    if scanned >= CHUNK:
                        return out, True
            finally:
                pages.close()  # what a store holds for the read (etcd: a history stream)
            self._done = max(self._done, last)
            self._at, self._skip = (self._done + 1, 0), 0
            return out, False
        finally:
            view.discard()

    def position(self) -> int:
        """The revision every event up to which has been read."""
        return self._done


def revision(session: Callable[[], StoreSession]) -> int:
    """The store's current revision."""
    view = WriteBuffer(session())
    try:
        return current_revision(view)
    finally:
        view.discard()


def changes(
    session: Callable[[], StoreSession],
    cache: LayoutCache,
    tables: str | Sequence[str] | None,
    since: int,
    key: KeyLike | None,
    prefix: KeyLike | None,
    limit: int | None,
    prev: bool = False,
    ops: Any = None,
) -> Iterator[Change]:
    """See :meth:`spi.protocols.Provider.changes`: the first chunk is read now (so
    errors raise at the call), the rest in later sessions; the feed ends at the
    revision current at the call."""
    names = check_tables(tables, key, prefix)
    n = check_limit(limit)
    reader = _Reader(session, cache, _Selection(names, key, prefix, check_wanted(prev, ops)))
    end = reader.start(check_revision(since))
    if n == 0:
        return iter(())
    first, more = reader.read(end, n)
    return chunked(first, more, lambda left: reader.read(end, left), n)


class _StoreSignal:
    """An ordered store's change marker as a :class:`spi.changes.ChangeSignal`."""

    def __init__(self, store: OrderedStore) -> None:
        self._store = store

    def mark(self) -> Any:
        return self._store.change_marker()

    def wait(self, marker: Any, timeout: float) -> None:
        self._store.wait_for_change(marker, timeout)


def watch(
    session: Callable[[], StoreSession],
    cache: LayoutCache,
    store: OrderedStore,
    args: WatchArgs,
    key: KeyLike | None,
    prefix: KeyLike | None,
) -> Iterator[Change | Progress]:
    """See :meth:`spi.protocols.Provider.watch` (the checked ``args``; the table and
    ``since`` are checked now)."""
    reader = _Reader(session, cache, _Selection(args.names, key, prefix, args.wanted))
    reader.start(args.since)
    return follow(lambda: reader.read(None, None), reader.position, _StoreSignal(store), args, recheck=RECHECK)


def compact(transaction: Callable[[], KvTransaction], through: int) -> None:
    """Forget the events with revision <= ``through`` (at most the current revision),
    in as many transactions as the store's limits need (each leaves a consistent feed)."""
    check_revision(through, "revision")
    with transaction() as tx:
        current = current_revision(tx)
        if through > current:
            raise InvalidFieldError(f"cannot compact through revision {through}: the store is at revision {current}")
        done = forget_through(tx, through)
        log = log_of(tx)
    while not done:
        with transaction() as tx:
            done = forget_through(tx, through)
    log.forgotten(through)


__all__ = ["CHUNK", "changes", "compact", "revision", "watch"]

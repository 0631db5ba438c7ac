"""Auto-commit handles of the ordered-store engine: calls without a transaction.

A one-off call (``p.table(name).upsert(...)``, a read, a count, a page of a scan)
needs one consistent view of the store, which a store session already is: it is
exclusive across threads and processes, so nothing commits while it lasts, and a
write that reads and then writes in one session is serializable. So
:class:`KvAutoCommitTable` runs each call straight on a session, with the table's
layout from the provider's cache (no catalog read while the store's generation
allows): a read with no write buffer at all, a write with the engine's own table
code over a write buffer that commits once, as one atomic batch (the row, its index
and expiry entries, the row counter and a change-fed table's event and revision
together, as a transaction's commit writes them). None of a transaction's object,
retry loop or conflict tracking: no conflict can happen on an exclusive session.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import chain
from typing import Any, Protocol, TypeVar, cast

from spi.errors import InvalidFieldError
from spi.filters import Expr
from spi.keys import KeyLike, Range, key_of, normalize_key
from spi.kv import counters
from spi.kv.buffer import WriteBuffer
from spi.kv.chunked_load import ChunkedLoad
from spi.kv.feed import FeedSettings
from spi.kv.layout import Layout, LayoutCache
from spi.kv.store import STALE, OrderedStore, Stale, StoreSession
from spi.kv.table import KvTable, StoredPage
from spi.kv.transaction import commit, stored_layout
from spi.load import LoadPlan, run_load
from spi.primitives import Stored
from spi.provider import AutoCommitTable, ProviderBase
from spi.row import Row
from spi.table import TableBase
from spi.validate import check_increment, check_limit, full_row, validate_row
from spi.writerules import created, incremented

T = TypeVar("T")
log = logging.getLogger(__name__)


def _stored(session: StoreSession, layout: Layout, key: bytes) -> Stored | Stale | None:
    """The row stored under ``key`` (None: none; STALE: one with an expiry, which the
    general path writes)."""
    raw = session.get(key)
    if raw is None:
        return None
    old = layout.decode_row(raw)
    return old if old.expires is None else STALE


def _put(session: StoreSession, layout: Layout, key: bytes, values: dict[str, Any], before: int | None) -> int:
    """Commit the whole row ``values`` under ``key`` over a row at version ``before``
    (None: a new row, also counted in the table's row counter); the row's new version."""
    version = 1 if before is None else before + 1
    row = layout.encode_row(values, version, None)
    if before is not None or (counted := session.get(layout.count_key)) is None:  # older tables have no counter
        session.commit([], [key], [row])
        return version
    count_key, count = counters.adding(layout.count_key, counted, 1, session.blind_counters())
    writes = sorted([(key, row), (count_key, count)])
    session.commit([], [k for k, _ in writes], [v for _, v in writes])
    return version


def _merge(session: StoreSession, layout: Layout, key: bytes, values: dict[str, Any]) -> int | Stale:
    """Upsert ``values`` as the row under ``key``: the new version (STALE: see :func:`_stored`).
    A row of every column replaces the stored one, whose version is all it reads."""
    if len(values) == len(layout.spec.fields):
        raw = session.get(key)
        before = None if raw is None else layout.stored_version(raw)
        if raw is not None and before is None:
            return STALE
        return _put(session, layout, key, values, before)
    old = _stored(session, layout, key)
    if old is STALE:
        return STALE
    if old is None:
        return _put(session, layout, key, full_row(layout.spec, values), None)
    return _put(session, layout, key, {**old.values, **values}, old.version)


class _Provider(Protocol):
    closed: bool


class KvAutoCommitTable(AutoCommitTable):
    """An auto-commit handle whose calls each run on one store session (rows expire on
    the provider's clock, :attr:`LayoutCache.clock`, read at each call)."""

    def __init__(
        self,
        provider: ProviderBase,
        name: str,
        session: Callable[[bool], StoreSession],
        layouts: LayoutCache,
        store: OrderedStore,
        feed: FeedSettings,
    ) -> None:
        super().__init__(provider, name)
        self._session = session
        self._layouts = layouts
        self._store = store
        self._feed = feed
        self._kv: _Provider = provider  # type: ignore[assignment]  # a KvProvider: its closed flag
        self._known: tuple[int, Layout] | None = None  # the generation and layout of the last one-off read

    def _call(self, op: Callable[[TableBase], T]) -> T:
        """Run ``op`` on one session of the store through a write buffer, committed
        as one batch (see the module's docstring)."""
        buffer = WriteBuffer(self._session(False), self._layouts.clock)
        try:
            result = op(KvTable(buffer, stored_layout(buffer, self._layouts, self.name)))
        except BaseException:
            buffer.discard()
            raise
        commit(buffer, self._feed)
        return result

    def delete_range(self, range: Range | None = None, *, where: Expr | None = None) -> int:
        """See :meth:`AutoCommitTable.delete_range`; every row of a table goes in one
        transaction that ends with it (:meth:`KvTable.delete_every_row`: the store's own
        range deletion for a table without a change feed)."""
        if where is None and (range is None or (range.start is None and range.end is None)):
            return self._call(lambda t: t.spilling().delete_every_row() if isinstance(t, KvTable) else t.delete_range())
        return self._call(lambda t: _spilling(t).delete_range(range, where=where))

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
        """See :meth:`AutoCommitTable.load`; into a table holding no row on a store that
        commits sorted streams (RocksDB), in chunks the store ingests whole
        (:mod:`spi.kv.chunked_load`)."""

        def start(t: TableBase) -> tuple[LoadPlan, Layout | None]:
            return t.load_plan(ttl, keep_versions), t.chunked_load_layout() if isinstance(t, KvTable) else None

        plan, layout = self._call(start)
        expires = plan.expires
        writer = ChunkedLoad(
            layout,
            self._layouts,
            self._feed,
            lambda: self._session(False),
            lambda batch, m, kept: self._call(lambda t: t.write_prepared(batch, m, kept, expires)),
            expires,
            progress,
        )
        return writer.run(
            lambda write, report: run_load(
                write,
                plan.preparer,
                rows,
                mode=mode,
                batch_size=batch_size,
                progress=report,
                keep_versions=keep_versions,
            )
        )

    def update_range(
        self,
        range: Range | None = None,
        *,
        where: Expr | None = None,
        changes: Mapping[str, Any],
    ) -> int:
        """See :meth:`AutoCommitTable.update_range` (one transaction, spilled to disk
        as it grows where the store allows: :meth:`KvTable.spilling`)."""
        return self._call(lambda t: _spilling(t).update_range(range, where=where, changes=changes))

    def _write(self, op: Callable[[TableBase], T]) -> T:
        """Run the single-key write ``op`` as :meth:`_call` does; while the store is idle
        and the table's layout is remembered for its generation (the everyday case),
        on a session made without waiting for one (:meth:`OrderedStore.write_if_idle`):
        the same table code and the same one-batch commit, without a session's hand-off."""
        reason = "the provider is closed"
        if not self._kv.closed:
            known = self._known or self._remembered()
            reason = "the table's layout is not known yet"
            if known is not None:
                layout = known[1]
                clock = self._layouts.clock
                done = self._store.write_if_idle(
                    known[0], lambda session: self._commit_on(WriteBuffer(session, clock), layout, op)
                )
                if done is not STALE:
                    return done
                self._known = None
                reason = "the store is busy, or the table changed"
        self._missed("write", reason)
        return self._call(op)

    def _missed(self, what: str, reason: str) -> None:
        """Count and log (with its ``reason``) a one-off call that runs on a whole
        session, on a store whose idle calls could have taken it (see :mod:`spi.stats`)."""
        if self._store.peek_generation() is not None:
            self._provider.counters.add("fast_path_misses")
            log.debug("%s on %r: on a session, as %s", what, self.name, reason)

    def _commit_on(self, buffer: WriteBuffer, layout: Layout, op: Callable[[TableBase], T]) -> T:
        """``op`` on the table through ``buffer``, committed as one batch."""
        try:
            result = op(KvTable(buffer, layout))
        except BaseException:
            buffer.discard()
            raise
        commit(buffer, self._feed)
        return result

    # The everyday one-off writes, upsert and increment, on a plain table (no feed,
    # index, expiry or freeze) are a get and a put of one key (a new row: also its
    # table's row counter): while the store is idle they run as just that (merged and
    # encoded here, with the shared checks), not through the table code, a write
    # buffer and a commit. A stored row with an expiry takes the general path.
    def upsert(self, row: Mapping[str, Any], *, ttl: int | float | None = None) -> int:
        """See :meth:`TableBase.upsert` (a point write while the store is idle)."""
        known = self._plain() if ttl is None else None
        if known is not None:
            layout = known[1]
            values = validate_row(layout.spec, row)
            key = layout.row_prefix + layout.encode_key(key_of(layout.spec, values))
            done = self._store.write_if_idle(known[0], lambda session: _merge(session, layout, key, values))
            if done is not STALE:
                return done
        return super().upsert(row, ttl=ttl)

    def increment(self, key: KeyLike, column: str, amount: int | float = 1) -> int | float:
        """See :meth:`TableBase.increment` (a point write while the store is idle)."""
        known = self._plain()
        if known is not None:
            layout = known[1]
            spec = layout.spec
            ftype, checked = check_increment(spec, column, amount)
            k = normalize_key(spec, key)
            encoded = layout.row_prefix + layout.encode_key(k)

            def add(session: StoreSession) -> int | float | Stale:
                raw = session.get(encoded)
                if raw is not None:
                    changed = layout.changed_in_place(
                        raw, column, lambda v: incremented(spec, column, ftype, v, checked)
                    )
                    if changed is None:
                        return STALE
                    session.commit([], [encoded], [changed[0]])
                    return changed[1]  # type: ignore[no-any-return]
                new = incremented(spec, column, ftype, None, checked)
                values = created(spec, k, {column: new})
                _put(session, layout, encoded, values, None)
                return new  # type: ignore[no-any-return]

            done = self._store.write_if_idle(known[0], add)
            if done is not STALE:
                return done
        return super().increment(key, column, amount)

    def _plain(self) -> tuple[int, Layout] | None:
        """The generation and layout a point write may use: a remembered layout of a
        table without a feed, indexes, a ttl or a freeze (else None)."""
        if self._kv.closed:
            return None
        known = self._known or self._remembered()
        if known is None:
            return None
        spec = known[1].spec
        if spec.changes or known[1].indexes or spec.ttl is not None or spec.frozen:
            return None
        return known

    def _read(self, op: Callable[[TableBase], T]) -> T:
        """Run ``op`` on one session of the store (consistent: sessions are exclusive)."""
        view = WriteBuffer(self._session(True), self._layouts.clock)  # a read-only session: nothing is ever buffered
        try:
            return op(KvTable(view, stored_layout(view, self._layouts, self.name)))
        finally:
            view.discard()

    def read(self, key: KeyLike, *, columns: Iterable[str] | None = None) -> Row | None:
        """See :meth:`TableBase.read`.

        The everyday one-off call, so its common case (the whole row; the layout
        remembered for the store's generation; no session running) is one store get
        outside any session (:meth:`OrderedStore.get_if_idle`, which checks the
        generation this handle's last such read used), and the row is built by the
        layout's row reader (the one a key-order scan uses). Anything else takes the
        general path: a session."""
        if columns is None and not self._kv.closed:
            known = self._known or self._remembered()
            if known is not None:
                layout = known[1]
                raw = self._store.get_if_idle(
                    known[0], layout.row_prefix + layout.encode_key(normalize_key(layout.spec, key))
                )
                if raw is not STALE:
                    if raw is None:
                        return None
                    rows = layout.read_list([[raw]], 1, self._layouts.clock)
                    return rows[0] if rows else None
                self._known = None
            self._missed("read", "the table's layout is not known yet" if known is None else "the store is busy")
        return super().read(key, columns=columns)

    def _remembered(self) -> tuple[int, Layout] | None:
        """The store's likely generation and the layout remembered under it, if any."""
        generation = self._store.peek_generation()
        layout = self._layouts.current(self.name, generation)
        if layout is None or generation is None:
            return None
        self._known = (generation, layout)
        return self._known

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
        """See :meth:`AutoCommitTable.scan`.

        A plain scan in key order (no filter, order or projection), the common one,
        reads each page's stored values in a session of its own and decodes them
        into rows only as the caller takes them, after the session has ended: rows
        are made one at a time, as a transaction's scan makes them, not a page of
        them held at once (about 0.06 µs a row less). As on the general path, each
        page is consistent, the caller may write between rows, and a table changed
        between pages ends the scan with the same error."""
        if where is not None or order_by is not None or columns is not None:
            return super().scan(
                range, where=where, order_by=order_by, descending=descending, limit=limit, columns=columns
            )
        n = check_limit(limit)
        if n == 0:
            return iter(())
        descending = bool(descending)
        first = self._page(range, descending, None, self.page_size if n is None else min(n, self.page_size))
        if n is None:
            return chain.from_iterable(self._pages(first, range, descending))  # rows flattened in C
        return self._limited(first, range, descending, n)

    def _page(self, range: Range | None, descending: bool, after: bytes | None, size: int) -> StoredPage:
        return self._read(lambda t: cast(KvTable, t).stored_page(range, descending, after, size))

    def _pages(self, page: StoredPage, range: Range | None, descending: bool) -> Iterator[Iterator[Row]]:
        """Each page's rows (the next page is read once the caller has taken the last)."""
        signature = page.layout.signature
        while True:
            yield page.layout.readers(None)[2]((page.values,), self._layouts.clock)
            if page.after is None:
                return
            page = self._page(range, descending, page.after, self.page_size)
            if page.layout.signature != signature:  # as the general path's token says
                raise InvalidFieldError(f"scan token is stale: the spec of {self.name!r} changed since it was issued")

    def _limited(self, page: StoredPage, range: Range | None, descending: bool, left: int) -> Iterator[Row]:
        """The first ``left`` rows of the pages (a page's expired rows are skipped)."""
        pages = self._pages(page, range, descending)
        for rows in pages:
            for row in rows:
                yield row
                left -= 1
                if left == 0:
                    return


def _spilling(table: TableBase) -> TableBase:
    """``table``, spilling as it grows if it is the engine's own (see :meth:`KvTable.spilling`)."""
    return table.spilling() if isinstance(table, KvTable) else table

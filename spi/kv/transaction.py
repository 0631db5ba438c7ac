"""A serializable transaction of the ordered-store engine.

Serializable because a store session is exclusive: a transaction reads the store
plus its own buffered writes (:class:`spi.kv.buffer.WriteBuffer`) and commits them
as one batch. It also caches each table's layout for its lifetime.
"""

from __future__ import annotations

from spi.errors import TableNotFoundError
from spi.kv import counters
from spi.kv.buffer import WriteBuffer
from spi.kv.feed import FeedSettings, record
from spi.kv.layout import Layout, LayoutCache, catalog_key
from spi.kv.store import StoreSession
from spi.kv.table import KvTable
from spi.provider import TransactionBase
from spi.table import TableBase


def stored_layout(buffer: WriteBuffer, cache: LayoutCache, name: str) -> Layout:
    """The layout of table ``name`` as stored, seen through ``buffer`` (from ``cache``
    while the store's generation allows; TableNotFoundError if missing)."""
    generation = buffer.generation()
    layout = cache.current(name, generation)
    if layout is None:
        key = catalog_key(name)
        raw = buffer.get(key)
        if raw is None:
            raise TableNotFoundError(f"table {name!r} does not exist")
        layout = cache.get(raw)
        if not buffer.is_buffered(key):
            cache.remember(name, generation, layout)
    return layout


def commit(buffer: WriteBuffer, feed: FeedSettings) -> None:
    """Commit ``buffer`` as one atomic batch with what its writes imply: the tables'
    row counters and, when it wrote change-fed tables, the next feed revision and
    its events; then release its session (on failure too)."""
    try:
        for key, delta in buffer.row_deltas.items():
            if delta:
                counters.add(buffer, key, delta)
        revision = record(buffer, feed) if buffer.has_events() or buffer.feed_touched else None
    except BaseException:
        buffer.discard()
        raise
    buffer.flush(revision)


class KvTransaction(WriteBuffer, TransactionBase):
    """A transaction over an exclusive store session with a write buffer."""

    def __init__(self, session: StoreSession, cache: LayoutCache, feed: FeedSettings | None = None) -> None:
        WriteBuffer.__init__(self, session, cache.clock)  # the provider's clock, for the whole transaction
        TransactionBase.__init__(self)
        self._cache = cache
        self._feed = feed or FeedSettings()
        self._layouts: dict[str, Layout] = {}
        self._catalog_changed = False

    def layout(self, name: str) -> Layout:
        """The stored layout of table ``name`` (TableNotFoundError if missing)."""
        cached = self._layouts.get(name)
        if cached is not None:
            return cached
        layout = self._layouts[name] = stored_layout(self, self._cache, name)
        return layout

    def save_layout(self, layout: Layout) -> None:
        """Write a catalog entry."""
        self.put(catalog_key(layout.spec.name), layout.catalog_entry())
        self._layouts[layout.spec.name] = layout
        self._catalog_changed = True

    def forget_layout(self, name: str) -> None:
        """Remove a catalog entry."""
        self.remove(catalog_key(name))
        self._layouts.pop(name, None)
        self._catalog_changed = True

    def _open_table(self, name: str) -> TableBase:
        return KvTable(self, self.layout(name))

    def _commit(self) -> None:
        if self._catalog_changed:
            self._session.advance_generation()
        commit(self, self._feed)

    def _rollback(self) -> None:
        self.discard()

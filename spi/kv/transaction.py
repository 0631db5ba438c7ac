"""A serializable transaction of the ordered-store engine.

Serializable because a store session is exclusive: a transaction reads the store
plus its own buffered writes (:class:`spi.kv.buffer.WriteBuffer`) and commits them
as one batch. It also caches each table's layout for its lifetime.
"""

from __future__ import annotations

from spi.errors import TableNotFoundError
from spi.kv.buffer import WriteBuffer
from spi.kv.layout import Layout, LayoutCache, catalog_key
from spi.kv.store import StoreSession
from spi.kv.table import KvTable
from spi.provider import TransactionBase
from spi.table import TableBase


class KvTransaction(WriteBuffer, TransactionBase):
    """A transaction over an exclusive store session with a write buffer."""

    def __init__(self, session: StoreSession, cache: LayoutCache) -> None:
        WriteBuffer.__init__(self, session)
        TransactionBase.__init__(self)
        self._cache = cache
        self._layouts: dict[str, Layout] = {}

    def layout(self, name: str) -> Layout:
        """The stored layout of table ``name`` (TableNotFoundError if missing)."""
        cached = self._layouts.get(name)
        if cached is not None:
            return cached
        raw = self.get(catalog_key(name))
        if raw is None:
            raise TableNotFoundError(f"table {name!r} does not exist")
        layout = self._layouts[name] = self._cache.get(raw)
        return layout

    def save_layout(self, layout: Layout) -> None:
        """Write a catalog entry."""
        self.put(catalog_key(layout.spec.name), layout.catalog_entry())
        self._layouts[layout.spec.name] = layout

    def forget_layout(self, name: str) -> None:
        """Remove a catalog entry."""
        self.remove(catalog_key(name))
        self._layouts.pop(name, None)

    def _open_table(self, name: str) -> TableBase:
        return KvTable(self, self.layout(name))

    def _commit(self) -> None:
        self.flush()

    def _rollback(self) -> None:
        self.discard()

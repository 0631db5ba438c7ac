"""The provider of the ordered-store engine: a store, its admin and its transactions."""

from __future__ import annotations

from spi.errors import KvError
from spi.kv.admin import KvAdmin
from spi.kv.autocommit import KvAutoCommitTable
from spi.kv.layout import LayoutCache
from spi.kv.store import OrderedStore, StoreSession
from spi.kv.transaction import KvTransaction
from spi.provider import ProviderBase


class KvProvider(ProviderBase):
    """A provider over an :class:`OrderedStore`; subclasses supply the store."""

    def __init__(self, url: str, store: OrderedStore) -> None:
        super().__init__(url)
        self._store = store
        self._admin = KvAdmin(self.transaction)
        self.layouts = LayoutCache()
        """Decoded table layouts, shared by this provider's transactions and reads."""
        self._closed = False

    @property
    def admin(self) -> KvAdmin:
        """Table management."""
        return self._admin

    def transaction(self) -> KvTransaction:
        """A new serializable transaction (waits for exclusive access)."""
        return KvTransaction(self.session(), self.layouts)

    def session(self) -> StoreSession:
        """Exclusive access to the store (waits up to the busy timeout)."""
        if self._closed:
            raise KvError(f"provider {self.url} is closed")
        return self._store.session()

    def table(self, name: str) -> KvAutoCommitTable:
        """An auto-commit handle: each write its own transaction, each read one session."""
        return KvAutoCommitTable(self, name, self.session, self.layouts)

    def close(self) -> None:
        """Release the store."""
        if not self._closed:
            self._closed = True
            self._store.close()

"""The provider of the ordered-store engine: a store, its admin and its transactions."""

from __future__ import annotations

from spi.errors import KvError
from spi.kv.admin import KvAdmin
from spi.kv.layout import LayoutCache
from spi.kv.store import OrderedStore
from spi.kv.transaction import KvTransaction
from spi.provider import ProviderBase


class KvProvider(ProviderBase):
    """A provider over an :class:`OrderedStore`; subclasses supply the store."""

    def __init__(self, url: str, store: OrderedStore) -> None:
        super().__init__(url)
        self._store = store
        self._admin = KvAdmin(self.transaction)
        self._layouts = LayoutCache()
        self._closed = False

    @property
    def admin(self) -> KvAdmin:
        """Table management."""
        return self._admin

    def transaction(self) -> KvTransaction:
        """A new serializable transaction (waits for exclusive access)."""
        if self._closed:
            raise KvError(f"provider {self.url} is closed")
        return KvTransaction(self._store.session(), self._layouts)

    def close(self) -> None:
        """Release the store."""
        if not self._closed:
            self._closed = True
            self._store.close()

"""Auto-commit handles of the ordered-store engine: reads without a transaction.

A one-off read (``p.table(name).read(...)``, a count, a page of a scan) needs one
consistent view of the store, which a store session already is: it is exclusive,
so nothing commits while it lasts. :class:`KvAutoCommitTable` reads straight through
a session, with the table's layout from the provider's cache (no catalog read while
the store's generation allows), and none of a transaction's write buffer, commit
or conflict retries. Writes still run as transactions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from spi.kv.buffer import WriteBuffer
from spi.kv.layout import LayoutCache
from spi.kv.store import StoreSession
from spi.kv.table import KvTable
from spi.kv.transaction import stored_layout
from spi.provider import AutoCommitTable, ProviderBase
from spi.table import TableBase

T = TypeVar("T")


class KvAutoCommitTable(AutoCommitTable):
    """An auto-commit handle whose reads run on a bare store session."""

    def __init__(
        self, provider: ProviderBase, name: str, session: Callable[[], StoreSession], layouts: LayoutCache
    ) -> None:
        super().__init__(provider, name)
        self._session = session
        self._layouts = layouts

    def _read(self, op: Callable[[TableBase], T]) -> T:
        """Run ``op`` on one session of the store (consistent: sessions are exclusive)."""
        view = WriteBuffer(self._session())  # nothing is ever buffered: reads go to the store
        try:
            return op(KvTable(view, stored_layout(view, self._layouts, self.name)))
        finally:
            view.discard()

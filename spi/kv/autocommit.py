"""Auto-commit handles of the ordered-store engine: reads without a transaction.

A one-off read (``p.table(name).read(...)``, a count, a page of a scan) needs one
consistent view of the store, which a store session already is: it is exclusive,
so nothing commits while it lasts. :class:`KvAutoCommitTable` reads straight through
a session, with the table's layout from the provider's cache (no catalog read while
the store's generation allows), and none of a transaction's write buffer, commit
or conflict retries. Writes still run as transactions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol, TypeVar

from spi.keys import KeyLike, normalize_key
from spi.kv.buffer import WriteBuffer
from spi.kv.layout import LayoutCache
from spi.kv.store import STALE, OrderedStore, StoreSession
from spi.kv.table import KvTable
from spi.kv.transaction import stored_layout
from spi.provider import AutoCommitTable, ProviderBase
from spi.row import Row
from spi.table import TableBase

T = TypeVar("T")


class _Provider(Protocol):
    closed: bool


class KvAutoCommitTable(AutoCommitTable):
    """An auto-commit handle whose reads run on a bare store session."""

    def __init__(
        self,
        provider: ProviderBase,
        name: str,
        session: Callable[[bool], StoreSession],
        layouts: LayoutCache,
        store: OrderedStore,
    ) -> None:
        super().__init__(provider, name)
        self._session = session
        self._layouts = layouts
        self._store = store
        self._kv: _Provider = provider  # type: ignore[assignment]  # a KvProvider: its closed flag

    def _read(self, op: Callable[[TableBase], T]) -> T:
        """Run ``op`` on one session of the store (consistent: sessions are exclusive)."""
        view = WriteBuffer(self._session(True))  # a read-only session: nothing is ever buffered
        try:
            return op(KvTable(view, stored_layout(view, self._layouts, self.name)))
        finally:
            view.discard()

    def read(self, key: KeyLike, *, columns: Iterable[str] | None = None) -> Row | None:
        """See :meth:`TableBase.read`.

        The everyday one-off call, so its common case (the whole row; the layout
        remembered for the store's generation; no session running) is one store get
        outside any session (:meth:`OrderedStore.get_if_idle`), and the row is built
        by the layout's row reader (the one a key-order scan uses). Anything else
        takes the general path: a session."""
        if columns is None and not self._kv.closed:
            store = self._store
            generation = store.peek_generation()
            layout = self._layouts.current(self.name, generation)
            if layout is not None and generation is not None:
                raw = store.get_if_idle(
                    generation, layout.row_prefix + layout.encode_key(normalize_key(layout.spec, key))
                )
                if raw is not STALE:
                    if raw is None:
                        return None
                    rows = layout.readers(None)[1]([[raw]], 1)
                    return rows[0] if rows else None
        return super().read(key, columns=columns)

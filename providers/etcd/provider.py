"""``etcd://``: the :mod:`spi.kv` engine over an etcd v3 cluster."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from providers.etcd.client import EtcdClient
from providers.etcd.store import EtcdStore
from providers.etcd.url import EtcdUrl, parse_url
from spi.capabilities import SHARED_DURABLE
from spi.errors import FrozenTableError, IncompatibleSchemaError, InvalidFieldError, SchemaError
from spi.keys import KeyLike
from spi.kv import KvProvider, StoreSession
from spi.kv.admin import KvAdmin
from spi.kv.autocommit import KvAutoCommitTable
from spi.kv.layout import Layout
from spi.provider import AutoCommitTable, TransactionBase
from spi.table import TableBase

T = TypeVar("T")

_LOAD_RESERVE = 32
"""Operations of a load piece's transaction kept for the row counter (a delta, now and
then a fold of up to ``spi.kv.counters.FOLD_MAX`` of them), the change feed's pages,
revision and retention trim, and the commit key."""


_LAYOUT_ERRORS = (SchemaError, IncompatibleSchemaError, InvalidFieldError, FrozenTableError)
"""Errors a table layout decides: met with a guessed layout, they are checked again."""


def rechecked(store: Any, call: Callable[[], T], forget: Callable[[], None] | None = None) -> T:
    """``call()``, run once more when it fails with an error a table layout decides
    while the store's generation has moved: the layout it used was guessed from this
    process's last look at the catalog (see :mod:`providers.etcd.store`), and another
    process changed the catalog since (e.g. added a column or unfroze the table);
    ``forget`` drops what the caller remembered of the layout first."""
    try:
        return call()
    except _LAYOUT_ERRORS:
        if not store.generation_moved():
            raise
    if forget is not None:
        forget()
    return call()


class EtcdAutoCommitTable(KvAutoCommitTable):
    """An auto-commit handle whose one-off writes are retried on a conflict.

    The engine's handle commits a one-off write on a bare session, which is right for
    exclusive stores; etcd sessions are optimistic, so a one-off write may meet a
    conflict: its fast path (:meth:`EtcdStore.write_if_idle`) then gives way to a
    transaction run as ``p.run`` runs one (retried with backoff). Reads stay on a
    bare session: they are snapshot reads at one revision.
    """

    def _call(self, op: Callable[[TableBase], T]) -> T:
        return AutoCommitTable._call(self, op)

    def _write(self, op: Callable[[TableBase], T]) -> T:
        return rechecked(self._store, lambda: super(EtcdAutoCommitTable, self)._write(op), self._forget)

    def _forget(self) -> None:
        self._known = None

    def upsert(self, row: Mapping[str, Any], *, ttl: int | float | None = None) -> int:
        """See :meth:`KvAutoCommitTable.upsert` (see :func:`rechecked`)."""
        return rechecked(self._store, lambda: super(EtcdAutoCommitTable, self).upsert(row, ttl=ttl), self._forget)

    def increment(self, key: KeyLike, column: str, amount: int | float = 1) -> int | float:
        """See :meth:`KvAutoCommitTable.increment` (see :func:`rechecked`)."""
        return rechecked(
            self._store, lambda: super(EtcdAutoCommitTable, self).increment(key, column, amount), self._forget
        )

    def load(self, rows: Iterable[Mapping[str, Any]], **options: Any) -> int:
        """See :meth:`AutoCommitTable.load`; batches are cut to pieces one etcd
        transaction holds (see :func:`load_piece`), each piece atomic."""
        spec = self._read(lambda t: t.spec)
        store: EtcdStore = self._store  # type: ignore[assignment]
        expiring = spec.ttl is not None or options.get("ttl") is not None
        piece = load_piece(store.max_txn_ops, len(spec.indexes), expiring)
        batch_size = options.pop("batch_size", piece)
        if isinstance(batch_size, int):  # else the shared checks refuse it
            batch_size = max(1, min(batch_size, piece))
        return super().load(rows, batch_size=batch_size, **options)


def load_piece(max_txn_ops: int, indexes: int, expiring: bool) -> int:
    """Rows per piece of a bulk load: each row writes its row key, one entry per
    index and, when it can expire, an expiry entry; the rest of the transaction
    (row counter, feed, commit key) fits in :data:`_LOAD_RESERVE` operations.
    At etcd's default 128 operations: 96 rows of a table without index, 48 with one
    (992 and 496 at 1024)."""
    return max(1, (max_txn_ops - _LOAD_RESERVE) // (1 + indexes + (1 if expiring else 0)))


class EtcdAdmin(KvAdmin):
    """Catalog operations, each retried as ``p.run`` retries on a conflict (a
    concurrent catalog change, e.g. two tables created at once)."""

    def __init__(self, provider: EtcdProvider) -> None:
        super().__init__(provider.transaction, provider.session, provider.layouts)
        self._provider = provider

    def sweep_batch(self, layout: Layout) -> int:
        """Expired rows per sweep commit: as many as one etcd transaction holds."""
        store: EtcdStore = self._provider._etcd
        return load_piece(store.max_txn_ops, len(layout.spec.indexes), True)

    def __getattribute__(self, name: str) -> Any:
        attr = super().__getattribute__(name)
        if name in _RETRIED:
            provider = super().__getattribute__("_provider")

            @functools.wraps(attr)
            def retried(*args: Any, **kwargs: Any) -> Any:
                return provider.retried(lambda: attr(*args, **kwargs), provider.autocommit_retries)

            return retried
        return attr


_RETRIED = frozenset(
    {"create", "create_or_update", "drop", "create_staging", "swap_rows", "freeze", "unfreeze", "sweep"}
)


class EtcdProvider(KvProvider):
    """Tables in an etcd v3 cluster: ``etcd://HOST:PORT[,HOST:PORT...][/PREFIX]``.

    Every key lives under ``PREFIX/`` (default ``kvctl``). Transactions are
    serializable by optimistic concurrency (:mod:`providers.etcd.store`); the client
    moves to another member when one fails (:mod:`providers.etcd.client`).

    URL options: ``?timeout=SECONDS`` (default 5) bounds each call, after which an
    unreachable member set or a cluster without quorum is a
    ``ProviderUnavailableError``; ``?max_txn_ops=N`` (default 128, etcd's) and
    ``?max_request_bytes=N`` (default 1.5 MiB) the members' ``--max-txn-ops`` and
    ``--max-request-bytes``; ``?changes_retention=SECONDS`` (default 7 days) how
    long change-feed events are kept; ``?sweep_interval=SECONDS`` (default 60, 0:
    never) how often an open provider sweeps expired rows in the background.
    """

    capabilities: frozenset[str] = SHARED_DURABLE

    @classmethod
    def from_url(cls, url: str, *, create: bool = True) -> EtcdProvider:
        """Open ``url`` (nothing is contacted until the first call). ``create``
        changes nothing: tables under a prefix need no setup, and an empty prefix
        is a store without tables."""
        return cls(parse_url(url))

    def __init__(self, options: EtcdUrl) -> None:
        client = EtcdClient(
            options.endpoints,
            timeout=options.timeout,
            user=options.user,
            password=options.password,
            masked_url=options.masked,
        )
        store = EtcdStore(
            client, options.prefix, max_txn_ops=options.max_txn_ops, max_request_bytes=options.max_request_bytes
        )
        super().__init__(
            options.masked, store, changes_retention=options.changes_retention, sweep_interval=options.sweep_interval
        )
        self.options = options
        self._etcd = store
        store.watch.counters = self.counters

    def _transaction_session(self) -> StoreSession:
        """A session that guesses the store's generation (see :mod:`providers.etcd.store`;
        a wrong guess is a retried conflict)."""
        self.session()  # fails once the provider is closed (an etcd session holds nothing)
        return self._etcd.trusting_session()

    def run(self, fn: Callable[[TransactionBase], T], retries: int = 10) -> T:
        """See :meth:`ProviderBase.run` (a layout error met with a guessed layout is
        checked again: :func:`rechecked`)."""
        return rechecked(self._etcd, lambda: super(EtcdProvider, self).run(fn, retries))

    @property
    def admin(self) -> EtcdAdmin:
        """Table management (each change retried on conflict)."""
        if self._admin is None:
            self._admin = EtcdAdmin(self)
        return self._admin  # type: ignore[return-value]

    def table(self, name: str) -> EtcdAutoCommitTable:
        """An auto-commit handle (writes retried on conflict)."""
        self._sweeper.start()
        return EtcdAutoCommitTable(self, name, self.session, self.layouts, self._etcd, self._feed)

    @property
    def store_id(self) -> str:
        """``etcd://`` and the members and prefix, without credentials."""
        return f"etcd://{','.join(self.options.endpoints)}/{self.options.prefix}"

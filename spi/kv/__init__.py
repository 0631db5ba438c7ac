"""A complete provider engine over an ordered byte store.

Providers whose storage is a sorted map of byte strings (the in-memory provider,
RocksDB) implement only :class:`OrderedStore` — exclusive sessions with ``get``,
ordered ``iterate`` and an atomic ``commit`` — and get every table operation, the
catalog, secondary indexes, planning, ``verify``, serializable transactions and
change feeds from :class:`KvProvider`. One module per job, in dependency order:

- :mod:`spi.kv.store` — the interface a store implements
- :mod:`spi.kv.layout` — where catalog, rows and index entries live; row encoding
- :mod:`spi.kv.bulk` — bulk-load batches validated and encoded a batch at a time
- :mod:`spi.kv.buffer` — a transaction's buffered writes, read-your-writes reads
- :mod:`spi.kv.feed` — change-feed revisions and events, written in the rows' commit
- :mod:`spi.kv.scan` — running planned scans, counts, splits over a layout
- :mod:`spi.kv.table` — point reads and writes of rows with their index entries
- :mod:`spi.kv.transaction` — the transaction: buffer, cached layouts, commit
- :mod:`spi.kv.admin` and :mod:`spi.kv.verify` — the catalog and its checks
- :mod:`spi.kv.changes` — reading, watching and compacting the change feed
- :mod:`spi.kv.provider` — :class:`KvProvider`
"""

from spi.kv.layout import Layout
from spi.kv.provider import KvProvider
from spi.kv.store import OrderedStore, StoreSession
from spi.kv.transaction import KvTransaction

__all__ = ["KvProvider", "KvTransaction", "Layout", "OrderedStore", "StoreSession"]

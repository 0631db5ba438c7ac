"""The RocksDB provider: ``rocksdb:///abs/path`` or ``rocksdb:relative/path``.

kvctl's embedded default. The :mod:`spi.kv` layout over one RocksDB directory
(rocksdict); transactions are serializable because each holds the directory
exclusively (threads and processes), and it is closed again when idle.
"""

from __future__ import annotations

from providers.rocksdb.provider import RocksDBProvider

__all__ = ["RocksDBProvider"]

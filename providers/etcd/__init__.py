"""The etcd provider: ``etcd://HOST:PORT[,HOST:PORT...][/PREFIX]``.

The :mod:`spi.kv` layout under one key prefix of an etcd v3 cluster, reached
through the members' HTTP/JSON gateway; transactions are serializable by
optimistic concurrency (reads at one revision, compared at commit in one etcd
``Txn``), and calls move to another member when one fails (docs/providers/etcd.md).
"""

from __future__ import annotations

from providers.etcd.provider import EtcdProvider

__all__ = ["EtcdProvider"]

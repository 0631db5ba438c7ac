"""What a provider can do beyond the core contract, declared in ``provider.capabilities``.

Every provider implements every operation of the contract, transactions and
secondary indexes included (every provider declares those two); the other
capabilities name a guarantee or an extra that not every store can give. The
conformance kit (:mod:`spi.testing`) runs the groups that need one (threads,
processes, durability, verify, changes) only on providers that declare it and reports them
as not applicable on the others. A provider's own extras use a dotted name
(``"acme.snapshots"``) so they cannot be mistaken for a misspelt standard one.
"""

from __future__ import annotations

from enum import StrEnum


class Capability(StrEnum):
    """One capability; a ``str``, so ``"verify" in p.capabilities`` works too."""

    TRANSACTIONS = "transactions"
    """``p.transaction()`` and ``p.run`` give serializable multi-operation transactions (core)."""
    SECONDARY_INDEXES = "secondary_indexes"
    """Specs may declare indexes, and scans on them read the index (core)."""
    VERIFY = "verify"
    """``p.admin.verify(name)`` checks a table's rows against its index entries."""
    THREADS = "threads"
    """One provider object may be used from several threads at once."""
    PROCESSES = "processes"
    """Several processes may open the same store (same URL) and use it at once."""
    DURABLE = "durable"
    """Committed data survives closing the provider and opening the URL again."""
    SQL = "sql"
    """The rows are ordinary SQL tables that other SQL tools can read."""
    EXPIRY = "expiry"
    """Specs may say ``ttl=``, writes and loads take ``ttl=``, rows carry
    ``expires_at``, ``admin.sweep`` removes expired rows (SPI.md: expiry)."""
    CHANGES = "changes"
    """Specs may say ``changes=True``: ``revision``, ``changes``, ``watch`` and
    ``compact`` serve the tables' change feeds (:mod:`spi.changes`)."""


SHARED_DURABLE = frozenset(
    {
        Capability.TRANSACTIONS,
        Capability.SECONDARY_INDEXES,
        Capability.VERIFY,
        Capability.THREADS,
        Capability.PROCESSES,
        Capability.DURABLE,
        Capability.CHANGES,
        Capability.EXPIRY,
    }
)
"""Everything but ``sql``: what a durable store several processes share declares
(RocksDB, etcd; PostgreSQL adds ``sql``)."""

__all__ = ["SHARED_DURABLE", "Capability"]

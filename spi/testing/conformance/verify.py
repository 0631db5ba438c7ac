"""``admin.verify``: a table's rows and index entries agree after every kind of write."""

from __future__ import annotations

from typing import Any

import pytest

import spi
from spi import Range, col
from spi.capabilities import Capability
from spi.errors import TableNotFoundError
from spi.testing.fixtures import ORDERS, order_rows
from spi.testing.requirements import requires


@requires(Capability.VERIFY)
class VerifyTests:
    """``admin.verify`` finds nothing wrong after writes, range writes, loads and index changes."""

    def test_verify_after_every_kind_of_write(self, provider: Any, orders: Any) -> None:
        assert provider.admin.verify("orders") == []
        orders.upsert({"region": "eu", "id": 100, "status": "open"})
        orders.update(("eu", 100), {"status": "closed"})
        orders.replace({"region": "eu", "id": 100, "status": None})
        orders.delete(("us", -4))
        orders.compare_and_swap(("eu", 101), "status", None, "new")
        orders.update_range(Range.prefix(("ap",)), changes={"status": "moved"})
        orders.delete_range(where=col("status") == "pending")
        orders.load([{"region": "zz", "id": i, "status": str(i % 3)} for i in range(50)], batch_size=7)
        with provider.transaction() as tx:
            t = tx.table("orders")
            t.upsert({"region": "eu", "id": 200, "status": "open"})
            t.delete(("eu", 200))
        assert provider.admin.verify("orders") == []

    def test_verify_after_index_changes(self, provider: Any, orders: Any) -> None:
        reindexed = spi.TableSpec("orders", ORDERS.fields, ORDERS.primary_key, ["note", "total"])
        provider.admin.create_or_update(reindexed)
        assert provider.admin.verify("orders") == []
        orders.upsert({"region": "eu", "id": 1000, "total": 1.5, "note": "x"})
        assert orders.count(where=col("total") == 1.5) == 1 + sum(1 for r in order_rows() if r["total"] == 1.5)
        assert provider.admin.verify("orders") == []

    def test_verify_missing_table(self, provider: Any) -> None:
        with pytest.raises(TableNotFoundError):
            provider.admin.verify("nope")

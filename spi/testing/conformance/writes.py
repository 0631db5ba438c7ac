"""Writes and versions: upsert, insert, replace, update, delete, increment, compare-and-swap, range writes."""

from __future__ import annotations

from typing import Any

import pytest

from spi import Range, col
from spi.errors import (
    InvalidFieldError,
    RowExistsError,
    RowNotFoundError,
    VersionMismatchError,
)
from spi.testing.conformance.base import keys
from spi.testing.fixtures import COUNTERS, ORDERS, order_rows


class WriteTests:
    """Writes and versions: upsert, insert, replace, update, delete, increment, compare-and-swap, range writes."""

    def test_versions(self, provider: Any) -> None:
        provider.admin.create(ORDERS)
        t = provider.table("orders")
        k = {"region": "eu", "id": 1}
        assert t.upsert({**k, "status": "a"}) == 1
        assert t.upsert({**k, "total": 2.0}) == 2
        assert t.replace({**k, "status": "b"}) == 3
        assert t.update(k, {"note": "x"}) == 4
        assert t.increment(k, "total", 1) == 1.0  # replace nulled total
        assert t.read(k).version == 5
        assert t.compare_and_swap(k, "status", "b", "c") is True
        assert t.read(k).version == 6
        assert t.compare_and_swap(k, "status", "b", "d") is False
        assert t.read(k).version == 6
        assert t.delete(k) is True
        assert t.upsert({**k}) == 1
        with provider.transaction() as tx:
            tt = tx.table("orders")
            tt.upsert({**k, "status": "x"})
            assert tt.upsert({**k, "status": "y"}) == 3
        assert t.read(k).version == 3

    def test_update_default_is_one_write(self, provider: Any) -> None:
        provider.admin.create(ORDERS)
        t = provider.table("orders")
        assert t.update(("eu", 9), {"status": "new"}, default={"total": 1.0, "status": "old"}) == 1
        assert dict(t.read(("eu", 9))) == {"region": "eu", "id": 9, "status": "new", "total": 1.0, "note": None}

    def test_upsert_merges_and_explicit_none(self, provider: Any) -> None:
        provider.admin.create(ORDERS)
        t = provider.table("orders")
        t.upsert({"region": "eu", "id": 1, "status": "open", "total": 5.0, "note": "n"})
        t.upsert({"region": "eu", "id": 1, "total": 6.0, "note": None})
        assert dict(t.read(("eu", 1))) == {"region": "eu", "id": 1, "status": "open", "total": 6.0, "note": None}

    def test_insert_existing_raises(self, provider: Any, orders: Any) -> None:
        before = orders.read(("eu", -2))
        with pytest.raises(RowExistsError):
            orders.insert({"region": "eu", "id": -2, "status": "zzz"})
        assert orders.read(("eu", -2)) == before and orders.read(("eu", -2)).version == before.version

    def test_replace_nulls_unset_and_conditional(self, provider: Any) -> None:
        provider.admin.create(ORDERS)
        t = provider.table("orders")
        t.upsert({"region": "eu", "id": 1, "status": "open", "total": 5.0})
        assert t.replace({"region": "eu", "id": 1, "note": "x"}, version=1) == 2
        assert dict(t.read(("eu", 1))) == {"region": "eu", "id": 1, "status": None, "total": None, "note": "x"}
        with pytest.raises(VersionMismatchError) as e:
            t.replace({"region": "eu", "id": 1}, version=1)
        assert e.value.current_version == 2
        with pytest.raises(RowNotFoundError):
            t.replace({"region": "eu", "id": 2}, version=1)
        assert t.replace({"region": "eu", "id": 2, "status": "s"}) == 1

    def test_update(self, provider: Any) -> None:
        provider.admin.create(ORDERS)
        t = provider.table("orders")
        with pytest.raises(RowNotFoundError):
            t.update(("eu", 1), {"status": "x"})
        t.upsert({"region": "eu", "id": 1, "status": "open", "total": 5.0})
        assert t.update({"region": "eu", "id": 1}, {"status": "done"}, version=1) == 2
        assert t.read(("eu", 1))["total"] == 5.0
        with pytest.raises(VersionMismatchError):
            t.update(("eu", 1), {"status": "x"}, version=1)
        with pytest.raises(InvalidFieldError):
            t.update(("eu", 1), {"id": 5})
        with pytest.raises(InvalidFieldError):
            t.update(("eu", 2), {"status": "x"}, default={"region": "us"})
        with pytest.raises(RowNotFoundError):
            t.update(("eu", 3), {"status": "x"}, default={"total": 1.0}, version=1)
        assert t.read(("eu", 1))["status"] == "done"

    def test_delete(self, provider: Any, orders: Any) -> None:
        assert orders.delete(("zz", 1)) is False
        with pytest.raises(RowNotFoundError):
            orders.delete(("zz", 1), version=1)
        with pytest.raises(VersionMismatchError) as e:
            orders.delete(("eu", -5), version=7)
        assert e.value.current_version == 1
        assert orders.delete(("eu", -5), version=1) is True
        assert orders.read(("eu", -5)) is None
        assert orders.count() == len(order_rows()) - 1
        assert ("eu", -5) not in keys(orders.scan(where=col("status") == "open"))

    def test_increment(self, provider: Any) -> None:
        provider.admin.create(COUNTERS)
        t = provider.table("counters")
        assert t.increment(("a",), "n") == 1
        assert t.increment(("a",), "n", 41) == 42
        assert t.increment(("a",), "x", 0.5) == 0.5
        assert t.increment(("a",), "x", 2) == 2.5
        assert t.read(("a",))["owner"] is None
        t.upsert({"name": "b", "n": None})
        assert t.increment(("b",), "n", -3) == -3
        assert t.increment(("c",), "small", 2**31 - 1) == 2**31 - 1
        before = t.read(("c",))
        with pytest.raises(InvalidFieldError):
            t.increment(("c",), "small", 1)
        with pytest.raises(InvalidFieldError):
            t.increment(("a",), "n", 1.5)
        with pytest.raises(InvalidFieldError):
            t.increment(("a",), "owner", 1)
        with pytest.raises(InvalidFieldError):
            t.increment(("a",), "name", 1)
        assert t.read(("c",)) == before and t.read(("c",)).version == before.version
        t.upsert({"name": "big", "n": 2**63 - 1})
        with pytest.raises(InvalidFieldError):
            t.increment(("big",), "n", 1)
        for name in ("a", "new"):  # an int no double holds, over a stored double and over no row
            with pytest.raises(InvalidFieldError, match="out of range"):
                t.increment((name,), "x", 10**400)
        assert t.read(("a",))["x"] == 2.5 and t.read(("new",)) is None

    def test_compare_and_swap(self, provider: Any) -> None:
        provider.admin.create(COUNTERS)
        t = provider.table("counters")
        assert t.compare_and_swap(("a",), "owner", "x", "me") is False
        assert t.read(("a",)) is None
        assert t.compare_and_swap(("a",), "owner", None, "me") is True
        assert t.read(("a",))["owner"] == "me" and t.read(("a",)).version == 1
        assert t.compare_and_swap(("a",), "owner", None, "you") is False
        assert t.compare_and_swap(("a",), "owner", "me", None) is True
        assert t.compare_and_swap(("a",), "owner", None, "you") is True
        assert t.compare_and_swap(("a",), "n", None, 5) is True
        assert t.compare_and_swap(("a",), "n", 5, 6) is True
        with pytest.raises(InvalidFieldError):
            t.compare_and_swap(("a",), "n", "5", 6)
        with pytest.raises(InvalidFieldError):
            t.compare_and_swap(("a",), "name", "a", "b")

    def test_update_and_delete_range(self, provider: Any, orders: Any) -> None:
        rows = order_rows()
        eu_open = [r for r in rows if r["region"] == "eu" and r["status"] == "open"]
        n = orders.update_range(Range.prefix(("eu",)), where=col("status") == "open", changes={"note": "bulk"})
        assert n == len(eu_open)
        for r in eu_open:
            row = orders.read((r["region"], r["id"]))
            assert row["note"] == "bulk" and row.version == 2
        with pytest.raises(InvalidFieldError):
            orders.update_range(changes={"id": 1})
        assert orders.delete_range(where=col("status").is_null()) == sum(1 for r in rows if r["status"] is None)
        assert orders.count(where=col("status").is_null()) == 0
        assert orders.delete_range(Range(("eu",), ("us",))) == sum(
            1 for r in rows if r["region"] == "eu" and r["status"] is not None
        )
        left = orders.count()
        assert orders.delete_range() == left and orders.count() == 0

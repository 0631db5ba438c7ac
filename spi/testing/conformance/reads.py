"""Point reads, key-range scans, multi-range scans, counts and splits."""

from __future__ import annotations

from typing import Any

import pytest

from spi import Range, col
from spi.errors import InvalidFieldError
from spi.testing.conformance.base import keys, sorted_keys
from spi.testing.fixtures import order_rows


class ReadTests:
    """Point reads, key-range scans, multi-range scans, counts and splits."""

    def test_read_columns_and_read_many(self, provider: Any, orders: Any) -> None:
        row = orders.read(("us", -4), columns=["total"])
        assert set(row) == {"region", "id", "total"}
        got = orders.read_many([("us", -4), ("zz", 0), {"region": "eu", "id": -5}], columns=["status"])
        assert [None if r is None else (r["region"], r["id"]) for r in got] == [("us", -4), None, ("eu", -5)]
        assert set(got[0]) == {"region", "id", "status"}
        with pytest.raises(InvalidFieldError):
            orders.read(("us", -4), columns=["nope"])

    def test_scan_default_order_and_ranges(self, provider: Any, orders: Any) -> None:
        rows = order_rows()
        assert keys(orders.scan()) == sorted_keys(rows)
        assert keys(orders.scan(descending=True)) == sorted_keys(rows)[::-1]
        eu = [k for k in sorted_keys(rows) if k[0] == "eu"]
        assert keys(orders.scan(Range.prefix(("eu",)))) == eu
        assert keys(orders.scan(Range.prefix({"region": "eu"}))) == eu
        assert keys(orders.scan(Range(("eu", 0), ("eu", 10)))) == [k for k in eu if 0 <= k[1] < 10]
        assert keys(orders.scan(Range(("eu", 0), ("eu", 10), start_inclusive=False, end_inclusive=True))) == [
            k for k in eu if 0 < k[1] <= 10
        ]
        assert keys(orders.scan(Range(None, ("eu",), end_inclusive=True))) == [
            k for k in sorted_keys(rows) if k[0] <= "eu"
        ]
        assert keys(orders.scan(Range(None, ("eu",)))) == [k for k in sorted_keys(rows) if k[0] < "eu"]
        assert keys(orders.scan(Range(("eu",), None, start_inclusive=False))) == [
            k for k in sorted_keys(rows) if k[0] > "eu"
        ]
        assert keys(orders.scan(Range.singleton(("us", -4)))) == [("us", -4)]
        assert keys(orders.scan(Range.all(), limit=3)) == sorted_keys(rows)[:3]
        assert list(orders.scan(limit=0)) == []

    def test_bad_ranges(self, provider: Any, orders: Any) -> None:
        for bad in (Range({"id": 1}), Range(("eu", "x")), Range({"nope": 1}), Range(("eu", 1, 2))):
            with pytest.raises(InvalidFieldError):
                list(orders.scan(bad))
        with pytest.raises(InvalidFieldError):
            list(orders.scan(Range.singleton(("eu",))))

    def test_multi_scan(self, provider: Any, orders: Any) -> None:
        rows = order_rows()
        ranges = [Range.prefix(("us",)), Range(("ap", 0), ("eu", 0)), Range.prefix(("eu",))]
        expected = sorted({k for k in sorted_keys(rows) if k[0] in ("us", "eu") or ("ap", 0) <= k < ("eu", 0)})
        assert keys(orders.multi_scan(ranges)) == expected
        assert keys(orders.multi_scan(ranges, limit=5)) == expected[:5]
        assert list(orders.multi_scan(ranges, limit=0)) == []
        assert keys(orders.multi_scan(ranges, where=col("status") == "open")) == [
            k for k in expected if next(r for r in rows if (r["region"], r["id"]) == k)["status"] == "open"
        ]
        row = next(orders.multi_scan([Range.prefix(("eu",))], columns=["note"]))
        assert set(row) == {"region", "id", "note"}

    def test_count(self, provider: Any, orders: Any) -> None:
        rows = order_rows()
        assert orders.count() == len(rows)
        assert orders.count(Range.prefix(("us",))) == sum(1 for r in rows if r["region"] == "us")
        assert orders.count(Range.prefix(("us",)), where=col("status") == "open") == sum(
            1 for r in rows if r["region"] == "us" and r["status"] == "open"
        )

    def test_split(self, provider: Any, orders: Any) -> None:
        for n in (1, 2, 4, 7):
            ranges = orders.split(n)
            assert 1 <= len(ranges) <= max(n, 1) + 1
            parts = [keys(orders.scan(r)) for r in ranges]
            assert [k for p in parts for k in p] == keys(orders.scan())
        with pytest.raises(InvalidFieldError):
            orders.split(0)
        sizes = [orders.count(r) for r in orders.split(3)]
        assert max(sizes) <= 2 * len(order_rows()) // 3 + 2

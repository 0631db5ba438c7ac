"""Secondary indexes: ordering by an index or key column, and explain."""

from __future__ import annotations

from typing import Any

import pytest

from spi import Range, col
from spi.errors import InvalidFieldError
from spi.testing.conformance.base import keys, sorted_keys
from spi.testing.fixtures import order_rows
from spi.types import sort_key


class IndexTests:
    """Secondary indexes: ordering by an index or key column, and explain."""

    def test_order_by_index_and_key(self, provider: Any, orders: Any) -> None:
        rows = order_rows()

        def ordered(column: str) -> list[tuple[Any, ...]]:
            return keys(
                sorted(
                    rows,
                    key=lambda r: (
                        (r[column] is not None, sort_key(r[column]) if r[column] is not None else 0),
                        r["region"],
                        r["id"],
                    ),
                )
            )

        assert keys(orders.scan(order_by="status")) == ordered("status")
        assert keys(orders.scan(order_by="status", descending=True)) == ordered("status")[::-1]
        assert keys(orders.scan(order_by="id")) == ordered("id")
        assert keys(orders.scan(order_by="id", descending=True)) == ordered("id")[::-1]
        assert keys(orders.scan(order_by="region")) == sorted_keys(rows)
        sel = keys(orders.scan(Range.prefix(("eu",)), where=col("status") != "closed", order_by="status", limit=4))
        assert (
            sel
            == [
                k
                for k in ordered("status")
                if k[0] == "eu"
                and next(r for r in rows if (r["region"], r["id"]) == k)["status"] not in (None, "closed")
            ][:4]
        )
        with pytest.raises(InvalidFieldError, match="index"):
            orders.scan(order_by="total")
        with pytest.raises(InvalidFieldError):
            orders.scan(order_by="nope")

    def test_explain(self, provider: Any, orders: Any) -> None:
        """explain describes a scan without running it: it names the columns the filter
        and the order use, rejects exactly what the scan rejects, and changes nothing."""
        assert "status" in orders.explain(where=col("status") == "open")
        assert "total" in orders.explain(Range.prefix(("eu",)), where=col("total") > 3)
        assert "status" in orders.explain(Range.prefix(("eu",)), order_by="status")
        for bad in (
            {"order_by": "total"},
            {"where": col("nope") == 1},
            {"where": col("total") == "x"},
            {"range": Range.prefix(("eu", "x"))},
        ):
            with pytest.raises(InvalidFieldError):
                orders.explain(**bad)
            with pytest.raises(InvalidFieldError):
                list(orders.scan(**bad))
        assert orders.count() == len(order_rows())

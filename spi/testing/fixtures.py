"""Specs and rows the conformance suite uses."""

from __future__ import annotations

import datetime as dt
from typing import Any

from spi.spec import Field, TableSpec

ORDERS = TableSpec(
    "orders",
    [
        Field("region", "string"),
        Field("id", "long"),
        Field("status", "string"),
        Field("total", "double"),
        Field("note", "string"),
    ],
    primary_key=["region", "id"],
    indexes=["status"],
)

ALL_TYPES = TableSpec(
    "alltypes",
    [
        Field("k", "long"),
        Field("i", "int"),
        Field("l", "long"),
        Field("f", "float"),
        Field("d", "double"),
        Field("s", "string"),
        Field("b", "bytes"),
        Field("flag", "bool"),
        Field("ts", "timestamp"),
    ],
    primary_key=["k"],
    indexes=["i", "s", "ts"],
)

COUNTERS = TableSpec(
    "counters",
    [
        Field("name", "string"),
        Field("n", "long"),
        Field("x", "double"),
        Field("small", "int"),
        Field("owner", "string"),
    ],
    primary_key=["name"],
)


def order_rows(n: int = 30) -> list[dict[str, Any]]:
    """Deterministic rows for ORDERS: three regions, mixed statuses, some nulls."""
    regions = ["eu", "us", "ap"]
    statuses = ["open", "closed", "pending", None]
    return [
        {
            "region": regions[i % 3],
            "id": i - 5,
            "status": statuses[i % 4],
            "total": None if i % 7 == 0 else round((i * 37 % 101) * 1.25 - 20, 2),
            "note": None if i % 5 else f"n{i}",
        }
        for i in range(n)
    ]


UTC = dt.UTC

"""Specs and rows the conformance suite uses."""

from __future__ import annotations

import datetime as dt
import math
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


def all_types_row(i: int) -> dict[str, Any]:
    """Row ``i`` of :data:`ALL_TYPES`, cycling through each type's edge values:
    bounds, nulls, -0.0, NaN, an int for a double, non-ASCII text, empty values,
    bytearray, and timestamps in other zones."""
    ints = [0, 2**31 - 1, -(2**31), None, 7]
    longs = [2**63 - 1, -(2**63), None, 0, 123456789012]
    floats = [0.1, -0.0, None, 3.5, math.nan]
    doubles = [1.5, None, 1e300, 3, -2.25, -0.0, math.nan]
    strings = ["plain", "żółw 🐢", "", None, "x" * 300]
    blobs: list[Any] = [b"\x00\xff", bytearray(b"ba"), b"", None]
    flags = [True, False, None]
    zone = dt.timezone(dt.timedelta(hours=2))
    stamps = [
        dt.datetime(2024, 2, 29, 12, 0, 0, 123456, tzinfo=UTC),
        None,
        dt.datetime(1969, 12, 31, 23, 59, tzinfo=zone),
    ]
    return {
        "k": i - 20,
        "i": ints[i % len(ints)],
        "l": longs[i % len(longs)],
        "f": floats[i % len(floats)],
        "d": doubles[i % len(doubles)],
        "s": strings[i % len(strings)],
        "b": blobs[i % len(blobs)],
        "flag": flags[i % len(flags)],
        "ts": stamps[i % len(stamps)],
    }

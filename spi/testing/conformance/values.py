"""Every type round-trips, and each type has the one total order of SPI.md."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import pytest

import spi
from spi.testing.fixtures import ALL_TYPES, UTC


class ValueTests:
    """Every type round-trips, and each type has the one total order of SPI.md."""

    def test_all_types_round_trip(self, provider: Any) -> None:
        provider.admin.create(ALL_TYPES)
        t = provider.table("alltypes")
        ts = dt.datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=dt.timezone(dt.timedelta(hours=2)))
        row = {
            "k": -7,
            "i": -(2**31),
            "l": 2**63 - 1,
            "f": 0.1,
            "d": -1e308,
            "s": "naïve ✓ 日本",
            "b": b"\x00\xff\x00",
            "flag": True,
            "ts": ts,
        }
        t.upsert(row)
        got = t.read((-7,))
        assert got["f"] == spi.types.to_float32(0.1) and got["f"] != 0.1
        assert got["ts"] == ts and got["ts"].utcoffset() == dt.timedelta(0)
        assert {c: got[c] for c in ("k", "i", "l", "d", "s", "b", "flag")} == {
            c: row[c] for c in ("k", "i", "l", "d", "s", "b", "flag")
        }
        t.upsert({"k": 8, "d": 3})
        assert t.read((8,))["d"] == 3.0 and isinstance(t.read((8,))["d"], float)
        nulls = t.read((8,))
        assert all(nulls[c] is None for c in ("i", "l", "f", "s", "b", "flag", "ts"))

    def test_order_per_type(self, provider: Any) -> None:
        provider.admin.create(ALL_TYPES)
        t = provider.table("alltypes")
        values: dict[str, list[Any]] = {
            "i": [-(2**31), -5, 0, 3, 2**31 - 1],
            "s": ["", "A", "Z", "a", "a\u00e9", "b", "é", "\U0001f600"],
            "ts": [
                dt.datetime(1, 1, 1, tzinfo=UTC),
                dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
                dt.datetime(1970, 1, 1, tzinfo=UTC),
                dt.datetime(9999, 12, 31, tzinfo=UTC),
            ],
        }
        k = 0
        for column, vals in values.items():
            for v in vals[::-1]:
                k += 1
                t.upsert({"k": k, column: v})
        for column, vals in values.items():
            got = [r[column] for r in t.scan(order_by=column) if r[column] is not None]
            assert got == vals
            assert [r[column] for r in t.scan(order_by=column, descending=True) if r[column] is not None] == vals[::-1]
            assert next(iter(t.scan(order_by=column)))[column] is None  # nulls first

    @pytest.mark.parametrize(
        ("ftype", "values"),
        [
            ("long", [-(2**63), -1, 0, 1, 2**63 - 1]),
            ("double", [-math.inf, -1e300, -1.5, -0.0, 1e-300, 2.5, math.inf]),
            ("float", [-3.5, -1.0, 0.0, 0.25, 1e30]),
            ("string", ["", "\x01", "a", "ab", "b", "ÿ", "ā", "\U0010ffff"]),
            ("bytes", [b"", b"\x00", b"\x00\x00", b"\x00\x01", b"\x01", b"\xff", b"\xff\x00"]),
            ("bool", [False, True]),
        ],
    )
    def test_key_order(self, provider: Any, ftype: str, values: list[Any]) -> None:
        spec = spi.TableSpec("ko", [spi.Field("k", ftype), spi.Field("v", "long")], ["k"])
        provider.admin.create(spec)
        t = provider.table("ko")
        for i, v in enumerate(reversed(values)):
            t.upsert({"k": v, "v": i})
        got = [r["k"] for r in t.scan()]
        stored = [spi.types.to_float32(v) if ftype == "float" else v for v in values]
        assert got == [v + 0.0 if isinstance(v, float) else v for v in stored]
        assert [r["k"] for r in t.scan(descending=True)] == got[::-1]

"""Bad input writes nothing: wrong types, NaN in keys, size limits, partial and wrong keys."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import pytest

import spi
from spi import col
from spi.errors import (
    InvalidFieldError,
    LimitExceededError,
)
from spi.testing.fixtures import ALL_TYPES


class LimitTests:
    """Bad input writes nothing: wrong types, NaN in keys, size limits, partial and wrong keys."""

    @pytest.mark.parametrize(
        ("row", "error"),
        [
            ({"k": 1, "i": 2**31}, InvalidFieldError),
            ({"k": 1, "i": -(2**31) - 1}, InvalidFieldError),
            ({"k": 2**63}, InvalidFieldError),
            ({"k": 1, "i": "1"}, InvalidFieldError),
            ({"k": 1, "i": True}, InvalidFieldError),
            ({"k": 1, "l": 1.0}, InvalidFieldError),
            ({"k": 1, "f": 1e39}, InvalidFieldError),
            ({"k": 1, "s": "a\x00b"}, InvalidFieldError),
            ({"k": 1, "s": 5}, InvalidFieldError),
            ({"k": 1, "b": "text"}, InvalidFieldError),
            ({"k": 1, "flag": 1}, InvalidFieldError),
            ({"k": 1, "ts": dt.datetime(2024, 1, 1)}, InvalidFieldError),
            ({"k": 1, "ts": "2024-01-01"}, InvalidFieldError),
            ({"k": 1, "nope": 1}, InvalidFieldError),
            ({"i": 1}, InvalidFieldError),
            ({"k": None}, InvalidFieldError),
            ({"k": 1, "s": "x" * 1025}, LimitExceededError),
            ({"k": 1, "b": b"x" * (16 * 1024 * 1024 + 1)}, LimitExceededError),
        ],
    )
    def test_invalid_values_write_nothing(self, provider: Any, row: dict[str, Any], error: type) -> None:
        provider.admin.create(ALL_TYPES)
        t = provider.table("alltypes")
        t.upsert({"k": 1, "s": "keep"})
        for op in (t.upsert, t.insert, t.replace):
            with pytest.raises(error):
                op(row)
        assert t.count() == 1 and dict(t.read((1,)))["s"] == "keep" and t.read((1,)).version == 1

    def test_timestamps_outside_utc_years_rejected(self, provider: Any) -> None:
        provider.admin.create(ALL_TYPES)
        t = provider.table("alltypes")
        early = dt.datetime(1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1)))
        late = dt.datetime(9999, 12, 31, 23, tzinfo=dt.timezone(dt.timedelta(hours=-2)))
        for value in (early, late):
            with pytest.raises(InvalidFieldError, match="'ts'"):
                t.upsert({"k": 1, "ts": value})
            with pytest.raises(InvalidFieldError) as info:
                t.load([{"k": 2}, {"k": 3, "ts": value}])
            assert info.value.row_index == 1
            with pytest.raises(InvalidFieldError):
                list(t.scan(where=col("ts") == value))
            with pytest.raises(InvalidFieldError, match="outside years"):
                spi.parse_where(f"ts = '{value.isoformat()}'", ALL_TYPES)
        assert t.count() == 0

    def test_nan_in_key_rejected(self, provider: Any) -> None:
        spec = spi.TableSpec("fk", [spi.Field("k", "double"), spi.Field("v", "double")], ["k"])
        provider.admin.create(spec)
        t = provider.table("fk")
        with pytest.raises(InvalidFieldError):
            t.upsert({"k": math.nan})
        t.upsert({"k": 1.0, "v": math.nan})
        assert math.isnan(t.read((1.0,))["v"])
        t.upsert({"k": -0.0, "v": 1.0})
        assert t.read((0.0,))["v"] == 1.0 and t.count() == 2

    def test_value_limits(self, provider: Any) -> None:
        provider.admin.create(ALL_TYPES)
        t = provider.table("alltypes")
        t.upsert({"k": 1, "s": "é" * 512})  # 1024 bytes: allowed in an indexed column
        with pytest.raises(LimitExceededError):
            t.upsert({"k": 2, "s": "é" * 512 + "x"})
        spec = spi.TableSpec("big", [spi.Field("k", "long"), spi.Field("v", "bytes"), spi.Field("s", "string")], ["k"])
        provider.admin.create(spec)
        big = provider.table("big")
        big.upsert({"k": 1, "v": b"\x00" * (16 * 1024 * 1024), "s": "y" * 5000})
        assert len(big.read((1,))["v"]) == 16 * 1024 * 1024
        with pytest.raises(LimitExceededError):
            big.upsert({"k": 2, "s": "y" * (16 * 1024 * 1024 + 1)})

    def test_partial_and_wrong_keys(self, provider: Any, orders: Any) -> None:
        with pytest.raises(InvalidFieldError):
            orders.read(("eu",))
        with pytest.raises(InvalidFieldError):
            orders.read({"region": "eu"})
        with pytest.raises(InvalidFieldError):
            orders.read({"id": 1})
        with pytest.raises(InvalidFieldError):
            orders.read(("eu", "x"))
        with pytest.raises(InvalidFieldError):
            orders.read(("eu", 1, 2))
        with pytest.raises(InvalidFieldError):
            orders.delete({"region": "eu", "status": "x"})
        assert orders.read({"id": -2, "region": "eu"})["id"] == -2

"""Scan pages and their tokens, column batches and Arrow batches."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import pytest

import spi
from spi import Range, col
from spi.arrow import arrow_schema
from spi.errors import InvalidFieldError
from spi.testing.conformance.base import keys
from spi.testing.fixtures import ALL_TYPES, ORDERS, UTC
from spi.testing.requirements import need_module


class PagingTests:
    """Scan pages and their tokens, column batches and Arrow batches."""

    def test_scan_page(self, provider: Any, orders: Any) -> None:
        for order_by, desc, where in [
            (None, False, None),
            (None, True, col("status") != "x"),
            ("status", False, None),
            ("status", True, col("total") > 0),
            ("id", False, None),
        ]:
            expected = keys(orders.scan(order_by=order_by, descending=desc, where=where))
            got: list[tuple[Any, ...]] = []
            token = None
            pages = 0
            while True:
                page = orders.scan_page(order_by=order_by, descending=desc, where=where, limit=4, after=token)
                got += keys(page.rows)
                pages += 1
                if page.next_token is None:
                    assert len(page.rows) <= 4
                    break
                assert len(page.rows) == 4
                token = page.next_token
            assert got == expected
            assert pages == max(1, -(-len(expected) // 4))

    def test_scan_page_limit_zero_keeps_position(self, provider: Any, orders: Any) -> None:
        first = orders.scan_page(limit=3)
        empty = orders.scan_page(limit=0, after=first.next_token)
        assert empty.rows == [] and empty.next_token is not None
        assert keys(orders.scan_page(limit=3, after=empty.next_token).rows) == keys(orders.scan())[3:6]
        start = orders.scan_page(limit=0)
        assert (
            start.rows == [] and keys(orders.scan_page(limit=2, after=start.next_token).rows) == keys(orders.scan())[:2]
        )

    def test_scan_page_token_survives_writes_and_new_handle(self, provider: Any, orders: Any) -> None:
        page = orders.scan_page(limit=5)
        last = keys(page.rows)[-1]
        orders.delete(last)
        orders.upsert({"region": "ap", "id": -100})
        rest = keys(orders.scan_page(limit=1000, after=page.next_token).rows)
        assert rest == [k for k in keys(orders.scan()) if k > last]

    def test_bad_tokens(self, provider: Any, orders: Any) -> None:
        page = orders.scan_page(limit=2)
        for bad in ("garbage", "", page.next_token[:-4] + "AAAA"):
            with pytest.raises(InvalidFieldError):
                orders.scan_page(limit=2, after=bad)
        with pytest.raises(InvalidFieldError):
            orders.scan_page(limit=2, after=page.next_token, order_by="status")
        provider.admin.create_or_update(spi.TableSpec("orders", ORDERS.fields, ORDERS.primary_key, []))
        with pytest.raises(InvalidFieldError, match="spec"):
            orders.scan_page(limit=2, after=page.next_token)

    def test_scan_batches_match_scan(self, provider: Any, orders: Any) -> None:
        cases: list[tuple[Any, Any, Any]] = [
            (None, None, None),
            (Range.prefix(("eu",)), None, None),
            (Range(("eu", 0), ("us", 3), start_inclusive=False, end_inclusive=True), None, None),
            (None, col("status") == "open", None),
            (None, (col("total") > 0) | col("note").is_null(), ["total"]),
            (Range.prefix(("zz",)), None, None),
            (None, col("status") == "none such", ["note"]),
        ]
        for rng, where, columns in cases:
            rows = [dict(r) for r in orders.scan(rng, where=where, columns=columns)]
            for size in (1, 4, 7, 30, 31, 10_000):
                auto = list(orders.scan_batches(rng, where=where, columns=columns, batch_size=size))
                with provider.transaction() as tx:
                    in_tx = list(tx.table("orders").scan_batches(rng, where=where, columns=columns, batch_size=size))
                for batches in (auto, in_tx):
                    sizes = [len(next(iter(b.values()))) for b in batches]
                    assert all(len(values) == n for b, n in zip(batches, sizes) for values in b.values())
                    assert sizes == [size] * (len(rows) // size) + ([len(rows) % size] if len(rows) % size else [])
                    assert [dict(zip(b, values)) for b in batches for values in zip(*b.values())] == rows
                    assert all(list(b) == list(rows[0]) for b in batches)

    def test_scan_batches_types_empty_and_errors(self, provider: Any) -> None:
        provider.admin.create(ALL_TYPES)
        t = provider.table("alltypes")
        assert list(t.scan_batches()) == []
        ts = dt.datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=dt.timezone(dt.timedelta(hours=2)))
        t.upsert({"k": -7, "i": -5, "l": 2**63 - 1, "f": 0.1, "d": -1e308, "s": "naïve ✓ 日本", "b": b"\x00\xff"})
        t.upsert({"k": 8, "ts": ts, "flag": False, "b": b""})
        expected = {c: [r[c] for r in t.scan()] for c in ALL_TYPES.columns}

        def check(table: Any) -> None:
            (batch,) = list(table.scan_batches())
            assert batch == expected
            assert type(batch["b"][0]) is bytes and type(batch["f"][0]) is float
            assert batch["ts"][1] == ts and batch["ts"][1].utcoffset() == dt.timedelta(0)
            assert batch["f"][0] == spi.types.to_float32(0.1)
            for bad in ({"batch_size": 0}, {"batch_size": True}, {"columns": ["nope"]}, {"where": col("s") > 3}):
                with pytest.raises(InvalidFieldError):
                    table.scan_batches(**bad)

        check(t)
        with provider.transaction() as tx:
            check(tx.table("alltypes"))

    def test_scan_arrow_matches_scan(self, provider: Any, orders: Any) -> None:
        pa = need_module("pyarrow")
        provider.admin.create(ALL_TYPES)
        t = provider.table("alltypes")
        assert list(t.scan_arrow()) == []
        odd = dt.timezone(dt.timedelta(hours=-3, minutes=-30))
        values: list[dict[str, Any]] = [
            {"k": -9, "s": "", "b": b"", "f": 0.0, "d": -0.0, "flag": False},
            {"k": -1, "s": 'naïve ✓ 日本\n"q",x', "b": b'\x00\xff\n,"', "f": 0.1, "d": math.nan},
            {"k": 0, "i": -(2**31), "l": -(2**63), "f": -3.4028234663852886e38, "d": math.inf, "flag": True},
            {"k": 3, "i": 2**31 - 1, "l": 2**63 - 1, "f": 1.401298464324817e-45, "d": -math.inf, "s": "NULL"},
            {"k": 4, "ts": dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), "s": "\\.", "b": b"\\x"},
            {"k": 5, "ts": dt.datetime(1, 1, 1, tzinfo=UTC), "d": 5e-324, "f": math.nan, "s": "NaN"},
            {"k": 6, "ts": dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), "d": 0.1 + 0.2},
            {"k": 7, "ts": dt.datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=odd), "f": 16777217.0, "s": " t "},
        ]
        for row in values:
            t.upsert(row)
        cases: list[tuple[Any, Any, Any]] = [
            (None, None, None),
            (Range((-1,), (5,), start_inclusive=False), None, None),
            (None, col("s").is_null() | (col("s") == ""), ["b", "ts"]),
            (None, col("i") > 0, ["f"]),
            (Range((100,), None), None, None),
        ]
        for rng, where, columns in cases:
            expected = [dict(r) for r in t.scan(rng, where=where, columns=columns)]
            for size in (1, 3, 10_000):
                auto = list(t.scan_arrow(rng, where=where, columns=columns, batch_size=size))
                with provider.transaction() as tx:
                    in_tx = list(tx.table("alltypes").scan_arrow(rng, where=where, columns=columns, batch_size=size))
                for batches in (auto, in_tx):
                    assert all(0 < b.num_rows <= size for b in batches)
                    for b in batches:
                        assert b.schema == arrow_schema(ALL_TYPES, list(expected[0]))
                    got = [row for b in batches for row in b.to_pylist()]
                    assert len(got) == len(expected)
                    for g, e in zip(got, expected):
                        assert list(g) == list(e)
                        for c, v in e.items():
                            w = g[c]
                            if isinstance(v, float) and math.isnan(v):
                                assert isinstance(w, float) and math.isnan(w), (c, v, w)
                            else:
                                assert w == v and type(w) is type(v), (c, v, w)
                                if isinstance(v, float):
                                    assert math.copysign(1, w) == math.copysign(1, v), (c, v, w)
        for bad in ({"batch_size": 0}, {"columns": ["nope"]}, {"where": col("total") > "x"}):
            with pytest.raises(InvalidFieldError):
                orders.scan_arrow(**bad)
            with provider.transaction() as tx, pytest.raises(InvalidFieldError):
                tx.table("orders").scan_arrow(**bad)
        assert pa.Table.from_batches(list(orders.scan_arrow(batch_size=4))).num_rows == len(list(orders.scan()))

"""The conformance suite: every operation, option and error of SPI.md."""

from __future__ import annotations

import datetime as dt
import math
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import spi
from spi import Range, col
from spi.errors import (
    ConflictError,
    IncompatibleSchemaError,
    InvalidFieldError,
    KvError,
    LimitExceededError,
    RowExistsError,
    RowNotFoundError,
    SchemaError,
    TableExistsError,
    TableNotFoundError,
    VersionMismatchError,
)
from spi.testing.fixtures import ALL_TYPES, COUNTERS, ORDERS, UTC, all_types_row, order_rows

ProviderFactory = Callable[[], Any]


def keys(rows: Any) -> list[tuple[Any, ...]]:
    """(region, id) of ORDERS rows, in the order given."""
    return [(r["region"], r["id"]) for r in rows]


def sorted_keys(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted(keys(rows))


class ConformanceTests:
    """Subclass and define the ``provider_factory`` fixture to run the suite."""

    @pytest.fixture
    def provider_factory(self) -> ProviderFactory:  # pragma: no cover - must be overridden
        raise NotImplementedError("define a provider_factory fixture returning a callable that opens a fresh provider")

    @pytest.fixture
    def provider(self, provider_factory: ProviderFactory) -> Iterator[Any]:
        p = provider_factory()
        try:
            yield p
        finally:
            p.close()

    @pytest.fixture
    def orders(self, provider: Any) -> Any:
        provider.admin.create(ORDERS)
        t = provider.table("orders")
        t.load(order_rows())
        return t

    # ------------------------------------------------------------------ admin
    def test_create_get_spec_exists_list(self, provider: Any) -> None:
        assert provider.admin.list_tables() == []
        provider.admin.create(ORDERS)
        provider.admin.create(COUNTERS)
        assert provider.admin.exists("orders") and not provider.admin.exists("nope")
        assert provider.admin.get_spec("orders") == ORDERS
        assert provider.admin.list_tables() == ["counters", "orders"]

    def test_list_tables_code_point_order(self, provider: Any) -> None:
        for name in ["b", "B", "a_", "A", "_x", "a"]:
            provider.admin.create(spi.TableSpec(name, [spi.Field("k", "long")], ["k"]))
        assert provider.admin.list_tables() == sorted(["b", "B", "a_", "A", "_x", "a"])

    def test_create_existing_raises(self, provider: Any) -> None:
        provider.admin.create(ORDERS)
        with pytest.raises(TableExistsError):
            provider.admin.create(ORDERS)

    def test_missing_table_errors(self, provider: Any) -> None:
        with pytest.raises(TableNotFoundError):
            provider.admin.get_spec("nope")
        with pytest.raises(TableNotFoundError):
            provider.admin.drop("nope")
        provider.admin.drop("nope", missing_ok=True)
        with pytest.raises(TableNotFoundError):
            provider.table("nope").read((1,))
        with pytest.raises(TableNotFoundError), provider.transaction() as tx:
            tx.table("nope")

    def test_drop_removes_data(self, provider: Any, orders: Any) -> None:
        provider.admin.drop("orders")
        assert not provider.admin.exists("orders")
        provider.admin.create(ORDERS)
        t = provider.table("orders")
        assert t.count() == 0
        assert list(t.scan(order_by="status")) == []
        assert t.read(("eu", -5)) is None

    def test_create_or_update_create_and_noop(self, provider: Any) -> None:
        provider.admin.create_or_update(ORDERS)
        provider.table("orders").upsert({"region": "eu", "id": 1, "status": "open"})
        reordered = spi.TableSpec("orders", list(reversed(ORDERS.fields)), ORDERS.primary_key, ORDERS.indexes)
        provider.admin.create_or_update(reordered)
        assert provider.admin.get_spec("orders") == ORDERS
        assert provider.table("orders").read(("eu", 1))["status"] == "open"

    def test_create_or_update_compatible_changes(self, provider: Any, orders: Any) -> None:
        before = {k: orders.read(k) for k in keys(order_rows())}
        new = spi.TableSpec(
            "orders",
            [*ORDERS.fields, spi.Field("extra", "string")],
            ORDERS.primary_key,
            ["note", "total"],
        )
        provider.admin.create_or_update(new)
        assert provider.admin.get_spec("orders") == new
        for k, old in before.items():
            row = orders.read(k)
            assert row["extra"] is None
            assert {c: row[c] for c in ORDERS.columns} == dict(old)
            assert row.version == old.version
        assert keys(orders.scan(where=col("total") > 50, order_by="total")) == keys(
            sorted(
                (r for r in order_rows() if r["total"] is not None and r["total"] > 50),
                key=lambda r: (r["total"], r["region"], r["id"]),
            )
        )
        assert orders.count(where=col("status") == "open") == sum(1 for r in order_rows() if r["status"] == "open")
        with pytest.raises(InvalidFieldError):
            orders.scan(order_by="status")

    def test_create_or_update_widening(self, provider: Any) -> None:
        narrow = spi.TableSpec(
            "w", [spi.Field("k", "int"), spi.Field("a", "int"), spi.Field("b", "float")], ["k"], ["a"]
        )
        provider.admin.create(narrow)
        provider.table("w").upsert({"k": 1, "a": 5, "b": 1.5})
        wide = spi.TableSpec(
            "w", [spi.Field("k", "int"), spi.Field("a", "long"), spi.Field("b", "double")], ["k"], ["a"]
        )
        provider.admin.create_or_update(wide)
        t = provider.table("w")
        t.upsert({"k": 2, "a": 2**40, "b": 0.1})
        assert t.read((2,))["a"] == 2**40 and t.read((2,))["b"] == 0.1
        assert keys_of(t.scan(order_by="a"), "k") == [1, 2]
        assert t.count(where=col("a") == 5) == 1

    @pytest.mark.parametrize(
        "change",
        [
            "remove_column",
            "retype_column",
            "narrow_column",
            "change_key",
            "retype_key",
        ],
    )
    def test_create_or_update_incompatible(self, provider: Any, orders: Any, change: str) -> None:
        fields = {f.name: f.type.value for f in ORDERS.fields}
        pk = list(ORDERS.primary_key)
        if change == "remove_column":
            del fields["note"]
        elif change == "retype_column":
            fields["note"] = "long"
        elif change == "narrow_column":
            fields["total"] = "float"
        elif change == "change_key":
            pk = ["id", "region"]
        else:
            fields["id"] = "int"
        new = spi.TableSpec("orders", list(fields.items()), pk, ORDERS.indexes)
        with pytest.raises(IncompatibleSchemaError):
            provider.admin.create_or_update(new)
        assert provider.admin.get_spec("orders") == ORDERS
        assert orders.count() == len(order_rows())

    # ------------------------------------------------------------- versions
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

    # ---------------------------------------------------------------- writes
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

    # ------------------------------------------------------------ validation
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

    # ------------------------------------------------------------------ types
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

    # ----------------------------------------------------------------- reads
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

    def test_where(self, provider: Any, orders: Any) -> None:
        rows = order_rows()

        def expect(pred: Callable[[dict[str, Any]], bool]) -> list[tuple[Any, ...]]:
            return sorted_keys([r for r in rows if pred(r)])

        cases: list[tuple[Any, Callable[[dict[str, Any]], bool]]] = [
            (col("status") == "open", lambda r: r["status"] == "open"),
            (col("status") != "open", lambda r: r["status"] is not None and r["status"] != "open"),
            (col("total") < 10, lambda r: r["total"] is not None and r["total"] < 10),
            (col("total") >= 10.5, lambda r: r["total"] is not None and r["total"] >= 10.5),
            (col("id") > 3, lambda r: r["id"] > 3),
            (col("status").isin(["open", "pending", None]), lambda r: r["status"] in ("open", "pending")),
            (col("status").is_null(), lambda r: r["status"] is None),
            (col("note").not_null(), lambda r: r["note"] is not None),
            (col("note").startswith("n1"), lambda r: (r["note"] or "").startswith("n1")),
            (~(col("status") == "open"), lambda r: r["status"] is not None and r["status"] != "open"),
            (
                (col("status") == "open") | (col("total") > 50),
                lambda r: r["status"] == "open" or (r["total"] is not None and r["total"] > 50),
            ),
            (
                (col("status") == "open") & (col("region") == "eu"),
                lambda r: r["status"] == "open" and r["region"] == "eu",
            ),
            (
                col("region").isin(["eu", "ap"]) & (col("id") <= 10),
                lambda r: r["region"] in ("eu", "ap") and r["id"] <= 10,
            ),
            ((col("total") > 0) & (col("total") < 0), lambda r: False),
            (col("total") == None, lambda r: False),  # noqa: E711 - SQL null semantics on purpose
        ]
        for expr, pred in cases:
            assert sorted(keys(orders.scan(where=expr))) == expect(pred), str(expr)
            assert orders.count(where=expr) == len(expect(pred)), str(expr)

    def test_where_type_errors(self, provider: Any, orders: Any) -> None:
        for bad in (
            col("status") == 5,
            col("id") == "x",
            col("nope") == 1,
            col("total").startswith("x"),
            col("id").isin(["a"]),
        ):
            with pytest.raises(InvalidFieldError):
                orders.scan(where=bad)
            with pytest.raises(InvalidFieldError):
                orders.count(where=bad)

    def test_parse_where_matches_builder(self, provider: Any, orders: Any) -> None:
        text = (
            "status = 'open' and (total >= 10.5 or region in ('eu','us')) and note is not null and not note like 'n1%'"
        )
        built = (
            (col("status") == "open")
            & ((col("total") >= 10.5) | col("region").isin(["eu", "us"]))
            & col("note").not_null()
            & ~col("note").like("n1%")
        )
        parsed = spi.parse_where(text, ORDERS)
        assert keys(orders.scan(where=parsed)) == keys(orders.scan(where=built))
        assert keys(orders.scan(where=spi.parse_where("id between -2 and 4 and status <> 'closed'", ORDERS))) == keys(
            orders.scan(where=(col("id") >= -2) & (col("id") <= 4) & (col("status") != "closed"))
        )

    def test_like_is_case_sensitive_and_literal(self, provider: Any) -> None:
        spec = spi.TableSpec("lk", [spi.Field("k", "long"), spi.Field("s", "string")], ["k"])
        provider.admin.create(spec)
        t = provider.table("lk")
        for i, s in enumerate(["abc", "ABC", "a_c", "a%c", "axc", "ab", "a\nc"]):
            t.upsert({"k": i, "s": s})
        assert [r["s"] for r in t.scan(where=col("s").like("a_c"))] == ["abc", "a_c", "a%c", "axc", "a\nc"]
        assert [r["s"] for r in t.scan(where=col("s").startswith("a_"))] == ["a_c"]
        assert [r["s"] for r in t.scan(where=col("s").startswith("a%"))] == ["a%c"]
        assert [r["s"] for r in t.scan(where=col("s").like("A%"))] == ["ABC"]

    def test_order_by_index_and_key(self, provider: Any, orders: Any) -> None:
        rows = order_rows()
        from spi.types import sort_key

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
        pa = pytest.importorskip("pyarrow")
        from spi.arrow import arrow_schema

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

    def test_explain(self, provider: Any, orders: Any) -> None:
        text = orders.explain(where=col("status") == "open")
        assert isinstance(text, str) and "status" in text
        assert isinstance(orders.explain(Range.prefix(("eu",)), order_by="status"), str)

    # --------------------------------------------------------------- load
    def test_load_modes(self, provider: Any) -> None:
        provider.admin.create(ORDERS)
        t = provider.table("orders")
        assert t.load(order_rows(), batch_size=7) == len(order_rows())
        assert t.count() == len(order_rows())
        assert t.load([{"region": "eu", "id": -5, "note": "up"}], mode="upsert") == 1
        row = t.read(("eu", -5))
        assert row["note"] == "up" and row["status"] == "open" and row.version == 2
        t.load([{"region": "eu", "id": -5, "note": "rep"}], mode="replace")
        assert t.read(("eu", -5))["status"] is None and t.read(("eu", -5)).version == 3
        with pytest.raises(RowExistsError):
            t.load([{"region": "zz", "id": 1}, {"region": "eu", "id": -5}], mode="insert")
        with pytest.raises(InvalidFieldError):
            t.load([], mode="merge")

    def test_load_bad_row_keeps_earlier_batches(self, provider: Any) -> None:
        provider.admin.create(ORDERS)
        t = provider.table("orders")
        rows: list[dict[str, Any]] = [{"region": "eu", "id": i, "total": 1.0} for i in range(25)]
        rows[17] = {"region": "eu", "id": 17, "total": "oops"}
        progress: list[int] = []
        with pytest.raises(InvalidFieldError) as e:
            t.load(rows, batch_size=10, progress=progress.append)
        assert e.value.row_index == 17 and e.value.column == "total" and e.value.rows_written == 10
        assert "17" in str(e.value)
        assert t.count() == 10 and progress == [10]
        with pytest.raises(RowExistsError) as e2:
            t.load([{"region": "us", "id": 1}, {"region": "eu", "id": 3}], mode="insert", batch_size=10)
        assert e2.value.row_index == 1 and t.count() == 10
        with pytest.raises(RowExistsError) as e3:
            t.load([{"region": "us", "id": 1}, {"region": "us", "id": 1}], mode="insert")
        assert e3.value.row_index == 1 and t.count() == 10

    def test_load_duplicate_keys_upsert_like_sequential(self, provider: Any) -> None:
        provider.admin.create(ORDERS)
        t = provider.table("orders")
        t.load([{"region": "eu", "id": 1, "status": "a"}, {"region": "eu", "id": 1, "total": 2.0}])
        row = t.read(("eu", 1))
        assert row["status"] == "a" and row["total"] == 2.0 and row.version == 2

    def test_load_in_a_transaction_sees_stored_and_buffered_rows(self, provider: Any) -> None:
        provider.admin.create(ORDERS)
        t = provider.table("orders")
        t.load([{"region": "eu", "id": i, "status": "s"} for i in range(0, 10, 2)])
        with provider.transaction() as tx:
            tt = tx.table("orders")
            tt.upsert({"region": "eu", "id": 3, "status": "buffered"})
            tt.upsert({"region": "eu", "id": 4, "note": "b"})
            tt.load([{"region": "eu", "id": i, "total": 1.0} for i in range(10)], batch_size=4)
            got = [(r["id"], r["status"], r["total"], r.version) for r in tt.scan()]
        status = {0: "s", 2: "s", 3: "buffered", 4: "s", 6: "s", 8: "s"}
        versions = {0: 2, 2: 2, 3: 2, 4: 3, 6: 2, 8: 2}
        assert got == [(i, status.get(i), 1.0, versions.get(i, 1)) for i in range(10)]
        assert t.read(("eu", 4))["note"] == "b"
        t.load([{"region": "eu", "id": 1, "note": "x"}, {"region": "eu", "id": 1, "status": "y"}], mode="replace")
        row = t.read(("eu", 1))
        assert row["note"] is None and row["status"] == "y" and row["total"] is None and row.version == 3

    def test_load_streams_a_generator(self, provider: Any) -> None:
        provider.admin.create(COUNTERS)
        t = provider.table("counters")
        assert t.load(({"name": f"c{i:05d}", "n": i} for i in range(3000)), batch_size=500) == 3000
        assert t.count() == 3000 and t.read(("c02999",))["n"] == 2999

    def test_load_generator_reusing_one_dict(self, provider: Any) -> None:
        provider.admin.create(COUNTERS)

        def rows() -> Iterator[dict[str, Any]]:
            row: dict[str, Any] = {}
            for i in range(250):
                row.update(name=f"c{i:03d}", n=i, x=None, small=-i, owner="o")
                yield row  # the same dict, changed after each yield

        assert provider.table("counters").load(rows(), batch_size=100) == 250
        got = [(r["name"], r["n"], r["small"]) for r in provider.table("counters").scan()]
        assert got == [(f"c{i:03d}", i, -i) for i in range(250)]

    def test_load_stores_what_upsert_stores(self, provider: Any) -> None:
        """Bulk paths validate and encode batches at once: they must store exactly
        what one upsert per row stores, for every type and its edge values."""
        provider.admin.create(ALL_TYPES)
        rows = [all_types_row(i) for i in range(40)]
        provider.table("alltypes").load(rows, batch_size=16)
        loaded = [(dict(r), r.version) for r in provider.table("alltypes").scan()]
        provider.admin.drop("alltypes")
        provider.admin.create(ALL_TYPES)
        for row in rows:
            provider.table("alltypes").upsert(row)
        upserted = [(dict(r), r.version) for r in provider.table("alltypes").scan()]
        assert len(loaded) == 40
        for (a, va), (b, vb) in zip(loaded, upserted):
            assert va == vb == 1
            assert a.keys() == b.keys()
            for c in a:
                assert type(a[c]) is type(b[c]) and (a[c] == b[c] or (a[c] != a[c] and b[c] != b[c])), c
        zero = provider.table("alltypes").read((all_types_row(5)["k"],))["d"]  # loaded as -0.0
        assert zero == 0.0 and math.copysign(1.0, zero) == 1.0

    @pytest.mark.parametrize(
        ("column", "bad", "error"),
        [
            ("i", True, InvalidFieldError),
            ("i", 2**31, InvalidFieldError),
            ("l", 1.0, InvalidFieldError),
            ("d", "1.5", InvalidFieldError),
            ("s", "nul\x00", InvalidFieldError),
            ("s", "lone \ud800", InvalidFieldError),
            ("s", "é" * 600, LimitExceededError),
            ("b", "text", InvalidFieldError),
            ("flag", 1, InvalidFieldError),
            ("ts", dt.datetime(2024, 1, 1), InvalidFieldError),
            ("k", None, InvalidFieldError),
            ("nope", 1, InvalidFieldError),
        ],
    )
    def test_load_reports_the_bad_row_and_writes_none_of_its_batch(
        self, provider: Any, column: str, bad: Any, error: type[KvError]
    ) -> None:
        provider.admin.create(ALL_TYPES)
        rows = [all_types_row(i) for i in range(12)]
        rows[7] = {**rows[7], column: bad}
        with pytest.raises(error) as e:
            provider.table("alltypes").load(rows, batch_size=5)
        assert e.value.row_index == 7 and e.value.rows_written == 5
        assert e.value.column == column
        assert "\n" not in str(e.value)
        assert provider.table("alltypes").count() == 5

    def test_load_partial_and_existing_rows_in_one_batch(self, provider: Any) -> None:
        provider.admin.create(ORDERS)
        t = provider.table("orders")
        t.load([{"region": "eu", "id": i, "status": "old", "note": "n"} for i in range(0, 6, 2)])
        batch: list[dict[str, Any]] = [
            {"region": "eu", "id": i, "status": "new", "total": float(i), "note": None} for i in range(6)
        ]
        batch[3] = {"region": "eu", "id": 3, "total": 3.0}  # partial: the other columns become null
        t.load(batch, batch_size=100)
        got = [(r["id"], r["status"], r["total"], r["note"], r.version) for r in t.scan()]
        assert got == [
            (0, "new", 0.0, None, 2),
            (1, "new", 1.0, None, 1),
            (2, "new", 2.0, None, 2),
            (3, None, 3.0, None, 1),
            (4, "new", 4.0, None, 2),
            (5, "new", 5.0, None, 1),
        ]
        assert keys(t.scan(where=col("status") == "old")) == []
        assert len(keys(t.scan(where=col("status") == "new"))) == 5

    # -------------------------------------------------------- transactions
    def test_transaction_commit_and_rollback(self, provider: Any, orders: Any) -> None:
        with provider.transaction() as tx:
            t = tx.table("orders")
            t.upsert({"region": "zz", "id": 1, "status": "open"})
            assert t.read(("zz", 1))["status"] == "open"
            assert ("zz", 1) in keys(t.scan(where=col("status") == "open"))
            assert t.count() == len(order_rows()) + 1
            t.delete(("eu", -5))
            assert t.read(("eu", -5)) is None and ("eu", -5) not in keys(t.scan())
        assert orders.read(("zz", 1)) is not None and orders.read(("eu", -5)) is None
        with pytest.raises(RuntimeError), provider.transaction() as tx:
            tx.table("orders").upsert({"region": "zz", "id": 2})
            tx.table("orders").delete(("us", -4))
            raise RuntimeError("boom")
        assert orders.read(("zz", 2)) is None and orders.read(("us", -4)) is not None

    def test_validation_error_does_not_abort_transaction(self, provider: Any, orders: Any) -> None:
        with provider.transaction() as tx:
            t = tx.table("orders")
            t.upsert({"region": "zz", "id": 1})
            with pytest.raises(InvalidFieldError):
                t.upsert({"region": "zz", "id": "bad"})
            with pytest.raises(RowExistsError):
                t.insert({"region": "zz", "id": 1})
            t.upsert({"region": "zz", "id": 2})
        assert orders.count(Range.prefix(("zz",))) == 2

    def test_run_returns_and_retries(self, provider: Any, orders: Any) -> None:
        calls = []

        def fn(tx: Any) -> int:
            calls.append(1)
            if len(calls) < 3:
                raise ConflictError("simulated")
            return int(tx.table("orders").increment(("zz", 1), "total", 1))

        assert provider.run(fn) == 1 and len(calls) == 3
        calls.clear()

        def always_conflicts(tx: Any) -> None:
            calls.append(1)
            raise ConflictError("simulated")

        with pytest.raises(ConflictError):
            provider.run(always_conflicts, retries=2)
        assert len(calls) == 3

    def test_scan_in_transaction_sees_writes_made_during_it(self, provider: Any, orders: Any) -> None:
        with provider.transaction() as tx:
            t = tx.table("orders")
            n = 0
            for row in t.scan(Range.prefix(("eu",))):
                t.update((row["region"], row["id"]), {"note": "seen"})
                n += 1
            assert n == sum(1 for r in order_rows() if r["region"] == "eu")
        assert orders.count(where=col("note") == "seen") == n

    def test_autocommit_scan_allows_writes_while_iterating(self, provider: Any, orders: Any) -> None:
        n = 0
        for row in orders.scan(where=col("status") == "open"):
            orders.update((row["region"], row["id"]), {"status": "done"})
            n += 1
        assert n == sum(1 for r in order_rows() if r["status"] == "open")
        assert orders.count(where=col("status") == "open") == 0

    def test_scan_after_transaction_end_fails(self, provider: Any, orders: Any) -> None:
        with provider.transaction() as tx:
            it = tx.table("orders").scan()
            next(it)
        with pytest.raises(KvError):
            list(it)

    def test_concurrent_increments(self, provider: Any) -> None:
        provider.admin.create(COUNTERS)
        t = provider.table("counters")
        errors: list[BaseException] = []

        def work() -> None:
            try:
                t.increment(("hits",), "n", 1)
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=work) for _ in range(20)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert errors == [] and t.read(("hits",))["n"] == 20

    def test_concurrent_cas_one_winner(self, provider: Any) -> None:
        provider.admin.create(COUNTERS)
        t = provider.table("counters")
        results: list[bool] = []
        barrier = threading.Barrier(20)

        def work(i: int) -> None:
            barrier.wait()
            results.append(t.compare_and_swap(("lock",), "owner", None, f"w{i}"))

        threads = [threading.Thread(target=work, args=(i,)) for i in range(20)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert sorted(results) == [False] * 19 + [True]
        assert t.read(("lock",))["owner"].startswith("w")

    def test_concurrent_scans_see_consistent_rows(self, provider: Any) -> None:
        provider.admin.create(COUNTERS)
        t = provider.table("counters")
        t.load({"name": f"a{i:03d}", "n": 0} for i in range(50))
        stop = threading.Event()
        bad: list[Any] = []

        def writer() -> None:
            # Moves one unit between two rows per transaction: the sum stays 0.
            i = 0
            while not stop.is_set():

                def move(tx: Any, i: int = i) -> None:
                    tt = tx.table("counters")
                    tt.increment((f"a{i % 50:03d}",), "n", 1)
                    tt.increment((f"a{(i + 7) % 50:03d}",), "n", -1)

                provider.run(move)
                i += 1

        def reader() -> None:
            for _ in range(15):
                with provider.transaction() as tx:
                    total = sum(r["n"] for r in tx.table("counters").scan())
                if total != 0:
                    bad.append(total)

        w = threading.Thread(target=writer)
        readers = [threading.Thread(target=reader) for _ in range(3)]
        w.start()
        for r in readers:
            r.start()
        for r in readers:
            r.join()
        stop.set()
        w.join()
        assert bad == []

    # ------------------------------------------------------------ schema errors
    @pytest.mark.parametrize(
        "make",
        [
            lambda: spi.TableSpec("1bad", [spi.Field("k", "long")], ["k"]),
            lambda: spi.TableSpec("kv_x", [spi.Field("k", "long")], ["k"]),
            lambda: spi.TableSpec("x" * 64, [spi.Field("k", "long")], ["k"]),
            lambda: spi.TableSpec("t", [], ["k"]),
            lambda: spi.TableSpec("t", [spi.Field("k", "long")], []),
            lambda: spi.TableSpec("t", [spi.Field("k", "long")], ["j"]),
            lambda: spi.TableSpec("t", [spi.Field("k", "long")], ["k"], ["j"]),
            lambda: spi.TableSpec("t", [spi.Field("k", "decimal")], ["k"]),
            lambda: spi.TableSpec("t", [spi.Field("k", "long"), spi.Field("k", "int")], ["k"]),
            lambda: spi.TableSpec("t", [spi.Field("bad-name", "long")], ["bad-name"]),
            lambda: spi.TableSpec("t;drop", [spi.Field("k", "long")], ["k"]),
        ],
    )
    def test_bad_specs(self, make: Callable[[], Any]) -> None:
        with pytest.raises(SchemaError):
            make()

    def test_spec_json_round_trip(self) -> None:
        for spec in (ORDERS, ALL_TYPES, COUNTERS):
            assert spi.TableSpec.from_json(spec.to_json()) == spec
        with pytest.raises(SchemaError):
            spi.TableSpec.from_json("{not json")

    def test_fresh_memory_stores_are_private(self, provider: Any) -> None:
        provider.admin.create(ORDERS)
        other = spi.connect("memory://")
        assert other.admin.list_tables() == []
        other.close()

    def test_capabilities(self, provider: Any) -> None:
        assert isinstance(provider.capabilities, frozenset)
        assert all(isinstance(c, str) for c in provider.capabilities)


def keys_of(rows: Any, column: str) -> list[Any]:
    """One column of every row, in order."""
    return [r[column] for r in rows]

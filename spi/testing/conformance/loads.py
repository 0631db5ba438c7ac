"""Bulk loads: modes, atomic batches, bad rows, generators, load inside a transaction."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterator
from typing import Any

import pytest

from spi import col
from spi.errors import (
    InvalidFieldError,
    KvError,
    LimitExceededError,
    RowExistsError,
)
from spi.spec import TableSpec
from spi.testing.conformance.base import keys, sorted_keys
from spi.testing.fixtures import ALL_TYPES, COUNTERS, ORDERS, all_types_row, order_rows


class LoadTests:
    """Bulk loads: modes, atomic batches, bad rows, generators, load inside a transaction."""

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

    def test_failed_insert_batch_leaves_nothing_in_a_transaction(self, provider: Any) -> None:
        provider.admin.create(ORDERS)
        provider.table("orders").upsert({"region": "eu", "id": 1, "status": "old"})
        with provider.transaction() as tx:
            t = tx.table("orders")
            with pytest.raises(RowExistsError) as info:
                t.load([{"region": "ap", "id": 9}, {"region": "eu", "id": 1}, {"region": "us", "id": 2}], mode="insert")
            assert info.value.row_index == 1
            t.upsert({"region": "us", "id": 3})  # the transaction goes on and commits
        assert keys(provider.table("orders").scan()) == [("eu", 1), ("us", 3)]
        assert provider.table("orders").read(("eu", 1))["status"] == "old"

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

    def test_a_failed_batch_writes_nothing_of_the_batches_after_it(self, provider: Any) -> None:
        provider.admin.create(ORDERS)
        t = provider.table("orders")
        t.upsert({"region": "us", "id": 13, "status": "kept"})
        rows = [{"region": "eu" if i != 13 else "us", "id": i} for i in range(40)]  # row 13 is a taken key
        progress: list[int] = []
        with pytest.raises(RowExistsError) as e:
            t.load(rows, mode="insert", batch_size=10, progress=progress.append)
        assert e.value.row_index == 13 and e.value.rows_written == 10 and progress == [10]
        assert sorted_keys(list(t.scan())) == sorted([("us", 13), *(("eu", i) for i in range(10))])
        assert t.read(("us", 13))["status"] == "kept"

    def test_a_bad_row_stops_the_load_after_the_batches_before_it(self, provider: Any) -> None:
        provider.admin.create(ORDERS)
        t = provider.table("orders")
        rows: list[dict[str, Any]] = [{"region": "eu", "id": i} for i in range(60)]
        rows[47] = {"region": "eu", "id": 47, "total": "x"}
        progress: list[int] = []
        with pytest.raises(InvalidFieldError) as e:
            t.load(rows, batch_size=10, progress=progress.append)
        assert e.value.row_index == 47 and e.value.rows_written == 40 and progress == [10, 20, 30, 40]
        assert t.count() == 40

    def test_batches_of_new_taken_and_repeated_keys_load_as_upserts_one_by_one(self, provider: Any) -> None:
        spec = ORDERS
        provider.admin.create(spec)
        provider.admin.create(TableSpec("orders_one_by_one", spec.fields, spec.primary_key, spec.indexes))
        ids = [  # the keys of each batch of 6
            range(6),  # new
            range(3, 9),  # half of them the batch before's
            range(100, 106),  # new: alongside the batch before
            range(100, 106),  # all of them the batch before's
            range(200, 206),  # new, partial rows
            [200, 200, 201, 201, 202, 202],  # repeated inside the batch
            range(6),  # taken, none of them the batch before's
            range(3, 9),
        ]
        rows: list[dict[str, Any]] = []
        for batch, keys_of_batch in enumerate(ids):
            for i, n in enumerate(keys_of_batch):
                full = {"region": "eu", "id": n, "status": f"b{batch}", "total": float(i)}
                rows.append(full if batch != 4 else {"region": "eu", "id": n, "note": f"partial {i}"})
        loaded = provider.table("orders")
        assert loaded.load(rows, batch_size=6) == len(rows)
        one_by_one = provider.table("orders_one_by_one")
        for row in rows:
            one_by_one.upsert(row)
        assert [(dict(r), r.version) for r in loaded.scan()] == [(dict(r), r.version) for r in one_by_one.scan()]

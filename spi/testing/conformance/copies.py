"""What copies, backups and restores need: loads that keep versions, hidden staging
tables and an atomic swap of two tables' rows (``kvctl copy``, ``import --mode
overwrite``)."""

from __future__ import annotations

import math
from typing import Any

import pytest

import spi
from spi import Range, col
from spi.capabilities import Capability
from spi.errors import (
    IncompatibleSchemaError,
    InvalidFieldError,
    RowExistsError,
    SchemaError,
    TableNotFoundError,
)
from spi.testing.conformance.base import keys
from spi.testing.fixtures import ALL_TYPES, ORDERS, all_types_row, order_rows
from spi.testing.requirements import requires


def versioned(rows: list[dict[str, Any]], first: int = 5) -> list[spi.Row]:
    """``rows`` as :class:`spi.Row` objects with versions ``first``, ``first + 3``, ..."""
    return [spi.Row(row, first + 3 * i) for i, row in enumerate(rows)]


def snapshot(table: Any) -> list[tuple[dict[str, Any], int]]:
    """Every row of ``table`` with its version, in key order (NaN as "nan", so rows compare)."""
    return [({k: _comparable(v) for k, v in row.items()}, row.version) for row in table.scan()]


def _comparable(value: Any) -> Any:
    return "nan" if isinstance(value, float) and math.isnan(value) else value


class CopyTests:
    """Loads that keep versions, staging tables, ``swap_rows``."""

    def test_load_keeps_versions(self, provider: Any) -> None:
        provider.admin.create(ALL_TYPES)
        t = provider.table("alltypes")
        rows = versioned([all_types_row(i) for i in range(40)])
        assert t.load(rows, mode="insert", batch_size=7, keep_versions=True) == 40
        assert [v for _, v in snapshot(t)] == [r.version for r in rows]
        assert [r.version for r in t.read_many([(r["k"],) for r in rows])] == [r.version for r in rows]
        # Round trip: what one table returns loads into another exactly, versions included.
        provider.admin.create(spi.TableSpec("copy", ALL_TYPES.fields, ALL_TYPES.primary_key, ALL_TYPES.indexes))
        assert provider.table("copy").load(t.scan(), mode="insert", keep_versions=True) == 40
        assert snapshot(provider.table("copy")) == snapshot(t)

    def test_kept_versions_in_every_mode(self, provider: Any, orders: Any) -> None:
        before = orders.read(("eu", -5))
        assert before is not None and before.version == 1
        orders.load([spi.Row({"region": "eu", "id": -5, "note": "up"}, 40)], mode="upsert", keep_versions=True)
        row = orders.read(("eu", -5))
        assert row.version == 40 and row["note"] == "up" and row["status"] == before["status"]
        orders.load([spi.Row({"region": "eu", "id": -5, "note": "rep"}, 2)], mode="replace", keep_versions=True)
        row = orders.read(("eu", -5))
        assert row.version == 2 and row["status"] is None and row["note"] == "rep"
        assert orders.upsert({"region": "eu", "id": -5}) == 3  # later writes count on from the kept version
        with pytest.raises(RowExistsError) as info:
            orders.load(
                [spi.Row({"region": "zz", "id": 1}, 1), spi.Row({"region": "eu", "id": -5}, 9)],
                mode="insert",
                keep_versions=True,
            )
        assert info.value.row_index == 1 and orders.read(("zz", 1)) is None
        # Index entries follow the kept rows.
        orders.load([spi.Row({"region": "zz", "id": 2, "status": "kept"}, 6)], keep_versions=True)
        assert [(r["id"], r.version) for r in orders.scan(where=col("status") == "kept", order_by="status")] == [(2, 6)]

    def test_kept_versions_in_a_transaction_and_repeated_keys(self, provider: Any, orders: Any) -> None:
        with provider.transaction() as tx:
            t = tx.table("orders")
            rows = [spi.Row({"region": "tx", "id": 1, "status": "a"}, 7), spi.Row({"region": "tx", "id": 1}, 3)]
            assert t.load(rows, keep_versions=True) == 2
            assert t.read(("tx", 1)).version == 3 and t.read(("tx", 1))["status"] == "a"
        assert orders.read(("tx", 1)).version == 3

    def test_rows_without_versions_are_refused(self, provider: Any, orders: Any) -> None:
        good = spi.Row({"region": "v", "id": 1}, 1)
        for bad in (
            {"region": "v", "id": 2},
            spi.Row({"region": "v", "id": 2}, 0),
            spi.Row({"region": "v", "id": 2}, True),
        ):
            with pytest.raises(InvalidFieldError) as info:
                orders.load([good, bad], batch_size=1, keep_versions=True)
            assert info.value.row_index == 1 and info.value.rows_written == 1
        # The first bad row of a batch is the one reported, whatever is wrong with it.
        rows = [good, spi.Row({"region": "v", "id": 3, "total": "x"}, 1), {"region": "v", "id": 4}]
        with pytest.raises(InvalidFieldError) as info:
            orders.load(rows, keep_versions=True)
        assert info.value.row_index == 1 and info.value.column == "total"
        assert orders.count(Range.prefix(("v",))) == 1

    def test_staging_tables_are_hidden_and_empty(self, provider: Any, orders: Any) -> None:
        staging = provider.admin.create_staging("orders")
        assert staging.startswith("kv_") and len(staging) <= 63
        assert provider.admin.list_tables() == ["orders"]
        assert provider.admin.exists(staging)
        assert provider.admin.get_spec(staging) == ORDERS.renamed(staging)
        assert provider.table(staging).count() == 0
        assert provider.table("orders").count() == len(order_rows())
        with pytest.raises(SchemaError):
            provider.admin.create(ORDERS.renamed(staging + "x"))
        with pytest.raises(TableNotFoundError):
            provider.admin.create_staging("nope")
        provider.admin.drop(staging)
        assert not provider.admin.exists(staging)

    def test_leftover_staging_tables_go_with_the_next_one(self, provider: Any, orders: Any) -> None:
        provider.admin.create(ORDERS.renamed("orders2"))
        first = provider.admin.create_staging("orders")
        provider.table(first).load(order_rows(5))
        other = provider.admin.create_staging("orders2")
        second = provider.admin.create_staging("orders")
        assert second != first and not provider.admin.exists(first)
        assert provider.admin.exists(other) and provider.table(second).count() == 0
        assert provider.admin.list_tables() == ["orders", "orders2"]

    def test_swap_exchanges_rows_with_versions_and_indexes(self, provider: Any, orders: Any) -> None:
        old = snapshot(orders)
        staging = provider.admin.create_staging("orders")
        new = versioned([{**r, "status": f"s{r['id'] % 3}"} for r in order_rows(12)])
        provider.table(staging).load(new, mode="insert", keep_versions=True)
        provider.admin.swap_rows("orders", staging)
        assert snapshot(orders) == sorted(((dict(r), r.version) for r in new), key=lambda x: keys([x[0]]))
        assert snapshot(provider.table(staging)) == old
        assert keys(orders.scan(where=col("status") == "s1", order_by="status")) == sorted(
            (r["region"], r["id"]) for r in new if r["status"] == "s1"
        )
        assert orders.count(where=col("status") == "open") == 0
        provider.admin.drop(staging)
        assert snapshot(orders) != old and provider.admin.list_tables() == ["orders"]
        assert orders.upsert({"region": "eu", "id": -5}) == 6  # counts on from the swapped-in version
        if Capability.VERIFY in provider.capabilities:
            assert provider.admin.verify("orders") == []

    def test_failed_swap_leaves_the_old_rows(self, provider: Any, orders: Any) -> None:
        old = snapshot(orders)
        staging = provider.admin.create_staging("orders")
        provider.table(staging).load(order_rows(3))
        with pytest.raises(TableNotFoundError):
            provider.admin.swap_rows("orders", "nope")
        wider = spi.TableSpec(
            "orders", [*ORDERS.fields, spi.Field("extra", "long")], ORDERS.primary_key, ORDERS.indexes
        )
        provider.admin.create_or_update(wider)  # the table changed while its rows were being staged
        with pytest.raises(IncompatibleSchemaError):
            provider.admin.swap_rows("orders", staging)
        assert [(dict((k, v) for k, v in r.items() if k != "extra"), n) for r, n in snapshot(orders)] == old
        assert provider.table(staging).count() == 3

    def test_swap_with_a_long_name(self, provider: Any) -> None:
        name = "t" * 63
        provider.admin.create(spi.TableSpec(name, [spi.Field("k", "long"), spi.Field("v", "string")], ["k"], ["v"]))
        provider.table(name).load([{"k": 1, "v": "old"}])
        staging = provider.admin.create_staging(name)
        assert len(staging) <= 63
        provider.table(staging).load([spi.Row({"k": 2, "v": "new"}, 4)], keep_versions=True)
        provider.admin.swap_rows(name, staging)
        assert [(r["k"], r.version) for r in provider.table(name).scan(order_by="v")] == [(2, 4)]
        assert provider.admin.create_staging(name) != staging and not provider.admin.exists(staging)

    def test_store_id(self, provider: Any, provider_factory: Any) -> None:
        assert isinstance(provider.store_id, str) and provider.store_id
        assert "***" not in provider.store_id
        with provider_factory() as other:
            assert other.store_id != provider.store_id  # a fresh, empty store

    @requires(Capability.PROCESSES)
    def test_another_connection_sees_the_swap(self, provider: Any, provider_url: str, orders: Any) -> None:
        with spi.connect(provider_url) as other:
            assert other.store_id == provider.store_id
            reader: Any = other.table("orders")
            for _ in range(8):  # long enough for a driver to prepare its statements
                assert reader.read(("eu", -5)).version == 1
                assert reader.count() == len(order_rows())
            staging = provider.admin.create_staging("orders")
            provider.table(staging).load([spi.Row({"region": "eu", "id": -5, "note": "new"}, 9)], keep_versions=True)
            provider.admin.swap_rows("orders", staging)
            provider.admin.drop(staging)
            assert reader.read(("eu", -5)).version == 9 and reader.count() == 1
            assert [r["note"] for r in reader.scan(order_by="status")] == ["new"]

"""Table management: create, get_spec, exists, list, drop, create_or_update, spec validation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import spi
from spi import col
from spi.capabilities import Capability
from spi.errors import (
    IncompatibleSchemaError,
    InvalidFieldError,
    SchemaError,
    TableExistsError,
    TableNotFoundError,
)
from spi.testing.conformance.base import keys, keys_of
from spi.testing.fixtures import ALL_TYPES, COUNTERS, ORDERS, order_rows


class AdminTests:
    """Table management: create, get_spec, exists, list, drop, create_or_update, spec validation."""

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

    def test_capabilities_are_spelled_once(self, provider: Any) -> None:
        """Every capability is a spi.Capability or a vendor's own dotted name
        ("acme.snapshots"), so a misspelt standard one ("multi_process") is caught."""
        caps = provider.capabilities
        assert isinstance(caps, frozenset) and all(isinstance(c, str) for c in caps)
        unknown = sorted(c for c in caps if c not in set(Capability) and "." not in c)
        assert not unknown, f"capabilities {unknown} are neither spi.Capability members nor dotted vendor names"
        assert {Capability.TRANSACTIONS, Capability.SECONDARY_INDEXES} <= caps, "part of the core contract"

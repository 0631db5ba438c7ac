"""Frozen tables: ``admin.freeze``/``unfreeze``/``is_frozen``, ``TableSpec.frozen``
and :class:`FrozenTableError` (SPI.md, "Frozen tables")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import spi
from spi.capabilities import Capability
from spi.errors import FrozenTableError, TableNotFoundError
from spi.filters import col
from spi.keys import Range
from spi.spec import TableSpec
from spi.testing.conformance.base import ProviderClock
from spi.testing.fixtures import ORDERS, order_rows
from spi.testing.requirements import requires

REFUSED = "table orders is frozen"
"""What every refused write says."""


def _writes(t: Any) -> dict[str, Callable[[], Any]]:
    """One call of every kind of row write on the table handle ``t`` (each would change
    a row of :func:`order_rows` or add one)."""
    return {
        "upsert": lambda: t.upsert({"region": "eu", "id": 1000}),
        "insert": lambda: t.insert({"region": "eu", "id": 1001}),
        "replace": lambda: t.replace({"region": "eu", "id": -5, "status": "x"}),
        "replace at a version": lambda: t.replace({"region": "eu", "id": -5}, version=1),
        "update": lambda: t.update(("eu", -5), {"note": "x"}),
        "update with a default": lambda: t.update(("eu", 1002), {"note": "x"}, default={"status": "new"}),
        "delete": lambda: t.delete(("eu", -5)),
        "delete of a missing row": lambda: t.delete(("eu", 1003)),
        "increment": lambda: t.increment(("eu", -5), "total", 1),
        "compare_and_swap": lambda: t.compare_and_swap(("eu", 1004), "status", None, "new"),
        "update_range": lambda: t.update_range(Range.prefix(("eu",)), changes={"note": "x"}),
        "update_range with where": lambda: t.update_range(where=col("status") == "open", changes={"note": "x"}),
        "delete_range": lambda: t.delete_range(Range.prefix(("us",))),
        "load": lambda: t.load([{"region": "eu", "id": 1005}, {"region": "eu", "id": -5}]),
        "load keeping versions": lambda: t.load([spi.Row({"region": "eu", "id": 1006}, 3)], keep_versions=True),
    }


def _state(t: Any) -> list[tuple[dict[str, Any], int]]:
    return [(dict(r), r.version) for r in t.scan()]


class FreezeTests:
    """A frozen table refuses every row write and serves every read; the flag is stored."""

    def test_a_frozen_table_refuses_every_row_write_and_changes_nothing(self, provider: Any, orders: Any) -> None:
        before = _state(orders)
        assert not provider.admin.is_frozen("orders") and not provider.admin.get_spec("orders").frozen
        provider.admin.freeze("orders")
        assert provider.admin.is_frozen("orders") and provider.admin.get_spec("orders").frozen
        for what, write in _writes(orders).items():
            with pytest.raises(FrozenTableError, match=REFUSED):
                write()
                pytest.fail(f"{what} was not refused")
        assert _state(orders) == before

    def test_writes_in_a_transaction_are_refused_and_the_error_is_a_kv_error(self, provider: Any, orders: Any) -> None:
        before = _state(orders)
        provider.admin.freeze("orders")
        for what in _writes(orders):  # every kind, through a transaction's handle

            def attempt(tx: Any, kind: str = what) -> Any:
                return _writes(tx.table("orders"))[kind]()

            with pytest.raises(spi.KvError) as caught:
                provider.run(attempt)
            assert isinstance(caught.value, FrozenTableError) and caught.value.table == "orders"
        assert _state(orders) == before

    def test_reads_work_on_a_frozen_table(self, provider: Any, orders: Any) -> None:
        rows = order_rows()
        provider.admin.freeze("orders")
        row = orders.read(("eu", -5))
        assert row is not None and dict(row) == rows[0]
        assert orders.read_many([("eu", -5), ("eu", 999)])[1] is None
        assert orders.count() == len(rows)
        assert orders.count(where=col("status") == "open") == sum(r["status"] == "open" for r in rows)
        assert len(list(orders.scan(Range.prefix(("us",))))) == sum(r["region"] == "us" for r in rows)
        assert len(orders.scan_page(limit=5).rows) == 5
        with provider.transaction() as tx:
            assert tx.table("orders").count() == len(rows)

    def test_unfreeze_allows_writes_again(self, provider: Any, orders: Any) -> None:
        provider.admin.freeze("orders")
        provider.admin.freeze("orders")  # a no-op when frozen
        provider.admin.unfreeze("orders")
        assert not provider.admin.is_frozen("orders") and not provider.admin.get_spec("orders").frozen
        provider.admin.unfreeze("orders")  # a no-op when not frozen
        assert orders.upsert({"region": "eu", "id": 1000}) == 1
        assert orders.delete(("eu", -5))
        assert orders.load([{"region": "eu", "id": 1001}]) == 1

    def test_frozen_is_outside_the_specs_definition(self, provider: Any, orders: Any) -> None:
        provider.admin.freeze("orders")
        spec = provider.admin.get_spec("orders")
        assert spec == ORDERS and hash(spec) == hash(ORDERS)
        assert spec.to_json() == ORDERS.to_json() and "frozen" not in spec.to_dict()
        assert spec.fingerprint() == ORDERS.fingerprint()
        assert not TableSpec.from_json(spec.to_json()).frozen and not ORDERS.frozen
        assert spec.with_frozen(False) == spec and not spec.with_frozen(False).frozen

    def test_alter_and_drop_are_allowed_and_alter_keeps_it_frozen(self, provider: Any, orders: Any) -> None:
        provider.admin.freeze("orders")
        provider.admin.create_or_update(ORDERS)  # an equal spec: nothing to do
        wider = TableSpec(ORDERS.name, [*ORDERS.fields, ("extra", "string")], ORDERS.primary_key, ["status", "note"])
        provider.admin.create_or_update(wider)
        spec = provider.admin.get_spec("orders")
        assert spec == wider and spec.frozen
        with pytest.raises(FrozenTableError, match=REFUSED):
            orders.update(("eu", -5), {"extra": "x"})
        assert orders.count(where=col("note") == "n5") == 1  # the new index serves reads
        provider.admin.drop("orders")
        assert not provider.admin.exists("orders")
        provider.admin.create(spec)  # a new table is never frozen, whatever the spec says
        assert not provider.admin.is_frozen("orders")
        assert provider.table("orders").upsert({"region": "eu", "id": 1}) == 1

    def test_staging_and_swaps_of_a_frozen_table_are_refused_before_anything_is_loaded(
        self, provider: Any, orders: Any
    ) -> None:
        staging = provider.admin.create_staging("orders")
        provider.table(staging).load([{"region": "eu", "id": 1}])
        provider.admin.freeze("orders")
        with pytest.raises(FrozenTableError, match=REFUSED):
            provider.admin.create_staging("orders")
        with pytest.raises(FrozenTableError, match=REFUSED):
            provider.admin.swap_rows("orders", staging)
        assert orders.count() == len(order_rows())
        provider.admin.drop(staging)

    def test_other_tables_are_not_frozen(self, provider: Any, orders: Any) -> None:
        provider.admin.create(ORDERS.renamed("other"))
        provider.admin.freeze("orders")
        assert not provider.admin.is_frozen("other")
        assert provider.table("other").upsert({"region": "eu", "id": 1}) == 1

    def test_a_missing_table_cannot_be_frozen(self, provider: Any) -> None:
        for call in (provider.admin.freeze, provider.admin.unfreeze, provider.admin.is_frozen):
            with pytest.raises(TableNotFoundError):
                call("nope")

    def test_a_new_handle_and_transaction_see_the_freeze(self, provider: Any, orders: Any) -> None:
        assert orders.upsert({"region": "eu", "id": 1000}) == 1  # the handle has written before
        provider.admin.freeze("orders")
        with pytest.raises(FrozenTableError):
            orders.upsert({"region": "eu", "id": 1000})
        with pytest.raises(FrozenTableError):
            provider.table("orders").upsert({"region": "eu", "id": 1000})
        provider.admin.unfreeze("orders")
        assert orders.upsert({"region": "eu", "id": 1000}) == 2


@requires(Capability.DURABLE)
class FreezeDurabilityTests:
    """The flag survives closing the provider and opening its URL again."""

    def test_frozen_survives_reopening(self, provider: Any, provider_url: str, orders: Any) -> None:
        provider.admin.freeze("orders")
        provider.close()
        with spi.connect(provider_url) as again:
            assert again.admin.is_frozen("orders") and again.admin.get_spec("orders").frozen
            with pytest.raises(FrozenTableError, match=REFUSED):
                again.table("orders").upsert({"region": "eu", "id": 1000})
            again.admin.unfreeze("orders")
        with spi.connect(provider_url) as third:
            assert not third.admin.is_frozen("orders")
            assert third.table("orders").upsert({"region": "eu", "id": 1000}) == 1


@requires(Capability.EXPIRY)
class FreezeExpiryTests:
    """Expired rows of a frozen table are still swept."""

    def test_a_frozen_table_still_sweeps_expired_rows(self, provider: Any, clock: ProviderClock) -> None:
        provider.admin.create(ORDERS)
        t = provider.table("orders")
        t.load([{"region": "eu", "id": i} for i in range(5)], ttl=0.3)
        t.load([{"region": "us", "id": i} for i in range(3)])
        provider.admin.freeze("orders")
        clock.advance(0.45)
        assert t.read(("eu", 1)) is None  # a read that meets an expired row
        assert t.count() == 3
        assert provider.admin.sweep("orders") in (4, 5)  # the read may have removed its row
        assert provider.admin.sweep("orders") == 0
        assert t.count() == 3 and provider.admin.is_frozen("orders")

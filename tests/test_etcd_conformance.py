"""The conformance suite and the differential test on the etcd provider (a real
3-member cluster, tests/etcd_cluster.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import spi
from spi.errors import LimitExceededError
from spi.row import Row
from spi.testing import ConformanceTests, DifferentialTests
from spi.testing.conformance.changes import fed_orders
from spi.testing.conformance.overwrites import _overwrite


class TestEtcdConformance(ConformanceTests):
    overwrite_rows = 16
    """An overwrite is one transaction, and one etcd transaction holds 128 operations at
    etcd's defaults (SPI.md, Connecting): the kit's 1,200-row overwrite is refused here
    (below)."""
    fed_load_batch = 40
    """A load batch is cut to pieces one etcd transaction holds (48 rows of ORDERS at
    128 operations): 40-row batches stay one revision each."""

    @pytest.fixture
    def provider_factory(self, etcd_factory: Callable[..., Any]) -> Callable[[], Any]:
        return etcd_factory

    def test_value_limits(self, provider: Any) -> None:
        """etcd's variant of the kit's value limits (SPI.md, Connecting): a value
        must fit in one etcd request (1.5 MiB), so the kit's 16 MiB value is a
        LimitExceededError naming the limit, with nothing written; 1 MiB works."""
        spec = spi.TableSpec("big", [spi.Field("k", "long"), spi.Field("v", "bytes"), spi.Field("s", "string")], ["k"])
        provider.admin.create(spec)
        big = provider.table("big")
        big.upsert({"k": 1, "v": b"\x00" * (1024 * 1024), "s": "y" * 5000})
        assert len(big.read((1,))["v"]) == 1024 * 1024
        with pytest.raises(LimitExceededError, match="max_request_bytes"):
            big.upsert({"k": 2, "v": b"\x00" * (16 * 1024 * 1024)})
        assert big.read((2,)) is None
        with pytest.raises(LimitExceededError):
            big.upsert({"k": 2, "s": "y" * (16 * 1024 * 1024 + 1)})

    def test_a_big_overwrite_is_refused_whole(self, provider: Any) -> None:
        t = fed_orders(provider)
        t.load([{"region": "eu", "id": i, "status": "old"} for i in range(1200)])
        with pytest.raises(LimitExceededError, match="max_txn_ops"):
            _overwrite(provider, [Row({"region": "eu", "id": i, "status": "new"}, 1) for i in range(1200)])
        assert t.count() == 1200 and t.count(where=spi.col("status") == "new") == 0


class TestEtcdDifferential(DifferentialTests):
    """Random operation sequences, each compared with the reference model (spi.testing.reference)."""

    differential_examples = 100
    """Half the kit's default: each sequence opens a fresh prefix on the 3-member
    cluster (about 0.2 s), and the engine under these sessions runs the full 200 on
    memory and RocksDB; the optimistic sessions and the feed on etcd's revisions get
    100 random sequences of their own (the CI budget: the whole suite in 25 minutes)."""

    @pytest.fixture
    def provider_factory(self, etcd_factory: Callable[..., Any]) -> Callable[[], Any]:
        return etcd_factory

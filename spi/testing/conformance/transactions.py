"""Transactions: commit, rollback, run with retries, scans and transaction ends, and
a transaction opened inside another on the same thread."""

from __future__ import annotations

from typing import Any

import pytest

from spi import Field, Range, TableSpec, col
from spi.errors import (
    ConflictError,
    InvalidFieldError,
    KvError,
    RowExistsError,
)
from spi.testing.conformance.base import keys
from spi.testing.fixtures import COUNTERS, order_rows


class TransactionTests:
    """Transactions: commit, rollback, run with retries, scans and transaction ends."""

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

    def test_autocommit_scan_across_pages(self, provider: Any) -> None:
        """A scan longer than a page: every row once, in order, while the caller
        writes the rows it has seen; a table changed between pages ends the scan
        with an error, not with rows of two specs."""
        provider.admin.create(COUNTERS)
        t = provider.table("counters")
        page = t.page_size
        names = [f"{i:06d}" for i in range(2 * page + 7)]
        t.load({"name": name, "n": i} for i, name in enumerate(names))
        seen, written = [], 0
        for i, row in enumerate(t.scan()):
            seen.append(row["name"])
            if i % 97 == 0 or abs(i - page) <= 2:  # a sample, and around the page boundary
                t.update((row["name"],), {"n": -1})
                written += 1
        assert seen == names and t.count(where=col("n") == -1) == written
        assert [r["name"] for r in t.scan(descending=True, limit=page + 1)] == names[::-1][: page + 1]
        rows = t.scan()
        next(rows)
        provider.admin.create_or_update(TableSpec("counters", [*COUNTERS.fields, Field("note", "string")], ["name"]))
        with pytest.raises(InvalidFieldError, match="changed"):
            list(rows)

    def test_scan_after_transaction_end_fails(self, provider: Any, orders: Any) -> None:
        with provider.transaction() as tx:
            it = tx.table("orders").scan()
            next(it)
        with pytest.raises(KvError):
            list(it)

    def test_a_transaction_inside_another_on_one_thread_is_refused(self, provider: Any, orders: Any) -> None:
        """docs/spi.md, "Transactions": opening a transaction (or ``run``) from a thread
        that has one open on the provider raises KvError at once, naming the cure; the
        outer transaction is untouched and commits, and once it ends the thread may
        open the next one."""
        with provider.transaction() as tx:
            tx.table("orders").upsert({"region": "zz", "id": 1})
            with pytest.raises(KvError, match="already open"), provider.transaction() as inner:
                inner.table("orders").upsert({"region": "zz", "id": 2})
            with pytest.raises(KvError, match="already open"):
                provider.run(lambda inner: inner.table("orders").upsert({"region": "zz", "id": 3}))
            tx.table("orders").upsert({"region": "zz", "id": 4})
        assert [r["id"] for r in orders.scan(Range.prefix(("zz",)))] == [1, 4]
        with provider.transaction() as tx:
            assert tx.table("orders").read(("zz", 4)) is not None

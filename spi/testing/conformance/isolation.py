"""Isolation: uncommitted writes stay invisible, a rollback discards, concurrent
read-modify-write cycles lose no update, independent clients race a compare-and-swap
from null, and hostile values are stored as values (SPI.md, "Transactions and
concurrency"; the tests each provider's own file used to carry)."""

from __future__ import annotations

import threading
from typing import Any

import spi
from spi import col
from spi.capabilities import Capability
from spi.spec import Field, TableSpec
from spi.testing.fixtures import COUNTERS
from spi.testing.requirements import need_module, requires

HOSTILE = TableSpec(
    "hostile",
    [Field("k", "string"), Field("v", "string"), Field("b", "bytes"), Field("ix", "string")],
    ["k"],
    ["ix"],
)
HOSTILE_VALUES = [
    "'",
    '"',
    "'; DROP TABLE kv_catalog; --",
    "a\\b\\",
    "%_\\%",
    "-- comment",
    "/* x */",
    "$$ $1 $tag$",
    "naïve ✓ 日本 \U0001f600",
    "line\nbreak\ttab\r",
    "é" * 512,  # 1 KiB: the largest key
    "x" * 1024,
]
"""Strings that would break a store that pasted values into its queries or keys."""


def load_hostile(provider: Any) -> Any:
    """The HOSTILE table holding every hostile value twice: written by ``upsert`` under
    its own key, and by ``load`` under ``load<i>`` (with a NUL byte in ``b``)."""
    provider.admin.create(HOSTILE)
    t = provider.table("hostile")
    for i, value in enumerate(HOSTILE_VALUES):
        t.upsert({"k": value, "v": value * 3, "b": value.encode(), "ix": value})
        t.load([{"k": f"load{i}", "v": value, "b": b"\x00" + value.encode(), "ix": value}])
    return t


class IsolationTests:
    """Hostile values, and (with ``threads``) isolation, rollback and read-modify-write."""

    def test_hostile_values_are_stored_as_values(self, provider: Any) -> None:
        t = load_hostile(provider)
        for i, value in enumerate(HOSTILE_VALUES):
            row = t.read((value,))
            assert row is not None and row["v"] == value * 3 and row["b"] == value.encode() and row["ix"] == value
            assert t.read((f"load{i}",))["v"] == value
            assert {r["k"] for r in t.scan(where=col("ix") == value)} == {value, f"load{i}"}
            assert t.count(where=col("v").startswith(value)) >= 1
        assert [r["k"] for r in t.scan(where=col("k").isin(HOSTILE_VALUES[:3]))] == sorted(HOSTILE_VALUES[:3])
        assert provider.admin.list_tables() == ["hostile"]
        assert t.count() == 2 * len(HOSTILE_VALUES)

    def test_hostile_values_in_arrow_scans(self, provider: Any) -> None:
        need_module("pyarrow")
        t = load_hostile(provider)
        for value in HOSTILE_VALUES:
            arrow = [r for b in t.scan_arrow(where=col("ix") == value, columns=["b"]) for r in b.to_pylist()]
            assert arrow == [dict(r) for r in t.scan(where=col("ix") == value, columns=["b"])] and len(arrow) == 2

    @requires(Capability.THREADS)
    def test_uncommitted_writes_are_invisible_and_rollback_discards(self, provider: Any) -> None:
        provider.admin.create(COUNTERS)
        provider.table("counters").upsert({"name": "a", "n": 10})
        seen: list[Any] = []
        inside, read = threading.Event(), threading.Event()

        def other() -> None:
            inside.wait()
            # an exclusive store waits here until the transaction ends; others read at once
            seen.append(provider.table("counters").read(("a",))["n"])
            read.set()

        th = threading.Thread(target=other)
        th.start()
        try:
            with provider.transaction() as tx:
                tx.table("counters").upsert({"name": "a", "n": 99})
                assert tx.table("counters").read(("a",))["n"] == 99  # read-your-own-writes
                inside.set()
                read.wait(0.2)
                raise RuntimeError("roll back")
        except RuntimeError:
            pass
        th.join()
        assert seen == [10] and provider.table("counters").read(("a",))["n"] == 10

    @requires(Capability.THREADS)
    def test_read_modify_write_from_threads_loses_no_update(self, provider: Any) -> None:
        """A read then a write of the value read, in ``p.run`` from 4 threads: every
        cycle counts (a conflict is retried, never a lost update)."""
        provider.admin.create(COUNTERS)
        provider.table("counters").upsert({"name": "hits", "n": 0})
        errors: list[BaseException] = []

        def cycle(tx: Any) -> None:
            t = tx.table("counters")
            t.upsert({"name": "hits", "n": t.read(("hits",))["n"] + 1})

        def work() -> None:
            try:
                for _ in range(25):
                    provider.run(cycle, retries=200)
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=work) for _ in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert errors == []
        row = provider.table("counters").read(("hits",))
        assert row["n"] == 100 and row.version == 101

    @requires(Capability.THREADS, Capability.PROCESSES)
    def test_compare_and_swap_from_null_by_independent_clients(self, provider: Any, provider_url: str) -> None:
        """20 threads, each with its own provider on the URL, swap a missing row's
        owner from null: one wins and creates the row at version 1."""
        provider.admin.create(COUNTERS)
        results: list[bool] = []
        errors: list[BaseException] = []
        barrier = threading.Barrier(20, timeout=60)

        def work(i: int) -> None:
            try:
                with spi.connect(provider_url) as p:
                    barrier.wait()
                    results.append(p.table("counters").compare_and_swap(("leader",), "owner", None, f"w{i}"))
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(20)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert errors == []
        assert sorted(results) == [False] * 19 + [True]
        row = provider.table("counters").read(("leader",))
        assert row["owner"].startswith("w") and row.version == 1

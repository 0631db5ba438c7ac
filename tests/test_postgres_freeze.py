"""Freezing a PostgreSQL table seen from other connections: single-statement writes
with a spec cached before the freeze, transactions that read or wrote the table
before it (the contract itself is in spi/testing/conformance/freeze.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from cli_support import until

import spi
from spi.errors import ConflictError, FrozenTableError
from spi.keys import Range
from spi.testing.fixtures import ORDERS, order_rows


def _two(pg_factory: Callable[..., Any]) -> tuple[Any, Any]:
    """A provider with ORDERS loaded and a second provider (its own connections) on the same schema."""
    p = pg_factory()
    p.admin.create(ORDERS)
    p.table("orders").load(order_rows())
    return p, spi.connect(p.url)


def test_another_connections_cached_writes_are_refused_right_after_freeze(pg_factory: Callable[..., Any]) -> None:
    p, other = _two(pg_factory)
    try:
        t = other.table("orders")
        writes: list[Callable[[], Any]] = [
            lambda: t.upsert({"region": "eu", "id": 1000}),
            lambda: t.insert({"region": "eu", "id": 1001}),
            lambda: t.replace({"region": "eu", "id": -5}),
            lambda: t.update(("eu", -5), {"note": "x"}),
            lambda: t.delete(("eu", -5)),
            lambda: t.increment(("eu", -5), "total", 1),
            lambda: t.compare_and_swap(("eu", 1002), "status", None, "x"),
            lambda: t.update_range(Range.prefix(("eu",)), changes={"note": "x"}),
            lambda: t.delete_range(Range.prefix(("us",))),
            lambda: t.load([{"region": "eu", "id": 1003}]),
        ]
        assert t.upsert({"region": "eu", "id": 999}) == 1  # the single-statement path knows the spec now
        assert t.read(("eu", 999)) is not None
        before = [(dict(r), r.version) for r in t.scan()]
        p.admin.freeze("orders")
        for write in writes:
            with pytest.raises(FrozenTableError, match="table orders is frozen"):
                write()
        assert [(dict(r), r.version) for r in t.scan()] == before
        assert t.read(("eu", 999)) is not None and other.admin.is_frozen("orders")
        p.admin.unfreeze("orders")
        assert t.upsert({"region": "eu", "id": 999}) == 2
    finally:
        other.close()


def test_a_transaction_that_read_before_the_freeze_cannot_write_after_it(pg_factory: Callable[..., Any]) -> None:
    p, other = _two(pg_factory)
    try:
        with pytest.raises((ConflictError, FrozenTableError)), other.transaction() as tx:
            t = tx.table("orders")
            assert t.read(("eu", -5)) is not None  # its snapshot and spec predate the freeze
            p.admin.freeze("orders")
            t.upsert({"region": "eu", "id": 1000})
        assert p.table("orders").read(("eu", 1000)) is None
    finally:
        other.close()


def _lock_waits(dsn: str, schema: str) -> int:
    """How many lock requests on the tables of ``schema`` wait (are not granted)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        found = conn.execute(
            "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE NOT l.granted AND n.nspname = %s",
            (schema,),
        ).fetchone()
    return int(found[0]) if found else 0


def test_freeze_waits_for_a_transaction_that_wrote_the_table(pg_factory: Callable[..., Any], pg_server: Any) -> None:
    p, other = _two(pg_factory)
    try:
        frozen = threading.Event()

        def freeze() -> None:
            p.admin.freeze("orders")
            frozen.set()

        with other.transaction() as tx:
            tx.table("orders").upsert({"region": "eu", "id": 1000})
            freezer = threading.Thread(target=freeze)
            freezer.start()
            assert until(lambda: _lock_waits(pg_server.dsn, p.schema) > 0, 30)  # the freeze waits for the table
            assert not frozen.is_set()  # the writer commits first
        freezer.join(30)
        assert frozen.is_set()
        assert p.table("orders").read(("eu", 1000)) is not None
        with pytest.raises(FrozenTableError):
            other.table("orders").upsert({"region": "eu", "id": 1001})
    finally:
        other.close()

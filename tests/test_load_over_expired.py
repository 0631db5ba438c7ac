"""Loads whose batches meet rows that expired but are not swept yet: a key taken by
an expired row starts again at version 1 with an ``expire`` event, an expired row of
another key in the batch's key range is left to the sweep; the same on every
provider (PostgreSQL COPYs a batch straight in and scans for expired rows only when
a key is taken). The rows expire on a test clock (:mod:`spi.clock`), moved past
their ttl."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import spi
from spi.clock import ManualClock
from spi.testing.fixtures import ORDERS


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture(params=["memory", "postgres"])
def provider(request: pytest.FixtureRequest, clock: ManualClock) -> Any:
    if request.param == "memory":
        p = spi.connect("memory://", clock=clock)
        request.addfinalizer(p.close)
        return p
    factory: Callable[..., Any] = request.getfixturevalue("pg_factory")
    p = factory()
    p.clock = clock
    return p


def test_a_load_meets_expired_rows_as_single_writes_do(provider: Any, clock: ManualClock) -> None:
    provider.admin.create(ORDERS.with_changes(True))
    t = provider.table("orders")
    t.load([{"region": "eu", "id": i, "status": "old"} for i in (1, 3, 5)], ttl=0.3)
    t.load([{"region": "eu", "id": 9, "status": "kept"}])
    clock.advance(0.45)
    before = len(list(provider.changes("orders")))
    # ids 2 and 4 are new keys between expired rows; 3 is taken by an expired row
    assert t.load([{"region": "eu", "id": i, "status": "new"} for i in (2, 4)]) == 2
    assert t.load([{"region": "eu", "id": i, "status": "new"} for i in (3, 9)]) == 2
    rows = {r["id"]: (r["status"], r.version) for r in t.scan()}
    assert rows == {2: ("new", 1), 3: ("new", 1), 4: ("new", 1), 9: ("new", 2)}
    events = [(e.op, e.key["id"], e.version) for e in list(provider.changes("orders"))[before:]]
    assert events[:2] == [("put", 2, 1), ("put", 4, 1)]
    assert sorted(events[2:]) == [("expire", 3, None), ("put", 3, 1), ("put", 9, 2)]

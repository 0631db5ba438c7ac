"""The background sweep (``?sweep_interval=``) on every provider, PostgreSQL's
change-feed retention (``?changes_retention=``), and expiry across processes."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_support import REPO, until

import spi
from spi.clock import ManualClock
from spi.errors import RevisionCompactedError, UrlError
from spi.testing.fixtures import ORDERS

FED = ORDERS.with_changes(True)


@pytest.fixture(params=["memory", "rocksdb", "postgres"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """``opener(query, clock=None)`` opens one fresh store of each provider with URL
    options ``query`` (and the test clock ``clock``, :mod:`spi.clock`)."""
    opened: list[Any] = []

    def open_with(query: str, clock: ManualClock | None = None) -> Any:
        if request.param == "postgres":
            factory = request.getfixturevalue("pg_factory")
            provider = factory(**dict(pair.split("=") for pair in query.split("&")))
            if clock is not None:
                provider.clock = clock
            return provider
        url = "memory://" if request.param == "memory" else f"rocksdb://{tmp_path}/db"
        provider = spi.connect(f"{url}?{query}", clock=clock)
        opened.append(provider)
        return provider

    yield open_with
    for p in opened:
        p.close()


def test_an_open_provider_sweeps_in_the_background(opener: Callable[..., Any]) -> None:
    clock = ManualClock()
    p = opener("sweep_interval=0.2", clock)
    p.admin.create(FED)
    t = p.table("orders")
    t.upsert({"region": "eu", "id": 1}, ttl=0.2)
    t.upsert({"region": "eu", "id": 2})
    clock.advance(0.3)  # expired now: the sweeper's next round (0.2 s of real time) removes it
    assert until(lambda: [e.op for e in p.changes("orders")] == ["put", "put", "expire"])
    assert t.count() == 1


def test_sweep_interval_zero_turns_the_background_sweep_off(opener: Callable[..., Any]) -> None:
    clock = ManualClock()
    p = opener("sweep_interval=0", clock)
    p.admin.create(FED)
    p.table("orders").upsert({"region": "eu", "id": 1}, ttl=0.1)
    clock.advance(0.2)
    time.sleep(0.3)  # real time for a background round that must not come
    assert [e.op for e in p.changes("orders")] == ["put"]
    assert p.table("orders").read(("eu", 1)) is None  # gone for reads all the same


def test_bad_sweep_intervals_are_url_errors() -> None:
    for bad in ("-1", "soon"):
        with pytest.raises(UrlError, match="sweep_interval"):
            spi.connect(f"memory://?sweep_interval={bad}")


def test_postgres_retention_forgets_old_events(pg_factory: Callable[..., Any]) -> None:
    p = pg_factory(changes_retention="1", sweep_interval="0.3")
    p.admin.create(FED)
    t = p.table("orders")
    t.upsert({"region": "eu", "id": 1})
    first = p.revision()
    time.sleep(1.2)
    t.upsert({"region": "eu", "id": 2})

    def compacted() -> bool:
        try:
            list(p.changes("orders"))
        except RevisionCompactedError as exc:
            return exc.oldest >= first
        return False

    assert until(compacted)
    assert [e.key["id"] for e in p.changes("orders", since=first)] == [2]


def test_an_expiry_written_in_one_process_holds_in_another(tmp_path: Path) -> None:
    url = f"rocksdb://{tmp_path}/db"
    with spi.connect(url) as p:
        p.admin.create(ORDERS.with_ttl(60))
        p.table("orders").upsert({"region": "eu", "id": 1})
    script = (  # the other process moves its own clock (from the wall clock's now) past the expiry
        "import spi\n"
        "from spi.clock import ManualClock\n"
        "clock = ManualClock()\n"
        f"p = spi.connect({url!r}, create=False, clock=clock)\n"
        "t = p.table('orders')\n"
        "before = t.read(('eu', 1)) is not None\n"
        "clock.advance(60)\n"
        "print(before, t.read(('eu', 1)) is None, t.count())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=60, check=True
    ).stdout
    assert out.split() == ["True", "True", "0"]

"""How fast watches react (SPI.md: "an event committed in another process reaches a
watcher within 1 s"): duration assertions kept out of the public conformance kit,
which checks only that the events come. Marked ``timing``: on a loaded machine they
may fail without a bug (``pytest -m "not timing"`` leaves them out)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import spi
from spi.errors import TableNotFoundError
from spi.testing.conformance.changes import fed_orders
from spi.testing.conformance.watch import STAMPER, later

pytestmark = pytest.mark.timing


@pytest.fixture(params=["rocksdb", "postgres"])
def opened(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Any, str]]:
    """A provider with a change-fed ``orders`` table, and a URL another process opens it with."""
    if request.param == "rocksdb":
        p = spi.connect(f"rocksdb://{tmp_path}/db")
    else:
        p = request.getfixturevalue("pg_factory")()
    try:
        fed_orders(p)
        yield p, str(p.url)
    finally:
        p.close()


def test_a_watch_ends_at_its_quiet_timeout(opened: tuple[Any, str]) -> None:
    p, _ = opened
    p.table("orders").upsert({"region": "eu", "id": 1})
    last = p.revision()
    start = time.monotonic()
    assert [e.revision for e in p.watch("orders", since=0, timeout=0.3)] == [last]
    assert 0.25 <= time.monotonic() - start < 3


def test_dropping_the_table_ends_its_watchers_at_once(opened: tuple[Any, str]) -> None:
    p, _ = opened
    p.table("orders").upsert({"region": "eu", "id": 1})
    dropper = later(0.2, lambda: p.admin.drop("orders"))
    start = time.monotonic()
    with pytest.raises(TableNotFoundError):
        for _ in p.watch("orders", timeout=10):
            pass
    dropper.join()
    assert time.monotonic() - start < 5


def test_a_watch_sees_another_process_within_a_second(opened: tuple[Any, str]) -> None:
    p, url = opened
    n = 8
    writer = subprocess.Popen([sys.executable, "-c", STAMPER, url, str(n)], stderr=subprocess.PIPE)
    delays: list[float] = []
    try:
        for event in p.watch("orders", timeout=20):
            assert event.row is not None
            delays.append(time.time() - event.row["total"])
            if len(delays) == n:
                break
    finally:
        _, err = writer.communicate(timeout=60)
    assert writer.returncode == 0, err.decode(errors="replace")
    assert len(delays) == n and max(delays) < 1.0, delays

"""Watching a change feed live, from threads and from other processes, and the
feed surviving a reopen (SPI.md, "Change feed, watch and expiry")."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

import spi
from spi.capabilities import Capability
from spi.errors import InvalidFieldError, RevisionCompactedError, SchemaError, TableNotFoundError
from spi.spec import TableSpec
from spi.testing.conformance.changes import FED, brief, fed_orders, revisions
from spi.testing.fixtures import ORDERS
from spi.testing.requirements import requires
from spi.testing.revisions import increasing


def later(delay: float, action: Callable[[], Any]) -> threading.Thread:
    """Run ``action`` in a thread after ``delay`` seconds."""

    def run() -> None:
        time.sleep(delay)
        action()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@requires(Capability.CHANGES)
class WatchTests:
    """``watch``: recorded events after ``since``, then live ones, until a timeout."""

    def test_watch_replays_from_since_then_follows_live_writes(self, provider: Any) -> None:
        t = fed_orders(provider)
        t.upsert({"region": "eu", "id": 1})
        first = provider.revision()
        t.upsert({"region": "eu", "id": 2})
        second = provider.revision()
        writer = later(0.2, lambda: t.upsert({"region": "eu", "id": 3}))
        got = []
        for event in provider.watch("orders", since=first, timeout=5):
            got.append(event)
            if len(got) == 2:
                break
        writer.join()
        assert [e.key["id"] for e in got] == [2, 3]
        assert revisions(got) == [second, provider.revision()] and increasing([first, *revisions(got)])

    def test_watch_without_since_starts_at_the_current_revision(self, provider: Any) -> None:
        t = fed_orders(provider)
        t.upsert({"region": "eu", "id": 1})
        feed = provider.watch("orders", timeout=5)
        t.upsert({"region": "eu", "id": 2})  # after the call: seen
        assert next(feed).key == {"region": "eu", "id": 2}
        feed.close()

    def test_watch_ends_after_a_quiet_timeout(self, provider: Any) -> None:
        fed_orders(provider).upsert({"region": "eu", "id": 1})
        assert revisions(provider.watch("orders", since=0, timeout=0.3)) == [provider.revision()]

    def test_watch_filters_by_key_and_prefix(self, provider: Any) -> None:
        t = fed_orders(provider)
        taken = []
        for region, i in [("eu", 1), ("us", 1), ("eu", 2), ("eu", 1)]:
            t.upsert({"region": region, "id": i})
            taken.append(provider.revision())
        assert increasing(taken)
        by_key = provider.watch("orders", key=("eu", 1), since=0, timeout=0.2)
        assert revisions(by_key) == [taken[0], taken[3]]
        by_prefix = provider.watch("orders", prefix={"region": "us"}, since=0, timeout=0.2)
        assert revisions(by_prefix) == [taken[1]]

    def test_dropping_the_table_ends_its_watchers(self, provider: Any) -> None:
        t = fed_orders(provider)
        t.upsert({"region": "eu", "id": 1})
        dropper = later(0.2, lambda: provider.admin.drop("orders"))
        with pytest.raises(TableNotFoundError):  # not the end of the quiet timeout
            for _ in provider.watch("orders", timeout=10):
                pass
        dropper.join()

    def test_turning_the_feed_off_ends_its_watchers(self, provider: Any) -> None:
        fed_orders(provider)
        later(0.2, lambda: provider.admin.create_or_update(ORDERS))
        with pytest.raises(SchemaError):
            for _ in provider.watch("orders", timeout=10):
                pass

    def test_watch_checks_its_arguments_at_the_call(self, provider: Any) -> None:
        t = fed_orders(provider)
        provider.admin.create(TableSpec("plain", ORDERS.fields, ORDERS.primary_key))
        taken = []
        for i in range(3):
            t.upsert({"region": "eu", "id": i})
            taken.append(provider.revision())
        provider.compact(taken[1])
        with pytest.raises(TableNotFoundError):
            provider.watch("nope")
        with pytest.raises(SchemaError):
            provider.watch("plain")
        with pytest.raises(RevisionCompactedError) as info:
            provider.watch("orders", since=taken[0])
        assert info.value.oldest == taken[1]
        for bad in ({"timeout": -1}, {"since": -1}, {"key": ("eu",)}, {"key": ("eu", 1), "prefix": ("eu",)}):
            with pytest.raises(InvalidFieldError):
                provider.watch("orders", **bad)

    def test_a_closed_watch_holds_nothing(self, provider: Any) -> None:
        t = fed_orders(provider)
        feed = provider.watch("orders", timeout=5)
        t.upsert({"region": "eu", "id": 1})
        assert next(feed).revision == provider.revision() > 0
        feed.close()
        t.upsert({"region": "eu", "id": 2})  # writes and drops go on undisturbed
        provider.admin.drop("orders")
        with pytest.raises(StopIteration):
            next(feed)


_WRITER = textwrap.dedent(
    """
    import sys, spi
    url, name, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    def both(tx, i):
        t = tx.table("orders")
        t.upsert({"region": name, "id": i, "status": "a"})
        t.upsert({"region": name, "id": i, "status": "b"})
    with spi.connect(url) as p:
        for i in range(n):
            if i % 3 == 2:
                p.run(lambda tx: both(tx, i), retries=100)
            else:
                p.table("orders").upsert({"region": name, "id": i})
    """
)
STAMPER = textwrap.dedent(
    """
    import sys, time, spi
    with spi.connect(sys.argv[1]) as p:
        for i in range(int(sys.argv[2])):
            time.sleep(0.15)
            p.table("orders").upsert({"region": "x", "id": i, "total": time.time()})
    """
)
"""A process writing N rows of ``orders`` 0.15 s apart, each stamped with its write
time (``time.time()``) in ``total``: argv URL N."""


@requires(Capability.CHANGES, Capability.PROCESSES)
class ChangeProcessTests:
    """Other processes' commits reach a live watcher; a reader that resumes from the
    last revision it saw misses and repeats nothing. (How fast they reach it is a
    timing test of kvctl's own, tests/test_watch_timing.py: the kit asserts no
    durations.)"""

    def test_a_watch_sees_another_process(self, provider: Any, provider_url: str) -> None:
        fed_orders(provider)
        n = 8
        writer = subprocess.Popen([sys.executable, "-c", STAMPER, provider_url, str(n)], stderr=subprocess.PIPE)
        ids: list[int] = []
        try:
            for event in provider.watch("orders", timeout=20):
                assert event.row is not None and event.op == "put"
                ids.append(event.key["id"])
                if len(ids) == n:
                    break
        finally:
            _, err = writer.communicate(timeout=60)
        assert writer.returncode == 0, err.decode(errors="replace")
        assert ids == list(range(n))

    def test_writer_processes_and_a_resuming_reader(self, provider: Any, provider_url: str) -> None:
        fed_orders(provider)
        names, each = ["p0", "p1", "p2"], 30
        writers = [
            subprocess.Popen([sys.executable, "-c", _WRITER, provider_url, name, str(each)], stderr=subprocess.PIPE)
            for name in names
        ]
        seen: list[Any] = []
        since = 0
        while any(w.poll() is None for w in writers):
            batch = list(provider.changes("orders", since=since))
            seen.extend(batch)
            if batch:
                since = batch[-1].revision
            time.sleep(0.01)
        for w in writers:
            _, err = w.communicate(timeout=120)
            assert w.returncode == 0, err.decode(errors="replace")
        seen.extend(provider.changes("orders", since=since))
        assert brief(seen) == brief(provider.changes("orders"))  # nothing missed, nothing repeated
        revisions = [e.revision for e in seen]
        assert revisions == sorted(revisions) and len(set(revisions)) == len(names) * each
        for name in names:  # each writer's events in its own order, a transaction's two together
            mine = [(e.key["id"], e.version) for e in seen if e.key["region"] == name]
            assert mine == [(i, v) for i in range(each) for v in ((1, 2) if i % 3 == 2 else (1,))]


@requires(Capability.CHANGES, Capability.DURABLE)
class ChangeDurabilityTests:
    """The feed and the revision survive closing and reopening the store."""

    def test_the_feed_survives_reopening(self, provider: Any, provider_url: str) -> None:
        t = fed_orders(provider)
        t.upsert({"region": "eu", "id": 1})
        t.delete(("eu", 1))
        before, last = brief(provider.changes()), provider.revision()
        assert increasing([b[0] for b in before]) and before[-1][0] == last
        provider.close()
        with spi.connect(provider_url) as again:
            assert again.revision() == last and brief(again.changes()) == before
            assert again.admin.get_spec("orders") == FED
            again.table("orders").upsert({"region": "eu", "id": 1})
            assert revisions(again.changes(since=last)) == [again.revision()] and again.revision() > last

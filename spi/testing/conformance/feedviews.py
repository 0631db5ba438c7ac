"""Old images, filters, progress and snapshot-then-follow of change feeds (SPI.md,
"Old images, filters, progress, snapshot-then-follow"): ``created``, ``prev`` and
``expires_at`` on events, ``ops``, ``watch(progress=...)`` and ``watch(initial=True)``."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from spi.capabilities import Capability
from spi.changes import Change, Progress
from spi.errors import InvalidFieldError
from spi.keys import Range
from spi.testing.conformance.changes import FED, FED_COUNTERS, fed_orders
from spi.testing.requirements import requires


def images(events: Any) -> list[tuple[Any, ...]]:
    """Events as ``(op, id, created, prev's status or "-" when prev is None)``."""
    return [(e.op, e.key["id"], e.created, "-" if e.prev is None else e.prev["status"]) for e in events]


@requires(Capability.CHANGES)
class ChangeViewTests:
    """What an event says of the row before it, and the reader's filters and bookmarks."""

    def test_created_and_prev_follow_each_write(self, provider: Any) -> None:
        t = fed_orders(provider)
        t.insert({"region": "eu", "id": 1, "status": "a"})
        t.upsert({"region": "eu", "id": 1, "status": "b"})
        t.update(("eu", 1), {"status": "c"})
        t.replace({"region": "eu", "id": 1, "status": "d"})
        t.compare_and_swap(("eu", 1), "status", "d", "e")
        t.delete(("eu", 1))
        t.upsert({"region": "eu", "id": 1, "status": "f"})
        events = list(provider.changes("orders", prev=True))
        assert images(events) == [
            ("put", 1, True, "-"),
            ("put", 1, False, "a"),
            ("put", 1, False, "b"),
            ("put", 1, False, "c"),
            ("put", 1, False, "d"),
            ("delete", 1, None, "e"),
            ("put", 1, True, "-"),
        ]
        assert events[1].prev == {"region": "eu", "id": 1, "status": "a", "total": None, "note": None}
        assert all(e.prev is None for e in provider.changes("orders"))  # only when asked for
        assert all(e.expires_at is None for e in events)

    def test_range_writes_increments_and_loads_carry_prev(self, provider: Any) -> None:
        t = fed_orders(provider)
        t.load([{"region": "eu", "id": i, "status": "s"} for i in range(3)])
        since = provider.revision()
        t.update_range(Range.prefix(("eu",)), changes={"status": "u"})
        t.load([{"region": "eu", "id": i, "status": "l"} for i in range(2, 5)], mode="upsert")
        t.delete_range(Range.prefix(("eu",)))
        events = list(provider.changes("orders", since=since, prev=True))
        assert images(events) == [
            ("put", 0, False, "s"),
            ("put", 1, False, "s"),
            ("put", 2, False, "s"),
            ("put", 2, False, "u"),
            ("put", 3, True, "-"),
            ("put", 4, True, "-"),
            *[("delete", i, None, s) for i, s in ((0, "u"), (1, "u"), (2, "l"), (3, "l"), (4, "l"))],
        ]
        provider.admin.create(FED_COUNTERS)
        counters = provider.table("counters")
        counters.increment(("a",), "n", 2)
        counters.increment(("a",), "n", 3)
        first, second = provider.changes("counters", prev=True)
        assert (first.created, first.prev) == (True, None)
        assert second.created is False and second.prev is not None and second.prev["n"] == 2

    def test_expiry_is_on_puts_and_an_expired_row_is_the_expire_events_prev(self, provider: Any, clock: Any) -> None:
        if Capability.EXPIRY not in provider.capabilities:
            pytest.skip("not applicable: the provider does not declare capability expiry")
        t = fed_orders(provider)
        t.upsert({"region": "eu", "id": 1, "status": "old"}, ttl=0.2)
        clock.advance(0.4)
        t.upsert({"region": "eu", "id": 1, "status": "new"})  # meets the expired row: swept first
        put, expire, again = provider.changes("orders", prev=True)
        assert put.expires_at is not None and put.created is True
        assert (expire.op, expire.prev is not None and expire.prev["status"]) == ("expire", "old")
        assert (again.op, again.created, again.prev, again.expires_at) == ("put", True, None, None)

    def test_ops_keep_only_those_operations(self, provider: Any) -> None:
        t = fed_orders(provider)
        t.upsert({"region": "eu", "id": 1})
        t.delete(("eu", 1))
        t.upsert({"region": "eu", "id": 2})
        assert [e.op for e in provider.changes("orders", ops={"delete"})] == ["delete"]
        assert [e.key["id"] for e in provider.changes("orders", ops=["put"])] == [1, 2]
        assert list(provider.changes("orders", ops=set())) == []
        for bad in ({"puts"}, 3, ["put", None]):
            with pytest.raises(InvalidFieldError):
                list(provider.changes("orders", ops=bad))
            with pytest.raises(InvalidFieldError):
                provider.watch("orders", ops=bad)
        with pytest.raises(InvalidFieldError):
            provider.watch("orders", progress=0)
        watched = provider.watch("orders", since=0, ops={"put"}, timeout=0.2)
        assert [e.key["id"] for e in watched] == [1, 2]

    def test_progress_bookmarks_miss_nothing(self, provider: Any) -> None:
        t = fed_orders(provider)
        t.upsert({"region": "eu", "id": 0})
        start = provider.revision()
        marks = [e for e in provider.watch("orders", progress=0.2, timeout=0.5) if isinstance(e, Progress)]
        assert marks and all(m.revision >= start for m in marks)
        seen: list[int] = []
        stop = threading.Event()

        def write() -> None:
            for i in range(1, 30):
                t.upsert({"region": "eu", "id": i})
                time.sleep(0.01)
            stop.set()

        writer = threading.Thread(target=write)
        bookmark = start
        writer.start()
        try:
            while not stop.is_set() or bookmark < provider.revision():
                for item in provider.watch("orders", since=bookmark, progress=0.05, timeout=1):
                    if isinstance(item, Progress):
                        bookmark = item.revision
                        break  # a restart at the bookmark
                    seen.append(item.key["id"])
        finally:
            writer.join()
        assert seen == list(range(1, 30))

    def test_initial_rows_then_progress_then_live_events_under_a_writer(self, provider: Any) -> None:
        t = fed_orders(provider)
        t.load([{"region": "eu", "id": i, "total": 0.0} for i in range(50)])
        t.upsert({"region": "us", "id": 1})
        done = threading.Event()

        def write() -> None:
            for i in range(50):
                t.increment(("eu", i), "total", 1.0)
            t.delete(("eu", 0))
            done.set()

        writer = threading.Thread(target=write)
        writer.start()
        state: dict[int, float] = {}
        at = None
        try:
            for item in provider.watch("orders", prefix=("eu",), initial=True, timeout=2):
                if isinstance(item, Progress):
                    at = at if at is not None else item.revision
                    continue
                assert isinstance(item, Change)
                if at is None:
                    assert item.created is True and item.prev is None
                if item.op == "put":
                    assert item.row is not None
                    state[item.key["id"]] = item.row["total"]
                else:
                    state.pop(item.key["id"])
                if at is not None and done.is_set() and item.revision >= provider.revision():
                    break
        finally:
            writer.join()
        assert state == {i: 1.0 for i in range(1, 50)}  # every increment once, none twice
        assert at is not None

    def test_initial_rows_of_one_key(self, provider: Any) -> None:
        provider.admin.create(FED)
        t = provider.table("orders")
        t.upsert({"region": "eu", "id": 1, "status": "x"})
        t.upsert({"region": "eu", "id": 2})
        items = list(provider.watch("orders", key=("eu", 1), initial=True, timeout=0.1))
        first, mark = items[0], items[1]
        assert (first.op, first.row["status"], first.version) == ("put", "x", 1)
        # R, the snapshot's revision: at least the last commit's, which the snapshot holds.
        assert isinstance(mark, Progress) and first.revision == mark.revision >= provider.revision() > 0
        (only,) = provider.watch("orders", initial=True, ops={"delete"}, timeout=0.1)
        assert isinstance(only, Progress) and only.revision >= provider.revision()

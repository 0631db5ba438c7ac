"""Row expiry (TTL): ``TableSpec(ttl=)``, ``ttl=`` on writes and loads,
``row.expires_at``, expired rows gone for every operation, sweeps and their
``"expire"`` events (SPI.md, "Change feed, watch and expiry").

Rows that must expire get a short ttl, and the tests move the provider's clock past
it (the ``clock`` fixture, :mod:`spi.clock`) instead of sleeping it out; one test
sleeps, to show that rows expire on the real clock too.
"""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

import pytest

from spi.capabilities import Capability
from spi.clock import ManualClock
from spi.errors import InvalidFieldError, RowNotFoundError, SchemaError
from spi.filters import col
from spi.keys import Range
from spi.row import Row
from spi.spec import TableSpec
from spi.testing.conformance.base import ProviderClock
from spi.testing.fixtures import COUNTERS, ORDERS
from spi.testing.requirements import requires

SHORT = 0.3
"""Seconds a row that must expire lives."""
LONG = 3600
"""A ttl no test outlives."""


def _wait_out(clock: ProviderClock, ttl: float = SHORT) -> None:
    """Let the rows written with ``ttl`` expire, on the provider's clock."""
    clock.advance(ttl + 0.15)


def _near(expires_at: dt.datetime | None, seconds: float) -> bool:
    """True when ``expires_at`` is about ``seconds`` from now (clocks of one machine)."""
    if expires_at is None:
        return False
    left = (expires_at - dt.datetime.now(dt.UTC)).total_seconds()
    return seconds - 60 <= left <= seconds + 5


@requires(Capability.EXPIRY)
class ExpiryTests:
    """Rows with an expiry are gone at once when it passes, on every operation."""

    def test_spec_ttl_round_trips_and_changes_compatibly(self, provider: Any) -> None:
        spec = ORDERS.with_ttl(LONG)
        assert TableSpec.from_dict(spec.to_dict()) == spec and spec.to_dict()["ttl"] == LONG
        assert spec != ORDERS and spec.fingerprint() != ORDERS.fingerprint()
        provider.admin.create(spec)
        assert provider.admin.get_spec("orders").ttl == LONG
        provider.admin.create_or_update(spec.with_ttl(60))
        assert provider.admin.get_spec("orders").ttl == 60
        provider.admin.create_or_update(spec.with_ttl(None))
        assert provider.admin.get_spec("orders").ttl is None

    @pytest.mark.parametrize("bad", [0, -1, "1h", True, float("inf"), float("nan")])
    def test_a_bad_ttl_is_refused_and_nothing_is_written(self, provider: Any, bad: Any) -> None:
        with pytest.raises(SchemaError, match="ttl"):
            ORDERS.with_ttl(bad)
        with pytest.raises(SchemaError, match="ttl"):
            TableSpec.from_dict({**ORDERS.to_dict(), "ttl": bad})
        provider.admin.create(ORDERS)
        t = provider.table("orders")
        with pytest.raises(InvalidFieldError, match="ttl"):
            t.upsert({"region": "eu", "id": 1}, ttl=bad)
        with pytest.raises(InvalidFieldError, match="ttl"):
            t.load([{"region": "eu", "id": 2}], ttl=bad)
        assert t.count() == 0

    def test_each_write_sets_the_rows_expiry(self, provider: Any) -> None:
        provider.admin.create(ORDERS)
        t = provider.table("orders")
        t.upsert({"region": "eu", "id": 1}, ttl=LONG)
        row = t.read(("eu", 1))
        assert row is not None and _near(row.expires_at, LONG)
        assert [r.expires_at for r in t.scan()] == [row.expires_at]
        t.update(("eu", 1), {"status": "open"})  # a write without ttl on a table without one
        row = t.read(("eu", 1))
        assert row is not None and row.expires_at is None and row.version == 2
        t.replace({"region": "eu", "id": 1}, ttl=60)
        t.insert({"region": "eu", "id": 2})
        t.load([{"region": "us", "id": 3}], ttl=LONG)
        got = {tuple(r[c] for c in ("region", "id")): r.expires_at for r in t.scan()}
        assert _near(got[("eu", 1)], 60) and got[("eu", 2)] is None and _near(got[("us", 3)], LONG)
        assert t.read(("eu", 2), columns=["id"]).expires_at is None
        assert _near(t.read(("us", 3), columns=["id"]).expires_at, LONG)
        assert _near(t.read_many([("us", 3)])[0].expires_at, LONG)

    def test_bulk_loads_over_existing_rows_set_their_expiry(self, provider: Any) -> None:
        provider.admin.create(ORDERS)
        t = provider.table("orders")
        t.load([{"region": "eu", "id": i} for i in range(4)], ttl=LONG)
        t.load([{"region": "eu", "id": i, "status": "x"} for i in range(2)])  # over rows that expire
        t.load([{"region": "eu", "id": i} for i in range(2, 6)], mode="replace", ttl=60)
        got = {r["id"]: (r.version, r.expires_at) for r in t.scan()}
        assert [got[i][0] for i in range(6)] == [2, 2, 2, 2, 1, 1]
        assert got[0][1] is None and got[1][1] is None
        assert all(_near(got[i][1], 60) for i in range(2, 6))

    def test_the_tables_ttl_applies_to_every_write_unless_a_call_overrides_it(self, provider: Any) -> None:
        provider.admin.create(COUNTERS.with_ttl(LONG))
        t = provider.table("counters")
        t.upsert({"name": "a"})
        t.increment(("b",), "n")
        t.compare_and_swap(("c",), "n", None, 1)
        t.load([{"name": "d"}])
        t.upsert({"name": "e"}, ttl=60)
        got = {r["name"]: r.expires_at for r in t.scan()}
        assert all(_near(got[k], LONG) for k in "abcd") and _near(got["e"], 60)

    def test_rows_expire_on_the_wall_clock_too(self, provider: Any) -> None:
        """The group's one test that sleeps: a provider left with its own clock lets
        rows expire as real time passes."""
        provider.admin.create(ORDERS)
        t = provider.table("orders")
        t.upsert({"region": "eu", "id": 1}, ttl=SHORT)
        t.load([{"region": "eu", "id": 2}], ttl=SHORT)
        t.upsert({"region": "eu", "id": 3})
        assert t.count() == 3
        time.sleep(SHORT + 0.15)
        assert t.read(("eu", 1)) is None and t.read(("eu", 2)) is None
        assert [r["id"] for r in t.scan()] == [3] and t.count() == 1
        provider.admin.sweep("orders")  # (a background sweep may have taken some first)
        assert provider.admin.sweep("orders") == 0 and t.count() == 1

    def test_a_row_lives_until_its_expiry_and_not_at_it(self, provider: Any, clock: ProviderClock) -> None:
        if not isinstance(clock, ManualClock):
            pytest.skip("not applicable: the provider takes no clock")
        provider.admin.create(ORDERS)
        t = provider.table("orders")
        t.upsert({"region": "eu", "id": 1}, ttl=SHORT)
        t.load([{"region": "eu", "id": 2}], ttl=SHORT)
        written = clock.now() + dt.timedelta(seconds=SHORT)
        assert [r.expires_at for r in t.scan()] == [written, written]
        clock.advance(SHORT - 0.001)
        assert t.read(("eu", 1)) is not None and t.count() == 2 and provider.admin.sweep("orders") == 0
        clock.advance(0.001)
        assert t.read(("eu", 1)) is None and t.read(("eu", 2)) is None
        assert list(t.scan()) == [] and t.count() == 0
        assert provider.admin.sweep("orders") == 2

    def test_auto_commit_scans_skip_expired_rows_across_pages(self, provider: Any, clock: ProviderClock) -> None:
        """Expired rows on both sides of a page boundary: every row that lives, in
        order, and a limit counts the rows returned, not the rows read."""
        provider.admin.create(COUNTERS)
        t = provider.table("counters")
        page = t.page_size
        names = [f"{i:06d}" for i in range(2 * page + 3)]
        t.load({"name": name, "n": i} for i, name in enumerate(names))
        dying = {page - 1, page, page + 1, 2 * page}
        t.load([{"name": names[i], "n": i} for i in sorted(dying)], ttl=SHORT)
        _wait_out(clock)
        live = [name for i, name in enumerate(names) if i not in dying]
        assert [r["name"] for r in t.scan()] == live
        assert [r["name"] for r in t.scan(descending=True)] == live[::-1]
        assert [r["name"] for r in t.scan(limit=page)] == live[:page]
        assert [r["name"] for r in t.scan(Range(start=(names[page - 2],)), limit=3)] == live[page - 2 : page + 1]

    def test_an_expired_row_is_gone_for_every_read(self, provider: Any, clock: ProviderClock) -> None:
        provider.admin.create(ORDERS)
        t = provider.table("orders")
        t.load([{"region": "eu", "id": i, "status": "open", "total": float(i)} for i in range(4)])
        t.upsert({"region": "eu", "id": 1, "status": "open", "total": 1.0}, ttl=SHORT)
        t.load([{"region": "us", "id": 9, "status": "open", "total": 9.0}], ttl=SHORT)
        assert t.count() == 5
        _wait_out(clock)
        live = [("eu", 0), ("eu", 2), ("eu", 3)]
        assert t.read(("eu", 1)) is None and t.read(("us", 9)) is None
        assert t.read_many([("eu", 1), ("eu", 2)])[0] is None
        assert [(r["region"], r["id"]) for r in t.scan()] == live
        assert [(r["region"], r["id"]) for r in t.scan(descending=True)] == live[::-1]
        assert [r["id"] for r in t.scan(where=col("status") == "open")] == [0, 2, 3]  # an index scan
        assert [r["id"] for r in t.scan(where=col("total") >= 0.5)] == [2, 3]  # a filter
        assert [r["id"] for r in t.scan(order_by="status")] == [0, 2, 3]
        assert [r["id"] for r in t.scan(Range.prefix(("eu",)), limit=2)] == [0, 2]
        assert t.count() == 3 and t.count(Range.prefix(("us",))) == 0
        assert t.count(where=col("status") == "open") == 3
        assert [r["id"] for r in t.scan_page(limit=10).rows] == [0, 2, 3]
        assert sum(len(b["id"]) for b in t.scan_batches()) == 3
        assert [r["id"] for r in t.multi_scan([Range.prefix(("eu",)), Range.prefix(("us",))])] == [0, 2, 3]
        assert sum(b.num_rows for b in t.scan_arrow()) == 3
        assert [(g.values, g.count) for g in t.aggregate(group_by=["region"])] == [(("eu",), 3)]
        with provider.transaction() as tx:  # a transaction's reads too
            assert tx.table("orders").read(("eu", 1)) is None and tx.table("orders").count() == 3

    def test_deleting_every_row_counts_the_live_ones(self, provider: Any, clock: ProviderClock) -> None:
        """A whole-table delete (the store's own range deletion where it has one) counts
        the live rows only, and leaves no index or expiry entry behind."""
        provider.admin.create(ORDERS)
        t = provider.table("orders")
        t.load([{"region": "eu", "id": i, "status": f"s{i % 3}", "total": float(i)} for i in range(50)])
        t.load([{"region": "us", "id": i, "status": "open"} for i in range(5)], ttl=SHORT)
        t.load([{"region": "us", "id": i, "status": "open"} for i in range(5, 8)], ttl=LONG)
        _wait_out(clock)
        assert t.delete_range() == 53
        assert t.count() == 0 and list(t.scan(where=col("status") == "open")) == []
        assert provider.admin.verify("orders") == [] and t.delete_range() == 0
        t.upsert({"region": "eu", "id": 1, "status": "s1"})
        assert t.count() == 1 and [r["id"] for r in t.scan(where=col("status") == "s1")] == [1]
        with provider.transaction() as tx:  # rows written in the same transaction count too
            tx.table("orders").upsert({"region": "zz", "id": 1, "status": "new"})
            assert tx.table("orders").delete_range() == 2 and tx.table("orders").count() == 0
        assert t.count() == 0 and provider.admin.verify("orders") == []

    def test_an_expired_row_is_gone_for_every_write(self, provider: Any, clock: ProviderClock) -> None:
        provider.admin.create(COUNTERS)
        t = provider.table("counters")
        for name in "abcdef":
            t.upsert({"name": name, "n": 5, "owner": "x"}, ttl=SHORT)
        for name in "abcdef":
            t.upsert({"name": name, "n": 5})  # version 2, no expiry ...
            t.upsert({"name": name, "n": 5}, ttl=SHORT)  # ... then version 3, expiring
        _wait_out(clock)
        assert t.insert({"name": "a"}) == 1  # the key is free again: version 1
        with pytest.raises(RowNotFoundError):
            t.update(("b",), {"n": 1})
        assert t.delete(("c",)) is False
        assert t.compare_and_swap(("d",), "n", None, 7) is True
        assert t.increment(("e",), "n") == 1
        assert t.upsert({"name": "f"}) == 1
        got = {r["name"]: (r["n"], r["owner"], r.version) for r in t.scan()}
        assert got == {"a": (None, None, 1), "d": (7, None, 1), "e": (1, None, 1), "f": (None, None, 1)}

    def test_conditional_writes_see_an_expired_row_as_missing(self, provider: Any, clock: ProviderClock) -> None:
        provider.admin.create(ORDERS)
        t = provider.table("orders")
        t.upsert({"region": "eu", "id": 1}, ttl=SHORT)
        _wait_out(clock)
        with pytest.raises(RowNotFoundError):
            t.replace({"region": "eu", "id": 1}, version=1)
        with pytest.raises(RowNotFoundError):
            t.delete(("eu", 1), version=1)
        assert t.update(("eu", 1), {"status": "new"}, default={}) == 1

    def test_sweep_removes_expired_rows_and_counts_them(self, provider: Any, clock: ProviderClock) -> None:
        provider.admin.create(ORDERS)
        t = provider.table("orders")
        t.load([{"region": "eu", "id": i} for i in range(1500)], ttl=SHORT)
        t.load([{"region": "us", "id": i} for i in range(3)], ttl=LONG)
        t.upsert({"region": "ap", "id": 1})
        assert provider.admin.sweep("orders") == 0  # nothing has expired yet
        _wait_out(clock)
        assert provider.admin.sweep("orders") == 1500  # more than one sweep commit
        assert provider.admin.sweep("orders") == 0
        assert t.count() == 4
        if Capability.VERIFY in provider.capabilities:
            assert provider.admin.verify("orders") == []

    def test_a_load_that_keeps_versions_keeps_expiry(self, provider: Any) -> None:
        provider.admin.create(ORDERS)
        t = provider.table("orders")
        when = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
        source = [
            Row({"region": "eu", "id": 1}, 4, when),
            Row({"region": "eu", "id": 2}, 7),
        ]
        t.load(source, keep_versions=True)
        got = {r["id"]: (r.version, r.expires_at) for r in t.scan()}
        assert got == {1: (4, when), 2: (7, None)}
        with pytest.raises(InvalidFieldError, match="ttl"):
            t.load(source, keep_versions=True, ttl=60)


@requires(Capability.EXPIRY, Capability.CHANGES)
class ExpiryChangeTests:
    """A change-fed table records one ``"expire"`` event per swept row."""

    def test_sweeps_and_writes_that_meet_expired_rows_record_expire_events(
        self, provider: Any, clock: ProviderClock
    ) -> None:
        provider.admin.create(ORDERS.with_changes(True))
        t = provider.table("orders")
        t.upsert({"region": "eu", "id": 1}, ttl=SHORT)
        t.upsert({"region": "eu", "id": 2}, ttl=SHORT)
        t.upsert({"region": "eu", "id": 3})
        start = provider.revision()
        _wait_out(clock)
        assert list(provider.changes("orders", since=start)) == []  # reads never wait for a sweep
        t.upsert({"region": "eu", "id": 1, "status": "again"})
        assert provider.admin.sweep("orders") == 1
        events = list(provider.changes("orders", since=start))
        assert [(e.op, e.key["id"], e.version, e.row) for e in events][:2] == [
            ("expire", 1, None, None),
            ("put", 1, 1, {"region": "eu", "id": 1, "status": "again", "total": None, "note": None}),
        ]
        assert events[0].revision == events[1].revision  # the write and the sweep it made
        assert [(e.op, e.key["id"]) for e in events[2:]] == [("expire", 2)]
        assert events[2].revision > events[1].revision

    def test_a_change_fed_load_of_rows_that_expire_records_their_puts(self, provider: Any) -> None:
        provider.admin.create(ORDERS.with_changes(True))
        t = provider.table("orders")
        t.load([{"region": "eu", "id": i} for i in range(100)], ttl=LONG)
        t.load([{"region": "eu", "id": i} for i in range(50, 150)], ttl=LONG)
        events = list(provider.changes("orders"))
        assert [(e.op, e.key["id"], e.version) for e in events[:1]] == [("put", 0, 1)]
        assert len(events) == 200 and [e.version for e in events[100:150]] == [2] * 50
        assert all(_near(r.expires_at, LONG) for r in t.scan())


@requires(Capability.EXPIRY)
class ExpiryStagingTests:
    """An atomic overwrite of a table with a ttl gives the new rows the table's ttl."""

    def test_staging_tables_keep_the_ttl_and_swaps_keep_expiry(self, provider: Any) -> None:
        provider.admin.create(ORDERS.with_ttl(LONG))
        staging = provider.admin.create_staging("orders")
        assert provider.admin.get_spec(staging).ttl == LONG
        provider.table(staging).load([{"region": "eu", "id": 1}])
        provider.admin.swap_rows("orders", staging)
        row = provider.table("orders").read(("eu", 1))
        assert row is not None and _near(row.expires_at, LONG)

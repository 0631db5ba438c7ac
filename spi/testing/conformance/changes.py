"""Change feeds: revisions, the events each write records, ``changes``, compaction
(SPI.md, "Change feed, watch and expiry"). Live ``watch`` is in
:mod:`spi.testing.conformance.watch`.

Revisions are taken from what the provider reports (events, ``revision()`` after a
write) and only their relations asserted: the SPI promises 0 before the first
recorded write and one new, greater revision per change-fed transaction, not
consecutive numbers (:mod:`spi.testing.revisions`)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from spi.capabilities import Capability
from spi.changes import Change
from spi.errors import InvalidFieldError, RevisionCompactedError, RowExistsError, SchemaError, TableNotFoundError
from spi.filters import col
from spi.keys import Range
from spi.spec import Field, TableSpec
from spi.testing.fixtures import COUNTERS, ORDERS
from spi.testing.requirements import requires
from spi.testing.revisions import distinct, groups, increasing

FED = ORDERS.with_changes(True)
"""ORDERS with a change feed."""
FED_COUNTERS = COUNTERS.with_changes(True)


def brief(events: Any) -> list[tuple[Any, ...]]:
    """Events as ``(revision, table, op, key values, version)``."""
    return [(e.revision, e.table, e.op, tuple(e.key.values()), e.version) for e in events]


def ops(events: Any) -> list[tuple[str, tuple[Any, ...], int | None]]:
    """Events as ``(op, key values, version)``, without revisions."""
    return [(e.op, tuple(e.key.values()), e.version) for e in events]


def revisions(events: Any) -> list[int]:
    """The events' revisions, in feed order."""
    return [e.revision for e in events]


def fed_orders(provider: Any) -> Any:
    """Create the change-fed ORDERS table; its auto-commit handle."""
    provider.admin.create(FED)
    return provider.table("orders")


@requires(Capability.CHANGES)
class ChangeTests:
    """Every committed write to a change-fed table is one event, in order, under one
    revision per transaction."""

    fed_load_batch = 500
    """Rows per batch of the load whose batches are one revision each: a provider whose
    transactions hold fewer keys (etcd at its defaults) sets fewer."""

    def test_revision_starts_at_zero_and_counts_change_fed_commits(self, provider: Any) -> None:
        assert provider.revision() == 0
        provider.admin.create(ORDERS)
        provider.table("orders").upsert({"region": "eu", "id": 1})
        assert provider.revision() == 0  # a table without a feed records nothing
        provider.admin.create(FED_COUNTERS)
        counters = provider.table("counters")
        taken = []
        for _ in range(2):
            counters.increment(("a",), "n")
            taken.append(provider.revision())
        assert increasing(taken)  # two commits, two new revisions (not necessarily 1 and 2)
        assert revisions(provider.changes("counters")) == taken
        assert list(provider.changes("counters", since=taken[-1])) == []

    def test_each_write_call_records_one_event(self, provider: Any) -> None:
        t = fed_orders(provider)
        t.insert({"region": "eu", "id": 1, "status": "open"})
        t.upsert({"region": "eu", "id": 1, "total": 5.0})
        t.replace({"region": "eu", "id": 1, "note": "x"}, version=2)
        t.update(("eu", 1), {"status": "sent"})
        t.update(("eu", 2), {"status": "new"}, default={"total": 1.0})
        t.increment(("eu", 3), "total", 2.5)
        assert t.compare_and_swap(("eu", 3), "status", None, "cas") is True
        assert t.delete(("eu", 1)) is True
        events = list(provider.changes())
        assert ops(events) == [
            ("put", ("eu", 1), 1),
            ("put", ("eu", 1), 2),
            ("put", ("eu", 1), 3),
            ("put", ("eu", 1), 4),
            ("put", ("eu", 2), 1),
            ("put", ("eu", 3), 1),
            ("put", ("eu", 3), 2),
            ("delete", ("eu", 1), None),
        ]
        assert {e.table for e in events} == {"orders"}
        assert increasing(revisions(events)) and events[-1].revision == provider.revision()  # a commit each
        full = {"region": "eu", "id": 1, "status": None, "total": None, "note": "x"}
        assert events[2].row == full  # the whole row after the write
        assert events[3].row == {**full, "status": "sent"}
        assert events[5].row == {"region": "eu", "id": 3, "status": None, "total": 2.5, "note": None}
        assert events[7].row is None and events[7].key == {"region": "eu", "id": 1}
        assert all(isinstance(e, Change) for e in events)

    def test_calls_that_change_nothing_record_nothing(self, provider: Any) -> None:
        t = fed_orders(provider)
        t.upsert({"region": "eu", "id": 1, "status": "open"})
        assert t.delete(("eu", 9)) is False
        assert t.compare_and_swap(("eu", 1), "status", "closed", "x") is False
        assert t.update_range(Range.prefix(("us",)), changes={"note": "n"}) == 0
        assert t.delete_range(where=col("status") == "none") == 0
        with pytest.raises(RowExistsError):
            t.insert({"region": "eu", "id": 1})
        with pytest.raises(InvalidFieldError):
            t.upsert({"region": "eu", "id": 2, "total": "x"})
        assert ops(provider.changes()) == [("put", ("eu", 1), 1)]
        assert revisions(provider.changes()) == [provider.revision()] and provider.revision() > 0

    def test_a_transaction_takes_one_revision_in_call_order(self, provider: Any) -> None:
        fed_orders(provider)
        provider.admin.create(FED_COUNTERS)
        provider.admin.create(TableSpec("plain", ORDERS.fields, ORDERS.primary_key))
        with provider.transaction() as tx:
            tx.table("orders").upsert({"region": "eu", "id": 1})
            tx.table("counters").increment(("a",), "n", 2)
            tx.table("plain").upsert({"region": "eu", "id": 1})
            tx.table("orders").upsert({"region": "eu", "id": 1, "note": "again"})
            tx.table("orders").delete(("eu", 1))
        committed = provider.revision()

        class Rollback(Exception):
            pass

        with pytest.raises(Rollback), provider.transaction() as tx:
            tx.table("orders").upsert({"region": "us", "id": 1})
            raise Rollback
        assert provider.revision() == committed > 0
        assert brief(provider.changes()) == [
            (committed, "orders", "put", ("eu", 1), 1),
            (committed, "counters", "put", ("a",), 1),
            (committed, "orders", "put", ("eu", 1), 2),
            (committed, "orders", "delete", ("eu", 1), None),
        ]
        assert len({e.time for e in provider.changes()}) == 1  # one commit time

    def test_range_writes_and_loads_record_one_event_per_row(self, provider: Any) -> None:
        t = fed_orders(provider)
        rows = [{"region": r, "id": i, "status": "open"} for r in ("eu", "us") for i in range(3)]
        assert t.load(rows, batch_size=4) == 6
        loaded = list(provider.changes())
        assert groups(loaded) == [4, 2] and increasing(distinct(revisions(loaded)))  # one revision per batch
        since = provider.revision()
        assert since == loaded[-1].revision
        assert t.update_range(Range.prefix(("us",)), changes={"note": "n"}) == 3
        assert t.delete_range(where=col("id") == 0) == 2
        assert t.load([{"region": "eu", "id": 1, "note": "m"}], mode="upsert") == 1
        assert ops(provider.changes(since=since)) == [
            ("put", ("us", 0), 2),
            ("put", ("us", 1), 2),
            ("put", ("us", 2), 2),
            ("delete", ("eu", 0), None),
            ("delete", ("us", 0), None),
            ("put", ("eu", 1), 2),
        ]
        assert [e.row["note"] for e in provider.changes(since=since) if e.row is not None] == ["n", "n", "n", "m"]

    def test_a_failed_load_batch_records_nothing(self, provider: Any) -> None:
        t = fed_orders(provider)
        t.upsert({"region": "eu", "id": 1})
        with pytest.raises(RowExistsError):
            t.load([{"region": "eu", "id": 2}, {"region": "eu", "id": 1}], mode="insert")
        with pytest.raises(InvalidFieldError):
            t.load([{"region": "eu", "id": 3}, {"region": "eu", "id": 4, "total": "x"}])
        assert ops(provider.changes()) == [("put", ("eu", 1), 1)]

    def test_changes_filters_by_table_key_prefix_since_and_limit(self, provider: Any) -> None:
        t = fed_orders(provider)
        provider.admin.create(FED_COUNTERS)
        counters = provider.table("counters")
        taken = []
        for write in (
            lambda: t.upsert({"region": "eu", "id": 1}),
            lambda: counters.increment(("a",), "n"),
            lambda: t.upsert({"region": "us", "id": 1}),
            lambda: t.upsert({"region": "eu", "id": 2}),
            lambda: t.upsert({"region": "eu", "id": 1}),
        ):
            write()
            taken.append(provider.revision())
        assert increasing(taken)
        r1, r2, r3, r4, r5 = taken
        assert [e.table for e in provider.changes()] == ["orders", "counters", "orders", "orders", "orders"]
        assert revisions(provider.changes()) == taken
        assert revisions(provider.changes("orders")) == [r1, r3, r4, r5]
        assert revisions(provider.changes(["counters", "orders"], since=r3)) == [r4, r5]
        assert revisions(provider.changes("orders", key={"region": "eu", "id": 1})) == [r1, r5]
        assert revisions(provider.changes("orders", key=("eu", 1), since=r1)) == [r5]
        assert revisions(provider.changes("orders", prefix=("eu",))) == [r1, r4, r5]
        assert revisions(provider.changes("orders", prefix={"region": "us"})) == [r3]
        assert revisions(provider.changes(limit=2)) == [r1, r2]
        assert list(provider.changes(limit=0)) == []
        assert list(provider.changes(since=r5)) == [] and list(provider.changes(since=r5 + 99)) == []

    def test_changes_ends_at_the_revision_current_at_the_call(self, provider: Any) -> None:
        t = fed_orders(provider)
        batch = self.fed_load_batch
        t.load([{"region": "eu", "id": i} for i in range(5 * batch)], batch_size=batch)
        end = provider.revision()
        feed = provider.changes()
        first = next(feed)
        t.upsert({"region": "us", "id": 1})  # after the call: not in this feed
        rest = list(feed)
        assert len(rest) == 5 * batch - 1 and rest[-1].revision == end
        assert groups([first, *rest]) == [batch] * 5 and increasing(distinct(revisions([first, *rest])))
        assert [e.key["id"] for e in [first, *rest]] == list(range(5 * batch))

    def test_argument_errors(self, provider: Any) -> None:
        fed_orders(provider)
        provider.admin.create(COUNTERS)
        with pytest.raises(TableNotFoundError):
            provider.changes("nope")
        with pytest.raises(SchemaError, match="counters"):
            provider.changes("counters")
        with pytest.raises(InvalidFieldError):
            provider.changes(["orders", "counters"], key=("eu", 1))
        with pytest.raises(InvalidFieldError):
            provider.changes(key=("eu", 1))
        with pytest.raises(InvalidFieldError):
            provider.changes("orders", key=("eu",))  # incomplete key
        with pytest.raises(InvalidFieldError):
            provider.changes("orders", prefix=("eu", 1, 2))
        for since in (-1, "1", None, True):
            with pytest.raises(InvalidFieldError):
                provider.changes(since=since)
        with pytest.raises(InvalidFieldError):
            provider.changes(limit=-1)

    def test_the_feed_is_part_of_the_spec_and_can_be_turned_on_and_off(self, provider: Any) -> None:
        provider.admin.create(ORDERS)
        t = provider.table("orders")
        t.upsert({"region": "eu", "id": 1})
        provider.admin.create_or_update(FED)
        assert provider.admin.get_spec("orders") == FED and provider.admin.get_spec("orders").changes
        t.upsert({"region": "eu", "id": 2})
        provider.admin.create_or_update(ORDERS)
        assert provider.admin.get_spec("orders") == ORDERS
        t.upsert({"region": "eu", "id": 3})
        with pytest.raises(SchemaError):
            provider.changes("orders")
        assert list(provider.changes()) == []  # no change-fed table
        provider.admin.create_or_update(FED)
        t.upsert({"region": "eu", "id": 4})
        assert [e.key["id"] for e in provider.changes("orders")] == [2, 4]

    def test_events_follow_a_schema_change(self, provider: Any) -> None:
        t = fed_orders(provider)
        t.upsert({"region": "eu", "id": 1, "status": "a"})
        fields = [*FED.fields, Field("extra", "long")]
        provider.admin.create_or_update(TableSpec("orders", fields, FED.primary_key, ["note"], changes=True))
        t.upsert({"region": "eu", "id": 1, "extra": 7})
        before, after = [e for e in provider.changes() if e.op == "put"]
        assert before.row is not None and after.row is not None
        assert after.row["extra"] == 7 and after.row["status"] == "a" and before.row.get("extra") is None

    def test_a_dropped_table_has_no_feed(self, provider: Any) -> None:
        t = fed_orders(provider)
        t.upsert({"region": "eu", "id": 1})
        provider.admin.drop("orders")
        with pytest.raises(TableNotFoundError):
            provider.changes("orders")
        fed_orders(provider).upsert({"region": "eu", "id": 2})
        assert [e.key["id"] for e in provider.changes()] == [2]  # the old table's events are not the new one's

    def test_event_times_are_utc_commit_times(self, provider: Any) -> None:
        t = fed_orders(provider)
        before = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=5)
        t.upsert({"region": "eu", "id": 1})
        t.upsert({"region": "eu", "id": 2})
        first, second = provider.changes()
        after = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=5)
        assert first.time.utcoffset() == dt.timedelta(0)
        assert before <= first.time <= second.time <= after

    def test_compaction_forgets_old_events(self, provider: Any) -> None:
        t = fed_orders(provider)
        taken = []
        for i in range(5):
            t.upsert({"region": "eu", "id": i})
            taken.append(provider.revision())
        assert increasing(taken)
        provider.compact(taken[2])
        assert revisions(provider.changes(since=taken[2])) == taken[3:]
        with pytest.raises(RevisionCompactedError) as info:
            provider.changes(since=taken[1])
        assert info.value.oldest == taken[2] and str(taken[2]) in str(info.value)
        provider.compact(taken[0])  # below the compacted revision: nothing happens
        with pytest.raises(RevisionCompactedError):
            provider.changes()
        assert revisions(provider.changes(since=taken[2])) == taken[3:]
        with pytest.raises(InvalidFieldError):
            provider.compact(taken[4] + 1)  # beyond the current revision
        with pytest.raises(InvalidFieldError):
            provider.compact(-1)
        provider.compact(taken[4])
        assert list(provider.changes(since=taken[4])) == [] and provider.revision() == taken[4]
        t.upsert({"region": "eu", "id": 9})
        assert revisions(provider.changes(since=taken[4])) == [provider.revision()] and provider.revision() > taken[4]

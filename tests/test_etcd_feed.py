"""The change feed on etcd's own revisions (providers/etcd/feedlog.py), on the real
3-member cluster: a commit's revision is its etcd Txn's, change-fed commits of
different rows do not conflict, reads outlive etcd's own compaction, ``compact``
compacts etcd's history too, and retention forgets old pages."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

import spi
from providers.etcd import feedlog
from providers.etcd.client import EtcdClient
from providers.etcd.url import parse_url
from spi.codec import prefix_successor
from spi.errors import ConflictError, RevisionCompactedError
from spi.kv.layout import EVENTS, REVISION

FED = spi.TableSpec("t", [spi.Field("k", "long"), spi.Field("v", "string")], ["k"], changes=True)


def raw_client(p: Any) -> tuple[EtcdClient, bytes]:
    """A client of the provider's cluster and the provider's key prefix."""
    url = parse_url(p.url)
    return EtcdClient(url.endpoints, timeout=5.0), url.prefix.encode() + b"/"


def page_count(p: Any) -> int:
    client, prefix = raw_client(p)
    try:
        _, found, _ = client.range(prefix + EVENTS, prefix + prefix_successor(EVENTS), keys_only=True)
        return len(found)
    finally:
        client.close()


def compact_history(p: Any) -> None:
    """An operator's compaction of etcd's whole history (``etcdctl compact`` at the
    current revision)."""
    client, _ = raw_client(p)
    try:
        header, _, _ = client.range(b"\x00")
        client.call("/v3/kv/compaction", {"revision": header}, write=True)
    finally:
        client.close()


def brief(events: Any) -> list[tuple[int, str, Any]]:
    return [(e.revision, e.op, e.key["k"]) for e in events]


def test_a_commit_takes_its_etcd_revision(etcd_factory: Callable[..., Any]) -> None:
    p = etcd_factory()
    p.admin.create(FED)
    assert p.revision() == 0
    p.table("t").upsert({"k": 1, "v": "a"})
    client, prefix = raw_client(p)
    try:
        header, found, _ = client.range(prefix + REVISION)
        assert p.revision() == found[0][2] <= header  # the Txn's revision, etcd's own
        assert [e.revision for e in p.changes("t")] == [p.revision()]
    finally:
        client.close()


def test_change_fed_commits_of_different_rows_do_not_conflict(etcd_factory: Callable[..., Any]) -> None:
    """No revision counter that every change-fed commit reads: two transactions
    updating different rows, both open at once, both commit."""
    p = etcd_factory()
    p.admin.create(FED)
    p.table("t").load([{"k": 1, "v": "a"}, {"k": 2, "v": "b"}])
    both_open = threading.Barrier(2, timeout=10)
    errors: list[BaseException] = []

    def update(k: int) -> None:
        try:
            with p.transaction() as tx:
                tx.table("t").update((k,), {"v": "new"})
                both_open.wait()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=update, args=(k,)) for k in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert errors == []
    updates = [e for e in p.changes("t") if e.row is not None and e.row["v"] == "new"]
    assert sorted(e.key["k"] for e in updates) == [1, 2] and updates[0].revision < updates[1].revision


def test_reads_outlive_etcds_own_compaction(etcd_factory: Callable[..., Any]) -> None:
    """An operator's compaction of etcd's history: the feed is read from its kept pages."""
    p = etcd_factory()
    p.admin.create(FED)
    t = p.table("t")
    for k in range(5):
        t.upsert({"k": k, "v": "x"})
    t.delete((0,))
    expected = brief(p.changes("t", prev=True))
    compact_history(p)
    assert brief(p.changes("t")) == expected
    assert brief(p.changes("t", since=expected[2][0])) == expected[3:]
    assert brief(p.watch("t", since=0, timeout=0.3)) == expected
    t.upsert({"k": 9, "v": "after"})  # and new events come from the history again
    assert brief(p.changes("t", since=expected[-1][0])) == [(p.revision(), "put", 9)]


def test_kept_pages_stream_in_revision_order_when_commits_overlap(
    etcd_factory: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """After etcd's compaction the kept pages are listed by key (by the revision each
    committer saw first), a few keys a request, and streamed out in revision order: a
    transaction that began first but committed last comes last."""
    monkeypatch.setattr(feedlog, "_KEYS", 2)  # several listing requests, pages held across them
    p = etcd_factory()
    p.admin.create(FED)
    t = p.table("t")
    t.load([{"k": 1, "v": "a"}, {"k": 2, "v": "b"}])
    first_open, second_done = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def first() -> None:
        try:
            with p.transaction() as tx:
                tx.table("t").update((1,), {"v": "first"})
                first_open.set()
                assert second_done.wait(10)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=first)
    thread.start()
    assert first_open.wait(10)
    t.upsert({"k": 3, "v": "between"})
    with p.transaction() as tx:  # began after the first, commits before it
        tx.table("t").update((2,), {"v": "second"})
    second_done.set()
    thread.join(20)
    assert errors == []
    for k in range(4, 8):
        t.upsert({"k": k, "v": "x"})
    expected = brief(p.changes("t"))
    assert [k for _, _, k in expected[-6:-4]] == [2, 1]  # committed second, first
    assert [r for r, _, _ in expected] == sorted(r for r, _, _ in expected)
    client, prefix = raw_client(p)
    try:
        _, found, _ = client.range(prefix + EVENTS, prefix + prefix_successor(EVENTS), keys_only=True)
        by_key = [mod for _, _, mod in found]
        assert by_key != sorted(by_key)  # listed by key, the first transaction's page comes before the second's
    finally:
        client.close()
    compact_history(p)
    assert brief(p.changes("t")) == expected
    assert brief(p.changes("t", since=expected[3][0])) == expected[4:]


def test_compact_forgets_the_pages_and_compacts_etcds_history(etcd_factory: Callable[..., Any]) -> None:
    p = etcd_factory()
    p.admin.create(FED)
    t = p.table("t")
    for k in range(4):
        t.upsert({"k": k, "v": "x"})
    revisions = [e.revision for e in p.changes("t")]
    pages = page_count(p)
    p.compact(revisions[1])
    with pytest.raises(RevisionCompactedError) as info:
        list(p.changes("t", since=revisions[0]))
    assert info.value.oldest == revisions[1]
    assert [e.revision for e in p.changes("t", since=revisions[1])] == revisions[2:]
    assert page_count(p) == pages - 2
    client, _ = raw_client(p)
    try:
        with pytest.raises(ConflictError, match="compacted"):
            client.range(b"\x00", revision=revisions[1] - 1)
    finally:
        client.close()


def test_retention_forgets_old_pages_a_few_per_commit(etcd_factory: Callable[..., Any]) -> None:
    p = etcd_factory(changes_retention="1")
    p.admin.create(FED)
    t = p.table("t")
    for k in range(10):
        t.upsert({"k": k, "v": "old"})
    old = [e.revision for e in p.changes("t")]
    time.sleep(1.05)  # the feed's commit times are wall-clock times
    deadline = time.monotonic() + 10
    k = 100
    while page_count(p) > k - 100 + 1 and time.monotonic() < deadline:
        time.sleep(0.11)  # a retention check at most every retention / 10 seconds
        t.upsert({"k": k, "v": "new"})
        k += 1
    assert page_count(p) <= k - 100 + 1  # the young pages only (and the table's creation)
    with pytest.raises(RevisionCompactedError):
        list(p.changes("t", since=old[0]))
    assert all(e.row["v"] == "new" for e in p.changes("t", since=old[-1]))


def test_concurrent_inserts_into_one_table_do_not_conflict_and_count_exactly(
    etcd_factory: Callable[..., Any],
) -> None:
    """The row counter is kept by delta entries (spi/kv/counters.py): four threads
    inserting new rows into one change-fed table retry only the odd commit that folds
    the deltas (one in 32), and the count is exact."""
    p = etcd_factory()
    p.admin.create(FED)

    def insert(w: int) -> None:
        t = p.table("t")
        for i in range(40):
            t.insert({"k": w * 1000 + i, "v": "x"})

    threads = [threading.Thread(target=insert, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert p.stats()["conflict_retries"] <= 20  # a counter every insert rewrites: about one retry per insert
    assert p.table("t").count() == 160 == len(list(p.table("t").scan()))
    with p.transaction() as tx:  # inside a transaction too, with its own inserts and deletes
        tx.table("t").insert({"k": -1, "v": "y"})
        tx.table("t").delete((0,))
        assert tx.table("t").count() == 160
    assert p.table("t").count() == 160 and len([e for e in p.changes("t") if e.op == "put"]) == 161

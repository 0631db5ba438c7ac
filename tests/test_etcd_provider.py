"""etcd provider specifics: URLs, optimistic serializability of range reads, the
one-request limits and load pieces (a real 3-member cluster, tests/etcd_cluster.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

import spi
from providers.etcd.provider import load_piece
from providers.etcd.url import parse_url
from providers.etcd.watch import FeedWatch
from spi.errors import ConflictError, FrozenTableError, LimitExceededError, ProviderUnavailableError, UrlError

SPEC = spi.TableSpec("t", [spi.Field("k", "long"), spi.Field("v", "string")], ["k"], indexes=["v"])


def test_url_members_prefix_credentials_and_options() -> None:
    u = parse_url("etcd://me:p%40ss@10.0.0.1:2379,[::1]:2380/apps/kv?timeout=2.5&max_txn_ops=2048")
    assert u.endpoints == ("10.0.0.1:2379", "[::1]:2380") and u.prefix == "apps/kv"
    assert (u.user, u.password, u.timeout, u.max_txn_ops) == ("me", "p@ss", 2.5, 2048)
    assert "p@ss" not in u.masked and "***" in u.masked
    assert parse_url("etcd://h:1").prefix == "kvctl"


@pytest.mark.parametrize(
    "url",
    [
        "etcd://",
        "etcd://host",
        "etcd://h:1,/x",
        "etcd://h:99999",
        "etcd://h:1/a b",
        "etcd://h:1?nope=1",
        "etcd://:pw@h:1",
    ],
)
def test_bad_urls_are_one_line_url_errors(url: str) -> None:
    with pytest.raises(UrlError) as info:
        spi.connect(url)
    assert "\n" not in str(info.value)


def test_unreachable_members_fail_within_the_timeout_without_the_password() -> None:
    p = spi.connect("etcd://kv:s3cret@127.0.0.1:1,127.0.0.1:2/x?timeout=1")
    with pytest.raises(ProviderUnavailableError, match="no etcd member reachable") as info:
        p.admin.list_tables()
    assert "s3cret" not in str(info.value) and "s3cret" not in repr(p)


def test_a_range_read_conflicts_with_an_insert_into_it(etcd_factory: Callable[..., Any]) -> None:
    """Write skew on a range: two transactions count the same range and insert into
    it; serializable means the second commit fails."""
    p = etcd_factory()
    p.admin.create(SPEC)

    def first() -> None:  # on another thread: a thread opens one transaction at a time
        with p.transaction() as a:
            assert a.table("t").count() == 0
            a.table("t").upsert({"k": 1, "v": "a"})

    with pytest.raises(ConflictError), p.transaction() as b:
        assert b.table("t").count() == 0
        thread = threading.Thread(target=first)
        thread.start()
        thread.join()
        b.table("t").upsert({"k": 2, "v": "b"})
    assert [r["k"] for r in p.table("t").scan()] == [1]


def test_a_range_read_conflicts_with_a_delete_inside_it(etcd_factory: Callable[..., Any]) -> None:
    p = etcd_factory()
    p.admin.create(SPEC)
    t = p.table("t")
    t.load([{"k": i, "v": str(i)} for i in range(5)])
    with pytest.raises(ConflictError), p.transaction() as tx:
        total = sum(r["k"] for r in tx.table("t").scan(spi.Range((1,), (4,))))
        tx.table("t").upsert({"k": 100, "v": str(total)})
        t.delete((2,))  # inside the range the transaction scanned
    assert t.read((100,)) is None


def test_a_write_outside_what_was_read_does_not_conflict(etcd_factory: Callable[..., Any]) -> None:
    p = etcd_factory()
    p.admin.create(SPEC)
    t = p.table("t")
    t.load([{"k": i, "v": str(i)} for i in range(10)])
    with p.transaction() as tx:
        assert len(list(tx.table("t").scan(spi.Range((1,), (3,))))) == 2
        tx.table("t").upsert({"k": 1, "v": "x"})
        t.upsert({"k": 7, "v": "y"})  # outside the range the transaction read
    assert t.read((1,))["v"] == "x"


def test_a_transaction_beyond_one_request_writes_nothing(etcd_factory: Callable[..., Any]) -> None:
    p = etcd_factory()
    p.admin.create(SPEC)
    with pytest.raises(LimitExceededError, match="128"), p.transaction() as tx:
        for i in range(100):  # 200 keys: the rows and their index entries
            tx.table("t").upsert({"k": i, "v": "x"})
    p.admin.create(spi.TableSpec("plain", [spi.Field("k", "long"), spi.Field("v", "string")], ["k"]))
    with pytest.raises(LimitExceededError, match="MiB"), p.transaction() as tx:
        for i in range(100):  # about 1.6 MiB
            tx.table("plain").upsert({"k": i, "v": "y" * 17000})
    assert p.table("t").count() == 0 and p.table("plain").count() == 0


def test_loads_are_cut_into_pieces_one_transaction_holds(etcd_factory: Callable[..., Any]) -> None:
    assert load_piece(1024, 0, False) == 992 and load_piece(1024, 1, False) == 496
    assert load_piece(128, 1, False) == 48  # etcd's default --max-txn-ops
    p = etcd_factory()
    p.admin.create(SPEC)
    seen: list[int] = []
    n = p.table("t").load(({"k": i, "v": str(i % 7)} for i in range(1100)), progress=seen.append)
    assert n == 1100 and p.table("t").count() == 1100 and p.admin.verify("t") == []
    assert seen[0] == 48


def test_a_catalog_change_by_another_client_is_seen_by_remembered_layouts(etcd_factory: Callable[..., Any]) -> None:
    """Layouts remembered under a guessed generation (see providers/etcd/store.py)
    never outlive a catalog change made elsewhere."""
    p = etcd_factory()
    plain = spi.TableSpec("c", [spi.Field("k", "long"), spi.Field("n", "long")], ["k"])
    p.admin.create(plain)
    t = p.table("c")
    t.upsert({"k": 1, "n": 1})
    assert t.increment((1,), "n") == 2 and t.read((1,))["n"] == 2  # layout remembered
    other = spi.connect(p.url)
    other.admin.create_or_update(spi.TableSpec("c", [*plain.fields, spi.Field("s", "string")], ["k"]))
    assert t.upsert({"k": 1, "n": 5, "s": "new"}) > 0  # the new column, though the layout was remembered
    assert t.read((1,))["s"] == "new"
    other.admin.freeze("c")
    with pytest.raises(FrozenTableError):
        t.increment((1,), "n")
    other.admin.unfreeze("c")
    assert t.increment((1,), "n") == 6
    other.close()


def test_a_watch_is_woken_by_etcds_watch_and_polls_without_it(etcd_factory: Callable[..., Any]) -> None:
    """The store's change marker moves on etcd's watch event for a commit made by
    another client (no poll); a gateway without the watch endpoint leaves polling."""
    p = etcd_factory()
    p.admin.create(spi.TableSpec("w", [spi.Field("k", "long")], ["k"], changes=True))
    other = spi.connect(p.url)
    store = p._etcd
    store.change_marker()  # starts the stream
    deadline = time.monotonic() + 5
    while store.watch.member is None and time.monotonic() < deadline:
        time.sleep(0.01)
    marker = store.change_marker()
    write = threading.Timer(0.3, lambda: other.table("w").upsert({"k": 1}))
    write.start()
    store.wait_for_change(marker, 10)
    write.join()
    assert store.change_marker() != marker and store.watch.member is not None  # woken by the stream
    assert p.stats()["watch_reconnects"] == 0
    other.close()

    missing = FeedWatch(store.client, store.prefix, path="/v3/no-watch")
    missing.marker()
    deadline = time.monotonic() + 5
    while not missing.unavailable and time.monotonic() < deadline:
        time.sleep(0.01)
    assert missing.unavailable and missing.marker() is None
    started = time.monotonic()
    missing.wait(None, 10)  # a poll
    assert time.monotonic() - started < 1
    missing.close()

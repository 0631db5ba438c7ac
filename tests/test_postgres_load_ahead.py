"""PostgreSQL auto-commit loads two batches at a time (spi.load's pipeline, the
provider's ``_load_ahead``): a batch of new keys goes in on a second connection while
the one before it is written, and commits right after it. These pin what only a real
server shows: that batches do go two at a time (``batches_ahead``), that a reader
never sees a batch without every batch before it, and that expiry, a change feed and
the ``kvctl put --file`` path keep their answers."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

import spi
from spi.clock import ManualClock

SPEC = spi.TableSpec(
    "events",
    [spi.Field("batch", "int"), spi.Field("n", "long"), spi.Field("s", "string")],
    ["batch", "n"],
    indexes=["s"],
)


def rows(batches: int, size: int) -> list[dict[str, Any]]:
    """``batches`` batches of ``size`` new keys each."""
    return [{"batch": b, "n": n, "s": f"{b}-{n}"} for b in range(batches) for n in range(size)]


@pytest.fixture
def p(pg_factory: Callable[..., Any]) -> Any:
    provider = pg_factory()
    provider.admin.create(SPEC)
    return provider


def test_batches_of_new_keys_go_two_at_a_time(p: Any) -> None:
    t = p.table("events")
    assert t.load(rows(6, 50), batch_size=50) == 300
    assert p.stats()["batches_ahead"] == 5  # every batch but the first went alongside the one before
    assert t.count() == 300 and {r.version for r in t.scan()} == {1}
    t.load(rows(6, 50), batch_size=50)  # every key taken: one batch at a time, each an upsert
    assert p.stats()["batches_ahead"] == 5 and {r.version for r in t.scan()} == {2}


def test_a_change_fed_load_records_every_batch_in_commit_order(pg_factory: Callable[..., Any]) -> None:
    p = pg_factory()
    p.admin.create(SPEC.with_changes(True))
    since = p.revision()
    t = p.table("events")
    assert t.load(rows(4, 25), batch_size=25) == 100
    assert p.stats()["batches_ahead"] == 3 and p.stats()["conflict_retries"] == 0
    events = list(p.changes("events", since=since))
    assert [(e.key["batch"], e.key["n"]) for e in events] == [(r["batch"], r["n"]) for r in rows(4, 25)]
    assert all(e.op == "put" and e.created and e.version == 1 and e.row == dict(t.read(e.key)) for e in events)
    revisions = [e.revision for e in events]
    assert revisions == sorted(revisions) and len(set(revisions)) == 4  # one revision per batch, in order
    assert [e.revision for e in events if e.key["n"] == 0] == sorted(set(revisions))


def test_a_reader_never_sees_a_batch_before_the_ones_before_it(p: Any) -> None:
    seen: list[set[int]] = []
    reading, done = threading.Event(), threading.Event()

    def read() -> None:
        reader = p.table("events")
        while True:  # a last scan after the load: every batch
            finished = done.is_set()
            seen.append({r["batch"] for r in reader.scan(columns=["batch", "n"])})
            reading.set()
            if finished:
                return

    watcher = threading.Thread(target=read)
    watcher.start()
    reading.wait()
    try:
        p.table("events").load(rows(40, 100), batch_size=100)
    finally:
        done.set()
        watcher.join()
    assert p.stats()["batches_ahead"] == 39
    assert seen[-1] == set(range(40))
    assert all(batches == set(range(len(batches))) for batches in seen), [
        sorted(b) for b in seen if b != set(range(len(b)))
    ]


def test_batches_written_ahead_expire_with_the_rest(p: Any) -> None:
    p.clock = clock = ManualClock()
    t = p.table("events")
    assert t.load(rows(3, 20), batch_size=20, ttl=60) == 60
    assert p.stats()["batches_ahead"] == 2
    assert len({r.expires_at for r in t.scan()}) == 1  # the load's start plus 60 s, every batch alike
    clock.advance(61)
    assert t.count() == 0 and t.read((1, 1)) is None


def test_a_failed_write_rolls_back_the_batch_written_ahead(p: Any) -> None:
    t = p.table("events")
    t.upsert({"batch": 1, "n": 7, "s": "taken"})
    with pytest.raises(spi.RowExistsError) as e:
        t.load(rows(4, 10), mode="insert", batch_size=10)
    assert e.value.row_index == 17 and e.value.rows_written == 10
    assert sorted({r["batch"] for r in t.scan()}) == [0, 1] and t.count() == 11  # batch 0 and the taken row


def test_a_batch_written_ahead_gives_way_to_a_session_waiting_for_its_keys(p: Any, pg_server: Any) -> None:
    """Another session holds a key of the first batch and then asks for one of the batch
    written ahead: the first batch waits for that session, the session for the batch
    written ahead, and that batch for the first one's commit, in this process, where
    the server cannot see it. The batch written ahead must give way (roll back), not
    hang the three of them."""
    import psycopg

    table = f'"{p._db.schema}"."events"'
    insert = f"INSERT INTO {table} (batch, n, s, kv_version) VALUES (%s, %s, 'other', 1)"
    other = psycopg.connect(pg_server.dsn)
    probe = psycopg.connect(pg_server.dsn, autocommit=True)
    try:
        other.execute("SET lock_timeout = '20s'")  # a hang fails the test instead of stopping it
        other.execute(insert, (0, 0))  # a key of the first batch, not committed
        loaded: list[int] = []
        loader = threading.Thread(target=lambda: loaded.append(p.table("events").load(rows(2, 50), batch_size=50)))
        loader.start()
        # The batch written ahead is in: its transaction has written and waits for its turn
        # (the first batch's is active: it waits for ours).
        waiting_ahead = (
            "SELECT count(*) FROM pg_stat_activity WHERE state = 'idle in transaction'"
            " AND backend_xid IS NOT NULL AND pid <> %s"
        )
        while not probe.execute(waiting_ahead, (other.info.backend_pid,)).fetchone()[0]:  # type: ignore[index]
            assert loader.is_alive(), "the load ended before its second batch waited for its turn"
        other.execute(insert, (1, 0))  # a key of the batch written ahead: it must give way
        other.commit()
        loader.join(60)
        assert loaded == [100]
    finally:
        other.close()
        probe.close()
    t = p.table("events")
    assert t.count() == 100 and p.stats()["batches_ahead"] == 0
    assert {(r["batch"], r["n"]): r.version for r in t.scan() if r.version != 1} == {(0, 0): 2, (1, 0): 2}

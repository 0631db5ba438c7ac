"""PostgreSQL change feeds beyond the conformance kit: bulk loads over existing rows,
the feed's tables, a dropped and re-created table, a key-filtered watcher of a
dropped table, writers racing for revisions."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

import spi
from spi.errors import TableNotFoundError

pytestmark = pytest.mark.postgres

SPEC = spi.TableSpec(
    "t",
    [spi.Field("id", "long"), spi.Field("g", "long"), spi.Field("f", "float"), spi.Field("ts", "timestamp")],
    ["id"],
    ["g"],
    changes=True,
)


def _feed_matches_table(p: Any) -> None:
    """The last put of each key in the feed is the row the table holds."""
    last: dict[int, Any] = {}
    for e in p.changes("t"):
        last[e.key["id"]] = None if e.row is None else (e.row, e.version)
    rows = {r["id"]: (dict(r), r.version) for r in p.table("t").scan()}
    assert {k: v for k, v in last.items() if v is not None} == rows


def test_bulk_loads_record_every_row_as_written(pg_factory: Callable[..., Any]) -> None:
    p = pg_factory()
    p.admin.create(SPEC)
    t = p.table("t")
    assert t.load(({"id": i, "g": i % 7, "f": 0.1} for i in range(2500)), batch_size=1000) == 2500  # COPY path
    assert [e.revision for e in p.changes("t")][::1000] == [1, 2, 3]
    # Over existing rows: the temporary table path; a partial upsert keeps other columns.
    assert t.load(({"id": i, "g": -1} for i in range(2000, 3000)), mode="upsert", batch_size=600) == 1000
    assert t.load([{"id": 5, "g": 1}, {"id": 6}], mode="replace") == 2
    events = list(p.changes("t", since=3))
    assert [e.key["id"] for e in events] == [*range(2000, 3000), 5, 6]  # input order
    assert events[0].row == {"id": 2000, "g": -1, "f": pytest.approx(0.1), "ts": None} and events[0].version == 2
    assert events[499].version == 2 and events[500].version == 1  # 2500.. were new
    assert events[-1].row == {"id": 6, "g": None, "f": None, "ts": None} and events[-1].version == 2
    _feed_matches_table(p)


def test_the_feed_lives_in_two_tables_of_the_schema(pg_factory: Callable[..., Any], pg_server: Any) -> None:
    p = pg_factory()
    assert p.revision() == 0  # no feed tables yet
    p.admin.create(spi.TableSpec("plain", [spi.Field("id", "long")], ["id"]))
    p.table("plain").upsert({"id": 1})
    p.admin.create_or_update(spi.TableSpec("plain", [spi.Field("id", "long")], ["id"], changes=True))
    p.table("plain").upsert({"id": 2})
    schema = p.schema
    with psycopg.connect(pg_server.dsn) as conn:
        counter = conn.execute(f'SELECT revision, compacted FROM "{schema}".kv_revision').fetchall()
        stored = conn.execute(f'SELECT revision, seq, table_name, op, version FROM "{schema}".kv_changes').fetchall()
    assert counter == [(1, 0)] and stored == [(1, 1, "plain", 5, 1)]  # OP_SET: with created, expiry, prev


def test_a_dropped_table_loses_its_events_and_ends_keyed_watchers(pg_factory: Callable[..., Any]) -> None:
    p = pg_factory()
    p.admin.create(SPEC)
    p.table("t").upsert({"id": 1})
    watcher = p.watch("t", key=(1,), timeout=20, progress=0.05)
    ended: list[BaseException] = []
    watching = threading.Event()

    def watch() -> None:
        try:
            for item in watcher:
                if isinstance(item, spi.Progress):
                    watching.set()  # caught up: it waits for events now
        except BaseException as exc:
            ended.append(exc)

    thread = threading.Thread(target=watch)
    thread.start()
    assert watching.wait(10)
    p.admin.drop("t")
    p.admin.create(SPEC)  # at once: the watcher may first see the new table
    thread.join(10)
    assert len(ended) == 1 and isinstance(ended[0], TableNotFoundError)
    p.table("t").upsert({"id": 2})
    assert [e.key["id"] for e in p.changes("t")] == [2]  # the old table's events are gone


def test_concurrent_writers_take_revisions_in_commit_order(pg_factory: Callable[..., Any]) -> None:
    p = pg_factory()
    p.admin.create(SPEC)
    errors: list[BaseException] = []

    def write(base: int) -> None:
        try:
            t = p.table("t")
            for _ in range(25):
                t.increment((base,), "g", 1)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    events = list(p.changes("t"))
    assert [e.revision for e in events] == list(range(1, 101))  # one each, no gap, no repeat
    for n in range(4):
        assert [e.row["g"] for e in events if e.key["id"] == n and e.row] == list(range(1, 26))
    _feed_matches_table(p)


def test_watches_in_short_calls_reuse_one_listening_connection(pg_factory: Callable[..., Any], pg_server: Any) -> None:
    """The dashboard's live view watches in 0.5 s calls: they share one LISTEN
    connection instead of opening one each."""
    p = pg_factory()
    p.admin.create(spi.TableSpec("w", [("k", "long")], ["k"], changes=True))
    p.table("w").upsert({"k": 1})

    def sessions() -> int:
        with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
            found = conn.execute("SELECT sessions FROM pg_stat_database WHERE datname = current_database()").fetchone()
        assert found is not None
        return int(found[0])

    list(p.watch("w", timeout=0.01))  # the first watch opens the listener
    before = sessions()
    for _ in range(10):
        list(p.watch("w", timeout=0.01))
    p.table("w").upsert({"k": 2})
    assert [e.key for e in p.watch("w", since=1, timeout=0.2)] == [{"k": 2}]
    assert sessions() - before <= 2  # the two sessions() calls themselves


def test_a_loads_events_are_stored_as_runs_and_read_one_by_one(pg_factory: Callable[..., Any], pg_server: Any) -> None:
    """A batch copied straight in is stored as runs of puts (a few rows, not one per
    event); reading splits them: limits and chunks cut inside a run, key and prefix
    filters look inside, a watch resumes in the middle of one."""
    from providers.postgres.feed import RUN

    p = pg_factory()
    p.admin.create(SPEC)
    rows = [{"id": i, "g": i % 7, "f": 0.5, "ts": None} for i in range(2 * RUN + 500)]
    p.table("t").load(rows, batch_size=len(rows))
    with psycopg.connect(pg_server.dsn) as conn:
        stored = conn.execute(f'SELECT seq, op FROM "{p.schema}".kv_changes ORDER BY seq').fetchall()
    assert stored == [(RUN, 6), (2 * RUN, 6), (2 * RUN + 500, 6)]  # OP_SETS
    events = list(p.changes("t"))
    assert [e.key["id"] for e in events] == list(range(len(rows)))
    assert all(e.op == "put" and e.revision == 1 and e.version == 1 for e in events)
    assert events[1234].row == rows[1234]
    assert [e.key["id"] for e in p.changes("t", limit=RUN + 7)] == list(range(RUN + 7))
    assert [e.row for e in p.changes("t", key=(RUN + 3,))] == [rows[RUN + 3]]
    p.table("t").upsert({"id": 5, "g": 99})
    assert [(e.revision, e.row["g"]) for e in p.changes("t", key=(5,))] == [(1, 5), (2, 99)]
    watched = []
    for change in p.watch("t", since=0, timeout=10):
        watched.append(change.key["id"])
        if len(watched) == len(rows) + 1:
            break
    assert watched == [*range(len(rows)), 5]
    _feed_matches_table(p)


def test_a_prefix_filter_looks_inside_runs(pg_factory: Callable[..., Any]) -> None:
    p = pg_factory()
    spec = spi.TableSpec("r", [spi.Field("region", "string"), spi.Field("id", "long")], ["region", "id"], changes=True)
    p.admin.create(spec)
    p.table("r").load([{"region": region, "id": i} for region in ("eu", "eu-west", "us") for i in range(5)])
    assert [(e.key["region"], e.key["id"]) for e in p.changes("r", prefix=("eu",))] == [("eu", i) for i in range(5)]
    assert [e.key["id"] for e in p.changes("r", key=("us", 3))] == [3]

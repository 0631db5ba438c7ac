"""Auto-commit writes of the ordered-store engine: each call one store session and one
atomic commit (spi/kv/autocommit.py), on the memory store and on real RocksDB files."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_support import until

import spi
from providers.memory.provider import MemoryProvider, MemoryStore, _MemorySession
from providers.rocksdb.handle import LOCK_NAME, WAIT_NAME
from spi.clock import ManualClock
from spi.errors import RowExistsError, RowNotFoundError, VersionMismatchError
from spi.kv import StoreSession
from spi.kv.layout import EVENTS, REVISION

ROOT = Path(__file__).resolve().parents[1]
FIELDS = [spi.Field("k", "string"), spi.Field("n", "long"), spi.Field("tag", "string")]
FED = spi.TableSpec("fed", FIELDS, ["k"], indexes=["tag"], changes=True)
PLAIN = spi.TableSpec("plain", FIELDS, ["k"])


class _RecordingSession(_MemorySession):
    """A memory session that remembers every batch it commits."""

    def __init__(self, store: RecordingStore) -> None:
        super().__init__(store)
        self._recorder = store

    def commit(self, range_deletes: list[tuple[bytes, bytes]], keys: list[bytes], values: list[bytes | None]) -> None:
        self._recorder.batches.append(list(keys))
        super().commit(range_deletes, keys, values)


class RecordingStore(MemoryStore):
    """The memory store, recording the keys of each commit."""

    def __init__(self) -> None:
        super().__init__(busy_timeout=5.0)
        self.batches: list[list[bytes]] = []

    def session(self, read_only: bool = False) -> StoreSession:
        self.lock.acquire(5.0)
        return _RecordingSession(self)


@pytest.fixture
def recorded() -> Iterator[tuple[MemoryProvider, RecordingStore]]:
    store = RecordingStore()
    p = MemoryProvider("memory://", store)
    p.admin.create(FED)
    yield p, store
    p.close()


WRITES: list[tuple[str, Callable[[Any], object]]] = [
    ("upsert", lambda t: t.upsert({"k": "a", "n": 5, "tag": "x"})),
    ("insert", lambda t: t.insert({"k": "b", "n": 1}, ttl=60)),
    ("replace", lambda t: t.replace({"k": "a", "n": 6, "tag": "y"}, version=1)),
    ("update", lambda t: t.update(("c",), {"n": 2}, default={"tag": "z"})),
    ("increment", lambda t: t.increment(("a",), "n", 3)),
    ("compare_and_swap", lambda t: t.compare_and_swap(("a",), "tag", "y", "w")),
    ("delete", lambda t: t.delete(("b",), version=1)),
]


def test_each_write_to_a_fed_table_commits_row_event_and_revision_once(
    recorded: tuple[MemoryProvider, RecordingStore],
) -> None:
    p, store = recorded
    t = p.table("fed")
    for i, (name, write) in enumerate(WRITES, start=1):
        store.batches.clear()
        write(t)
        assert len(store.batches) == 1, name  # one session, one commit
        keys = store.batches[0]
        assert REVISION in keys, name
        assert any(k.startswith(EVENTS) for k in keys), name
        assert any(k.startswith(b"\x01") for k in keys), name  # the row (or its removal) too
        assert p.revision() == i, name
    ops = [c.op for c in p.changes("fed")]
    assert ops == ["put", "put", "put", "put", "put", "put", "delete"]
    row = t.read(("a",))
    assert row is not None and (row["n"], row["tag"], row.version) == (9, "w", 4)
    assert t.count(where=spi.col("tag") == "w") == 1  # the index entry moved with the row
    assert p.admin.verify("fed") == []


def test_a_refused_write_commits_nothing_and_ends_its_session(
    recorded: tuple[MemoryProvider, RecordingStore],
) -> None:
    p, store = recorded
    t = p.table("fed")
    t.upsert({"k": "a", "n": 1})
    store.batches.clear()
    with pytest.raises(RowExistsError):
        t.insert({"k": "a"})
    with pytest.raises(VersionMismatchError):
        t.update(("a",), {"n": 2}, version=7)
    with pytest.raises(RowNotFoundError):
        t.update(("zz",), {"n": 2})
    assert t.compare_and_swap(("a",), "n", 99, 3) is False
    assert t.delete(("zz",)) is False
    assert all(REVISION not in keys for keys in store.batches)  # no event, no revision taken
    assert p.revision() == 1
    with p.transaction() as tx:  # the sessions were released: this thread may open another
        assert tx.table("fed").read(("a",))["n"] == 1  # type: ignore[index]


def _locked(path: Path) -> bool:
    """True while some open file description holds the database's kvctl lock."""
    fd = os.open(path / LOCK_NAME, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def test_rocksdb_closes_again_when_idle_after_auto_commit_writes(tmp_path: Path) -> None:
    with spi.connect(f"rocksdb://{tmp_path}/db") as p:
        p.admin.create(FED)
        t = p.table("fed")
        t.upsert({"k": "a", "n": 1})
        t.increment(("a",), "n")
        assert _locked(tmp_path / "db")  # open while busy (and a moment after)
        assert until(lambda: not _locked(tmp_path / "db"), 10)
        assert t.read(("a",))["n"] == 2  # type: ignore[index]
        assert [c.op for c in p.changes("fed")] == ["put", "put"]


def test_rocksdb_auto_commit_increment_waits_for_another_process_transaction(tmp_path: Path) -> None:
    """The increment reads only after the other process's read-modify-write committed,
    so neither update is lost (serializable), and both events are recorded in order."""
    url = f"rocksdb://{tmp_path}/db"
    with spi.connect(url) as p:
        p.admin.create(FED)
        p.table("fed").upsert({"k": "a", "n": 1})
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
                import fcntl, os, time, spi
                p = spi.connect({url!r})
                with p.transaction() as tx:
                    t = tx.table("fed")
                    n = t.read(("a",))["n"]
                    print("holding", flush=True)
                    # Hold until the other process waits for the path (it holds {WAIT_NAME}
                    # shared meanwhile), at most 3 s (its busy timeout is 5).
                    fd = os.open(os.path.join({str(tmp_path / "db")!r}, {WAIT_NAME!r}), os.O_RDWR | os.O_CREAT)
                    deadline = time.monotonic() + 3
                    while time.monotonic() < deadline:
                        try:
                            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        except BlockingIOError:
                            break
                        fcntl.flock(fd, fcntl.LOCK_UN)
                        time.sleep(0.005)
                    os.close(fd)
                    t.upsert({{"k": "a", "n": n + 100}})
                p.close()
            """),
        ],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line.strip() == "holding", child.stderr.read() if child.stderr else ""
        with spi.connect(url) as p:
            assert p.table("fed").increment(("a",), "n", 1) == 102
            assert [c.row["n"] for c in p.changes("fed") if c.row is not None] == [1, 101, 102]
    finally:
        assert child.wait(timeout=30) == 0, child.stderr.read() if child.stderr else ""


def test_rocksdb_auto_commit_writes_keep_versions_expiry_and_indexes(tmp_path: Path) -> None:
    with spi.connect(f"rocksdb://{tmp_path}/db") as p:
        p.admin.create(FED)
        p.admin.create(PLAIN)
        for name in ("fed", "plain"):
            t = p.table(name)
            for _, write in WRITES:
                write(t)
            assert t.read(("b",)) is None
            made = t.read(("c",))
            assert made is not None and made["tag"] == "z"
            assert t.count() == 2
            assert p.admin.verify(name) == []
        p.clock = clock = ManualClock()  # expiry is decided on it
        assert p.table("plain").update(("a",), {"n": 0}, ttl=0.05) == 5
        clock.advance(0.1)  # the row's TTL runs out
        assert p.table("plain").read(("a",)) is None
        assert p.table("plain").upsert({"k": "a"}) == 1  # an expired row counts as absent
        assert p.admin.verify("plain") == []


def test_rocksdb_point_writes_wait_for_a_transaction_in_another_thread(tmp_path: Path) -> None:
    """An upsert or increment of an existing row of a plain table runs as one get and
    one put while the store is idle; while another thread's transaction holds the
    store it waits for that commit (serializable: no update lost), and either way the
    row, its version, the row count and the store stay consistent."""
    with spi.connect(f"rocksdb://{tmp_path}/db") as p:
        p.admin.create(PLAIN)
        t = p.table("plain")
        t.upsert({"k": "a", "n": 1})
        assert t.increment(("a",), "n", 1) == 2  # idle: the point path
        assert t.upsert({"k": "a", "tag": "t"}) == 3
        holding, waits = threading.Event(), p.stats()["lock_waits"]

        def hold() -> None:
            with p.transaction() as tx:
                held = tx.table("plain")
                n = held.read(("a",))["n"]  # type: ignore[index]
                holding.set()
                until(lambda: p.stats()["lock_waits"] > waits, 10)  # the increment waits for us now
                held.upsert({"k": "a", "n": n + 100})

        holder = threading.Thread(target=hold)
        holder.start()
        assert holding.wait(10)
        assert t.increment(("a",), "n", 1) == 103
        holder.join()
        assert p.stats()["lock_waits"] == waits + 1  # it did wait for the transaction
        assert t.upsert({"k": "a", "tag": "u"}) == 6
        row = t.read(("a",))
        assert row is not None and (row["n"], row["tag"], row.version, row.expires_at) == (103, "u", 6, None)
        assert t.count() == 1
        assert p.admin.verify("plain") == []
        # New rows take the point path too: version 1, counted, the other columns null.
        assert t.upsert({"k": "b", "tag": "new"}) == 1
        assert t.increment(("c",), "n", 5) == 5
        assert [(r.to_dict(), r.version) for r in t.scan()] == [
            ({"k": "a", "n": 103, "tag": "u"}, 6),
            ({"k": "b", "n": None, "tag": "new"}, 1),
            ({"k": "c", "n": 5, "tag": None}, 1),
        ]
        assert t.count() == 3
        assert p.admin.verify("plain") == []
        with pytest.raises(spi.InvalidFieldError, match="must be an integer"):
            t.increment(("a",), "n", 1.5)
        assert t.read(("a",)).version == 6  # type: ignore[union-attr]


@pytest.mark.parametrize("columns", [3, 20])  # a fixarray and an array 16 head
@pytest.mark.parametrize("version", [1, 127, 128, 255, 256, 65_535, 65_536, 2**32 - 1, 2**32, 2**63])
def test_stored_version_reads_the_head_of_any_row_width_and_version(columns: int, version: int) -> None:
    from spi.kv.layout import Layout

    fields = [spi.Field("k", "long"), *(spi.Field(f"c{i}", "string") for i in range(columns - 1))]
    layout = Layout(spi.TableSpec("wide", fields, ["k"]), [f.name for f in fields], 7)
    values = {f.name: (1 if f.name == "k" else "x") for f in fields}
    assert layout.stored_version(layout.encode_row(values, version)) == version
    assert layout.decode_row(layout.encode_row(values, version)).version == version
    assert layout.stored_version(layout.encode_row(values, version, 123)) is None  # an expiring row: decoded


def test_point_writes_of_full_and_partial_rows_and_increments_agree_with_the_memory_provider(tmp_path: Path) -> None:
    """The idle fast paths (a full row read for its version only, an increment changed
    in the stored row) give the answers the memory provider's general path gives."""
    import datetime as dt

    spec = spi.TableSpec(
        "p",
        [
            spi.Field("k", "long"),
            spi.Field("n", "long"),
            spi.Field("f", "float"),
            spi.Field("d", "double"),
            spi.Field("at", "timestamp"),
            spi.Field("s", "string"),
        ],
        ["k"],
    )
    when = dt.datetime(1969, 7, 20, 20, 17, 40, 123456, tzinfo=dt.UTC)
    with spi.connect(f"rocksdb://{tmp_path / 'db'}") as rocks, spi.connect("memory://") as memory:
        answers: list[list[Any]] = [[], []]
        for p, out in zip((rocks, memory), answers, strict=True):
            p.admin.create(spec)
            t = p.table("p")
            out.append(t.upsert({"k": 1, "n": 5, "f": 0.1, "d": 0.1, "at": when, "s": "a"}))
            out.append(t.increment((1,), "n", 2**40))
            out.append(t.increment((1,), "d", 0.2))
            out.append(t.increment((2,), "n", -3))  # a new row
            out.append(t.upsert({"k": 1, "s": "b"}))  # a partial row: merged
            out.append(t.upsert({"k": 2, "n": None, "f": None, "d": None, "at": None, "s": None}))  # every column
            out.append(t.increment((2,), "n", 1))  # a null counts as 0
            out.append([(dict(r), r.version) for r in t.scan()])
            out.append(t.count())
        assert answers[0] == answers[1]
        with pytest.raises(spi.InvalidFieldError):
            rocks.table("p").increment((1,), "n", 2**63)  # out of range: nothing written
        assert rocks.table("p").read((1,)) == memory.table("p").read((1,))


def test_increment_of_a_column_added_after_the_row_was_stored(tmp_path: Path) -> None:
    """A row stored before ``alter --add-column`` is shorter than the layout: the
    in-place increment reads the new column as null, as the general path does."""
    with spi.connect(f"rocksdb://{tmp_path / 'db'}") as p:
        p.admin.create(PLAIN)
        t = p.table("plain")
        t.upsert({"k": "a", "n": 1, "tag": "x"})
        p.admin.create_or_update(spi.TableSpec("plain", [*FIELDS, spi.Field("added", "long")], ["k"]))
        t = p.table("plain")
        assert t.increment(("a",), "added", 5) == 5
        assert dict(t.read(("a",)) or {}) == {"k": "a", "n": 1, "tag": "x", "added": 5}

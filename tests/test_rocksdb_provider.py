"""RocksDB specifics: durability, drop, verify on real corruption, URLs (isolation,
rollback and read-modify-write are the kit's, spi/testing/conformance/isolation.py)."""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import Any

import pytest

import spi
from providers.rocksdb.handle import handle_for
from spi.codec import encode_key, encode_nullable
from spi.errors import KvError, ProviderUnavailableError, UrlError
from spi.kv.layout import DATA, EXPIRY, INDEX, ROWS
from spi.types import FieldType

ACCOUNTS = spi.TableSpec(
    "acct", [spi.Field("k", "long"), spi.Field("bal", "long"), spi.Field("tag", "string")], ["k"], indexes=["tag"]
)


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"rocksdb://{tmp_path}/db"


def _raw(path: str) -> Any:
    import rocksdict

    handle_for(path).close_if_idle()
    return rocksdict.Rdict(path, rocksdict.Options(raw_mode=True))


def test_data_survives_reopen_and_nothing_is_held_after_close(url: str, tmp_path: Path) -> None:
    with spi.connect(url) as p:
        p.admin.create(ACCOUNTS)
        p.table("acct").load({"k": i, "bal": i} for i in range(100))
    db = _raw(str(tmp_path / "db"))  # opens: the provider released RocksDB's LOCK
    db.close()
    with spi.connect(url + "?sync=true") as p:
        assert p.table("acct").count() == 100
        assert p.table("acct").read((42,))["bal"] == 42


def test_a_reopened_database_shares_the_process_block_cache(url: str, tmp_path: Path) -> None:
    from providers.rocksdb.handle import BLOCK_CACHE_BYTES

    path = str(tmp_path / "db")
    with spi.connect(url) as p:
        p.admin.create(ACCOUNTS)
    for _ in range(2):  # created, then reopened from its OPTIONS file
        handle_for(path).close_if_idle()
        db = handle_for(path).acquire(5)
        try:
            assert int(db.property_value("rocksdb.block-cache-capacity")) == BLOCK_CACHE_BYTES
        finally:
            handle_for(path).release()


def test_scan_left_open_does_not_keep_the_path(url: str, tmp_path: Path) -> None:
    p = spi.connect(url)
    p.admin.create(ACCOUNTS)
    p.table("acct").load({"k": i, "bal": i} for i in range(100))
    with p.transaction() as tx:
        rows = tx.table("acct").scan(limit=50)
        next(rows)
    p.close()
    db = _raw(str(tmp_path / "db"))
    db.close()
    with pytest.raises(KvError, match="ended"):
        next(rows)


def test_drop_removes_every_key(url: str, tmp_path: Path) -> None:
    with spi.connect(url) as p:
        p.admin.create(ACCOUNTS)
        p.admin.create(spi.TableSpec("keep", [spi.Field("k", "long")], ["k"]))
        p.table("acct").load({"k": i, "bal": i, "tag": "x"} for i in range(500))
        p.table("keep").upsert({"k": 1})
        p.admin.drop("acct")
        assert p.admin.list_tables() == ["keep"]
    db = _raw(str(tmp_path / "db"))
    try:
        data_keys = [k for k in db.keys(from_key=DATA) if k.startswith(DATA)]
    finally:
        db.close()
    assert len(data_keys) == 2  # only the row of "keep" and its row counter


def test_a_range_delete_leaves_no_index_or_expiry_entry_of_its_rows(url: str, tmp_path: Path) -> None:
    """``delete_range`` deletes rows by the keys it read them under: each one's index
    and expiry entries go with it, inside a transaction over its own writes too."""
    with spi.connect(url) as p:
        p.admin.create(ACCOUNTS)
        t = p.table("acct")
        t.load(({"k": i, "bal": i, "tag": f"t{i % 7}"} for i in range(3000)), ttl=3600)
        assert t.delete_range(where=spi.col("bal") >= 1500) == 1500

        def more(tx: Any) -> int:
            tx.table("acct").upsert({"k": 5000, "bal": 5000, "tag": "new"}, ttl=60)
            return int(tx.table("acct").delete_range(where=spi.col("bal") > 1000))

        assert p.run(more) == 500
        assert t.count() == 1001 and t.count(where=spi.col("tag") == "t3") == 143
    db = _raw(str(tmp_path / "db"))
    try:
        kinds: dict[bytes, int] = {}
        for k in db.keys(from_key=DATA):
            if k.startswith(DATA):
                kinds[k[5:6]] = kinds.get(k[5:6], 0) + 1
    finally:
        db.close()
    assert kinds[ROWS] == kinds[INDEX] == kinds[EXPIRY] == 1001  # one entry of each kind per row left


def test_verify_reports_real_corruption(url: str, tmp_path: Path) -> None:
    with spi.connect(url) as p:
        p.admin.create(ACCOUNTS)
        p.table("acct").load({"k": i, "bal": i, "tag": f"t{i}"} for i in range(10))
        assert p.admin.verify("acct") == []
    db = _raw(str(tmp_path / "db"))
    try:
        index_keys = [k for k in db.keys(from_key=DATA) if k[5:6] == b"\x01"]
        row_keys = [k for k in db.keys(from_key=DATA) if k[5:6] == b"\x00"]
        prefix = index_keys[0][:8]  # DATA, table id, INDEX, column
        db.delete(index_keys[0])  # row 0 loses its index entry
        db.put(prefix + encode_nullable(FieldType.STRING, "t1") + encode_key((FieldType.LONG,), (999,)), b"")
        db.put(prefix + encode_nullable(FieldType.STRING, "zz") + encode_key((FieldType.LONG,), (3,)), b"")
        db.put(row_keys[2], b"\xc1 not msgpack")  # an undecodable row
        db.delete(row_keys[5])  # a row gone behind the counter's back (its index entry stays)
        ttl_row = row_keys[6]
    finally:
        db.close()
    with spi.connect(url) as p:
        p.table("acct").upsert({"k": 6, "bal": 6, "tag": "t6"}, ttl=3600)
    db = _raw(str(tmp_path / "db"))
    try:
        expiry = [k for k in db.keys(from_key=DATA) if k[5:6] == b"\x02"]
        assert len(expiry) == 1 and expiry[0].endswith(ttl_row[6:])
        db.delete(expiry[0])  # a row that expires without its expiry entry
    finally:
        db.close()
    with spi.connect(url) as p:
        problems = p.admin.verify("acct")
        assert p.table("acct").count() == 10  # the counter, as damaged
    text = "\n".join(problems)
    assert "row k=0: index 'tag' has no entry" in text
    assert "points to a missing row" in text
    assert "value zz does not match its row" in text
    assert "cannot decode" in text
    assert "the row counter says 10 rows, the table holds 9" in text
    assert "row k=6: its expiry has no entry" in text


@pytest.mark.parametrize(
    "bad",
    [
        "rocksdb:",
        "rocksdb:///",
        "rocksdb://host/path",
        "rocksdb:///tmp/x?nope=1",
        "rocksdb:///tmp/x?busy_timeout=soon",
        "rocksdb:///tmp/x?busy_timeout=-1",
        "rocksdb:///tmp/x?sync=maybe",
        "rocksdb:///tmp/x?busy_timeout",
    ],
)
def test_bad_urls(bad: str) -> None:
    with pytest.raises(UrlError):
        spi.connect(bad)


def test_relative_path_and_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with spi.connect("rocksdb:rel/db?busy_timeout=1&sync=true") as p:
        p.admin.create(ACCOUNTS)
    assert (tmp_path / "rel" / "db" / "CURRENT").exists()


def test_path_that_is_not_a_database(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(ProviderUnavailableError, match="not a directory"):
        spi.connect(f"rocksdb://{tmp_path}/file")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "notes.txt").write_text("x")
    p = spi.connect(f"rocksdb://{tmp_path}/dir")
    with pytest.raises(ProviderUnavailableError, match="not a RocksDB database"):
        p.admin.list_tables()
    p.close()
    assert sorted(x.name for x in (tmp_path / "dir").iterdir()) == ["notes.txt"]


def test_create_false_opens_only_an_existing_database(tmp_path: Path) -> None:
    path = tmp_path / "db"
    with pytest.raises(UrlError, match=re.escape(f"rocksdb database {path} does not exist")) as info:
        spi.connect(f"rocksdb://{path}", create=False)
    assert "nothing was created" in str(info.value) and "\n" not in str(info.value)
    assert not path.exists()
    path.mkdir()
    (path / "notes.txt").write_text("not a database")
    with pytest.raises(UrlError, match=re.escape(f"rocksdb database {path} is not a RocksDB database")):
        spi.connect(f"rocksdb://{path}", create=False)
    assert sorted(p.name for p in path.iterdir()) == ["notes.txt"]
    with spi.connect(f"rocksdb://{tmp_path}/made") as p:  # create=True (the default) makes it
        p.admin.create(ACCOUNTS)
    with spi.connect(f"rocksdb://{tmp_path}/made", create=False) as p:
        assert p.admin.list_tables() == ["acct"]
        p.table("acct").upsert({"k": 1, "bal": 2})  # writes work: create=False only refuses to make the store
        assert p.table("acct").count() == 1


def test_one_off_reads_open_the_database_read_only(url: str, tmp_path: Path) -> None:
    """Reads through the auto-commit handle and the admin's lookups open RocksDB in its
    read-only mode (no new MANIFEST or log file); a write after them reopens it."""
    path = str(tmp_path / "db")
    with spi.connect(url) as p:
        p.admin.create(ACCOUNTS)
        p.table("acct").upsert({"k": 1, "bal": 5, "tag": "a"})
    files = sorted(os.listdir(path))
    with spi.connect(url) as p:
        t = p.table("acct")
        assert t.read((1,))["bal"] == 5 and t.count() == 1 and [r["k"] for r in t.scan()] == [1]  # type: ignore[index]
        assert p.admin.get_spec("acct") == ACCOUNTS and p.admin.list_tables() == ["acct"] and p.admin.exists("acct")
        handle_for(path).close_if_idle()
        assert sorted(os.listdir(path)) == files  # nothing written by the reads
        t.upsert({"k": 2, "bal": 7, "tag": "b"})  # reopened for writing
        assert t.read((2,))["bal"] == 7 and t.count() == 2  # type: ignore[index]


def test_a_table_without_a_row_counter_counts_by_walking_its_keys(url: str, tmp_path: Path) -> None:
    # Tables made before row counters existed have none; they count as before.
    with spi.connect(url) as p:
        p.admin.create(ACCOUNTS)
        p.table("acct").load({"k": i, "bal": i, "tag": f"t{i}"} for i in range(10))
    db = _raw(str(tmp_path / "db"))
    try:
        counters = [k for k in db.keys(from_key=DATA) if k[5:6] == b"\x03"]
        assert len(counters) == 1
        db.delete(counters[0])
    finally:
        db.close()
    with spi.connect(url) as p:
        t = p.table("acct")
        t.delete((0,))
        t.upsert({"k": 42, "bal": 1})
        assert t.count() == 10 and p.admin.verify("acct") == []


def test_one_off_reads_outside_a_session_keep_the_contract(url: str) -> None:
    """A one-off read of an open, idle database is one get outside any session: it
    waits for another thread's transaction (it sees the state before or after it, never
    a part), sees a table altered meanwhile, and fails on a closed provider even while
    another provider keeps the path open."""
    p, other = spi.connect(url), spi.connect(url)
    p.admin.create(ACCOUNTS)
    t = p.table("acct")
    t.upsert({"k": 1, "bal": 5, "tag": "a"})
    assert t.read((1,))["bal"] == 5  # type: ignore[index]  # the layout is remembered now
    holding, release = threading.Event(), threading.Event()

    def transfer() -> None:
        with p.transaction() as tx:
            tx.table("acct").update((1,), {"bal": 6})
            holding.set()
            release.wait(5)

    writer = threading.Thread(target=transfer)
    writer.start()
    holding.wait(5)
    got: list[Any] = []
    reader = threading.Thread(target=lambda: got.append(t.read((1,))))
    reader.start()
    reader.join(0.3)
    assert reader.is_alive() and not got  # waits for the transaction, as a session would
    release.set()
    writer.join()
    reader.join(5)
    assert got[0]["bal"] == 6
    other.admin.create_or_update(spi.TableSpec("acct", [*ACCOUNTS.fields, spi.Field("x", "long")], ["k"], ["tag"]))
    assert dict(t.read((1,))) == {"k": 1, "bal": 6, "tag": "a", "x": None}  # type: ignore[arg-type]
    p.close()
    assert other.table("acct").read((1,)) is not None  # the path stays open, through the other provider
    with pytest.raises(KvError, match="closed"):
        t.read((1,))
    other.close()


def test_rows_written_before_columns_were_added_read_alike_everywhere(url: str) -> None:
    """Stored rows shorter than the layout (written before a column was added) read
    the new columns as null in every reader: a transaction's scan, an auto-commit
    page (one chunk), a filter on the new column, descending, the one-off read; and a
    scan left open mid-chunk refuses its next row once the transaction ended."""
    from datetime import UTC, datetime

    from spi import col

    p = spi.connect(url)
    p.admin.create(spi.TableSpec("t", [spi.Field("k", "long"), spi.Field("a", "string")], ["k"]))
    p.table("t").load({"k": i, "a": str(i)} for i in range(50))
    fields = [spi.Field("k", "long"), spi.Field("a", "string"), spi.Field("b", "long"), spi.Field("ts", "timestamp")]
    p.admin.create_or_update(spi.TableSpec("t", fields, ["k"]))
    now = datetime.now(UTC)
    p.table("t").upsert({"k": 100, "a": "x", "b": 7, "ts": now})
    rows = list(p.table("t").scan())
    assert len(rows) == 51 and (rows[0]["b"], rows[0]["ts"]) == (None, None)
    assert (rows[-1]["b"], rows[-1]["ts"]) == (7, now)
    assert [r["k"] for r in p.table("t").scan(where=col("b") == 7)] == [100]
    assert len(list(p.table("t").scan(where=col("b").is_null()))) == 50
    assert [r["k"] for r in p.table("t").scan_page(limit=2, descending=True).rows] == [100, 49]
    assert dict(p.table("t").read((3,)) or {}) == {"k": 3, "a": "3", "b": None, "ts": None}
    with p.transaction() as tx:
        assert len(list(tx.table("t").scan(where=col("b").is_null()))) == 50
        open_scan = tx.table("t").scan()
        next(open_scan)
    with pytest.raises(KvError, match="ended"):
        next(open_scan)  # the rest of its chunk is decoded, but not handed out
    p.close()

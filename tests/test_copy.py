"""``kvctl copy``: specs, rows and versions between stores; modes; bounded memory; kills."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_support import REPO, Kvctl, assert_one_error, provider_url, run_process
from copy_support import (
    BIG,
    ORDERS,
    assert_same,
    fill_big,
    fill_real_data,
    kill_while_staging,
    kvctl_process,
    order_key,
    order_row,
    peak_rss,
    snapshot,
    staging_tables,
    staging_tables_of,
    wait_until,
)

import spi


@pytest.fixture
def pg_url(tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A fresh PostgreSQL schema."""
    return provider_url("postgres", tmp_path, request)


def copy(*args: str) -> Any:
    """``kvctl copy ARGS`` in-process (the global --url is not used by copy)."""
    return Kvctl("memory://")("copy", *args)


def test_rocksdb_to_postgres_to_rocksdb_keeps_specs_rows_and_versions(tmp_path: Path, pg_url: str) -> None:
    first, last = f"rocksdb://{tmp_path}/a", f"rocksdb://{tmp_path}/b"
    fill_real_data(first)
    original = snapshot(first)
    assert {name: len(rows) for name, (_, rows) in original.items()} == {"counters": 500, "empty": 0, "orders": 3000}
    assert {v for _, v in original["orders"][1]} == {1, 2, 3, 4}
    there = copy(first, pg_url, "--all", "-o", "json")
    assert there.code == 0, there
    assert json.loads(there.out) == [
        {"table": "counters", "rows": 500},
        {"table": "empty", "rows": 0},
        {"table": "orders", "rows": 3000},
    ]
    assert snapshot(pg_url) == original
    back = copy(pg_url, last, "orders", "counters", "empty")
    assert back.code == 0 and len(back.lines()) == 3, back
    assert snapshot(last) == original
    open_by_ts: list[list[Any]] = []
    for url in (first, last):
        with spi.connect(url) as p:
            assert p.admin.verify("orders") == [] and p.admin.verify("counters") == []
            rows = p.table("orders").scan(where=spi.col("status") == "closed", order_by="ts", limit=5)
            open_by_ts.append([(r["region"], r["id"]) for r in rows])
    assert open_by_ts[0] == open_by_ts[1] and len(open_by_ts[0]) == 5  # the copied index answers alike
    with spi.connect(last) as p:
        version = p.table("orders").read(order_key(3)).version  # type: ignore[union-attr]
        assert p.table("orders").upsert(order_row(3)) == version + 1  # versions go on from the copied ones


@pytest.mark.parametrize("kind", ["rocksdb", "postgres"])
def test_modes(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    src = f"rocksdb://{tmp_path}/src"
    dst = provider_url(kind, tmp_path, request)
    fill_real_data(src, n=200)
    with spi.connect(dst) as p:
        p.admin.create(ORDERS)
        p.table("orders").load([{**order_row(1), "status": "dest"}, {"region": "zz", "id": 1}])
    before = snapshot(dst)
    refused = copy(src, dst, "--all")  # error mode: orders holds rows, so nothing is copied
    assert_one_error(refused, 1)
    assert "holds rows" in refused.err and "--mode append" in refused.err
    assert snapshot(dst) == before
    assert_one_error(copy(src, dst, "--all", "--mode", "overwrite"), 2)  # no --yes
    assert snapshot(dst) == before
    appended = copy(src, dst, "orders", "--mode", "append", "-o", "json")
    assert appended.code == 0 and json.loads(appended.out) == [{"table": "orders", "rows": 200}]
    with spi.connect(dst) as p:
        t = p.table("orders")
        assert t.count() == 201 and t.read(("zz", 1)) is not None  # append keeps the destination's other rows
        with spi.connect(src) as sp:
            source = sp.table("orders").read(order_key(1))
        assert source is not None
        copied = t.read((source["region"], source["id"]))
        assert copied is not None and copied.version == source.version and copied["status"] == source["status"]
    appended_once = snapshot(dst)
    assert copy(src, dst, "orders", "--mode", "append").code == 0  # an append is idempotent: versions are kept
    assert snapshot(dst) == appended_once
    overwritten = copy(src, dst, "--all", "--mode", "overwrite", "--yes")
    assert overwritten.code == 0, overwritten
    assert snapshot(dst) == snapshot(src) and staging_tables(dst) == []
    assert_same(src, dst)


def test_append_into_a_compatible_wider_table(tmp_path: Path) -> None:
    src, dst = f"rocksdb://{tmp_path}/src", f"rocksdb://{tmp_path}/dst"
    with spi.connect(src) as p:
        p.admin.create(spi.TableSpec("t", [spi.Field("k", "long"), spi.Field("n", "int")], ["k"]))
        p.table("t").load([{"k": 1, "n": 5}, {"k": 2, "n": None}])
        p.table("t").upsert({"k": 1, "n": 6})
    wider = spi.TableSpec("t", [spi.Field("k", "long"), spi.Field("n", "long"), spi.Field("x", "string")], ["k"], ["n"])
    with spi.connect(dst) as p:
        p.admin.create(wider)
        p.table("t").upsert({"k": 1, "x": "kept"})
    assert copy(src, dst, "t", "--mode", "append").code == 0
    with spi.connect(dst) as p:
        assert p.admin.get_spec("t") == wider
        assert [(dict(r), r.version) for r in p.table("t").scan()] == [
            ({"k": 1, "n": 6, "x": "kept"}, 2),
            ({"k": 2, "n": None, "x": None}, 1),
        ]


def test_incompatible_destination_exits_2_and_copies_nothing(tmp_path: Path) -> None:
    src, dst = f"rocksdb://{tmp_path}/src", f"rocksdb://{tmp_path}/dst"
    fill_real_data(src, n=50)
    with spi.connect(dst) as p:
        p.admin.create(
            spi.TableSpec("orders", [spi.Field("region", "string"), spi.Field("id", "int")], ["region", "id"])
        )
    res = copy(src, dst, "counters", "orders", "--mode", "append")
    assert_one_error(res, 2)
    assert "destination table 'orders' cannot take the source's rows" in res.err
    with spi.connect(dst) as p:
        assert p.admin.list_tables() == ["orders"] and p.table("orders").count() == 0


def test_usage_errors(tmp_path: Path) -> None:
    src = f"rocksdb://{tmp_path}/src"
    fill_real_data(src, n=20)
    same = [
        (src, f"rocksdb:{os.path.relpath(tmp_path / 'src')}"),
        (src, f"rocksdb://{tmp_path}/./src/"),
    ]
    os.symlink(tmp_path / "src", tmp_path / "link")
    same.append((src, f"rocksdb://{tmp_path}/link"))
    for a, b in same:
        res = copy(a, b, "--all")
        assert_one_error(res, 2)
        assert "same store" in res.err
    dst = f"rocksdb://{tmp_path}/dst"
    for args in (
        [src, dst],
        [src, dst, "orders", "--all"],
        [src, dst, "kv_orders"],
        [src, dst, "orders", "--mode", "merge"],
        [src, dst, "orders", "--batch-size", "0"],
        [src, "nope://x", "orders"],
    ):
        assert_one_error(copy(*args), 2)
    missing = copy(src, dst, "orders", "nope")
    assert_one_error(missing, 1)
    with spi.connect(dst) as p:
        assert p.admin.list_tables() == []


def test_same_postgres_schema_is_the_same_store(pg_url: str) -> None:
    other = pg_url.replace("postgresql+psycopg://", "postgres://") + "&application_name=other"
    res = copy(pg_url, other, "--all")
    assert_one_error(res, 2)
    assert "same store" in res.err


def test_progress_bar_on_a_terminal(tmp_path: Path) -> None:
    src, dst = f"rocksdb://{tmp_path}/src", f"rocksdb://{tmp_path}/dst"
    fill_big(src, 3000)
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kvctl", "copy", src, dst, "big", "--batch-size", "500"],
        stdout=subprocess.PIPE,
        stderr=slave,
        env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "100"},
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    out = proc.stdout.read() if proc.stdout else b""
    assert proc.wait() == 0 and json.loads(out) == {"table": "big", "rows": 3000}
    terminal = b"".join(chunks).decode(errors="replace")
    assert "copying big" in terminal and "3000/3000" in terminal
    piped = run_process("copy", src, f"rocksdb://{tmp_path}/dst2", "big")
    assert (piped.code, piped.err) == (0, f"created table 'big' on rocksdb://{tmp_path}/dst2\n")


@pytest.mark.slow
def test_memory_stays_flat(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Peak memory of the copying process does not grow from 20,000 to 200,000 rows.

    PostgreSQL to PostgreSQL, so that the figure is kvctl's own: a RocksDB store adds
    its block cache and memtables, bounded by their sizes (docs/cli.md, where
    bench/copy_tables.py's 1,000,000-row figures are)."""
    peaks = []
    for rows in (20_000, 200_000):
        src = provider_url("postgres", tmp_path, request)
        dst = provider_url("postgres", tmp_path, request)
        fill_big(src, rows)
        peak, seconds = peak_rss(sys.executable, "-m", "kvctl", "copy", src, dst, "big")
        peaks.append(peak)
        with spi.connect(dst) as p:
            assert p.table("big").count() == rows
    growth_mib = (peaks[1] - peaks[0]) / 1024
    print(f"200,000 rows in {seconds:.1f} s, peak RSS {peaks[1] // 1024} MiB (+{growth_mib:.1f} MiB over 20,000)")
    assert growth_mib < 8, f"peak RSS {peaks[0] // 1024} MiB for 20,000 rows, {peaks[1] // 1024} MiB for 200,000"


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["rocksdb", "postgres"])
def test_killed_overwrite_leaves_the_old_rows(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    src = f"rocksdb://{tmp_path}/src"
    dst = provider_url(kind, tmp_path, request)
    fill_big(src, 100_000, note="new")
    fill_big(dst, 500, note="old")  # fewer than the rows the kill waits for: a swapped-out table never passes for them
    old = snapshot(dst)
    proc = kvctl_process("copy", src, dst, "big", "--mode", "overwrite", "--yes", "--batch-size", "1000")
    kill_while_staging(dst, proc, 1_000)
    assert snapshot(dst) == old
    assert len(staging_tables(dst)) == 1  # the killed run's, hidden until the next overwrite
    rerun = copy(src, dst, "big", "--mode", "overwrite", "--yes")
    assert rerun.code == 0, rerun
    assert snapshot(dst) == snapshot(src) and staging_tables(dst) == []


@pytest.mark.slow
def test_destination_altered_during_an_overwrite(tmp_path: Path) -> None:
    """A table altered while its staging table loads is not swapped: exit 2, old rows kept."""
    src, dst = f"rocksdb://{tmp_path}/src", f"rocksdb://{tmp_path}/dst"
    fill_big(src, 300_000, note="new")
    fill_big(dst, 1_000, note="old")
    proc = kvctl_process("copy", src, dst, "big", "--mode", "overwrite", "--yes", "--batch-size", "1000")
    wider = spi.TableSpec("big", [*BIG.fields, spi.Field("extra", "string")], BIG.primary_key, BIG.indexes)
    with spi.connect(dst) as p:
        wait_until("staging began", lambda: bool(staging_tables_of(p)), proc)
        p.admin.create_or_update(wider)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2 and err.count("error:") == 1, (out, err)
    assert "was altered while its rows were copied" in err
    with spi.connect(dst) as p:
        assert p.table("big").count() == 1_000 and p.table("big").read((5,))["pad"].startswith("old")  # type: ignore[index]
    assert staging_tables(dst) == []


def test_overwrite_of_a_change_fed_table_records_its_events(tmp_path: Path) -> None:
    """An overwrite of a change-fed table is one revision whose events ``kvctl changes``
    shows: a delete for each old row the source lacks, a put for every new row."""
    src, dst = f"rocksdb://{tmp_path}/src", f"rocksdb://{tmp_path}/dst"
    fill_big(src, 50, note="new")
    fill_big(dst, 70, note="old")
    with spi.connect(dst) as p:
        p.admin.create_or_update(BIG.with_changes(True))
        before = p.revision()
    assert copy(src, dst, "big", "--mode", "overwrite", "--yes").code == 0
    assert snapshot(dst)["big"][1] == snapshot(src)["big"][1] and staging_tables(dst) == []
    res = Kvctl(dst)("changes", "big", "--since", str(before), "-o", "json")
    assert res.code == 0, res
    events = [json.loads(line) for line in res.lines()]
    assert {e["revision"] for e in events} == {before + 1}
    assert [(e["op"], e["key"]["id"]) for e in events] == [("put", i) for i in range(50)] + [
        ("delete", i) for i in range(50, 70)
    ]
    assert events[0]["row"]["pad"].startswith("new") and events[-1]["row"] is None

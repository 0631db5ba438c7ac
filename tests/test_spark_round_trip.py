"""Round trips (CLI.md "Everyday edges"): ``export`` to a folder writes the spec as
``_kvctl_spec.json``; ``import --in`` that folder takes the format from its data files
and, with ``--create``, the spec (``--pk`` optional; indexes, change feed and ttl
kept). And ``import`` of an input with repeated keys writes the last row of each and
says so as ``put --file`` does. In-process, on the test run's one Spark session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_support import Kvctl, assert_one_error, run_process

import spi
from kvctl.spark.folders import SPEC_FILE

pytestmark = pytest.mark.spark

SPEC = spi.TableSpec(
    "items",
    [
        spi.Field("region", "string"),
        spi.Field("id", "long"),
        spi.Field("name", "string"),
        spi.Field("blob", "bytes"),
        spi.Field("at", "timestamp"),
        spi.Field("total", "double"),
    ],
    primary_key=["region", "id"],
    indexes=["name", "at"],
    changes=True,
    ttl=86_400,
)


@pytest.fixture
def url(tmp_path: Path) -> str:
    """A RocksDB store holding ``items`` (30 rows)."""
    import datetime as dt

    u = f"rocksdb://{tmp_path / 'db'}"
    with spi.connect(u) as p:
        p.admin.create(SPEC)
        p.table("items").load(
            {
                "region": ["eu", "us", "ap"][i % 3],
                "id": i,
                "name": f"näme {i}" if i % 4 else None,
                "blob": bytes([i, 0, 255]),
                "at": dt.datetime(2024, 5, 1, i % 24, tzinfo=dt.UTC) if i % 5 else None,
                "total": i * 1.5,
            }
            for i in range(30)
        )
    return u


def rows(url: str, table: str) -> list[dict[str, Any]]:
    """A table's rows in key order."""
    with spi.connect(url) as p:
        return [r.to_dict() for r in p.table(table).scan()]


def spec_of(url: str, table: str) -> spi.TableSpec:
    with spi.connect(url) as p:
        return p.admin.get_spec(table)


@pytest.mark.parametrize("fmt", ["parquet", "csv", "json", "orc"])
def test_export_folder_round_trips_with_its_spec(spark: Any, url: str, tmp_path: Path, fmt: str) -> None:
    kvctl = Kvctl(url)
    out = tmp_path / "backup"  # no suffix: the format comes from the data files
    kvctl.ok("export", "items", "--out", str(out), "--format", fmt, "--partitions", "2")
    described = json.loads(kvctl.ok("table", "describe", "items", "-o", "json").out)
    assert json.loads((out / SPEC_FILE).read_text()) == described == SPEC.to_dict()
    res = kvctl.ok("import", "again", "--in", str(out), "--create")
    assert res.out == "30\n" and f"imported 30 rows from {out} into 'again' ({fmt})" in res.err, res
    assert spec_of(url, "again").to_dict() == {**SPEC.to_dict(), "name": "again"}  # indexes, changes, ttl
    expected = rows(url, "items")
    if fmt == "csv":  # CLI.md: CSV writes null as an empty field, read back as "" in a string column
        expected = [{**r, "name": "" if r["name"] is None else r["name"]} for r in expected]
    assert rows(url, "again") == expected
    with spi.connect(url) as p:
        assert all(r.expires_at is not None for r in p.table("again").scan())  # the ttl applies
    into = kvctl.ok("import", "items", "--in", str(out), "--mode", "overwrite", "--yes")  # no --format
    assert into.out == "30\n", into


def test_pk_overrides_the_spec_files_key(spark: Any, url: str, tmp_path: Path) -> None:
    kvctl = Kvctl(url)
    out = tmp_path / "backup"
    kvctl.ok("export", "items", "--out", str(out))
    kvctl.ok("import", "by_id", "--in", str(out), "--create", "--pk", "id")
    spec = spec_of(url, "by_id")
    assert spec.primary_key == ("id",) and spec.indexes == SPEC.indexes and spec.ttl == SPEC.ttl and spec.changes
    assert len(rows(url, "by_id")) == 30


def test_change_exports_and_files_have_no_spec(spark: Any, url: str, tmp_path: Path) -> None:
    kvctl = Kvctl(url)
    kvctl.ok("export", "items", "--out", str(tmp_path / "events"), "--changes")
    assert not (tmp_path / "events" / SPEC_FILE).exists()
    single = tmp_path / "one.csv"
    single.write_text("region,id\neu,1\n")
    res = kvctl("import", "fresh", "--in", str(single), "--create")
    assert_one_error(res, 2)
    assert f"--create needs --pk a,b: {single} holds no {SPEC_FILE}" in res.err, res.err


def test_repeated_keys_keep_the_last_row_and_say_so(spark: Any, url: str, tmp_path: Path) -> None:
    src = tmp_path / "repeats.csv"
    lines = ["region,id,name"] + [f"eu,{i % 4},row {i}" for i in range(10)]
    src.write_text("\n".join(lines) + "\n")
    res = Kvctl(url).ok("import", "items", "--in", str(src), "--mode", "overwrite", "--yes")
    assert res.out == "4\n"
    assert "10 rows read, 4 distinct keys written (6 replaced an earlier row of the input)\n" in res.err, res.err
    assert [(r["id"], r["name"]) for r in rows(url, "items")] == [
        (0, "row 8"),
        (1, "row 9"),
        (2, "row 6"),
        (3, "row 7"),
    ]
    plain = Kvctl(url).ok("import", "items", "--in", str(tmp_path / "repeats.csv"))
    assert plain.out == "4\n" and "6 replaced an earlier row" in plain.err
    unique = tmp_path / "unique.json"
    unique.write_text('{"region": "us", "id": 100}\n{"region": "us", "id": 101}\n')
    once = Kvctl(url).ok("import", "items", "--in", str(unique))
    assert once.out == "2\n" and "distinct keys" not in once.err


def test_folder_format_errors_fail_before_spark(url: str, tmp_path: Path) -> None:
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "part-0.csv").write_text("region,id\neu,1\n")
    (mixed / "part-1.snappy.parquet").write_bytes(b"")
    (mixed / "_SUCCESS").write_text("")
    res = run_process("--url", url, "import", "items", "--in", str(mixed), cwd=tmp_path)
    assert_one_error(res, 2)
    assert "files of 2 formats (csv, parquet)" in res.err and "--format parquet|csv|json|orc" in res.err
    (mixed / "part-1.snappy.parquet").unlink()
    (mixed / SPEC_FILE).write_text('{"fields": [{"name": "region", "type": "nope"}], "primary_key": ["region"]}')
    bad = run_process("--url", url, "import", "fresh", "--in", str(mixed), "--create", cwd=tmp_path)
    assert_one_error(bad, 2)
    assert str(mixed / SPEC_FILE) in bad.err

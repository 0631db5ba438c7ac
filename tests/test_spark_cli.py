"""``kvctl export`` / ``kvctl import``: options, output and exit codes per CLI.md.

In-process (CliRunner), so the commands reuse the test run's one Spark session;
the usage errors are also checked in a real process, where they must fail before
Spark starts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_support import Kvctl, assert_one_error, run_process
from spark_session import need_spark

import spi

pytestmark = pytest.mark.spark

SPEC = spi.TableSpec(
    "items",
    [spi.Field("id", "long"), spi.Field("name", "string"), spi.Field("blob", "bytes"), spi.Field("at", "timestamp")],
    primary_key=["id"],
)


@pytest.fixture
def url(tmp_path: Path) -> str:
    """A RocksDB store holding ``items`` (50 rows)."""
    u = f"rocksdb://{tmp_path / 'db'}"
    with spi.connect(u) as p:
        p.admin.create(SPEC)
        p.table("items").load(
            {"id": i - 25, "name": f"näme {i}" if i % 3 else None, "blob": bytes([i]), "at": None} for i in range(50)
        )
    return u


def rows(url: str, table: str) -> list[dict[str, Any]]:
    """A table's rows in key order."""
    with spi.connect(url) as p:
        return [r.to_dict() for r in p.table(table).scan()]


def test_export_then_import_with_create(spark: Any, url: str, tmp_path: Path) -> None:
    kvctl = Kvctl(url)
    out = str(tmp_path / "items.parquet")
    res = kvctl.ok("export", "items", "--out", out, "--partitions", "2", "--where", "id >= 0")
    assert res.out.strip() == "25"
    assert f"exported 25 rows of 'items' to {out}" in res.err
    res = kvctl.ok("import", "copy", "--in", out, "--create", "--pk", "id")
    assert res.out.strip() == "25" and "imported 25 rows" in res.err
    assert rows(url, "copy") == [r for r in rows(url, "items") if r["id"] >= 0]


def test_json_export_is_iso_and_base64(spark: Any, url: str, tmp_path: Path) -> None:
    out = tmp_path / "items.json"
    Kvctl(url).ok("export", "items", "--out", str(out), "--format", "json", "--partitions", "1", "--where", "id = 1")
    (line,) = [x for f in sorted(out.glob("part-*")) for x in f.read_text().splitlines()]
    assert json.loads(line) == {"id": 1, "name": "näme 26", "blob": "Gg==", "at": None}


def test_export_mode_error_exits_1(spark: Any, url: str, tmp_path: Path) -> None:
    out = tmp_path / "exists"
    out.mkdir()
    assert_one_error(Kvctl(url)("export", "items", "--out", str(out)), 1)
    assert list(out.iterdir()) == []


def test_import_bad_value_exits_2_and_writes_nothing(spark: Any, url: str, tmp_path: Path) -> None:
    src = tmp_path / "bad.csv"
    src.write_text("id,name,at\n900,ok,2024-01-01T00:00:00Z\n901,bad,not-a-time\n")
    res = Kvctl(url)("import", "items", "--in", str(src), "--format", "csv")
    assert_one_error(res, 2)
    assert "'at'" in res.err and "not-a-time" in res.err and "id=901" in res.err
    assert len(rows(url, "items")) == 50


def test_import_overwrite_needs_yes(spark: Any, url: str, tmp_path: Path) -> None:
    src = tmp_path / "in.csv"
    src.write_text("id,name\n1,one\n")
    assert_one_error(Kvctl(url)("import", "items", "--in", str(src), "--format", "csv", "--mode", "overwrite"), 2)
    assert len(rows(url, "items")) == 50
    res = Kvctl(url).ok("import", "items", "--in", str(src), "--format", "csv", "--mode", "overwrite", "--yes")
    assert res.out.strip() == "1"
    assert rows(url, "items") == [{"id": 1, "name": "one", "blob": None, "at": None}]


def test_import_renames_headers_that_are_not_column_names(spark: Any, url: str, tmp_path: Path) -> None:
    src = tmp_path / "wine.csv"
    src.write_text("wine id,color intensity,1st,Hue\n1,5.64,x,1.04\n")
    renames = [
        "renamed header 'wine id' -> wine_id",
        "renamed header 'color intensity' -> color_intensity",
        "renamed header '1st' -> _1st",
    ]
    for args in (["--create", "--pk", "wine_id"], []):  # created from the input, then into that table
        res = Kvctl(url).ok("import", "wine", "--in", str(src), "--format", "csv", *args)
        assert [line for line in res.err.splitlines() if line.startswith("renamed ")] == renames
    assert rows(url, "wine") == [{"wine_id": "1", "color_intensity": "5.64", "_1st": "x", "Hue": "1.04"}]  # CSV: text


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (["--url", "memory://", "export", "t", "--out", "x"], 2, "memory://"),
        (["export", "items", "--out", "x", "--format", "xml"], 2, "--format"),
        (["export", "missing", "--out", "x"], 1, "missing"),
        (["export", "items", "--out", "x", "--where", "nope = 1"], 2, "nope"),
        (["import", "items", "--in", "nowhere.parquet"], 2, "does not exist"),
        (["import", "fresh", "--in", ".", "--format", "parquet", "--create"], 2, "--pk"),
        (["import", "items", "--in", "x.csv", "--pk", "id"], 2, "--create"),
        (["import", "missing", "--in", "x"], 1, "--create"),
    ],
)
def test_usage_errors_fail_before_spark(url: str, tmp_path: Path, args: list[str], code: int, words: str) -> None:
    full = args if args[0] == "--url" else ["--url", url, *args]
    res = run_process(*full, cwd=tmp_path, env={"PYSPARK_SUBMIT_ARGS": "--this-would-break-spark"})
    assert_one_error(res, code)
    assert words in res.err


def test_real_process_bad_row_is_one_error_line(url: str, tmp_path: Path) -> None:
    """Spark's own output (JVM banner, task failure logs) must not reach the terminal."""
    need_spark()
    src = tmp_path / "bad.csv"
    src.write_text("id,name\n1,a\nx,b\n")
    res = run_process("--url", url, "import", "items", "--in", str(src), "--format", "csv", cwd=tmp_path)
    assert_one_error(res, 2)
    assert "'id'" in res.err and "'x'" in res.err


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["rocksdb", "postgres"])
def test_killed_import_overwrite_leaves_the_old_rows(
    spark: Any, kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """SIGKILL to the whole kvctl import (its JVM and Python workers too) while the
    overwrite loads: the table keeps its old rows, and a rerun succeeds."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from cli_support import provider_url
    from copy_support import fill_big, kill_while_staging, kvctl_process, snapshot, staging_tables

    url = provider_url(kind, tmp_path, request)
    fill_big(url, 2_000, note="old")
    old = snapshot(url)

    def parquet(name: str, n: int) -> Path:
        path = tmp_path / name
        ids = range(n)
        pq.write_table(pa.table({"id": ids, "g": [i % 100 for i in ids], "pad": [f"new{i:012d}" for i in ids]}), path)
        return path

    proc = kvctl_process("--url", url, "import", "big", "--in", str(parquet("big.parquet", 100_000)), "--mode",
                         "overwrite", "--yes")  # fmt: skip
    kill_while_staging(url, proc, 20_000)  # more than the old rows: a swapped-out table never passes for them
    assert snapshot(url) == old
    assert len(staging_tables(url)) == 1  # the killed run's, until the next overwrite
    # the rerun (a smaller file: what matters is the killed run's leftovers) succeeds and clears them
    res = Kvctl(url).ok("import", "big", "--in", str(parquet("rerun.parquet", 500)), "--mode", "overwrite", "--yes")
    assert res.out.strip() == "500"
    with spi.connect(url) as p:
        assert p.table("big").count() == 500 and p.table("big").read((7,))["pad"] == "new000000000007"  # type: ignore[index]
    assert staging_tables(url) == []

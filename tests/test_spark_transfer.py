"""Spark export and import through the kvctl data source, on RocksDB and PostgreSQL.

One Spark session for the whole run (the ``spark`` fixture); every test makes its
own table.
"""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

import pytest
from conftest import need

import spi

pytestmark = pytest.mark.spark

SPEC = spi.TableSpec(
    "people",
    [
        spi.Field("region", "string"),
        spi.Field("id", "long"),
        spi.Field("name", "string"),
        spi.Field("photo", "bytes"),
        spi.Field("seen", "timestamp"),
        spi.Field("score", "double"),
        spi.Field("rank", "int"),
        spi.Field("ratio", "float"),
        spi.Field("active", "bool"),
    ],
    primary_key=["region", "id"],
)
UTC = dt.UTC


def make_rows(n: int) -> list[dict[str, Any]]:
    """Rows with nulls, bytes (NUL and 0xff included), microsecond timestamps,
    negative numbers and non-ASCII strings."""
    names = ["Zoë", "Zürich ✓", "日本語", "", "plain", 'a,b "quoted"\nline', "  spaced  ", "NA"]
    rows = []
    for i in range(n):
        rows.append(
            {
                "region": ["eu", "us", "ap", "éé"][i % 4],
                "id": (i - n // 2) * 1_000_003,
                "name": None if i % 7 == 0 else names[i % len(names)],
                "photo": None if i % 5 == 0 else bytes([0, 255, i % 256]) * (i % 3),
                "seen": None
                if i % 6 == 0
                else dt.datetime(1969, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)
                + dt.timedelta(seconds=i * 3601, microseconds=i),
                "score": None if i % 9 == 0 else -i * 1.5 + 0.25,
                "rank": None if i % 11 == 0 else -(2**31) + i if i % 2 else 2**31 - 1 - i,
                "ratio": None if i % 13 == 0 else i / 7,
                "active": None if i % 4 == 3 else i % 2 == 0,
            }
        )
    return rows


def rocksdb_url(path: Any) -> str:
    """A RocksDB URL for a directory."""
    return f"rocksdb://{os.path.abspath(path)}"


@pytest.fixture(params=["rocksdb", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Any) -> str:
    """A provider URL with the ``people`` table loaded (2,000 rows)."""
    if request.param == "rocksdb":
        u = rocksdb_url(tmp_path / "db")
        p = spi.connect(u)
    else:
        try:
            factory = request.getfixturevalue("pg_factory")
        except pytest.FixtureLookupError:
            need("the PostgreSQL test server", False, "no pg_factory fixture")
        p = factory()
        u = p.url
    p.admin.create(SPEC)
    p.table("people").load(make_rows(2000))
    p.close()
    return u


def table_rows(url: str, table: str) -> list[dict[str, Any]]:
    """Every row of a table in key order, as plain dicts."""
    with spi.connect(url) as p:
        return [r.to_dict() for r in p.table(table).scan()]


def by_key(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows sorted by the people key."""
    return sorted(rows, key=lambda r: (r["region"].encode(), r["id"]))


def test_export_parquet_gives_exactly_the_rows(spark: Any, url: str, tmp_path: Any) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kvctl.spark.transfer import export_table

    seen: list[Any] = []
    out = str(tmp_path / "out.parquet")
    result = export_table(spark, url, "people", out, partitions=4, progress=seen.append)
    assert result.rows == 2000 and result.tasks == 4 and result.path == out
    assert seen and seen[-1].tasks_done == seen[-1].tasks_total == 4
    table = pq.read_table(out)
    assert table.schema.field("id").type == pa.int64()
    assert table.schema.field("rank").type == pa.int32()
    assert table.schema.field("ratio").type == pa.float32()
    assert table.schema.field("photo").type == pa.binary()
    assert table.schema.field("seen").type == pa.timestamp("us", tz="UTC")
    assert by_key(table.to_pylist()) == by_key(table_rows(url, "people"))


def test_export_import_round_trip(spark: Any, url: str, tmp_path: Any) -> None:
    from kvctl.spark.transfer import export_table, import_table

    out = str(tmp_path / "rt")
    export_table(spark, url, "people", out, partitions=3)
    result = import_table(spark, url, "copy", out, create_pk=["region", "id"])
    assert result.rows == 2000
    with spi.connect(url) as p:
        assert p.admin.get_spec("copy") == spi.TableSpec("copy", SPEC.fields, SPEC.primary_key)
    assert table_rows(url, "copy") == table_rows(url, "people")


@pytest.mark.parametrize("fmt", ["csv", "json", "orc"])
def test_round_trip_through_each_format(spark: Any, tmp_path: Any, fmt: str) -> None:
    from kvctl.spark.transfer import export_table, import_table

    url = rocksdb_url(tmp_path / "db")
    with spi.connect(url) as p:
        p.admin.create(SPEC)
        p.table("people").load(make_rows(300))
        p.admin.create(spi.TableSpec("copy", SPEC.fields, SPEC.primary_key))
    out = str(tmp_path / f"out.{fmt}")
    assert export_table(spark, url, "people", out, format=fmt, partitions=2).rows == 300
    assert import_table(spark, url, "copy", out, format=fmt).rows == 300
    expected = table_rows(url, "people")
    if fmt == "csv":  # CLI.md: an empty CSV field is "" in a string column, null in any other
        expected = [{**r, "name": r["name"] or "", "photo": r["photo"] or None} for r in expected]
    assert table_rows(url, "copy") == expected


def test_partitions_become_read_tasks(spark: Any, tmp_path: Any) -> None:
    url = rocksdb_url(tmp_path / "db")
    with spi.connect(url) as p:
        p.admin.create(SPEC)
        p.table("people").load(make_rows(2000))
    df = spark.read.format("kvctl").option("url", url).option("table", "people").option("partitions", "4").load()
    assert df.rdd.getNumPartitions() == 4
    assert df.count() == 2000


def test_where_is_run_by_the_provider(spark: Any, tmp_path: Any) -> None:
    import pyarrow.parquet as pq

    from kvctl.spark.datasource import KvctlDataSource
    from kvctl.spark.transfer import export_table

    url = rocksdb_url(tmp_path / "db")
    with spi.connect(url) as p:
        p.admin.create(SPEC)
        p.table("people").load(make_rows(500))
    where = "region = 'eu' and score < 0 and name like 'Z%'"
    with spi.connect(url) as p:
        expected = [r.to_dict() for r in p.table("people").scan(where=spi.parse_where(where, SPEC))]
    assert expected
    # The reader itself returns only matching rows: the filter ran in the provider's scan.
    source = KvctlDataSource({"url": url, "table": "people", "where": where, "partitions": "3"})
    reader = source.reader(source.schema())
    read = [row for part in reader.partitions() for batch in reader.read(part) for row in batch.to_pylist()]
    assert by_key(read) == by_key(expected)
    out = str(tmp_path / "where.parquet")
    assert export_table(spark, url, "people", out, where=where, partitions=2).rows == len(expected)
    assert by_key(pq.read_table(out).to_pylist()) == by_key(expected)


def test_memory_url_is_refused(spark: Any, tmp_path: Any) -> None:
    from kvctl.spark.errors import unwrap
    from kvctl.spark.transfer import export_table

    with pytest.raises(spi.UrlError, match="memory://"):
        export_table(spark, "memory://", "people", str(tmp_path / "x"))
    with pytest.raises(Exception) as info:
        spark.read.format("kvctl").option("url", "memory://").option("table", "people").load()
    error = unwrap(info.value)
    assert isinstance(error, spi.UrlError) and "memory://" in str(error)
    assert not (tmp_path / "x").exists()


def _parquet(path: Any, columns: dict[str, Any]) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table(columns), str(path))
    return str(path)


@pytest.mark.parametrize(
    ("column", "values", "words"),
    [
        ("rank", ["7", "abc"], ["'rank'", "abc"]),  # text that is not an int
        ("rank", [1, 2**40], ["'rank'", str(2**40)]),  # out of the int range
        ("seen", ["2024-01-01T00:00:00Z", "yesterday"], ["'seen'", "yesterday"]),
    ],
)
def test_bad_row_names_column_and_value(
    spark: Any, tmp_path: Any, column: str, values: list[Any], words: list[str]
) -> None:
    from kvctl.spark.transfer import import_table

    url = rocksdb_url(tmp_path / "db")
    with spi.connect(url) as p:
        p.admin.create(SPEC)
        p.table("people").upsert({"region": "eu", "id": 1, "name": "kept"})
    src = _parquet(tmp_path / "bad.parquet", {"region": ["eu", "us"], "id": [10, 11], column: values})
    with pytest.raises(spi.InvalidFieldError) as info:
        import_table(spark, url, "people", src, mode="overwrite")
    for word in words:
        assert word in str(info.value)
    assert "id=11" in str(info.value)
    assert [r["name"] for r in table_rows(url, "people")] == ["kept"]  # nothing changed, not even overwrite


def test_failed_create_import_leaves_no_table(spark: Any, tmp_path: Any) -> None:
    from kvctl.spark.transfer import import_table

    url = rocksdb_url(tmp_path / "db")
    src = _parquet(tmp_path / "nul.parquet", {"id": [1, 2], "name": ["ok", "bad\x00nul"]})
    with pytest.raises(spi.InvalidFieldError, match=r"'name'.*NUL"):
        import_table(spark, url, "fresh", src, create_pk=["id"])
    with spi.connect(url) as p:
        assert not p.admin.exists("fresh")


def test_export_mode_error_leaves_existing_output(spark: Any, tmp_path: Any) -> None:
    from kvctl.spark.errors import SparkJobError
    from kvctl.spark.transfer import export_table

    url = rocksdb_url(tmp_path / "db")
    with spi.connect(url) as p:
        p.admin.create(SPEC)
        p.table("people").load(make_rows(10))
    out = tmp_path / "existing"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(SparkJobError) as info:
        export_table(spark, url, "people", str(out))
    assert info.value.exit_code == 1 and "exists" in str(info.value)
    assert [f.name for f in out.iterdir()] == ["keep.txt"]
    assert export_table(spark, url, "people", str(out), mode="overwrite").rows == 10
    assert not (out / "keep.txt").exists()


def test_import_of_a_missing_path_changes_nothing(spark: Any, tmp_path: Any) -> None:
    from kvctl.spark.errors import SparkJobError
    from kvctl.spark.transfer import import_table

    url = rocksdb_url(tmp_path / "db")
    with spi.connect(url) as p:
        p.admin.create(SPEC)
    with pytest.raises(SparkJobError) as info:
        import_table(spark, url, "people", str(tmp_path / "nowhere"), create_pk=["id"])
    assert info.value.exit_code == 2 and "does not exist" in str(info.value)
    with spi.connect(url) as p:
        assert p.admin.list_tables() == ["people"] and p.table("people").count() == 0


def test_import_modes(spark: Any, tmp_path: Any) -> None:
    from kvctl.spark.transfer import import_table

    url = rocksdb_url(tmp_path / "db")
    with spi.connect(url) as p:
        p.admin.create(SPEC)
        p.table("people").upsert({"region": "eu", "id": 1, "name": "old", "rank": 5})
    src = _parquet(tmp_path / "in.parquet", {"region": ["eu", "us"], "id": [1, 2], "name": ["new", "other"]})
    assert import_table(spark, url, "people", src).rows == 2  # append = upsert: rank is kept
    assert [(r["id"], r["name"], r["rank"]) for r in table_rows(url, "people")] == [(1, "new", 5), (2, "other", None)]
    with spi.connect(url) as p:
        p.table("people").upsert({"region": "ap", "id": 9})
    assert import_table(spark, url, "people", src, mode="overwrite").rows == 2
    assert [(r["region"], r["rank"]) for r in table_rows(url, "people")] == [("eu", None), ("us", None)]
    with pytest.raises(spi.TableExistsError):
        import_table(spark, url, "people", src, create_pk=["id"])
    with pytest.raises(spi.TableNotFoundError):
        import_table(spark, url, "nope", src)
    with pytest.raises(spi.InvalidFieldError, match="extra"):
        import_table(
            spark, url, "people", _parquet(tmp_path / "x.parquet", {"region": ["eu"], "id": [1], "extra": [1]})
        )


def test_data_source_write_and_read(spark: Any, tmp_path: Any) -> None:
    url = rocksdb_url(tmp_path / "db")
    with spi.connect(url) as p:
        p.admin.create(spi.TableSpec("t", [spi.Field("k", "long"), spi.Field("v", "string")], ["k"]))
    df = spark.createDataFrame([(i, f"v{i}") for i in range(100)], "k long, v string")
    df.write.format("kvctl").option("url", url).option("table", "t").mode("append").save()
    back = spark.read.format("kvctl").option("url", url).option("table", "t").option("partitions", "2").load()
    assert sorted(tuple(r) for r in back.collect()) == [(i, f"v{i}") for i in range(100)]

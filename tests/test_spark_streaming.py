"""Spark streaming with ``format("kvctl")`` (CLI.md "Spark streaming"): a table's change
feed as a source (batch and stream), the exactly-once sink, and ``export --changes``.

One Spark session for the whole run (the ``spark`` fixture); every test makes its
own stores. Real RocksDB and PostgreSQL, no mocks.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

import pytest
from cli_support import Kvctl, assert_one_error
from conftest import need
from stream_support import SPEC, commits, create_target, rocksdb, sink, stream, table_state, write_history

import spi
from kvctl.spark.errors import unwrap

pytestmark = pytest.mark.spark

META = ("_revision", "_op", "_version", "_time")


def feed(url: str, since: int = 0) -> list[dict[str, Any]]:
    """The recorded events as the source's rows."""
    out = []
    with spi.connect(url) as p:
        for e in p.changes(SPEC.name, since=since):
            values = e.row if e.row is not None else e.key
            row = {c: values.get(c) for c in SPEC.columns}
            out.append({**row, "_revision": e.revision, "_op": e.op, "_version": e.version, "_time": e.time})
    return out


def as_dicts(rows: list[Any]) -> list[dict[str, Any]]:
    """Spark rows as plain dicts (timestamps aware UTC, as spi gives them)."""
    out = []
    for r in rows:
        d = r.asDict()
        for k, v in d.items():
            if isinstance(v, dt.datetime):
                d[k] = v.replace(tzinfo=dt.UTC) if v.tzinfo is None else v.astimezone(dt.UTC)
        out.append(d)
    return out


def collect_batches(spark: Any, df: Any, checkpoint: Path) -> list[tuple[int, list[dict[str, Any]]]]:
    """Run ``df`` with Trigger.AvailableNow into foreachBatch; every batch's id and rows."""
    batches: list[tuple[int, list[dict[str, Any]]]] = []

    def keep(batch: Any, batch_id: int) -> None:
        batches.append((batch_id, as_dicts(batch.collect())))

    query = df.writeStream.foreachBatch(keep).option("checkpointLocation", str(checkpoint))
    query.trigger(availableNow=True).start().awaitTermination()
    return batches


def by_key(events: list[dict[str, Any]]) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    """Each key's events in the order given."""
    out: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for e in events:
        out.setdefault((e["region"], e["id"]), []).append(e)
    return out


def test_batch_read_gives_the_recorded_events(spark: Any, tmp_path: Path) -> None:
    url = rocksdb(tmp_path / "db")
    write_history(url)
    expected = feed(url)
    assert {e["_op"] for e in expected} == {"put", "delete", "expire"}
    df = spark.read.format("kvctl").option("url", url).option("table", SPEC.name).option("changes", "true").load()
    assert df.columns == [*SPEC.columns, *META]
    assert as_dicts(df.collect()) == expected
    since = expected[10]["_revision"]
    later = df.sparkSession.read.format("kvctl").options(url=url, table=SPEC.name, changes="true")
    got = as_dicts(later.option("startingRevision", str(since)).load().collect())
    assert got == [e for e in expected if e["_revision"] > since]


def test_stream_delivers_every_event_once_in_key_order(spark: Any, tmp_path: Path) -> None:
    url = rocksdb(tmp_path / "db")
    write_history(url)
    expected = feed(url)
    df = stream(spark, url, startingRevision="earliest", partitions="3")
    got = [e for _, rows in collect_batches(spark, df, tmp_path / "ck") for e in rows]
    assert sorted(got, key=lambda e: (e["_revision"], str(e))) == sorted(
        expected, key=lambda e: (e["_revision"], str(e))
    )
    assert by_key(got) == by_key(expected)  # one key's events in commit order


def test_max_rows_per_batch_never_splits_a_revision(spark: Any, tmp_path: Path) -> None:
    url = rocksdb(tmp_path / "db")
    write_history(url)
    expected = feed(url)
    batches = collect_batches(
        spark, stream(spark, url, startingRevision="earliest", maxRowsPerBatch="4"), tmp_path / "c"
    )
    assert len(batches) > 5
    seen: dict[int, int] = {}
    for batch_id, rows in batches:
        revisions = [r["_revision"] for r in rows]
        for rev in set(revisions):
            assert rev not in seen, f"revision {rev} in batches {seen.get(rev)} and {batch_id}"
            seen[rev] = batch_id
        last = max(revisions)
        assert len([r for r in revisions if r != last]) < 4  # no further revision once it held 4
    assert sorted(e["_revision"] for _, rows in batches for e in rows) == [e["_revision"] for e in expected]
    bulk = [rows for _, rows in batches if any(r["region"] == "bulk" for r in rows)]
    assert len(bulk) == 1 and len([r for r in bulk[0] if r["region"] == "bulk"]) == 30  # one revision > 4 rows


def test_restart_from_checkpoint_reads_only_new_events(spark: Any, tmp_path: Path) -> None:
    url = rocksdb(tmp_path / "db")
    write_history(url)
    df = stream(spark, url, startingRevision="earliest", maxRowsPerBatch="10")
    first = [e for _, rows in collect_batches(spark, df, tmp_path / "ck") for e in rows]
    assert sorted(e["_revision"] for e in first) == [e["_revision"] for e in feed(url)]
    end = max(e["_revision"] for e in first)
    write_history(url, start=1000)
    second = [e for _, rows in collect_batches(spark, df, tmp_path / "ck") for e in rows]
    assert sorted(second, key=lambda e: (e["_revision"], str(e))) == sorted(
        feed(url, since=end), key=lambda e: (e["_revision"], str(e))
    )


def test_latest_start_reads_only_later_events(spark: Any, tmp_path: Path) -> None:
    url = rocksdb(tmp_path / "db")
    write_history(url)
    with spi.connect(url) as p:
        now = p.revision()
    df = stream(spark, url)
    assert [e for _, rows in collect_batches(spark, df, tmp_path / "ck") for e in rows] == []
    write_history(url, start=1000)
    got = [e for _, rows in collect_batches(spark, df, tmp_path / "ck") for e in rows]
    assert got == feed(url, since=now)


def test_sink_replayed_batch_changes_nothing(spark: Any, tmp_path: Path) -> None:
    src, dst = rocksdb(tmp_path / "src"), rocksdb(tmp_path / "dst")
    write_history(src)
    create_target(dst)
    # Without _version every applied row bumps the version: a batch applied twice would show.
    df = stream(spark, src, startingRevision="earliest", maxRowsPerBatch="8", partitions="2").drop("_version")
    checkpoint = tmp_path / "ck"
    sink(df, dst, checkpoint)
    assert table_state(dst) == table_state(src)
    last = commits(checkpoint)[-1]
    os.remove(checkpoint / "commits" / str(last))
    os.remove(checkpoint / "commits" / f".{last}.crc")
    sink(df, dst, checkpoint)  # Spark runs batch `last` again: its chunks are recorded, so skipped
    assert table_state(dst) == table_state(src)
    write_history(src, start=500)
    sink(df, dst, checkpoint)
    assert table_state(dst) == table_state(src)


def test_sink_later_revision_wins_and_version_is_kept(spark: Any, tmp_path: Path) -> None:
    url = rocksdb(tmp_path / "db")
    with spi.connect(url) as p:
        p.admin.create(spi.TableSpec("kv", [("k", "string"), ("v", "long")], ["k"]))
    rows = [
        ("a", 1, None, 3, 7),  # k, v, _op, _revision, _version
        ("a", 2, None, 5, 9),
        ("a", 0, None, 4, 8),
        ("b", 1, None, 1, None),
        ("b", None, "delete", 2, None),
        ("c", 5, "put", 1, None),
        ("c", 6, None, 2, None),
    ]
    static = spark.createDataFrame(rows, "k string, v long, _op string, _revision long, _version long")
    source = tmp_path / "rows"
    static.coalesce(1).write.parquet(str(source))
    files = spark.readStream.schema(static.schema).parquet(str(source))
    sink(files, url, tmp_path / "ck", table="kv")  # a file stream: one batch, one partition
    assert table_state(url, "kv") == [({"k": "a", "v": 2}, 9), ({"k": "c", "v": 6}, 2)]


def test_rocksdb_to_postgres_to_rocksdb_pipeline(spark: Any, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """RocksDB's feed streamed into a change-fed PostgreSQL table, whose own feed is
    streamed on into another RocksDB table: all three end equal, versions included."""
    try:
        factory = request.getfixturevalue("pg_factory")
    except pytest.FixtureLookupError:
        need("the PostgreSQL test server", False, "no pg_factory fixture")
    src = rocksdb(tmp_path / "src")
    write_history(src)
    target = factory()
    dst = target.url
    target.admin.create(SPEC)  # change-fed: the next hop streams its feed
    target.close()
    back = rocksdb(tmp_path / "back")
    create_target(back)
    df = stream(spark, src, startingRevision="earliest", maxRowsPerBatch="20", partitions="2")
    onward = stream(spark, dst, startingRevision="earliest", maxRowsPerBatch="50", partitions="2")
    sink(df, dst, tmp_path / "ck")
    sink(onward, back, tmp_path / "ck-back")
    assert table_state(dst) == table_state(src) == table_state(back)
    write_history(src, start=300)
    sink(df, dst, tmp_path / "ck")
    sink(onward, back, tmp_path / "ck-back")
    assert table_state(dst) == table_state(src) == table_state(back)


def _error(run: Any) -> str:
    with pytest.raises(Exception) as info:
        run()
    return str(unwrap(info.value))


def test_bad_inputs_fail_with_one_clear_line(spark: Any, tmp_path: Path) -> None:
    url = rocksdb(tmp_path / "db")
    write_history(url)
    with spi.connect(url) as p:
        p.admin.create(spi.TableSpec("plain", [("id", "long")], ["id"]))
        p.table(SPEC.name).upsert({"region": "x", "id": 1})
        p.compact(5)
    read = spark.read.format("kvctl").option("url", url)
    message = _error(lambda: read.option("table", "plain").option("changes", "true").load())
    assert "kvctl table alter plain --changes" in message
    plain_stream = spark.readStream.format("kvctl").options(url=url, table=SPEC.name).load()
    message = _error(lambda: collect_batches(spark, plain_stream, tmp_path / "d"))
    assert 'option("changes", "true")' in message
    message = _error(lambda: collect_batches(spark, stream(spark, url, startingRevision="2"), tmp_path / "a"))
    assert "compacted" in message and "5" in message
    message = _error(lambda: collect_batches(spark, stream(spark, url, startingRevision="soon"), tmp_path / "b"))
    assert "startingRevision" in message
    message = _error(lambda: stream(spark, url, maxRowsPerBatch="0"))
    assert "maxRowsPerBatch" in message
    bad = stream(spark, url, startingRevision="earliest").withColumnRenamed("note", "remark")
    before = table_state(url, "plain")
    message = _error(lambda: sink(bad.drop("total", "at"), url, tmp_path / "c", table="plain"))
    assert "remark" in message and "region" in message
    assert table_state(url, "plain") == before


def test_export_changes(spark: Any, tmp_path: Path) -> None:
    url = rocksdb(tmp_path / "db")
    write_history(url)
    expected = feed(url)
    kvctl = Kvctl(url)
    since = expected[5]["_revision"]
    res = kvctl.ok("export", SPEC.name, "--out", str(tmp_path / "out"), "--changes", "--since", str(since))
    later = [e for e in expected if e["_revision"] > since]
    assert res.out.strip() == str(len(later))
    got = as_dicts(spark.read.parquet(str(tmp_path / "out")).collect())
    assert sorted(got, key=lambda e: (e["_revision"], str(e))) == sorted(later, key=lambda e: (e["_revision"], str(e)))
    with spi.connect(url) as p:
        p.compact(since + 2)
    res = kvctl("export", SPEC.name, "--out", str(tmp_path / "x"), "--changes", "--since", str(since))
    assert_one_error(res, 1)
    assert str(since + 2) in res.err
    with spi.connect(url) as p:
        p.admin.create(spi.TableSpec("plain", [("id", "long")], ["id"]))
    res = kvctl("export", "plain", "--out", str(tmp_path / "y"), "--changes")
    assert_one_error(res, 2)
    assert "kvctl table alter plain --changes" in res.err
    assert_one_error(kvctl("export", SPEC.name, "--out", str(tmp_path / "z"), "--since", "3"), 2)


def test_spark_discovery_sees_pyspark_kvctl(tmp_path: Path) -> None:
    """Spark finds Python data sources with ``pkgutil.iter_modules()`` (top-level
    ``pyspark_*`` modules on ``sys.path``), so ``format("kvctl")`` needs no register
    call wherever kvctl is installed, editable installs included."""
    import importlib.metadata
    import subprocess
    import sys

    try:
        importlib.metadata.distribution("kvctl")
    except importlib.metadata.PackageNotFoundError:
        need("an installed kvctl", False, "kvctl is not installed in this interpreter (pip install -e .)")
    code = (
        "import pkgutil, importlib\n"
        "names = [m.name for m in pkgutil.iter_modules() if m.name.startswith('pyspark_')]\n"
        "print('pyspark_kvctl' in names and importlib.import_module('pyspark_kvctl').DefaultSource.name())\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "kvctl", out.stderr

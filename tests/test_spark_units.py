"""The Spark type mapping and error unwrapping, without a Spark session (pyspark is a dev dependency)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql.types import (
    BinaryType,
    DateType,
    DecimalType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

import spi
from kvctl.spark.errors import SparkJobError, TaskError, unwrap
from kvctl.spark.types import SPARK_TYPES, field_type_of, spark_schema, spec_from_schema
from spi.arrow import arrow_schema as spi_arrow_schema

REPO = Path(__file__).resolve().parent.parent


def test_every_type_maps_both_ways() -> None:
    assert set(SPARK_TYPES) == set(spi.FieldType)
    for ftype, stype in SPARK_TYPES.items():
        assert field_type_of("c", stype) is ftype


def test_spark_and_arrow_schema_of_a_spec() -> None:
    spec = spi.TableSpec("t", [("k", "long"), ("v", "timestamp"), ("b", "bytes"), ("i", "int")], ["k"])
    schema = spark_schema(spec)
    assert schema == StructType(
        [
            StructField("k", LongType(), nullable=False),
            StructField("v", TimestampType()),
            StructField("b", BinaryType()),
            StructField("i", IntegerType()),
        ]
    )
    assert str(spi_arrow_schema(spec).field("v").type) == "timestamp[us, tz=UTC]"


def test_spi_arrow_mapping_equals_sparks_own_conversion() -> None:
    from pyspark.sql.pandas.types import to_arrow_schema

    spec = spi.TableSpec("t", [(f"c_{t.value}", t.value) for t in spi.FieldType], ["c_long"])
    assert spi_arrow_schema(spec) == to_arrow_schema(spark_schema(spec), timezone="UTC")


def test_create_spec_from_a_file_schema() -> None:
    schema = StructType([StructField("id", LongType()), StructField("name", StringType())])
    assert spec_from_schema("t", schema, ["id"]) == spi.TableSpec("t", [("id", "long"), ("name", "string")], ["id"])
    with pytest.raises(spi.InvalidFieldError, match="nope"):
        spec_from_schema("t", schema, ["nope"])
    for bad in (DateType(), DecimalType(10, 2)):
        with pytest.raises(spi.InvalidFieldError, match="'when'"):
            field_type_of("when", bad)


def test_unwrap_finds_the_spi_error_in_a_java_trace() -> None:
    inner = TaskError(spi.InvalidFieldError("column 'x' is int; got str 'a'"), "writing partition 3: ")
    trace = f"py4j.protocol.Py4JJavaError: ...\nTraceback (most recent call last):\n  ...\n{inner}\n\tat org.apache..."
    error = unwrap(Exception(trace))
    assert type(error) is spi.InvalidFieldError
    assert str(error) == "writing partition 3: column 'x' is int; got str 'a'"
    assert isinstance(unwrap(ValueError("plain")), ValueError)  # not Spark's: unchanged


def test_unwrap_summarises_other_spark_failures() -> None:
    class Py4JJavaError(Exception):
        pass

    Py4JJavaError.__module__ = "py4j.protocol"
    error = unwrap(Py4JJavaError("An error occurred\nTraceback...\nValueError: boom\n\tat org.apache..."))
    assert isinstance(error, SparkJobError) and "ValueError: boom" in str(error) and error.exit_code == 1
    missing = unwrap(Py4JJavaError("Traceback...\nModuleNotFoundError: No module named 'rocksdict'\n\tat org..."))
    assert isinstance(missing, SparkJobError) and missing.exit_code == 3  # the workers' setup, not the data
    assert "No module named 'rocksdict'" in str(missing) and "PYSPARK_PYTHON" in str(missing)


def test_the_cli_does_not_import_spark() -> None:
    code = "import sys, kvctl.cli; sys.exit(1 if {'pyspark', 'pyarrow'} & set(sys.modules) else 0)"
    subprocess.run([sys.executable, "-c", code], check=True, env={"PYTHONPATH": str(REPO)})


def test_the_source_plans_the_read_with_the_spec_schema_read(tmp_path: Path) -> None:
    import pickle

    from kvctl.spark.datasource import KvctlDataSource

    url = f"rocksdb://{tmp_path}/db"
    spec = spi.TableSpec("t", [("k", "long"), ("v", "string")], ["k"])
    with spi.connect(url) as p:
        p.admin.create(spec)
    source = KvctlDataSource({"url": url, "table": "t", "where": "v = 'x'"})
    schema = source.schema()
    planned = pickle.loads(pickle.dumps(source))  # Spark plans the read on a pickled copy
    with spi.connect(url) as p:  # the planning worker does not read the catalog again
        p.admin.drop("t")
    reader = planned.reader(schema)
    assert spi.TableSpec.from_json(reader.spec_json) == spec and reader.where == "v = 'x'"


FREEZE_PROBE = """
import gc
from kvctl.spark.workers import freeze_loaded_modules
freeze_loaded_modules()
first = gc.get_freeze_count()
made_later = [[] for _ in range(1000)]
freeze_loaded_modules()
print(first, gc.get_freeze_count() - first)
"""


@pytest.mark.parametrize(("in_worker", "frozen"), [(True, True), (False, False)])
def test_spark_workers_freeze_their_loaded_modules_once(in_worker: bool, frozen: bool) -> None:
    env = {"PYTHONPATH": str(REPO), **({"PYTHON_WORKER_FACTORY_SECRET": "s"} if in_worker else {})}
    out = subprocess.run([sys.executable, "-c", FREEZE_PROBE], env=env, capture_output=True, text=True, check=True)
    first, again = map(int, out.stdout.split())
    assert (first > 1000) is frozen  # everything imported is out of the collector's sight
    assert again == 0  # objects made later are collected as usual: never frozen by a second call


def _fed_store(tmp_path: Path) -> spi.Provider:
    """A RocksDB store whose table ``t`` recorded revisions 1..6 of 1, 1, 5, 1, 3, 1 events."""
    p = spi.connect(f"rocksdb://{tmp_path / 'db'}")
    p.admin.create(spi.TableSpec("t", [("id", "long")], ["id"], changes=True))
    t = p.table("t")
    for size in (1, 1, 5, 1, 3, 1):
        t.load([{"id": i} for i in range(size)])
    return p


def test_admission_takes_whole_revisions(tmp_path: Path) -> None:
    from kvctl.spark.stream_source import admitted_end, available_end

    with _fed_store(tmp_path) as p:
        assert p.revision() == 6
        assert admitted_end(p, "t", 0, 2, None) == 2  # 1 + 1 events: holds 2, takes no more
        assert admitted_end(p, "t", 0, 3, None) == 3  # 1 + 1 < 3, so revision 3 (5 events) joins
        assert admitted_end(p, "t", 2, 1, None) == 3  # one revision larger than N is one batch
        assert admitted_end(p, "t", 3, 100, None) == 6
        assert admitted_end(p, "t", 3, 100, 5) == 5  # AvailableNow's target bounds it
        assert admitted_end(p, "t", 6, 10, None) == 6  # nothing new: the start itself
        assert available_end(p, "t", 0, None) == 6
        assert available_end(p, "t", 6, None) == 6
        assert available_end(p, "t", 2, 4) == 4


def test_starting_revision_and_compaction(tmp_path: Path) -> None:
    from kvctl.spark.stream_source import oldest_kept, starting_revision

    with _fed_store(tmp_path) as p:
        assert starting_revision(p, "t", None, "latest") == 6
        assert starting_revision(p, "t", "earliest", "latest") == 0
        assert starting_revision(p, "t", "4", "latest") == 4
        with pytest.raises(spi.InvalidFieldError, match="startingRevision"):
            starting_revision(p, "t", "-1", "latest")
        p.compact(3)
        assert oldest_kept(p, "t") == starting_revision(p, "t", "EARLIEST", "latest") == 3
        with pytest.raises(spi.RevisionCompactedError, match="3"):
            starting_revision(p, "t", "1", "latest")


def test_change_schema_and_sink_columns() -> None:
    from kvctl.spark.stream_sink import check_input
    from kvctl.spark.stream_source import change_arrow_schema
    from kvctl.spark.types import change_schema

    spec = spi.TableSpec("t", [("id", "long"), ("v", "string")], ["id"], changes=True)
    schema = change_schema(spec)
    assert schema.fieldNames() == ["id", "v", "_revision", "_op", "_version", "_time"]
    assert [f.nullable for f in schema.fields] == [False, True, False, False, True, False]
    assert change_arrow_schema(spec).names == schema.fieldNames()
    check_input(spec, ["id", "_op", "_version", "_revision", "_time"])
    with pytest.raises(spi.InvalidFieldError, match="color"):
        check_input(spec, ["id", "color", "_op"])
    with pytest.raises(spi.InvalidFieldError, match="id"):
        check_input(spec, ["v", "_op"])
    with pytest.raises(spi.InvalidFieldError, match="_op"):
        change_schema(spi.TableSpec("u", [("id", "long"), ("_op", "string")], ["id"], changes=True))

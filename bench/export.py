"""Spark export of a PostgreSQL table to parquet: kvctl's data source vs Spark's JDBC reader.

    python bench/export.py [--rows 1000000] [--partitions N] [--url URL] [--master local[*]]
                           [--rounds 5] [--warm-ups 2]

Both read the same table with the same number of partitions (JDBC: partitionColumn
on the key, bounds 0..rows, fetchsize 10000) and write parquet in the same Spark
session. Each path first runs two full-size exports as a warm-up (the JVM compiles
the parquet writer and the readers then; after one export its compiler threads are
still busy), and the timed exports alternate between the two paths for five rounds. The target is judged on the best round of each
path, as bench/rocksdb.py does (on a shared machine the least disturbed run measures
the code); the median is printed too. The floor is pyarrow
writing the same rows (already in memory as Arrow) to parquet directly. Without
``--url`` a throwaway PostgreSQL server is started (tests/pg_server.py). Needs the
JDBC driver jar (Debian: ``apt-get install libpostgresql-jdbc-java``).
Target: kvctl at least as fast as JDBC (ratio = JDBC time / kvctl time >= 1).
Exit status: 0 the target met, 3 missed (``TARGET_MISSED``, bench/common.py), 1 a
crash or no JDBC driver or PostgreSQL.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(1, os.path.join(ROOT, "tests"))

import spi  # noqa: E402
from bench.common import TARGET_MISSED  # noqa: E402

JAR = "/usr/share/java/postgresql.jar"
ROUNDS = 5
WARM_UPS = 2
TABLE = "bench_export"
SPEC = spi.TableSpec(
    TABLE,
    [
        spi.Field("id", "long"),
        spi.Field("name", "string"),
        spi.Field("score", "double"),
        spi.Field("tag", "string"),
        spi.Field("seen", "timestamp"),
        spi.Field("active", "bool"),
    ],
    primary_key=["id"],
)
EPOCH = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


def columns(start: int, stop: int) -> dict[str, list[Any]]:
    """Rows ``start..stop`` column by column (about 100 bytes a row)."""
    ids = range(start, stop)
    return {
        "id": list(ids),
        "name": [f"user-{i:08d}-" + "x" * 50 for i in ids],
        "score": [i * 0.5 - 1000 for i in ids],
        "tag": [f"t{i % 100}" for i in ids],
        "seen": [EPOCH + dt.timedelta(seconds=i) for i in ids],
        "active": [i % 3 == 0 for i in ids],
    }


def rows(n: int, chunk: int = 50_000) -> Iterator[dict[str, Any]]:
    """The benchmark rows as dicts, generated a chunk at a time."""
    for start in range(0, n, chunk):
        cols = columns(start, min(n, start + chunk))
        names = list(cols)
        for values in zip(*cols.values()):
            yield dict(zip(names, values))


def ensure_table(url: str, n: int) -> None:
    """Create and fill the table unless it already holds ``n`` rows."""
    with spi.connect(url) as p:
        if p.admin.exists(TABLE) and p.table(TABLE).count() == n:
            return
        p.admin.drop(TABLE, missing_ok=True)
        p.admin.create(SPEC)
        start = time.perf_counter()
        p.table(TABLE).load(rows(n), batch_size=50_000)
        print(f"loaded {n:,} rows in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    analyze(url)


def analyze(url: str) -> None:
    """ANALYZE the table, as autovacuum does within a minute of a bulk load (kvctl's
    ``split`` then cuts at the statistics' key quantiles; JDBC is given its bounds)."""
    import psycopg
    from psycopg import sql

    parts = urlsplit(url)
    schema = dict(q.split("=", 1) for q in parts.query.split("&") if q).get("schema", "kvctl")
    dsn = parts._replace(scheme="postgresql", query="").geturl()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(schema, TABLE)))


def jdbc_options(url: str, n: int, partitions: int) -> dict[str, str]:
    """Spark JDBC reader options for the provider's table (same columns, key partitioning)."""
    parts = urlsplit(url)
    query = dict(q.split("=", 1) for q in parts.query.split("&") if q)
    schema = query.get("schema", "kvctl")
    cols = ", ".join(f'"{f.name}"' for f in SPEC.fields)
    opts = {
        "url": f"jdbc:postgresql://{parts.hostname}:{parts.port or 5432}{parts.path}",
        "dbtable": f'(SELECT {cols} FROM "{schema}"."{TABLE}") AS t',
        "user": parts.username or "postgres",
        "driver": "org.postgresql.Driver",
        "fetchsize": "10000",
        "partitionColumn": "id",
        "lowerBound": "0",
        "upperBound": str(n),
        "numPartitions": str(partitions),
    }
    if parts.password:
        opts["password"] = parts.password
    return opts


def timed(fn: Callable[[], object]) -> float:
    """Seconds ``fn`` takes."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    """Run the comparison and print times and ratios; exit TARGET_MISSED if the target is missed."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=None, help="default: Spark's default parallelism")
    parser.add_argument("--url", default=None, help="a postgresql+psycopg:// URL (default: a throwaway server)")
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="timed rounds of each path")
    parser.add_argument("--warm-ups", type=int, default=WARM_UPS, help="untimed full-size exports of each path first")
    args = parser.parse_args()
    if not os.path.exists(JAR):
        sys.exit(f"{JAR} is missing: apt-get install libpostgresql-jdbc-java")
    server = None
    url = args.url
    if url is None:
        from pg_server import ThrowawayPostgres, find_bindir

        bindir = find_bindir()
        if bindir is None:
            sys.exit("no PostgreSQL server binaries (run scripts/ensure-postgres.sh) and no --url")
        server = ThrowawayPostgres(bindir).start()
        url = server.url + "?schema=kvctl_bench"
    work = tempfile.mkdtemp(prefix="kvctl-bench-export-")
    try:
        ensure_table(url, args.rows)
        ok = run(url, args.rows, args.partitions, args.master, work, rounds=args.rounds, warm_ups=args.warm_ups)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if server is not None:
            server.stop()
    sys.exit(0 if ok else TARGET_MISSED)


def run(
    url: str,
    n: int,
    partitions: int | None,
    master: str,
    work: str,
    *,
    rounds: int = ROUNDS,
    warm_ups: int = WARM_UPS,
    spark: Any = None,
) -> bool:
    """The timed part: warm-up, kvctl export, JDBC export, pyarrow floor (in ``spark``,
    a session with the JDBC driver jar, or one started here); True when the target is met."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kvctl.spark.session import spark_session
    from kvctl.spark.transfer import export_table
    from spi.arrow import arrow_schema

    if spark is None:
        conf = {"spark.jars": JAR, "spark.driver.memory": "2g"}
        spark = spark_session(master, app_name="kvctl-bench-export", conf=conf)
    else:
        master = spark.sparkContext.master
    p = partitions or spark.sparkContext.defaultParallelism
    jdbc = jdbc_options(url, n, p)

    def kvctl_export(out: str) -> int:
        return export_table(spark, url, TABLE, out, partitions=p, mode="overwrite").rows

    def jdbc_export(out: str) -> None:
        spark.read.format("jdbc").options(**jdbc).load().write.mode("overwrite").parquet(out)

    # Spark's JIT compiles the parquet writer, row conversion and the readers during
    # the first full-size exports: WARM_UPS exports of each path at full size, then ROUNDS
    # alternating rounds, so neither path pays for (or profits from) the other's warm-up.
    for _ in range(warm_ups):
        kvctl_export(os.path.join(work, "warm-kvctl"))
        jdbc_export(os.path.join(work, "warm-jdbc"))
    kvctl_times: list[float] = []
    jdbc_times: list[float] = []
    for _ in range(rounds):
        kvctl_times.append(timed(lambda: kvctl_export(os.path.join(work, "kvctl"))))
        jdbc_times.append(timed(lambda: jdbc_export(os.path.join(work, "jdbc"))))
    got_kvctl = pq.read_table(os.path.join(work, "kvctl")).num_rows
    got_jdbc = pq.read_table(os.path.join(work, "jdbc")).num_rows
    assert got_kvctl == got_jdbc == n, (got_kvctl, got_jdbc, n)

    schema = arrow_schema(SPEC)
    table = pa.Table.from_pydict(columns(0, n), schema=schema)
    floor_s = timed(lambda: pq.write_table(table, os.path.join(work, "floor.parquet")))

    print(f"Spark export of {n:,} PostgreSQL rows to parquet, {p} partitions, master {master}")
    print(f"each path: {warm_ups} full-size warm-ups, then {rounds} alternating rounds (all times listed)")
    print(f"{'path':<30}{'best s':>8}{'median s':>10}{'rows/s (best)':>15}  all")
    for name, times in (("kvctl data source", kvctl_times), ("Spark JDBC reader", jdbc_times)):
        listed = " ".join(f"{t:.2f}" for t in times)
        print(f"{name:<30}{min(times):>8.2f}{statistics.median(times):>10.2f}{n / min(times):>15,.0f}  {listed}")
    print(f"{'pyarrow write_table (floor)':<30}{floor_s:>8.2f}{'':>10}{n / floor_s:>15,.0f}")
    best = min(jdbc_times) / min(kvctl_times)
    median = statistics.median(jdbc_times) / statistics.median(kvctl_times)
    verdict = "pass" if best >= 1 else "FAIL"
    print(
        f"kvctl speed vs JDBC (JDBC time / kvctl time): best {best:.2f} (target >= 1: {verdict}), median {median:.2f}"
    )
    print(f"kvctl time vs pyarrow floor: {min(kvctl_times) / floor_s:.1f}x")
    return best >= 1


if __name__ == "__main__":
    main()

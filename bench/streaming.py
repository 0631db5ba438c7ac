"""Spark streaming of a change feed into another store vs a batch export and import.

    python bench/streaming.py [--events 100000] [--per-revision 1000] [--max-rows N]
                              [--partitions N] [--master local[2]] [--rounds 2]

A RocksDB table with a change feed gets ``--events`` puts of distinct keys, in
transactions of ``--per-revision`` rows. Two ways then bring those rows into an
empty table of another RocksDB store, in one Spark session (its start-up is not
timed): the stream (``readStream.format("kvctl")`` with ``changes=true``,
``startingRevision=earliest``, ``Trigger.AvailableNow``, into the kvctl streaming
sink, exactly once) and the batch path (``kvctl export`` of the table to parquet,
then ``kvctl import`` of the files: :func:`kvctl.spark.transfer.export_table` and
:func:`~kvctl.spark.transfer.import_table`). Each round runs both into fresh
destinations; the best round of each is judged (a shared machine disturbs some
runs), after one untimed warm-up run of each (the JVM compiles the paths then). Both destinations must end equal to the source. Target: the stream takes at
most twice the batch path's time. Exit 3 on a miss (``TARGET_MISSED``,
bench/common.py); 1 on a crash or a destination that differs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import spi  # noqa: E402
from bench.common import TARGET_MISSED  # noqa: E402

TARGET = 2.0
"""The stream may take at most this many times the batch path's time."""
SPEC = spi.TableSpec(
    "events",
    [("id", "long"), ("name", "string"), ("score", "double"), ("at", "timestamp")],
    primary_key=["id"],
    changes=True,
)


def fill(url: str, events: int, per_revision: int) -> None:
    """The source table: ``events`` puts of distinct keys, ``per_revision`` a transaction."""
    import datetime as dt

    at = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    with spi.connect(url) as p:
        p.admin.create(SPEC)
        t = p.table(SPEC.name)
        for first in range(0, events, per_revision):
            ids = range(first, min(events, first + per_revision))
            t.load([{"id": i, "name": f"name {i}", "score": i / 3, "at": at} for i in ids])


def state(url: str) -> list[tuple[dict[str, object], int]]:
    """A table's rows and versions."""
    with spi.connect(url) as p:
        return [(r.to_dict(), r.version) for r in p.table(SPEC.name).scan()]


def empty_store(path: str) -> str:
    """A new RocksDB store at ``path`` holding an empty ``events`` table (no feed)."""
    shutil.rmtree(path, ignore_errors=True)
    url = f"rocksdb://{path}"
    with spi.connect(url) as p:
        p.admin.create(spi.TableSpec(SPEC.name, SPEC.fields, SPEC.primary_key))
    return url


def timed(fn: Callable[[str, str], object], dst: str, scratch: str) -> float:
    """Seconds ``fn(dst, scratch)`` takes."""
    start = time.perf_counter()
    fn(dst, scratch)
    return time.perf_counter() - start


def main() -> None:
    """Run the benchmark; exit TARGET_MISSED when the stream misses the target."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--per-revision", type=int, default=1000)
    parser.add_argument("--max-rows", type=int, default=None, help="maxRowsPerBatch (default: none)")
    parser.add_argument("--partitions", type=int, default=1, help="stream read tasks (key-hash buckets)")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warm-ups", type=int, default=1, help="untimed runs of each path first")
    args = parser.parse_args()

    from kvctl.spark.session import spark_session
    from kvctl.spark.transfer import export_table, import_table

    work = tempfile.mkdtemp(prefix="kvctl-bench-streaming-")
    try:
        source = f"rocksdb://{work}/source"
        fill(source, args.events, args.per_revision)
        expected = state(source)
        spark = spark_session(args.master, app_name="kvctl-bench-streaming", quiet=True)

        def stream(dst: str, checkpoint: str) -> None:
            reader = spark.readStream.format("kvctl").options(
                url=source, table=SPEC.name, changes="true", startingRevision="earliest"
            )
            reader = reader.option("partitions", str(args.partitions))
            if args.max_rows:
                reader = reader.option("maxRowsPerBatch", str(args.max_rows))
            query = (
                reader.load()
                .writeStream.format("kvctl")
                .options(url=dst, table=SPEC.name, checkpointLocation=checkpoint)
                .trigger(availableNow=True)
                .start()
            )
            query.awaitTermination()

        def batch(dst: str, files: str) -> None:
            export_table(spark, source, SPEC.name, files, partitions=args.partitions)
            import_table(spark, dst, SPEC.name, files)

        streams: list[float] = []
        batches: list[float] = []
        for round_ in range(-args.warm_ups, args.rounds):
            dst = empty_store(f"{work}/stream-{round_}")
            took_stream = timed(stream, dst, f"{work}/checkpoint-{round_}")
            if state(dst) != expected:
                sys.exit("the stream's destination differs from the source")
            dst = empty_store(f"{work}/batch-{round_}")
            took_batch = timed(batch, dst, f"{work}/files-{round_}")
            if [row for row, _ in state(dst)] != [row for row, _ in expected]:
                sys.exit("the batch path's destination differs from the source")
            what = "warm-up" if round_ < 0 else f"round {round_ + 1}"
            print(f"{what}: stream {took_stream:.2f} s, export + import {took_batch:.2f} s")
            if round_ >= 0:
                streams.append(took_stream)
                batches.append(took_batch)
        best_stream, best_batch = min(streams), min(batches)
        ratio = best_stream / best_batch
        ok = ratio <= TARGET
        print(
            f"{args.events:,} events: stream {best_stream:.2f} s ({args.events / best_stream:,.0f} events/s), "
            f"export + import {best_batch:.2f} s ({args.events / best_batch:,.0f} rows/s); "
            f"ratio {ratio:.2f} (target <= {TARGET:g}): {'pass' if ok else 'FAIL'}"
        )
        spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(0 if ok else TARGET_MISSED)


if __name__ == "__main__":
    main()

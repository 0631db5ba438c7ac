"""A streaming driver in a process of its own: a kvctl table's change feed into the
kvctl sink (CLI.md "Spark streaming"), for the tests that run a query apart from the
test process (a standalone cluster, a SIGKILLed driver).

    python tests/spark_stream_driver.py MASTER SRC_URL DST_URL TABLE CHECKPOINT
        [--max-rows N] [--partitions N] [--drop-version]

Runs with ``Trigger.AvailableNow`` from the oldest kept revision (or from where the
checkpoint left off) until every event is applied, then prints ``done``.
``--drop-version`` leaves ``_version`` out of the sink's input, so every applied
row bumps the target's version: an event applied twice would show.
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str]) -> int:
    """Run the query described by ``argv``; 0 when it ended."""
    parser = argparse.ArgumentParser(description=__doc__)
    for name in ("master", "src", "dst", "table", "checkpoint"):
        parser.add_argument(name)
    parser.add_argument("--max-rows", default=None)
    parser.add_argument("--partitions", default="2")
    parser.add_argument("--drop-version", action="store_true")
    args = parser.parse_args(argv)

    from kvctl.spark.session import spark_session

    spark = spark_session(args.master, app_name="kvctl-stream-driver", conf={"spark.sql.shuffle.partitions": "2"})
    reader = spark.readStream.format("kvctl").options(
        url=args.src, table=args.table, changes="true", startingRevision="earliest", partitions=args.partitions
    )
    if args.max_rows is not None:
        reader = reader.option("maxRowsPerBatch", args.max_rows)
    events = reader.load()
    if args.drop_version:
        events = events.drop("_version")
    writer = events.writeStream.format("kvctl").options(url=args.dst, table=args.table)
    query = writer.option("checkpointLocation", args.checkpoint).trigger(availableNow=True).start()
    print("started", query.id, flush=True)
    query.awaitTermination()
    print("done", flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

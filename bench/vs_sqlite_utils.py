"""kvctl on RocksDB against sqlite-utils on SQLite, as whole processes (issue 14).

    python bench/vs_sqlite_utils.py [--rows 200000] [--runs 5] [--dir DIR]

sqlite-utils is the tool a user would pick instead for an embedded table on disk. Both
get the same table of ``--rows`` rows of about 100 bytes (``id`` long key, ``g`` long
indexed with 100 distinct values, ``g2`` an unindexed copy of ``g``, ``name``,
``amount`` double, ``pad`` 60 random hex characters), loaded from the same CSV file,
and run each job as the installed console scripts (bench/processes.py), one fresh
process each (so each reopens its store cold, with the OS page cache warm for both):

- bulk CSV load with an index on ``g`` (fresh store each run): ``kvctl table create
  --index g`` + ``kvctl put --file`` against ``sqlite-utils insert --csv --pk id`` +
  ``sqlite-utils create-index``; each side's two processes are timed together;
- point get of one row by key: ``kvctl get`` against ``sqlite-utils query`` with
  ``where id = :id``;
- indexed 1% filter ``g = 5``, count, full scan to NDJSON, unindexed filter
  ``g2 = 5``, full scan to CSV: ``kvctl scan/count`` against ``sqlite-utils
  query``/``rows``.

Output goes to /dev/null. Before timing, one run of each job on each side is captured
and compared: the same rows (NDJSON, the get), the same count, the same number of CSV
lines; a difference stops the benchmark. Each job then runs ``--runs`` times on each
side, the sides taking turns (which one goes first alternates), and the median counts.
Ratio = sqlite-utils time / kvctl time (above 1: kvctl is faster). Targets: at least 1
on every job, 1.5 on the two full scans, judged on wall time. The CPU time (user +
system, of the processes) is printed too: on a busy machine it moves less than the
wall time. Exits 3 when a target is missed (``TARGET_MISSED``, bench/common.py); 1
when a command fails, the answers differ or the bench crashes.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import TARGET_MISSED
from bench.processes import Timing, Verdict, median, output, run, script

FIELDS = ["id:long", "g:long", "g2:long", "name:string", "amount:double", "pad:string"]
TABLE = "t"


@dataclass
class Side:
    """One tool's way of doing a job: the commands timed together, what to do before
    each run, and how to read the answer from the last command's output."""

    commands: list[list[str]]
    answer: Callable[[bytes], Any]
    reset: Callable[[], None] = lambda: None
    times: list[Timing] = field(default_factory=list)

    def check(self) -> Any:
        """One untimed run, output captured: the answer (also the warm-up of the caches)."""
        self.reset()
        for argv in self.commands[:-1]:
            run(argv)
        return self.answer(output(self.commands[-1]))

    def time(self) -> None:
        """Reset, then run the commands (output to /dev/null) and record their total wall time."""
        self.reset()
        total = Timing(0.0, 0.0)
        for argv in self.commands:
            total += run(argv)
        self.times.append(total)


@dataclass
class Job:
    """One job on both sides and its target ratio (sqlite-utils time / kvctl time)."""

    name: str
    kvctl: Side
    sqlite: Side
    target: float

    def ratios(self) -> Timing:
        """How many times faster kvctl is (sqlite-utils / kvctl): by median wall time and by median CPU time."""
        kv, su = median(self.kvctl.times), median(self.sqlite.times)
        return Timing(su.wall / kv.wall, su.cpu / kv.cpu)


def write_csv(path: str, n: int) -> None:
    """The benchmark rows as CSV (about 100 bytes a row)."""
    rng = random.Random(14)
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["id", "g", "g2", "name", "amount", "pad"])
        for i in range(n):
            g = i % 100
            out.writerow([i, g, g, f"name-{i:08d}", round(rng.uniform(0, 10_000), 2), rng.randbytes(30).hex()])


def ndjson_rows(data: bytes) -> list[dict[str, Any]]:
    """Rows printed one JSON object a line, in key order."""
    return sorted((json.loads(line) for line in data.splitlines() if line), key=lambda row: row["id"])


def bare_count(data: bytes) -> int:
    """A count printed as a bare number (kvctl)."""
    return int(data)


def query_count(data: bytes) -> int:
    """The count printed by ``sqlite-utils query "select count(*) ..."``: ``[{"count(*)": N}]``."""
    (row,) = json.loads(data)
    return int(next(iter(row.values())))


def csv_shape(data: bytes) -> tuple[bytes, int]:
    """A CSV output's header line and number of data lines."""
    lines = data.splitlines()
    return lines[0], len(lines) - 1


def fresh(path: str) -> Callable[[], None]:
    """A reset that removes the store at ``path`` (a directory or a file)."""

    def reset() -> None:
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.remove(path)

    return reset


def jobs(tmp: str, data: str, rows: int) -> list[Job]:
    """The benchmark jobs over stores in ``tmp``, loaded from the CSV file ``data``."""
    kv, su = script("kvctl"), script("sqlite-utils")
    store, db = os.path.join(tmp, "kvctl-store"), os.path.join(tmp, "sqlite.db")
    k = [*kv, "--url", f"rocksdb://{store}"]
    create = [*k, "table", "create", TABLE, "--pk", "id", "--index", "g", *(w for f in FIELDS for w in ("--field", f))]
    count = [*su, "query", db, f"select count(*) from {TABLE}"]

    def kvctl(*args: str, answer: Callable[[bytes], Any] = ndjson_rows) -> Side:
        return Side([[*k, *args]], answer)

    def query(sql: str, *args: str, answer: Callable[[bytes], Any] = ndjson_rows) -> Side:
        return Side([[*su, "query", db, sql, *args]], answer)

    key = str(rows // 2)
    load_kvctl = Side([create, [*k, "put", TABLE, "--file", data]], bare_count, fresh(store))
    insert = [*su, "insert", db, TABLE, data, "--csv", "--pk", "id"]
    load_sqlite = Side([insert, [*su, "create-index", db, TABLE, "g"]], lambda _: query_count(output(count)), fresh(db))
    return [
        Job("bulk CSV load + index", load_kvctl, load_sqlite, 1.0),
        Job(
            "cold point get",
            kvctl("get", TABLE, f"id={key}"),
            query(f"select * from {TABLE} where id = :id", "-p", "id", key, "--nl"),
            1.0,
        ),
        Job(
            "indexed 1% filter",
            kvctl("scan", TABLE, "--where", "g = 5", "--all", "-o", "ndjson"),
            query(f"select * from {TABLE} where g = 5", "--nl"),
            1.0,
        ),
        Job("count", kvctl("count", TABLE, answer=bare_count), Side([count], query_count), 1.0),
        Job(
            "full scan to NDJSON",
            kvctl("scan", TABLE, "--all", "-o", "ndjson"),
            Side([[*su, "rows", db, TABLE, "--nl"]], ndjson_rows),
            1.5,
        ),
        Job(
            "unindexed 1% filter",
            kvctl("scan", TABLE, "--where", "g2 = 5", "--all", "-o", "ndjson"),
            query(f"select * from {TABLE} where g2 = 5", "--nl"),
            1.0,
        ),
        Job(
            "full scan to CSV",
            kvctl("scan", TABLE, "--all", "-o", "csv", answer=csv_shape),
            Side([[*su, "rows", db, TABLE, "--csv"]], csv_shape),
            1.5,
        ),
    ]


def rows_of(answer: Any) -> int:
    """How many rows an answer holds (a count is the rows counted)."""
    if isinstance(answer, list):
        return len(answer)
    if isinstance(answer, tuple):
        return int(answer[1])
    return int(answer)


def measure(job: Job, runs: int) -> int:
    """Check that both sides give the same answer, then time ``runs`` rounds; returns the rows of the answer."""
    kv_answer, sqlite_answer = job.kvctl.check(), job.sqlite.check()
    if kv_answer != sqlite_answer:
        raise SystemExit(
            f"error: {job.name}: kvctl and sqlite-utils differ: {kv_answer!s:.300} vs {sqlite_answer!s:.300}"
        )
    for i in range(runs):
        for side in (job.kvctl, job.sqlite) if i % 2 == 0 else (job.sqlite, job.kvctl):
            side.time()
    return rows_of(kv_answer)


def main() -> None:
    """Measure, print the table and exit TARGET_MISSED on a missed target."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000, help="rows in the table (default 200000)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs of each job on each side (default 5)")
    parser.add_argument("--dir", help="where the stores go (default: a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kvctl-bench-sqlite-", dir=args.dir) as tmp:
        data = os.path.join(tmp, "rows.csv")
        write_csv(data, args.rows)
        size = os.path.getsize(data)
        print(f"kvctl (RocksDB) vs sqlite-utils (SQLite), {args.rows:,} rows ({size / args.rows:.0f} bytes a CSV row)")
        print(f"whole processes, median of {args.runs} runs each; ratio = sqlite-utils time / kvctl time")
        print(f"{'':<33}{'wall ms':^31}{'':<17}{'CPU ms (user + sys)':^31}".rstrip())
        print(f"{'job':<24}{'rows':>9}{'kvctl':>10}{'sqlite-utils':>14}{'ratio':>7}{'target':>9}  result", end="")
        print(f"{'kvctl':>10}{'sqlite-utils':>14}{'ratio':>7}")
        ok = True
        for job in jobs(tmp, data, args.rows):
            rows = measure(job, args.runs)
            ratios = job.ratios()
            verdict = Verdict(job.name, ratios.wall, job.target, at_most=False)
            ok = ok and verdict.passed
            kv, su = median(job.kvctl.times), median(job.sqlite.times)
            print(
                f"{job.name:<24}{rows:>9,}{kv.wall * 1000:>10.0f}{su.wall * 1000:>14.0f}{ratios.wall:>7.2f}"
                f"{verdict.target_text:>9}  {verdict.result_text:<6}"
                f"{kv.cpu * 1000:>10.0f}{su.cpu * 1000:>14.0f}{ratios.cpu:>7.2f}",
                flush=True,
            )
    sys.exit(0 if ok else TARGET_MISSED)


if __name__ == "__main__":
    main()

"""``kvctl put T --file flights.csv`` against ``psql \\copy`` of the same file (issue 23).

    python bench/put_file.py [--rows 200000] [--runs 3] [--dir DIR]

Writes a flights-like CSV (the 19 columns of nycflights13's ``flights``; key
``(year, month, day, carrier, flight)`` made unique; rows in departure order, as the
original), then times whole processes, taking turns in each round:

- ``kvctl put flights --file flights.csv`` into a fresh RocksDB store;
- the same into a throwaway PostgreSQL server (tests/pg_server.py), the table made by
  ``kvctl table create`` first (untimed), in a fresh schema each run;
- ``psql -c "\\copy ..."`` of the file into an identical plain table in the same server
  (same columns and types, primary key, the two indexes, and the ``kv_version``/
  ``kv_expires`` columns with the expiry's partial index of providers/postgres/schema.py).

Each table has indexes on ``origin`` and ``dest``. Prints the median wall time of each
(``--runs``, default 3) and the ratios psql time / kvctl time; exits 3 when a ratio
is under the target (0.8, issue 36) (``TARGET_MISSED``, bench/common.py), 2 when a command
failed or there is no server, 1 on a crash.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import subprocess
import sys
import tempfile
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

from bench.common import TARGET_MISSED  # noqa: E402
from bench.processes import Timing, Verdict, median, run, script  # noqa: E402

TARGET = 0.8
"""Minimum psql time / kvctl time."""

COLUMNS: list[tuple[str, str, str]] = [  # (name, kvctl type, PostgreSQL type)
    ("year", "int", "integer"),
    ("month", "int", "integer"),
    ("day", "int", "integer"),
    ("dep_time", "int", "integer"),
    ("sched_dep_time", "int", "integer"),
    ("dep_delay", "double", "double precision"),
    ("arr_time", "int", "integer"),
    ("sched_arr_time", "int", "integer"),
    ("arr_delay", "double", "double precision"),
    ("carrier", "string", 'text COLLATE "C"'),
    ("flight", "int", "integer"),
    ("tailnum", "string", 'text COLLATE "C"'),
    ("origin", "string", 'text COLLATE "C"'),
    ("dest", "string", 'text COLLATE "C"'),
    ("air_time", "double", "double precision"),
    ("distance", "double", "double precision"),
    ("hour", "int", "integer"),
    ("minute", "int", "integer"),
    ("time_hour", "timestamp", "timestamptz"),
]
KEY = ["year", "month", "day", "carrier", "flight"]
INDEXES = ["origin", "dest"]
CARRIERS = ["9E", "AA", "AS", "B6", "DL", "EV", "F9", "FL", "HA", "MQ", "OO", "UA", "US", "VX", "WN", "YV"]
ORIGINS = ["EWR", "JFK", "LGA"]
DESTS = [
    "ATL", "BOS", "BWI", "CLT", "DCA", "DEN", "DFW", "DTW", "FLL", "IAD", "IAH", "LAS", "LAX", "MCO", "MIA",
    "MSP", "ORD", "PHL", "PIT", "RDU", "SEA", "SFO", "SJU", "STL", "TPA", "XNA", "MSY", "PBI", "CLE", "CVG",
]  # fmt: skip


def write_flights(path: str, n: int) -> None:
    """Write ``n`` flights-like rows as CSV to ``path`` (nulls as empty fields, as
    ``write.csv(na = "")`` writes them), in departure order."""
    rng = random.Random(23)
    days = [dt.date(2013, 1, 1) + dt.timedelta(days=d) for d in range(365)]
    per_day = -(-n // len(days))
    pairs = [(c, f) for c in CARRIERS for f in range(1, 1 + -(-per_day // len(CARRIERS)) * 2)]
    with open(path, "w", newline="") as out:
        out.write(",".join(name for name, _, _ in COLUMNS) + "\n")
        written = 0
        for day in days:
            count = min(per_day, n - written)
            if count <= 0:
                break
            flights = sorted(rng.sample(pairs, count), key=lambda _: rng.random())
            scheduled = sorted(rng.randrange(500, 2359) for _ in range(count))
            for (carrier, flight), sched in zip(flights, scheduled):
                hour, minute = divmod(sched, 100)
                minute %= 60
                sched = hour * 100 + minute
                cancelled = rng.random() < 0.03
                delay = rng.randint(-15, 120)
                dep = "" if cancelled else str((hour * 60 + minute + delay) // 60 % 24 * 100 + (minute + delay) % 60)
                air = "" if cancelled else f"{rng.randint(30, 600)}.0"
                arr_sched = (sched + rng.randint(100, 500)) % 2400
                fields = [
                    day.year, day.month, day.day, dep, sched, "" if cancelled else f"{delay}.0",
                    "" if cancelled else arr_sched, arr_sched, "" if cancelled else f"{delay + rng.randint(-20, 20)}.0",
                    carrier, flight, f"N{rng.randint(100, 999)}{rng.choice('ABCDEFGHJK')}{rng.choice('AUJ')}",
                    rng.choice(ORIGINS), rng.choice(DESTS), air, f"{rng.randint(80, 4983)}.0", hour, minute,
                    f"{day.isoformat()}T{hour:02d}:00:00Z",
                ]  # fmt: skip
                out.write(",".join(map(str, fields)) + "\n")
                written += 1


def raw_ddl(schema: str) -> str:
    """The plain table psql copies into, shaped as the provider makes ``flights``."""
    q = f'"{schema}"'
    columns = ", ".join(f'"{c}" {t}{" NOT NULL" if c in KEY else ""}' for c, _, t in COLUMNS)
    key = ", ".join(KEY)
    return (
        f"CREATE SCHEMA {q}; CREATE TABLE {q}.raw_flights ({columns}, kv_version bigint NOT NULL DEFAULT 1,"
        f" kv_expires timestamptz, PRIMARY KEY ({key}));"
        + "".join(f" CREATE INDEX ON {q}.raw_flights ({c} NULLS FIRST, {key});" for c in INDEXES)
        + f" CREATE INDEX ON {q}.raw_flights (kv_expires) WHERE kv_expires IS NOT NULL;"
    )


def measure(data: str, tmp: str, runs: int, pg_url: str, psql: list[str]) -> dict[str, Timing]:
    """Median wall and CPU time of each side over ``runs`` rounds (sides take turns)."""
    kvctl = script("kvctl")
    fields = [w for c, t, _ in COLUMNS for w in ("--field", f"{c}:{t}")]
    create = [
        "table",
        "create",
        "flights",
        *fields,
        "--pk",
        ",".join(KEY),
        *(w for c in INDEXES for w in ("--index", c)),
    ]
    put = ["put", "flights", "--file", data]
    copy = f"\\copy raw_flights ({', '.join(c for c, _, _ in COLUMNS)}) FROM '{data}' WITH (FORMAT csv, HEADER true)"
    times: dict[str, list[Timing]] = {
        "kvctl put --file (rocksdb)": [],
        "kvctl put --file (postgres)": [],
        "psql \\copy": [],
    }
    for i in range(runs):
        rocks = f"rocksdb://{tmp}/db{i}"
        run([*kvctl, "--url", rocks, *create])
        times["kvctl put --file (rocksdb)"].append(run([*kvctl, "--url", rocks, *put]))
        schema = f"bench_{uuid.uuid4().hex[:8]}"
        pg = f"{pg_url}?schema={schema}"
        run([*kvctl, "--url", pg, *create])
        times["kvctl put --file (postgres)"].append(run([*kvctl, "--url", pg, *put]))
        raw = f"raw_{uuid.uuid4().hex[:8]}"
        run([*psql, "-c", raw_ddl(raw)])
        times["psql \\copy"].append(run([*psql, "-c", f"SET search_path TO {raw}", "-c", copy]))
    return {name: median(values) for name, values in times.items()}


def main(argv: list[str] | None = None) -> int:
    """Generate, measure, print; exit TARGET_MISSED on a missed target."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000, help="rows in flights.csv (default 200,000)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs of each side (default 3)")
    parser.add_argument("--dir", help="where the CSV and the RocksDB stores go (default: a temp dir)")
    args = parser.parse_args(argv)
    from pg_server import ThrowawayPostgres, find_bindir

    bindir = find_bindir()
    if bindir is None:
        print("error: no PostgreSQL server binaries found (psql, initdb, pg_ctl)", file=sys.stderr)
        return 2
    server = ThrowawayPostgres(bindir).start()
    try:
        with tempfile.TemporaryDirectory(prefix="kvctl-bench-put-", dir=args.dir) as tmp:
            data = os.path.join(tmp, "flights.csv")
            write_flights(data, args.rows)
            os.chmod(tmp, 0o755)  # psql may run as another user
            os.chmod(data, 0o644)
            psql = [server.bin("psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", server.dsn]
            medians = measure(data, tmp, args.runs, server.url, psql)
    except (SystemExit, subprocess.SubprocessError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        server.stop()
    base = medians["psql \\copy"]
    print(f"flights.csv, {args.rows:,} rows x {len(COLUMNS)} columns; whole processes, median of {args.runs}")
    print(f"{'command':<30}{'wall s':>8}{'CPU s':>8}{'ratio':>8}{'target':>8}  result")
    ok = True
    for name, timing in medians.items():
        line = f"{name:<30}{timing.wall:>8.2f}{timing.cpu:>8.2f}"
        if name != "psql \\copy":
            verdict = Verdict(name, base.wall / timing.wall, TARGET, at_most=False)
            ok = ok and verdict.passed
            line += f"{verdict.value:>8.2f}{verdict.target_text:>8}  {verdict.result_text}"
        print(line)
    return 0 if ok else TARGET_MISSED


if __name__ == "__main__":
    sys.exit(main())

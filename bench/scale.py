"""Flat cost at scale (issue 40): the same commands at a small and a large size, each a
whole ``kvctl`` process, with its wall time and peak RSS.

    python bench/scale.py [--small 1000000] [--large 10000000] [--dir DIR] [--providers rocksdb,postgres]

For each provider (RocksDB in a temp folder; PostgreSQL on a throwaway server,
tests/pg_server.py) and each size, on a 5-column table with one index
(``id`` long key, ``region``/``status`` strings, ``total`` double, ``created``
timestamp; index on ``status``):

- ``put T --file rows.csv`` into the new table;
- ``scan T --all -o ndjson`` to /dev/null;
- ``count T --group-by status``;
- ``copy SRC DST T`` into a new store of the same provider;
- ``delete T --all --yes``.

Peak RSS is the process's own (``wait4``'s ``ru_maxrss``). Targets at the large
size: peak RSS ≤ 500 MB and ≤ 1.5 times the small size's; rows/s ≥ 0.75 of the small
size's; on RocksDB ``delete --all`` ≤ 0.2 of the time of the load. Exits 3 when a
target is missed (``TARGET_MISSED``), 2 when a command fails or there is no server.
The defaults are the issue's sizes (an hour here); the test suite's smoke run passes
tiny ones.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

from bench.common import TARGET_MISSED  # noqa: E402
from bench.processes import ENV, script  # noqa: E402

MAX_RSS_MB = 500
RSS_GROWTH = 1.5
RATE_KEPT = 0.75
DELETE_OF_LOAD = 0.2
COMMANDS = ("put --file", "scan --all", "count --group-by", "copy", "delete --all")


@dataclass(frozen=True)
class Run:
    """One process: wall seconds and peak RSS in MB."""

    seconds: float
    rss_mb: float


def measure(argv: list[str]) -> Run:
    """Run ``argv`` (a whole process, output discarded) and return its time and peak RSS."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
    assert proc.stderr is not None
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace").strip()
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"error: {' '.join(argv)} exited {proc.returncode}: {err}")
    return Run(seconds, usage.ru_maxrss / 1024)


def write_rows(path: str, n: int) -> None:
    """A CSV of ``n`` rows of the bench table."""
    rnd = random.Random(7)
    start = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    statuses = ["open", "paid", "shipped", "cancelled", "returned"]
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["id", "region", "status", "total", "created"])
        for i in range(n):
            created = start + dt.timedelta(seconds=i)
            out.writerow(
                [i, f"r{rnd.randrange(40)}", statuses[i % 5], round(rnd.random() * 1000, 2), created.isoformat()]
            )


def commands(kvctl: list[str], url: str, copy_url: str, data: str) -> list[tuple[str, list[str]]]:
    """Each command of :data:`COMMANDS` on the store ``url``."""
    return [
        ("put --file", [*kvctl, "--url", url, "put", "t", "--file", data]),
        ("scan --all", [*kvctl, "--url", url, "-o", "ndjson", "scan", "t", "--all"]),
        ("count --group-by", [*kvctl, "--url", url, "count", "t", "--group-by", "status"]),
        ("copy", [*kvctl, "copy", url, copy_url, "t"]),
        ("delete --all", [*kvctl, "--url", url, "delete", "t", "--all", "--yes"]),
    ]


def run_size(kvctl: list[str], url: str, copy_url: str, data: str) -> dict[str, Run]:
    """Create the table at ``url`` and run every command once."""
    create = [*kvctl, "--url", url, "table", "create", "t"]
    fields = ["id:long", "region:string", "status:string", "total:double", "created:timestamp"]
    measure([*create, *(a for f in fields for a in ("--field", f)), "--pk", "id", "--index", "status"])
    return {name: measure(argv) for name, argv in commands(kvctl, url, copy_url, data)}


def judge(provider: str, small: int, large: int, runs: dict[int, dict[str, Run]]) -> bool:
    """Print the table of one provider and whether every target is met."""
    ok = True
    print(f"\n{provider}: {small:,} and {large:,} rows")
    print(f"{'command':<18}{'s small':>9}{'s large':>9}{'rows/s kept':>13}{'MB small':>10}{'MB large':>10}  result")
    for name in COMMANDS:
        a, b = runs[small][name], runs[large][name]
        kept = (large / b.seconds) / (small / a.seconds)
        checks = [kept >= RATE_KEPT, b.rss_mb <= MAX_RSS_MB, b.rss_mb <= RSS_GROWTH * a.rss_mb]
        if name == "delete --all" and provider == "rocksdb":
            checks.append(b.seconds <= DELETE_OF_LOAD * runs[large]["put --file"].seconds)
        verdict = "pass" if all(checks) else "FAIL"
        ok = ok and verdict == "pass"
        print(f"{name:<18}{a.seconds:>9.2f}{b.seconds:>9.2f}{kept:>13.2f}{a.rss_mb:>10.0f}{b.rss_mb:>10.0f}  {verdict}")
    return ok


def _stores(provider: str, folder: str, server_url: str | None) -> Callable[[str], str]:
    """A function naming a new, empty store of ``provider`` per name."""
    if provider == "rocksdb":
        return lambda name: f"rocksdb://{os.path.join(folder, name)}"
    assert server_url is not None
    join = "&" if "?" in server_url else "?"
    return lambda name: f"{server_url}{join}schema=s{uuid.uuid4().hex[:10]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=1_000_000)
    parser.add_argument("--large", type=int, default=10_000_000)
    parser.add_argument("--dir", default=None, help="where the data files and RocksDB stores go")
    parser.add_argument("--providers", default="rocksdb,postgres")
    args = parser.parse_args(argv)
    kvctl = script("kvctl")
    providers = args.providers.split(",")
    ok = True
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="kvctl-scale-") as tmp:
        data = {n: os.path.join(tmp, f"rows{n}.csv") for n in (args.small, args.large)}
        for n, path in data.items():
            write_rows(path, n)
        server = None
        if "postgres" in providers:
            from pg_server import ThrowawayPostgres, find_bindir

            bindir = find_bindir()
            if bindir is None:
                print("error: no PostgreSQL server binaries (install postgresql)", file=sys.stderr)
                return 2
            server = ThrowawayPostgres(bindir).start()
        try:
            for provider in providers:
                store = _stores(provider, tmp, None if server is None else server.url)
                runs = {n: run_size(kvctl, store(f"a{n}"), store(f"b{n}"), path) for n, path in data.items()}
                ok = judge(provider, args.small, args.large, runs) and ok
        finally:
            if server is not None:
                server.stop()
    return 0 if ok else TARGET_MISSED


if __name__ == "__main__":
    sys.exit(main())

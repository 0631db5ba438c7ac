"""``kvctl diff`` against the naive way, and what it sends to the client (issue 37).

    python bench/diff.py [--rows 200000] [--full] [--url POSTGRES_URL]

One table (a long key, a long, a 36-character string, a double, a timestamp), loaded
into a RocksDB store and two PostgreSQL schemas with the same rows and versions. Whole
``kvctl`` processes, as a user runs them:

- **equal, RocksDB vs PostgreSQL**: ``kvctl diff ROCKS PG big --summary`` against the
  naive way, ``kvctl scan big --all`` of each side into a file and ``cmp`` of the two
  files (the fastest comparison there is: equal tables print equal lines). Target:
  diff at least 2x faster.
- **10 scattered differences** (updated on the PostgreSQL side): ``kvctl diff`` finds
  exactly those 10 rows, in at most 1.5x the equal case's time.
- **PostgreSQL vs PostgreSQL**: the rows the comparison reads into the client
  (``spi.diff`` stats, in this process) for the equal tables and with the 10
  differences. Target: at most 5% of the table.

``--full`` uses 1,000,000 rows. Without ``--url`` a throwaway PostgreSQL server is
started (tests/pg_server.py). Exit status: 0 every target met, 3 a target missed
(``TARGET_MISSED``, bench/common.py), 2 an error, 1 a crash.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import spi  # noqa: E402
from bench.common import TARGET_MISSED  # noqa: E402
from spi.diff import compare  # noqa: E402

SPEC = spi.TableSpec(
    "big",
    [
        spi.Field("id", "long"),
        spi.Field("g", "long"),
        spi.Field("pad", "string"),
        spi.Field("x", "double"),
        spi.Field("ts", "timestamp"),
    ],
    ["id"],
)
EPOCH = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
EDITS = 10


def rows(n: int) -> object:
    """The table's ``n`` rows."""
    return (
        {"id": i, "g": i % 100, "pad": f"{i:012d}" * 3, "x": i * 0.25, "ts": EPOCH + dt.timedelta(seconds=i)}
        for i in range(n)
    )


def fill(url: str, n: int) -> None:
    """Create the table at ``url`` and load its rows."""
    with spi.connect(url) as p:
        p.admin.create(SPEC)
        p.table("big").load(rows(n), batch_size=20_000)


def kvctl(*args: str, out: Path | None = None) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Run ``kvctl ARGS`` (stdout to ``out`` if given): seconds and the result."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    if out is None:
        done = subprocess.run([sys.executable, "-m", "kvctl", *args], capture_output=True, text=True, env=env)
    else:
        with out.open("w") as sink:
            done = subprocess.run(
                [sys.executable, "-m", "kvctl", *args], stdout=sink, stderr=subprocess.PIPE, text=True, env=env
            )
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise RuntimeError(f"kvctl {' '.join(args)} exited {done.returncode}: {done.stderr}")
    return seconds, done


def naive(rocks: str, pg: str, folder: Path) -> tuple[float, bool]:
    """``kvctl scan --all`` of both sides into files, then ``cmp``: seconds, equal."""
    a, b = folder / "a.ndjson", folder / "b.ndjson"
    start = time.perf_counter()
    kvctl("--url", rocks, "scan", "big", "--all", out=a)
    kvctl("--url", pg, "scan", "big", "--all", out=b)
    same = subprocess.run(["cmp", "-s", str(a), str(b)]).returncode == 0
    return time.perf_counter() - start, same


def edit(url: str, n: int) -> set[int]:
    """Change ``EDITS`` scattered rows at ``url``: their ids."""
    ids = set(random.Random(37).sample(range(n), EDITS))
    with spi.connect(url) as p:
        t = p.table("big")
        for i in ids:
            t.update((i,), {"x": -1.0})
    return ids


def main(argv: list[str] | None = None) -> int:
    """Run the three measurements, print them; exit 0 (targets met), TARGET_MISSED or 2."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000, help="rows per table (default 200,000)")
    parser.add_argument("--full", action="store_true", help="1,000,000 rows")
    parser.add_argument("--url", help="a postgresql+psycopg:// URL (default: start a throwaway server)")
    args = parser.parse_args(argv)
    n = 1_000_000 if args.full else args.rows
    folder = Path(tempfile.mkdtemp(prefix="kvctl-diff-bench-"))
    server = None
    try:
        base = args.url
        if base is None:
            sys.path.insert(0, str(ROOT / "tests"))
            from pg_server import ThrowawayPostgres, find_bindir

            bindir = find_bindir()
            if bindir is None:
                print("no PostgreSQL server binaries found; pass --url", file=sys.stderr)
                return 2
            server = ThrowawayPostgres(bindir).start()
            base = server.url
        rocks = f"rocksdb://{folder}/db"
        pg_a, pg_b = (f"{base}{'&' if '?' in base else '?'}schema=diff_bench_{os.getpid()}_{s}" for s in "ab")
        for url in (rocks, pg_a, pg_b):
            fill(url, n)
        equal_s, equal = kvctl("diff", rocks, pg_a, "big", "--summary")
        naive_s, naive_equal = naive(rocks, pg_a, folder)
        with spi.connect(pg_a) as a, spi.connect(pg_b) as b:
            same = compare(a, b, "big", versions=True)
            same_found = sum(1 for _ in same)
            ids = edit(pg_a, n)
            edited = compare(a, b, "big", versions=True)
            edited_found = {d.key["id"] for d in edited}
        diff_s, diff = kvctl("diff", rocks, pg_a, "big")
        found = {json.loads(line)["key"]["id"] for line in diff.stdout.splitlines()}
    except Exception as exc:  # a failed run: say why, exit 2
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(folder, ignore_errors=True)
    checks = [
        (
            "equal tables: diff exit 0, files equal",
            f"{equal.returncode}, {naive_equal}",
            equal.returncode == 0 and naive_equal,
        ),
        ("naive / diff time (equal)", f"{naive_s / equal_s:.2f}x", naive_s / equal_s >= 2.0, ">=2"),
        (
            f"{EDITS} differences found exactly",
            f"{len(found)} ({'same' if found == ids else 'OTHER'} rows)",
            found == ids and diff.returncode == 1,
        ),
        (f"{EDITS} differences / equal time", f"{diff_s / equal_s:.2f}x", diff_s / equal_s <= 1.5, "<=1.5"),
        (
            "pg vs pg equal: rows to client",
            f"{same.stats.rows_read / n:.2%}",
            same_found == 0 and same.stats.rows_read <= 0.05 * n,
            "<=5%",
        ),
        (
            f"pg vs pg {EDITS} diffs: rows to client",
            f"{edited.stats.rows_read / n:.2%}",
            edited_found == ids and edited.stats.rows_read <= 0.05 * n,
            "<=5%",
        ),
    ]
    print(f"kvctl diff, {n:,} rows (rocksdb vs postgres; postgres vs postgres)")
    print(f"{'time':<44}{'seconds':>9}")
    print(f"{'kvctl diff, equal tables':<44}{equal_s:>9.2f}")
    print(f"{'naive: scan --all both sides + cmp':<44}{naive_s:>9.2f}")
    print(f"{f'kvctl diff, {EDITS} scattered differences':<44}{diff_s:>9.2f}")
    print(f"{'figure':<44}{'value':>16}{'target':>8}  result")
    ok = True
    for name, value, passed, *target in checks:
        ok = ok and bool(passed)
        print(f"{name:<44}{value:>16}{(target[0] if target else '-'):>8}  {'pass' if passed else 'FAIL'}")
    print(
        f"pg vs pg: {same.stats.checksums} range checksums for the equal tables, "
        f"{edited.stats.checksums} with {EDITS} differences ({edited.stats.rows_read:,} rows read)"
    )
    print("all targets met" if ok else "missed a target")
    return 0 if ok else TARGET_MISSED


if __name__ == "__main__":
    sys.exit(main())

"""``kvctl copy`` at scale: wall time and the copying process's peak memory.

    python bench/copy_tables.py [--rows 1000000] [--url POSTGRES_URL]

Fills a RocksDB table of ``--rows`` rows (id, a group, a 36-character string; an
index on the group; every seventh row at version 2) and copies it with ``kvctl
copy`` run as a child process, RocksDB → RocksDB, RocksDB → PostgreSQL, PostgreSQL →
RocksDB and PostgreSQL → PostgreSQL (another schema), first with a tenth of the
rows. For each copy it
prints the wall time (process start to exit), the rows per second and the peak
resident memory of the kvctl process (``ru_maxrss``, measured from a small launcher
process: tests/copy_support.py ``peak_rss``): the copy streams
in batches, so kvctl's own memory does not grow with the row count (PostgreSQL →
PostgreSQL shows it alone); a RocksDB store adds its block cache and memtables, which
fill up to their configured sizes. Without ``--url`` a
throwaway PostgreSQL server is started (tests/pg_server.py).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(1, os.path.join(ROOT, "tests"))

import spi  # noqa: E402

SPEC = spi.TableSpec(
    "big", [spi.Field("id", "long"), spi.Field("g", "long"), spi.Field("pad", "string")], ["id"], indexes=["g"]
)


def fill(url: str, rows: int) -> None:
    """Create and load the table."""
    with spi.connect(url) as p:
        p.admin.create(SPEC)
        t = p.table("big")
        t.load(({"id": i, "g": i % 100, "pad": f"{i:012d}" * 3} for i in range(rows)), batch_size=20_000)
        t.update_range(where=spi.col("g") == 7, changes={"pad": "seven"})


def run_copy(src: str, dst: str) -> tuple[float, int]:
    """``kvctl copy SRC DST big``: seconds and the kvctl process's peak RSS in KiB."""
    from copy_support import peak_rss

    rss, seconds = peak_rss(sys.executable, "-m", "kvctl", "copy", src, dst, "big")
    return seconds, rss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--url", help="a PostgreSQL URL (default: a throwaway server)")
    args = parser.parse_args()
    server = None
    base = args.url
    if base is None:
        from pg_server import ThrowawayPostgres, find_bindir

        bindir = find_bindir()
        if bindir is None:
            raise SystemExit("no PostgreSQL binaries found: pass --url")
        server = ThrowawayPostgres(bindir).start()
        base = server.url
    folder = tempfile.mkdtemp(prefix="kvctl-copy-bench-")
    try:
        print(f"{'copy':<26}{'rows':>11}{'seconds':>9}{'rows/s':>10}{'peak RSS':>11}")
        for rows in (args.rows // 10, args.rows):
            run = uuid.uuid4().hex[:8]
            source = f"rocksdb://{folder}/src_{run}"
            schema = f"copy_bench_{run}"
            pg, pg2 = (f"{base}{'&' if '?' in base else '?'}schema={schema}{n}" for n in ("", "_2"))
            fill(source, rows)
            hops = [
                ("rocksdb -> rocksdb", source, f"rocksdb://{folder}/dst_{run}"),
                ("rocksdb -> postgresql", source, pg),
                ("postgresql -> rocksdb", pg, f"rocksdb://{folder}/back_{run}"),
                ("postgresql -> postgresql", pg, pg2),
            ]
            for label, src, dst in hops:
                seconds, rss = run_copy(src, dst)
                print(f"{label:<26}{rows:>11,}{seconds:>9.1f}{rows / seconds:>10,.0f}{rss / 1024:>8.0f} MiB")
            for url in (pg, pg2):
                with spi.connect(url) as p:
                    p.admin.drop("big")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()

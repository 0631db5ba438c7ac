"""PostgreSQL provider vs raw psycopg, in one run against the same server.

    python bench/postgres.py [--rows 1000000] [--url postgresql+psycopg://...]

Without ``--url`` a throwaway server is started (tests/pg_server.py) and removed at
the end. Three measurements, each printed as ops/s for both sides and their ratio
against the target: bulk load (provider ``load`` vs raw binary COPY into an
identical table), point reads (auto-commit ``read`` vs a raw prepared SELECT by key
in autocommit mode) and a full scan (auto-commit ``scan`` vs a raw server-side cursor).
The reads report the best of three runs on each side. Exit status: 0 every target
met, 3 a target missed (``TARGET_MISSED``, bench/common.py), 2 no server, 1 a
crash.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

import psycopg  # noqa: E402
from psycopg import sql  # noqa: E402

import spi  # noqa: E402
from bench.common import TARGET_MISSED  # noqa: E402

SPEC = spi.TableSpec(
    "bench",
    [
        spi.Field("k", "long"),
        spi.Field("name", "string"),
        spi.Field("qty", "int"),
        spi.Field("price", "double"),
        spi.Field("note", "string"),
    ],
    ["k"],
)
RAW_DDL = (
    'CREATE TABLE {} (k bigint NOT NULL PRIMARY KEY, name text COLLATE "C", qty integer,'
    ' price double precision, note text COLLATE "C", kv_version bigint NOT NULL)'
)
TARGETS: dict[str, float | None] = {"load": 0.6, "point read": 0.8, "full scan": 0.7, "scan in tx": None}
"""Minimum provider/raw ratio per operation (None: shown for information only)."""


def rows(n: int) -> Iterator[dict[str, Any]]:
    """Deterministic benchmark rows."""
    for i in range(n):
        yield {"k": i, "name": f"name-{i:08d}", "qty": i % 1000, "price": i * 0.25, "note": None if i % 3 else "n"}


REPEAT = 3
"""Read-only measurements: the best of this many runs on each side (the machine may be
shared: the best run is the least disturbed), as in bench/rocksdb.py. Loads run once."""


def timed(fn: Callable[[], int], repeat: int = 1) -> tuple[int, float]:
    """(operations, seconds) of the fastest of ``repeat`` calls."""
    best: tuple[int, float] | None = None
    for _ in range(repeat):
        start = time.perf_counter()
        n = fn()
        took = time.perf_counter() - start
        if best is None or took < best[1]:
            best = (n, took)
    assert best is not None
    return best


def run(url: str, n_rows: int, n_reads: int) -> list[tuple[str, float, float]]:
    """Measure every pair; returns (name, provider ops/s, raw ops/s)."""
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    sep = "&" if "?" in url else "?"
    provider = spi.connect(f"{url}{sep}schema={schema}")
    dsn = url.replace("postgresql+psycopg://", "postgresql://", 1).split("?")[0]
    raw = psycopg.connect(dsn, autocommit=True)
    raw_table = sql.Identifier(schema, "raw_bench")
    results = []
    try:
        provider.admin.create(SPEC)
        raw.execute(sql.SQL(RAW_DDL).format(raw_table))
        table = provider.table("bench")

        n, s = timed(lambda: table.load(rows(n_rows), batch_size=10_000))
        n_raw, s_raw = timed(lambda: raw_copy(raw, raw_table, n_rows))
        results.append(("load", n / s, n_raw / s_raw))
        raw.execute(sql.SQL("ANALYZE {}").format(raw_table))
        raw.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(schema, "bench")))

        keys = [random.Random(7).randrange(n_rows) for _ in range(n_reads)]
        n, s = timed(lambda: sum(1 for k in keys if table.read((k,)) is not None), REPEAT)
        n_raw, s_raw = timed(lambda: raw_reads(raw, raw_table, keys), REPEAT)
        results.append(("point read", n / s, n_raw / s_raw))

        n, s = timed(lambda: sum(1 for _ in table.scan()), REPEAT)
        n_raw, s_raw = timed(lambda: raw_scan(raw, raw_table), REPEAT)
        results.append(("full scan", n / s, n_raw / s_raw))

        def scan_in_transaction() -> int:
            with provider.transaction() as tx:
                return sum(1 for _ in tx.table("bench").scan())

        n, s = timed(scan_in_transaction, REPEAT)
        results.append(("scan in tx", n / s, n_raw / s_raw))
    finally:
        raw.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
        raw.close()
        provider.close()
    return results


def raw_copy(conn: psycopg.Connection[Any], table: sql.Identifier, n: int) -> int:
    """Binary COPY straight into the table (one transaction per 10,000 rows, like load)."""
    columns = ["k", "name", "qty", "price", "note", "kv_version"]
    statement = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)").format(
        table, sql.SQL(", ").join(map(sql.Identifier, columns))
    )
    batch: list[tuple[Any, ...]] = []

    def flush() -> None:
        with conn.transaction(), conn.cursor() as cur, cur.copy(statement) as copy:
            copy.set_types(["int8", "text", "int4", "float8", "text", "int8"])
            for row in batch:
                copy.write_row(row)
        batch.clear()

    for r in rows(n):
        batch.append((r["k"], r["name"], r["qty"], r["price"], r["note"], 1))
        if len(batch) == 10_000:
            flush()
    if batch:
        flush()
    return n


def raw_reads(conn: psycopg.Connection[Any], table: sql.Identifier, keys: list[int]) -> int:
    """A prepared SELECT by key per read (autocommit)."""
    query = sql.SQL("SELECT k, name, qty, price, note, kv_version FROM {} WHERE k = %s").format(table)
    found = 0
    with conn.cursor() as cur:
        for k in keys:
            cur.execute(query, (k,), prepare=True)
            found += cur.fetchone() is not None
    return found


def raw_scan(conn: psycopg.Connection[Any], table: sql.Identifier) -> int:
    """A server-side cursor over the whole table in key order."""
    n = 0
    with conn.transaction(), conn.cursor(name="scan") as cur:
        cur.itersize = 2000
        cur.execute(sql.SQL("SELECT k, name, qty, price, note, kv_version FROM {} ORDER BY k").format(table))
        for _ in cur:
            n += 1
    return n


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run, print the table; exit TARGET_MISSED if a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--reads", type=int, default=20_000)
    parser.add_argument("--url", help="a postgresql+psycopg:// URL (default: start a throwaway server)")
    args = parser.parse_args(argv)
    server = None
    url = args.url
    if url is None:
        from pg_server import ThrowawayPostgres, find_bindir

        bindir = find_bindir()
        if bindir is None:
            print("no PostgreSQL server binaries found; pass --url", file=sys.stderr)
            return 2
        server = ThrowawayPostgres(bindir).start()
        url = server.url
    try:
        results = run(url, args.rows, min(args.reads, max(args.rows, 1)))
    finally:
        if server is not None:
            server.stop()
    print(f"PostgreSQL provider vs raw psycopg, {args.rows:,} rows ({spi.mask_password(url)})")
    print(f"{'operation':<12} {'provider ops/s':>15} {'raw ops/s':>12} {'ratio':>7} {'target':>7}  result")
    ok = True
    for name, mine, theirs in results:
        ratio = mine / theirs
        target = TARGETS[name]
        if target is None:
            print(f"{name:<12} {mine:>15,.0f} {theirs:>12,.0f} {ratio:>6.2f}x {'-':>7}  (info)")
            continue
        passed = ratio >= target
        ok &= passed
        verdict = "pass" if passed else "FAIL"
        print(f"{name:<12} {mine:>15,.0f} {theirs:>12,.0f} {ratio:>6.2f}x {target:>6.2f}x  {verdict}")
    return 0 if ok else TARGET_MISSED


if __name__ == "__main__":
    sys.exit(main())

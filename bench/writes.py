"""Writes (issue 23): each kvctl write against the engine's native statement, in one run.

    python bench/writes.py [--rows 40000] [--ops 5000] [--rocksdb-ops 200000]
                           [--load-rows 500000] [--url postgresql+psycopg://...]
                           [--dir PATH] [--only postgres|rocksdb]

PostgreSQL (without ``--url`` a throwaway server from tests/pg_server.py): each kvctl
table has a raw twin made with ``CREATE TABLE … (LIKE kvctl_table INCLUDING ALL
EXCLUDING DEFAULTS)`` (the same columns, ``kv_version`` and ``kv_expires`` included,
the same constraints and indexes), holding
the same rows; the raw side runs prepared statements on an autocommit psycopg
connection, bumping ``kv_version`` as kvctl does. Point writes (``upsert``,
``increment``, a ``compare_and_swap`` that always succeeds) run ``--ops`` times on a
table of ``--rows`` rows; the range writes touch half of ``--rows`` fresh rows against
one ``UPDATE``/``DELETE … WHERE``; 4 threads upsert distinct keys through one
provider against 4 raw connections; loads of ``--load-rows`` rows compare a
change-fed table with a plain one (a cost: lower is better) and the plain load with
binary ``COPY`` (bench/postgres.py's).

RocksDB (in ``--dir`` or a temp dir): auto-commit ``upsert``/``increment``/``read``
``--rocksdb-ops`` times against raw rocksdict ``get`` (+ ``put``) of the provider's
own stored bytes in a twin database; ``load`` and full ``scan`` as bench/rocksdb.py
measures them.

Every figure is the best of three runs on each side (loads and range writes into fresh
tables; a side whose fresh-table runs are short runs up to ten times, see
:func:`best_fresh`); the RocksDB sides take turns (:func:`paired_best`). In the cost
row both columns are kvctl: the change-fed load and the plain one. Exit status: 0 every target met, 3 a target missed (``TARGET_MISSED``,
bench/common.py), 2 an error, 1 a crash.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import psycopg  # noqa: E402
import rocksdict  # noqa: E402
from psycopg import sql  # noqa: E402

import spi  # noqa: E402
from bench import postgres as pg_bench  # noqa: E402
from bench import rocksdb as rocks_bench  # noqa: E402
from bench.common import TARGET_MISSED  # noqa: E402
from spi import col  # noqa: E402

REPEAT = 3
LOAD_REPEAT = 5
"""Turns of the RocksDB load, whose runs (under a second each) a busy neighbour on the
machine can slow for one side's whole run."""
FRESH_SECONDS, FRESH_RUNS = 1.0, 10
THREADS = 4


@dataclass(frozen=True)
class Figure:
    """One row of the table: kvctl's and the native side's rates (operations a second).

    With ``cost`` the row compares two kvctl runs and its ratio is a cost, native rate
    over kvctl rate (kvctl's time over the native time): it passes at or under the
    target. Otherwise the ratio is kvctl's rate over the native one, passing at or over.
    """

    name: str
    kvctl: float
    native: float
    target: float
    cost: bool = False

    @property
    def ratio(self) -> float:
        """kvctl/native throughput, or native/kvctl for a cost."""
        return self.native / self.kvctl if self.cost else self.kvctl / self.native

    @property
    def passed(self) -> bool:
        """Whether the ratio meets the target."""
        return self.ratio <= self.target if self.cost else self.ratio >= self.target


def best_rate(fn: Callable[[], int], repeat: int = REPEAT) -> float:
    """Operations a second of the fastest of ``repeat`` calls of ``fn`` (which returns
    how many it did; the machine may be shared: the best run is the least disturbed)."""
    n, seconds = pg_bench.timed(fn, repeat)
    return n / seconds


def rate_of(fn: Callable[[], int]) -> Callable[[], float]:
    """``fn`` (which returns how many operations it did) as a call returning its rate."""

    def once() -> float:
        start = time.perf_counter()
        n = fn()
        return n / (time.perf_counter() - start)

    return once


def paired_best(kvctl: Callable[[], float], native: Callable[[], float], repeat: int = REPEAT) -> tuple[float, float]:
    """The best rate of ``repeat`` runs of each side, the two sides taking turns.

    A virtual machine's speed drifts over seconds; runs in turns see the same drift, so
    the ratio of the two bests moves far less than when one side runs all its runs first.
    """
    best_kv = best_native = 0.0
    for _ in range(repeat):
        best_native = max(best_native, native())
        best_kv = max(best_kv, kvctl())
    return best_kv, best_native


def best_fresh(prepare: Callable[[], None], fn: Callable[[], int]) -> float:
    """Like :func:`best_rate`, with ``prepare`` (untimed) before every run: fresh data.

    A run that cannot be made longer (one statement on a table of a given size) may
    take only tens of milliseconds: such a side runs more than REPEAT times, until its
    runs add up to FRESH_SECONDS (at most FRESH_RUNS runs).
    """
    best, runs, total = 0.0, 0, 0.0
    while runs < REPEAT or (total < FRESH_SECONDS and runs < FRESH_RUNS):
        prepare()
        start = time.perf_counter()
        n = fn()
        took = time.perf_counter() - start
        best, runs, total = max(best, n / took), runs + 1, total + took
    return best


def in_threads(work: Sequence[Callable[[], int]]) -> int:
    """Run each of ``work`` in its own thread, all released at once; the operations
    they did together. An exception in a thread is raised here."""
    barrier = threading.Barrier(len(work))
    done: list[int] = []
    failed: list[BaseException] = []

    def run(fn: Callable[[], int]) -> None:
        barrier.wait()
        try:
            done.append(fn())
        except BaseException as exc:
            failed.append(exc)

    threads = [threading.Thread(target=run, args=(fn,)) for fn in work]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failed:
        raise failed[0]
    return sum(done)


# --- PostgreSQL -------------------------------------------------------------------

SPEC = pg_bench.SPEC
COLUMNS = [f.name for f in SPEC.fields]
HALF = col("qty") < 500  # qty is i % 1000: half the rows of a table of whole thousands


def named(name: str, *, changes: bool = False) -> spi.TableSpec:
    """bench/postgres.py's spec under another name."""
    return spi.TableSpec(name, SPEC.fields, SPEC.primary_key, SPEC.indexes, changes=changes)


def upsert_row(k: int, tag: str) -> dict[str, Any]:
    """The row an upsert of key ``k`` writes."""
    return {"k": k, "name": f"{tag}-{k}", "qty": k % 1000, "price": k * 0.5, "note": tag}


def row_values(row: dict[str, Any]) -> tuple[Any, ...]:
    """A row's values in column order."""
    return tuple(row[c] for c in COLUMNS)


class PgTwins:
    """kvctl tables in a new schema and their raw twins, on one server."""

    def __init__(self, url: str) -> None:
        self.schema = f"bench_w_{uuid.uuid4().hex[:8]}"
        sep = "&" if "?" in url else "?"
        self.provider = spi.connect(f"{url}{sep}schema={self.schema}")
        self.dsn = url.replace("postgresql+psycopg://", "postgresql://", 1).split("?")[0]
        self.raw = psycopg.connect(self.dsn, autocommit=True)

    def ident(self, name: str) -> sql.Identifier:
        """A table of the bench schema."""
        return sql.Identifier(self.schema, name)

    def kv_table(self, spec: spi.TableSpec, n: int = 0) -> None:
        """(Re)create kvctl table ``spec`` holding bench/postgres.py's first ``n`` rows
        (``load``), analyzed."""
        self.provider.admin.drop(spec.name, missing_ok=True)
        self.provider.admin.create(spec)
        if n:
            self.provider.table(spec.name).load(pg_bench.rows(n), batch_size=10_000)
            self.analyze(spec.name)

    def raw_table(self, raw_name: str, like: str, n: int = 0) -> None:
        """(Re)create raw table ``raw_name`` as a copy of kvctl table ``like``'s
        definition (columns, constraints, indexes; not the default of a one-column
        integer key, a sequence of the kvctl table) holding the same ``n`` rows (binary
        ``COPY``), analyzed."""
        self.raw.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(self.ident(raw_name)))
        statement = sql.SQL("CREATE TABLE {} (LIKE {} INCLUDING ALL EXCLUDING DEFAULTS)")
        self.raw.execute(statement.format(self.ident(raw_name), self.ident(like)))
        if n:
            pg_bench.raw_copy(self.raw, self.ident(raw_name), n)
            self.analyze(raw_name)

    def analyze(self, name: str) -> None:
        """Fresh planner statistics of a table of the bench schema."""
        self.raw.execute(sql.SQL("ANALYZE {}").format(self.ident(name)))

    def close(self) -> None:
        """Drop the schema, close both sides."""
        self.raw.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(self.schema)))
        self.raw.close()
        self.provider.close()


def upsert_sql(table: sql.Identifier) -> sql.Composed:
    """The native upsert of a row of ``table``: one INSERT … ON CONFLICT, returning the version."""
    return sql.SQL(
        "INSERT INTO {t} AS t (k, name, qty, price, note, kv_version) VALUES (%s, %s, %s, %s, %s, 1)"
        " ON CONFLICT (k) DO UPDATE SET name = excluded.name, qty = excluded.qty, price = excluded.price,"
        " note = excluded.note, kv_version = t.kv_version + 1, kv_expires = NULL RETURNING kv_version"
    ).format(t=table)


def upsert_each(table: Any, rows: list[dict[str, Any]]) -> int:
    """``table.upsert`` each row; how many."""
    for row in rows:
        table.upsert(row)
    return len(rows)


def prepared(conn: psycopg.Connection[Any], statement: sql.Composed, params: list[tuple[Any, ...]]) -> int:
    """Run ``statement`` once per parameter tuple, prepared, fetching what it returns."""
    with conn.cursor() as cur:
        for p in params:
            cur.execute(statement, p, prepare=True)
            cur.fetchone()
    return len(params)


def run_postgres(url: str, n_rows: int, n_ops: int, n_load: int) -> list[Figure]:
    """Every PostgreSQL figure."""
    twins = PgTwins(url)
    try:
        return [*_pg_point_writes(twins, n_rows, n_ops), *_pg_range_writes(twins, n_rows), *_pg_loads(twins, n_load)]
    finally:
        twins.close()


def _pg_point_writes(twins: PgTwins, n_rows: int, n_ops: int) -> list[Figure]:
    twins.kv_table(named("points"), n_rows)
    twins.raw_table("raw_points", "points", n_rows)
    table, raw, target = twins.provider.table("points"), twins.raw, twins.ident("raw_points")
    rng = random.Random(23)
    keys = [rng.randrange(n_rows) for _ in range(n_ops)]
    figures = []

    upserts = [upsert_row(k, "u") for k in keys]
    upsert_params = [row_values(r) for r in upserts]
    figures.append(
        Figure(
            "postgres upsert",
            best_rate(lambda: upsert_each(table, upserts)),
            best_rate(lambda: prepared(raw, upsert_sql(target), upsert_params)),
            0.5,
        )
    )

    increment_sql = sql.SQL(
        "UPDATE {} SET qty = qty + 1, kv_version = kv_version + 1 WHERE k = %s RETURNING qty"
    ).format(target)
    key_params = [(k,) for k in keys]

    def kv_increments() -> int:
        for k in keys:
            table.increment((k,), "qty", 1)
        return len(keys)

    figures.append(
        Figure(
            "postgres increment",
            best_rate(kv_increments),
            best_rate(lambda: prepared(raw, increment_sql, key_params)),
            0.5,
        )
    )

    # Every swap succeeds: each run's (key, expected, new) follow the values the rows
    # hold, the same on both sides (both start from the upserts' names).
    runs = _cas_runs(keys, {r["k"]: r["name"] for r in upserts})
    cas_sql = sql.SQL(
        "UPDATE {} SET name = %s, kv_version = kv_version + 1"
        " WHERE k = %s AND name IS NOT DISTINCT FROM %s RETURNING kv_version"
    ).format(target)

    kv_runs, raw_runs = iter(runs), iter(runs)

    def kv_swaps() -> int:
        swaps = next(kv_runs)
        won = sum(table.compare_and_swap((k,), "name", old, new) for k, old, new in swaps)
        if won != len(swaps):
            raise AssertionError(f"{len(swaps) - won} of {len(swaps)} compare_and_swap calls failed")
        return won

    def raw_swaps() -> int:
        swaps = next(raw_runs)
        with raw.cursor() as cur:
            for k, old, new in swaps:
                cur.execute(cas_sql, (new, k, old), prepare=True)
                if cur.fetchone() is None:
                    raise AssertionError(f"the raw swap of key {k} failed")
        return len(swaps)

    figures.append(Figure("postgres compare_and_swap", best_rate(kv_swaps), best_rate(raw_swaps), 0.5))

    return [*figures, _pg_threads(twins, n_rows, n_ops)]


def _pg_threads(twins: PgTwins, n_rows: int, n_ops: int) -> Figure:
    """THREADS threads upserting distinct keys (k = thread mod THREADS) of table
    "points", each with its own auto-commit handle of the one provider, or its own raw
    connection."""
    per_thread = max(n_ops // THREADS, 1)
    parts = [[upsert_row(k, "t") for k in _thread_keys(t, n_rows, per_thread)] for t in range(THREADS)]
    part_params = [[row_values(r) for r in part] for part in parts]
    statement = upsert_sql(twins.ident("raw_points"))
    handles = [twins.provider.table("points") for _ in range(THREADS)]
    conns = [psycopg.connect(twins.dsn, autocommit=True) for _ in range(THREADS)]
    try:
        kv_work = [partial(upsert_each, h, p) for h, p in zip(handles, parts, strict=True)]
        raw_work = [partial(prepared, c, statement, p) for c, p in zip(conns, part_params, strict=True)]
        kv_threads = best_rate(lambda: in_threads(kv_work))
        raw_threads = best_rate(lambda: in_threads(raw_work))
    finally:
        for c in conns:
            c.close()
    return Figure(f"postgres {THREADS}-thread upsert", kv_threads, raw_threads, 0.4)


def _cas_runs(keys: list[int], values: dict[int, str]) -> list[list[tuple[int, str, str]]]:
    """REPEAT runs of (key, expected, new) swaps over ``keys`` that all succeed from ``values``."""
    runs = []
    for r in range(REPEAT):
        swaps = []
        for i, k in enumerate(keys):
            new = f"c{r}-{i}"
            swaps.append((k, values[k], new))
            values[k] = new
        runs.append(swaps)
    return runs


def _thread_keys(thread: int, n_rows: int, count: int) -> list[int]:
    """``count`` keys of ``thread`` (those equal to it mod THREADS, wrapping)."""
    mine = range(thread, max(n_rows, THREADS), THREADS)
    return [mine[i % len(mine)] for i in range(count)]


def _pg_range_writes(twins: PgTwins, n_rows: int) -> list[Figure]:
    half = sum(1 for r in pg_bench.rows(n_rows) if r["qty"] < 500)
    raw_table = twins.ident("raw_ranges")

    def fresh_kv() -> None:
        twins.kv_table(named("ranges"), n_rows)

    def fresh_raw() -> None:
        twins.raw_table("raw_ranges", "ranges", n_rows)

    def counted(n: int, what: str) -> int:
        if n != half:
            raise AssertionError(f"{what} touched {n} rows, not {half}")
        return n

    def kv_update() -> int:
        return counted(twins.provider.table("ranges").update_range(where=HALF, changes={"note": "r"}), "update_range")

    def raw_update() -> int:
        statement = sql.SQL("UPDATE {} SET note = 'r', kv_version = kv_version + 1 WHERE qty < 500")
        return counted(twins.raw.execute(statement.format(raw_table)).rowcount, "UPDATE")

    def kv_delete() -> int:
        return counted(twins.provider.table("ranges").delete_range(where=HALF), "delete_range")

    def raw_delete() -> int:
        return counted(
            twins.raw.execute(sql.SQL("DELETE FROM {} WHERE qty < 500").format(raw_table)).rowcount, "DELETE"
        )

    return [
        Figure("postgres update_range 50%", best_fresh(fresh_kv, kv_update), best_fresh(fresh_raw, raw_update), 0.3),
        Figure("postgres delete_range 50%", best_fresh(fresh_kv, kv_delete), best_fresh(fresh_raw, raw_delete), 0.5),
    ]


def _pg_loads(twins: PgTwins, n_load: int) -> list[Figure]:
    def kv_load(name: str) -> int:
        return twins.provider.table(name).load(pg_bench.rows(n_load), batch_size=10_000)

    plain = best_fresh(lambda: twins.kv_table(named("loaded")), lambda: kv_load("loaded"))
    fed = best_fresh(lambda: twins.kv_table(named("fed", changes=True)), lambda: kv_load("fed"))
    copy = best_fresh(
        lambda: twins.raw_table("raw_loaded", "loaded"),
        lambda: pg_bench.raw_copy(twins.raw, twins.ident("raw_loaded"), n_load),
    )
    return [
        Figure("postgres fed load / plain (cost)", fed, plain, 1.5, cost=True),
        Figure("postgres load vs COPY", plain, copy, 0.8),
    ]


# --- RocksDB ----------------------------------------------------------------------


def run_rocksdb(root: Path, n_rows: int, n_ops: int, n_load: int) -> list[Figure]:
    """Every RocksDB figure, in databases under ``root``."""
    spec = rocks_bench.PLAIN
    data = list(rocks_bench.rows(n_rows))
    rocks_bench._provider_load(root / "kv", spec, data)
    stored, _ = rocks_bench._stored(root / "kv")
    rocks_bench._raw_load(root / "raw", rocks_bench._raw_batches([stored]), n_rows)
    rng = random.Random(23)
    ids = [rng.randrange(n_rows) for _ in range(n_ops)]
    upserts = [data[i] | {"g2": -1} for i in ids]
    pairs = [stored[i] for i in ids]  # the provider's own bytes: rows are in key order
    keys = [k for k, _ in pairs]
    figures = []
    with spi.connect(f"rocksdb://{root / 'kv'}") as p:
        raw = rocks_bench._raw_open(root / "raw")
        try:
            table = p.table(spec.name)

            def raw_get_put() -> int:
                get, put = raw.get, raw.put
                for k, v in pairs:
                    get(k)
                    put(k, v)
                return len(pairs)

            def raw_gets() -> int:
                get = raw.get
                for k in keys:
                    get(k)
                return len(keys)

            def kv_increments() -> int:
                for i in ids:
                    table.increment((i,), "g2", 1)
                return len(ids)

            def kv_reads() -> int:
                for i in ids:
                    table.read((i,))
                return len(ids)

            upsert = paired_best(rate_of(lambda: upsert_each(table, upserts)), rate_of(raw_get_put))
            figures.append(Figure("rocksdb upsert", *upsert, 0.5))
            figures.append(Figure("rocksdb increment", *paired_best(rate_of(kv_increments), rate_of(raw_get_put)), 0.5))
            figures.append(Figure("rocksdb point read", *paired_best(rate_of(kv_reads), rate_of(raw_gets)), 0.3))
        finally:
            raw.close()
    return [*figures, _rocksdb_delete_range(root, n_rows), *_rocksdb_load_and_scan(root, n_load)]


def _rocksdb_delete_range(root: Path, n_rows: int) -> Figure:
    """``delete_range(where=g2 < 50)`` (half the rows; g2 is not indexed) against the
    same work done on the raw database: every stored row read and its value decoded
    (msgspec) to test g2, and the keys of those that match deleted in write batches
    of bench/rocksdb.py's size. Each run starts from a fresh copy of the rows."""
    import msgspec

    spec = rocks_bench.PLAIN
    kv_path, raw_path = root / "delete-kv", root / "delete-raw"
    rocks_bench._provider_load(kv_path, spec, list(rocks_bench.rows(n_rows)))
    stored, _ = rocks_bench._stored(kv_path)
    batches = rocks_bench._raw_batches([stored])
    g2 = 1 + spec.columns.index("g2")  # the stored value: [head, *columns]
    half = sum(1 for r in rocks_bench.rows(n_rows) if r["g2"] < rocks_bench.GROUPS // 2)
    provider: list[Any] = []
    raw_db: list[Any] = []

    def fresh_kv() -> None:
        for p in provider:
            p.close()
        shutil.rmtree(kv_path, ignore_errors=True)
        rocks_bench._provider_load(kv_path, spec, list(rocks_bench.rows(n_rows)))
        provider[:] = [spi.connect(f"rocksdb://{kv_path}")]

    def fresh_raw() -> None:
        for db in raw_db:
            db.close()
        shutil.rmtree(raw_path, ignore_errors=True)
        rocks_bench._raw_load(raw_path, batches, n_rows)
        raw_db[:] = [rocks_bench._raw_open(raw_path)]

    def counted(n: int, what: str) -> int:
        if n != half:
            raise AssertionError(f"{what} touched {n} rows, not {half}")
        return n

    def kv_delete() -> int:
        where = spi.col("g2") < rocks_bench.GROUPS // 2
        return counted(provider[0].table(spec.name).delete_range(where=where), "delete_range")

    def raw_delete() -> int:
        raw = raw_db[0]
        decode, limit, deleted = msgspec.msgpack.decode, rocks_bench.GROUPS // 2, 0
        batch = rocksdict.WriteBatch(raw_mode=True)
        for key, value in raw.items():
            if decode(value)[g2] < limit:
                batch.delete(key)
                deleted += 1
                if deleted % rocks_bench.BATCH == 0:
                    raw.write(batch)
                    batch = rocksdict.WriteBatch(raw_mode=True)
        raw.write(batch)
        return counted(deleted, "raw delete")

    try:
        figure = Figure(
            "rocksdb delete_range 50%", best_fresh(fresh_kv, kv_delete), best_fresh(fresh_raw, raw_delete), 0.5
        )
    finally:
        for p in provider:
            p.close()
        for db in raw_db:
            db.close()
    return figure


def _rocksdb_load_and_scan(root: Path, n_load: int) -> list[Figure]:
    """bench/rocksdb.py's load (no index) and auto-commit full scan, the sides in turns.

    A first, untimed kvctl load gives the stored bytes the raw side writes.
    """
    spec = rocks_bench.PLAIN
    data = list(rocks_bench.rows(n_load))
    kv_path, raw_path = root / "load-kv", root / "load-raw"
    rocks_bench._provider_load(kv_path, spec, data)
    stored, _ = rocks_bench._stored(kv_path)
    batches = rocks_bench._raw_batches([stored])
    stored.clear()

    def kv_load() -> float:
        shutil.rmtree(kv_path, ignore_errors=True)
        return rocks_bench._provider_load(kv_path, spec, data)

    def raw_load() -> float:
        shutil.rmtree(raw_path, ignore_errors=True)
        return rocks_bench._raw_load(raw_path, batches, n_load)

    load = paired_best(kv_load, raw_load, LOAD_REPEAT)
    data.clear()
    batches.clear()
    with spi.connect(f"rocksdb://{kv_path}") as p:
        raw = rocks_bench._raw_open(raw_path)
        try:
            table = p.table(spec.name)
            scan = paired_best(
                rate_of(lambda: sum(1 for _ in table.scan())), rate_of(lambda: sum(1 for _ in raw.items()))
            )
        finally:
            raw.close()
    return [Figure("rocksdb load", *load, 0.5), Figure("rocksdb full scan", *scan, 0.4)]


# --- report -----------------------------------------------------------------------


def report(figures: list[Figure]) -> bool:
    """Print the table and a line naming the missed targets; True when none is."""
    print(f"{'figure':<34} {'kvctl ops/s':>13} {'native ops/s':>13} {'ratio':>8} {'target':>8}  result")
    for f in figures:
        target = f"{'<=' if f.cost else '>='}{f.target:.2f}"
        verdict = "pass" if f.passed else "FAIL"
        print(f"{f.name:<34} {f.kvctl:>13,.0f} {f.native:>13,.0f} {f.ratio:>7.3f}x {target:>8}  {verdict}")
    missed = [f"{f.name} {f.ratio:.3f}" for f in figures if not f.passed]
    print(f"missed {len(missed)} of {len(figures)} targets: {', '.join(missed)}" if missed else "all targets met")
    return not missed


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run, print; exit 0 (targets met), TARGET_MISSED (one missed) or 2 (an error)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=40_000, help="rows of a table written to (default 40,000)")
    parser.add_argument("--ops", type=int, default=5_000, help="PostgreSQL point writes a run (default 5,000)")
    parser.add_argument("--rocksdb-ops", type=int, default=200_000, help="RocksDB point operations a run")
    parser.add_argument("--load-rows", type=int, default=500_000, help="rows a load writes (default 500,000)")
    parser.add_argument("--url", help="a postgresql+psycopg:// URL (default: start a throwaway server)")
    parser.add_argument("--dir", default=None, help="where to create the RocksDB databases (default: a temp dir)")
    parser.add_argument("--only", choices=["postgres", "rocksdb"])
    args = parser.parse_args(argv)
    if min(args.rows, args.ops, args.rocksdb_ops, args.load_rows) < 1:
        parser.error("sizes must be positive")
    try:
        figures = []
        if args.only != "rocksdb":
            figures += _postgres(args)
        if args.only != "postgres":
            root = Path(tempfile.mkdtemp(prefix="kvctl-writes-", dir=args.dir))
            try:
                figures += run_rocksdb(root, args.rows, args.rocksdb_ops, args.load_rows)
            finally:
                shutil.rmtree(root, ignore_errors=True)
    except Exception:
        traceback.print_exc()
        return 2
    print(f"kvctl writes vs native, {args.rows:,} rows, {args.load_rows:,} loaded (ratio: kvctl/native throughput)")
    return 0 if report(figures) else TARGET_MISSED


def _postgres(args: argparse.Namespace) -> list[Figure]:
    if args.url is not None:
        return run_postgres(args.url, args.rows, args.ops, args.load_rows)
    from pg_server import ThrowawayPostgres, find_bindir

    bindir = find_bindir()
    if bindir is None:
        raise RuntimeError("no PostgreSQL server binaries found; pass --url")
    server = ThrowawayPostgres(bindir).start()
    try:
        return run_postgres(server.url, args.rows, args.ops, args.load_rows)
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())

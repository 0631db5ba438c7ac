"""Helpers for the copy and overwrite tests: tables of real-looking data with varied
versions, snapshots to compare stores, the staging tables a store holds (which
``list_tables`` hides), and a kvctl child process to kill."""

from __future__ import annotations

import datetime as dt
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import spi
from spi.staging import is_staging

REPO = Path(__file__).resolve().parent.parent
UTC = dt.UTC

ORDERS = spi.TableSpec(
    "orders",
    [
        spi.Field("region", "string"),
        spi.Field("id", "long"),
        spi.Field("status", "string"),
        spi.Field("qty", "int"),
        spi.Field("total", "double"),
        spi.Field("ratio", "float"),
        spi.Field("paid", "bool"),
        spi.Field("data", "bytes"),
        spi.Field("ts", "timestamp"),
    ],
    primary_key=["region", "id"],
    indexes=["status", "ts"],
)
COUNTERS = spi.TableSpec(
    "counters", [spi.Field("name", "string"), spi.Field("shard", "int"), spi.Field("n", "long")], ["name", "shard"]
)
BIG = spi.TableSpec(
    "big", [spi.Field("id", "long"), spi.Field("g", "long"), spi.Field("pad", "string")], ["id"], indexes=["g"]
)


def order_row(i: int) -> dict[str, Any]:
    """Row ``i`` of ORDERS: nulls, NaN, -0.0, extremes, non-ASCII, NUL bytes, old timestamps."""
    return {
        "region": ["eu", "us", "ap", "żółw 🐢", ""][i % 5],
        "id": (i - 1000) * 7_000_003,
        "status": [None, "open", "closed", "x" * 200][i % 4],
        "qty": [None, 0, 2**31 - 1, -(2**31), i][i % 5],
        "total": [None, -0.0, math.nan, math.inf, 1e300, i * 1.25][i % 6],
        "ratio": [None, 0.1, -3.5, math.nan][i % 4],
        "paid": [None, True, False][i % 3],
        "data": [None, b"", b"\x00\xff" * (i % 9), bytes(range(256))][i % 4],
        "ts": None
        if i % 7 == 0
        else dt.datetime(1969, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC) + dt.timedelta(minutes=i * 97, microseconds=i),
    }


def order_key(i: int) -> tuple[Any, ...]:
    """The key of :func:`order_row` ``i``."""
    row = order_row(i)
    return row["region"], row["id"]


def fill_real_data(url: str, n: int = 3000) -> None:
    """ORDERS (``n`` rows, versions 1 to 4, deletes and re-inserts), COUNTERS (a column
    added after rows were written), and an empty table."""
    with spi.connect(url) as p:
        p.admin.create(ORDERS)
        p.admin.create(spi.TableSpec("counters", COUNTERS.fields[:2], COUNTERS.primary_key))
        p.admin.create(spi.TableSpec("empty", [spi.Field("k", "string")], ["k"]))
        orders = p.table("orders")
        orders.load(order_row(i) for i in range(n))
        with p.transaction() as tx:
            t = tx.table("orders")
            for i in range(0, n, 3):
                t.update(order_key(i), {"status": "closed"})
            for i in range(0, n, 10):
                t.upsert({**order_row(i), "paid": True})
                t.upsert({**order_row(i), "qty": 5})
            for i in range(0, n, 50):
                t.delete(order_key(i))
                t.insert(order_row(i))
        p.table("counters").load({"name": f"c{i % 37}", "shard": i} for i in range(500))
        p.admin.create_or_update(COUNTERS)  # the stored layout now differs from a fresh table's
        counters = p.table("counters")
        for i in range(0, 500, 7):
            counters.increment((f"c{i % 37}", i), "n", i)


def snapshot(url: str) -> dict[str, tuple[spi.TableSpec, list[tuple[dict[str, Any], int]]]]:
    """Every table's spec and rows with their versions (NaN as "nan", so they compare)."""
    with spi.connect(url) as p:
        return {
            name: (p.admin.get_spec(name), [(_plain(r), r.version) for r in p.table(name).scan()])
            for name in p.admin.list_tables()
        }


def assert_same(src_url: str, dst_url: str) -> None:
    """``kvctl diff``'s check (:func:`spi.diff.compare`, versions included) finds no
    difference between any table of the two stores, and both hold the same tables."""
    from spi.diff import compare

    with spi.connect(src_url) as src, spi.connect(dst_url) as dst:
        assert src.admin.list_tables() == dst.admin.list_tables()
        for name in src.admin.list_tables():
            found = compare(src, dst, name, versions=True)
            assert list(found) == [], f"{name}: {found.stats}"


def _plain(row: spi.Row) -> dict[str, Any]:
    return {k: "nan" if isinstance(v, float) and math.isnan(v) else v for k, v in row.items()}


def staging_tables(url: str) -> list[str]:
    """The staging tables a store holds (read from its catalog: the SPI hides them)."""
    with spi.connect(url) as p:
        return staging_tables_of(p)


def staging_tables_of(p: Any, tx: Any = None) -> list[str]:
    """:func:`staging_tables` of an open provider (read in ``tx``, or a transaction of its own)."""
    if tx is None:
        with p.transaction() as own:
            return staging_tables_of(p, own)
    if p.store_id.startswith("rocksdb"):
        from spi.kv.layout import CATALOG

        names = [k[len(CATALOG) :].decode() for k, _ in tx.iterate(CATALOG, CATALOG + b"\xff", False)]
    else:
        import sqlalchemy as sa

        from providers.postgres.schema import catalog_table

        names = [r[0] for r in tx.execute(sa.select(catalog_table(p.schema).c.name)).fetchall()]
    return sorted(n for n in names if is_staging(n))


def kill_while_staging(url: str, proc: subprocess.Popen[str], rows: int) -> None:
    """SIGKILL ``proc``'s whole process group once a staging table in ``url`` holds at
    least ``rows`` rows (fail if the process ends first).

    Each look, and the kill, happen while the watcher holds the staging table still:
    on RocksDB its transaction holds the store, which every writer waits for; on
    PostgreSQL it takes a SHARE lock on the staging table, which a load into it and
    the swap wait for. So the process is killed at the point the look saw, never a
    moment later (after the swap)."""
    with spi.connect(url) as opened:
        watcher: Any = opened  # a provider-specific transaction below (PostgreSQL's execute)

        def staged_then_killed() -> bool:
            with watcher.transaction() as tx:
                names = staging_tables_of(watcher, tx)
                if not names:
                    return False
                if not watcher.store_id.startswith("rocksdb"):
                    import sqlalchemy as sa

                    tx.execute(sa.text(f'LOCK TABLE "{watcher.schema}"."{names[0]}" IN SHARE MODE'))
                if tx.table(names[0]).count() < rows:
                    return False
                os.killpg(proc.pid, signal.SIGKILL)
                return True

        try:
            wait_until("rows were staged", staged_then_killed, proc, timeout=300, every=0.01)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == -signal.SIGKILL


def fill_big(url: str, n: int, *, note: str = "") -> None:
    """Table ``big`` with ``n`` rows (version 2 on every seventh row)."""
    with spi.connect(url) as p:
        p.admin.create(BIG)
        t = p.table("big")
        t.load(({"id": i, "g": i % 100, "pad": f"{note}{i:012d}" * 3} for i in range(n)), batch_size=20_000)
        t.update_range(where=spi.col("g") == 7, changes={"pad": "seven"})


def kvctl_process(*args: str) -> subprocess.Popen[str]:
    """``python -m kvctl ARGS`` in a session of its own (so its whole process group can be killed)."""
    return subprocess.Popen(
        [sys.executable, "-m", "kvctl", *args],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


PEAK_RSS = """
import os, subprocess, sys
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(child.pid, 0)
print(usage.ru_maxrss, os.waitstatus_to_exitcode(status))
"""
"""Runs a command and prints its peak resident set (KiB) and exit code. A child's
``ru_maxrss`` counts what its parent had resident when it forked, so the measured
process must come from a small process like this one, not from a test or benchmark
holding a loaded table."""


def peak_rss(*command: str) -> tuple[int, float]:
    """Run ``command`` (it must succeed): its peak resident set in KiB and its wall time."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", PEAK_RSS, *command],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=True,
    )
    seconds = time.monotonic() - started
    peak, code = map(int, done.stdout.split())
    assert code == 0, done.stderr
    return peak, seconds


def wait_until(
    what: str, check: Callable[[], bool], proc: subprocess.Popen[str], timeout: float = 120, every: float = 0.05
) -> None:
    """Poll ``check`` every ``every`` seconds until it holds (fail if ``proc`` ends
    first or time runs out)."""
    deadline = time.monotonic() + timeout
    while not check():
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"the process ended (exit {proc.returncode}) before {what}: {out} {err}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(every)

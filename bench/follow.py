"""How far behind ``kvctl copy --follow`` runs while the source takes steady writes
(issue 24): a writer process upserts at a fixed rate into the source, a ``kvctl copy
--follow`` process applies them to the destination, and the lag of each write is the
destination's commit time of its event minus the time the writer wrote it.

Whole processes, as a user runs them: the writer, the follower and this script each
open the stores themselves (a RocksDB store is shared between them by hand-offs). The
destination table records a change feed (copied with the spec), so every applied
write leaves an event with its commit time; nothing else is measured.

Target: p95 lag <= 1 s at 200 writes/s, for RocksDB -> PostgreSQL and PostgreSQL ->
RocksDB. Exit status: 0 every target met, 3 a target missed (``TARGET_MISSED``,
bench/common.py), 2 an error, 1 a crash.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
from pathlib import Path

import spi
from bench.common import TARGET_MISSED

ROOT = Path(__file__).resolve().parents[1]
SPEC = spi.TableSpec("ticks", [spi.Field("k", "long"), spi.Field("written", "double")], ["k"], changes=True)
TARGET = 1.0
"""Seconds: the p95 lag each pair must stay under."""

WRITER = textwrap.dedent("""
    import sys, time, spi
    url, rate, count = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    with spi.connect(url) as p:
        t = p.table("ticks")
        start = time.monotonic()
        for i in range(count):
            pause = start + i / rate - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            t.upsert({"k": i, "written": time.time()})
""")


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def follow_lags(source: str, destination: str, rate: float, count: int) -> list[float]:
    """The lag of each of ``count`` writes made at ``rate`` a second into ``source``
    while ``kvctl copy --follow`` applies them to ``destination``."""
    with spi.connect(source) as p:
        p.admin.create(SPEC)
    follower = subprocess.Popen(
        [sys.executable, "-m", "kvctl", "copy", source, destination, "ticks", "--follow"],
        cwd=ROOT,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _until_created(destination)
        writer = subprocess.run(
            [sys.executable, "-c", WRITER, source, str(rate), str(count)],
            env=_env(),
            capture_output=True,
            text=True,
            timeout=count / rate + 120,
        )
        if writer.returncode != 0:
            raise RuntimeError(f"the writer failed: {writer.stderr}")
        lags = _until_applied(destination, count)
    finally:
        follower.send_signal(signal.SIGINT)
        try:
            follower.wait(timeout=30)
        except subprocess.TimeoutExpired:
            follower.kill()
    return lags


def _until_created(destination: str, timeout: float = 60.0) -> None:
    """Wait until the follower made the destination table (its copy is done)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with spi.connect(destination) as p:
            if p.admin.exists("ticks"):
                return
        time.sleep(0.1)
    raise RuntimeError("the follower did not create the destination table")


def _until_applied(destination: str, count: int, timeout: float = 120.0) -> list[float]:
    """Every write's lag, once the destination's feed holds all ``count`` of them."""
    deadline = time.monotonic() + timeout
    while True:
        with spi.connect(destination) as p:
            events = [e for e in p.changes("ticks") if e.op == "put" and e.row is not None]
        if len(events) >= count or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    if len(events) < count:
        raise RuntimeError(f"only {len(events)} of {count} writes reached the destination")
    return [e.time.timestamp() - e.row["written"] for e in events if e.row is not None]


def p95(values: list[float]) -> float:
    """The 95th percentile (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run each pair, print; exit 0 (targets met), TARGET_MISSED (one missed) or 2 (an error)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=200.0, help="writes a second (default 200)")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long the writer writes (default 10)")
    parser.add_argument("--url", help="a postgresql+psycopg:// URL (default: start a throwaway server)")
    args = parser.parse_args(argv)
    if args.rate <= 0 or args.seconds <= 0:
        parser.error("--rate and --seconds must be positive")
    count = max(1, int(args.rate * args.seconds))
    root = Path(tempfile.mkdtemp(prefix="kvctl-follow-"))
    server = None
    try:
        url = args.url
        if url is None:
            sys.path.insert(0, str(ROOT / "tests"))
            from pg_server import ThrowawayPostgres, find_bindir

            bindir = find_bindir()
            if bindir is None:
                raise RuntimeError("no PostgreSQL server binaries found; pass --url")
            server = ThrowawayPostgres(bindir).start()
            url = server.url
        pairs = {
            "rocksdb -> postgres": (f"rocksdb://{root}/a", _schema(url, f"follow_{os.getpid()}_a")),
            "postgres -> rocksdb": (_schema(url, f"follow_{os.getpid()}_b"), f"rocksdb://{root}/b"),
        }
        rows = [(name, follow_lags(src, dst, args.rate, count)) for name, (src, dst) in pairs.items()]
    except Exception:
        traceback.print_exc()
        return 2
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(root, ignore_errors=True)
    print(f"copy --follow lag, {count:,} writes at {args.rate:g}/s (seconds from the write to its applied commit)")
    print(f"{'pair':<24}{'median':>9}{'p95':>9}{'max':>9}{'target':>9}  result")
    ok = True
    for name, lags in rows:
        passed = p95(lags) <= TARGET
        ok = ok and passed
        median = sorted(lags)[len(lags) // 2]
        verdict = "pass" if passed else "FAIL"
        print(f"{name:<24}{median:>9.3f}{p95(lags):>9.3f}{max(lags):>9.3f}{'<=' + format(TARGET, 'g'):>9}  {verdict}")
    print("all targets met" if ok else "missed a target")
    return 0 if ok else TARGET_MISSED


def _schema(url: str, schema: str) -> str:
    """``url`` with ``?schema=schema`` (each pair its own, fresh)."""
    return f"{url}{'&' if '?' in url else '?'}schema={schema}"


if __name__ == "__main__":
    sys.exit(main())

"""etcd provider vs the raw HTTP/JSON gateway client, in one run against the same cluster.

    python bench/etcd.py [--rows 5000] [--ops 1000] [--url etcd://HOST:PORT,...]

Without ``--url`` a throwaway 3-member cluster is started (tests/etcd_cluster.py) and
stopped at the end. The raw side makes the gateway calls the provider's work comes
down to, through the same urllib3 client (:class:`providers.etcd.client.EtcdClient`),
on the very keys and values the provider stored, so each ratio measures the
provider's own overhead:

- auto-commit ``read`` of a row vs one ``/v3/kv/range`` of its key;
- auto-commit ``upsert`` of an existing row vs what a raw client's read-modify-write
  of a versioned row comes down to: a ``/v3/kv/range`` of the key, then a
  ``/v3/kv/put`` of the stored bytes (an upsert merges into the stored row and
  bumps its version, so it must read it first; the provider's commit is one ``Txn``
  whose compares make it serializable). A bare ``put`` is shown for information:
  one round trip against the provider's two;
- auto-commit full ``scan`` vs ``/v3/kv/range`` pages (1,000 keys each, the
  auto-commit page size) over the table's rows.

Each figure is the best of three runs on each side. Exit status: 0 every target
met, 3 a target missed (``TARGET_MISSED``, bench/common.py), 2 an error (e.g. no
cluster), 1 a crash.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import uuid
from collections.abc import Callable
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

import spi  # noqa: E402
from bench.common import TARGET_MISSED, Result, report  # noqa: E402
from providers.etcd.client import EtcdClient, b64  # noqa: E402
from spi.provider import AUTOCOMMIT_PAGE  # noqa: E402

SPEC = spi.TableSpec(
    "bench",
    [spi.Field("k", "long"), spi.Field("name", "string"), spi.Field("qty", "int"), spi.Field("note", "string")],
    ["k"],
)
TARGETS = {"read": 0.5, "upsert": 0.5, "scan": 0.5}
"""Minimum provider/raw ratio per operation (issue 25)."""
REPEAT = 3


def best(fn: Callable[[], int]) -> float:
    """Operations per second of ``fn`` (which returns how many it did), best of :data:`REPEAT`."""
    import time

    top = 0.0
    for _ in range(REPEAT):
        start = time.perf_counter()
        done = fn()
        top = max(top, done / (time.perf_counter() - start))
    return top


def run(url: str, n: int, ops: int) -> list[Result]:
    """Measure both sides on a fresh prefix of the cluster at ``url`` (deleted after)."""
    prefix = f"bench{uuid.uuid4().hex[:8]}"
    p: Any = spi.connect(f"{url}/{prefix}")
    raw = EtcdClient(p.options.endpoints, timeout=p.options.timeout)
    try:
        p.admin.create(SPEC)
        t = p.table("bench")
        t.load({"k": i, "name": f"name-{i:08d}", "qty": i % 1000, "note": "n" * 40} for i in range(n))
        with p.transaction() as tx:
            layout = tx.layout("bench")
        store_prefix = p._etcd.prefix
        row_prefix = store_prefix + layout.row_prefix
        keys = [row_prefix + layout.encode_key((i,)) for i in range(n)]
        rng = random.Random(7)
        picks = [rng.randrange(n) for _ in range(ops)]
        stored = {i: raw.range(keys[i])[1][0][1] for i in set(picks)}

        def prov_read() -> int:
            for i in picks:
                t.read((i,))
            return ops

        def raw_read() -> int:
            for i in picks:
                raw.range(keys[i])
            return ops

        def prov_upsert() -> int:
            for i in picks:
                t.upsert({"k": i, "name": f"name-{i:08d}", "qty": 1, "note": "u" * 40})
            return ops

        def raw_put() -> int:
            for i in picks:
                raw.call("/v3/kv/put", {"key": b64(keys[i]), "value": b64(stored[i])}, write=True)
            return ops

        def raw_upsert() -> int:
            for i in picks:
                raw.range(keys[i])
                raw.call("/v3/kv/put", {"key": b64(keys[i]), "value": b64(stored[i])}, write=True)
            return ops

        def prov_scan() -> int:
            return sum(1 for _ in t.scan())

        end = row_prefix[:-1] + bytes([row_prefix[-1] + 1])

        def raw_scan() -> int:
            count, start = 0, row_prefix
            while True:
                _, found, more = raw.range(start, end, limit=AUTOCOMMIT_PAGE)
                count += len(found)
                if not more or not found:
                    return count
                start = found[-1][0] + b"\x00"

        t.read((0,))  # warm both sides' connections
        raw.range(keys[0])
        return [
            Result("auto-commit read", best(prov_read), best(raw_read), TARGETS["read"]),
            Result("auto-commit upsert", upserts := best(prov_upsert), best(raw_upsert), TARGETS["upsert"]),
            Result("upsert vs a bare put", upserts, best(raw_put), None),
            Result("auto-commit full scan", best(prov_scan), best(raw_scan), TARGETS["scan"]),
        ]
    finally:
        start = (prefix + "/").encode()
        raw.call("/v3/kv/deleterange", {"key": b64(start), "range_end": b64(start[:-1] + b"0")}, write=True)
        raw.close()
        p.close()


def main() -> int:
    """Run the benchmark and print the table (see the module's docstring for the exit status)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=5000, help="rows in the table (default 5000)")
    parser.add_argument("--ops", type=int, default=1000, help="one-off reads and upserts per run (default 1000)")
    parser.add_argument("--url", default=None, help="etcd://HOST:PORT,... of a running cluster (default: start one)")
    args = parser.parse_args()
    if args.rows < 1 or args.ops < 1:
        parser.error("--rows and --ops must be positive")
    cluster = None
    try:
        url = args.url
        if url is None:
            import shutil

            from etcd_cluster import ThrowawayEtcd

            binary = shutil.which("etcd")
            if binary is None:
                print("bench/etcd.py: no etcd binary found (run scripts/ensure-etcd.sh) or pass --url", file=sys.stderr)
                return 2
            cluster = ThrowawayEtcd(binary).start()
            url = cluster.url
        results = run(url.rstrip("/"), args.rows, min(args.ops, args.rows * 10))
    except Exception as exc:
        print(f"bench/etcd.py: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    finally:
        if cluster is not None:
            cluster.stop()
    ok = report(f"etcd provider vs raw gateway calls ({args.rows:,} rows, {args.ops:,} one-off calls)", results, "raw")
    return 0 if ok else TARGET_MISSED


if __name__ == "__main__":
    sys.exit(main())

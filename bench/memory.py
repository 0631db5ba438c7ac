"""Memory provider throughput next to a plain ``dict`` in the same run.

    python bench/memory.py [--rows N]

Upserts and point reads run inside one transaction (the provider's fast path);
the scan reads every row in key order. The ratio is the figure; there is no target.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import spi
from bench.common import Result, rate, report

SPEC = spi.TableSpec(
    "bench",
    [spi.Field("id", "long"), spi.Field("name", "string"), spi.Field("score", "double"), spi.Field("tag", "string")],
    primary_key=["id"],
)


def rows(n: int) -> list[dict[str, object]]:
    """``n`` rows of about 100 bytes."""
    return [{"id": i, "name": f"user-{i:08d}-" + "x" * 60, "score": i * 0.5, "tag": f"t{i % 100}"} for i in range(n)]


def main() -> None:
    """Run the benchmark and print the ratios."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=100_000)
    n = parser.parse_args().rows
    data = rows(n)
    p = spi.connect("memory://")
    p.admin.create(SPEC)
    plain: dict[int, dict[str, object]] = {}

    def provider_upsert() -> None:
        with p.transaction() as tx:
            t = tx.table("bench")
            for r in data:
                t.upsert(r)

    def dict_upsert() -> None:
        for r in data:
            plain[r["id"]] = dict(r)  # type: ignore[index]

    def provider_read() -> None:
        with p.transaction() as tx:
            t = tx.table("bench")
            for i in range(n):
                t.read((i,))

    def dict_read() -> None:
        for i in range(n):
            plain.get(i)

    def provider_scan() -> None:
        with p.transaction() as tx:
            for _ in tx.table("bench").scan():
                pass

    def dict_scan() -> None:
        for _ in sorted(plain.items()):
            pass

    results = [
        Result("upsert (one transaction)", rate(n, provider_upsert), rate(n, dict_upsert)),
        Result("point read", rate(n, provider_read), rate(n, dict_read)),
        Result("full scan (key order)", rate(n, provider_scan), rate(n, dict_scan)),
    ]
    report(f"memory:// vs dict, {n:,} rows", results, "dict")
    p.close()


if __name__ == "__main__":
    main()

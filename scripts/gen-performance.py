"""Generate docs/performance.md from the benchmarks' own output.

    python scripts/gen-performance.py                 # quick sizes: run, save in .bench-out/, write the page
    python scripts/gen-performance.py --full          # the benches' default (full) sizes
    python scripts/gen-performance.py --from DIR      # rebuild the page from a saved run, nothing rerun
    python scripts/gen-performance.py --only writes   # rerun one bench; the others come from --out's saved run

Each bench prints its table and exits 0 when every target is met, 3 when one is
missed (``TARGET_MISSED`` in bench/common.py), 1 on a crash and 2 on another error;
the page shows each table as printed, the command that made it, and met/missed from
that exit code. The figures on the page are therefore always the current code's; the
history of what was optimised lives in CHANGELOG.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import TARGET_MISSED, machine  # noqa: E402

PAGE = ROOT / "docs" / "performance.md"
RUN_FILE = "run.json"
VERDICTS = {0: "all targets met", 1: "the bench crashed (see its output)", 2: "the bench failed (see its output)"}


@dataclass(frozen=True)
class Bench:
    """One benchmark script: what it measures and its quick and full command lines."""

    name: str
    title: str
    about: str
    quick: tuple[str, ...]
    full: tuple[str, ...]


BENCHES = (
    Bench(
        "writes",
        "Writes: kvctl against the native library",
        "Point writes (upsert, insert, update, increment, compare-and-swap, delete), range "
        "writes and loads through the SPI, against the same writes through rocksdict "
        "(and, in the full run, psycopg on PostgreSQL). Ratio: kvctl / native throughput.",
        ("bench/writes.py", "--only", "rocksdb", "--rows", "5000", "--rocksdb-ops", "20000", "--load-rows", "50000"),
        ("bench/writes.py",),
    ),
    Bench(
        "changes",
        "Change feeds: the cost of recording one, and watch latency",
        "The same writes on a table with and without `changes=True`, the cost of `prev`, "
        "and how long an event committed in another process takes to reach a watcher.",
        ("bench/changes.py", "--provider", "rocksdb", "--rows", "20000", "--writes", "500", "--events", "20"),
        ("bench/changes.py",),
    ),
    Bench(
        "follow",
        "Online copies: `kvctl copy --follow` lag",
        "Seconds from a write on the source to its applied commit on the target, "
        "RocksDB to PostgreSQL and back (a throwaway PostgreSQL server).",
        ("bench/follow.py", "--seconds", "3"),
        ("bench/follow.py",),
    ),
    Bench(
        "scale",
        "Flat cost at scale: the same commands at two sizes",
        "Whole `kvctl` processes (`put --file`, `scan --all`, `count --group-by`, `copy`, "
        "`delete --all`) on a 5-column table with one index, at a small and a large size, "
        "RocksDB and PostgreSQL: wall time, rows/s kept at the large size, peak RSS.",
        ("bench/scale.py", "--small", "20000", "--large", "100000"),
        ("bench/scale.py",),
    ),
    Bench(
        "diff",
        "Comparing stores: `kvctl diff` against scanning both sides",
        "Two equal tables, RocksDB and PostgreSQL: `kvctl diff` against `kvctl scan --all` of "
        "both sides and `cmp`; then 10 scattered differences; and the rows a PostgreSQL to "
        "PostgreSQL comparison reads into the client.",
        ("bench/diff.py",),
        ("bench/diff.py", "--full"),
    ),
)
BY_NAME = {b.name: b for b in BENCHES}


def run(out: Path, names: list[str], full: bool) -> None:
    """Run the named benches, saving each one's output and the run's facts in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    saved = out / RUN_FILE
    facts = json.loads(saved.read_text()) if saved.exists() else {"benches": {}}
    facts.update(machine=machine(), date=dt.date.today().isoformat())
    for name in names:
        bench = BY_NAME[name]
        command = [*(bench.full if full else bench.quick)]
        print(f"running {' '.join(command)}", file=sys.stderr, flush=True)
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, *command],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        failed = done.returncode not in (0, TARGET_MISSED)
        (out / f"{name}.out").write_text(done.stdout + (done.stderr if failed else ""))
        facts["benches"][name] = {
            "command": ["python", *command],
            "returncode": done.returncode,
            "target_missed": TARGET_MISSED,
            "seconds": round(time.monotonic() - started, 1),
            "size": "full" if full else "quick",
        }
        saved.write_text(json.dumps(facts, indent=2) + "\n")


def verdict(returncode: int, target_missed: int = TARGET_MISSED) -> str:
    """What a bench's exit code says about its targets; ``target_missed`` is the code that
    meant a missed target when the bench ran (1 in runs saved before ``TARGET_MISSED``)."""
    if returncode == target_missed:
        return "a target was missed"
    return VERDICTS.get(returncode, f"exit code {returncode}")


def page(out: Path) -> str:
    """The Markdown page built from the run saved in ``out``."""
    facts = json.loads((out / RUN_FILE).read_text())
    lines = [
        "# Performance",
        "",
        "<!-- Generated by scripts/gen-performance.py from the benches' output; do not edit.",
        "     `make perf-docs` regenerates it (quick sizes); see the end of the page for full sizes. -->",
        "",
        f"Machine: {facts['machine']}. Date: {facts['date']}.",
        "",
        "Each section is one benchmark's output as it printed it, with the command that",
        "made it. A bench exits 0 when it meets every target it prints and 3 when it",
        "misses one (`TARGET_MISSED` in bench/common.py; 1 is a crash, 2 another error),",
        "so the verdict below each table is the bench's own. What was optimised, and the",
        "figures before and after, is in CHANGELOG.md; the other benches",
        "(`bench/rocksdb.py`, `bench/memory.py`, `bench/postgres.py`, `bench/export.py`,",
        "`bench/cli.py`, ...) print their tables and exit the same way when run by hand.",
        "On a machine shared with other jobs figures move by up to 2x between runs, and",
        "small sizes favour fixed costs: a missed target on this page is a reason to",
        "rerun at full size on a quiet machine before concluding anything.",
        "",
    ]
    for bench in BENCHES:
        got = facts["benches"].get(bench.name)
        if got is None:
            continue
        output = (out / f"{bench.name}.out").read_text().rstrip()
        size = "quick sizes" if got["size"] == "quick" else "the bench's default (full) sizes"
        lines += [
            f"## {bench.title}",
            "",
            bench.about,
            "",
            f"`{' '.join(got['command'])}` ({size}, {got['seconds']:g} s):",
            "",
            "```text",
            output,
            "```",
            "",
            f"Result: {verdict(got['returncode'], got.get('target_missed', 1))}.",
            "",
        ]
    lines += [
        "## Regenerating",
        "",
        "Quick sizes (a few minutes on a busy 2-core machine, the figures on this page",
        "unless a section says otherwise): `make perf-docs`, or",
        "`python scripts/gen-performance.py`. Ratios at quick sizes are noisier and the",
        "tables smaller than at full size, where caches and batches reach their steady",
        "state. Full sizes, which need a PostgreSQL server's binaries for `writes`:",
        "`python scripts/gen-performance.py --full` (about half an hour). Either saves",
        "the raw output in `.bench-out/`; `python scripts/gen-performance.py --from",
        ".bench-out` rebuilds this page from it without rerunning anything.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the benches (or read a saved run) and write docs/performance.md."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="source", type=Path, help="build the page from this saved run; run nothing")
    parser.add_argument(
        "--out", type=Path, default=ROOT / ".bench-out", help="where runs are saved (default .bench-out)"
    )
    parser.add_argument("--full", action="store_true", help="the benches' default sizes instead of quick ones")
    parser.add_argument("--only", action="append", choices=sorted(BY_NAME), help="run only this bench (repeatable)")
    parser.add_argument("--page", type=Path, default=PAGE, help="the page to write (default docs/performance.md)")
    args = parser.parse_args(argv)
    source = args.source
    if source is None:
        run(args.out, args.only or [b.name for b in BENCHES], args.full)
        source = args.out
    if not (source / RUN_FILE).exists():
        parser.error(f"{source} holds no saved run ({RUN_FILE})")
    args.page.write_text(page(source))
    print(f"wrote {args.page}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

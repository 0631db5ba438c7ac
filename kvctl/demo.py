"""``make run``: a walk through kvctl on the embedded default store.

Creates a table, loads a generated sample file with ``put --file``, and shows get,
a range scan, a where-clause, incr and count, one line of explanation per step.
Each step runs the real ``kvctl`` command (as a child process), so what you see is
exactly what you would type. Re-runnable: the demo table is dropped and recreated.
"""

from __future__ import annotations

import csv
import random
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

TABLE = "demo_orders"
ROWS = 2000


def kvctl(explanation: str, *args: str, check: bool = True) -> int:
    """Explain a step in one line, show the command, run it."""
    if explanation:
        print(f"\n# {explanation}")
    print(f"$ kvctl {' '.join(_shell_word(a) for a in args)}", flush=True)
    code = subprocess.run([sys.executable, "-m", "kvctl", *args]).returncode
    if check and code != 0:
        raise SystemExit(f"demo step failed with exit code {code}")
    return code


def _shell_word(arg: str) -> str:
    """``arg`` quoted for a POSIX shell, preferring double quotes around where-clauses."""
    if "'" in arg and not any(c in arg for c in '"$`\\!'):
        return f'"{arg}"'
    return shlex.quote(arg)


def write_sample(path: Path, n: int) -> None:
    """``n`` generated orders as CSV (the header is the column list)."""
    rng = random.Random(7)
    with path.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["region", "id", "status", "total", "created"])
        for i in range(n):
            out.writerow(
                [
                    ("eu", "us", "ap")[i % 3],
                    i,
                    rng.choice(["open", "paid", "shipped"]),
                    round(rng.uniform(5, 1000), 2),
                    f"2024-05-{1 + i % 28:02d}T{i % 24:02d}:00:00Z",
                ]
            )


def main() -> None:
    """Run the walk-through."""
    print("kvctl demo on the embedded default store (RocksDB in your user data dir)")
    kvctl("Where does kvctl keep its data? No --url, no profile: the embedded default.", "config", "show")
    print(f"\n# Start clean: drop {TABLE} if an earlier run left it (exit 1 when it is not there).")
    kvctl("", "table", "drop", TABLE, "--yes", check=False)
    kvctl(
        "Create a table: key (region, id), a secondary index on status.",
        "table", "create", TABLE,
        "--field", "region:string", "--field", "id:long", "--field", "status:string",
        "--field", "total:double", "--field", "created:timestamp",
        "--pk", "region,id", "--index", "status",
    )  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="kvctl-demo-") as tmp:
        sample = Path(tmp) / "orders.csv"
        write_sample(sample, ROWS)
        kvctl(
            f"Bulk-load {ROWS} generated orders from a CSV file: checked first, then loaded in batches.",
            "put", TABLE, "--file", str(sample),
        )  # fmt: skip
    kvctl("Read one row by its full key.", "get", TABLE, "region=eu", "id=42")
    kvctl(
        "Scan a key range: region eu, ids 100 to 140, at most 5 rows (stderr says how to continue).",
        "scan", TABLE, "--ge", "region=eu", "--ge", "id=100", "--le", "region=eu", "--le", "id=140", "--limit", "5",
    )  # fmt: skip
    kvctl(
        "Filter with a where-clause; the status index narrows the read (--explain shows the plan).",
        "scan", TABLE, "--where", "status = 'open' and total >= 990", "--columns", "status,total",
    )  # fmt: skip
    kvctl("", "scan", TABLE, "--where", "status = 'open' and total >= 990", "--explain")
    kvctl("Add 10 to a number atomically; prints the new value.", "incr", TABLE, "region=eu", "id=42",
          "--column", "total", "--by", "10")  # fmt: skip
    kvctl("Count the open orders in region us.", "count", TABLE, "--prefix", "region=us", "--where", "status = 'open'")
    print("\n# Next: browse and edit these rows in the dashboard on the same store: kvctl dashboard")
    print("# (in this checkout: .venv/bin/kvctl dashboard; quit with q). Every command: kvctl --help")


if __name__ == "__main__":
    main()

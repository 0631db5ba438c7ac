"""Generate docs/reliability.md from the chaos campaign's JSON (bench/chaos.py).

    python scripts/gen-reliability.py                    # the page from .bench-out/chaos.json
    python scripts/gen-reliability.py --seconds 300      # run the campaign first (every provider)
    python scripts/gen-reliability.py --from FILE        # the page from another saved run

The figures on the page are the saved run's, as bench/chaos.py wrote them; the
page says what each workload checks and what each fault does.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "reliability.md"
SAVED = ROOT / ".bench-out" / "chaos.json"
NAMES = {"rocksdb": "RocksDB (several processes, one path)", "postgres": "PostgreSQL", "etcd": "etcd (3 members)"}

WORKLOADS = [
    (
        "bank",
        "Two processes transfer 1 to 5 units between 6 accounts, each transfer one `p.run` "
        "transaction that updates both balances and inserts the transfer's row into a ledger; "
        "a third process sums every account in one transaction. Checked: every committed sum "
        "is the initial total; at the end the total is unchanged, each balance is its initial "
        "one plus its ledger rows, every acknowledged transfer is in the ledger (else it was "
        "lost) and no transfer that failed is.",
    ),
    (
        "register",
        "Two processes write unique values to 4 keys and read them. Checked per key: a read "
        "returns the value of a write that was not refused, that began before the read ended, "
        "and that is not older than an acknowledged write that ended before the read began (a "
        "write whose outcome is unknown may take effect at any time); the final values the "
        "same way (a final value older than an acknowledged write is that write lost).",
    ),
    (
        "counter",
        "Two processes increment one counter. Checked: the final value is at least the "
        "acknowledged increments and at most those plus the unknown ones, and no two "
        "acknowledged increments returned the same value.",
    ),
    (
        "load",
        "`kvctl put TABLE --file` of 1,000 rows (`--load-rows`) in batches of 250 into a new table per round; "
        "a run that does not exit 0 (killed, store unavailable) is run again until one does. "
        "Checked: every row of every load that exited 0 is there with its value.",
    ),
    (
        "copy --follow",
        "A process writes unique values to the 20 keys of a change-fed table while `kvctl copy "
        "SRC DST feed --follow --mode append` follows it into a second store (restarted "
        "whenever it ends). At the end the source table is frozen (`kvctl table freeze`), a "
        "follower runs with `--until-caught-up` and `kvctl diff --versions` must find the "
        "stores equal; the writer's history is checked as a register's.",
    ),
    (
        "store",
        "At the end, `p.admin.verify` of every table of both stores: each row's index "
        "entries are there and no other ones.",
    ),
    (
        "processes",
        "(only when something was found) a traceback in any process's stderr, a `kvctl` exit "
        "code no fault explains, a follower that did not stop on SIGINT, or a client still "
        "running 20 s after being told to stop.",
    ),
]

FAULTS = [
    (
        "client-kill",
        "SIGKILL of a random `kvctl` process (a load or the follower) or client process (every "
        "provider; restarted by the campaign). Client faults hit `kvctl` processes twice, then "
        "client processes twice, and so on.",
    ),
    ("client-stop", "SIGSTOP of a random `kvctl` or client process, SIGCONT after the fault (every provider)."),
    (
        "full-disk",
        "RocksDB: the store's file system has no byte left (a tmpfs filled by a file, removed "
        "after the fault), or, where no tmpfs can be mounted, `kvctl` processes started during "
        "the fault get a file-size limit (RLIMIT_FSIZE, EFBIG) and the running load is killed "
        "so that its rerun meets it; the notes above say which.",
    ),
    ("server-crash", "PostgreSQL: `pg_ctl stop -m immediate` (a crash), started again after the fault."),
    ("server-stop", "PostgreSQL: `pg_ctl stop -m fast` (every session ended), started again after the fault."),
    ("server-hang", "PostgreSQL: SIGSTOP of every server process, SIGCONT after the fault."),
    ("leader-kill", "etcd: SIGKILL of the leader, restarted after the fault."),
    ("quorum-loss", "etcd: SIGKILL of the leader and a follower, both restarted after the fault."),
    (
        "partition",
        "etcd: one member (the leader or a random one) cut off from its peers and from clients: "
        "every member's client and peer traffic goes through loopback TCP proxies; the cut "
        "member's proxies close their connections and refuse new ones, and the other members' "
        "peer proxies close and refuse the connections it opens (known by the `X-Server-From` "
        "header of etcd's peer requests). Restored after the fault.",
    ),
]


def _codes(codes: dict[str, int], meanings: dict[str, str]) -> str:
    """``0 (done) x5, 3 (unavailable) x2``."""
    if not codes:
        return "none"
    return ", ".join(f"{code} ({meanings.get(code, 'unexplained')}) x{n}" for code, n in codes.items())


def page(run: dict[str, Any]) -> str:
    """The Markdown page of a saved run."""
    meanings = run.get("exit_meanings", {})
    lines = [
        "# Reliability",
        "",
        "<!-- Generated by scripts/gen-reliability.py from bench/chaos.py's JSON; do not edit. -->",
        "",
        f"Machine: {run['machine']}. Date: {run['date']}. Command: `{' '.join(run['command'])}`.",
        "",
        "A chaos campaign runs workloads whose results can be checked — a bank, a register per",
        "key, a counter, bulk loads and an online copy — as real client and `kvctl` processes on",
        "each provider, while faults are injected on a schedule: a quiet spell, a fault held for",
        "a while, healed, the next one. Every client logs each operation's invocation and",
        "outcome (ok; failed: the error says it did not happen; unknown: it may have, e.g. the",
        "store was unavailable or the answer was lost) to a history that is checked at the end",
        "against the final state. An acknowledged write that is missing at the end is *lost*;",
        "both figures below must be 0, and `bench/chaos.py` exits 3 when either is not.",
        "",
        "| provider | seconds | operations | faults | acknowledged writes lost | invariant violations "
        "| longest unavailability | kvctl exit codes |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for name, got in run["providers"].items():
        lines.append(
            f"| {NAMES.get(name, name)} | {got['seconds']:g} | {got['operations']:,} | {len(got['faults'])} "
            f"| {got['lost']} | {got['violations']} | {got['longest_unavailability']:.1f} s "
            f"| {_codes(got['exit_codes'], meanings)} |"
        )
    lines += [
        "",
        "Longest unavailability: the longest time in which no client operation of any workload",
        "succeeded (a workload's *longest gap* below: of its own operations). Exit codes: those",
        "of every `kvctl` process (loads, followers, the final freeze, catch-up and diff); -9",
        "is a SIGKILL by the campaign, 130 the follower interrupted at the end; a traceback or",
        "a code no fault explains is a violation. *Unknown* outcomes are mostly",
        "`ProviderUnavailableError`s while a server was down or hung, the disk full or quorum",
        "lost: such an error does not promise that nothing was written, so the checks accept",
        "either. *Failed* ones ended with an error that says nothing was written, such as a",
        "`ConflictError` after `p.run`'s retries.",
        "",
    ]
    for name, got in run["providers"].items():
        lines += _provider(name, got)
    lines += ["## Workloads", ""]
    lines += [f"- **{name}**: {text}" for name, text in WORKLOADS]
    lines += ["", "## Faults", ""]
    lines += [f"- **{name}**: {text}" for name, text in FAULTS]
    lines += [
        "",
        "Faults come one at a time, each held for 1 to 4 s (0.5 to 1.5 s in runs shorter than",
        "30 s) after a quiet spell of half that, the provider's own faults alternating with",
        "client faults; the schedule is seeded (`--seed`). After the last one everything is",
        "healed and the workloads run on for a moment before they stop.",
        "",
        "## Rerunning",
        "",
        "`python bench/chaos.py --provider all --seconds 300` (about 20 minutes), then",
        "`python scripts/gen-reliability.py` (or `python scripts/gen-reliability.py --seconds",
        "300` for both). One provider: `--provider rocksdb|postgres|etcd`. It starts its own",
        "PostgreSQL server and etcd cluster (the binaries of `scripts/ensure-postgres.sh` and",
        "`scripts/ensure-etcd.sh`). `--keep` keeps the histories and each process's stderr; a",
        "run that found a lost write or a violation keeps them anyway and prints where.",
        "The test suite runs a short campaign (`tests/test_chaos_bench.py`: a few seconds per",
        "provider, so a few faults of each provider's list, not all of them) and checks its",
        "figures.",
        "",
    ]
    return "\n".join(lines)


def _provider(name: str, got: dict[str, Any]) -> list[str]:
    """One provider's section: its workloads and faults."""
    lines = [
        f"## {NAMES.get(name, name)}",
        "",
        "| workload | operations | ok | failed | unknown | lost | violations | longest gap |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for workload, r in got["workloads"].items():
        gap = "-" if r["longest_gap"] is None else f"{r['longest_gap']:.1f} s"
        lines.append(
            f"| {workload} | {r['operations']:,} | {r['ok']:,} | {r['failed']:,} | {r['unknown']:,} "
            f"| {r['lost']} | {r['violations']} | {gap} |"
        )
    kinds = ", ".join(f"{kind} x{n}" for kind, n in got["fault_counts"].items())
    lines += ["", f"Faults: {kinds}; clients restarted after a kill: {got['client_restarts']}.", ""]
    notes = [*got["notes"], *(n for r in got["workloads"].values() for n in r["notes"])]
    lines += [f"- {note}" for note in notes]
    examples = [f"{w}: {text}" for w, r in got["workloads"].items() for text in r["examples"]]
    if examples:
        lines += ["", "Violations found:", ""] + [f"- {text}" for text in examples]
    return [*lines, ""]


def main(argv: list[str] | None = None) -> int:
    """Optionally run the campaign, then write the page."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--from", dest="source", type=Path, default=SAVED, help="the saved run (.bench-out/chaos.json)")
    parser.add_argument("--seconds", type=float, help="run bench/chaos.py --provider all for this long first")
    parser.add_argument("--page", type=Path, default=PAGE, help="the page to write (default docs/reliability.md)")
    args = parser.parse_args(argv)
    if args.seconds is not None:
        command = [sys.executable, "bench/chaos.py", "--provider", "all", "--seconds", f"{args.seconds:g}"]
        done = subprocess.run([*command, "--out", str(args.source)], cwd=ROOT)
        if done.returncode not in (0, 3):
            return done.returncode
    if not args.source.exists():
        parser.error(f"{args.source} does not exist: run python bench/chaos.py first (or pass --seconds)")
    args.page.write_text(page(json.loads(args.source.read_text())))
    print(f"wrote {args.page}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Chaos campaign (issue 39): workloads with checkable invariants on RocksDB (several
processes on one path), PostgreSQL and a 3-member etcd cluster while faults are
injected on a schedule; docs/reliability.md is generated from its JSON
(scripts/gen-reliability.py).

    python bench/chaos.py --provider rocksdb|postgres|etcd|all --seconds N [--out .bench-out/chaos.json]

Per provider, for ``--seconds``: client processes (bench/chaos_clients.py) run a
bank (transfers between accounts in transactions, with a ledger, and readers summing
every account in one transaction), a register per key (unique writes, reads), a
counter (increments) and the writer of a change-fed table, each logging every
operation's invocation and outcome; ``kvctl put --file`` loads run round after round
(a run cut short is rerun until it exits 0) and a ``kvctl copy --follow`` runs from
the change-fed table into a second store (restarted whenever it ends). Meanwhile
the faults of bench/chaos_faults.py are injected. Then every fault is healed, the
clients stop, the last load is finished, the source table is frozen, a follower
catches up and ``kvctl diff`` compares the two stores; bench/chaos_check.py checks
the histories against the final state.

Exit status: 0 no acknowledged write lost and no invariant violated, 3 some were
(``TARGET_MISSED``, bench/common.py; the work folder with the histories is kept and
named), 2 the campaign cannot run (no server binaries, no tmpfs for ``--full-disk
tmpfs``), 1 a crash.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import json
import random
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from bench import chaos_check as check  # noqa: E402
from bench.chaos_clients import FEED_KEYS, REGISTER_KEYS, prepare  # noqa: E402
from bench.chaos_faults import CannotRun, Environment, inject_faults, make_environment, missing  # noqa: E402
from bench.chaos_runners import EXPECTED_EXITS, FollowRunner, LoadRunner, Processes, Supervisor, open_store, retry  # noqa: E402
from bench.common import TARGET_MISSED, machine  # noqa: E402

PROVIDERS = ("rocksdb", "postgres", "etcd")
CLIENTS = {"bank": 2, "bank-read": 1, "register": 2, "counter": 2, "feed": 1}
"""Client processes per workload."""
HISTORIES = ("bank", "register", "counter", "feed")


def campaign(env: Environment, seconds: float, folder: Path, seed: int, load_rows: int) -> dict[str, Any]:
    """Run the workloads on ``env`` while faults are injected; the provider's figures."""
    rng = random.Random(seed)
    with open_store(env.url) as p:
        retry(lambda: prepare(p))
    procs = Processes(folder)
    supervisor = Supervisor(procs, env.url, folder, CLIENTS, seed)
    load = LoadRunner(procs, env.url, folder, load_rows)
    follow = FollowRunner(procs, env.url, env.copy_url)
    try:
        start = time.monotonic()
        for thread in (supervisor, load, follow):
            thread.start()
        hold = (0.5, 1.5) if seconds < 30 else (1.0, 4.0)
        faults = inject_faults(env, procs, rng, start + seconds, hold)
        env.heal_all()
        procs.cont_all()
        time.sleep(min(2.0, max(0.5, seconds / 20)))  # the workloads run on after the last fault
        end = time.monotonic()
        hung = supervisor.stop(timeout=20)
        load.stop()
        follow.stop()
        load.finish()
        results = _check(env, folder, (start, end), load, follow)
    finally:
        (folder / "stop").touch()
        for runner in (supervisor, load, follow):
            runner.halt()
        leftover = procs.kill_all()
    problems = procs.problems + [f"client {name} still running 20 s after the end: killed" for name in hung]
    if problems:
        results.append(check.WorkloadResult("processes", longest_gap=None))
        for text in problems:
            results[-1].violate(text)
    ops = [o for name in HISTORIES for o in check.read_history(folder, name)]
    gap = check.longest_gap((o.completed for o in ops if o.outcome == "ok" and o.completed), (start, end))
    return {
        "seconds": round(end - start, 1),
        "operations": sum(r.operations for r in results),
        "faults": faults,
        "fault_counts": dict(Counter(f["kind"] for f in faults)),
        "lost": sum(r.lost for r in results),
        "violations": sum(r.violations for r in results),
        "longest_unavailability": round(gap, 2),
        "exit_codes": {str(k): v for k, v in sorted(procs.exits.items())},
        "client_exit_codes": {str(k): v for k, v in sorted(procs.client_exits.items())},
        "client_restarts": sum(supervisor.restarts.values()),
        "workloads": {r.name: r.as_json() for r in results},
        "notes": env.notes + ([f"still running at the end and killed: {', '.join(leftover)}"] if leftover else []),
    }


def _check(
    env: Environment, folder: Path, window: tuple[float, float], load: LoadRunner, follow: FollowRunner
) -> list[check.WorkloadResult]:
    """Read the final state and check every workload."""
    with open_store(env.url) as p:
        balances = retry(lambda: {r["acct"]: r["balance"] for r in p.table("bank").scan()})
        ledger = retry(lambda: {r["id"]: r.to_dict() for r in p.table("ledger").scan()})
        registers = retry(lambda: _values(p, "register", REGISTER_KEYS))
        counter = retry(lambda: p.table("counter").read(("c",)))
        feed = retry(lambda: _values(p, "feed", FEED_KEYS))
    results = [
        check.check_bank(check.read_history(folder, "bank"), balances, ledger, window),
        check.check_register("register", check.read_history(folder, "register"), registers, window),
        check.check_counter(check.read_history(folder, "counter"), None if counter is None else counter["n"], window),
        load.check(),
    ]
    follow_result = check.check_register("copy --follow", check.read_history(folder, "feed"), feed, window, None)
    follow.finish(follow_result)
    results.append(follow_result)
    results.append(_verify(env))
    return results


def _verify(env: Environment) -> check.WorkloadResult:
    """``p.admin.verify`` of every table of both stores (rows against index entries),
    where the provider can."""
    result = check.WorkloadResult("store", longest_gap=None)
    for url in (env.url, env.copy_url):
        with open_store(url) as p:
            if "verify" not in p.capabilities:
                continue
            for table in retry(p.admin.list_tables):
                found: list[str] = retry(functools.partial(p.admin.verify, table))
                result.operations += 1
                result.ok += not found
                for problem in found:
                    result.violate(f"{table}: {problem}")
    result.notes.append(f"p.admin.verify: {result.operations} tables checked")
    return result


def _values(p: Any, table: str, keys: int) -> dict[int, str | None]:
    """Each key's value (None: no row)."""
    rows = {r["k"]: r["v"] for r in p.table(table).scan()}
    return {k: rows.get(k) for k in range(keys)}


def print_summary(name: str, figures: dict[str, Any]) -> None:
    """A few lines per provider on stdout."""
    codes = ", ".join(f"{code} ({n})" for code, n in figures["exit_codes"].items()) or "none"
    print(
        f"{name}: {figures['operations']:,} operations, {len(figures['faults'])} faults "
        f"({', '.join(f'{k} {v}' for k, v in figures['fault_counts'].items())}), "
        f"{figures['lost']} acknowledged writes lost, {figures['violations']} invariant violations, "
        f"longest unavailability {figures['longest_unavailability']:.1f} s, kvctl exit codes {codes}"
    )
    for workload, result in figures["workloads"].items():
        for text in result["examples"]:
            print(f"  {workload}: {text}")


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run each provider's campaign, save the JSON (see the module's docstring)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--provider", choices=[*PROVIDERS, "all"], default="all", help="default all")
    parser.add_argument("--seconds", type=float, default=60.0, help="seconds of faults per provider (default 60)")
    parser.add_argument("--out", type=Path, default=ROOT / ".bench-out" / "chaos.json", help="the JSON written")
    parser.add_argument("--seed", type=int, default=39, help="the fault schedule's seed (default 39)")
    parser.add_argument("--load-rows", type=int, default=1000, help="rows of each kvctl put --file (default 1000)")
    parser.add_argument(
        "--full-disk",
        choices=["auto", "tmpfs", "rlimit"],
        default="auto",
        help="how RocksDB's disk fills: a tmpfs (root), a file-size limit, or the first that works (default)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the work folder (histories, stderr) and name it")
    args = parser.parse_args(argv)
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        # Started in the background by a shell: the processes would inherit the ignored
        # SIGINT, and the follower must stop on one at the end.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if args.seconds <= 0 or args.load_rows <= 0:
        parser.error("--seconds and --load-rows must be positive")
    names = PROVIDERS if args.provider == "all" else (args.provider,)
    for name in names:
        if (lacking := missing(name)) is not None:
            print(f"bench/chaos.py: {name}: {lacking}", file=sys.stderr)
            return 2
    command = ["python", "bench/chaos.py", "--provider", args.provider, "--seconds", f"{args.seconds:g}"]
    for option, value, default in (("--seed", args.seed, 39), ("--load-rows", args.load_rows, 1000)):
        command += [option, str(value)] if value != default else []
    report: dict[str, Any] = {
        "command": command,
        "date": dt.date.today().isoformat(),
        "machine": machine(),
        "seconds": args.seconds,
        "providers": {},
    }
    work = Path(tempfile.mkdtemp(prefix="kvctl-chaos-work-"))
    failed = False
    try:
        for i, name in enumerate(names):
            folder = work / name
            folder.mkdir()
            try:
                env = make_environment(name, args.full_disk)
            except CannotRun as exc:
                print(f"bench/chaos.py: {name}: {exc}", file=sys.stderr)
                return 2
            try:
                figures = campaign(env, args.seconds, folder, args.seed + i, args.load_rows)
            finally:
                env.close()
            report["providers"][name] = figures
            print_summary(name, figures)
            failed = failed or bool(figures["lost"] or figures["violations"])
    finally:
        if failed or args.keep:
            print(f"bench/chaos.py: the histories are kept in {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    report["exit_meanings"] = {str(k): v for k, v in EXPECTED_EXITS.items()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)
    return TARGET_MISSED if failed else 0


if __name__ == "__main__":
    sys.exit(main())

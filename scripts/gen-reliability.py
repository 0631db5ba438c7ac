"""Generate docs/reliability.md from the chaos campaign's JSON (bench/chaos.py).

    python scripts/gen-reliability.py                    # the page from .bench-out/chaos.json
    python scripts/gen-reliability.py --seconds 300      # run the campaign first (every provider)
    python scripts/gen-reliability.py --from FILE        # the page from another saved run

The figures on the page are the saved run's, as bench/chaos.py wrote them; the
page says what each workload checks and what each fault does, and maps every fault
(the campaign's, issue 39's attack's and the holes it found) to the tests of the suite
that inject it (:data:`FAULT_TESTS`, :data:`HOLE_TESTS`; tests/test_chaos_bench.py
checks that each test named exists and that the page has the map as written here).
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


T = "tests/"
FAULT_TESTS: list[tuple[str, str, list[str]]] = [
    (
        "**client-kill** of a bulk load (`kvctl put --file`, `load`)",
        "the batches it committed stay whole (etcd: pieces of one, each a transaction), a prefix of the input, "
        "each row with its change event and index entries",
        [
            T + "test_rocksdb_processes.py::test_sigkill_during_bulk_load_keeps_whole_batches",
            T + "test_kv_changes.py::test_sigkill_during_a_load_into_a_change_fed_table_keeps_rows_and_events_together",
            T + "test_process_faults.py::test_a_load_killed_part_way_keeps_what_it_committed_whole",
        ],
    ),
    (
        "**client-kill** of `kvctl copy --mode overwrite`",
        "the destination keeps its old rows",
        [T + "test_copy.py::test_killed_overwrite_leaves_the_old_rows"],
    ),
    (
        "**client-kill** of `kvctl copy --follow` while a writer writes, then resumed",
        "no row copied again; every source event after the copy in the destination's feed once, in order; "
        "the stores equal",
        [T + "test_copy_follow.py::test_follow_a_writer_kill_and_resume"],
    ),
    (
        "**client-kill** of a process inside a transaction",
        "nothing of it is seen (rows, increments, events) and the keys it wrote are free at once",
        [T + "test_process_faults.py::test_a_process_killed_inside_a_transaction_leaves_nothing"],
    ),
    (
        "Ctrl-C or SIGTERM of a bulk command",
        "exit 130 or 143 and `N of M rows written` / `N revisions applied`, what stayed, and the command "
        "that finishes the job",
        [
            T + "test_cli_stop_partway.py::test_put_file_stopped_part_way",
            T + "test_cli_stop_partway.py::test_copy_terminated_part_way",
            T + "test_cli_stop_partway.py::test_apply_interrupted_part_way",
            T + "test_cli_stop_partway.py::test_copy_follow_terminated_says_revisions_applied",
        ],
    ),
    (
        "**client-stop**: a process SIGSTOPped holding a RocksDB path",
        "the others give up at their busy timeout (unavailable) or wait, and get in once it goes on",
        [T + "test_rocksdb_processes.py::test_busy_path_waits_then_fails_with_unavailable"],
    ),
    (
        "**full-disk**: a RocksDB commit or `put --file`'s temp spool that cannot grow",
        "exit 3, one line: the spool and `TMPDIR` named, nothing written; a commit's failure blames no input "
        "line, says how many rows stayed, and the store takes the rest once there is room",
        [
            T + "test_full_disk.py::test_a_spool_that_cannot_grow_is_named_and_nothing_is_written",
            T + "test_full_disk.py::test_a_rocksdb_commit_on_a_full_disk_exits_3_and_the_store_recovers",
        ],
    ),
    (
        "**server-crash**, **server-stop**: PostgreSQL stopped hard (`-m immediate`) or fast",
        "the open transaction's commit, pooled and fresh calls are unavailable (exit 3) at once; started "
        "again, the same provider serves every acknowledged row and nothing of the open transaction",
        [T + "test_postgres_timeouts.py::test_a_server_that_goes_down_is_unavailable_then_serves_what_it_acknowledged"],
    ),
    (
        "**server-hang**: PostgreSQL's processes SIGSTOPped",
        "statements on open connections are unavailable after the silence limit, a fresh command exits 3 "
        "after the connect timeout (5 s), and the provider recovers when the server goes on",
        [
            T + "test_postgres_timeouts.py::test_a_server_hung_with_connections_open_is_noticed",
            T + "test_postgres_timeouts.py::test_a_statement_in_a_transaction_on_a_hung_server_says_so",
            T + "test_postgres_timeouts.py::test_commands_against_a_stopped_server_exit_3_within_the_connect_timeout",
            T
            + "test_cli_silent_server.py::test_a_fresh_command_against_a_silent_server_exits_3_after_the_connect_timeout",
        ],
    ),
    (
        "**leader-kill**: the etcd leader SIGKILLed",
        "calls go on through the other members; a load keeps every acknowledged batch and none in part; "
        "a watch sees every event once",
        [
            T + "test_etcd_failover.py::test_calls_continue_when_the_leader_dies",
            T + "test_etcd_failover.py::test_a_bulk_load_survives_a_killed_leader_batch_by_batch",
            T + "test_etcd_failover.py::test_a_watch_fed_by_another_process_survives_a_killed_leader",
        ],
    ),
    (
        "**quorum-loss**: two etcd members SIGKILLed",
        "calls are unavailable within the timeout and write nothing; a commit sent lands whole or not at all; "
        "the CLI exits 3",
        [
            T + "test_etcd_failover.py::test_without_quorum_calls_fail_within_the_timeout_and_write_nothing",
            T + "test_etcd_failover.py::test_a_commit_sent_without_quorum_lands_whole_or_not_at_all",
            T + "test_etcd_failover.py::test_the_cli_exits_3_without_quorum",
        ],
    ),
    (
        "**partition**: the etcd leader cut off from its peers and clients",
        "writes go on through a new leader; a client reaching only the cut member is told it is unavailable; "
        "healed, that member serves every acknowledged write",
        [T + "test_etcd_failover.py::test_a_partitioned_leader_is_replaced_and_catches_up"],
    ),
    (
        "Overlapping `kvctl put --file` loads of the same keys",
        "each exits 0; every row whole from one input; each load's write counted (a row's version is the "
        "number of loads), one event each",
        [T + "test_process_faults.py::test_overlapping_loads_of_the_same_keys_all_finish_and_lose_nothing"],
    ),
    (
        "Processes incrementing one counter at once",
        "the exact total, one event per increment",
        [
            "spi/testing/conformance/processes.py::test_concurrent_increments_from_processes",
            "spi/testing/conformance/processes.py::test_concurrent_increments_from_processes_record_one_event_each",
            T + "test_cli_process.py::test_concurrent_incr_processes_never_lose_an_increment",
            T + "test_etcd_failover.py::test_processes_incrementing_one_key_get_the_exact_total",
        ],
    ),
    (
        "A conflict that outlasts the destination's retries under `copy --follow`",
        "the follower applies the revision again after a pause (said once on stderr) instead of exiting",
        [T + "test_copy_follow.py::test_a_conflict_that_outlasts_the_destinations_retries_is_applied_again"],
    ),
    (
        "All of the above at random, on every provider (this campaign, a few seconds each)",
        "0 acknowledged writes lost, 0 invariant violations",
        [T + "test_chaos_bench.py::test_a_short_campaign_on_every_provider"],
    ),
]
"""Each fault (campaign kinds in bold), what must hold, and the tests that inject it."""

HOLE_TESTS: list[tuple[str, str, list[str]]] = [
    (
        "etcd `put --file` into a table with an index at stock limits (60,000 rows failed part-way)",
        "a 10,000-row batch (the default) cut into pieces that fit, every row loaded",
        [T + "test_etcd_limits.py::test_put_file_copy_and_apply_into_a_stock_cluster"],
    ),
    (
        "JSON nested 100,000 deep (`put --file`, `put ROW_JSON`, `txn`, `apply`)",
        "exit 2, one `error:` line",
        [T + "test_cli_bad_input.py::test_bad_json_exits_2"],
    ),
    (
        "`--ttl 99999999999d`",
        "exit 2, one `error:` line",
        [T + "test_cli_bad_input.py::test_durations_and_numbers_out_of_range_exit_2"],
    ),
    (
        "CSV fields above 128 KiB",
        "loaded up to the value limit; beyond it exit 2 naming the line",
        [T + "test_cli_bad_input.py::test_csv_and_tsv_fields_take_values_up_to_the_limit"],
    ),
    (
        "A password in `--url` visible in `ps`",
        "gone from the process's command line as it starts",
        [
            T + "test_cli_silent_server.py::test_a_password_in_url_is_gone_from_the_command_line",
            T + "test_cli_silent_server.py::test_passwords_in_copy_arguments_and_url_equals_are_gone",
        ],
    ),
    (
        "RocksDB stores created world-readable",
        "new store folders are private (0700)",
        [
            T + "test_store_privacy.py::test_a_new_rocksdb_store_is_private",
            T + "test_store_privacy.py::test_the_default_store_folders_are_private",
        ],
    ),
    (
        "`etcd://host:2379/../../` taken as a prefix",
        "a prefix with a `.`, `..` or empty part is refused",
        [T + "test_store_privacy.py::test_an_etcd_prefix_with_a_dot_or_empty_part_is_refused"],
    ),
    (
        "A fresh command against a hung PostgreSQL exiting after 7.1 s",
        "exit 3 after the connect timeout (5 s) and the process's start-up",
        [
            T
            + "test_cli_silent_server.py::test_a_fresh_command_against_a_silent_server_exits_3_after_the_connect_timeout"
        ],
    ),
    (
        "`copy --follow` from RocksDB SIGKILLed and resumed while a writer runs",
        "no source write twice in the destination's feed",
        [T + "test_copy_follow.py::test_follow_a_writer_kill_and_resume"],
    ),
]
"""Issue 39's holes (each fixed) and the tests that keep them closed."""


def fault_section() -> list[str]:
    """The page's "Faults and their tests" section (written here, not from a run)."""
    lines = [
        "## Faults and their tests",
        "",
        "Every fault above, those of the attack on the tree in issue 39 (SIGKILL of loads, copies,",
        "`copy --follow` and transactions; PostgreSQL stopped hard and hung; the etcd leader killed and",
        "quorum lost; a full disk; overlapping loads; processes incrementing one counter) and the holes",
        "it found have tests in the suite that inject them for real — processes, signals, servers —",
        "and check what must hold. `tests/test_chaos_bench.py` checks that every test named here",
        "exists.",
        "",
    ]
    for title, rows in (("Faults", FAULT_TESTS), ("Holes found by issue 39 (fixed)", HOLE_TESTS)):
        lines += [f"### {title}", "", "| fault | what must hold | tests |", "| --- | --- | --- |"]
        lines += [f"| {fault} | {holds} | {', '.join(f'`{t}`' for t in tests)} |" for fault, holds, tests in rows]
        lines.append("")
    return lines


def named_tests() -> list[str]:
    """Every ``path::test_name`` the map names."""
    return [test for _, _, tests in FAULT_TESTS + HOLE_TESTS for test in tests]


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
        *fault_section(),
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

"""The chaos campaign (bench/chaos.py, issue 39): its checker finds what it must on
made-up histories, and a short campaign on every provider (4 s of faults each, so
the first few faults of each provider's schedule) loses nothing and breaks no
invariant; docs/reliability.md's generator reads its JSON, and the page's map of
faults to tests names tests that exist."""

from __future__ import annotations

import json
import os
import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import need
from pg_server import find_bindir

from bench.chaos_check import Op, check_bank, check_counter, check_register, longest_gap
from bench.chaos_clients import ACCOUNTS, INITIAL_BALANCE, INITIAL_VALUE

ROOT = Path(__file__).resolve().parents[1]
WINDOW = (0.0, 100.0)


def _write(v: str, began: float, ended: float | None, outcome: str = "ok", k: int = 0) -> Op:
    return Op("w", "write", {"k": k, "v": v}, began, ended, outcome if ended is not None else "unknown")


def _read(v: str | None, began: float, ended: float, k: int = 0) -> Op:
    return Op("r", "read", {"k": k}, began, ended, "ok", {"v": v})


def test_register_reads_and_final_values() -> None:
    writes = [_write("a", 1, 2), _write("b", 3, 4), _write("c", 10, None), _write("x", 20, 21, "fail")]
    fine = [_read("b", 5, 6), _read("a", 3.5, 6), _read("c", 11, 12), _read(INITIAL_VALUE, 0.5, 1.5)]
    result = check_register("register", writes + fine, {0: "c"}, WINDOW)
    assert (result.violations, result.lost) == (0, 0), result.examples
    stale = [_read("a", 5, 6), _read("zzz", 5, 6), _read("x", 22, 23), _read(INITIAL_VALUE, 5, 6)]
    result = check_register("register", writes + stale, {0: "a"}, WINDOW)
    assert (result.violations, result.lost) == (5, 1), result.examples
    assert "older than an acknowledged write" in result.examples[0] and "no write wrote" in result.examples[1]
    assert "a write that failed" in result.examples[2]
    absent = check_register("feed", [_write("a", 1, 2)], {0: None, 1: None}, WINDOW, None)
    assert (absent.violations, absent.lost) == (1, 1)  # key 0 lost its acknowledged write; key 1 was never written


def _incr(value: int | None) -> Op:
    return Op(
        "c", "incr", {}, 1.0, None if value is None else 2.0, "unknown" if value is None else "ok", {"value": value}
    )


def test_counter_bounds() -> None:
    ops = [_incr(1), _incr(2), _incr(3), _incr(None)]
    assert check_counter(ops, 3, WINDOW).violations == check_counter(ops, 4, WINDOW).violations == 0
    low = check_counter(ops, 2, WINDOW)
    assert (low.lost, low.violations) == (1, 2)  # one lost, and the increment that returned 3 is gone
    assert check_counter(ops, 5, WINDOW).violations == 1
    assert check_counter([_incr(1), _incr(1)], 2, WINDOW).violations == 1  # two increments returned 1


def test_bank_totals_ledger_and_lost_transfers() -> None:
    ops = [
        Op("b", "transfer", {"id": "t1", "src": 0, "dst": 1, "amount": 5}, 1, 2, "ok"),
        Op("b", "transfer", {"id": "t2", "src": 1, "dst": 2, "amount": 3}, 3, None),
        Op("r", "read", {}, 4, 5, "ok", {"total": ACCOUNTS * INITIAL_BALANCE, "accounts": ACCOUNTS}),
    ]
    balances = dict.fromkeys(range(ACCOUNTS), INITIAL_BALANCE)
    balances[0], balances[1] = INITIAL_BALANCE - 5, INITIAL_BALANCE + 5
    ledger = {"t1": {"id": "t1", "src": 0, "dst": 1, "amount": 5}}
    assert check_bank(ops, balances, ledger, WINDOW).violations == 0  # t2's outcome is unknown: absent is fine
    lost = check_bank(ops, dict.fromkeys(range(ACCOUNTS), INITIAL_BALANCE), {}, WINDOW)
    assert (lost.lost, lost.violations) == (1, 1) and "t1 is not in the ledger" in lost.examples[0]
    torn = {**balances, 1: INITIAL_BALANCE}  # the debit without its credit
    bad_read = Op("r", "read", {}, 6, 7, "ok", {"total": 599, "accounts": ACCOUNTS})
    result = check_bank([*ops, bad_read], torn, ledger, WINDOW)
    assert result.violations == 3 and result.lost == 0, result.examples


def test_the_fault_map_names_tests_that_exist() -> None:
    """docs/reliability.md's "Faults and their tests" is the generator's (regenerate:
    python scripts/gen-reliability.py), maps every fault kind of the campaign, and
    every test it names is defined where it says."""
    gen = runpy.run_path(str(ROOT / "scripts" / "gen-reliability.py"))
    section = "\n".join(gen["fault_section"]())
    assert section in (ROOT / "docs" / "reliability.md").read_text()
    assert [kind for kind, _ in gen["FAULTS"] if f"**{kind}**" not in section] == []
    missing = []
    for test in gen["named_tests"]():
        path, name = test.split("::")
        source = ROOT / path
        if not source.is_file() or not re.search(rf"^\s*(async )?def {name}\(", source.read_text(), re.M):
            missing.append(test)
    assert missing == []


def test_longest_gap() -> None:
    assert longest_gap([2.0, 3.0, 9.0], (0.0, 10.0)) == 6.0
    assert longest_gap([], (1.0, 4.0)) == 3.0


@pytest.mark.slow
def test_a_short_campaign_on_every_provider(tmp_path: Path) -> None:
    need("PostgreSQL", find_bindir() is not None, "no initdb/pg_ctl found (run scripts/ensure-postgres.sh)")
    need("etcd", shutil.which("etcd") is not None, "no etcd binary found (run scripts/ensure-etcd.sh)")
    out = tmp_path / "chaos.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, str(ROOT / "bench" / "chaos.py"), "--seconds", "4", "--load-rows", "300"]
    done = subprocess.run([*command, "--out", str(out)], env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr  # 3: a lost write or a violation, printed above
    run = json.loads(out.read_text())
    for name in ("rocksdb", "postgres", "etcd"):
        got = run["providers"][name]
        assert (got["lost"], got["violations"]) == (0, 0)
        assert set(got["workloads"]) == {"bank", "register", "counter", "load", "copy --follow", "store"}
        # 4 s under faults on a busy machine may leave one workload without a success; together they make some
        assert sum(w["ok"] for w in got["workloads"].values()) > 0, got["workloads"]
        assert set(got["fault_counts"]) - {"client-kill", "client-stop"}, got["faults"]  # a fault of the provider's
        assert got["exit_codes"].get("0", 0) >= 4  # a load, then the freeze, the catch-up and the diff
    page = tmp_path / "reliability.md"
    script = ROOT / "scripts" / "gen-reliability.py"
    subprocess.run([sys.executable, str(script), "--from", str(out), "--page", str(page)], check=True, timeout=60)
    text = page.read_text()
    assert "| RocksDB (several processes, one path) |" in text and "| etcd (3 members) |" in text

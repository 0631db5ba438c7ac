"""The chaos campaign's checker: reads the clients' histories (bench/chaos_clients.py)
and the final state, and says what was lost and what broke an invariant.

- bank: every committed read of all accounts totals the initial sum; at the end the
  total is the same, every account's balance is its initial one plus its ledger
  entries (a transfer is its two balance updates and its ledger row, atomically),
  every acknowledged transfer is in the ledger (else it was lost) and no transfer
  that failed is;
- register: each read returns the value of a write that was not refused, invoked
  before the read ended, and not older than an acknowledged write that ended before
  the read began (a write whose outcome is unknown never ends: it may take effect at
  any time). The final values are read the same way after every client stopped: a
  final value older than an acknowledged write is that write lost;
- counter: the final value is at least the acknowledged increments (fewer: lost) and
  at most those plus the unknown ones; acknowledged increments returned distinct values.
"""

from __future__ import annotations

import bisect
import itertools
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.chaos_clients import ACCOUNTS, INITIAL_BALANCE, INITIAL_VALUE

EXAMPLES = 10
"""Violations kept word for word per workload (the rest are counted)."""


@dataclass
class Op:
    """One operation of a history: when it was invoked and completed (None: never)."""

    process: str
    op: str
    args: dict[str, Any]
    invoked: float
    completed: float | None = None
    outcome: str = "unknown"
    result: dict[str, Any] = field(default_factory=dict)


@dataclass
class WorkloadResult:
    """What one workload did and what the checks found."""

    name: str
    operations: int = 0
    ok: int = 0
    failed: int = 0
    unknown: int = 0
    lost: int = 0
    violations: int = 0
    examples: list[str] = field(default_factory=list)
    longest_gap: float | None = 0.0
    """The longest time without a successful operation, in seconds (None: not measured)."""
    notes: list[str] = field(default_factory=list)

    def violate(self, text: str, *, lost: int = 0) -> None:
        """Count a violation (``lost``: that many acknowledged writes lost with it)."""
        self.violations += 1
        self.lost += lost
        if len(self.examples) < EXAMPLES:
            self.examples.append(text)

    def as_json(self) -> dict[str, Any]:
        """The result as saved in the campaign's JSON."""
        return {
            "operations": self.operations,
            "ok": self.ok,
            "failed": self.failed,
            "unknown": self.unknown,
            "lost": self.lost,
            "violations": self.violations,
            "examples": self.examples,
            "longest_gap": None if self.longest_gap is None else round(self.longest_gap, 2),
            "notes": self.notes,
        }


def read_history(folder: Path, name: str) -> list[Op]:
    """Every operation logged in ``folder/name-*.ndjson``, in invocation order."""
    ops: dict[tuple[str, int], Op] = {}
    for path in sorted(folder.glob(f"{name}-*.ndjson")):
        for line in path.read_text().splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a line cut short by a kill
            key = (record.pop("p"), record.pop("i"))
            event, at = record.pop("e"), record.pop("t")
            if event == "invoke":
                ops[key] = Op(key[0], record.pop("op"), record, at)
            elif key in ops:
                ops[key].completed, ops[key].outcome, ops[key].result = at, event, record
    return sorted(ops.values(), key=lambda o: o.invoked)


def tally(name: str, ops: list[Op], window: tuple[float, float]) -> WorkloadResult:
    """Counts, the longest gap between successes in ``window``, and unwrapped errors."""
    result = WorkloadResult(name, operations=len(ops))
    outcomes = Counter(o.outcome for o in ops)
    result.ok, result.failed, result.unknown = outcomes["ok"], outcomes["fail"], outcomes["unknown"]
    result.longest_gap = longest_gap((o.completed for o in ops if o.outcome == "ok" and o.completed), window)
    for o in ops:
        if o.result.get("unwrapped"):
            result.violate(f"{o.op} by {o.process}: an exception escaped the SPI unwrapped: {o.result.get('err')}")
    return result


def longest_gap(times: Iterable[float], window: tuple[float, float]) -> float:
    """The longest stretch of ``window`` holding none of ``times``."""
    start, end = window
    points = sorted(t for t in times if start <= t <= end)
    edges = [start, *points, end]
    return max(b - a for a, b in itertools.pairwise(edges))


def check_bank(
    ops: list[Op], balances: dict[int, int], ledger: dict[str, dict[str, Any]], window: tuple[float, float]
) -> WorkloadResult:
    """The bank's checks (see the module's docstring); ``balances`` and ``ledger`` are the final state."""
    result = tally("bank", ops, window)
    initial = ACCOUNTS * INITIAL_BALANCE
    for o in ops:
        if o.op == "read" and o.outcome == "ok" and (o.result["total"], o.result["accounts"]) != (initial, ACCOUNTS):
            result.violate(f"a read by {o.process} saw {o.result['accounts']} accounts totalling {o.result['total']}")
    if sum(balances.values()) != initial or len(balances) != ACCOUNTS:
        result.violate(f"the final {len(balances)} accounts total {sum(balances.values())}, not {initial}")
    expected = dict.fromkeys(range(ACCOUNTS), INITIAL_BALANCE)
    for row in ledger.values():
        expected[row["src"]] -= row["amount"]
        expected[row["dst"]] += row["amount"]
    for acct in sorted(expected):
        if balances.get(acct) != expected[acct]:
            result.violate(f"account {acct} holds {balances.get(acct)}, its ledger says {expected[acct]}")
    transfers = {o.args["id"]: o for o in ops if o.op == "transfer"}
    for tid, o in transfers.items():
        if o.outcome == "ok" and tid not in ledger:
            result.violate(f"acknowledged transfer {tid} is not in the ledger", lost=1)
        if o.outcome == "fail" and tid in ledger:
            result.violate(f"transfer {tid} failed ({o.result.get('err')}) but is in the ledger")
    for tid in sorted(set(ledger) - set(transfers)):
        result.violate(f"the ledger holds transfer {tid}, which no client invoked")
    return result


@dataclass
class _Writes:
    """One key's writes: each value's write, and the acknowledged writes by completion."""

    by_value: dict[str | None, Op]
    done: list[float]
    """Completion times of the acknowledged writes, ascending."""
    latest_invoke: list[float]
    """``latest_invoke[j]``: the latest invocation among ``done[: j + 1]``'s writes."""

    @classmethod
    def of(cls, writes: list[Op], initial_value: str | None) -> _Writes:
        """The writes of one key that held ``initial_value`` before them (None: no row)."""
        initial = Op("setup", "write", {"v": initial_value}, float("-inf"), float("-inf"), "ok")
        acked = sorted((o for o in writes if o.outcome == "ok"), key=lambda o: o.completed or 0.0)
        latest: list[float] = []
        for o in acked:
            latest.append(max(o.invoked, latest[-1]) if latest else o.invoked)
        return cls(
            {initial_value: initial, **{o.args["v"]: o for o in writes}}, [o.completed or 0.0 for o in acked], latest
        )

    def superseded(self, write: Op, before: float) -> bool:
        """Whether an acknowledged write began after ``write`` ended and ended before ``before``."""
        if write.outcome != "ok" or write.completed is None:
            return False  # an unknown write may take effect at any time
        j = bisect.bisect_left(self.done, before)
        return j > 0 and self.latest_invoke[j - 1] > write.completed


def check_register(
    name: str,
    ops: list[Op],
    final: dict[int, str | None],
    window: tuple[float, float],
    initial: str | None = INITIAL_VALUE,
) -> WorkloadResult:
    """The register checks (see the module's docstring) per key; ``final`` is each
    key's value after every client stopped (None: no row); ``initial`` the value
    every key held before the clients started (None: no row)."""
    result = tally(name, ops, window)
    keys = sorted({o.args["k"] for o in ops} | set(final))
    for k in keys:
        writes = _Writes.of([o for o in ops if o.op == "write" and o.args["k"] == k], initial)
        reads = [o for o in ops if o.op == "read" and o.args["k"] == k and o.outcome == "ok"]
        for o in reads:
            assert o.completed is not None
            problem = _stale(writes, o.result["v"], o.invoked, o.completed)
            if problem:
                result.violate(f"{name} key {k}: a read by {o.process} {problem}")
        if k in final:
            problem = _stale(writes, final[k], float("inf"), float("inf"))
            if problem:
                result.violate(f"{name} key {k}: the final value {problem}", lost=1)
    return result


def _stale(writes: _Writes, value: str | None, began: float, ended: float) -> str | None:
    """What is wrong with a read of ``value`` that began and ended at these times (None: nothing)."""
    write = writes.by_value.get(value)
    if write is None:
        return f"returned {value!r}, which no write wrote"
    if write.outcome == "fail":
        return f"returned {value!r}, written by a write that failed ({write.result.get('err')})"
    if write.invoked > ended:
        return f"returned {value!r} before its write began"
    if writes.superseded(write, began):
        return f"returned {value!r}, older than an acknowledged write that ended before the read began"
    return None


def check_counter(ops: list[Op], final: int | None, window: tuple[float, float]) -> WorkloadResult:
    """The counter checks (see the module's docstring); ``final``: the counter at the end."""
    result = tally("counter", ops, window)
    value = final or 0
    if value < result.ok:
        result.violate(f"the counter is {value} after {result.ok} acknowledged increments", lost=result.ok - value)
    if value > result.ok + result.unknown:
        result.violate(f"the counter is {value}, above {result.ok} acknowledged + {result.unknown} unknown increments")
    returned = Counter(o.result["value"] for o in ops if o.outcome == "ok")
    for seen, times in returned.items():
        if times > 1:
            result.violate(f"{times} acknowledged increments all returned {seen}")
        if seen > value:
            result.violate(f"an increment returned {seen}, above the final {value}")
    return result

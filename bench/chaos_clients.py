"""The chaos campaign's client processes, and the tables they work on.

    python -m bench.chaos_clients WORKLOAD URL FOLDER TAG SEED

Each client opens the store with ``spi.connect(URL)`` and runs one workload's
operation after another until the file ``FOLDER/stop`` exists. Every operation
is logged to ``FOLDER/WORKLOAD-TAG.ndjson`` before it is invoked and again when
it completes, as JSON lines the checker (bench/chaos_check.py) reads afterwards:

- ``{"p": TAG, "i": N, "e": "invoke", "t": T, "op": NAME, ...arguments}``;
- ``{"p": TAG, "i": N, "e": OUTCOME, "t": T, ...result}``, OUTCOME being ``ok``,
  ``fail`` (an error that says the operation did not happen: a conflict after the
  retries, a failed condition) or ``unknown`` (anything else: the store was
  unavailable, the answer was lost; the operation may or may not have happened).
  ``err`` names the error; ``unwrapped`` marks an exception that is not a
  :class:`spi.errors.KvError` (the SPI lets no driver exception escape).

An operation invoked but never completed (the process was killed) is unknown.
``T`` is ``time.monotonic()``, one clock for every process of the machine.
"""

from __future__ import annotations

import contextlib
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import spi
from spi import errors

ACCOUNTS = 6
INITIAL_BALANCE = 100
REGISTER_KEYS = 4
FEED_KEYS = 20
INITIAL_VALUE = "init"
"""The value every register key holds before the clients start."""
PACE = 0.01
"""Seconds a client sleeps between two operations (the machine is shared)."""
BACKOFF = 0.1
"""Seconds a client sleeps after an operation that did not succeed."""

BANK = spi.TableSpec("bank", [spi.Field("acct", "long"), spi.Field("balance", "long")], ["acct"])
LEDGER = spi.TableSpec(
    "ledger",
    [spi.Field("id", "string"), spi.Field("src", "long"), spi.Field("dst", "long"), spi.Field("amount", "long")],
    ["id"],
)
REGISTER = spi.TableSpec("register", [spi.Field("k", "long"), spi.Field("v", "string")], ["k"])
COUNTER = spi.TableSpec("counter", [spi.Field("k", "string"), spi.Field("n", "long")], ["k"])
FEED = spi.TableSpec("feed", [spi.Field("k", "long"), spi.Field("v", "string")], ["k"], changes=True)
SPECS = (BANK, LEDGER, REGISTER, COUNTER, FEED)

DEFINITE = (
    errors.ConflictError,
    errors.RowExistsError,
    errors.RowNotFoundError,
    errors.VersionMismatchError,
    errors.FrozenTableError,
    errors.InvalidFieldError,
    errors.LimitExceededError,
    errors.TableNotFoundError,
)
"""Errors that say an operation did not happen."""


def prepare(p: spi.Provider) -> None:
    """Create the tables and their first rows (each table once: a rerun is a no-op)."""
    for spec in SPECS:
        p.admin.create_or_update(spec)
    with p.transaction() as tx:
        bank, register = tx.table("bank"), tx.table("register")
        if bank.count() == 0:
            for acct in range(ACCOUNTS):
                bank.insert({"acct": acct, "balance": INITIAL_BALANCE})
            for k in range(REGISTER_KEYS):
                register.upsert({"k": k, "v": INITIAL_VALUE})


def outcome(exc: BaseException) -> str:
    """``fail`` when ``exc`` says the operation did not happen, else ``unknown``."""
    return "fail" if isinstance(exc, DEFINITE) else "unknown"


class History:
    """The history file of one client process (append-only JSON lines)."""

    def __init__(self, path: Path, tag: str) -> None:
        self.tag = tag
        self._file: IO[str] = open(path, "a", buffering=1)  # noqa: SIM115 - open for the process's life
        self._next = 0

    def invoke(self, op: str, **fields: Any) -> int:
        """Log the invocation of ``op``; its number."""
        self._next += 1
        self._write({"i": self._next, "e": "invoke", "op": op, **fields})
        return self._next

    def complete(self, i: int, result: str, **fields: Any) -> None:
        """Log how operation ``i`` ended."""
        self._write({"i": i, "e": result, **fields})

    def attempt(self, op: str, fields: dict[str, Any], fn: Callable[[], dict[str, Any]]) -> str:
        """Invoke ``fn`` as operation ``op`` and log its outcome (what it returns is the
        result); the outcome."""
        i = self.invoke(op, **fields)
        try:
            result = fn()
        except Exception as exc:
            extra = {} if isinstance(exc, errors.KvError) else {"unwrapped": True}
            self.complete(i, outcome(exc), err=f"{type(exc).__name__}: {str(exc)[:300]}", **extra)
            return outcome(exc)
        self.complete(i, "ok", **result)
        return "ok"

    def _write(self, record: dict[str, Any]) -> None:
        record = {"p": self.tag, "t": time.monotonic(), **record}
        self._file.write(json.dumps(record, separators=(",", ":")) + "\n")


class Client:
    """One workload's loop: a step at a time until told to stop."""

    def __init__(self, p: spi.Provider, history: History, rng: random.Random) -> None:
        self.p = p
        self.history = history
        self.rng = rng
        self.seq = 0

    def unique(self) -> str:
        """A value no other operation of any client writes."""
        self.seq += 1
        return f"{self.history.tag}-{self.seq}"

    def transfer(self) -> str:
        """Move a small amount between two accounts, and record it in the ledger, in one transaction."""
        src, dst = self.rng.sample(range(ACCOUNTS), 2)
        amount = self.rng.randint(1, 5)
        tid = self.unique()

        def move(tx: Any) -> None:
            bank = tx.table("bank")
            before = bank.read_many([(src,), (dst,)])  # both accounts exist from the start
            bank.update((src,), {"balance": before[0]["balance"] - amount})
            bank.update((dst,), {"balance": before[1]["balance"] + amount})
            tx.table("ledger").insert({"id": tid, "src": src, "dst": dst, "amount": amount})

        def run() -> dict[str, Any]:
            self.p.run(move)
            return {}

        return self.history.attempt("transfer", {"id": tid, "src": src, "dst": dst, "amount": amount}, run)

    def total(self) -> str:
        """Sum every account in one transaction."""

        def read() -> dict[str, Any]:
            with self.p.transaction() as tx:
                balances = [r["balance"] for r in tx.table("bank").scan()]
            return {"total": sum(balances), "accounts": len(balances)}

        return self.history.attempt("read", {}, read)

    def register(self) -> str:
        """Write a unique value to a key, or read one (half and half)."""
        k = self.rng.randrange(REGISTER_KEYS)
        t = self.p.table("register")
        if self.rng.random() < 0.5:
            value = self.unique()
            return self.history.attempt(
                "write", {"k": k, "v": value}, lambda: {"version": t.upsert({"k": k, "v": value})}
            )
        else:

            def read() -> dict[str, Any]:
                row = t.read((k,))
                return {"v": None if row is None else row["v"]}

            return self.history.attempt("read", {"k": k}, read)

    def increment(self) -> str:
        """Add one to the counter."""
        t = self.p.table("counter")
        return self.history.attempt("incr", {}, lambda: {"value": t.increment(("c",), "n", 1)})

    def feed(self) -> str:
        """Write a unique value to a key of the followed table."""
        k = self.rng.randrange(FEED_KEYS)
        value = self.unique()
        t = self.p.table("feed")
        return self.history.attempt("write", {"k": k, "v": value}, lambda: {"version": t.upsert({"k": k, "v": value})})


STEPS: dict[str, Callable[[Client], str]] = {
    "bank": Client.transfer,
    "bank-read": Client.total,
    "register": Client.register,
    "counter": Client.increment,
    "feed": Client.feed,
}
"""Each client workload's step (it returns its outcome); ``bank-read`` clients log into the bank's history."""


def history_name(workload: str) -> str:
    """The history a workload's clients log into (readers share the bank's)."""
    return "bank" if workload == "bank-read" else workload


def main(argv: list[str]) -> int:
    """Run one client until ``FOLDER/stop`` appears (see the module's docstring)."""
    workload, url, folder_name, tag, seed = argv
    folder = Path(folder_name)
    history = History(folder / f"{history_name(workload)}-{tag}.ndjson", tag)
    step = STEPS[workload]
    stop = folder / "stop"
    p = _connect(url, stop)
    client = Client(p, history, random.Random(int(seed)))
    while not stop.exists():
        time.sleep(PACE if step(client) == "ok" else BACKOFF)
    with contextlib.suppress(errors.KvError):  # a store lost at the very end: the history is what counts
        p.close()
    return 0


def _connect(url: str, stop: Path) -> spi.Provider:
    """Open the store, trying again while it is unavailable (a client restarted during a fault)."""
    while True:
        try:
            return spi.connect(url)
        except errors.ProviderUnavailableError:
            if stop.exists():
                raise
            time.sleep(0.2)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

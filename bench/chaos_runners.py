"""The chaos campaign's processes: the client processes (restarted when a fault
kills them), and the two workloads run as ``kvctl`` commands — a bulk load rerun
until it succeeds, and a ``copy --follow`` restarted whenever it ends.

Every process runs in a session of its own (a fault signals its whole group),
with its stderr in a file of the work folder; ``kvctl`` exit codes are counted,
and a traceback or an exit code that no fault explains is a violation.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import spi
from bench.chaos_check import WorkloadResult
from spi import errors

ROOT = Path(__file__).resolve().parents[1]
EXPECTED_EXITS = {0: "done", 1: "not done", 3: "unavailable", 130: "interrupted", -signal.SIGKILL: "SIGKILL"}
"""kvctl exit codes a fault explains (CLI.md's exit codes; -9: killed by the campaign)."""
LIMITED = (
    "import os, resource, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); n = int(sys.argv[1]); "
    "resource.setrlimit(resource.RLIMIT_FSIZE, (n, n)); os.execv(sys.executable, [sys.executable, '-m', *sys.argv[2:]])"
)
"""Runs ``python -m ARGS`` whose files may not grow beyond N bytes: ``-c LIMITED N ARGS`` (EFBIG, not SIGXFSZ)."""
LOAD_FIELDS = [spi.Field("id", "long"), spi.Field("v", "string")]
"""The columns of the load tables (key ``id``, an index on ``v``)."""


@dataclass
class Proc:
    """A process the campaign started."""

    name: str
    kvctl: bool
    popen: subprocess.Popen[bytes]
    stderr: Path


@dataclass
class Processes:
    """Every process of the campaign, started with this checkout's code."""

    folder: Path
    file_limit: int | None = None
    """While set, kvctl processes start with this RLIMIT_FSIZE (bytes) and SIGXFSZ ignored: a full disk for them."""
    all: list[Proc] = field(default_factory=list)
    exits: Counter[int] = field(default_factory=Counter)
    """Exit codes of the kvctl processes."""
    client_exits: Counter[int] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    """Tracebacks and unexplained kvctl exit codes."""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _numbers: Iterator[int] = field(default_factory=itertools.count)

    def spawn(self, name: str, argv: list[str], *, kvctl: bool) -> Proc:
        """Start ``argv`` (a Python module's arguments) as process ``name``."""
        with self._lock:
            err = self.folder / f"{name}.{next(self._numbers)}.err"
        limit = self.file_limit if kvctl else None
        command = [sys.executable, "-m", *argv] if limit is None else [sys.executable, "-c", LIMITED, str(limit), *argv]
        with err.open("wb") as stderr:
            popen = subprocess.Popen(
                command,
                cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                start_new_session=True,
            )
        proc = Proc(name, kvctl, popen, err)
        with self._lock:
            self.all.append(proc)
        return proc

    def running(self) -> list[Proc]:
        """The processes still running."""
        with self._lock:
            return [p for p in self.all if p.popen.poll() is None]

    def signal(self, proc: Proc, sig: int) -> None:
        """Send ``sig`` to ``proc``'s process group (gone already: nothing)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.popen.pid, sig)

    def cont_all(self) -> None:
        """SIGCONT every running process (undo any SIGSTOP)."""
        for proc in self.running():
            self.signal(proc, signal.SIGCONT)

    def reap(self, proc: Proc) -> int:
        """Wait for ``proc`` and judge its exit."""
        code = proc.popen.wait()
        text = proc.stderr.read_text(errors="replace")
        if proc.kvctl:
            self.exits[code] += 1
            if code not in EXPECTED_EXITS:
                last = text.strip().splitlines()[-1:] or ["(no message)"]
                self.problems.append(f"{proc.name} exited {code}: {last[0][:300]}")
        else:
            self.client_exits[code] += 1
        if "Traceback" in text:
            self.problems.append(f"{proc.name} printed a traceback (exit {code}): {proc.stderr}")
        return code

    def kill_all(self) -> list[str]:
        """SIGKILL whatever still runs; the names of those processes."""
        left = self.running()
        for proc in left:
            self.signal(proc, signal.SIGCONT)
            self.signal(proc, signal.SIGKILL)
        for proc in left:
            proc.popen.wait()
        return [p.name for p in left]


class Supervisor(threading.Thread):
    """Keeps the client processes running until :meth:`stop`: a client that died (a
    fault killed it) is started again under a new tag."""

    def __init__(self, procs: Processes, url: str, folder: Path, clients: dict[str, int], seed: int) -> None:
        super().__init__(name="chaos-supervisor", daemon=True)
        self.procs = procs
        self.url = url
        self.folder = folder
        self.slots: dict[str, Proc | None] = {f"{w}{i}": None for w, n in clients.items() for i in range(n)}
        self.restarts: Counter[str] = Counter()
        self.seed = seed
        self._halted = threading.Event()

    def _start(self, slot: str) -> None:
        workload = slot.rstrip("0123456789")
        tag = f"{slot}.{self.restarts[slot]}"
        seed = str(random.Random(f"{self.seed}/{tag}").randrange(2**32))
        argv = ["bench.chaos_clients", workload, self.url, str(self.folder), tag, seed]
        self.slots[slot] = self.procs.spawn(tag, argv, kvctl=False)

    def halt(self) -> None:
        """Start no further process (what runs goes on)."""
        self._halted.set()

    def run(self) -> None:
        """Start every client, then restart the dead ones until stopped."""
        for slot in self.slots:
            self._start(slot)
        while not self._halted.wait(0.1):
            for slot, proc in self.slots.items():
                if proc is not None and proc.popen.poll() is not None:
                    self.procs.reap(proc)
                    self.restarts[slot] += 1
                    self._start(slot)

    def stop(self, timeout: float) -> list[str]:
        """Tell every client to stop, wait up to ``timeout`` seconds; the names of those killed then."""
        (self.folder / "stop").touch()
        self._halted.set()
        self.join()
        deadline = time.monotonic() + timeout
        for proc in self.slots.values():
            if proc is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.popen.wait(max(0.1, deadline - time.monotonic()))
        hung = [p.name for p in self.slots.values() if p is not None and p.popen.poll() is None]
        for proc in self.slots.values():
            if proc is not None:
                if proc.popen.poll() is None:
                    self.procs.signal(proc, signal.SIGKILL)
                self.procs.reap(proc)
        return hung


def retry(fn: Callable[[], Any], seconds: float = 60.0) -> Any:
    """``fn()``, tried again while the store is unavailable (for the campaign's own calls)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return fn()
        except (errors.ProviderUnavailableError, errors.ConflictError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def open_store(url: str) -> spi.Provider:
    """``spi.connect(url)``, tried again while the store is unavailable."""
    opened: spi.Provider = retry(lambda: spi.connect(url))
    return opened


class LoadRunner(threading.Thread):
    """Rounds of ``kvctl put TABLE --file`` into a new table each: a run that does not
    exit 0 (killed, the store unavailable) is run again until one does."""

    def __init__(self, procs: Processes, url: str, folder: Path, rows: int) -> None:
        super().__init__(name="chaos-load", daemon=True)
        self.procs = procs
        self.url = url
        self.rows = rows
        self.file = folder / "rows.ndjson"
        self.file.write_text("".join(json.dumps({"id": i, "v": f"v{i % 97}"}) + "\n" for i in range(rows)))
        self.done: list[str] = []
        """Tables whose load exited 0."""
        self.runs = 0
        self.round = 0
        self._halted = threading.Event()

    def halt(self) -> None:
        """Start no further process (what runs goes on)."""
        self._halted.set()

    def run(self) -> None:
        """Load round after round until stopped (a round cut short is finished by :meth:`finish`)."""
        while not self._halted.is_set():
            table = f"load{self.round}"
            spec = spi.TableSpec(table, LOAD_FIELDS, ["id"], ["v"])
            with open_store(self.url) as p:
                retry(lambda: p.admin.create_or_update(spec))  # noqa: B023 - called at once
            while not self._halted.is_set():
                if self._load(table) == 0:
                    self.done.append(table)
                    self.round += 1
                    break
                self._halted.wait(0.3)

    def _load(self, table: str) -> int:
        self.runs += 1
        argv = ["kvctl", "--url", self.url, "put", table, "--file", str(self.file), "--batch-size", "250"]
        return self.procs.reap(self.procs.spawn(f"load{self.round}", argv, kvctl=True))

    def stop(self) -> None:
        """Start no further run (the current one goes on to its end)."""
        self._halted.set()
        self.join()

    def finish(self) -> None:
        """Run the round cut short by the end of the campaign until it succeeds."""
        table = f"load{self.round}"
        with open_store(self.url) as p:
            if not retry(lambda: p.admin.exists(table)):
                return
        for _ in range(5):
            if self._load(table) == 0:
                self.done.append(table)
                return

    def check(self) -> WorkloadResult:
        """Every row of every load that exited 0 is there, with its value."""
        result = WorkloadResult("load", operations=self.runs, ok=len(self.done), longest_gap=None)
        result.failed = self.runs - len(self.done)
        with open_store(self.url) as p:
            for table in self.done:
                rows: dict[int, str] = retry(functools.partial(_rows, p, table))
                missing = [i for i in range(self.rows) if i not in rows]
                wrong = [i for i in range(self.rows) if i in rows and rows[i] != f"v{i % 97}"]
                if missing:
                    result.violate(
                        f"{table}: {len(missing)} rows of a load that exited 0 are missing", lost=len(missing)
                    )
                if wrong or len(rows) > self.rows:
                    result.violate(f"{table}: {len(wrong)} wrong values, {len(rows)} rows for {self.rows}")
        result.notes.append(
            f"loads of {self.rows:,} rows that exited 0: {len(self.done)} (kvctl put runs: {self.runs})"
        )
        return result


def _rows(p: spi.Provider, table: str) -> dict[int, str]:
    """A load table's rows, id -> value."""
    return {r["id"]: r["v"] for r in p.table(table).scan()}


class FollowRunner(threading.Thread):
    """``kvctl copy SRC DST feed --follow --mode append``, started again whenever it ends
    (a fault killed it, or the store was unavailable) until :meth:`stop`."""

    def __init__(self, procs: Processes, source: str, destination: str) -> None:
        super().__init__(name="chaos-follow", daemon=True)
        self.procs = procs
        self.source = source
        self.destination = destination
        self.runs = 0
        self.current: Proc | None = None
        self._halted = threading.Event()

    def _argv(self, *extra: str) -> list[str]:
        return ["kvctl", "copy", self.source, self.destination, "feed", "--follow", "--mode", "append", *extra]

    def halt(self) -> None:
        """Start no further process (what runs goes on)."""
        self._halted.set()

    def run(self) -> None:
        """Follow until stopped."""
        while not self._halted.is_set():
            self.runs += 1
            self.current = self.procs.spawn("follow", self._argv(), kvctl=True)
            self.procs.reap(self.current)
            self._halted.wait(0.3)

    def stop(self, timeout: float = 30.0) -> None:
        """Interrupt the running follower (Ctrl-C: exit 130) and start no other; one
        still running ``timeout`` seconds later is killed, and that is a problem."""
        self._halted.set()
        current = self.current
        if current is not None:
            self.procs.signal(current, signal.SIGINT)
            try:
                current.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.procs.problems.append(f"{current.name} still ran {timeout:g} s after SIGINT: killed")
                self.procs.signal(current, signal.SIGKILL)
        self.join()

    def finish(self, result: WorkloadResult) -> None:
        """Freeze the source table, let a follower catch up, and compare the two stores
        with ``kvctl diff --versions`` (into ``result``)."""
        steps = [
            ("freeze", ["kvctl", "--url", self.source, "table", "freeze", "feed"]),
            ("catch up", self._argv("--until-caught-up")),
            ("diff", ["kvctl", "diff", self.source, self.destination, "feed", "--versions", "--summary"]),
        ]
        for name, argv in steps:
            for _ in range(5):
                proc = self.procs.spawn(f"follow-{name.replace(' ', '-')}", argv, kvctl=True)
                code = self.procs.reap(proc)
                if code != 3:
                    break
                time.sleep(1)
            if code != 0:
                summary = proc.stderr.read_text(errors="replace").strip().splitlines()[-1:] or [""]
                result.violate(f"{name} after the freeze exited {code}: {summary[0][:300]}")
                return
        result.notes.append(
            f"follower runs: {self.runs}; after the freeze, kvctl diff --versions found the stores equal"
        )

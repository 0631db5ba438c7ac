"""The chaos campaign's stores and the faults it injects into them.

Each provider's :class:`Environment` makes the stores the workloads run on (the
main store and the destination of ``copy --follow``) and knows its own faults;
:func:`inject_faults` runs the schedule: a quiet spell, a fault held for a
while, healed, and so on, cycling through the environment's faults with client
faults (a SIGKILL, or a SIGSTOP then SIGCONT, of a random ``kvctl`` process —
two faults in a row — then of a random client process — the next two) in
between.

- RocksDB: several processes on one path; ``full-disk``: the store is on a small
  tmpfs that a filler file fills (root, where ``mount`` works), or else the
  ``kvctl`` processes started while the fault lasts get a file-size limit
  (RLIMIT_FSIZE, SIGXFSZ ignored: writes past it fail with EFBIG) and the running
  load is killed so that its rerun meets it.
- PostgreSQL (a throwaway server with ``synchronous_commit`` on, so that what it
  acknowledged survives its crash): ``server-crash`` (``pg_ctl stop -m
  immediate``, started again after the fault), ``server-stop`` (``-m fast``:
  every session ended), ``server-hang`` (SIGSTOP of every server process, then
  SIGCONT).
- etcd (a throwaway 3-member cluster behind proxies, bench/chaos_proxy.py):
  ``leader-kill`` (SIGKILL of the leader, restarted after the fault),
  ``quorum-loss`` (SIGKILL of two members), ``partition`` (one member cut off from
  its peers and clients).
"""

from __future__ import annotations

import errno
import math
import os
import random
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pg_server import ThrowawayPostgres, find_bindir

from bench.chaos_proxy import ProxiedEtcd
from bench.chaos_runners import Processes

TMPFS_BYTES = 96 * 1024 * 1024
FILE_LIMIT = 16 * 1024
"""RLIMIT_FSIZE of processes started during an emulated full disk."""


class CannotRun(Exception):
    """A provider's campaign cannot run here (no tmpfs for ``--full-disk tmpfs``)."""


@dataclass
class Environment:
    """A provider's stores and faults (subclasses start and stop them)."""

    name: str
    url: str = ""
    copy_url: str = ""
    kinds: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="kvctl-chaos-")))

    def inject(self, kind: str, rng: random.Random, procs: Processes) -> str:
        """Start a fault of ``kind``; what it hit."""
        raise NotImplementedError

    def heal(self, kind: str) -> None:
        """End the fault of ``kind`` started last."""
        raise NotImplementedError

    def heal_all(self) -> None:
        """Make sure the store is whole and serving (after the last fault)."""

    def close(self) -> None:
        """Stop what the environment started and delete its files."""
        shutil.rmtree(self.root, ignore_errors=True)


class RocksEnvironment(Environment):
    """A RocksDB path shared by every process (see the module's docstring)."""

    def __init__(self, full_disk: str) -> None:
        super().__init__("rocksdb", kinds=("full-disk",))
        self.disk = self.root / "disk"
        self.disk.mkdir()
        self.mounted = full_disk in ("auto", "tmpfs") and self._mount()
        if full_disk == "tmpfs" and not self.mounted:
            self.close()
            raise CannotRun("cannot mount a tmpfs here (--full-disk rlimit emulates a full disk without root)")
        self.filler = self.disk / "filler"
        self.url = f"rocksdb://{self.disk / 'db'}"
        self.copy_url = f"rocksdb://{self.root / 'copy'}"
        self.notes.append(
            f"full disk: the store on a {TMPFS_BYTES >> 20} MiB tmpfs, filled to the last byte by a file"
            if self.mounted
            else f"full disk emulated: kvctl processes started during the fault may write files of at most "
            f"{FILE_LIMIT >> 10} KiB (RLIMIT_FSIZE, EFBIG), and the running load is killed so that its rerun meets it"
        )
        self._procs: Processes | None = None

    def _mount(self) -> bool:
        if os.geteuid() != 0:
            return False
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_BYTES}", "tmpfs", str(self.disk)], capture_output=True
        )
        return done.returncode == 0

    def inject(self, kind: str, rng: random.Random, procs: Processes) -> str:
        """Fill the disk (see the module's docstring)."""
        if self.mounted:
            _fill(self.filler)
            return f"tmpfs full ({shutil.disk_usage(self.disk).free} bytes free)"
        self._procs = procs
        procs.file_limit = FILE_LIMIT
        for proc in procs.running():
            if proc.name.startswith("load"):
                procs.signal(proc, signal.SIGKILL)
        return "file-size limit for new processes"

    def heal(self, kind: str) -> None:
        """Free the disk."""
        self.filler.unlink(missing_ok=True)
        if self._procs is not None:
            self._procs.file_limit = None

    def close(self) -> None:
        """Unmount the tmpfs and delete everything."""
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.disk)], capture_output=True)
        super().close()


def _fill(path: Path) -> None:
    """Write ``path`` until the file system has no byte left."""
    size = 1 << 20
    with path.open("ab", buffering=0) as f:
        while size:
            try:
                f.write(b"\0" * size)
            except OSError as exc:
                if exc.errno not in (errno.ENOSPC, errno.EFBIG):
                    raise
                size //= 2


class PostgresEnvironment(Environment):
    """A throwaway PostgreSQL server the campaign may crash (see the module's docstring)."""

    def __init__(self) -> None:
        super().__init__("postgres", kinds=("server-crash", "server-hang", "server-stop"))
        bindir = find_bindir()
        assert bindir is not None, missing("postgres")
        self.server = ThrowawayPostgres(bindir, {"synchronous_commit": "on"}).start()
        self.url = f"{self.server.url}?schema=chaos"
        self.copy_url = f"{self.server.url}?schema=chaos_copy"
        self.notes.append(
            "server: a throwaway PostgreSQL with synchronous_commit on (fsync off: processes die, not the machine)"
        )

    def inject(self, kind: str, rng: random.Random, procs: Processes) -> str:
        """Crash, stop or hang the server."""
        if kind == "server-hang":
            self.server.freeze(everything=True)
            return "every server process stopped (SIGSTOP)"
        self.server.halt("immediate" if kind == "server-crash" else "fast")
        return f"pg_ctl stop -m {'immediate' if kind == 'server-crash' else 'fast'}"

    def heal(self, kind: str) -> None:
        """Thaw or start the server."""
        if kind == "server-hang":
            self.server.thaw()
        else:
            self.server.start_again()

    def close(self) -> None:
        """Stop the server and delete its files."""
        self.server.stop()
        super().close()


class EtcdEnvironment(Environment):
    """A throwaway 3-member etcd cluster behind proxies (see the module's docstring)."""

    def __init__(self) -> None:
        super().__init__("etcd", kinds=("leader-kill", "partition", "quorum-loss"))
        binary = shutil.which("etcd")
        assert binary is not None, missing("etcd")
        self.cluster = ProxiedEtcd(binary).start()
        self.url = f"{self.cluster.proxied_url}/chaos"
        self.copy_url = f"{self.cluster.proxied_url}/chaos_copy"
        self.killed: list[int] = []
        self.partitioned: int | None = None
        self.notes.append("cluster: 3 members on 127.0.0.1, each behind a client and a peer proxy")

    def inject(self, kind: str, rng: random.Random, procs: Processes) -> str:
        """Kill the leader, kill two members, or partition a member."""
        leader = self.cluster.wait_leader()
        if kind == "partition":
            self.partitioned = rng.choice([leader, rng.randrange(self.cluster.members)])
            self.cluster.partition(self.partitioned)
            return f"m{self.partitioned}{' (the leader)' if self.partitioned == leader else ''} partitioned"
        self.killed = [leader]
        if kind == "quorum-loss":
            self.killed.append(rng.choice([i for i in range(self.cluster.members) if i != leader]))
        for i in self.killed:
            self.cluster.kill(i)
        return " and ".join(f"m{i}" for i in self.killed) + " killed (SIGKILL)"

    def heal(self, kind: str) -> None:
        """Restart the killed members, or end the partition."""
        if self.partitioned is not None:
            self.cluster.heal_partition(self.partitioned)
            self.partitioned = None
        for i in self.killed:
            self.cluster.restart(i)
        self.killed = []

    def heal_all(self) -> None:
        """Wait for a leader."""
        self.cluster.wait_leader()

    def close(self) -> None:
        """Stop the cluster and its proxies."""
        self.cluster.stop()
        super().close()


def missing(name: str) -> str | None:
    """What provider ``name``'s campaign needs and this machine lacks (None: nothing)."""
    if name == "postgres" and find_bindir() is None:
        return "no PostgreSQL server binaries found (scripts/ensure-postgres.sh)"
    if name == "etcd" and shutil.which("etcd") is None:
        return "no etcd binary found (scripts/ensure-etcd.sh)"
    return None


def make_environment(name: str, full_disk: str) -> Environment:
    """The environment of provider ``name``."""
    if name == "rocksdb":
        return RocksEnvironment(full_disk)
    if name == "postgres":
        return PostgresEnvironment()
    return EtcdEnvironment()


CLIENT_KINDS = ("client-kill", "client-stop")


def schedule(kinds: tuple[str, ...]) -> list[str]:
    """One cycle of faults: each of the environment's, each followed by a client fault."""
    order: list[str] = []
    for i in range(math.lcm(len(kinds), len(CLIENT_KINDS))):
        order += [kinds[i % len(kinds)], CLIENT_KINDS[i % len(CLIENT_KINDS)]]
    return order


def inject_faults(
    env: Environment, procs: Processes, rng: random.Random, until: float, hold: tuple[float, float]
) -> list[dict[str, Any]]:
    """Run the fault schedule until ``until`` (``time.monotonic()``); each fault is held
    for a random time in ``hold`` seconds, after a quiet spell of half that."""
    order = schedule(env.kinds)
    faults: list[dict[str, Any]] = []
    started = time.monotonic()
    while True:
        quiet = rng.uniform(*hold) / 2
        held = rng.uniform(*hold)
        if time.monotonic() + quiet + held > until:
            break
        time.sleep(quiet)
        kind = order[len(faults) % len(order)]
        at = time.monotonic()
        if kind in CLIENT_KINDS:
            clients = sum(f["kind"] in CLIENT_KINDS for f in faults)
            target = _client_fault(kind, procs, rng, held, kvctl=clients // 2 % 2 == 0)
        else:
            target = env.inject(kind, rng, procs)
            time.sleep(held)
            env.heal(kind)
        faults.append(
            {"kind": kind, "target": target, "at": round(at - started, 2), "seconds": round(time.monotonic() - at, 2)}
        )
    return faults


def _client_fault(kind: str, procs: Processes, rng: random.Random, held: float, *, kvctl: bool) -> str:
    """SIGKILL a random process, or SIGSTOP it for ``held`` seconds: a ``kvctl`` process
    (a load or the follower) when ``kvctl`` and one runs, else a client."""
    running = procs.running()
    if not running:
        return "no process running"
    proc = rng.choice([p for p in running if p.kvctl == kvctl] or running)
    if kind == "client-kill":
        procs.signal(proc, signal.SIGKILL)
        return proc.name
    procs.signal(proc, signal.SIGSTOP)
    try:
        time.sleep(held)
    finally:
        procs.signal(proc, signal.SIGCONT)
    return proc.name

"""A throwaway 3-member etcd cluster for tests, and its pytest fixtures.

:class:`ThrowawayEtcd` starts three ``etcd`` members (Debian's ``etcd-server``,
installed by ``scripts/ensure-etcd.sh``) on 127.0.0.1, each on its own free client
and peer ports, with data folders in a temporary folder (on ``/dev/shm`` when it
exists: the data is disposable, and fsyncs there cost nothing), at etcd's default
limits (128 operations per transaction, 1.5 MiB per request: what users run; ``extra``
arguments raise them for a test of its own) and with short heartbeat and election
timeouts so that failover tests elect a new leader in about a second. Tests may
kill a member (:meth:`ThrowawayEtcd.kill`) and start it again (:meth:`restart`).
Setting ``KVCTL_TEST_ETCD_URL`` before the session uses that cluster instead.

Fixtures (exported by ``tests/conftest.py``):

- ``etcd_cluster`` (session): the running cluster, or a skip (a failure under
  ``KVCTL_REQUIRE_ALL=1``) when ``etcd`` is not installed.
- ``etcd_factory``: a callable opening a fresh provider on a new key prefix per
  call; every prefix it made is deleted at teardown.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

URL_ENV = "KVCTL_TEST_ETCD_URL"
MEMBERS = 3


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def post(endpoint: str, path: str, body: dict[str, Any], timeout: float = 2.0) -> dict[str, Any]:
    """POST ``body`` as JSON to etcd's HTTP gateway at ``endpoint`` (``host:port``)."""
    request = urllib.request.Request(
        f"http://{endpoint}{path}", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())  # type: ignore[no-any-return]


def b64(data: bytes) -> str:
    """``data`` as etcd's gateway spells bytes."""
    return base64.b64encode(data).decode()


class ThrowawayEtcd:
    """Start a disposable cluster with :meth:`start`, stop and delete it with :meth:`stop`."""

    def __init__(self, binary: str, members: int = MEMBERS, extra: tuple[str, ...] = ()) -> None:
        self.binary = binary
        self.members = members
        self.extra = extra
        """Further member flags (e.g. ``--max-txn-ops=1024``)."""
        self.root = ""
        self.client_ports: list[int] = []
        self.peer_ports: list[int] = []
        self.procs: list[subprocess.Popen[bytes] | None] = [None] * members

    @property
    def endpoints(self) -> list[str]:
        """``127.0.0.1:PORT`` of each member's client port."""
        return [f"127.0.0.1:{p}" for p in self.client_ports]

    @property
    def url(self) -> str:
        """A provider URL naming every member (no prefix: the default)."""
        return "etcd://" + ",".join(self.endpoints)

    def advertised(self, i: int) -> tuple[int, int]:
        """The client and peer ports member ``i`` tells clients and peers to use (its
        own; a subclass may put proxies in front of them)."""
        return self.client_ports[i], self.peer_ports[i]

    def _args(self, i: int) -> list[str]:
        cluster = ",".join(f"m{j}=http://127.0.0.1:{self.advertised(j)[1]}" for j in range(self.members))
        client, peer = f"http://127.0.0.1:{self.client_ports[i]}", f"http://127.0.0.1:{self.peer_ports[i]}"
        shown_client, shown_peer = (f"http://127.0.0.1:{port}" for port in self.advertised(i))
        return [
            self.binary,
            f"--name=m{i}",
            f"--data-dir={os.path.join(self.root, f'm{i}')}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={shown_client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={shown_peer}",
            f"--initial-cluster={cluster}",
            "--initial-cluster-state=new",
            "--initial-cluster-token=kvctl-test",
            "--heartbeat-interval=50",
            "--election-timeout=500",
            "--logger=zap",
            "--log-level=error",
            *self.extra,
        ]

    def _spawn(self, i: int) -> None:
        log = open(os.path.join(self.root, f"m{i}.log"), "ab")  # noqa: SIM115 - the child keeps it
        try:
            self.procs[i] = subprocess.Popen(self._args(i), stdout=log, stderr=log, start_new_session=True)
        finally:
            log.close()

    def choose_ports(self) -> tuple[list[int], list[int]]:
        """Free client and peer ports for the members."""
        ports: set[int] = set()
        while len(ports) < 2 * self.members:
            ports.add(free_port())
        listed = sorted(ports)
        return listed[: self.members], listed[self.members :]

    def start(self) -> ThrowawayEtcd:
        """Start three members on free ports and wait until the cluster has a leader."""
        base = "/dev/shm" if os.path.isdir("/dev/shm") else None
        self.root = tempfile.mkdtemp(prefix="kvctl-etcd-", dir=base)
        self.client_ports, self.peer_ports = self.choose_ports()
        for i in range(self.members):
            self._spawn(i)
        try:
            self.wait_leader()
        except Exception:
            logs = "".join(self.log(i)[-1500:] for i in range(self.members))
            self.stop()
            raise RuntimeError(f"etcd did not start:\n{logs}") from None
        return self

    def log(self, i: int) -> str:
        """The end of member ``i``'s log."""
        try:
            with open(os.path.join(self.root, f"m{i}.log"), errors="replace") as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    def pid(self, i: int) -> int:
        """The process id of member ``i`` (it must be running)."""
        proc = self.procs[i]
        assert proc is not None
        return proc.pid

    def status(self, i: int) -> dict[str, Any] | None:
        """Member ``i``'s ``/v3/maintenance/status`` (None: it does not answer)."""
        try:
            return post(self.endpoints[i], "/v3/maintenance/status", {}, timeout=1.0)
        except OSError:
            return None

    def leader(self) -> int | None:
        """The index of the member that is the leader now (None: no leader known)."""
        for i in range(self.members):
            if self.procs[i] is None:
                continue
            st = self.status(i)
            if st and st.get("leader") and st["leader"] == st["header"]["member_id"]:
                return i
        return None

    def wait_leader(self, timeout: float = 30.0) -> int:
        """Wait until a running member is the leader; its index."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.leader()
            if found is not None:
                return found
            time.sleep(0.05)
        raise TimeoutError("no etcd leader elected")

    def kill(self, i: int) -> None:
        """SIGKILL member ``i`` and wait for it to be gone."""
        proc = self.procs[i]
        if proc is not None:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            self.procs[i] = None

    def restart(self, i: int) -> None:
        """Start member ``i`` again on its data folder (a no-op if it runs)."""
        if self.procs[i] is None:
            self._spawn(i)

    def heal(self) -> None:
        """Restart every stopped member and wait for a leader."""
        for i in range(self.members):
            self.restart(i)
        self.wait_leader()

    def delete_prefix(self, prefix: str) -> None:
        """Delete every key under ``prefix`` (best effort)."""
        start = prefix.encode()
        end = start[:-1] + bytes([start[-1] + 1])
        for endpoint in self.endpoints:
            with contextlib.suppress(OSError):
                post(endpoint, "/v3/kv/deleterange", {"key": b64(start), "range_end": b64(end)}, timeout=5.0)
                return

    def stop(self) -> None:
        """Kill every member and delete the data folders."""
        for i in range(self.members):
            self.kill(i)
        if self.root:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = ""


class ExternalEtcd:
    """A cluster given by ``KVCTL_TEST_ETCD_URL`` (not started, killed or stopped here)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.endpoints = url.split("://", 1)[1].split("/", 1)[0].split(",")

    def delete_prefix(self, prefix: str) -> None:
        """See :meth:`ThrowawayEtcd.delete_prefix`."""
        ThrowawayEtcd.delete_prefix(self, prefix)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def etcd_cluster() -> Iterator[Any]:
    """The test cluster (started once per session, stopped at its end)."""
    from conftest import need

    external = os.environ.get(URL_ENV)
    if external:
        yield ExternalEtcd(external)
        return
    binary = shutil.which("etcd")
    need("etcd", binary is not None, "no etcd binary found (run scripts/ensure-etcd.sh)")
    assert binary is not None
    cluster = ThrowawayEtcd(binary).start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def etcd_factory(etcd_cluster: Any) -> Iterator[Callable[..., Any]]:
    """``factory(**query)`` opens a fresh provider on a new key prefix; the prefixes
    are deleted after the test."""
    import spi

    prefixes: list[str] = []
    opened: list[Any] = []

    def factory(**query: str) -> Any:
        prefix = f"t{uuid.uuid4().hex[:12]}"
        prefixes.append(prefix)
        extra = "&".join(f"{k}={v}" for k, v in query.items())
        provider = spi.connect(f"{etcd_cluster.url}/{prefix}" + (f"?{extra}" if extra else ""))
        opened.append(provider)
        return provider

    yield factory
    for p in opened:
        with contextlib.suppress(Exception):
            p.close()
    for prefix in prefixes:
        etcd_cluster.delete_prefix(prefix + "/")

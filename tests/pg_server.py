"""A throwaway PostgreSQL server for tests and benchmarks, and its pytest fixtures.

:class:`ThrowawayPostgres` runs ``initdb`` and ``pg_ctl`` from the installed server
binaries (``/usr/lib/postgresql/*/bin`` or ``PATH``) on a temporary data directory,
listening on 127.0.0.1 on a free port; as root it runs them as the ``postgres``
user (the server refuses to run as root). ``fsync`` is off: the data is disposable.

Connections from the ``postgres`` role are trusted; the role ``kvctl_pw`` (password
:data:`PASSWORD`) exists for authentication tests. Setting ``KVCTL_TEST_PG_URL``
before the session uses that server instead of starting one.

Fixtures (exported by ``tests/conftest.py``):

- ``pg_server`` (session): the running server, or a skip (a failure under
  ``KVCTL_REQUIRE_ALL=1``) when no binaries are installed; also sets
  ``KVCTL_TEST_PG_URL`` for subprocesses.
- ``pg_factory``: a callable opening a fresh, empty provider (its own schema) per
  call; every schema it made is dropped at teardown.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

URL_ENV = "KVCTL_TEST_PG_URL"
PASSWORD_ROLE = "kvctl_pw"
PASSWORD = "s3cret-Pw;--'"
_SETTINGS = {
    "fsync": "off",
    "full_page_writes": "off",
    "synchronous_commit": "off",
    "listen_addresses": "127.0.0.1",
}
"""A stock ``postgresql.conf`` but for durability, which the throwaway server does not
need (speed only: no semantics change): kvctl may assume nothing else of the server,
so ``max_connections`` (100) and the rest stay at PostgreSQL's defaults."""


def find_bindir() -> str | None:
    """The directory holding ``initdb``/``pg_ctl``/``psql`` (newest version first)."""
    for bindir in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version_key, reverse=True):
        if os.path.exists(os.path.join(bindir, "pg_ctl")) and os.path.exists(os.path.join(bindir, "initdb")):
            return bindir
    pg_ctl = shutil.which("pg_ctl")
    if pg_ctl and shutil.which("initdb"):
        return os.path.dirname(os.path.realpath(pg_ctl))
    return None


def _version_key(path: str) -> int:
    part = path.split("/")[-2]
    return int(part) if part.isdigit() else 0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ThrowawayPostgres:
    """Start a disposable server with :meth:`start`, stop and delete it with :meth:`stop`."""

    def __init__(self, bindir: str, settings: dict[str, str] | None = None) -> None:
        self.bindir = bindir
        self.settings = {**_SETTINGS, **(settings or {})}
        """The server's settings: :data:`_SETTINGS` and the caller's (e.g. ``synchronous_commit``
        on, for a server that is crashed on purpose and must keep what it acknowledged)."""
        self.port = 0
        self.root = ""
        self._as_postgres = os.geteuid() == 0

    @property
    def url(self) -> str:
        """A provider URL for the superuser ``postgres`` (trusted, no password)."""
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    @property
    def password_url(self) -> str:
        """A URL for the password-protected role, password included."""
        return f"postgresql+psycopg://{PASSWORD_ROLE}:{_quote(PASSWORD)}@127.0.0.1:{self.port}/postgres"

    @property
    def dsn(self) -> str:
        """A libpq connection string for the superuser (psycopg, psql)."""
        return f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres"

    def bin(self, name: str) -> str:
        """Path of one of the server's programs (psql, pg_dump...)."""
        return os.path.join(self.bindir, name)

    def _run(self, args: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        if self._as_postgres:
            args = ["runuser", "-u", "postgres", "--", *args]
        return subprocess.run(args, check=True, capture_output=True, text=True, **kw)

    def start(self) -> ThrowawayPostgres:
        """initdb, start on a free port and wait until it accepts connections."""
        self.root = tempfile.mkdtemp(prefix="kvctl-pg-")
        data = os.path.join(self.root, "data")
        if self._as_postgres:
            shutil.chown(self.root, "postgres", "postgres")
        os.chmod(self.root, 0o755)
        self._run(
            [self.bin("initdb"), "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync"]
        )
        with open(os.path.join(data, "pg_hba.conf"), "w") as hba:
            hba.write(
                "local all all trust\n"
                f"host all {PASSWORD_ROLE} 127.0.0.1/32 scram-sha-256\n"
                "host all all 127.0.0.1/32 trust\n"
            )
        last: Exception | None = None
        for _ in range(5):  # a free port can be taken between choosing and binding it
            self.port = free_port()
            try:
                self.start_again()
                break
            except subprocess.CalledProcessError as exc:
                last = exc
        else:
            log = _read(os.path.join(self.root, "log"))
            self.stop()
            raise RuntimeError(f"PostgreSQL did not start: {last}\n{log}")
        self._create_password_role()
        return self

    def start_again(self) -> None:
        """Start the server on its data directory and port (after :meth:`halt`) and wait
        until it accepts connections."""
        options = " ".join(f"-c {k}={v}" for k, v in self.settings.items())
        options += f" -p {self.port} -k {self.root}"
        data = os.path.join(self.root, "data")
        log = os.path.join(self.root, "log")
        self._run([self.bin("pg_ctl"), "-D", data, "-l", log, "-w", "-t", "60", "-o", options, "start"])

    def halt(self, mode: str = "immediate") -> None:
        """Stop the server, keeping its data (``pg_ctl stop -m MODE``: ``immediate`` is
        a crash, ``fast`` a clean shutdown that ends every session)."""
        self._run([self.bin("pg_ctl"), "-D", os.path.join(self.root, "data"), "-m", mode, "-w", "stop"])

    def _create_password_role(self) -> None:
        import psycopg

        deadline = time.monotonic() + 30
        while True:
            try:
                with psycopg.connect(self.dsn, autocommit=True) as conn:
                    conn.execute(
                        psycopg.sql.SQL("CREATE ROLE {} LOGIN SUPERUSER PASSWORD {}").format(
                            psycopg.sql.Identifier(PASSWORD_ROLE), psycopg.sql.Literal(PASSWORD)
                        )
                    )
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def postmaster_pid(self) -> int:
        """The pid of the server's postmaster (it runs as ``postgres`` when we are root)."""
        with open(os.path.join(self.root, "data", "postmaster.pid")) as f:
            return int(f.readline())

    def processes(self) -> list[int]:
        """The postmaster's pid, then those of its children (backends, background workers)."""
        parent = self.postmaster_pid()
        children = []
        for entry in os.listdir("/proc"):
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
            except OSError:
                continue  # not a process, or gone
            if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
                children.append(int(entry))
        return [parent, *children]

    def freeze(self, *, everything: bool = False) -> None:
        """SIGSTOP the postmaster, so new connections complete their TCP handshake but
        get no answer; with ``everything``, every server process, so statements on open
        connections get none either. :meth:`thaw` (and :meth:`stop`) undo it."""
        for pid in self.processes() if everything else [self.postmaster_pid()]:
            os.kill(pid, signal.SIGSTOP)

    def thaw(self) -> None:
        """SIGCONT every server process (harmless when none is stopped)."""
        for pid in self.processes():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    def stop(self) -> None:
        """Stop the server at once (thawing it first) and delete its directory."""
        data = os.path.join(self.root, "data")
        if self.root and os.path.exists(os.path.join(data, "postmaster.pid")):
            with contextlib.suppress(OSError, ValueError):
                self.thaw()  # a stopped postmaster would not act on pg_ctl's signal
            with contextlib.suppress(subprocess.CalledProcessError):
                self._run([self.bin("pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop"])
        if self.root:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = ""


class ExternalPostgres:
    """A server given by ``KVCTL_TEST_PG_URL`` (not started or stopped here)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.password_url: str | None = None
        bindir = find_bindir()
        self.bindir = bindir or ""

    @property
    def dsn(self) -> str:
        """The libpq form of the URL."""
        return self.url.replace("postgresql+psycopg://", "postgresql://", 1)

    def bin(self, name: str) -> str:
        """Path of one of the client programs."""
        return os.path.join(self.bindir, name) if self.bindir else name


def _quote(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()[-4000:]
    except OSError:
        return ""


def drop_schemas(dsn: str, schemas: list[str]) -> None:
    """Drop test schemas (and everything in them)."""
    import psycopg
    from psycopg import sql

    if not schemas:
        return
    with psycopg.connect(dsn, autocommit=True) as conn:
        for schema in schemas:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    """The test server (started once per session, stopped at its end)."""
    from conftest import need

    external = os.environ.get(URL_ENV)
    if external:
        yield ExternalPostgres(external)
        return
    bindir = find_bindir()
    need("PostgreSQL", bindir is not None, "no initdb/pg_ctl found (run scripts/ensure-postgres.sh)")
    assert bindir is not None
    server = ThrowawayPostgres(bindir).start()
    os.environ[URL_ENV] = server.url
    try:
        yield server
    finally:
        os.environ.pop(URL_ENV, None)
        server.stop()


@pytest.fixture
def pg_factory(pg_server: Any) -> Iterator[Callable[..., Any]]:
    """``factory(**query)`` opens a fresh provider on a new schema; schemas are dropped after the test."""
    import spi

    schemas: list[str] = []
    opened: list[Any] = []

    def factory(**query: str) -> Any:
        schema = f"t_{uuid.uuid4().hex[:16]}"
        schemas.append(schema)
        extra = "".join(f"&{k}={v}" for k, v in query.items())
        sep = "&" if "?" in pg_server.url else "?"
        provider = spi.connect(f"{pg_server.url}{sep}schema={schema}{extra}")
        opened.append(provider)
        return provider

    yield factory
    for p in opened:
        p.close()
    drop_schemas(pg_server.dsn, schemas)

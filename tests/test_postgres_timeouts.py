"""A PostgreSQL server that stops answering: connect and statement timeouts, TCP
keepalives; and one that goes down (a crash, a fast shutdown) and comes back. A frozen
or halted server is a throwaway one of its own (SIGSTOP, ``pg_ctl stop``), never the
shared test server; it is always thawed and running again after each test and
stopped at the end."""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg
import pytest
from cli_support import Kvctl, assert_one_error, run_process
from conftest import need
from pg_server import ThrowawayPostgres, find_bindir

import spi
from kvctl.cmdline import WARNING
from providers.postgres.url import CONNECT_TIMEOUT

SLACK = 10.0
"""What the issue allows beyond the timeout itself (process start, imports, teardown)."""


@pytest.fixture(scope="module")
def spare() -> Iterator[ThrowawayPostgres]:
    """A server of this module's own, to freeze."""
    bindir = find_bindir()
    need("PostgreSQL", bindir is not None, "no initdb/pg_ctl found (run scripts/ensure-postgres.sh)")
    assert bindir is not None
    server = ThrowawayPostgres(bindir, {"synchronous_commit": "on"}).start()  # a crash keeps what it acknowledged
    try:
        yield server
    finally:
        server.stop()  # thaws it first


@pytest.fixture
def frozen(spare: ThrowawayPostgres) -> Iterator[ThrowawayPostgres]:
    """The spare server, thawed again after the test whatever happened."""
    try:
        yield spare
    finally:
        spare.thaw()


@pytest.fixture
def halted(spare: ThrowawayPostgres) -> Iterator[ThrowawayPostgres]:
    """The spare server, running again after the test whatever happened."""
    try:
        yield spare
    finally:
        if not os.path.exists(os.path.join(spare.root, "data", "postmaster.pid")):
            spare.start_again()


def _url(base: str, **query: object) -> str:
    sep = "&" if "?" in base else "?"
    return base + (sep + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


@pytest.mark.timing
def test_commands_against_a_stopped_server_exit_3_within_the_connect_timeout(frozen: ThrowawayPostgres) -> None:
    """``table list`` and ``get`` (the catalog path and the one-statement read), side by
    side: each waits for the connect timeout by itself."""
    frozen.freeze()  # the kernel still completes TCP handshakes; the startup gets no answer

    def run(command: list[str]) -> tuple[Any, float]:
        start = time.monotonic()
        res = run_process("--url", frozen.password_url, *command, timeout=CONNECT_TIMEOUT + SLACK + 30)
        return res, time.monotonic() - start

    with ThreadPoolExecutor(2) as pool:
        outcomes = list(pool.map(run, [["table", "list"], ["get", "T", "k=1"]]))
    for res, elapsed in outcomes:
        assert res.err.startswith(WARNING + "\n")  # the URL's password, hidden from ps
        res.err = res.err.removeprefix(WARNING + "\n")
        assert_one_error(res, 3)
        assert "timeout" in res.err and "127.0.0.1" in res.err
        assert "s3cret" not in res.err and "***" in res.err
        assert CONNECT_TIMEOUT <= elapsed < CONNECT_TIMEOUT + SLACK, elapsed


@pytest.mark.timing
def test_connect_timeout_in_the_url_is_honoured(frozen: ThrowawayPostgres) -> None:
    frozen.freeze()
    kv = Kvctl(_url(frozen.url, connect_timeout=1))  # libpq waits whole seconds, at least 2
    start = time.monotonic()
    res = kv("table", "list")
    elapsed = time.monotonic() - start
    assert_one_error(res, 3)
    assert "connection timeout expired" in res.err
    assert 1 <= elapsed < CONNECT_TIMEOUT - 1, elapsed  # well before the default


@pytest.mark.timing
def test_arrow_scan_connections_have_the_connect_timeout(frozen: ThrowawayPostgres) -> None:
    import pyarrow as pa

    from providers.postgres.arrow import adbc_batches, conninfo
    from providers.postgres.url import parse_url

    info = conninfo(parse_url(_url(frozen.url, connect_timeout=2, application_name="frozen")))
    frozen.freeze()
    start = time.monotonic()
    with pytest.raises(spi.ProviderUnavailableError) as error:
        list(adbc_batches(info, "SELECT 1 AS one", pa.schema([("one", pa.int32())]), 10, "the server", None))
    assert time.monotonic() - start < 2 + SLACK
    assert "\n" not in str(error.value) and "the server" in str(error.value)


def _locked(pg_server: Any, schema: str, table: str) -> psycopg.Connection[Any]:
    """A connection holding an ACCESS EXCLUSIVE lock on ``schema.table`` until closed."""
    conn = psycopg.connect(pg_server.dsn)
    conn.execute(f'LOCK TABLE "{schema}"."{table}" IN ACCESS EXCLUSIVE MODE')
    return conn


@pytest.mark.timing
def test_statement_timeout_cancels_a_waiting_statement(pg_server: Any, pg_factory: Callable[..., Any]) -> None:
    p = pg_factory()
    p.admin.create(spi.TableSpec("T", [spi.Field("k", "long")], ["k"]))
    p.table("T").upsert({"k": 1})
    kv = Kvctl(_url(pg_server.url, schema=p.schema, statement_timeout=0.5))
    assert kv.ok("get", "T", "k=1", "-o", "json").out.strip()
    with _locked(pg_server, p.schema, "T"):
        start = time.monotonic()
        res = kv("get", "T", "k=1")
        assert time.monotonic() - start < 0.5 + SLACK
    assert_one_error(res, 3)
    assert "cancelled the statement" in res.err and "statement timeout" in res.err


def test_without_statement_timeout_a_waiting_statement_waits(pg_server: Any, pg_factory: Callable[..., Any]) -> None:
    """Long statements are legitimate (exports): by default only the server's own
    statement_timeout (none unless configured) limits them."""
    import threading

    p = pg_factory()
    p.admin.create(spi.TableSpec("T", [spi.Field("k", "long")], ["k"]))
    p.table("T").upsert({"k": 1})
    got: list[Any] = []
    with _locked(pg_server, p.schema, "T"):
        reader = threading.Thread(target=lambda: got.append(p.table("T").read((1,))))
        reader.start()
        reader.join(5)  # the watchdog checks the server after 2 s and 4 s of silence: it answers
        assert reader.is_alive() and not got  # still waiting for the lock
    reader.join(10)
    assert got and got[0]["k"] == 1


def test_arrow_scans_take_the_statement_timeout(pg_server: Any, pg_factory: Callable[..., Any]) -> None:
    import adbc_driver_postgresql.dbapi

    p = pg_factory(statement_timeout=2.5)
    with adbc_driver_postgresql.dbapi.connect(p.arrow_conninfo) as conn, conn.cursor() as cur:
        cur.execute("SELECT current_setting('statement_timeout')")
        assert cur.fetchone() == ("2500ms",)


def test_connections_have_tcp_keepalives(pg_factory: Callable[..., Any]) -> None:
    """Set on the real sockets, so a dead host or a cut network ends a waiting statement."""
    p = pg_factory(keepalives_count=4)
    with p.transaction() as tx:
        fd = os.dup(tx.driver_connection().fileno())
    with socket.socket(fileno=fd) as sock:
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == 10
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL) == 5
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT) == 4  # the URL's
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT) == 30_000


def _in_thread(fn: Callable[[], Any], within: float) -> Any:
    """``fn()``'s result or exception, failing the test if it takes over ``within`` seconds
    (the thread is left behind: thawing the server lets it finish)."""
    import threading

    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(fn())
        except BaseException as exc:  # handed to the test
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(within)
    assert not thread.is_alive(), f"still waiting after {within} s"
    return outcome[0]


@pytest.fixture
def opened(frozen: ThrowawayPostgres) -> Iterator[Any]:
    """A provider on the spare server (connect_timeout 2 s) with a table T holding k=1,
    read once through each path so that both kinds of connection are open."""
    p = spi.connect(_url(frozen.url, schema=f"s_{uuid.uuid4().hex[:8]}", connect_timeout=2))
    p.admin.create(spi.TableSpec("T", [spi.Field("k", "long")], ["k"]))
    p.table("T").upsert({"k": 1})
    assert p.table("T").read((1,)) is not None  # the transaction path: a pooled connection
    assert p.table("T").read((1,)) is not None  # the one-statement path: its own connection
    try:
        yield p
    finally:
        frozen.thaw()
        p.close()


def _read_in_transaction(p: Any) -> Any:
    with p.transaction() as tx:
        return tx.table("T").read((1,))


@pytest.mark.timing
@pytest.mark.parametrize("read", [lambda p: p.table("T").read((1,)), _read_in_transaction])
def test_a_server_hung_with_connections_open_is_noticed(
    frozen: ThrowawayPostgres, opened: Any, read: Callable[[Any], Any]
) -> None:
    """Every server process stopped: statements on open connections get no answer,
    although the kernel acknowledges them (keepalives and statement_timeout cannot help)."""
    frozen.freeze(everything=True)
    start = time.monotonic()
    error = _in_thread(lambda: read(opened), 2 + SLACK)
    assert isinstance(error, spi.ProviderUnavailableError), error
    assert "\n" not in str(error) and "127.0.0.1" in str(error)
    assert time.monotonic() - start < 2 + SLACK
    frozen.thaw()
    assert read(opened)["k"] == 1  # the provider recovers with the server


@pytest.mark.timing
def test_a_statement_in_a_transaction_on_a_hung_server_says_so(frozen: ThrowawayPostgres, opened: Any) -> None:
    with pytest.raises(spi.ProviderUnavailableError) as error, opened.transaction() as tx:
        table = tx.table("T")
        assert table.read((1,)) is not None
        frozen.freeze(everything=True)
        start = time.monotonic()
        try:
            outcome = _in_thread(lambda: table.read((1,)), 2 + SLACK)
        finally:
            frozen.thaw()  # before the rollback, whatever happened
        elapsed = time.monotonic() - start
        raise outcome
    message = str(error.value)
    assert message.startswith("PostgreSQL at ") and "stopped answering" in message, message
    assert "no reply for 2 s and a new connection none within 2 s" in message
    assert 2 <= elapsed < 2 + 2 + 2, elapsed  # the silence, the check, the sampling


def test_a_scan_ending_on_a_connection_the_server_closed_says_unavailable(
    pg_server: Any, pg_factory: Callable[..., Any]
) -> None:
    """The server ends the connection (a crash or a stop) between a streamed scan's last
    fetch and the close of its cursor: the close's driver error is an SPI error too
    (found by bench/chaos.py: psycopg's AdminShutdown escaped a transaction's scan)."""
    p = pg_factory()
    p.admin.create(spi.TableSpec("t", [spi.Field("k", "long")], ["k"]))
    p.table("t").load({"k": k} for k in range(3))
    with pytest.raises(spi.ProviderUnavailableError), p.transaction() as tx:
        rows = tx.table("t").scan()  # streamed through a server-side cursor
        assert [next(rows)["k"] for _ in range(3)] == [0, 1, 2]
        pid = tx.driver_connection().info.backend_pid
        with psycopg.connect(pg_server.dsn, autocommit=True) as other:
            other.execute("SELECT pg_terminate_backend(%s)", (pid,))
        rows._result = _LastFetchDone(rows._result)  # the next step closes the cursor
        next(rows)


class _LastFetchDone:
    """A server-side cursor whose next fetch comes back empty (as the last one does)."""

    def __init__(self, cursor: Any) -> None:
        self.cursor = cursor

    def fetchmany(self, size: int) -> list[Any]:
        return []

    def close(self) -> None:
        self.cursor.close()


@pytest.mark.parametrize("mode", ["immediate", "fast"])
def test_a_server_that_goes_down_is_unavailable_then_serves_what_it_acknowledged(
    halted: ThrowawayPostgres, mode: str
) -> None:
    """``pg_ctl stop -m immediate`` (a crash) or ``-m fast`` (every session ended) with a
    transaction open: its commit, a call on a pooled connection and a fresh command say
    unavailable (exit 3) at once; started again, the same provider serves every
    acknowledged row, and nothing of the transaction."""
    url = _url(halted.url, schema=f"s_{uuid.uuid4().hex[:8]}", connect_timeout=2)
    with spi.connect(url) as p:
        p.admin.create(spi.TableSpec("T", [spi.Field("k", "long")], ["k"]))
        p.table("T").load({"k": k} for k in range(100))
        with pytest.raises(spi.ProviderUnavailableError), p.transaction() as tx:
            tx.table("T").upsert({"k": 1000})
            halted.halt(mode)
            started = time.monotonic()
        with pytest.raises(spi.ProviderUnavailableError):
            p.table("T").read((1,))
        assert time.monotonic() - started < 2, "waited for a server that is gone"
        assert_one_error(run_process("--url", url, "get", "T", "k=1", timeout=60), 3)
        halted.start_again()
        assert p.table("T").count() == 100 and p.table("T").read((1000,)) is None
        p.table("T").upsert({"k": 1000})
        assert p.table("T").read((1000,)) is not None

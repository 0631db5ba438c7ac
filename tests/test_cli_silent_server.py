"""A server that accepts connections and never answers (a real listening socket of the
test's own): a fresh command exits 3 after the connect timeout, and a password typed
in ``--url`` or a copy SRC/DST is gone from the process's command line while it waits
(issue 39)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest
from cli_support import REPO, Result, assert_one_error, run_process

from kvctl.cmdline import WARNING, mask_argument
from providers.postgres.url import CONNECT_TIMEOUT

SECRET = "s3cret-typed"


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port on 127.0.0.1 whose listener accepts every connection and says nothing."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        for conn in accepted:
            conn.close()
        listener.close()


def _url(port: int) -> str:
    return f"postgresql+psycopg://kv:{SECRET}@127.0.0.1:{port}/db"


@pytest.mark.timing
def test_a_fresh_command_against_a_silent_server_exits_3_after_the_connect_timeout(silent_port: int) -> None:
    start = time.monotonic()
    res = run_process("--url", f"postgresql+psycopg://kv@127.0.0.1:{silent_port}/db", "table", "list", timeout=60)
    elapsed = time.monotonic() - start
    assert_one_error(res, 3)
    assert "connection timeout expired" in res.err
    # the wait is the connect timeout; the rest is the process's start-up (docs/providers/postgres.md)
    assert CONNECT_TIMEOUT <= elapsed < CONNECT_TIMEOUT + 4, elapsed


def _cmdline_while_waiting(*args: str) -> tuple[str, Result]:
    """The ``/proc`` command line of a real ``kvctl ARGS`` once it has started (its
    stderr said so), then the process is stopped."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kvctl", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()  # the warning comes after the command line is rewritten
        with open(f"/proc/{proc.pid}/cmdline", "rb") as f:
            cmdline = f.read().replace(b"\0", b" ").decode()
    finally:
        proc.kill()
        out, err = proc.communicate()
    return cmdline, Result(proc.returncode, out, first + err)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_password_in_url_is_gone_from_the_command_line(silent_port: int) -> None:
    cmdline, res = _cmdline_while_waiting("--url", _url(silent_port), "watch", "t")
    assert SECRET not in cmdline and f"kv:***@127.0.0.1:{silent_port}" in cmdline, cmdline
    assert "--url" in cmdline and "watch t" in cmdline
    assert res.err.splitlines()[0] == WARNING and res.err.count("password_env") == 1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_passwords_in_copy_arguments_and_url_equals_are_gone(silent_port: int) -> None:
    cmdline, res = _cmdline_while_waiting(
        f"--url={_url(silent_port)}", "copy", _url(silent_port), f"postgresql://kv:{SECRET}x@127.0.0.1:1/d", "--all"
    )
    assert SECRET not in cmdline, cmdline
    assert cmdline.count(":***@") == 3, cmdline
    assert res.err.splitlines()[0] == WARNING


def test_a_command_line_without_passwords_is_left_alone() -> None:
    res = run_process("--url", "memory://", "table", "list")
    assert res.code == 0 and WARNING not in res.err
    for arg in ("--url", "memory://", "postgresql://kv@h/db", '{"u": "http://a:b@c"}', "v=http://a:b@c", "--set=x"):
        assert mask_argument(arg) == arg
    assert mask_argument("etcd://root:pw@h:2379/app") == "etcd://root:***@h:2379/app"
    assert mask_argument("--url=postgres://u:p@h/d") == "--url=postgres://u:***@h/d"

"""kvctl as real processes: exit codes, piping, the progress bar, concurrency, startup imports."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
import threading
from pathlib import Path

import pytest
from cli_support import ORDERS_FIELDS, PROVIDER_KINDS, REPO, provider_url, run_process, until


@pytest.fixture(params=PROVIDER_KINDS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store holding an ``orders`` table with 1200 rows."""
    url = provider_url(request.param, tmp_path, request)
    assert run_process("--url", url, "table", "create", "orders", *ORDERS_FIELDS).code == 0
    rows = "\n".join(json.dumps({"region": "eu", "id": i, "total": i}) for i in range(1200))
    assert run_process("--url", url, "put", "orders", "--file", "-", input=rows).out == "1200\n"
    return url


def test_exit_codes_and_piped_output(url: str) -> None:
    res = run_process("--url", url, "get", "orders", "region=eu", "id=7")
    assert res.code == 0 and json.loads(res.out) == {  # piped stdout: ndjson by default
        "region": "eu", "id": 7, "status": None, "total": 7.0, "data": None, "ts": None,
    }  # fmt: skip
    assert res.err == ""
    missing = run_process("--url", url, "get", "orders", "region=eu", "id=70000")
    assert (missing.code, missing.out) == (1, "") and missing.err.startswith("error:")
    bad = run_process("--url", url, "scan", "orders", "--where", "total >")
    assert bad.code == 2 and bad.err.count("\n") == 1 and "Traceback" not in bad.err
    page = run_process("--url", url, "scan", "orders", "--keys-only")
    assert len(page.out.splitlines()) == 1000 and "--after " in page.err
    assert run_process("--version").out.startswith("kvctl ")


def test_closed_pipe_is_quiet(url: str) -> None:
    cmd = f"{sys.executable} -m kvctl --url '{url}' scan orders --all | head -n 2"
    proc = subprocess.run(
        ["sh", "-c", cmd], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}
    )
    assert len(proc.stdout.splitlines()) == 2
    assert "Traceback" not in proc.stderr and "Exception" not in proc.stderr, proc.stderr


def test_progress_bar_only_on_a_terminal(url: str, tmp_path: Path) -> None:
    data = tmp_path / "rows.ndjson"
    data.write_text("\n".join(json.dumps({"region": "us", "id": i}) for i in range(500)))
    args = ["--url", url, "put", "orders", "--file", str(data), "--batch-size", "100"]
    piped = run_process(*args)
    assert (piped.code, piped.out, piped.err) == (0, "500\n", "")
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kvctl", *args],
        stdout=subprocess.PIPE,
        stderr=slave,
        env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "100"},
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    out = proc.stdout.read() if proc.stdout else b""
    assert proc.wait() == 0 and out == b"500\n"
    terminal = b"".join(chunks).decode(errors="replace")
    assert "loading" in terminal and "500/500" in terminal


def test_concurrent_incr_processes_never_lose_an_increment(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = provider_url("rocksdb", tmp_path, request)  # the embedded default's provider
    assert (
        run_process("--url", url, "table", "create", "c", "--field", "k:string", "--field", "n:long", "--pk", "k").code
        == 0
    )
    workers, rounds = 4, 3
    failures: list[str] = []

    def worker() -> None:
        for _ in range(rounds):
            res = run_process("--url", url, "incr", "c", "k=x", "--column", "n")
            if res.code != 0:
                failures.append(res.err)

    threads = [threading.Thread(target=worker) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    got = run_process("--url", url, "get", "c", "k=x")
    assert json.loads(got.out)["n"] == workers * rounds


STARTUP_PROBE = """
import runpy, sys
sys.argv = ["kvctl", *sys.argv[1:]]
try:
    runpy.run_module("kvctl", run_name="__main__")
except SystemExit:
    pass
sys.stderr.write("MODULES " + " ".join(sorted(sys.modules)) + "\\n")
"""


def test_get_put_scan_do_not_import_heavy_modules(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = provider_url("rocksdb", tmp_path, request)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run_process("--url", url, "table", "create", "t", "--field", "k:string", "--pk", "k")
    cases = {
        ("put", "t", '{"k": "a"}'): {"kvctl.commands.rows"},
        ("get", "t", "k=a"): {"kvctl.commands.rows"},
        ("scan", "t"): {"kvctl.commands.scan"},
        ("--version",): set(),
    }
    for args, commands in cases.items():
        proc = subprocess.run(
            [sys.executable, "-c", STARTUP_PROBE, *(() if args == ("--version",) else ("--url", url)), *args],
            capture_output=True,
            text=True,
            env=env,
        )
        modules = set(proc.stderr.split("MODULES ")[1].split())
        assert "kvctl.cli" in modules
        heavy = {m.split(".")[0] for m in modules} & {
            "pyspark",
            "textual",
            "sqlalchemy",
            "rich",
            "pyarrow",
            "pydantic",
            "psycopg",
            "msgspec" if args == ("--version",) else "",
        }
        assert heavy == set(), (args, heavy)
        # Only the command being run is loaded; --version loads no command and no provider.
        assert {m for m in modules if m.startswith("kvctl.commands.")} == commands, args
        if args == ("--version",):  # answered before Typer, the SPI or a provider is loaded
            assert not {m for m in modules if m.startswith(("typer", "spi", "providers", "logging"))}
        else:  # what only other commands need: diffs' checksums, increments' fold, sorted buffers
            assert not {"hashlib", "random", "sortedcontainers", "kvctl.commands.info"} & modules, args


def test_command_map_matches_what_each_module_registers() -> None:
    """:data:`kvctl.commands.COMMANDS` names exactly the commands the modules register."""
    from kvctl.commands import COMMANDS, module_commands

    registered = {name: module for module in set(COMMANDS.values()) for name in module_commands(module)}
    assert registered == COMMANDS


def _waits_for_more(pid: int, writer: int) -> bool:
    """Whether process ``pid`` has read everything written to the pipe ``writer`` and
    is blocked reading it again (Linux: its main thread sleeps in the kernel's pipe read)."""
    unread = struct.unpack("i", fcntl.ioctl(writer, termios.FIONREAD, b"\0\0\0\0"))[0]
    wchan = Path(f"/proc/{pid}/wchan").read_text()
    return unread == 0 and "pipe_read" in wchan


_CTRL_C_WHILE_STARTING = """
import os, signal, sys

class CtrlC:
    def find_spec(self, name, path=None, target=None):
        if name == "spi.types.booleans":  # deep in the imports before the app takes over
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, CtrlC())
sys.argv = ["kvctl", *sys.argv[1:]]
from kvctl.cli import main
main()
"""


def test_ctrl_c_while_starting_is_one_line_and_130(url: str) -> None:
    """A real SIGINT that lands while the command's modules are still being imported
    (before the app handles Ctrl-C) ends like any interrupt: one line, exit 130, no
    traceback."""
    proc = subprocess.run(
        [sys.executable, "-c", _CTRL_C_WHILE_STARTING, "--url", url, "count", "orders"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=60,
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (130, "", "error: interrupted\n")


def test_interrupt_exits_130(url: str, tmp_path: Path) -> None:
    import signal

    fifo = tmp_path / "in.ndjson"
    os.mkfifo(fifo)
    proc = subprocess.Popen(
        [sys.executable, "-m", "kvctl", "--url", url, "put", "orders", "--file", str(fifo)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    with open(fifo, "w") as writer:  # the command now waits for input
        writer.write('{"region": "zz", "id": 1}\n')
        writer.flush()
        assert until(lambda: _waits_for_more(proc.pid, writer.fileno()), 60), "put did not read its input"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and out == "", err
    assert err.strip().splitlines() == ["error: interrupted"]
    assert run_process("--url", url, "count", "orders", "--prefix", "region=zz").out == "0\n"


@pytest.mark.parametrize("kind", ["csv", "ndjson"])
def test_put_file_imports_neither_numpy_nor_pandas(tmp_path: Path, request: pytest.FixtureRequest, kind: str) -> None:
    """pyarrow imports numpy (0.1 s) when it is imported and pandas (0.2 s) the first
    time it converts a Python value, where they are installed (as they are here);
    ``put --file`` keeps it from looking."""
    pytest.importorskip("pandas")
    pytest.importorskip("numpy")
    url = provider_url("rocksdb", tmp_path, request)
    run_process("--url", url, "table", "create", "t", "--field", "k:long", "--field", "s:string", "--pk", "k")
    data = tmp_path / f"rows.{kind}"
    rows = [{"k": i, "s": f"s{i}"} for i in range(100)]
    data.write_text(
        "k,s\n" + "".join(f"{r['k']},{r['s']}\n" for r in rows)
        if kind == "csv"
        else "".join(json.dumps(r) + "\n" for r in rows)
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-c", STARTUP_PROBE, "--url", url, "put", "t", "--file", str(data)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.stdout == "100\n", proc.stderr
    modules = set(proc.stderr.split("MODULES ")[1].split())
    assert "pyarrow" in modules and "pandas" not in modules and "numpy" not in modules

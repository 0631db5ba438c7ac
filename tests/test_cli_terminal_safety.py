"""Issue 38: control characters in values are shown, never sent (CLI.md, "Terminal
output"). Values holding ANSI escapes, a carriage return and a C1 CSI are stored,
then read back byte by byte from a real process whose stdout is a pseudo-terminal,
from pipes, and from the dashboard in tmux (``capture-pane -e``: the escapes tmux
would send a terminal)."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from cli_support import REPO, Kvctl, run_process
from dashboard_support import Tmux, dashboard_command, terminal

tmux = pytest.fixture(terminal)

HOSTILE = {1: "\x1b]0;pwned\x07", 2: "\x1b[2J", 3: "a\rb", 4: "\x9b31m"}
"""Values a terminal would act on: a title change, a screen clear, a carriage return, a C1 CSI."""
SHOWN = {1: "\\x1b]0;pwned\\x07", 2: "\\x1b[2J", 3: "a\\x0db", 4: "\\x9b31m"}
"""How each is shown on a terminal."""
RAW = (b"\x1b", b"\xc2\x9b", b"\x07")
"""Bytes of those values that must never reach a terminal."""


def on_pty(*args: str, columns: int = 80) -> bytes:
    """Run ``python -m kvctl ARGS`` with stdout on a pseudo-terminal ``columns`` wide;
    every byte it wrote there, line ends as written (no ``\\r`` added)."""
    leader, follower = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": str(columns), "NO_COLOR": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "kvctl", *args], stdout=follower, stderr=subprocess.PIPE, env=env)
    os.close(follower)

    attrs = termios.tcgetattr(leader)
    attrs[1] &= ~termios.OPOST  # the bytes as the program wrote them
    termios.tcsetattr(leader, termios.TCSANOW, attrs)
    data = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the other side closed
            break
        if not chunk:
            break
        data += chunk
    os.close(leader)
    assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
    return data


@pytest.fixture
def url(tmp_path: Path) -> str:
    """A RocksDB store with table ``t`` (id long, s string) holding the hostile values."""
    url = f"rocksdb://{tmp_path / 'db'}"
    kv = Kvctl(url)
    kv.ok("table", "create", "t", "--field", "id:long", "--field", "s:string", "--pk", "id")
    kv.ok("put", "t", "--file", "-", "--format", "ndjson", input="".join(
        json.dumps({"id": i, "s": s}) + "\n" for i, s in HOSTILE.items()
    ))  # fmt: skip
    return url


def assert_shown_not_sent(data: bytes) -> None:
    for raw in RAW:
        assert raw not in data, (raw, data)
    assert b"\r" not in data, data
    text = data.decode()
    for shown in SHOWN.values():
        assert shown in text, (shown, text)


@pytest.mark.parametrize("fmt", ["table", "csv", "tsv"])
def test_values_show_their_control_characters_on_a_terminal(url: str, fmt: str) -> None:
    assert_shown_not_sent(on_pty("--url", url, "scan", "t", "-o", fmt))


def test_a_narrow_terminal_shows_them_one_column_per_line_too(url: str) -> None:
    data = on_pty("--url", url, "scan", "t", "--versions", columns=20)
    assert b"-[ RECORD 1 ]" in data
    assert_shown_not_sent(data)


def test_get_and_a_key_in_an_error_message(url: str, tmp_path: Path) -> None:
    data = b"".join(on_pty("--url", url, "get", "t", f"id={i}") for i in HOSTILE)
    assert_shown_not_sent(data)
    kv = Kvctl(url)
    kv.ok("table", "create", "k", "--field", "name:string", "--pk", "name")
    res = run_process("--url", url, "get", "k", "name=\x1b[2J\x9b")
    assert res.code == 1 and "\x1b" not in res.err and "\x9b" not in res.err and "\\x1b[2J\\x9b" in res.err, res


def test_csv_to_a_pipe_is_the_data(url: str) -> None:
    res = run_process("--url", url, "scan", "t", "-o", "csv")
    assert res.code == 0 and "\x1b[2J" in res.out and "\x9b31m" in res.out, res


@pytest.mark.parametrize("fmt", ["json", "ndjson"])
def test_json_escapes_c0_del_and_c1_and_reads_back_the_same(url: str, fmt: str) -> None:
    for data in (on_pty("--url", url, "scan", "t", "-o", fmt), run_process("--url", url, "scan", "t", "-o", fmt).out):
        text = data.decode() if isinstance(data, bytes) else data
        assert "\x1b" not in text and "\x9b" not in text and "\x07" not in text and "\r" not in text
        assert "\\u001b" in text and "\\u009b" in text
        rows = json.loads(text) if fmt == "json" else [json.loads(line) for line in text.splitlines()]
        assert {r["id"]: r["s"] for r in rows} == HOSTILE


def test_the_dashboard_shows_them_and_sends_none(url: str, tmux: Tmux, tmp_path: Path) -> None:
    tmux.start(dashboard_command(url, tmp_path / "state", "t"), size=(80, 24))
    screen = tmux.wait_for_text("\\x1b[2J", "a\\x0db", "\\x9b31m")
    assert "\\x1b]0;pwned\\x07" in screen, screen
    colours = tmux.run("capture-pane", "-e", "-p", "-t", "dash")
    assert "pwned" in colours and "\x1b]0;" not in colours and "\x1b[2J" not in colours, colours
    assert "\x9b" not in colours and "\r" not in colours and "\x07" not in colours, colours
    tmux.keys("Enter")  # the row detail
    screen = tmux.wait_for_text("\\x1b]0;pwned\\x07", "version")
    tmux.keys("e")  # the edit form
    tmux.wait_for_text("Edit t", "\\x1b]0;pwned\\x07")
    assert tmux.run("display-message", "-p", "-t", "dash", "#{pane_title}") != "pwned\n"

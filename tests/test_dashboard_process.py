"""``kvctl dashboard`` as a real program in a real terminal (tmux): open a table, filter
it, open a row, quit with exit 0."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from dashboard_support import filled

import spi
from spi.testing.requirements import need

REPO = Path(__file__).resolve().parents[1]


class Tmux:
    """One tmux server on a private socket, 140x45, running one command."""

    def __init__(self, socket: str) -> None:
        self.socket = socket

    def run(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=True)
        return done.stdout

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "dash")

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", "dash", *keys)

    def type(self, text: str) -> None:
        self.run("send-keys", "-t", "dash", "-l", text)

    def wait_for(self, check: Callable[[str], bool], what: str, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if check(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; the screen:\n{screen}")
            time.sleep(0.1)


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    need("tmux", shutil.which("tmux") is not None, "install tmux")
    term = Tmux(f"kvctl-test-{uuid.uuid4().hex[:12]}")
    yield term
    subprocess.run(["tmux", "-L", term.socket, "kill-server"], capture_output=True)


def test_dashboard_in_a_terminal(tmux: Tmux, tmp_path: Path) -> None:
    url = f"rocksdb://{tmp_path}/db"
    with spi.connect(url) as p:
        filled(p)
    status = tmp_path / "exit-status"
    env = {"PYTHONPATH": str(REPO), "XDG_STATE_HOME": str(tmp_path / "state"), "TERM": "xterm-256color"}
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    # COLUMNS/LINES may reach the pane from tmux and would override the terminal's real size
    kvctl = f"{shlex.quote(sys.executable)} -m kvctl --url {shlex.quote(url)} dashboard"
    command = f"unset COLUMNS LINES; {exports} {kvctl}; echo $? > {status}"
    tmux.run("new-session", "-d", "-s", "dash", "-x", "140", "-y", "45", "sh", "-c", command)

    screen = tmux.wait_for(lambda s: "orders" in s and "150" in s, "the table list with its counts")
    assert "change feed" in screen and "3 tables" in screen
    tmux.keys("Down", "Down", "Enter")
    screen = tmux.wait_for(lambda s: "rows 1\u2013" in s and "of 150" in s and "q Quit" in s, "the rows of orders")
    assert "⏎ Open" in screen and "x Export" in screen
    tmux.keys("/")
    tmux.wait_for(lambda s: "Enter applies" in s, "the filter bar")  # keys typed earlier would be lost
    tmux.type("status = 'open' and region = 'eu'")
    tmux.keys("Enter")
    screen = tmux.wait_for(lambda s: "where status = 'open' and region = 'eu'" in s, "the filtered rows")
    assert "pending" not in screen and " us " not in screen
    tmux.keys("Enter")
    screen = tmux.wait_for(lambda s: "(version 1)" in s and "c Copy" in s, "the row detail")
    assert "region  string, key" in screen and "status  string, indexed" in screen
    tmux.keys("Escape")
    tmux.wait_for(lambda s: "where status = 'open'" in s, "the rows again")
    tmux.keys("q")
    deadline = time.monotonic() + 20
    while not status.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert status.read_text().strip() == "0"
    assert os.path.exists(tmp_path / "state" / "kvctl" / "dashboard-history.json")


def test_a_table_that_does_not_exist_is_an_error_before_the_screen(tmp_path: Path) -> None:
    url = f"rocksdb://{tmp_path}/db"
    with spi.connect(url) as p:
        filled(p)
    done = subprocess.run(
        [sys.executable, "-m", "kvctl", "--url", url, "dashboard", "nosuch"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=60,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("error: ") and "nosuch" in done.stderr and done.stderr.count("\n") == 1


def test_an_80x24_terminal_keeps_help_and_quit_and_forms_take_typing(tmux: Tmux, tmp_path: Path) -> None:
    url = f"rocksdb://{tmp_path}/db"
    with spi.connect(url) as p:
        filled(p)
    env = {"PYTHONPATH": str(REPO), "XDG_STATE_HOME": str(tmp_path / "state"), "TERM": "xterm-256color"}
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    kvctl = f"{shlex.quote(sys.executable)} -m kvctl --url {shlex.quote(url)} dashboard orders"
    tmux.run(
        "new-session", "-d", "-s", "dash", "-x", "80", "-y", "24", "sh", "-c", f"unset COLUMNS LINES; {exports} {kvctl}"
    )
    screen = tmux.wait_for(lambda s: "of 150" in s, "the rows of orders")
    footer = screen.rstrip().splitlines()[-1]
    assert footer.startswith("? Help") and "q Quit" in footer, footer
    assert "⚷ region" in screen
    tmux.keys("a")
    tmux.wait_for(lambda s: "New row in orders" in s and "^s Save" in s, "the add form")
    tmux.type("zz")  # straight into the first field
    tmux.keys("Enter")
    tmux.type("5")
    tmux.keys("C-s")
    tmux.wait_for(lambda s: "New row in orders" not in s and "of 151" in s, "the row saved")
    tmux.keys("q")
    with spi.connect(url) as p:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                assert p.table("orders").read(("zz", 5)) is not None
                break
            except spi.ProviderUnavailableError:  # the dashboard still holds the store
                time.sleep(0.2)
        else:
            raise AssertionError("the row zz 5 was not read back")

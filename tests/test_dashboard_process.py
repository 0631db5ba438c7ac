"""``kvctl dashboard`` as a real program in a real terminal (tmux): open a table, filter
it, open a row, quit with exit 0."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import until
from dashboard_support import REPO, Tmux, dashboard_command, filled, terminal, wait_for_file

import spi

tmux = pytest.fixture(terminal)


def test_dashboard_in_a_terminal(tmux: Tmux, tmp_path: Path) -> None:
    url = f"rocksdb://{tmp_path}/db"
    with spi.connect(url) as p:
        filled(p)
    status = tmp_path / "exit-status"
    tmux.start(dashboard_command(url, tmp_path / "state", status=status))

    screen = tmux.wait_for(lambda s: "orders" in s and "150" in s, "the table list with its counts")
    assert "change feed" in screen and "3 tables" in screen
    tmux.keys("Down", "Down", "Enter")
    screen = tmux.wait_for(lambda s: "rows 1\u2013" in s and "of 150" in s and "q Quit" in s, "the rows of orders")
    assert "⏎ Open" in screen and "x Export" in screen
    # / and the clause in one write, as a fast typist or a paste sends them: the keys
    # after / go to the filter, not to the rows (the s of "status" opened the spec).
    tmux.type("/status = 'open' and region = 'eu'")
    tmux.keys("Enter")
    screen = tmux.wait_for(lambda s: "where status = 'open' and region = 'eu'" in s, "the filtered rows")
    assert "pending" not in screen and " us " not in screen
    tmux.keys("Enter")
    screen = tmux.wait_for(lambda s: "(version 1)" in s and "c Copy" in s, "the row detail")
    assert "region  string, key" in screen and "status  string, indexed" in screen
    tmux.keys("Escape")
    tmux.wait_for(lambda s: "where status = 'open'" in s, "the rows again")
    tmux.keys("q")
    assert wait_for_file(status).strip() == "0"
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


def _footer(screen: str) -> str:
    """The last line of a screen (the footer)."""
    lines = screen.rstrip().splitlines()
    return lines[-1] if lines else ""


def test_an_80x24_terminal_keeps_help_and_quit_and_forms_take_typing(tmux: Tmux, tmp_path: Path) -> None:
    url = f"rocksdb://{tmp_path}/db"
    with spi.connect(url) as p:
        filled(p)
    tmux.start(dashboard_command(url, tmp_path / "state", "orders"), size=(80, 24))
    # The footer follows the focus (the rows grid's, a moment after the screen's own
    # keys, which may show with the first page on a slow machine): wait for both.
    screen = tmux.wait_for(lambda s: "of 150" in s and "q Quit" in _footer(s), "the rows of orders and their keys")
    footer = _footer(screen)
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

        def readable() -> bool:
            try:
                p.table("orders").read(("zz", 5))
            except spi.ProviderUnavailableError:  # the dashboard still holds the store
                return False
            return True

        assert until(readable, 20), "the dashboard kept the store"
        assert p.table("orders").read(("zz", 5)) is not None

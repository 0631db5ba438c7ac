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
from spi.testing.fixtures import ORDERS

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


BIRDS = spi.TableSpec(
    "birds",
    [spi.Field("bird_id", "long"), spi.Field("mass", "long"), spi.Field("wing", "double")],
    ["bird_id"],
)
"""A table whose key is the first numeric column: the info view's histogram is of mass."""


def test_an_80x24_terminal_fits_every_dialog(tmux: Tmux, tmp_path: Path) -> None:
    """Issue 38 at 80x24, one session: the footer's keys two spaces apart, led by help,
    quit and the palette; the add form shows every field of orders (five) at once, its
    error next to the bad field, ctrl+u in it; readline keys in the filter and escape
    clearing a bad one; the create dialog's error and buttons on screen; the created
    table selected; the info view's histogram of the first non-key numeric column in
    whole-number buckets."""
    url = f"rocksdb://{tmp_path}/db"
    with spi.connect(url) as p:
        filled(p)
        p.admin.create(BIRDS)
        p.table("birds").load([{"bird_id": i, "mass": 2700 + 90 * i, "wing": i / 3} for i in range(40)])
    tmux.start(dashboard_command(url, tmp_path / "state", "orders"), size=(80, 24))
    # The footer follows the focus (the rows grid's, a moment after the screen's own
    # keys, which may show with the first page on a slow machine): wait for both.
    screen = tmux.wait_for(lambda s: "of 150" in s and "q Quit" in _footer(s), "the rows of orders and their keys")
    assert _footer(screen).startswith("? Help  q Quit  ^p Palette  ⏎ Open  / Filter  a Add"), _footer(screen)
    assert "⚷ region" in screen

    # the add form: all five fields on screen; a bad id's error under it, Save in view
    tmux.keys("a")
    screen = tmux.wait_for(lambda s: "New row in orders" in s and "^s Save" in s, "the add form")
    labels = [next((n for n, line in enumerate(screen.splitlines()) if f" {c} (" in line), -1) for c in ORDERS.columns]
    assert labels == list(range(labels[0], labels[0] + 5)), screen  # one line a field
    # (each field's text shown before Enter: Enter moves the focus as it is read, and
    # keys read before it but not yet handled would follow it to the next field)
    tmux.type("zz")  # straight into the first field
    tmux.wait_for_text("zz")
    tmux.keys("Enter")
    tmux.type("x")
    tmux.wait_for_text("'x' is not an integer")
    tmux.keys("C-s")
    screen = tmux.wait_for_text("nothing was saved")
    lines = screen.splitlines()
    bad = next(n for n, line in enumerate(lines) if " id (long, key)" in line)
    assert "'x' is not an integer" in lines[bad + 1] and "Save" in screen and "Cancel" in screen, screen
    tmux.keys("C-u")  # the focus is on the bad field: ctrl+u clears it
    tmux.wait_for_text("key column 'id' is empty")
    tmux.type("5")
    tmux.wait_for(lambda s: "'id' is empty" not in s, "the id typed")
    tmux.keys("C-s")
    tmux.wait_for(lambda s: "New row in orders" not in s and "of 151" in s, "the row saved")

    # the filter: ctrl+a/ctrl+e/ctrl+w; a bad filter, ctrl+u, escape clears it (see
    # Tmux.wait_for_cursor: a control key's effect is waited for before typing on)
    tmux.type("/= 'open'")
    start = next(line.index("= 'open'") for line in tmux.wait_for_text("= 'open'").splitlines() if "'open'" in line)
    tmux.keys("C-a")
    tmux.wait_for_cursor(lambda c: c[0] == start, "ctrl+a: the cursor at the start")
    tmux.type("status ")
    tmux.wait_for_text("status = 'open'")
    tmux.keys("C-e")
    tmux.wait_for_cursor(lambda c: c[0] >= start + len("status = 'open'"), "ctrl+e: the cursor at the end")
    tmux.type(" zz")
    tmux.wait_for_text("'open' zz")
    tmux.keys("C-w")
    tmux.wait_for(lambda s: "'open' zz" not in s, "ctrl+w deleting zz")
    tmux.keys("Enter")
    tmux.wait_for_text("where status = 'open'")
    tmux.type("/")
    tmux.keys("C-a", "C-k")  # empty: the placeholder
    tmux.wait_for_text("filter: ")
    tmux.type("nope = 1")
    tmux.wait_for_text("nope = 1")
    tmux.keys("Enter")
    tmux.wait_for_text("'nope'")
    tmux.keys("C-u")  # the cursor stays at the end: ctrl+u clears the line
    tmux.wait_for_text("filter: ")
    tmux.type("status = open")
    tmux.wait_for_text("status = open")
    tmux.keys("Enter")
    tmux.wait_for_text("text values are quoted")
    tmux.keys("Escape")  # the filter in force back in the input, the error gone
    screen = tmux.wait_for(lambda s: "quoted" not in s and "status = open" not in s, "the bad filter gone")
    assert "\u258a  status = 'open'" in screen and "where status = 'open'" in screen, screen

    # create a table at 80x24: the error and the buttons on screen; then created and selected
    tmux.keys("Escape")
    tmux.wait_for_text("4 tables")
    tmux.keys("C-p")
    tmux.wait_for_text("Search for commands")
    tmux.type("create a table")
    tmux.wait_for_text("Create a table")
    tmux.keys("Enter")
    tmux.wait_for_text("expire", "feed", "Create", "Cancel")
    tmux.type("penguins")
    tmux.wait_for_text("penguins")
    tmux.keys("Enter")
    tmux.type("penguin_id:long mass:lnog")
    tmux.wait_for_text("mass:lnog")
    tmux.keys("Enter")
    tmux.type("penguin_id")
    tmux.wait_for(lambda s: s.count("penguin_id") == 2, "the key typed")
    tmux.keys("C-s")
    screen = tmux.wait_for_text("unknown type 'lnog'")
    assert "Create" in screen and "Cancel" in screen, screen
    fields = next(n for n, line in enumerate(screen.splitlines()) if "mass:lnog" in line)
    tmux.keys("BTab")  # back to the fields: all its text selected; ctrl+e, ctrl+w: "lnog" goes
    tmux.wait_for_cursor(lambda c: c[1] == fields, "the focus on the fields")
    tmux.keys("C-e", "C-w")
    tmux.wait_for(lambda s: "mass:lnog" not in s and "mass:" in s, "ctrl+w deleting lnog")
    tmux.type("long")
    tmux.wait_for_text("mass:long")
    tmux.keys("C-s")
    screen = tmux.wait_for_text("created table penguins", "5 tables")
    tmux.keys("Enter")  # the cursor is on the new table
    tmux.wait_for_text("penguins · no rows")

    # the info view of birds: the histogram of mass (not the key), whole-number buckets
    tmux.keys("Escape")
    tmux.wait_for_text("5 tables")
    tmux.keys("Up", "Up", "Up", "Enter")  # from penguins to birds
    tmux.wait_for_text("birds · rows 1")
    tmux.keys("i")
    tmux.wait_for_text("rows: 40")
    texts = ("mass: 40 values in 10 buckets", "2700 \u2013 3051", "5868 \u2013 6210")

    def histogram_shown(screen: str) -> bool:
        """The buckets on screen (End again until then: the histogram is drawn last)."""
        tmux.keys("End")
        return all(text in screen for text in texts)

    screen = tmux.wait_for(histogram_shown, "the histogram of mass")
    assert "." not in "".join(line for line in screen.splitlines() if "\u2013" in line), screen
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
        assert p.admin.get_spec("penguins").primary_key == ("penguin_id",)

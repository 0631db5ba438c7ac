"""Driving the dashboard in tests as a user does (Textual's Pilot: keys and clicks) on a
real provider, and reading back what the user sees (the screen text, the grid's
cells, notifications)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import html
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time
import unicodedata
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from textual import events
from textual.keys import KEY_NAME_REPLACEMENTS
from textual.widgets import DataTable

import spi
from kvctl.tui.app import DashboardApp
from kvctl.tui.history import FilterHistory
from kvctl.tui.session import Session
from spi.testing.fixtures import ALL_TYPES, COUNTERS, ORDERS, all_types_row, order_rows
from spi.testing.requirements import need

REPO = Path(__file__).resolve().parents[1]
T = TypeVar("T")

ORDER_ROWS = 150


def filled(provider: Any) -> Any:
    """``provider`` with the orders (150 rows), counters (empty) and alltypes (5 rows) tables."""
    provider.admin.create(ORDERS)
    provider.admin.create(COUNTERS)
    provider.admin.create(ALL_TYPES)
    provider.table("orders").load(order_rows(ORDER_ROWS))
    provider.table("alltypes").load([all_types_row(i) for i in range(5)])
    return provider


KINDS = ["rocksdb", pytest.param("postgres", marks=pytest.mark.postgres)]
"""The providers the dashboard suites run on: RocksDB (the ordered-store engine the
memory provider shares) and PostgreSQL (on the test server)."""


def open_provider(kind: str, tmp_path: Path, request: Any = None) -> Any:
    """A filled memory, RocksDB or PostgreSQL provider (PostgreSQL: a fresh schema
    from the ``pg_factory`` fixture, through ``request``)."""
    if kind == "postgres":
        return filled(request.getfixturevalue("pg_factory")())
    url = "memory://" if kind == "memory" else f"rocksdb://{tmp_path}/db"
    return filled(spi.connect(url))


def run_async(fn: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async scenario as a plain test (no async test plugin needed)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        asyncio.run(fn(*args, **kwargs))

    return wrapper


async def settle(app: DashboardApp, pilot: Any, timeout: float = 10.0) -> None:
    """Wait until every worker has finished and its UI update has run: no worker
    pending or running, and no page on its way, for three looks in a row, so one a key
    press starts a moment later (a busy machine) is waited for too. A worker not yet
    started counts: on a loaded machine it can stay pending for longer than the looks;
    so do the info view's reads of every row while they wait to start. The live
    view's watch runs until stopped: it is not waited for."""
    await pilot.pause()
    quiet = 0
    for _ in range(int(timeout / 0.01)):
        await pilot.pause(0.01)
        busy = any(not w.is_finished and w.group != "live" for w in app.workers)
        busy = busy or bool(getattr(app.screen, "page_pending", False) or getattr(app.screen, "reads_pending", False))
        quiet = 0 if busy else quiet + 1
        if quiet >= 3:
            break
    await pilot.pause()


async def wait_for(pilot: Any, what: str, condition: Callable[[], object], timeout: float = 10.0) -> None:
    """Pause until ``condition()`` holds (a worker's result on screen), failing after
    ``timeout`` seconds: no fixed sleep that is too short on a busy machine and too
    long on a quiet one."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await pilot.pause(0.02)


@contextlib.contextmanager
def store_held(provider: Any) -> Iterator[None]:
    """A memory store kept busy for the block: a transaction held open in a thread (the
    memory store serves one transaction at a time), so every read waits until the block
    ends: a slow read, with no timing to guess."""
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with provider.transaction():
            holding.set()
            release.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert holding.wait(5), "the store was not held"
        yield
    finally:
        release.set()
        thread.join()


def screen_text(app: DashboardApp) -> str:
    """The text on the terminal, line by line (from a screenshot: what the user sees).
    Each piece of text is placed at its column (a screenshot leaves out the blanks
    between styled pieces: a dim ``null`` and the next cell would seem to touch)."""
    svg = app.export_screenshot()
    char = re.search(r'<text [^>]*\bx="([\d.]+)"[^>]*\btextLength="([\d.]+)"[^>]*>([^<]+)</text>', svg)
    width = float(char.group(2)) / len(html.unescape(char.group(3))) if char else 12.2
    lines: dict[float, str] = {}
    pattern = r'<text [^>]*\bx="([\d.]+)"[^>]*\by="([\d.]+)"[^>]*>(.*?)</text>'
    for x, y, text in re.findall(pattern, svg):
        piece = html.unescape(text).replace("\xa0", " ")
        line = lines.get(float(y), "")
        column = max(round(float(x) / width), len(line))  # wide characters: never overlap
        lines[float(y)] = line.ljust(column) + piece
    return "\n".join(line.rstrip() for _, line in sorted(lines.items()))


def status_line(app: DashboardApp) -> str:
    """The status line (above the footer)."""
    return str(app.screen.query_one("#status").render())


def footer_line(app: DashboardApp) -> str:
    """The footer, as displayed."""
    return screen_text(app).splitlines()[-1]


class RecordingApp(DashboardApp):
    """The dashboard, keeping the text of every notification it shows."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.notes: list[str] = []

    def notify(self, message: Any, *args: Any, **kwargs: Any) -> None:
        self.notes.append(str(message))
        super().notify(message, *args, **kwargs)


def notifications(app: DashboardApp) -> list[str]:
    """The texts of the notifications shown so far."""
    assert isinstance(app, RecordingApp)
    return app.notes


def rows_shown(app: DashboardApp) -> list[list[str]]:
    """The cells of every row of the grid on the current screen, as displayed."""
    table = app.screen.query_one("#rows", DataTable)
    return [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]


def cursor_cells(app: DashboardApp) -> list[str]:
    """The cells of the row under the cursor."""
    table = app.screen.query_one("#rows", DataTable)
    return [str(cell) for cell in table.get_row_at(table.cursor_row)]


def cells(row: dict[str, Any], columns: tuple[str, ...] = ORDERS.columns) -> list[str]:
    """How a row of the orders fixture reads in the grid."""
    return ["null" if row[c] is None else str(row[c]) for c in columns]


def in_key_order(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Orders rows sorted by their key."""
    return sorted(rows, key=lambda r: (r["region"], r["id"]))


def key_event(character: str) -> events.Key:
    """The key event a terminal sends for a typed printable ``character`` (named as
    Textual names keys: ``a``, ``space``, ``colon``, ``slash``...)."""
    if character.isalnum():
        return events.Key(character, character)
    name = unicodedata.name(character).lower().replace("-", "_").replace(" ", "_")
    return events.Key(KEY_NAME_REPLACEMENTS.get(name, name), character)


async def type_text(pilot: Any, text: str) -> None:
    """Type ``text`` as a quick typist (or a terminal's paste without bracketed paste
    mode) does: every key event at once, in order, each handled as a key press; then
    wait until the app is idle. (``pilot.press`` waits for idle after every key, about
    75 ms a key: typed paths and forms made the dashboard tests minutes long.)"""
    for character in text:
        pilot.app.post_message(key_event(character))
    await pilot.pause()


async def focus(pilot: Any, selector: str) -> None:
    """Move the focus to a widget of the current screen (scrolled into view), as tab would."""
    pilot.app.screen.query_one(selector).focus()
    await pilot.pause()


async def fill(pilot: Any, selector: str, text: str) -> None:
    """Focus an input of the current screen, clear it and type ``text``."""
    await focus(pilot, selector)
    await pilot.press("end", "ctrl+u")
    await type_text(pilot, text)


async def open_table(app: DashboardApp, pilot: Any, name: str) -> None:
    """Pick ``name`` on the table list with the cursor keys and Enter; wait for its rows."""
    grid = app.screen.query_one("#tables", DataTable)
    names = [str(grid.get_row_at(i)[0]) for i in range(grid.row_count)]
    grid.move_cursor(row=0)
    await pilot.press(*["down"] * names.index(name), "enter")
    await settle(app, pilot)
    assert status_line(app).startswith(name), status_line(app)


async def filter_rows(app: DashboardApp, pilot: Any, where: str) -> None:
    """Press ``/``, type a where-clause and Enter."""
    await pilot.press("slash", "end", "ctrl+u")
    await type_text(pilot, where)
    await pilot.press("enter")
    await settle(app, pilot)


class Spy:
    """A real table handle that records the calls made through it: their names in
    ``calls`` (to check that paging never counts), with their keyword arguments in
    ``detail``."""

    def __init__(self, table: Any, calls: list[str], detail: list[tuple[str, dict[str, Any]]]) -> None:
        self._table, self._calls, self._detail = table, calls, detail

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._table, name)
        if not callable(attr):
            return attr
        self._calls.append(name)

        def call(*args: Any, **kwargs: Any) -> Any:
            self._detail.append((name, kwargs))
            return attr(*args, **kwargs)

        return call


class SpyProvider:
    """A real provider whose table handles are :class:`Spy`."""

    def __init__(self, provider: Any) -> None:
        self._provider = provider
        self.calls: list[str] = []
        self.detail: list[tuple[str, dict[str, Any]]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._provider, name)

    def table(self, name: str) -> Any:
        return Spy(self._provider.table(name), self.calls, self.detail)


def make_app(provider: Any, *, table: str | None = None, history: Path | None = None, **session: Any) -> DashboardApp:
    """A dashboard on ``provider`` (optionally straight on ``table``)."""
    return RecordingApp(
        Session(provider.url, provider=provider, **session), table=table, history=FilterHistory(history)
    )


@contextlib.asynccontextmanager
async def dashboard(
    provider: Any, table: str | None = "orders", size: tuple[int, int] = (140, 40), **options: Any
) -> AsyncIterator[tuple[DashboardApp, Any]]:
    """The dashboard running on ``provider``, ``table`` opened from the table list."""
    app = make_app(provider, **options)
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot)
        if table is not None:
            await open_table(app, pilot, table)
        yield app, pilot


class Tmux:
    """One tmux server on a private socket running one command in the session ``dash``:
    the dashboard as a real program in a real terminal, read back as its screen text."""

    def __init__(self, socket: str) -> None:
        self.socket = socket

    def run(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=True)
        return done.stdout

    def start(self, command: str, size: tuple[int, int] = (140, 45)) -> None:
        """Run the shell ``command`` in a new ``dash`` session of ``size`` (columns, lines)."""
        self.run("new-session", "-d", "-s", "dash", "-x", str(size[0]), "-y", str(size[1]), "sh", "-c", command)

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "dash")

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", "dash", *keys)

    def type(self, text: str) -> None:
        self.run("send-keys", "-t", "dash", "-l", text)

    def cursor(self) -> tuple[int, int]:
        """The terminal's cursor, (column, line): where the focused input's cursor is."""
        column, line = self.run("display-message", "-p", "-t", "dash", "#{cursor_x} #{cursor_y}").split()
        return int(column), int(line)

    def wait_for(self, check: Callable[[str], bool], what: str, timeout: float = 30) -> str:
        return self._until(self.screen, check, what, timeout)

    def wait_for_cursor(self, check: Callable[[tuple[int, int]], bool], what: str) -> tuple[int, int]:
        """Wait until ``check(cursor)`` holds: the effect of a key that moves the cursor
        or the focus. A key bound to an action (ctrl+a, tab) is handled once it has
        passed up from the focused widget, so keys typed right after it may be handled
        first: wait for its effect before typing on."""
        return self._until(self.cursor, check, what, 30)

    def _until(self, read: Callable[[], T], check: Callable[[T], bool], what: str, timeout: float) -> T:
        deadline = time.monotonic() + timeout
        while True:
            seen = read()
            if check(seen):
                return seen
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out waiting for {what}; the cursor {self.cursor()}, the screen:\n{self.screen()}"
                )
            time.sleep(0.1)

    def wait_for_text(self, *texts: str, timeout: float = 30) -> str:
        """Wait until every one of ``texts`` is on the screen; return the screen."""
        return self.wait_for(lambda s: all(t in s for t in texts), " and ".join(map(repr, texts)), timeout)


def terminal() -> Iterator[Tmux]:
    """A private tmux server, killed at the end of the test (a test module makes it a
    fixture: ``tmux = pytest.fixture(terminal)``)."""
    need("tmux", shutil.which("tmux") is not None, "install tmux")
    term = Tmux(f"kvctl-test-{uuid.uuid4().hex[:12]}")
    yield term
    subprocess.run(["tmux", "-L", term.socket, "kill-server"], capture_output=True)


def dashboard_command(url: str, state: Path, *args: str, status: Path | None = None) -> str:
    """The shell command running ``kvctl --url URL dashboard ARGS`` from this checkout
    (its filter history under ``state``), writing its exit status to ``status``."""
    env = {"PYTHONPATH": str(REPO), "XDG_STATE_HOME": str(state), "TERM": "xterm-256color"}
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    kvctl = shlex.join([sys.executable, "-m", "kvctl", "--url", url, "dashboard", *args])
    # COLUMNS/LINES may reach the pane from tmux and would override the terminal's real size
    command = f"unset COLUMNS LINES; {exports} {kvctl}"
    return command if status is None else f"{command}; echo $? > {shlex.quote(str(status))}"


def wait_for_file(path: Path, timeout: float = 20) -> str:
    """The text of ``path`` once it has some (a process writes it on its way out)."""
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.read_text()):
        assert time.monotonic() < deadline, f"timed out waiting for {path}"
        time.sleep(0.1)
    return path.read_text()


def toast_text(screen: str) -> str:
    """The text of the notifications on a tmux screen, as one line: a toast's lines start
    after its ``▌`` border, wrap, and end at a run of blanks (what shows beside it is
    the screen under it)."""
    parts = (line.rsplit("\u258c ", 1)[1].strip() for line in screen.splitlines() if "\u258c " in line)
    return " ".join(re.split(r"\s{2,}", part)[0] for part in parts if part)

"""The dashboard's command palette (actions, tables, profiles), table management, and
PostgreSQL: a smoke run, and a server that is down and comes back."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from dashboard_support import (
    KINDS,
    cells,
    dashboard,
    fill,
    filled,
    filter_rows,
    in_key_order,
    make_app,
    notifications,
    open_provider,
    open_table,
    rows_shown,
    run_async,
    screen_text,
    settle,
    status_line,
    type_text,
    wait_for,
)
from textual.command import CommandList, CommandPalette
from textual.widgets import Button, Checkbox, DataTable, Input

import spi
from kvctl.tui.screens.rows import RowsScreen
from kvctl.tui.screens.tables import TablesScreen
from spi.testing.fixtures import order_rows


def listed(app: Any) -> list[str]:
    grid = app.screen.query_one("#tables", DataTable)
    return [str(grid.get_row_at(i)[0]) for i in range(grid.row_count)]


async def palette(app: Any, pilot: Any, command: str) -> None:
    """Run ``command`` from the command palette (ctrl+p, type, Enter)."""
    await pilot.press("ctrl+p")
    await wait_for(pilot, "the palette", lambda: isinstance(app.screen, CommandPalette))
    await type_text(pilot, command)
    await wait_for(pilot, f"{command!r} first in the palette", lambda: command in next(iter(palette_hits(app)), ""))
    await pilot.press("enter")
    await settle(app, pilot)


def palette_hits(app: Any) -> list[str]:
    """The commands the open palette lists, as text."""
    hits = app.screen.query_one(CommandList)
    return [str(hits.get_option_at_index(i).prompt) for i in range(hits.option_count)]


async def close_palette(app: Any, pilot: Any) -> None:
    """Escape until the palette is gone (the first escape may only close its list)."""
    while isinstance(app.screen, CommandPalette):
        await pilot.press("escape")
        await pilot.pause(0.05)


@pytest.fixture(params=KINDS)
def provider(request: Any, tmp_path: Path) -> Any:
    p = open_provider(request.param, tmp_path, request)
    yield p
    p.close()


@run_async
async def test_palette_lists_actions_tables_and_runs_them(provider: Any) -> None:
    p = provider
    async with dashboard(p) as (app, pilot):
        for search, entry in [
            ("filter", "Filter the rows"),
            ("go to", "Go to a key"),
            ("export", "Export the current view"),
            ("counters", "Open table counters"),
            ("quit", "Quit the dashboard"),
            ("spec", "Show the table's spec"),
        ]:
            await pilot.press("ctrl+p")
            await type_text(pilot, search)
            await wait_for(pilot, f"{entry!r} listed", lambda e=entry: any(e in hit for hit in palette_hits(app)))
            await close_palette(app, pilot)
        await palette(app, pilot, "Filter the rows")
        assert isinstance(app.focused, Input) and app.focused.id == "where"
        await pilot.press("escape")
        await palette(app, pilot, "Open table counters")
        assert isinstance(app.screen, RowsScreen) and app.screen.table_name == "counters"
        assert status_line(app) == "counters · no rows"
        await pilot.press("escape")
        assert isinstance(app.screen, TablesScreen)


@run_async
async def test_create_alter_and_drop_a_table_from_the_palette(provider: Any) -> None:
    p = provider
    async with dashboard(p, table=None, size=(140, 45)) as (app, pilot):
        await palette(app, pilot, "Create a table")
        await fill(pilot, "#create-name", "events")
        await fill(pilot, "#create-fields", "id:long kind:sting")
        await fill(pilot, "#create-pk", "id")
        await pilot.press("enter")  # not the last field: on to the next one
        assert app.screen.query_one("#create-indexes", Input).has_focus and not p.admin.exists("events")
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        assert "unknown type" in screen_text(app) or "sting" in screen_text(app)  # the dialog stays
        await fill(pilot, "#create-fields", "id:long kind:string at:timestamp")
        await fill(pilot, "#create-indexes", "kind")
        await fill(pilot, "#create-ttl", "0s")
        await pilot.press("enter")
        await settle(app, pilot)
        assert not p.admin.exists("events") and "positive duration" in screen_text(app)  # the dialog stays
        await fill(pilot, "#create-ttl", "2h")
        app.screen.query_one("#create-changes", Checkbox).value = True
        await pilot.press("enter")
        await settle(app, pilot)
        spec = p.admin.get_spec("events")
        assert spec.columns == ("id", "kind", "at") and spec.primary_key == ("id",) and spec.indexes == ("kind",)
        assert spec.ttl == 7200 and spec.changes
        assert isinstance(app.screen, TablesScreen) and "events" in listed(app)
        assert "created table events" in notifications(app)

        await palette(app, pilot, "Alter table events")
        await fill(pilot, "#alter-fields", "note:string")
        await fill(pilot, "#alter-add-indexes", "at")
        await fill(pilot, "#alter-drop-indexes", "kind")
        assert app.screen.query_one("#alter-ttl", Input).value == "2h"
        await fill(pilot, "#alter-ttl", "")
        await pilot.press("enter")
        await settle(app, pilot)
        spec = p.admin.get_spec("events")
        assert spec.columns == ("id", "kind", "at", "note") and spec.indexes == ("at",)
        assert spec.ttl is None and spec.changes
        assert "altered table events" in notifications(app)

        await palette(app, pilot, "Drop table events")
        assert app.screen.query_one("#run", Button).disabled
        await type_text(pilot, "event")
        await pilot.press("enter")
        await settle(app, pilot)
        assert p.admin.exists("events") and "type events to drop it" in screen_text(app)
        await type_text(pilot, "s")
        assert not app.screen.query_one("#run", Button).disabled
        await pilot.press("enter")
        await settle(app, pilot)
        assert not p.admin.exists("events") and "events" not in listed(app)
        assert "dropped table events" in notifications(app)


@run_async
async def test_switch_profile_from_the_palette(tmp_path: Path) -> None:
    config = tmp_path / "kvctl.toml"
    config.write_text(
        'default_profile = "one"\n[profiles.one]\nurl = "rocksdb:one"\n[profiles.two]\nurl = "rocksdb:two"\n'
    )
    with spi.connect(f"rocksdb://{tmp_path}/two") as two:
        filled(two)
    one = spi.connect(f"rocksdb://{tmp_path}/one")
    app = make_app(one, profile="one", config_file=config)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app, pilot)
        assert listed(app) == [] and "profile one" in app.sub_title
        await pilot.press("ctrl+p")
        await wait_for(
            pilot, "the profile listed", lambda: any("Switch to profile two" in h for h in palette_hits(app))
        )
        await close_palette(app, pilot)
        await palette(app, pilot, "Switch to profile two")
        assert listed(app) == ["alltypes", "counters", "orders"]
        assert app.sub_title == f"profile two · rocksdb://{tmp_path}/two"
        await open_table(app, pilot, "orders")
        assert rows_shown(app)[0] == cells(in_key_order(order_rows(150))[0])


@pytest.mark.postgres
@run_async
async def test_postgres_smoke(pg_factory: Callable[..., Any]) -> None:
    p = filled(pg_factory())
    t = p.table("orders")
    async with dashboard(p) as (app, pilot):
        rows = in_key_order(order_rows(150))
        size = len(rows_shown(app))
        assert rows_shown(app) == [cells(r) for r in rows[:size]] and status_line(app).endswith("of 150")
        await pilot.press("pagedown")
        await settle(app, pilot)
        assert rows_shown(app) == [cells(r) for r in rows[size : 2 * size]]
        await filter_rows(app, pilot, "status = 'open'")
        expected = [r for r in rows if r["status"] == "open"]
        assert rows_shown(app) == [cells(r) for r in expected[:size]]
        key = (expected[0]["region"], expected[0]["id"])
        await pilot.press("e")
        await settle(app, pilot)
        await fill(pilot, "#field-note", "from pg")
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        assert t.read(key)["note"] == "from pg"
        await pilot.press("d", "y")
        await settle(app, pilot)
        assert t.read(key) is None and status_line(app).endswith(f"of {len(expected) - 1} · where status = 'open'")


class Forwarder:
    """A TCP port that forwards to another, which can be switched on and off: a
    PostgreSQL server that goes away and comes back."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self._listener: socket.socket | None = None
        self._open: list[socket.socket] = []

    def start(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen()
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def stop(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        for conn in self._open:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()
        self._open.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            self._open += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := a.recv(65536):
                b.sendall(data)
        with contextlib.suppress(OSError):
            b.shutdown(socket.SHUT_WR)


@contextlib.contextmanager
def forwarder(url: str) -> Iterator[tuple[Forwarder, str]]:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    assert parts.hostname and parts.port
    fwd = Forwarder((parts.hostname, parts.port))
    try:
        yield fwd, url.replace(f":{parts.port}/", f":{fwd.port}/", 1)
    finally:
        fwd.stop()


@pytest.mark.postgres
@run_async
async def test_postgres_down_is_a_notification_and_retry_works_once_it_is_back(pg_server: Any) -> None:
    schema = "dash_down"
    sep = "&" if "?" in pg_server.url else "?"
    with spi.connect(f"{pg_server.url}{sep}schema={schema}") as direct:
        filled(direct)
    try:
        with forwarder(f"{pg_server.url}{sep}schema={schema}") as (fwd, url):
            p = spi.connect(url)
            async with dashboard(p, table=None) as (app, pilot):
                assert listed(app) == []
                assert any(n.startswith("store unavailable:") and "press r to retry" in n for n in notifications(app))
                assert status_line(app).startswith("error: store unavailable")
                await pilot.press("slash")  # the screen answers
                fwd.start()
                await pilot.press("r")
                await settle(app, pilot)
                assert listed(app) == ["alltypes", "counters", "orders"]
                await open_table(app, pilot, "orders")
                fwd.stop()
                await pilot.press("pagedown")
                await settle(app, pilot)
                assert any("store unavailable" in n for n in notifications(app)[-2:])
                fwd.start()
                await pilot.press("pagedown")
                await settle(app, pilot)
                assert status_line(app).startswith("orders · rows ")
            p.close()
    finally:
        from pg_server import drop_schemas

        drop_schemas(pg_server.dsn, [schema])

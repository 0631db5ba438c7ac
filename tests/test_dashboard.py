"""The Textual dashboard, driven through Textual's Pilot on a real provider."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import pytest
from textual.widgets import DataTable, Input, OptionList, Static

import spi
from kvctl.tui.app import DashboardApp
from spi.testing.fixtures import COUNTERS, ORDERS, order_rows


@pytest.fixture
def provider() -> Any:
    p = spi.connect("memory://")
    p.admin.create(ORDERS)
    p.admin.create(COUNTERS)
    p.table("orders").load(order_rows(150))
    return p


def run_async(fn: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async scenario as a plain test (no async test plugin needed)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        asyncio.run(fn(*args, **kwargs))

    return wrapper


async def settle(app: DashboardApp, pilot: Any) -> None:
    """Wait until every I/O worker has finished and its UI update has run."""
    for _ in range(500):
        await pilot.pause(0.01)
        if not any(w.is_running for w in app.workers):
            break
    await pilot.pause()


@contextlib.asynccontextmanager
async def on_orders(provider: Any, height: int = 40) -> AsyncIterator[tuple[DashboardApp, Any]]:
    """The dashboard running on ``provider`` with the orders table open and loaded."""
    app = DashboardApp("memory://", provider=provider)
    async with app.run_test(size=(140, height)) as pilot:
        await settle(app, pilot)
        app._open("orders")
        await settle(app, pilot)
        yield app, pilot


def status(app: DashboardApp) -> str:
    return str(app.query_one("#status", Static).render())


@run_async
async def test_browse_pages_and_filter(provider: Any) -> None:
    app = DashboardApp("memory://", provider=provider)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app, pilot)
        assert app.query_one("#tables", OptionList).option_count == 2
        app.query_one("#tables", OptionList).action_first()
        app._open("orders")
        await settle(app, pilot)
        table = app.query_one("#rows", DataTable)
        assert table.row_count == 100 and "150 row(s), page 1" in status(app)
        await pilot.press("n")
        await settle(app, pilot)
        assert table.row_count == 50 and "page 2" in status(app) and "last page" in status(app)
        await pilot.press("p")
        await settle(app, pilot)
        assert table.row_count == 100
        app.query_one("#where", Input).value = "status = 'open' and region = 'eu'"
        await pilot.press("slash", "enter")
        await settle(app, pilot)
        expected = sum(1 for r in order_rows(150) if r["status"] == "open" and r["region"] == "eu")
        assert table.row_count == expected and f"{expected} row(s)" in status(app)


@run_async
async def test_bad_filter_shows_one_line_error(provider: Any) -> None:
    async with on_orders(provider) as (app, pilot):
        app.query_one("#where", Input).value = "status = "
        await pilot.press("slash", "enter")
        await settle(app, pilot)
        assert status(app).startswith("error: where: unexpected end") and "\n" not in status(app)
        assert app.query_one("#rows", DataTable).row_count == 100


@run_async
async def test_edit_add_and_delete(provider: Any) -> None:
    t = provider.table("orders")
    async with on_orders(provider, 50) as (app, pilot):
        first = app.selected_row()
        assert first is not None
        key = (first["region"], first["id"])
        await pilot.press("e")
        await pilot.pause()
        app.screen.query_one("#field-note", Input).value = "edited in tui"
        await pilot.click("#save")
        await settle(app, pilot)
        assert t.read(key)["note"] == "edited in tui" and t.read(key).version == first.version + 1

        await pilot.press("a")
        await pilot.pause()
        app.screen.query_one("#field-region", Input).value = "zz"
        app.screen.query_one("#field-id", Input).value = "7"
        app.screen.query_one("#field-total", Input).value = "not a number"
        await pilot.click("#save")
        await settle(app, pilot)
        assert status(app).startswith("error:") and t.read(("zz", 7)) is None

        await pilot.press("a")
        await pilot.pause()
        app.screen.query_one("#field-region", Input).value = "zz"
        app.screen.query_one("#field-id", Input).value = "7"
        app.screen.query_one("#field-total", Input).value = "2.5"
        await pilot.click("#save")
        await settle(app, pilot)
        assert dict(t.read(("zz", 7))) == {"region": "zz", "id": 7, "status": None, "total": 2.5, "note": None}

        before = t.count()
        first = app.selected_row()
        assert first is not None
        await pilot.press("d")
        await pilot.pause()
        await pilot.press("y")
        await settle(app, pilot)
        assert t.count() == before - 1 and t.read((first["region"], first["id"])) is None


@run_async
async def test_stale_edit_is_refused(provider: Any) -> None:
    t = provider.table("orders")
    async with on_orders(provider, 50) as (app, pilot):
        row = app.selected_row()
        assert row is not None
        t.update((row["region"], row["id"]), {"note": "changed elsewhere"})
        await pilot.press("e")
        await pilot.pause()
        app.screen.query_one("#field-note", Input).value = "mine"
        await pilot.click("#save")
        await settle(app, pilot)
        assert "version" in status(app) and t.read((row["region"], row["id"]))["note"] == "changed elsewhere"

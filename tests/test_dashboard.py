"""The Textual dashboard, driven as a user drives it (keys and clicks through Textual's
Pilot) on a real provider; the tests check what the user sees: the table list, the
cells, the status line and the footer."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import html
import re
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import pytest
from textual.widgets import DataTable, Input, OptionList

import spi
from kvctl.tui.app import DashboardApp
from spi.testing.fixtures import ALL_TYPES, COUNTERS, ORDERS, all_types_row, order_rows


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


def screen_text(app: DashboardApp) -> str:
    """The text on the terminal, line by line (from a screenshot: what the user sees)."""
    lines: dict[float, list[str]] = {}
    for y, text in re.findall(r'<text [^>]*\by="([\d.]+)"[^>]*>(.*?)</text>', app.export_screenshot()):
        lines.setdefault(float(y), []).append(html.unescape(text).replace("\xa0", " "))
    return "\n".join("".join(parts) for _, parts in sorted(lines.items()))


def status_line(app: DashboardApp) -> str:
    """The screen line holding the status (under the rows, above the footer)."""
    return screen_text(app).splitlines()[-2]


def rows_shown(app: DashboardApp) -> list[list[str]]:
    """The cells of every row of the current page, as displayed."""
    table = app.query_one("#rows", DataTable)
    return [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]


def table_names(app: DashboardApp) -> list[str]:
    """The entries of the table list."""
    tables = app.query_one("#tables", OptionList)
    return [str(tables.get_option_at_index(i).prompt) for i in range(tables.option_count)]


async def open_table(app: DashboardApp, pilot: Any, name: str) -> None:
    """Click ``name`` in the table list and wait for its first page."""
    await pilot.click("#tables", offset=(2, 1 + table_names(app).index(name)))
    await settle(app, pilot)
    assert f"{name}: " in status_line(app), status_line(app)


async def type_text(pilot: Any, text: str) -> None:
    """Type ``text`` key by key."""
    await pilot.press(*text)


async def fill(pilot: Any, field: str, text: str) -> None:
    """Click an input of the current screen, clear it and type ``text``."""
    await pilot.click(field)
    await pilot.press("end", "ctrl+u")
    await type_text(pilot, text)


async def filter_rows(app: DashboardApp, pilot: Any, where: str) -> None:
    """Press ``/``, type a where-clause and Enter."""
    await pilot.press("slash")
    await pilot.press("end", "ctrl+u")
    await type_text(pilot, where)
    await pilot.press("enter")
    await settle(app, pilot)


@contextlib.asynccontextmanager
async def dashboard(provider: Any, table: str = "orders", height: int = 40) -> AsyncIterator[tuple[DashboardApp, Any]]:
    """The dashboard running on ``provider`` with ``table`` picked in the table list."""
    app = DashboardApp("memory://", provider=provider)
    async with app.run_test(size=(140, height)) as pilot:
        await settle(app, pilot)
        await open_table(app, pilot, table)
        yield app, pilot


def expected_cells(row: dict[str, Any]) -> list[str]:
    """How the orders fixture's values read (strings, numbers, null)."""
    return ["null" if row[c] is None else str(row[c]) for c in ORDERS.columns]


def in_key_order(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: (r["region"], r["id"]))


@run_async
async def test_lists_tables_and_pages_through_rows(provider: Any) -> None:
    app = DashboardApp("memory://", provider=provider)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app, pilot)
        assert table_names(app) == ["counters", "orders"]
        footer = screen_text(app).splitlines()[-1]
        for key in ("q Quit", "n Next page", "p Prev page", "/ Filter", "a Add", "e Edit", "d Delete"):
            assert key in footer, footer
        await open_table(app, pilot, "orders")
        everything = in_key_order(order_rows(150))
        assert rows_shown(app) == [expected_cells(r) for r in everything[:100]]
        assert "orders: 150 row(s), page 1 (more: n)" in status_line(app)
        await pilot.press("n")
        await settle(app, pilot)
        assert rows_shown(app) == [expected_cells(r) for r in everything[100:]]
        assert "page 2 (last page)" in status_line(app)
        await pilot.press("p")
        await settle(app, pilot)
        assert len(rows_shown(app)) == 100 and "page 1" in status_line(app)


@run_async
async def test_filter_shows_only_matching_rows(provider: Any) -> None:
    async with dashboard(provider) as (app, pilot):
        await filter_rows(app, pilot, "status = 'open' and region = 'eu'")
        expected = [r for r in in_key_order(order_rows(150)) if r["status"] == "open" and r["region"] == "eu"]
        assert expected and rows_shown(app) == [expected_cells(r) for r in expected]
        assert f"{len(expected)} row(s)" in status_line(app) and "where status = 'open'" in status_line(app)


@run_async
async def test_bad_filter_shows_one_line_error_and_keeps_the_text(provider: Any) -> None:
    async with dashboard(provider) as (app, pilot):
        await filter_rows(app, pilot, "status = ")
        lines = screen_text(app).splitlines()
        assert "error: where: unexpected end" in lines[-2]  # the status line
        assert "error" not in lines[-3]  # the message is one line, not wrapped onto the rows
        assert len(rows_shown(app)) == 100  # the page shown before stays
        assert app.query_one("#where", Input).value == "status = "


@run_async
async def test_values_read_as_on_the_command_line() -> None:
    provider = spi.connect("memory://")
    provider.admin.create(ALL_TYPES)
    provider.table("alltypes").load([all_types_row(i) for i in range(5)])
    async with dashboard(provider, "alltypes") as (app, pilot):
        shown = [dict(zip(ALL_TYPES.columns, r)) for r in rows_shown(app)]
        first, second = shown[0], shown[1]
        assert first["b"] == "b64:AP8=" and first["flag"] == "true" and first["s"] == "plain"
        assert first["ts"] == "2024-02-29T12:00:00.123456+00:00" and first["d"] == "1.5"
        assert second["b"] == "b64:YmE=" and second["flag"] == "false" and second["ts"] == "null"
        assert second["d"] == "null" and second["s"] == "żółw 🐢"
        assert shown[4]["f"] == "NaN"
        # the row editor shows the same words
        await pilot.press("e")
        await pilot.pause()
        assert app.screen.query_one("#field-b", Input).value == "b64:AP8="
        assert app.screen.query_one("#field-ts", Input).value == "2024-02-29T12:00:00.123456+00:00"


@run_async
async def test_edit_add_and_delete(provider: Any) -> None:
    t = provider.table("orders")
    async with dashboard(provider, height=50) as (app, pilot):
        region, id_ = rows_shown(app)[0][:2]
        key = (region, int(id_))
        version = t.read(key).version
        await pilot.press("e")
        await pilot.pause()
        await fill(pilot, "#field-note", "edited in tui")
        await pilot.click("#save")
        await settle(app, pilot)
        assert rows_shown(app)[0][:2] == [region, id_] and rows_shown(app)[0][4] == "edited in tui"
        assert t.read(key)["note"] == "edited in tui" and t.read(key).version == version + 1

        await pilot.press("a")
        await pilot.pause()
        await fill(pilot, "#field-region", "zz")
        await fill(pilot, "#field-id", "7")
        await fill(pilot, "#field-total", "not a number")
        await pilot.click("#save")
        await settle(app, pilot)
        assert "error: " in status_line(app) and t.read(("zz", 7)) is None

        await pilot.press("a")
        await pilot.pause()
        await fill(pilot, "#field-region", "zz")
        await fill(pilot, "#field-id", "7")
        await fill(pilot, "#field-total", "2.5")
        await pilot.click("#save")
        await settle(app, pilot)
        assert "151 row(s)" in status_line(app)
        assert dict(t.read(("zz", 7))) == {"region": "zz", "id": 7, "status": None, "total": 2.5, "note": None}

        region, id_ = rows_shown(app)[0][:2]
        await pilot.press("d")
        await pilot.pause()
        assert f"Delete row region={region}, id={id_}?" in screen_text(app)
        await pilot.press("y")
        await settle(app, pilot)
        assert "150 row(s)" in status_line(app) and rows_shown(app)[0][:2] != [region, id_]
        assert t.read((region, int(id_))) is None


@run_async
async def test_stale_edit_is_refused(provider: Any) -> None:
    t = provider.table("orders")
    async with dashboard(provider, height=50) as (app, pilot):
        region, id_ = rows_shown(app)[0][:2]
        t.update((region, int(id_)), {"note": "changed elsewhere"})
        await pilot.press("e")
        await pilot.pause()
        await fill(pilot, "#field-note", "mine")
        await pilot.click("#save")
        await settle(app, pilot)
        assert "error: " in status_line(app) and "version" in status_line(app)
        assert t.read((region, int(id_)))["note"] == "changed elsewhere"


@run_async
async def test_an_empty_key_field_is_refused(provider: Any) -> None:
    t = provider.table("orders")
    async with dashboard(provider, height=50) as (app, pilot):
        await pilot.press("a")
        await pilot.pause()
        await fill(pilot, "#field-id", "7")
        await fill(pilot, "#field-total", "2.5")
        await pilot.click("#save")
        await settle(app, pilot)
        assert "error: key column 'region' is empty" in status_line(app)
        assert t.read(("", 7)) is None and t.count() == 150

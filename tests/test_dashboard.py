"""The dashboard's table list and rows view, driven by keys through Textual's Pilot on
real memory and RocksDB providers: paging, the total, filter (history, errors at
their position), order, go to key, refresh, help and the footer."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from dashboard_support import (
    KINDS,
    ORDER_ROWS,
    SpyProvider,
    cells,
    cursor_cells,
    dashboard,
    filter_rows,
    footer_line,
    in_key_order,
    make_app,
    notifications,
    open_provider,
    rows_shown,
    run_async,
    screen_text,
    settle,
    status_line,
    store_held,
    type_text,
)
from textual.widgets import DataTable, Input

import spi
from kvctl.tui.browser import (
    LAST_PAGE,
    Order,
    Position,
    Query,
    count_change,
    earlier_position,
    next_position,
    read_page,
)
from kvctl.tui.counter import count_rows
from kvctl.tui.history import FilterHistory
from kvctl.tui.screens.rows import RowsScreen
from kvctl.tui.screens.tables import TablesScreen
from spi.testing.fixtures import ORDERS, order_rows

DASH = "\u2013"  # an en dash, as in "rows 1\u201331"
CONTRACT_KEYS = ["?", "/", "⏎", "a", "e", "d", "s", "g", "o", "r", "w", "x", "c", "^p", "esc", "q"]
FOOTER_LABELS = ["Help", "Filter", "Open", "Add", "Edit", "Delete", "Spec", "Go to", "Order", "Refresh", "Watch"]
FOOTER_LABELS += ["Export", "Copy", "Palette", "Back", "Quit"]


@pytest.fixture(params=KINDS)
def provider(request: Any, tmp_path: Path) -> Any:
    p = open_provider(request.param, tmp_path, request)
    yield p
    p.close()


def everything() -> list[dict[str, Any]]:
    return in_key_order(order_rows(ORDER_ROWS))


@run_async
async def test_table_list_shows_rows_feed_and_ttl_and_enter_opens(provider: Any) -> None:
    async with dashboard(provider, table=None) as (app, pilot):
        grid = app.screen.query_one("#tables", DataTable)
        listed = [[str(c) for c in grid.get_row_at(i)] for i in range(grid.row_count)]
        assert listed == [["alltypes", "5", "off", "-"], ["counters", "0", "off", "-"], ["orders", "150", "off", "-"]]
        assert "name" in screen_text(app) and "change feed" in screen_text(app)
        assert "3 tables" in status_line(app)
        for key in ("⏎ Open", "s Spec", "r Refresh", "? Help", "q Quit", "^p Palette"):
            assert key in footer_line(app), footer_line(app)
        await pilot.press("down", "down", "enter")
        await settle(app, pilot)
        assert isinstance(app.screen, RowsScreen) and app.screen.table_name == "orders"
        await pilot.press("escape")
        await settle(app, pilot)
        assert isinstance(app.screen, TablesScreen)


@run_async
async def test_the_table_list_keys_come_back_after_a_slow_read(tmp_path: Path) -> None:
    """A slow read (a busy store) covers the list with its loading indicator, and
    Textual leaves a loading widget's keys out of the footer; it did not bring them back
    when the list loaded (how the table-list test failed under load: no "⏎ Open" in
    the footer). They come back, on a refresh too, and the list keeps the focus."""
    p = open_provider("memory", tmp_path)
    app = make_app(p)
    with contextlib.ExitStack() as first_read:
        first_read.enter_context(store_held(p))
        async with app.run_test(size=(140, 40)) as pilot:
            grid = app.screen.query_one("#tables", DataTable)
            await pilot.pause(0.3)
            assert grid.loading
            first_read.close()
            await settle(app, pilot)
            assert not grid.loading and app.focused is grid
            assert "⏎ Open" in footer_line(app)
            with store_held(p):
                await pilot.press("r")
                await pilot.pause(0.3)
                assert grid.loading
            await settle(app, pilot)
            assert not grid.loading and app.focused is grid
            assert "⏎ Open" in footer_line(app)
            await pilot.press("down", "down", "enter")
            await settle(app, pilot)
            assert isinstance(app.screen, RowsScreen) and app.screen.table_name == "orders"
    p.close()


@run_async
async def test_opens_on_the_table_given_and_escape_goes_to_the_list(provider: Any) -> None:
    app = make_app(provider, table="orders")
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app, pilot)
        assert isinstance(app.screen, RowsScreen)
        assert rows_shown(app)[0] == cells(everything()[0])
        await pilot.press("escape")
        await settle(app, pilot)
        assert isinstance(app.screen, TablesScreen)


@run_async
async def test_pages_by_key_showing_rows_x_to_y_of_the_total(provider: Any) -> None:
    async with dashboard(provider) as (app, pilot):
        rows = everything()
        size = len(rows_shown(app))
        assert 20 <= size < 40  # a page fills the grid
        assert rows_shown(app) == [cells(r) for r in rows[:size]]
        assert status_line(app) == f"orders · rows 1{DASH}{size} of 150"
        await pilot.press("pagedown")
        await settle(app, pilot)
        assert rows_shown(app) == [cells(r) for r in rows[size : 2 * size]]
        assert status_line(app) == f"orders · rows {size + 1}{DASH}{2 * size} of 150"
        # down on the last row goes on to the next page, up on the first row back
        app.screen.query_one("#rows", DataTable).move_cursor(row=size - 1)
        await pilot.press("down")
        await settle(app, pilot)
        assert cursor_cells(app) == cells(rows[2 * size]) and app.screen.query_one("#rows", DataTable).cursor_row == 0
        await pilot.press("up")
        await settle(app, pilot)
        assert cursor_cells(app) == cells(rows[2 * size - 1])
        await pilot.press("pageup", "pageup")
        await settle(app, pilot)
        assert status_line(app).startswith(f"orders · rows 1{DASH}{size} ")
        await pilot.press("pageup")  # already first: the cursor goes to the top
        await settle(app, pilot)
        assert cursor_cells(app) == cells(rows[0])
        for _ in range(10):
            await pilot.press("pagedown")
            await settle(app, pilot)
        last = rows[(ORDER_ROWS - 1) // size * size :]
        assert rows_shown(app) == [cells(r) for r in last]
        assert status_line(app) == f"orders · rows {ORDER_ROWS - len(last) + 1}{DASH}150 of 150"


@run_async
async def test_paging_reads_one_page_and_never_counts(provider: Any) -> None:
    spy = SpyProvider(provider)
    async with dashboard(spy) as (app, pilot):
        assert "of 150" in status_line(app)
        spy.calls.clear()
        for key in ("pagedown", "pagedown", "pageup"):
            await pilot.press(key)
            await settle(app, pilot)
        assert spy.calls == ["scan_page"] * 3
        assert "of 150" in status_line(app)


@run_async
async def test_end_shows_the_last_page_and_home_the_first(tmp_path: Path) -> None:
    """End reads one page of the reversed scan (nothing counted), PgUp goes on back and
    reaches the first page, PgDn comes back to the last one; Home shows the first page;
    both keep the filter."""
    spy = SpyProvider(open_provider("memory", tmp_path))
    async with dashboard(spy, size=(120, 60)) as (app, pilot):  # pages of 51 rows: 3 pages
        rows = everything()
        size = len(rows_shown(app))

        async def press(key: str) -> None:
            await pilot.press(key)
            await settle(app, pilot)

        spy.calls.clear()
        await press("end")
        assert spy.calls == ["scan_page"]
        assert rows_shown(app) == [cells(r) for r in rows[-size:]] and cursor_cells(app) == cells(rows[-1])
        assert status_line(app) == f"orders · rows {ORDER_ROWS - size + 1}{DASH}{ORDER_ROWS} of {ORDER_ROWS}"
        await press("pageup")
        assert rows_shown(app) == [cells(r) for r in rows[-2 * size : -size]]
        await press("pagedown")
        await press("pagedown")  # the last page stays
        assert rows_shown(app) == [cells(r) for r in rows[-size:]]
        for _ in range(ORDER_ROWS // size):  # back past the first row: the first page
            await press("pageup")
        assert rows_shown(app) == [cells(r) for r in rows[:size]]
        assert status_line(app) == f"orders · rows 1{DASH}{size} of {ORDER_ROWS}"
        await filter_rows(app, pilot, "total > 0")
        matching = list(spy.table("orders").scan(where=spi.parse_where("total > 0", ORDERS)))
        await press("end")
        assert rows_shown(app) == [cells(r) for r in matching[-size:]]
        await press("home")
        assert rows_shown(app) == [cells(r) for r in matching[:size]] and cursor_cells(app) == cells(matching[0])


@run_async
async def test_filter_applies_where_syntax_and_counts_the_matches(provider: Any, tmp_path: Path) -> None:
    history = tmp_path / "history.json"
    async with dashboard(provider, history=history) as (app, pilot):
        await filter_rows(app, pilot, "status = 'open' and region = 'eu'")
        expected = [r for r in everything() if r["status"] == "open" and r["region"] == "eu"]
        assert expected and rows_shown(app) == [cells(r) for r in expected]
        assert status_line(app) == (
            f"orders · rows 1{DASH}{len(expected)} of {len(expected)} · where status = 'open' and region = 'eu'"
        )
        assert app.focused is app.screen.query_one("#rows")
        await filter_rows(app, pilot, "total > 50")
        await filter_rows(app, pilot, "")  # empty: every row again
        assert status_line(app).endswith("of 150")
        # history: up walks back through the filters, newest first; kept in the file
        await pilot.press("slash", "up")
        assert app.screen.query_one("#where", Input).value == "total > 50"
        await pilot.press("up")
        assert app.screen.query_one("#where", Input).value == "status = 'open' and region = 'eu'"
        await pilot.press("down", "down")
        assert app.screen.query_one("#where", Input).value == ""
    assert FilterHistory(history).entries("orders") == ["status = 'open' and region = 'eu'", "total > 50"]


@run_async
async def test_bad_filter_shows_the_error_at_its_position_and_keeps_the_rows(provider: Any) -> None:
    async with dashboard(provider) as (app, pilot):
        before = rows_shown(app)
        await filter_rows(app, pilot, "status = 'open' and total >")
        lines = screen_text(app).splitlines()
        where_line = next(i for i, line in enumerate(lines) if "status = 'open' and total >" in line)
        error = lines[where_line + 2]  # under the input's bottom border
        message = "where: unexpected end of expression at position 28"
        assert message in error, error
        text_start = app.screen.query_one("#where").content_region.x  # where the input's text starts
        assert error.index("^") == text_start + 27  # the caret under position 28
        assert rows_shown(app) == before and status_line(app).endswith("of 150")
        where = app.screen.query_one("#where", Input)
        assert where.value == "status = 'open' and total >" and where.cursor_position == 27
        await filter_rows(app, pilot, "nope = 1")
        assert "'nope'" in screen_text(app) and rows_shown(app) == before
        await filter_rows(app, pilot, "status = 'open'")
        assert "position" not in screen_text(app) and "where status = 'open'" in status_line(app)


@run_async
async def test_escape_in_the_filter_goes_back_to_the_rows(provider: Any) -> None:
    async with dashboard(provider) as (app, pilot):
        await pilot.press("slash")
        assert isinstance(app.focused, Input)
        await type_text(pilot, "q")  # typed, not quit
        await pilot.press("escape")
        assert app.focused is app.screen.query_one("#rows") and isinstance(app.screen, RowsScreen)
        assert app.screen.query_one("#where", Input).value == "q"  # no error: what was typed stays
        await filter_rows(app, pilot, "status = open")  # a bad filter: escape takes it and its error away
        assert "text values are quoted" in screen_text(app)
        await pilot.press("escape")
        assert app.screen.query_one("#where", Input).value == "" and "quoted" not in screen_text(app)
        assert app.focused is app.screen.query_one("#rows") and status_line(app).endswith("of 150")


@run_async
async def test_order_by_an_index_both_ways(provider: Any) -> None:
    async with dashboard(provider) as (app, pilot):
        size = len(rows_shown(app))
        expected = list(provider.table("orders").scan(order_by="status"))
        await pilot.press("o")
        await settle(app, pilot)
        text = screen_text(app)
        assert "key (region, id) ascending" in text and "index status descending" in text
        await pilot.press("down", "down", "enter")  # key asc, key desc, status asc
        await settle(app, pilot)
        assert rows_shown(app) == [cells(r) for r in expected[:size]]
        assert status_line(app) == f"orders · rows 1{DASH}{size} of 150 · order by status"
        await pilot.press("pagedown")
        await settle(app, pilot)
        assert rows_shown(app) == [cells(r) for r in expected[size : 2 * size]]
        await pilot.press("o", "down", "enter")
        await settle(app, pilot)
        descending = list(provider.table("orders").scan(order_by="status", descending=True))
        assert rows_shown(app) == [cells(r) for r in descending[:size]]
        assert status_line(app).endswith("order by status desc")


@run_async
async def test_go_to_a_key_and_page_back_from_it(provider: Any) -> None:
    async with dashboard(provider) as (app, pilot):
        rows = everything()
        size = len(rows_shown(app))
        await pilot.press("g")
        await type_text(pilot, "region=eu id=100")
        await pilot.press("enter")
        await settle(app, pilot)
        at = next(i for i, r in enumerate(rows) if (r["region"], r["id"]) == ("eu", 100))
        assert cursor_cells(app) == cells(rows[at]) and rows_shown(app)[0] == cells(rows[at])
        assert status_line(app).startswith(f"orders · {min(size, len(rows) - at)} rows from region=eu id=100 of 150")
        await pilot.press("pageup")
        await settle(app, pilot)
        assert rows_shown(app) == [cells(r) for r in rows[at - size : at]]
        # a key with no row: the rows after it, and a note
        await pilot.press("g")
        await type_text(pilot, "region=eu id=101")
        await pilot.press("enter")
        await settle(app, pilot)
        assert rows_shown(app)[0] == cells(rows[at + 1])
        assert "no row region=eu id=101; showing the rows after it" in notifications(app)
        # bad words keep the dialog open with the error
        await pilot.press("g")
        await type_text(pilot, "id=5")
        await pilot.press("enter")
        await settle(app, pilot)
        assert "give the key from its first column: region=… comes before" in screen_text(app)
        await pilot.press("escape")


@run_async
async def test_refresh_keeps_table_filter_order_position_and_cursor(provider: Any) -> None:
    async with dashboard(provider) as (app, pilot):
        await filter_rows(app, pilot, "total > 0")
        await pilot.press("o", "down", "down", "enter")
        await settle(app, pilot)
        await pilot.press("pagedown")
        await settle(app, pilot)
        app.screen.query_one("#rows", DataTable).move_cursor(row=3)
        before, under = rows_shown(app), cursor_cells(app)
        status = status_line(app)
        provider.table("orders").insert({"region": "zz", "id": 1, "status": None, "total": 5.0})
        await pilot.press("r")
        await settle(app, pilot)
        assert rows_shown(app) == before and cursor_cells(app) == under
        matching = sum(1 for r in order_rows(ORDER_ROWS) if r["total"] is not None and r["total"] > 0) + 1
        assert status_line(app) == status.replace(f"of {matching - 1}", f"of {matching}")
        assert app.screen.query_one("#where", Input).value == "total > 0"


@run_async
async def test_help_lists_every_key_of_the_contract(provider: Any) -> None:
    async with dashboard(provider) as (app, pilot):
        await pilot.press("question_mark")
        text = str(app.screen.query_one("#help-keys").render()) + str(app.screen.query_one("#help-notes").render())
        for key, what in [
            ("?", "Show every key"),
            ("PgUp", "Previous page"),
            ("/", "Filter the rows"),
            ("⏎", "Row detail"),
            ("a", "Add a row"),
            ("e", "Edit the row"),
            ("d", "Delete the row"),
            ("s", "Show the table's spec"),
            ("g", "Go to a key"),
            ("o", "Order by the key or an index"),
            ("r", "Read the page and count again"),
            ("w", "Live view: rows update as writes commit"),
            ("x", "Export the current view"),
            ("c", "Copy the row"),
            ("PgDn", "Next page"),
            ("esc", "Back to the table list"),
            ("q", "Quit the dashboard"),
            ("^p", "Command palette"),
        ]:
            assert any(line.strip().startswith(key) and what in line for line in text.splitlines()), (key, text)
        assert "Filter (/): the --where syntax" in text
        await pilot.press("escape")
        assert isinstance(app.screen, RowsScreen)
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running


def test_counter_counts_a_filter_in_chunks_and_every_row_at_once(tmp_path: Path) -> None:
    p = open_provider("rocksdb", tmp_path)
    p.table("orders").load({"region": "big", "id": i, "status": "open"} for i in range(25_000))
    spec, table = p.admin.get_spec("orders"), p.table("orders")
    seen: list[int] = []
    where = spi.parse_where("status = 'open'", spec)
    assert count_rows(table, spec, where, lambda n: seen.append(n) or True) == table.count(where=where)
    assert len(seen) == 3  # before each chunk of 10,000 keys
    seen.clear()
    assert count_rows(table, spec, None, lambda n: seen.append(n) or True) == 25_150 and seen == [0]  # the row counter
    assert count_rows(table, spec, where, lambda n: seen.append(n) or True, server=True) == table.count(where=where)
    assert seen == [0, 0]  # a server counts in one call
    assert count_rows(table, spec, None, lambda n: False) is None  # abandoned
    p.close()


def test_count_change_follows_the_filter() -> None:
    row = {"region": "eu", "id": 1, "status": "open", "total": 5.0, "note": None}
    assert count_change(ORDERS, "", None, row) == 1
    assert count_change(ORDERS, "status = 'open'", row, {**row, "status": "closed"}) == -1
    assert count_change(ORDERS, "total > 10", row, None) == 0


def test_pages_continue_from_their_token() -> None:
    p = spi.connect("memory://")
    p.admin.create(ORDERS)
    p.table("orders").load(order_rows(30))
    view = read_page(p.table("orders"), ORDERS, Query("orders", order=Order("status")), Position(), 10)
    assert [dict(r) for r in view.rows] == [dict(r) for r in p.table("orders").scan(order_by="status", limit=10)]
    assert view.first_row == 1 and view.next_token is not None


def test_the_last_page_is_read_backwards() -> None:
    p = spi.connect("memory://")
    p.admin.create(ORDERS)
    p.table("orders").load(order_rows(30))
    table, query = p.table("orders"), Query("orders", order=Order("status", descending=True))
    expected = [dict(r) for r in table.scan(order_by="status", descending=True)]
    last = read_page(table, ORDERS, query, LAST_PAGE, 10)
    assert [dict(r) for r in last.rows] == expected[-10:] and last.at_end and not last.at_start
    assert last.first_row is None and last.first_row_of(30) == 21 and next_position(last) is None
    before = read_page(table, ORDERS, query, earlier_position(last), 10)
    assert [dict(r) for r in before.rows] == expected[10:20] and before.first_row_of(30) == 11
    assert next_position(before) == LAST_PAGE
    first = read_page(table, ORDERS, query, earlier_position(before), 11)  # short of a page: the first page
    assert [dict(r) for r in first.rows] == expected[:11] and first.at_start


@run_async
async def test_every_key_in_the_footer_two_spaces_apart(provider: Any) -> None:
    async with dashboard(provider, size=(160, 40)) as (app, _pilot):
        footer = footer_line(app)
        assert footer.startswith("? Help  q Quit  ^p Palette  "), footer
        for key, label in zip(CONTRACT_KEYS, FOOTER_LABELS):
            assert f"  {key} {label}" in f"  {footer}  ", (key, footer)


@run_async
async def test_spec_view_from_the_list_and_the_rows(provider: Any) -> None:
    async with dashboard(provider, table=None) as (app, pilot):
        await pilot.press("down", "down", "s")  # orders on the table list
        await settle(app, pilot)
        text = screen_text(app)
        assert "Table orders" in text and "primary key: region, id" in text and "indexes: status" in text
        assert "change feed: off    ttl: -" in text
        await pilot.press("c")
        assert json.loads(app.clipboard) == ORDERS.to_dict()
        assert "copied the spec of orders as JSON" in notifications(app)
        await pilot.press("escape", "enter")
        await settle(app, pilot)
        await pilot.press("s")
        await settle(app, pilot)
        assert "Table orders" in screen_text(app)
        await pilot.press("escape")
        assert isinstance(app.screen, RowsScreen)

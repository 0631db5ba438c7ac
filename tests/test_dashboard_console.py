"""Issue 26 ("the console a new user keeps"), the dashboard: columns sized to their
content, forms that take typing at once (Enter walks the fields, ctrl+s and esc in
the footer), key columns first and marked, a filter example of the table's own, the
footer of an 80-column terminal, go to a key hidden by the filter or by its first
columns, and the table info view (``i``)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from dashboard_support import (
    KINDS,
    SpyProvider,
    dashboard,
    filter_rows,
    footer_line,
    notifications,
    open_provider,
    rows_shown,
    run_async,
    screen_text,
    settle,
    status_line,
    type_text,
    wait_for,
)
from textual.widgets import DataTable, Input, Select

import spi
from kvctl.tui import info
from kvctl.tui.browser import filter_example, plural
from kvctl.tui.screens.info import InfoScreen, bucket_text, histogram_text
from kvctl.tui.screens.row_form import RowFormScreen
from kvctl.tui.screens.rows import RowsScreen
from spi.testing.fixtures import ALL_TYPES, ORDERS, order_rows

LATE_KEY = spi.TableSpec(
    "flights",
    [spi.Field("note", "string"), spi.Field("total", "double"), spi.Field("code", "string")],
    primary_key=["code"],
)


@pytest.fixture(params=KINDS)
def provider(request: Any, tmp_path: Path) -> Any:
    p = open_provider(request.param, tmp_path, request)
    yield p
    p.close()


@run_async
async def test_table_list_rows_column_fits_its_counts(provider: Any) -> None:
    provider.admin.create(spi.TableSpec("big", ORDERS.fields, ORDERS.primary_key))
    provider.table("big").load(order_rows(1200))
    async with dashboard(provider, table=None) as (app, pilot):
        await wait_for(pilot, "the counts", lambda: "1,200" in screen_text(app))
        line = next(line for line in screen_text(app).splitlines() if " big " in line)
        assert "1,200 " in line and "off" in line, line


@run_async
async def test_forms_take_typing_at_once_enter_walks_the_fields_and_saves_on_the_last(provider: Any) -> None:
    t = provider.table("orders")
    async with dashboard(provider, size=(140, 50)) as (app, pilot):
        await pilot.press("a")
        await settle(app, pilot)
        assert isinstance(app.screen, RowFormScreen)
        footer = footer_line(app)
        assert "^s Save" in footer and "esc Cancel" in footer and "q Quit" not in footer, footer
        assert "ctrl+s save" in screen_text(app)
        await type_text(pilot, "aa")  # no click, no tab: the first field has the focus
        await pilot.press("enter")
        assert app.screen.query_one("#field-id", Input).has_focus
        await type_text(pilot, "7")
        await pilot.press("enter", "enter", "enter")  # status, total, note: empty
        assert app.screen.query_one("#field-note", Input).has_focus and isinstance(app.screen, RowFormScreen)
        await type_text(pilot, "typed")
        await pilot.press("enter")  # the last field: saves
        await settle(app, pilot)
        assert isinstance(app.screen, RowsScreen)
        assert dict(t.read(("aa", 7))) == {"region": "aa", "id": 7, "status": None, "total": None, "note": "typed"}
        # an edit starts on the first field that can change (the key cannot)
        await pilot.press("e")
        await settle(app, pilot)
        assert app.screen.query_one("#field-status", Input).has_focus
        await pilot.press("escape")
        await settle(app, pilot)
        assert isinstance(app.screen, RowsScreen)


@run_async
async def test_create_table_dialog_starts_on_the_name_and_saves_with_ctrl_s(provider: Any) -> None:
    async with dashboard(provider, table=None, size=(140, 45)) as (app, pilot):
        app.create_table()
        await settle(app, pilot)
        assert app.screen.query_one("#create-name", Input).has_focus
        assert "^s Save" in footer_line(app)
        await type_text(pilot, "made")
        await pilot.press("enter")
        await type_text(pilot, "id:long")
        await pilot.press("enter")
        await type_text(pilot, "id")
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        assert provider.admin.get_spec("made").primary_key == ("id",)


@run_async
async def test_key_columns_first_and_marked_nulls_apart_and_the_tables_own_example(provider: Any) -> None:
    provider.admin.create(LATE_KEY)
    provider.table("flights").load([{"code": "LH1603", "note": None, "total": 1603.0}])
    async with dashboard(provider, table="flights") as (app, pilot):
        text = screen_text(app)
        heading = next(line for line in text.splitlines() if "⚷ code" in line)
        assert heading.index("⚷ code") < heading.index("note") < heading.index("total"), heading
        assert rows_shown(app) == [["LH1603", "null", "1603.0"]]
        assert "null  1603.0" in text and "null1603" not in text
        assert status_line(app) == "flights · row 1 of 1"
        placeholder = app.screen.query_one("#where", Input).placeholder
        assert "total > 1603.0" in placeholder and "code = 'LH1603'" in placeholder, placeholder
        await filter_rows(app, pilot, "total > 1603.0")  # the example works as typed
        assert status_line(app) == "flights · no rows match · where total > 1603.0"


def test_filter_example_and_plural() -> None:
    assert filter_example(ORDERS) == "status = 'text' and total > 0"
    assert filter_example(ORDERS, {"region": "eu", "id": 1, "status": "it's", "total": None}) == (
        "status = 'it''s' and id > 1"
    )
    assert filter_example(ALL_TYPES) == "s = 'text' and i > 0"
    assert spi.parse_where(filter_example(ALL_TYPES), ALL_TYPES) is not None
    assert (plural(1, "row"), plural(0, "row"), plural(1200, "row")) == ("1 row", "0 rows", "1,200 rows")


@run_async
async def test_an_80_column_footer_keeps_help_and_quit(provider: Any) -> None:
    async with dashboard(provider, size=(80, 24)) as (app, pilot):
        footer = footer_line(app)
        assert footer.startswith("? Help") and "q Quit" in footer[:16], footer  # tight: no space between keys
        await pilot.press("escape")
        await settle(app, pilot)
        assert footer_line(app).startswith("? Help") and "q Quit" in footer_line(app)


@run_async
async def test_go_to_a_key_the_filter_hides_and_to_a_key_prefix(provider: Any) -> None:
    rows = sorted(order_rows(150), key=lambda r: (r["region"], r["id"]))
    async with dashboard(provider) as (app, pilot):
        await pilot.press("g")
        await type_text(pilot, "region=eu")
        await pilot.press("enter")
        await settle(app, pilot)
        first_eu = next(r for r in rows if r["region"] == "eu")
        assert rows_shown(app)[0][:2] == ["eu", str(first_eu["id"])]
        assert app.screen.query_one("#rows", DataTable).cursor_row == 0
        await pilot.press("g")
        await type_text(pilot, "region=eu0")
        await pilot.press("enter")
        await settle(app, pilot)
        assert "no row with region=eu0; showing the rows after it" in notifications(app)
        await filter_rows(app, pilot, "status = 'open'")
        hidden = next(r for r in rows if r["region"] == "eu" and r["status"] != "open")
        await pilot.press("g")
        await type_text(pilot, f"region=eu id={hidden['id']}")
        await pilot.press("enter")
        await settle(app, pilot)
        note = f"region=eu id={hidden['id']} is hidden by the filter"
        assert any(n.startswith(note) for n in notifications(app)), notifications(app)
        assert not any(n.startswith(f"no row region=eu id={hidden['id']}") for n in notifications(app))
        assert all(r[2] == "open" for r in rows_shown(app))


@run_async
async def test_info_view_without_a_feed(provider: Any) -> None:
    async with dashboard(provider, size=(120, 60)) as (app, pilot):
        await pilot.press("i")
        await settle(app, pilot)
        assert isinstance(app.screen, InfoScreen)
        text = screen_text(app)
        assert "rows: 150" in text and "no change feed" in text
        assert "size: " in text and "of values" in text
        grid = app.screen.query_one("#info-columns", DataTable)
        stats = {str(grid.get_row_at(i)[0]): [str(c) for c in grid.get_row_at(i)] for i in range(grid.row_count)}
        data = order_rows(150)
        totals = [r["total"] for r in data if r["total"] is not None]
        assert stats["total"] == ["total", "double", str(150 - len(totals)), str(min(totals)), str(max(totals))]
        assert stats["⚷ region"][2:] == ["0", "ap", "us"]
        assert app.screen.query_one("#info-column", Select).value == "total"  # the first numeric non-key column
        assert f"total: {len(totals)} values in 10 buckets" in text
        app.screen.query_one("#info-column", Select).value = "id"  # a long: whole-number buckets
        await settle(app, pilot)
        lines = [line.strip() for line in screen_text(app).splitlines()]
        assert "id: 150 values in 10 buckets" in lines
        assert [line.split()[:3] for line in lines if "\u2013 " in line][::9] == [
            ["-5", "\u2013", "9"],
            ["130", "\u2013", "144"],
        ]
        assert "? Help" in footer_line(app) and "esc Back" in footer_line(app)
        await pilot.press("escape")
        await settle(app, pilot)
        assert isinstance(app.screen, RowsScreen)


@run_async
async def test_info_view_takes_the_key_and_indexed_columns_from_one_row_reads(tmp_path: Path) -> None:
    """The first answers of the info view read a row or an index run each, whatever
    the table's size: the first key column's min and max are the first and the last
    row's, the indexed column's the first and last of its index's non-null entries,
    its nulls a count of the null entries; no aggregate runs (in one transaction, it
    would hold an embedded store while it reads every row)."""
    p = open_provider("memory", tmp_path)
    p.table("orders").insert({"region": "zz", "id": 1, "status": None})
    (full,) = p.table("orders").aggregate(columns=["region", "status", "total", "note"])
    spy = SpyProvider(p)
    async with dashboard(spy, size=(120, 60)) as (app, pilot):
        spy.detail.clear()
        await pilot.press("i")
        await settle(app, pilot)
        grid = app.screen.query_one("#info-columns", DataTable)
        stats = {str(grid.get_row_at(i)[0]): [str(c) for c in grid.get_row_at(i)][2:] for i in range(grid.row_count)}
        for column in ("region", "status", "total", "note"):
            found = full.stats[column]
            name = f"⚷ {column}" if ORDERS.is_key(column) else column
            assert stats[name] == [str(found.nulls), str(found.min), str(found.max)], column
        assert "aggregate" not in spy.calls
        one_row = [kw for name, kw in spy.detail if name == "scan_page" and kw.get("limit") == 1]
        assert [kw.get("order_by") for kw in one_row] == [None, None, "status", "status"]
        assert ("count", {"where": spi.col("status").is_null()}) in spy.detail
        assert "read index 'status'" in p.table("orders").explain(where=spi.col("status").is_null())


def test_info_reads_every_row_once_for_the_columns_left() -> None:
    p = spi.connect("memory://")
    p.admin.create(ORDERS)
    p.table("orders").load(order_rows(40))
    table = p.table("orders")
    (full,) = table.aggregate(columns=["region", "id", "status", "total", "note"])
    quick = info.quick_stats(table, ORDERS)
    left = [c for c in quick if not c.known]
    assert [c.name for c in left] == ["id", "total", "note"]  # a key column after the first; not indexed
    found = info.read_rows(table.scan(), ORDERS, left, lambda n: True)
    assert found is not None and found.rows == 40
    for columns in (info.server_stats(table, ORDERS, quick), found.columns):
        assert [(c.name, c.nulls, c.min, c.max, c.known) for c in columns] == [
            (c.name, full.stats[c.name].nulls, full.stats[c.name].min, full.stats[c.name].max, True) for c in left
        ]
    sized = info.read_rows(table.scan(), ORDERS, [], lambda n: True)
    assert sized is not None and sized.size == found.size > 0
    assert info.read_rows(table.scan(), ORDERS, left, lambda n: False) is None  # abandoned


@run_async
async def test_info_view_counts_change_events_per_minute(provider: Any) -> None:
    provider.admin.create(spi.TableSpec("events", ORDERS.fields, ORDERS.primary_key, changes=True))
    provider.table("events").load(order_rows(40))
    provider.table("events").delete(("eu", 1))
    async with dashboard(provider, table="events", size=(120, 60)) as (app, pilot):
        await pilot.press("i")
        await settle(app, pilot)
        assert "41 events, at most 41 in a minute" in screen_text(app)


def test_histogram_and_rate_in_bounded_buckets() -> None:
    hist = info.histogram(iter([0, 1, 2, 3, None, float("nan"), 10]), "x", 0, 10)
    assert hist is not None and hist.counts == (1, 1, 1, 1, 0, 0, 0, 0, 0, 1) and hist.nan == 1
    assert "not counted above: 1 NaN" in str(histogram_text(hist))
    one = info.histogram(iter([5, 5]), "x", 5, 5)
    assert one is not None and one.counts == (2,)
    ids = info.histogram(iter(range(1, 345)), "id", 1, 344, whole=True)  # 35 whole numbers a bucket
    assert ids is not None and ids.counts == (35,) * 9 + (29,)
    assert [bucket_text(ids, i) for i in (0, 1, 9)] == ["1 \u2013 35", "36 \u2013 70", "316 \u2013 344"]
    years = info.histogram(iter([2007, 2009, 2009]), "year", 2007, 2009, whole=True)
    assert years is not None and [bucket_text(years, i) for i in range(3)] == ["2007", "2008", "2009"]
    assert years.counts == (1, 0, 2)
    assert info.histogram_column(ORDERS) == "total" and info.histogram_column(LATE_KEY) == "total"
    assert info.histogram_column(spi.TableSpec("k", [spi.Field("k", "long")], ["k"])) == "k"
    p = spi.connect("memory://")
    p.admin.create(spi.TableSpec("t", [spi.Field("k", "long")], ["k"], changes=True))
    p.table("t").load([{"k": i} for i in range(5)])
    now = dt.datetime.now(dt.UTC)
    assert (info.change_rate(p, "t", now + dt.timedelta(minutes=10)) or [])[-11] == 5
    assert sum(info.change_rate(p, "t", now + dt.timedelta(hours=2)) or []) == 0
    assert info.human_bytes(512) == "512 B" and info.human_bytes(1536) == "1.5 KiB"

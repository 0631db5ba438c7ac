"""The dashboard's row actions on real memory and RocksDB providers: detail, copy,
export, add, edit, delete, version conflicts, and the loading indicator."""

from __future__ import annotations

import contextlib
import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from dashboard_support import (
    KINDS,
    cursor_cells,
    dashboard,
    fill,
    filter_rows,
    focus,
    notifications,
    open_provider,
    rows_shown,
    run_async,
    screen_text,
    settle,
    status_line,
    store_held,
    type_text,
    wait_for,
)
from textual.widgets import Button, Checkbox, DataTable, Input

import spi
from kvctl.output import OutputFormat, print_rows
from kvctl.render import json_row
from kvctl.tui.screens.detail import RowDetailScreen
from kvctl.tui.screens.dialogs import ExportScreen, OrderScreen
from kvctl.tui.screens.row_form import RowFormScreen
from kvctl.tui.screens.rows import RowsScreen
from spi.testing.fixtures import ALL_TYPES, ORDERS, order_rows


@pytest.fixture(params=KINDS)
def provider(request: Any, tmp_path: Path) -> Any:
    p = open_provider(request.param, tmp_path, request)
    yield p
    p.close()


def first_key(app: Any) -> tuple[str, int]:
    region, id_ = cursor_cells(app)[:2]
    return region, int(id_)


@run_async
async def test_row_detail_shows_every_column_in_full(provider: Any) -> None:
    async with dashboard(provider, "alltypes", size=(120, 50)) as (app, pilot):
        await pilot.press("down", "down", "down", "down", "enter")  # row 4: the 300-character string
        await settle(app, pilot)
        assert isinstance(app.screen, RowDetailScreen)
        text = screen_text(app)
        assert "alltypes: k=-16  (version 1)" in text
        assert "x" * 100 in text and text.count("x" * 100) >= 2  # wrapped over lines, not cut
        shown = {
            f.name: str(app.screen.query_one(f"#value-{f.name}").render()).replace("\n", "") for f in ALL_TYPES.fields
        }
        assert shown["s"] == "x" * 300 and shown["f"] == "NaN"
        await pilot.press("escape", "up", "up", "up", "up", "enter")  # row 0
        await settle(app, pilot)
        shown = {f.name: str(app.screen.query_one(f"#value-{f.name}").render()) for f in ALL_TYPES.fields}
        assert shown["b"] == "b64:AP8=" and shown["ts"] == "2024-02-29T12:00:00.123456+00:00"
        assert shown["flag"] == "true"
        assert "k  long, key" in screen_text(app)
        await pilot.press("c")
        assert json.loads(app.clipboard) == json_row(provider.table("alltypes").read((-20,)))
        await pilot.press("e")  # edit from the detail
        await settle(app, pilot)
        assert isinstance(app.screen, RowFormScreen)
        assert app.screen.query_one("#field-b", Input).value == "b64:AP8="


@run_async
async def test_copy_puts_the_row_as_json_on_the_clipboard(provider: Any) -> None:
    async with dashboard(provider) as (app, pilot):
        await pilot.press("down", "c")
        key = first_key(app)
        assert json.loads(app.clipboard) == json_row(provider.table("orders").read(key))
        assert f"copied region={key[0]} id={key[1]} as JSON" in notifications(app)


@pytest.mark.parametrize("fmt", ["csv", "ndjson", "parquet"])
@run_async
async def test_export_writes_the_current_view(provider: Any, tmp_path: Path, fmt: str) -> None:
    target = tmp_path / f"out.{fmt}"
    async with dashboard(provider, size=(140, 45)) as (app, pilot):
        await filter_rows(app, pilot, "total > 10")
        await pilot.press("o")
        await wait_for(pilot, "the order dialog", lambda: isinstance(app.screen, OrderScreen))
        await pilot.press("down", "down", "down", "enter")  # status descending
        await wait_for(pilot, "the rows", lambda: isinstance(app.screen, RowsScreen))
        await settle(app, pilot)
        await pilot.press("x")
        await wait_for(pilot, "the export dialog", lambda: isinstance(app.screen, ExportScreen))
        assert app.screen.query_one("#export-path", Input).value == "orders.csv"
        await fill(pilot, "#export-path", str(target))
        await pilot.press("enter")
        await settle(app, pilot)
        view = list(
            provider.table("orders").scan(
                where=spi.parse_where("total > 10", ORDERS), order_by="status", descending=True
            )
        )
        assert f"exported {len(view)} rows to {target} ({fmt})" in notifications(app)
        if fmt == "parquet":
            import pyarrow.parquet as pq

            assert pq.read_table(target).to_pylist() == [dict(r) for r in view]
        else:
            expected = io.StringIO()
            with contextlib.redirect_stdout(expected):
                print_rows(OutputFormat(fmt), ORDERS.columns, view)  # what kvctl scan -o FMT prints
            assert target.read_text() == expected.getvalue()
            if fmt == "csv":
                assert len(list(csv.reader(io.StringIO(target.read_text())))) == len(view) + 1
        # exporting onto an existing file asks first, focus on No
        await pilot.press("x")
        await settle(app, pilot)
        await fill(pilot, "#export-path", str(target))
        await pilot.press("enter")
        await settle(app, pilot)
        assert str(app.screen.query_one(".question").render()) == f"{target} exists. Replace it?"
        assert isinstance(app.focused, Button) and app.focused.id == "no"
        await pilot.press("enter")
        assert isinstance(app.screen, RowsScreen)


@run_async
async def test_edit_saves_at_the_version_shown_and_keeps_the_cursor(provider: Any) -> None:
    t = provider.table("orders")
    async with dashboard(provider, size=(140, 50)) as (app, pilot):
        await pilot.press("pagedown", "down", "down", "down")
        await settle(app, pilot)
        line, before = app.screen.query_one("#rows", DataTable).cursor_row, rows_shown(app)
        key = first_key(app)
        version = t.read(key).version
        await pilot.press("e")
        await settle(app, pilot)
        assert f"Edit orders: region={key[0]} id={key[1]} (version {version})" in screen_text(app)
        assert app.screen.query_one("#field-region", Input).disabled  # the key is not editable
        await fill(pilot, "#field-note", "edited in tui")
        await fill(pilot, "#field-total", "12.5")
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        assert isinstance(app.screen, RowsScreen)
        assert app.screen.query_one("#rows", DataTable).cursor_row == line and first_key(app) == key
        assert cursor_cells(app)[3:] == ["12.5", "edited in tui"]
        assert [r[:2] for r in rows_shown(app)] == [r[:2] for r in before]
        stored = t.read(key)
        assert stored["note"] == "edited in tui" and stored["total"] == 12.5 and stored.version == version + 1
        assert f"saved region={key[0]} id={key[1]} (version {version + 1})" in notifications(app)
        # the null box: an edited note set back to null
        await pilot.press("e")
        await settle(app, pilot)
        await focus(pilot, "#null-note")
        await pilot.press("space")
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        assert t.read(key)["note"] is None and cursor_cells(app)[4] == "null"


@run_async
async def test_failed_save_keeps_the_form_open_with_what_was_typed(provider: Any) -> None:
    t = provider.table("orders")
    async with dashboard(provider, size=(140, 50)) as (app, pilot):
        taken = first_key(app)
        await pilot.press("a")
        await settle(app, pilot)
        await fill(pilot, "#field-region", taken[0])
        await fill(pilot, "#field-id", str(taken[1]))
        await fill(pilot, "#field-total", "not a number")
        assert "is not a number" in screen_text(app)  # checked as it is typed
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        assert isinstance(app.screen, RowFormScreen) and "fix the fields marked above" in screen_text(app)
        await fill(pilot, "#field-total", "2.5")
        await pilot.press("ctrl+s")
        await settle(app, pilot)  # the key exists: the insert fails
        assert isinstance(app.screen, RowFormScreen)
        assert "not saved:" in screen_text(app) and "already exists" in screen_text(app)
        assert app.screen.query_one("#field-total", Input).value == "2.5"
        assert app.screen.query_one("#field-region", Input).value == taken[0]
        await fill(pilot, "#field-id", "9999")
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        assert isinstance(app.screen, RowsScreen)
        assert dict(t.read((taken[0], 9999))) == {
            "region": taken[0],
            "id": 9999,
            "status": None,
            "total": 2.5,
            "note": None,
        }


@run_async
async def test_add_refuses_an_empty_key_field(provider: Any) -> None:
    async with dashboard(provider, size=(140, 50)) as (app, pilot):
        await pilot.press("a")
        await settle(app, pilot)
        await fill(pilot, "#field-id", "5")
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        assert isinstance(app.screen, RowFormScreen)
        assert "key column 'region' is empty" in screen_text(app)
        assert provider.table("orders").count() == 150


@run_async
async def test_an_80x24_form_shows_many_fields_and_goes_to_a_bad_one_below() -> None:
    provider = spi.connect("memory://")  # the layout only: no store needed twice
    provider.admin.create(spi.TableSpec("wide", [spi.Field(f"c{i:02}", "long") for i in range(20)], ["c00"]))
    async with dashboard(provider, table="wide", size=(80, 24)) as (app, pilot):
        await pilot.press("a")
        await settle(app, pilot)
        assert sum(f"c{i:02} (long" in screen_text(app) for i in range(20)) >= 10  # one line a field
        app.screen.query_one("#field-c19", Input).value = "x"  # a bad value far below
        await settle(app, pilot)  # its error shown (and scrolled to); back to the top:
        app.screen.query_one("#form-fields").scroll_home(animate=False)  # c00 focused, c29 out of view
        await settle(app, pilot)
        assert "'x' is not an integer" not in screen_text(app)
        await type_text(pilot, "1")
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        text = screen_text(app)
        assert "'x' is not an integer" in text and "nothing was saved" in text and "Save" in text, text
        assert app.focused is app.screen.query_one("#field-c19") and provider.table("wide").count() == 0


@run_async
async def test_add_counts_the_row_and_shows_it(provider: Any) -> None:
    t = provider.table("orders")
    async with dashboard(provider, size=(140, 50)) as (app, pilot):
        await filter_rows(app, pilot, "status = 'open'")
        matching = sum(1 for r in order_rows(150) if r["status"] == "open")
        assert status_line(app).endswith(f"of {matching} · where status = 'open'")
        await pilot.press("a")
        await settle(app, pilot)
        await fill(pilot, "#field-region", "aa")
        await fill(pilot, "#field-id", "1")
        await fill(pilot, "#field-status", "open")
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        assert cursor_cells(app) == ["aa", "1", "open", "null", "null"]
        assert f"of {matching + 1} ·" in status_line(app)
        assert dict(t.read(("aa", 1))) == {"region": "aa", "id": 1, "status": "open", "total": None, "note": None}
        await pilot.press("a")
        await settle(app, pilot)
        await fill(pilot, "#field-region", "zz")
        await fill(pilot, "#field-id", "1")
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        assert "region=zz id=1 is not on this page (g goes to it)" in notifications(app)
        assert f"of {matching + 1} ·" in status_line(app)  # status null: not counted under the filter
        await filter_rows(app, pilot, "")
        assert status_line(app).endswith("of 152")


@run_async
async def test_a_filter_gives_the_focus_back_to_the_rows_even_when_the_read_is_slow(
    provider: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Enter in the filter moves the focus to the rows at once: a focus deferred until
    after the read's loading indicator showed (a slow machine) found the grid loading,
    which takes no focus, and the next keys went into the filter (how
    test_add_counts_the_row_and_shows_it failed under load: its "a" was typed there)."""
    load = RowsScreen._load

    def slow_load(screen: RowsScreen, *args: Any, **kwargs: Any) -> None:
        load(screen, *args, **kwargs)
        screen._show_busy()  # the loading indicator before anything else runs

    monkeypatch.setattr(RowsScreen, "_load", slow_load)
    async with dashboard(provider, size=(140, 50)) as (app, pilot):
        assert app.screen.focused is app.screen.query_one("#rows")  # the first read's too
        await filter_rows(app, pilot, "status = 'open'")
        assert app.screen.focused is app.screen.query_one("#rows")
        await pilot.press("a")
        await settle(app, pilot)
        assert isinstance(app.screen, RowFormScreen)


@run_async
async def test_a_late_busy_indicator_call_leaves_the_shown_page_alone(provider: Any) -> None:
    """Textual's timer queues its call, so stopping it does not take back a call already
    queued: when a page came just as the loading indicator's delay ran out, the
    indicator went up over the page shown and stayed, and the grid, loading, took no
    focus, so the next filter's keys stayed in the filter (how
    test_filter_applies_where_syntax_and_counts_the_matches failed under load)."""
    async with dashboard(provider) as (app, pilot):
        screen = app.screen
        assert isinstance(screen, RowsScreen)
        screen._show_busy()  # the call the stopped timer had queued, run after the page
        await pilot.pause()
        grid = screen.query_one("#rows", DataTable)
        assert not grid.loading and app.focused is grid


@run_async
async def test_version_conflict_offers_to_reload_and_keeps_the_edits(provider: Any) -> None:
    t = provider.table("orders")
    async with dashboard(provider, size=(140, 50)) as (app, pilot):
        key = first_key(app)
        await pilot.press("e")
        await settle(app, pilot)
        t.update(key, {"note": "changed elsewhere", "status": "closed"})
        await fill(pilot, "#field-total", "99.0")
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        assert isinstance(app.screen, RowFormScreen)
        assert "the row changed since it was shown" in screen_text(app)
        assert t.read(key)["total"] != 99.0
        await pilot.click("#reload")
        await settle(app, pilot)
        version = t.read(key).version
        assert f"(version {version})" in screen_text(app) and "your edits kept: total" in screen_text(app)
        assert app.screen.query_one("#field-note", Input).value == "changed elsewhere"
        assert app.screen.query_one("#field-total", Input).value == "99.0"
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        stored = t.read(key)
        assert stored["total"] == 99.0 and stored["note"] == "changed elsewhere" and stored.version == version + 1


@run_async
async def test_cancel_with_edits_asks_first(provider: Any) -> None:
    async with dashboard(provider, size=(140, 50)) as (app, pilot):
        await pilot.press("e")
        await settle(app, pilot)
        await fill(pilot, "#field-note", "draft")
        await pilot.press("escape")
        assert "Discard your changes?" in screen_text(app)
        await pilot.press("enter")  # focus on No: the form stays
        assert isinstance(app.screen, RowFormScreen)
        assert app.screen.query_one("#field-note", Input).value == "draft"
        await pilot.press("escape", "y")
        assert isinstance(app.screen, RowsScreen)


@run_async
async def test_delete_asks_with_focus_on_no_then_deletes(provider: Any) -> None:
    t = provider.table("orders")
    async with dashboard(provider) as (app, pilot):
        await pilot.press("down", "down")
        key = first_key(app)
        next_cells = rows_shown(app)[3]
        await pilot.press("d")
        await settle(app, pilot)
        assert f"Delete row region={key[0]} id={key[1]}?" in screen_text(app)
        assert isinstance(app.focused, Button) and app.focused.id == "no"
        await pilot.press("enter")
        await settle(app, pilot)
        assert t.read(key) is not None and isinstance(app.screen, RowsScreen)
        await pilot.press("d", "y")
        await settle(app, pilot)
        assert t.read(key) is None
        assert cursor_cells(app) == next_cells and app.screen.query_one("#rows", DataTable).cursor_row == 2
        assert status_line(app).endswith("of 149")
        assert f"deleted region={key[0]} id={key[1]}" in notifications(app)


@run_async
async def test_deleting_a_changed_row_is_refused(provider: Any) -> None:
    t = provider.table("orders")
    async with dashboard(provider) as (app, pilot):
        key = first_key(app)
        t.update(key, {"note": "changed elsewhere"})
        await pilot.press("d", "y")
        await settle(app, pilot)
        assert t.read(key) is not None
        assert "not deleted: the row changed since it was shown (r shows it)" in notifications(app)


@run_async
async def test_typed_form_for_every_type(provider: Any) -> None:
    t = provider.table("alltypes")
    async with dashboard(provider, "alltypes", size=(140, 60)) as (app, pilot):
        await pilot.press("a")
        await settle(app, pilot)
        for column, text in [
            ("k", "77"),
            ("i", "5"),
            ("f", "0.5"),
            ("s", ""),
            ("b", "b64:AAE="),
            ("ts", "2024-05-01T12:00:00+02:00"),
        ]:
            await fill(pilot, f"#field-{column}", text)
        app.screen.query_one("#null-s", Checkbox).value = False  # the empty string, not null
        await focus(pilot, "#field-flag")
        await pilot.press("enter", "up", "enter")  # true (false is the preset)
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        assert isinstance(app.screen, RowsScreen), screen_text(app)
        row = t.read((77,))
        assert row["i"] == 5 and row["f"] == 0.5 and row["s"] == "" and row["b"] == b"\x00\x01"
        assert row["ts"].isoformat() == "2024-05-01T10:00:00+00:00" and row["l"] is None and row["d"] is None
        assert row["flag"] is True


@run_async
async def test_loading_indicator_while_the_store_is_busy() -> None:
    p = open_provider("memory", Path("."))
    async with dashboard(p) as (app, pilot):
        before = rows_shown(app)
        grid = app.screen.query_one("#rows", DataTable)
        with store_held(p):
            await pilot.press("r")
            await pilot.pause(0.5)
            assert grid.loading  # the grid is covered by Textual's loading indicator
            await pilot.press("slash")  # the screen still answers
            assert isinstance(app.focused, Input)
            await pilot.press("escape")
        await settle(app, pilot)
        assert not grid.loading and rows_shown(app) == before
        assert app.focused is grid  # escape meant the rows: they take the focus once loaded
        with store_held(p):  # a reload with the focus on the rows keeps it there
            await pilot.press("r")
            await pilot.pause(0.5)
            assert grid.loading
        await settle(app, pilot)
        assert not grid.loading and app.focused is grid
    p.close()


@run_async
async def test_bytes_and_timestamps_read_as_on_the_command_line(provider: Any) -> None:
    async with dashboard(provider, "alltypes") as (app, _pilot):
        shown = [dict(zip(ALL_TYPES.columns, r)) for r in rows_shown(app)]
        assert shown[0]["b"] == "b64:AP8=" and shown[0]["ts"] == "2024-02-29T12:00:00.123456+00:00"
        assert shown[1]["ts"] == "null" and shown[1]["s"] == "żółw 🐢"
        assert shown[4]["s"] == "x" * 39 + "…"  # cut in the grid; whole in the detail


@run_async
async def test_q_in_a_form_does_not_quit(provider: Any) -> None:
    async with dashboard(provider, size=(140, 50)) as (app, pilot):
        await pilot.press("e")
        await settle(app, pilot)
        await focus(pilot, "#null-note")
        await pilot.press("q")
        assert isinstance(app.screen, RowFormScreen) and app.is_running

"""Snapshots of the dashboard's main screens (pytest-textual-snapshot): the table list,
rows, a filter error, row detail, the edit form, the spec, help, the order picker, the
info view and the live view.
Update them after a deliberate change with ``pytest tests/test_dashboard_snapshots.py
--snapshot-update`` and look at the report."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from dashboard_support import filled, make_app, open_table, settle, type_text

import spi
from spi.testing.fixtures import ORDERS, order_rows

SIZE = (120, 36)


def app_on(table: str | None = None) -> Any:
    return make_app(filled(spi.connect("memory://")), table=table)


def then(*keys: str, typed: str = "") -> Callable[[Any], Awaitable[None]]:
    """Wait for the dashboard to settle, press ``keys`` (and type ``typed``), settle again."""

    async def run_before(pilot: Any) -> None:
        await settle(pilot.app, pilot)
        await pilot.press(*keys)
        if typed:
            await type_text(pilot, typed)
            await pilot.press("enter")
        await settle(pilot.app, pilot)

    return run_before


def test_table_list(snap_compare: Any) -> None:
    assert snap_compare(app_on(), terminal_size=SIZE, run_before=then())


def test_rows(snap_compare: Any) -> None:
    async def run_before(pilot: Any) -> None:
        await settle(pilot.app, pilot)
        await open_table(pilot.app, pilot, "orders")
        await pilot.press("down", "down")

    assert snap_compare(app_on(), terminal_size=SIZE, run_before=run_before)


def test_filter_error(snap_compare: Any) -> None:
    assert snap_compare(app_on("orders"), terminal_size=SIZE, run_before=then("slash", typed="total > 'x'"))


def test_row_detail(snap_compare: Any) -> None:
    assert snap_compare(app_on("alltypes"), terminal_size=SIZE, run_before=then("enter"))


def test_edit_form(snap_compare: Any) -> None:
    assert snap_compare(app_on("orders"), terminal_size=(120, 45), run_before=then("e"))


def test_spec(snap_compare: Any) -> None:
    assert snap_compare(app_on("orders"), terminal_size=SIZE, run_before=then("s"))


@pytest.mark.parametrize("key", ["question_mark", "o"])
def test_help_and_order(snap_compare: Any, key: str) -> None:
    assert snap_compare(app_on("orders"), terminal_size=(120, 45), run_before=then(key))


def test_live_view(snap_compare: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # The marks of changed rows last 5 s; on a busy machine the snapshot can come later.
    monkeypatch.setattr("kvctl.tui.live.MARK_SECONDS", 600.0)
    provider = filled(spi.connect("memory://"))
    provider.admin.create(spi.TableSpec("events", ORDERS.fields, ORDERS.primary_key, ORDERS.indexes, changes=True))
    provider.table("events").load(order_rows(150))
    t = provider.table("events")

    async def run_before(pilot: Any) -> None:
        await settle(pilot.app, pilot)
        await open_table(pilot.app, pilot, "events")
        await pilot.press("w")
        while "live · revision" not in str(pilot.app.screen.query_one("#status").render()):
            await pilot.pause(0.05)
        t.update(("ap", -3), {"note": "changed"})
        t.insert({"region": "ap", "id": 1, "status": "open", "total": 2.5})
        t.delete(("ap", 3))
        while "revision 4" not in str(pilot.app.screen.query_one("#status").render()):
            await pilot.pause(0.05)
        await settle(pilot.app, pilot)

    assert snap_compare(make_app(provider), terminal_size=SIZE, run_before=run_before)


def test_info_view(snap_compare: Any) -> None:
    assert snap_compare(app_on("orders"), terminal_size=(120, 45), run_before=then("i"))

"""The dashboard's live view (``w``) on real memory and RocksDB providers, driven through
Textual's Pilot: writes from another handle (and, for RocksDB, another process) show
up on the page and are marked; a table without a feed, a table dropped or altered
while live; and the page logic (:mod:`kvctl.tui.live`) on its own."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from dashboard_support import (
    KINDS,
    cells,
    dashboard,
    in_key_order,
    notifications,
    open_provider,
    rows_shown,
    run_async,
    screen_text,
    settle,
    status_line,
)
from textual.widgets import DataTable

import spi
from kvctl.tui import live
from kvctl.tui.browser import Order, Position, Query, read_page
from kvctl.tui.screens.rows import RowsScreen
from kvctl.tui.screens.tables import TablesScreen
from spi.testing.fixtures import ORDERS, order_rows

LIVE = spi.TableSpec("events", ORDERS.fields, ORDERS.primary_key, ORDERS.indexes, changes=True)
ROWS = 150


def live_rows() -> list[dict[str, Any]]:
    """The rows of the ``events`` table, in key order (the first page is all region ap)."""
    return in_key_order(order_rows(ROWS))


def add_live_table(provider: Any) -> Any:
    provider.admin.create(LIVE)
    provider.table("events").load(order_rows(ROWS))
    return provider


@pytest.fixture(params=KINDS)
def kind(request: Any) -> str:
    return str(request.param)


@pytest.fixture
def provider(kind: str, tmp_path: Path, request: Any) -> Iterator[Any]:
    p = add_live_table(open_provider(kind, tmp_path, request))
    yield p
    p.close()


@pytest.fixture
def writer(provider: Any) -> Iterator[Any]:
    """Another handle on the same store: a provider object of its own (RocksDB: the
    store's per-path lock is shared with the dashboard's; PostgreSQL: its own
    connections)."""
    other = spi.connect(provider.url)
    yield other
    other.close()


async def wait_for(app: Any, pilot: Any, check: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    """Let the dashboard run until ``check()`` holds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}: {status_line(app)!r}, notes {notifications(app)}")
        await pilot.pause(0.05)


def marks(app: Any) -> list[str]:
    """The label of every row on the grid (the live view's marks; blank: unmarked)."""
    grid = app.screen.query_one("#rows", DataTable)
    return [str(row.label or "").strip() for row in grid.ordered_rows]


def row_at(app: Any, region: str, ident: int) -> int | None:
    """Where the row with key (region, ident) is on the grid."""
    for i, shown in enumerate(rows_shown(app)):
        if shown[0] == region and shown[1] == str(ident):
            return i
    return None


def live_workers(app: Any) -> list[Any]:
    return [w for w in app.workers if w.group == "live" and w.is_running]


async def start_live(app: Any, pilot: Any) -> None:
    await pilot.press("w")
    await wait_for(app, pilot, lambda: "live · revision" in status_line(app), "the live view")
    await settle(app, pilot)


@run_async
async def test_rows_follow_writes_of_another_handle_and_are_marked(
    provider: Any, writer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live, "MARK_SECONDS", 3.0)  # outlasts a busy machine's delay before the first look
    t = writer.table("events")
    rows = live_rows()
    async with dashboard(provider, table="events") as (app, pilot):
        size = len(rows_shown(app))
        assert rows_shown(app) == [cells(r) for r in rows[:size]]
        await start_live(app, pilot)
        revision = provider.revision()
        assert status_line(app) == f"events · rows 1\u2013{size} of {ROWS} · live · revision {revision}"
        scheme = provider.url.split("://")[0]
        assert f"kvctl dashboard — live · revision {revision} · {scheme}://" in screen_text(app).splitlines()[0]
        assert marks(app) == [""] * size

        first = rows[0]
        t.update((first["region"], first["id"]), {"note": "changed elsewhere"})
        await wait_for(app, pilot, lambda: rows_shown(app)[0][4] == "changed elsewhere", "the update")
        assert marks(app)[0] == "●" and marks(app)[1:] == [""] * (size - 1)

        t.insert({"region": "ap", "id": 1, "status": "open", "total": 1.5, "note": "new"})  # inside the page
        await wait_for(app, pilot, lambda: row_at(app, "ap", 1) is not None, "the insert")
        at = row_at(app, "ap", 1)
        assert at is not None and rows_shown(app)[at - 1][:2] == ["ap", "0"] and marks(app)[at] == "+"
        assert f"of {ROWS + 1}" in status_line(app)

        t.insert({"region": "zz", "id": 1})  # after the page: counted, not shown
        await wait_for(app, pilot, lambda: f"of {ROWS + 2}" in status_line(app), "the count")
        assert row_at(app, "zz", 1) is None

        t.delete(("ap", 0))
        await wait_for(app, pilot, lambda: marks(app)[at - 1] == "✗", "the delete")
        deleted = app.screen.query_one("#rows", DataTable).get_row_at(at - 1)[0]
        assert "strike" in deleted.style and f"of {ROWS + 1}" in status_line(app)
        await wait_for(app, pilot, lambda: row_at(app, "ap", 0) is None, "the deleted row to go")
        await wait_for(app, pilot, lambda: set(marks(app)) == {""}, "the marks to end")
        assert f"live · revision {provider.revision()}" in status_line(app)

        await pilot.press("w")
        assert "live view stopped" in notifications(app)
        await wait_for(app, pilot, lambda: not live_workers(app), "the watch to stop", timeout=3)
        assert "live" not in status_line(app) and app.screen.sub_title is None
        t.update(("ap", 3), {"note": "not followed"})
        await pilot.pause(0.5)
        assert "not followed" not in str(rows_shown(app))


@run_async
async def test_own_writes_are_counted_once(provider: Any) -> None:
    async with dashboard(provider, table="events") as (app, pilot):
        await start_live(app, pilot)
        await pilot.press("d", "y")  # deletes the first row, counted at once
        await settle(app, pilot)
        await wait_for(app, pilot, lambda: provider.revision() and "live · revision" in status_line(app), "x")
        await pilot.pause(0.5)
        assert f"of {ROWS - 1}" in status_line(app)


@run_async
async def test_filter_and_descending_order_are_kept(provider: Any, writer: Any) -> None:
    t = writer.table("events")
    async with dashboard(provider, table="events") as (app, pilot):
        await pilot.press("slash", *"status='open'", "enter")
        await settle(app, pilot)
        await pilot.press("o", "down", "enter")  # key descending
        await settle(app, pilot)
        await start_live(app, pilot)
        open_rows = sum(1 for r in order_rows(ROWS) if r["status"] == "open")
        assert f"of {open_rows}" in status_line(app)
        top = rows_shown(app)[0]
        assert top[0] == "us"
        t.insert({"region": "us", "id": 10_000, "status": "open"})  # first in descending order
        t.insert({"region": "us", "id": 10_001, "status": "closed"})  # filtered out
        await wait_for(app, pilot, lambda: rows_shown(app)[0][:2] == ["us", "10000"], "the new first row")
        assert rows_shown(app)[1] == top and row_at(app, "us", 10_001) is None
        await wait_for(app, pilot, lambda: f"of {open_rows + 1}" in status_line(app), "the count")
        t.update(("us", 10_000), {"status": "closed"})  # leaves the filter: it goes
        await wait_for(app, pilot, lambda: rows_shown(app)[0] == top, "the row to leave")
        assert f"of {open_rows}" in status_line(app)  # the row was on the page: counted
        t.update(("ap", -3), {"status": "closed"})  # a row not shown: the filtered total is not known
        await wait_for(app, pilot, lambda: "(r counts them)" in status_line(app), "the total to go")
        await pilot.press("r")
        await settle(app, pilot)
        assert f"of {open_rows}" in status_line(app)


@run_async
async def test_w_without_a_change_feed_says_how_to_turn_it_on(provider: Any) -> None:
    hint = "table 'orders' does not record a change feed; `kvctl table alter orders --changes` turns it on"
    async with dashboard(provider, table=None) as (app, pilot):
        grid = app.screen.query_one("#tables", DataTable)
        names = [str(grid.get_row_at(i)[0]) for i in range(grid.row_count)]
        grid.move_cursor(row=names.index("orders"))
        await pilot.press("w")
        await settle(app, pilot)
        assert isinstance(app.screen, TablesScreen) and hint in notifications(app)
        await pilot.press("enter")
        await settle(app, pilot)
        notifications(app).clear()
        await pilot.press("w")
        await settle(app, pilot)
        assert hint in notifications(app) and "live" not in status_line(app)
        assert not live_workers(app)


@run_async
async def test_w_on_the_table_list_opens_the_rows_live(provider: Any, writer: Any) -> None:
    async with dashboard(provider, table=None) as (app, pilot):
        grid = app.screen.query_one("#tables", DataTable)
        names = [str(grid.get_row_at(i)[0]) for i in range(grid.row_count)]
        assert "events" in names
        grid.move_cursor(row=names.index("events"))
        await pilot.press("w")
        await wait_for(app, pilot, lambda: "live · revision" in status_line(app), "the live view")
        assert isinstance(app.screen, RowsScreen) and app.screen.table_name == "events"
        writer.table("events").update(("ap", -3), {"note": "seen"})
        await wait_for(app, pilot, lambda: rows_shown(app)[0][4] == "seen", "the update")
        await pilot.press("escape")  # leaving the rows stops the watch
        await settle(app, pilot)
        assert isinstance(app.screen, TablesScreen)
        await wait_for(app, pilot, lambda: not live_workers(app), "the watch to stop", timeout=3)


@run_async
async def test_a_dropped_table_stops_the_live_view(provider: Any, writer: Any) -> None:
    async with dashboard(provider, table="events") as (app, pilot):
        await start_live(app, pilot)
        shown = rows_shown(app)
        writer.admin.drop("events")
        await wait_for(app, pilot, lambda: not live_workers(app) and app.screen.live is None, "the live view to stop")
        assert "table 'events' was dropped: the live view stopped" in notifications(app)
        assert app.is_running and isinstance(app.screen, RowsScreen) and rows_shown(app) == shown
        assert "live ·" not in status_line(app)
        await pilot.press("r")  # the rows are gone: an error, no crash
        await settle(app, pilot)
        assert app.is_running and "error:" in status_line(app)


@run_async
async def test_an_altered_table_stays_live(provider: Any, writer: Any) -> None:
    async with dashboard(provider, table="events") as (app, pilot):
        await start_live(app, pilot)
        fields = [*LIVE.fields, spi.Field("tag", "string")]
        writer.admin.create_or_update(spi.TableSpec("events", fields, LIVE.primary_key, LIVE.indexes, changes=True))
        writer.table("events").update(("ap", -3), {"tag": "after alter"})
        columns = app.screen.query_one("#rows", DataTable).columns
        await wait_for(app, pilot, lambda: len(columns) == 6 and rows_shown(app)[0][5] == "after alter", "the column")
        assert app.screen.live is not None and marks(app)[0] == "●"
        writer.table("events").update(("ap", 0), {"tag": "still live"})
        await wait_for(app, pilot, lambda: rows_shown(app)[1][5] == "still live", "the next update")
        # turning the feed off ends the view, saying how to turn it on again
        writer.admin.create_or_update(spi.TableSpec("events", fields, LIVE.primary_key, LIVE.indexes))
        await wait_for(app, pilot, lambda: app.screen.live is None, "the live view to stop")
        assert any("`kvctl table alter events --changes` turns it on" in n for n in notifications(app))


@run_async
async def test_a_burst_of_writes_is_applied_in_batches(
    provider: Any, writer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live, "MAX_PENDING", 50)  # a burst overflows: the page is read again
    async with dashboard(provider, table="events") as (app, pilot):
        await start_live(app, pilot)
        with writer.transaction() as tx:
            for r in live_rows():
                tx.table("events").update((r["region"], r["id"]), {"note": "burst"})
        await wait_for(app, pilot, lambda: all(row[4] == "burst" for row in rows_shown(app)), "the burst")
        await wait_for(app, pilot, lambda: f"of {ROWS}" in status_line(app), "the count (taken again)")
        assert app.screen.live is not None
        writer.table("events").update(("ap", -3), {"note": "after"})
        await wait_for(app, pilot, lambda: rows_shown(app)[0][4] == "after", "the next write")


@pytest.mark.parametrize("kind", ["rocksdb"])
@run_async
async def test_writes_of_another_process_show_up(provider: Any, tmp_path: Path) -> None:
    async with dashboard(provider, table="events") as (app, pilot):
        await start_live(app, pilot)
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "kvctl",
                "--url",
                provider.url,
                "put",
                "events",
                '{"region":"ap","id":1,"note":"cli"}',
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        await wait_for(app, pilot, lambda: row_at(app, "ap", 1) is not None, "the row from kvctl put")
        at = row_at(app, "ap", 1)
        assert at is not None and rows_shown(app)[at][4] == "cli" and marks(app)[at] == "+"


@pytest.mark.postgres
@run_async
async def test_postgres_smoke(pg_factory: Callable[..., Any]) -> None:
    p = add_live_table(pg_factory())
    with spi.connect(p.url) as other:  # another provider object: its own connections
        async with dashboard(p, table="events") as (app, pilot):
            await start_live(app, pilot)
            other.table("events").update(("ap", -3), {"note": "from pg"})
            other.table("events").insert({"region": "ap", "id": 1, "note": "new in pg"})
            await wait_for(app, pilot, lambda: row_at(app, "ap", 1) is not None, "the insert")
            assert rows_shown(app)[0][4] == "from pg" and marks(app)[:3] == ["●", "", "+"]
            assert f"of {ROWS + 1}" in status_line(app)
            other.admin.drop("events")
            await wait_for(app, pilot, lambda: app.screen.live is None, "the live view to stop")
            assert "table 'events' was dropped: the live view stopped" in notifications(app)


# ---------------------------------------------------------------------- the page logic alone
def event(op: str, row: dict[str, Any], version: int | None = 2, revision: int = 9) -> spi.Change:
    key = {c: row[c] for c in ORDERS.primary_key}
    when = dt.datetime.now(dt.UTC)
    return spi.Change(revision, "events", op, key, row if op == "put" else None, version if op == "put" else None, when)


def page_of(rows: list[dict[str, Any]], size: int, query: Query) -> live.LivePage:
    p = spi.connect("memory://")
    p.admin.create(LIVE)
    p.table("events").load(rows)
    view = read_page(p.table("events"), LIVE, query, Position(), size)
    return live.LivePage(view, {}, 2 * size)


def test_a_page_takes_the_rows_inside_its_range_only() -> None:
    rows = [{"region": "eu", "id": i, "status": "open", "total": 1.0, "note": None} for i in range(0, 100, 10)]
    page = page_of(rows, 5, Query("events"))  # ids 0..40; the next page starts after 40
    done = page.apply([event("put", {**rows[0], "id": 15}, 1), event("put", {**rows[0], "id": 45}, 1)], 0.0)
    assert [r["id"] for r in page.view.rows] == [0, 10, 15, 20, 30, 40] and done.changed
    assert page.labels() == [None, None, "new", None, None, None]
    assert [before for before, _ in done.counts] == [live.UNKNOWN, live.UNKNOWN]
    page.apply([event("delete", rows[1]), event("expire", rows[4])], 0.0)  # a sweep's expiry: as a delete
    assert page.labels() == [None, "deleted", "new", None, None, "deleted"]
    assert [r["id"] for r in page.settled().rows] == [0, 15, 20, 30]
    assert page.expire(live.MARK_SECONDS + 1) and page.labels() == [None] * 4 and len(page.view.rows) == 4
    assert not page.expire(live.MARK_SECONDS + 2)


def test_an_index_order_moves_a_changed_row() -> None:
    rows = [{"region": "eu", "id": i, "status": f"s{i:02}", "total": None, "note": None} for i in range(20)]
    page = page_of(rows, 5, Query("events", order=Order("status", descending=True)))  # s19..s15
    page.apply([event("put", {**rows[19], "status": "s16x"})], 0.0)  # still on the page, lower
    assert [r["status"] for r in page.view.rows] == ["s18", "s17", "s16x", "s16", "s15"]
    page.apply([event("put", {**rows[18], "status": "a"})], 0.0)  # moved off the page
    assert [r["status"] for r in page.view.rows] == ["s17", "s16x", "s16", "s15"]
    page.apply([event("put", {**rows[3], "status": None})], 0.0)  # nulls: not on this page
    assert len(page.view.rows) == 4


def test_an_event_written_before_an_alter_reads_null_in_the_new_column() -> None:
    altered = spi.TableSpec("events", [*LIVE.fields, spi.Field("tag", "string")], LIVE.primary_key, changes=True)
    p = spi.connect("memory://")
    p.admin.create(altered)
    p.table("events").insert({"region": "eu", "id": 1, "tag": None})
    view = read_page(p.table("events"), altered, Query("events", where_text="tag is null"), Position(), 5)
    page = live.LivePage(view, {}, 10)
    done = page.apply([event("put", {"region": "eu", "id": 2, "status": None, "total": None, "note": None}, 1)], 0.0)
    assert [r["id"] for r in page.view.rows] == [1, 2] and page.view.rows[1]["tag"] is None
    assert not done.new_columns


def test_too_many_new_rows_ask_for_a_new_read() -> None:
    rows = [{"region": "eu", "id": i, "status": None, "total": None, "note": None} for i in range(3)]
    page = page_of(rows, 3, Query("events"))  # the whole table: every new row fits
    done = page.apply([event("put", {**rows[0], "id": i}, 1) for i in range(3, 9)], 0.0)
    assert len(page.view.rows) == 9 and done.reread


def test_the_feed_keeps_the_latest_event_of_each_row_and_overflows(monkeypatch: pytest.MonkeyPatch) -> None:
    feed = live.Feed(ORDERS.primary_key, 4)
    a, b = {"region": "eu", "id": 1}, {"region": "eu", "id": 2}
    for e in (event("put", a, 1, 5), event("put", b, 1, 5), event("put", {**a, "note": "x"}, 2, 6)):
        feed.put(e)
    batch = feed.take()
    assert [(e.key["id"], e.version) for e in batch.events] == [(2, 1), (1, 2)] and batch.revision == 6
    assert feed.take().events == [] and not batch.overflow
    monkeypatch.setattr(live, "MAX_PENDING", 1)
    feed.put(event("put", a, 3, 7))
    feed.put(event("delete", b, None, 8))
    batch = feed.take()
    assert batch.overflow and batch.events == [] and batch.revision == 8


def test_counts_follow_the_events() -> None:
    row = {"region": "eu", "id": 1, "status": "open", "total": 5.0, "note": None}
    closed = spi.Row({**row, "status": "closed"}, 1)
    cases = [
        (live.UNKNOWN, event("put", row, 1), 1, 1),  # a new row
        (live.UNKNOWN, event("put", row, 3), 0, None),  # a change: unknown under a filter
        (live.UNKNOWN, event("delete", row), -1, None),
        (closed, event("put", row, 2), 0, 1),  # the row was on the page
        (spi.Row(row, 1), event("delete", row), -1, -1),
        (None, event("put", row, 1), 1, 1),
    ]
    for before, change, every, filtered in cases:
        assert live.counts_change(LIVE, [(before, change)])("", 0) == every
        assert live.counts_change(LIVE, [(before, change)])("status = 'open'", 0) == filtered
        assert live.counts_change(LIVE, [(before, change)])("status = 'open'", change.revision) == 0  # counted
    both = live.counts_change(LIVE, [(live.UNKNOWN, event("put", row, 1)), (spi.Row(row, 1), event("delete", row))])
    assert both("", 0) == 0 and both("status = 'open'", 0) == 0
    assert live.counts_change(LIVE, [(live.UNKNOWN, event("delete", row))])("status = 'open' or total > 1", 0) is None


def test_an_own_write_is_counted_once_whichever_comes_first() -> None:
    row = {"region": "eu", "id": 1, "status": "open", "total": 5.0, "note": None}
    state = live.LiveState()
    assert state.own_write((("eu", 1), 2))  # the write's bookkeeping first: counted there...
    assert state.counted(event("put", row, 2), ORDERS.primary_key)  # ...and its event skipped
    assert not state.counted(event("delete", row), ORDERS.primary_key)  # the event first: counted...
    assert not state.own_write((("eu", 1), None))  # ...and the write's bookkeeping skips it
    assert not state.counted(event("put", row, 2), ORDERS.primary_key)  # another write: counted


def test_follow_stops_when_asked_and_hands_over_what_ends_it() -> None:
    p = spi.connect("memory://")
    p.admin.create(LIVE)
    feed = live.Feed(LIVE.primary_key, p.revision())
    p.table("events").insert({"region": "eu", "id": 1})
    calls = iter([False, True])
    started = time.monotonic()
    live.follow(p, "events", feed, lambda: next(calls, True))
    assert time.monotonic() - started < live.WAIT * 3
    assert [e.key for e in feed.take().events] == [{"region": "eu", "id": 1}]
    p.admin.drop("events")
    feed.revision = 0
    live.follow(p, "events", feed, lambda: False)
    assert isinstance(feed.take().error, spi.TableNotFoundError)

"""``kvctl table freeze`` / ``unfreeze`` (CLI.md): every row write to a frozen table
exits 1 with ``table T is frozen``; list and describe show the flag; ``--spec`` ignores
it; copies into a frozen table are refused before anything is loaded; the dashboard's
table list marks it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_support import ORDERS_FIELDS, PROVIDER_KINDS, Kvctl, assert_one_error, provider_url
from dashboard_support import dashboard, run_async
from textual.widgets import DataTable

import spi

FROZEN = "table orders is frozen"


@pytest.fixture(params=PROVIDER_KINDS)
def kv(request: pytest.FixtureRequest, tmp_path: Path) -> Kvctl:
    """kvctl on a fresh store with an ``orders`` table of two rows."""
    runner = Kvctl(provider_url(request.param, tmp_path, request))
    runner.ok("table", "create", "orders", *ORDERS_FIELDS)
    runner.ok("put", "orders", '{"region": "eu", "id": 1, "status": "open", "total": 1.5}')
    runner.ok("put", "orders", '{"region": "eu", "id": 2, "status": "open"}')
    return runner


def _rows(kv: Kvctl) -> list[Any]:
    return [json.loads(line) for line in kv.ok("scan", "orders", "-o", "ndjson").lines()]


WRITES = [
    ("put", "orders", '{"region": "eu", "id": 3}'),
    ("put", "orders", "--file", "-"),
    ("update", "orders", "region=eu", "id=1", "--set", "status=closed"),
    ("delete", "orders", "region=eu", "id=1"),
    ("delete", "orders", "region=eu", "id=99"),
    ("delete", "orders", "--prefix", "region=eu", "--yes"),
    ("incr", "orders", "region=eu", "id=1", "--column", "total", "--by", "1"),
    ("cas", "orders", "region=eu", "id=2", "--column", "status", "--expect", "open", "--set", "done"),
]


def test_every_row_write_to_a_frozen_table_exits_1_saying_so(kv: Kvctl) -> None:
    before = _rows(kv)
    res = kv.ok("table", "freeze", "orders")
    assert "kvctl table unfreeze orders" in res.err
    for args in WRITES:
        res = kv(*args, input='{"region": "eu", "id": 4}\n')
        assert_one_error(res, 1)
        assert FROZEN in res.err and "kvctl table unfreeze orders" in res.err, (args, res)
    assert _rows(kv) == before
    assert kv.ok("get", "orders", "region=eu", "id=1", "-o", "json").out.strip() != ""
    assert kv.ok("count", "orders").out.strip() == "2"
    kv.ok("table", "unfreeze", "orders")
    kv.ok("put", "orders", '{"region": "eu", "id": 3}')
    assert len(_rows(kv)) == 3


def test_list_and_describe_show_frozen_and_spec_ignores_it(kv: Kvctl, tmp_path: Path) -> None:
    kv.ok("table", "create", "other", "--field", "k:long", "--pk", "k")
    kv.ok("table", "freeze", "orders")
    listed = json.loads(kv.ok("table", "list", "-o", "json").out)
    assert listed == [{"name": "orders", "frozen": True}, {"name": "other"}]
    assert "yes" in kv.ok("table", "list", "-o", "table").out
    described = json.loads(kv.ok("table", "describe", "orders", "-o", "json").out)
    assert described["frozen"] is True
    assert "frozen" not in json.loads(kv.ok("table", "describe", "other", "-o", "json").out)
    res = kv.ok("table", "describe", "orders", "-o", "table")
    assert "frozen: yes" in res.out + res.err
    assert "frozen: yes" not in "".join(kv.ok("table", "describe", "other", "-o", "table").err)
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({**described, "name": "copy"}))
    kv.ok("table", "create", "copy", "--spec", str(spec))  # --spec ignores "frozen"
    assert "frozen" not in json.loads(kv.ok("table", "describe", "copy", "-o", "json").out)
    kv.ok("put", "copy", '{"region": "eu", "id": 1}')
    kv.ok("table", "alter", "orders", "--add-index", "total")  # alter is allowed and keeps it frozen
    assert json.loads(kv.ok("table", "describe", "orders", "-o", "json").out)["frozen"] is True
    kv.ok("table", "unfreeze", "orders")
    assert json.loads(kv.ok("table", "list", "-o", "json").out) == [
        {"name": "copy"},
        {"name": "orders"},
        {"name": "other"},
    ]


def test_freeze_of_a_missing_table_exits_1(kv: Kvctl) -> None:
    for command in ("freeze", "unfreeze"):
        res = kv("table", command, "nope")
        assert_one_error(res, 1)
        assert "does not exist" in res.err


def test_a_copy_into_a_frozen_table_is_refused_before_anything_is_loaded(tmp_path: Path) -> None:
    source, target = f"rocksdb:{tmp_path / 'src'}", f"rocksdb:{tmp_path / 'dst'}"
    src, dst = Kvctl(source), Kvctl(target)
    for kv in (src, dst):
        kv.ok("table", "create", "orders", *ORDERS_FIELDS)
    src.ok("put", "orders", '{"region": "eu", "id": 1}')
    dst.ok("put", "orders", '{"region": "us", "id": 7}')
    dst.ok("table", "freeze", "orders")
    for mode in ("append", "overwrite"):
        res = src("copy", source, target, "orders", "--mode", mode, "--yes")
        assert res.code == 1 and FROZEN in res.err, res
    assert [(r["region"], r["id"]) for r in _rows(dst)] == [("us", 7)]


@run_async
async def test_the_dashboard_marks_a_frozen_table(tmp_path: Path) -> None:
    with spi.connect(f"rocksdb:{tmp_path / 'db'}") as provider:
        for name in ("orders", "other"):
            provider.admin.create(spi.TableSpec(name, [("k", "long")], ["k"]))
        provider.admin.freeze("orders")
        async with dashboard(provider, table=None) as (app, _pilot):
            grid = app.screen.query_one("#tables", DataTable)
            names = [str(grid.get_row_at(i)[0]) for i in range(grid.row_count)]
            assert names == ["orders (frozen)", "other"]

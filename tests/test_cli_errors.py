"""Bad input (CLI.md, "Exit codes"): exit 2 (3 for an unreachable provider), one
``error:`` line, no traceback, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import (
    ORDERS_FIELDS,
    PROVIDER_KINDS,
    Kvctl,
    Result,
    assert_one_error,
    provider_url,
    run_process,
)
from typer.testing import CliRunner

from kvctl.app import app

BIG = "x" * 1100
BAD_INPUT: list[tuple[str, list[str], str | None]] = [
    # (what, args, stdin)
    ("unknown option", ["scan", "orders", "--nope"], None),
    ("unknown command", ["frobnicate"], None),
    ("bad output format", ["-o", "xml", "scan", "orders"], None),
    ("neither row nor file", ["put", "orders"], None),
    ("row and file", ["put", "orders", "{}", "--file", "-"], None),
    ("row is not JSON", ["put", "orders", "{region: eu}"], None),
    ("row is not an object", ["put", "orders", "[1]"], None),
    ("row misses a key column", ["put", "orders", '{"region": "eu"}'], None),
    ("row has an unknown column", ["put", "orders", '{"region": "eu", "id": 1, "zz": 1}'], None),
    ("row value of the wrong type", ["put", "orders", '{"region": "eu", "id": "one"}'], None),
    ("int out of range", ["put", "orders", '{"region": "eu", "id": 99999999999999999999}'], None),
    ("key too long", ["put", "orders", json.dumps({"region": BIG, "id": 1})], None),
    ("naive bytes", ["put", "orders", '{"region": "eu", "id": 1, "data": "not base64!"}'], None),
    ("if-absent with replace", ["put", "orders", '{"region": "eu", "id": 1}', "--if-absent", "--replace"], None),
    ("bad --mode", ["put", "orders", "--file", "-", "--mode", "merge"], '{"region": "eu", "id": 1}'),
    ("bad --batch-size", ["put", "orders", "--file", "-", "--batch-size", "0"], '{"region": "eu", "id": 1}'),
    ("bad value in a file", ["put", "orders", "--file", "-"], '{"region": "eu", "id": 1}\n{"region": "eu", "id": 1.5}'),
    ("missing file", ["put", "orders", "--file", "/nonexistent/rows.json"], None),
    ("key word without =", ["get", "orders", "region", "id=1"], None),
    ("incomplete key", ["get", "orders", "region=eu"], None),
    ("non-key column in key", ["get", "orders", "region=eu", "id=1", "status=x"], None),
    ("key value of the wrong type", ["get", "orders", "region=eu", "id=x"], None),
    ("unknown --columns", ["get", "orders", "region=eu", "id=1", "--columns", "zz"], None),
    ("where syntax error", ["scan", "orders", "--where", "status = = 'x'"], None),
    ("where unknown column", ["scan", "orders", "--where", "zz = 1"], None),
    ("where mistyped literal", ["count", "orders", "--where", "id = 'x'"], None),
    ("order by unknown column", ["scan", "orders", "--order-by", "totl"], None),
    ("limit and all", ["scan", "orders", "--limit", "5", "--all"], None),
    ("negative limit", ["scan", "orders", "--limit", "-1"], None),
    ("bad token", ["scan", "orders", "--after", "not-a-token"], None),
    ("range over a non-key column", ["scan", "orders", "--ge", "status=a"], None),
    ("range with a gap", ["scan", "orders", "--ge", "id=3"], None),
    ("prefix with bounds", ["scan", "orders", "--prefix", "region=eu", "--lt", "region=us"], None),
    ("range delete without --yes", ["delete", "orders", "--prefix", "region=eu"], None),
    ("delete --all without --yes", ["delete", "orders", "--all"], None),
    ("delete with key and range", ["delete", "orders", "region=eu", "id=1", "--where", "id = 1", "--yes"], None),
    ("update a key column", ["update", "orders", "region=eu", "id=1", "--set", "id=2"], None),
    ("incr by a non-number", ["incr", "orders", "region=eu", "id=1", "--column", "total", "--by", "x"], None),
    ("incr a string column", ["incr", "orders", "region=eu", "id=1", "--column", "status"], None),
    ("cas without expectation", ["cas", "orders", "region=eu", "id=1", "--column", "status", "--set", "x"], None),
    ("drop without --yes", ["table", "drop", "orders"], None),
    ("create with a bad type", ["table", "create", "t", "--field", "a:varchar", "--pk", "a"], None),
    ("create without --pk", ["table", "create", "t", "--field", "a:string"], None),
    ("create with a reserved name", ["table", "create", "kv_t", "--field", "a:string", "--pk", "a"], None),
    ("create from a missing spec file", ["table", "create", "t", "--spec", "/nonexistent.json"], None),
    ("incompatible alter", ["table", "alter", "orders", "--add-field", "id:string"], None),
    ("alter drops a missing index", ["table", "alter", "orders", "--drop-index", "total"], None),
    ("txn is not JSON", ["txn"], "{ops"),
    ("txn has an unknown op", ["txn"], '{"ops": [{"op": "merge", "table": "orders"}]}'),
    ("txn misses a field", ["txn"], '{"ops": [{"op": "incr", "table": "orders", "key": {"region": "eu", "id": 1}}]}'),
    (
        "txn has a bad value",
        ["txn"],
        '{"ops": [{"op": "put", "table": "orders", "row": {"region": "eu", "id": 7}},'
        ' {"op": "put", "table": "orders", "row": {"region": "eu", "id": "x"}}]}',
    ),
]


@pytest.fixture(params=PROVIDER_KINDS)
def kv(request: pytest.FixtureRequest, tmp_path: Path) -> Kvctl:
    """kvctl on a fresh store holding ``orders`` with two rows."""
    runner = Kvctl(provider_url(request.param, tmp_path, request))
    runner.ok("table", "create", "orders", *ORDERS_FIELDS)
    runner.ok("put", "orders", "--file", "-", input='{"region": "eu", "id": 1}\n{"region": "us", "id": 2}')
    return runner


def snapshot(kv: Kvctl) -> tuple[str, ...]:
    tables = kv.ok("table", "list").out
    return tables, kv.ok("table", "describe", "orders").out, kv.ok("scan", "orders", "--all", "--versions").out


def test_bad_input_exits_2_with_one_error_line_and_writes_nothing(kv: Kvctl) -> None:
    before = snapshot(kv)
    for what, args, stdin in BAD_INPUT:
        res = kv(*args, input=stdin)
        assert res.code == 2, (what, res)
        assert_one_error(res, 2)
        assert res.out == "", (what, res)
    assert snapshot(kv) == before


def test_debug_shows_the_traceback(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = provider_url("rocksdb", tmp_path, request)
    assert run_process("--url", url, "table", "create", "t", "--field", "k:string", "--pk", "k").code == 0
    plain = run_process("--url", url, "get", "nope", "k=1")
    assert_one_error(plain, 1)
    debug = run_process("--url", url, "--debug", "get", "nope", "k=1")
    assert debug.code != 0 and "Traceback" in debug.err and "TableNotFoundError" in debug.err


def test_no_arguments_show_the_help(tmp_path: Path) -> None:
    runner = CliRunner()
    for args, expected in (([], "table"), (["table"], "describe"), (["config"], "show")):
        res = Result.of(runner.invoke(app, args, env={"COLUMNS": "100"}))
        assert res.code == 2 and "Usage: " in res.out and expected in res.out, (args, res)
        assert "error" not in res.out + res.err


def test_not_done_exits_1(kv: Kvctl) -> None:
    for args in (
        ["get", "nope", "id=1"],
        ["table", "create", "orders", "--field", "a:string", "--pk", "a"],
        ["put", "orders", '{"region": "eu", "id": 1}', "--if-absent"],
        ["update", "orders", "region=xx", "id=1", "--set", "status=a"],
    ):
        assert_one_error(kv(*args), 1)


def test_unknown_scheme_is_a_usage_error() -> None:
    res = Result.of(CliRunner().invoke(app, ["--url", "nosuch://x", "table", "list"]))
    assert_one_error(res, 2)
    assert "nosuch" in res.err


def test_unreachable_server_exits_3(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    provider_url("postgres", tmp_path, request)  # skips without the PostgreSQL provider
    url = "postgresql+psycopg://kv:secret@127.0.0.1:1/kv?connect_timeout=2"
    res = Result.of(CliRunner().invoke(app, ["--url", url, "table", "list"]))
    assert_one_error(res, 3)
    assert "secret" not in res.err

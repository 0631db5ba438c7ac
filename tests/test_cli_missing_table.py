"""A missing table exits 1 with one line that shows the command listing the tables
(CLI.md: ``error: table 'T' does not exist (kvctl table list shows the tables)``), for
every command that names a table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import Kvctl, assert_one_error, provider_url

HINT = "error: table 'nope' does not exist (kvctl table list shows the tables)"

COMMANDS = [
    ["get", "nope", "k=a"],
    ["get", "nope", "k=a", "--watch", "--timeout", "1s"],
    ["scan", "nope"],
    ["scan", "nope", "--versions"],
    ["count", "nope"],
    ["count", "nope", "--group-by", "v"],
    ["stats", "nope"],
    ["put", "nope", '{"k": "a"}'],
    ["delete", "nope", "k=a"],
    ["delete", "nope", "--all", "--yes"],
    ["update", "nope", "k=a", "--set", "v=1"],
    ["incr", "nope", "k=a", "--column", "v"],
    ["cas", "nope", "k=a", "--column", "v", "--expect-null", "--set", "1"],
    ["table", "describe", "nope"],
    ["table", "drop", "nope", "--yes"],
    ["table", "alter", "nope", "--add-index", "v"],
    ["table", "sweep", "nope"],
    ["table", "freeze", "nope"],
    ["table", "unfreeze", "nope"],
    ["watch", "nope", "--count", "1", "--timeout", "1s"],
    ["changes", "nope"],
]


@pytest.fixture
def kv(tmp_path: Path, request: pytest.FixtureRequest) -> Kvctl:
    """A RocksDB store holding one table, ``t``."""
    kv = Kvctl(provider_url("rocksdb", tmp_path, request))
    kv.ok("table", "create", "t", "--field", "k:string", "--field", "v:long", "--pk", "k")
    return kv


@pytest.mark.parametrize("args", COMMANDS, ids=lambda args: " ".join(args[:1] + args[2:3]))
def test_missing_table_hints_table_list(kv: Kvctl, args: list[str]) -> None:
    res = kv(*args)
    assert_one_error(res, 1)
    assert res.err.strip() == HINT


def test_bulk_put_and_apply_hint_table_list(kv: Kvctl, tmp_path: Path) -> None:
    rows = tmp_path / "rows.ndjson"
    rows.write_text('{"k": "a"}\n')
    for args in (["put", "nope", "--file", str(rows)], ["apply", "nope", "--file", str(rows)]):
        res = kv(*args)
        assert res.code == 1, (args, res)
        assert HINT in res.err.splitlines(), (args, res)


def test_txn_missing_table_hints_table_list(kv: Kvctl) -> None:
    doc = {"ops": [{"op": "put", "table": "t", "row": {"k": "a"}}, {"op": "put", "table": "nope", "row": {"k": "a"}}]}
    res = kv("txn", input=json.dumps(doc))
    assert_one_error(res, 1)
    assert "(kvctl table list shows the tables)" in res.err
    failed = json.loads(res.out)
    assert failed["ok"] is False and failed["failed_op"] == 1
    assert failed["reason"] == "table 'nope' does not exist (kvctl table list shows the tables)"
    assert kv.ok("count", "t").out.strip() == "0"

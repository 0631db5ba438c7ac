"""Rough edges a new user hits (issue 17): empty key fields and ``433.0`` in CSV/TSV,
CSV errors inside multi-line records, ``null`` on the command line, invalid table
names, and hints that speak ``kvctl`` with keys as ``col=value`` words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import ORDERS_FIELDS, PROVIDER_KINDS, Kvctl, Result, assert_one_error, provider_url

EXTRA_FIELDS = ["--field", "n:int", "--field", "big:long", "--field", "note:string"]


@pytest.fixture
def kv(request: pytest.FixtureRequest, tmp_path: Path) -> Kvctl:
    """kvctl on a fresh RocksDB store with an empty ``orders`` table (front-end
    behaviour: one provider is enough)."""
    runner = Kvctl(provider_url("rocksdb", tmp_path, request))
    runner.ok("table", "create", "orders", *ORDERS_FIELDS, *EXTRA_FIELDS)
    return runner


def rows(kv: Kvctl) -> list[dict]:
    return [json.loads(line) for line in kv.ok("scan", "orders", "-o", "ndjson").lines()]


def put_file(kv: Kvctl, path: Path, text: str) -> Result:
    path.write_text(text)
    return kv("put", "orders", "--file", str(path))


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [
        ("a.csv", "region,id,status\neu,1,a\n,2,b\n", "line 3, column 'region'"),
        ("b.csv", "id,region\n1,eu\n\n2,\n", "line 4, column 'region'"),
        ("c.tsv", "region\tid\nus\t1\nus\t\n", "line 3, column 'id'"),
        ("d.csv", 'region,id,status\neu,1,"two\nlines"\n"",2,x\n', "line 4, column 'region'"),
    ],
)
def test_an_empty_key_field_is_an_error(kv: Kvctl, tmp_path: Path, name: str, text: str, where: str) -> None:
    res = put_file(kv, tmp_path / name, text)
    assert_one_error(res, 2)
    assert where in res.err and "empty" in res.err
    assert rows(kv) == []


def test_a_json_row_may_still_carry_an_empty_string_key(kv: Kvctl, tmp_path: Path) -> None:
    assert put_file(kv, tmp_path / "a.json", '[{"region": "", "id": 1}]').code == 0
    assert [(r["region"], r["id"]) for r in rows(kv)] == [("", 1)]
    assert kv.ok("put", "orders", '{"region": "", "id": 2}').out == "1\n"


def test_csv_integers_may_be_written_as_whole_floats(kv: Kvctl, tmp_path: Path) -> None:
    text = "region,id,n,big,total\neu,1.0,433.0,9007199254740993.00,433.0\neu,2,-0.0,,\nus,3, 7.0 ,,\n"
    assert put_file(kv, tmp_path / "a.csv", text).code == 0
    got = {r["id"]: (r["n"], r["big"], r["total"]) for r in rows(kv)}
    assert got == {1: (433, 9007199254740993, 433.0), 2: (0, None, None), 3: (7, None, None)}
    (tmp_path / "b.tsv").write_text("region\tid\tn\nap\t4\t12.000\n")
    assert kv.ok("put", "orders", "--file", str(tmp_path / "b.tsv")).out == "1\n"


@pytest.mark.parametrize(
    ("value", "column"),
    [("433.5", "n"), ("433.", "n"), ("4.33e2", "n"), ("1.0e3", "big"), ("3000000000.0", "n"), ("nan", "n")],
)
def test_a_fractional_or_out_of_range_csv_integer_is_an_error(
    kv: Kvctl, tmp_path: Path, value: str, column: str
) -> None:
    res = put_file(kv, tmp_path / "a.csv", f"region,id,{column}\neu,1,1\neu,2,{value}\n")
    assert_one_error(res, 2)
    assert f"line 3, column '{column}'" in res.err
    assert rows(kv) == []


def test_whole_floats_stay_errors_on_the_command_line(kv: Kvctl) -> None:
    assert_one_error(kv("get", "orders", "region=eu", "id=1.0"), 2)
    assert_one_error(kv("put", "orders", '{"region": "eu", "id": 1, "n": "433.0"}'), 2)


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ('region,id,note\neu,1,"one\ntwo\nthree"x\n', 2),  # bad quote at the end of a three-line record
        ('region,id,note\neu,1,ok\n\neu,2,"a\nb"c\n', 4),  # after a blank line
        ('region,id,note\neu,1,"never closed\neu,2,x\n', 2),  # unexpected end of data
        ('"reg\nion"x,id\neu,1\n', 1),  # in the header
    ],
)
def test_a_csv_error_names_the_line_its_record_starts_on(kv: Kvctl, tmp_path: Path, text: str, line: int) -> None:
    res = put_file(kv, tmp_path / "a.csv", text)
    assert_one_error(res, 2)
    assert f"a.csv line {line}: malformed CSV" in res.err


def test_a_bad_value_in_a_multi_line_record_names_its_first_line(kv: Kvctl, tmp_path: Path) -> None:
    res = put_file(kv, tmp_path / "a.csv", 'region,id,note,n\neu,1,"a\nb\nc",x\n')
    assert_one_error(res, 2)
    assert "line 2, column 'n'" in res.err


def test_null_on_the_command_line_is_null_in_string_columns_too(kv: Kvctl) -> None:
    kv.ok("put", "orders", '{"region": "eu", "id": 1, "status": "open", "note": "x", "n": 1}')
    kv.ok("update", "orders", "region=eu", "id=1", "--set", "status=null", "--set", "note=null", "--set", "n=null")
    row = rows(kv)[0]
    assert (row["status"], row["note"], row["n"]) == (None, None, None)
    assert kv.ok("count", "orders", "--where", "status is null and note is null").out == "1\n"
    # cas: null as the expected and as the new value
    assert kv.ok("cas", "orders", "region=eu", "id=1", "--column", "note", "--expect", "null", "--set", "y").out == (
        "true\n"
    )
    assert kv.ok("cas", "orders", "region=eu", "id=1", "--column", "note", "--expect", "y", "--set", "null").out == (
        "true\n"
    )
    assert rows(kv)[0]["note"] is None
    # the text "null" can still be written as JSON
    kv.ok("put", "orders", '{"region": "eu", "id": 1, "note": "null"}')
    assert rows(kv)[0]["note"] == "null"


def test_null_in_a_key_column(kv: Kvctl) -> None:
    # a string key column is never null: there `null` is the text
    kv.ok("put", "orders", '{"region": "null", "id": 1, "status": "s"}')
    assert json.loads(kv.ok("get", "orders", "region=null", "id=1").out)["status"] == "s"
    assert kv.ok("count", "orders", "--prefix", "region=null").out == "1\n"
    res = kv("get", "orders", "region=eu", "id=null")
    assert_one_error(res, 2)
    assert "key column 'id' cannot be null" in res.err


BAD_NAME = "x; drop table y"
COMMANDS_WITH_A_TABLE: list[list[str]] = [
    ["scan", BAD_NAME],
    ["count", BAD_NAME],
    ["get", BAD_NAME, "id=1"],
    ["put", BAD_NAME, "{}"],
    ["put", BAD_NAME, "--file", "-"],
    ["delete", BAD_NAME, "id=1"],
    ["delete", BAD_NAME, "--all", "--yes"],
    ["update", BAD_NAME, "id=1", "--set", "a=1"],
    ["incr", BAD_NAME, "id=1", "--column", "a"],
    ["cas", BAD_NAME, "id=1", "--column", "a", "--expect", "1", "--set", "2"],
    ["table", "create", BAD_NAME, "--field", "a:string", "--pk", "a"],
    ["table", "describe", BAD_NAME],
    ["table", "alter", BAD_NAME, "--add-index", "a"],
    ["table", "verify", BAD_NAME],
    ["table", "drop", BAD_NAME, "--yes"],
    ["export", BAD_NAME, "--out", "/tmp/nowhere"],
    ["import", BAD_NAME, "--in", "/tmp/nowhere"],
]


@pytest.mark.parametrize("args", COMMANDS_WITH_A_TABLE, ids=lambda a: " ".join(a[:2]))
def test_an_invalid_table_name_is_bad_input_on_every_command(kv: Kvctl, args: list[str]) -> None:
    res = kv(*args, input='{"a": 1}')
    assert_one_error(res, 2)
    assert f"table name {BAD_NAME!r} is invalid" in res.err and res.out == ""
    reserved = kv(*[a if a != BAD_NAME else "kv_orders" for a in args], input='{"a": 1}')
    assert_one_error(reserved, 2)
    assert "reserved" in reserved.err


def test_an_invalid_table_name_in_txn_is_bad_input(kv: Kvctl) -> None:
    ops = {
        "ops": [
            {"op": "put", "table": "orders", "row": {"region": "eu", "id": 1}},
            {"op": "delete", "table": "a b", "key": {}},
        ]
    }
    res = kv("txn", input=json.dumps(ops))
    assert_one_error(res, 2)
    assert "op 1: table name 'a b' is invalid" in res.err and res.out == ""
    assert rows(kv) == []


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("status = 'open' and and", "unexpected 'and' at position 21"),
        ("total >= 100.5 or or region = 'eu'", "unexpected 'or' at position 19"),
        ("status = 'open' and", "unexpected end of expression at position 20"),
    ],
)
def test_where_errors_name_the_offending_token(kv: Kvctl, where: str, message: str) -> None:
    for command in (["scan", "orders"], ["count", "orders"], ["delete", "orders", "--yes"]):
        res = kv(*command, "--where", where)
        assert_one_error(res, 2)
        assert f"error: where: {message}" in res.err


@pytest.fixture(params=PROVIDER_KINDS)
def kv_each(request: pytest.FixtureRequest, tmp_path: Path) -> Kvctl:
    """kvctl on every provider (their write paths raise these errors), with
    ``orders`` holding ``region=eu id=1``."""
    runner = Kvctl(provider_url(request.param, tmp_path, request))
    runner.ok("table", "create", "orders", *ORDERS_FIELDS)
    runner.ok("put", "orders", '{"region": "eu", "id": 1}')
    return runner


def not_done(res: Result, text: str) -> None:
    assert_one_error(res, 1)
    assert text in res.err, res.err
    assert "('" not in res.err and "create_or_update" not in res.err and "=..." not in res.err


def test_errors_show_keys_as_col_value_words(kv_each: Kvctl) -> None:
    kv = kv_each
    exists = "a row with key region=eu id=1 already exists in 'orders'"
    not_done(kv("put", "orders", '{"region": "eu", "id": 1}', "--if-absent"), exists)
    res = kv(
        "put", "orders", "--file", "-", "--mode", "insert", input='{"region": "eu", "id": 2}\n{"region": "eu", "id": 1}'
    )
    not_done(res, f"stdin line 2: {exists}")
    res = kv("put", "orders", "--file", "-", "--mode", "insert", input='{"region": "a b", "id": 3}\n' * 2)
    not_done(res, "stdin line 2: key 'region=a b' id=3 appears twice in the input")
    not_done(kv("update", "orders", "region=eu", "id=1", "--set", "status=x", "--if-version", "9"),
             "row region=eu id=1 in 'orders' is at version 1, not 9")  # fmt: skip
    not_done(kv("delete", "orders", "region=eu", "id=1", "--if-version", "2"), "row region=eu id=1 in 'orders'")
    not_done(kv("put", "orders", '{"region": "us", "id": 1}', "--if-version", "1"),
             "no row with key region=us id=1 in 'orders' (expected version 1)")  # fmt: skip
    not_done(kv("get", "orders", "region=a b", "id=3"), "no row with key 'region=a b' id=3 in 'orders'")
    res = kv(
        "txn",
        input=json.dumps(
            {"ops": [{"op": "put", "table": "orders", "row": {"region": "eu", "id": 1}, "if_absent": True}]}
        ),
    )
    not_done(res, exists)
    assert json.loads(res.out)["reason"] == exists


def test_update_of_a_missing_row_shows_the_option_that_creates_it(kv_each: Kvctl) -> None:
    kv = kv_each
    res = kv("update", "orders", "region=us", "id=7", "--set", "status=new")
    not_done(res, "no row with key region=us id=7 in 'orders' to update; add --default '{}' to create it")
    assert kv.ok("update", "orders", "region=us", "id=7", "--set", "status=new", "--default", "{}").out == "1\n"
    assert json.loads(kv.ok("get", "orders", "region=us", "id=7").out)["status"] == "new"


def test_keys_of_every_type_read_as_words(kv: Kvctl) -> None:
    kv.ok("table", "create", "events", "--field", "ts:timestamp", "--field", "b:bytes", "--field", "ok:bool",
          "--field", "x:double", "--pk", "ts,b,ok,x")  # fmt: skip
    row = '{"ts": "2024-05-01T12:00:00+02:00", "b": "AAE=", "ok": true, "x": 1.5}'
    kv.ok("put", "events", row)
    res = kv("put", "events", row, "--if-absent")
    words = "ts=2024-05-01T10:00:00+00:00 b=b64:AAE= ok=true x=1.5"
    not_done(res, f"a row with key {words} already exists in 'events'")
    assert kv.ok("get", "events", *words.split()).lines()  # the words read back as the key

"""Every kvctl command through typer's CliRunner, on RocksDB and PostgreSQL."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from cli_support import ORDERS_FIELDS, PROVIDER_KINDS, Kvctl, provider_url


@pytest.fixture(params=PROVIDER_KINDS)
def kv(request: pytest.FixtureRequest, tmp_path: Path) -> Kvctl:
    """kvctl on a fresh store with an empty ``orders`` table."""
    runner = Kvctl(provider_url(request.param, tmp_path, request))
    runner.ok("table", "create", "orders", *ORDERS_FIELDS)
    return runner


def load_sample(kv: Kvctl, n: int = 10) -> None:
    rows = "\n".join(
        json.dumps(
            {"region": "eu" if i % 2 else "us", "id": i, "status": "open" if i % 3 else "closed", "total": i * 1.5}
        )
        for i in range(n)
    )
    assert kv.ok("put", "orders", "--file", "-", input=rows).out.strip() == str(n)


def ndjson(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_table_lifecycle(kv: Kvctl, tmp_path: Path) -> None:
    assert ndjson(kv.ok("table", "list").out) == [{"name": "orders"}]
    spec = json.loads(kv.ok("table", "describe", "orders", "-o", "json").out)
    assert spec["primary_key"] == ["region", "id"] and spec["indexes"] == ["status"]
    kv.ok("table", "alter", "orders", "--add-field", "note:string", "--add-index", "total", "--drop-index", "status")
    altered = json.loads(kv.ok("-o", "json", "table", "describe", "orders").out)
    assert {"name": "note", "type": "string"} in altered["fields"] and altered["indexes"] == ["total"]
    # describe -o json feeds back into --spec; removing a column is incompatible (exit 2)
    path = tmp_path / "orders.json"
    path.write_text(json.dumps({**altered, "indexes": ["status", "total"]}))
    kv.ok("table", "alter", "orders", "--spec", str(path))
    assert json.loads(kv.ok("table", "describe", "orders", "-o", "json").out)["indexes"] == ["status", "total"]
    path.write_text(json.dumps(spec))
    res = kv("table", "alter", "orders", "--spec", str(path))
    assert res.code == 2 and "note" in res.err
    toml = tmp_path / "t.toml"
    toml.write_text('primary_key = ["k"]\n[[fields]]\nname = "k"\ntype = "string"\n')
    kv.ok("table", "create", "t2", "--spec", str(toml))
    load_sample(kv, 3)
    assert ndjson(kv.ok("table", "list", "--counts").out) == [{"name": "orders", "rows": 3}, {"name": "t2", "rows": 0}]
    table_out = kv.ok("table", "describe", "orders", "-o", "table").out
    assert "region" in table_out and "timestamp" in table_out
    assert kv("table", "create", "t2", "--field", "k:string", "--pk", "k").code == 1
    kv.ok("table", "drop", "t2", "--yes")
    assert kv("table", "drop", "t2", "--yes").code == 1
    assert kv("table", "describe", "t2").code == 1


def test_table_verify(kv: Kvctl) -> None:
    load_sample(kv, 5)
    res = kv("table", "verify", "orders")
    if res.code == 2:
        assert "does not support verify" in res.err
    else:
        assert res.code == 0 and res.out == "" and "consistent" in res.err


def test_put_get_update_delete(kv: Kvctl) -> None:
    row = {"region": "eu", "id": 1, "status": "open", "total": 10, "data": "aGk=", "ts": "2024-05-01T12:00:00+02:00"}
    assert kv.ok("put", "orders", json.dumps(row)).out == "1\n"
    got = json.loads(kv.ok("get", "orders", "id=1", "region=eu", "-o", "json", "--versions").out)
    assert got == {**row, "total": 10.0, "ts": "2024-05-01T10:00:00+00:00", "_version": 1}
    assert kv.ok("put", "orders", '{"region":"eu","id":1,"status":"paid"}').out == "2\n"
    assert ndjson(kv.ok("get", "orders", "region=eu", "id=1", "--columns", "status").out) == [
        {"region": "eu", "id": 1, "status": "paid"}
    ]
    assert kv("put", "orders", '{"region":"eu","id":1}', "--if-absent").code == 1
    assert kv("put", "orders", '{"region":"eu","id":1,"total":1}', "--if-version", "1").code == 1
    assert kv.ok("put", "orders", '{"region":"eu","id":1,"total":1}', "--if-version", "2").out == "3\n"
    assert kv.ok("put", "orders", '{"region":"eu","id":1}', "--replace").out == "4\n"
    assert ndjson(kv.ok("get", "orders", "region=eu", "id=1").out)[0]["status"] is None
    assert kv.ok("update", "orders", "region=eu", "id=1", "--set", "status=x", "--set", "total=2.5").out == "5\n"
    res = kv("update", "orders", "region=eu", "id=1", "--set", "status=y", "--if-version", "4")
    assert res.code == 1 and res.err.startswith("error:")
    assert kv("update", "orders", "region=eu", "id=2", "--set", "status=y").code == 1
    assert kv.ok("update", "orders", "region=eu", "id=2", "--set", "status=y", "--default", '{"total": 3}').out == "1\n"
    assert ndjson(kv.ok("get", "orders", "region=eu", "id=2").out)[0]["total"] == 3.0
    # a missing row: nothing on stdout, exit 1
    res = kv("get", "orders", "region=eu", "id=99")
    assert res.code == 1 and res.out == "" and res.err.startswith("error: no row")
    assert kv.ok("delete", "orders", "region=eu", "id=2").out == "true\n"
    assert kv.ok("delete", "orders", "region=eu", "id=2").out == "false\n"
    assert kv("delete", "orders", "region=eu", "id=1", "--if-version", "1").code == 1
    assert kv.ok("delete", "orders", "region=eu", "id=1", "--if-version", "5").out == "true\n"


def test_incr_and_cas(kv: Kvctl) -> None:
    assert kv.ok("incr", "orders", "region=eu", "id=1", "--column", "total").out == "1.0\n"
    assert kv.ok("incr", "orders", "region=eu", "id=1", "--column", "total", "--by", "-3.5").out == "-2.5\n"
    res = kv("incr", "orders", "region=eu", "id=1", "--column", "status")
    assert res.code == 2
    assert (
        kv.ok("cas", "orders", "region=eu", "id=1", "--column", "status", "--expect-null", "--set", "a").out == "true\n"
    )
    res = kv("cas", "orders", "region=eu", "id=1", "--column", "status", "--expect", "b", "--set", "c")
    assert (res.code, res.out) == (1, "false\n")
    assert (
        kv.ok("cas", "orders", "region=eu", "id=1", "--column", "status", "--expect", "a", "--set", "c").out == "true\n"
    )
    # bare values whatever -o says
    assert kv.ok("-o", "json", "incr", "orders", "region=eu", "id=1", "--column", "total", "-o", "csv").out == "-1.5\n"


def test_scan_ranges_filters_and_formats(kv: Kvctl) -> None:
    load_sample(kv, 10)
    keys = [(r["region"], r["id"]) for r in ndjson(kv.ok("scan", "orders").out)]
    assert keys == sorted(keys) and len(keys) == 10
    eu = ndjson(kv.ok("scan", "orders", "--prefix", "region=eu").out)
    assert [r["id"] for r in eu] == [1, 3, 5, 7, 9]
    ranged = ndjson(kv.ok("scan", "orders", "--ge", "region=eu", "--ge", "id=3", "--lt", "region=us").out)
    assert [r["id"] for r in ranged] == [3, 5, 7, 9]
    le = ndjson(kv.ok("scan", "orders", "--gt", "region=eu", "--le", "region=us", "--le", "id=4").out)
    assert [(r["region"], r["id"]) for r in le] == [("us", 0), ("us", 2), ("us", 4)]
    where = ndjson(kv.ok("scan", "orders", "--where", "status = 'closed' and total >= 4.5").out)
    assert sorted(r["id"] for r in where) == [3, 6, 9]
    by_total = ndjson(kv.ok("scan", "orders", "--order-by", "status", "--desc", "--keys-only").out)
    assert by_total[0] == {"region": "us", "id": 8} and set(by_total[0]) == {"region", "id"}
    versions = ndjson(kv.ok("scan", "orders", "--columns", "total", "--versions", "--limit", "1").out)
    assert versions == [{"region": "eu", "id": 1, "total": 1.5, "_version": 1, "_expires_at": None}]
    assert kv.ok("scan", "orders", "--count", "--prefix", "region=us").out == "5\n"
    assert kv.ok("count", "orders", "--where", "status = 'open'").out == "6\n"
    as_json = json.loads(kv.ok("scan", "orders", "-o", "json").out)
    assert len(as_json) == 10 and as_json[0]["region"] == "eu"
    assert json.loads(kv.ok("scan", "orders", "-o", "json", "--prefix", "region=xx").out) == []
    rows = list(csv.reader(io.StringIO(kv.ok("scan", "orders", "-o", "csv", "--limit", "2").out)))
    assert rows[0] == ["region", "id", "status", "total", "data", "ts"] and rows[1][4:] == ["", ""]
    tsv = kv.ok("-o", "tsv", "scan", "orders", "--limit", "1").out.splitlines()
    assert tsv[1].split("\t")[:2] == ["eu", "1"]
    table = kv.ok("scan", "orders", "-o", "table", "--limit", "2").out
    assert "┃ region" in table and "null" in table and "\x1b[" not in table


def uses_index(explain: str, column: str) -> bool:
    """Whether a line of ``scan --explain`` output reads through the index on ``column``."""
    return any(re.search(rf"\bindex\b.*\b{column}\b", line, re.IGNORECASE) for line in explain.splitlines())


def test_explain_names_the_index_the_scan_uses(kv: Kvctl) -> None:
    load_sample(kv, 10)
    where = "status = 'open'"
    explained = kv.ok("scan", "orders", "--where", where, "--explain")
    assert uses_index(explained.out, "status"), explained.out
    assert not uses_index(kv.ok("scan", "orders", "--where", "total > 3", "--explain").out, "status")
    # the scan it describes finds exactly the rows a full read filtered by hand finds
    everything = ndjson(kv.ok("scan", "orders", "--all").out)
    by_index = ndjson(kv.ok("scan", "orders", "--where", where, "--all").out)
    assert by_index == [r for r in everything if r["status"] == "open"] and len(by_index) == 6
    ordered = ndjson(kv.ok("scan", "orders", "--where", where, "--order-by", "status", "--all").out)
    assert sorted(ordered, key=lambda r: (r["region"], r["id"])) == by_index


def test_values_read_the_same_in_every_format(kv: Kvctl) -> None:
    row = {"region": "eu", "id": 1, "total": 1.5, "data": "aGk=", "ts": "2024-05-01T12:00:00+02:00"}
    kv.ok("put", "orders", json.dumps(row))
    expected = {**row, "status": None, "ts": "2024-05-01T10:00:00+00:00"}
    assert ndjson(kv.ok("scan", "orders").out) == [expected]
    assert json.loads(kv.ok("scan", "orders", "-o", "json").out) == [expected]
    assert json.loads(kv.ok("get", "orders", "region=eu", "id=1", "-o", "json").out) == expected
    fields = ["eu", "1", "", "1.5", "aGk=", "2024-05-01T10:00:00+00:00"]  # null is an empty field
    assert list(csv.reader(io.StringIO(kv.ok("scan", "orders", "-o", "csv").out)))[1] == fields
    assert kv.ok("scan", "orders", "-o", "tsv").out.splitlines()[1].split("\t") == fields
    table = kv.ok("scan", "orders", "-o", "table").out  # values as typed on the command line
    for word in ("b64:aGk=", "2024-05-01T10:00:00+00:00", "null", "1.5"):
        assert word in table, table


def test_scan_pagination(kv: Kvctl) -> None:
    load_sample(kv, 7)
    seen: list[tuple[str, int]] = []
    args = ["scan", "orders", "--limit", "3", "--keys-only"]
    res = kv.ok(*args)
    while True:
        seen += [(r["region"], r["id"]) for r in ndjson(res.out)]
        if "--after" not in res.err:
            break
        assert res.err.startswith(f"{len(ndjson(res.out))} rows shown")
        token = res.err.split("--after ")[1].split()[0]
        res = kv.ok(*args, "--after", token)
    assert len(seen) == 7 and seen == sorted(seen)
    assert len(ndjson(kv.ok("scan", "orders", "--all").out)) == 7
    assert kv.ok("scan", "orders", "--limit", "7").err == ""  # exactly everything: the last page says done
    assert kv("scan", "orders", "--after", "garbage").code == 2


def test_bulk_put_formats(kv: Kvctl, tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text('region,id,status,total,data,ts\neu,1,"x, y",1.5,aGk=,2024-05-01\neu,2,,,,\n')
    (tmp_path / "b.tsv").write_text("region\tid\tstatus\nus\t1\tNA\n")
    (tmp_path / "c.json").write_text('[\n {"region": "ap", "id": 1, "total": 2},\n {"region": "ap", "id": 2}\n]')
    (tmp_path / "d.ndjson").write_text('{"region": "ap", "id": 3}\n\n{"region": "ap", "id": 4, "status": "s"}\n')
    for name, n in [("a.csv", 2), ("b.tsv", 1), ("c.json", 2), ("d.ndjson", 2)]:
        assert kv.ok("put", "orders", "--file", str(tmp_path / name), "--batch-size", "1").out == f"{n}\n"
    rows = {(r["region"], r["id"]): r for r in ndjson(kv.ok("scan", "orders").out)}
    assert rows[("eu", 1)]["status"] == "x, y" and rows[("eu", 1)]["ts"] == "2024-05-01T00:00:00+00:00"
    assert rows[("eu", 2)]["status"] == "" and rows[("eu", 2)]["total"] is None
    assert rows[("us", 1)]["status"] == "NA"
    assert rows[("ap", 4)]["status"] == "s"
    csv_in = "region,id,total\nxx,1,1\n"
    assert kv.ok("put", "orders", "--file", "-", "--format", "csv", input=csv_in).out == "1\n"
    assert kv.ok("put", "orders", "--file", "-", input='[{"region": "xx", "id": 2}]').out == "1\n"
    # --mode insert on an existing key: exit 1 naming the key; replace resets unset columns
    res = kv("put", "orders", "--file", str(tmp_path / "c.json"), "--mode", "insert")
    assert res.code == 1 and "key region=ap id=1 " in res.err and "nothing was written" in res.err
    kv.ok("put", "orders", "--file", str(tmp_path / "c.json"), "--mode", "replace")
    assert ndjson(kv.ok("get", "orders", "region=ap", "id=2", "--versions").out)[0]["_version"] == 2


def test_bulk_put_checks_everything_before_writing(kv: Kvctl, tmp_path: Path) -> None:
    cases = {
        "bad.csv": ("region,id,total\neu,1,1\neu,2,abc\n", "line 3, column 'total'"),
        "hdr.csv": ("region,id,nope\neu,1,1\n", "line 1, column 'nope'"),
        "nokey.csv": ("region,total\neu,1\n", "line 1"),
        "null.csv": ("region,id,total\neu,1,null\n", "line 2, column 'total'"),
        "bad.json": ('[{"region": "eu", "id": 1},\n\n {"region": "eu",\n  "id": "x"}]', "line 3, column 'id'"),
        "syntax.ndjson": ('{"region": "eu", "id": 1}\n{"region": \n', "line 2"),
        "notobj.ndjson": ('{"region": "eu", "id": 1}\n[1]\n', "line 2"),
        "bytes.ndjson": ('{"region": "eu", "id": 1, "data": "!!"}\n', "column 'data'"),
        "ts.csv": ("region,id,ts\neu,1,yesterday\n", "line 2, column 'ts'"),
        "fields.csv": ("region,id\neu,1,3\n", "line 2"),
        "unknown.txt": ("x", "--format"),
    }
    for name, (text, expected) in cases.items():
        (tmp_path / name).write_text(text)
        res = kv("put", "orders", "--file", str(tmp_path / name))
        assert res.code == 2, (name, res)
        assert res.err.count("\n") == 1 and res.err.startswith("error: ") and expected in res.err, (name, res.err)
        assert res.out == ""
    assert kv.ok("count", "orders").out == "0\n"


def test_txn(kv: Kvctl, tmp_path: Path) -> None:
    ops = {
        "ops": [
            {"op": "put", "table": "orders", "row": {"region": "eu", "id": 1, "total": 1}},
            {"op": "incr", "table": "orders", "key": {"region": "eu", "id": 1}, "column": "total", "by": 2},
            {"op": "update", "table": "orders", "key": {"region": "eu", "id": 1}, "set": {"status": "x"}},
            {"op": "put", "table": "orders", "row": {"region": "eu", "id": 2}, "if_absent": True},
            {"op": "delete", "table": "orders", "key": {"region": "eu", "id": 3}},
        ]
    }
    (tmp_path / "t.json").write_text(json.dumps(ops))
    res = kv.ok("txn", "--file", str(tmp_path / "t.json"))
    assert json.loads(res.out) == {"ok": True, "results": [1, 3.0, 3, 1, False]}
    failing = {
        "ops": [
            {"op": "put", "table": "orders", "row": {"region": "eu", "id": 5}},
            {"op": "put", "table": "orders", "row": {"region": "eu", "id": 1}, "if_version": 1},
        ]
    }
    res = kv("txn", input=json.dumps(failing))
    assert res.code == 1 and res.err.startswith("error:")
    out = json.loads(res.out)
    assert out["ok"] is False and out["failed_op"] == 1 and "version" in out["reason"]
    assert kv("get", "orders", "region=eu", "id=5").code == 1  # nothing applied
    res = kv("txn", input=json.dumps({"ops": [{"op": "put", "table": "nope", "row": {}}]}))
    assert res.code == 1 and json.loads(res.out)["failed_op"] == 0
    assert kv.ok("count", "orders").out == "2\n"

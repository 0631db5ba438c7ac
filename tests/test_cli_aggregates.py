"""``kvctl count --group-by`` and ``kvctl stats`` on RocksDB and PostgreSQL (CLI.md)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from cli_support import PROVIDER_KINDS, Kvctl, assert_one_error, provider_url

ROWS = """region,id,status,total,created,qty
eu,1,open,10.5,2024-01-01T00:00:00Z,3
eu,2,closed,,2024-02-01T00:00:00+02:00,
us,3,open,7.25,,5
us,4,,1,2024-03-01,7
Zürich,5,open,2,,1
Ärhus,6,open,2.5,,2147483647
"""


@pytest.fixture(params=PROVIDER_KINDS)
def kv(request: pytest.FixtureRequest, tmp_path: Path) -> Kvctl:
    """kvctl on a fresh store with an ``orders`` table of six rows (non-ASCII regions,
    nulls, timestamps in other zones)."""
    runner = Kvctl(provider_url(request.param, tmp_path, request))
    runner.ok(
        "table", "create", "orders", "--field", "region:string", "--field", "id:long", "--field", "status:string",
        "--field", "total:double", "--field", "created:timestamp", "--field", "qty:int", "--pk", "region,id",
    )  # fmt: skip
    path = tmp_path / "orders.csv"
    path.write_text(ROWS, encoding="utf-8")
    assert runner.ok("put", "orders", "--file", str(path)).out.strip() == "6"
    return runner


def test_count_group_by_orders_groups_as_keys(kv: Kvctl) -> None:
    # Strings by UTF-8 bytes ("us" < "Zürich" < "Ärhus"), nulls first; a string column's
    # empty CSV field is the empty string, not null.
    got = json.loads(kv.ok("count", "orders", "--group-by", "region", "-o", "json").out)
    assert got == [
        {"region": "Zürich", "count": 1},
        {"region": "eu", "count": 2},
        {"region": "us", "count": 2},
        {"region": "Ärhus", "count": 1},
    ]
    lines = kv.ok("count", "orders", "--group-by", "status,region", "-o", "ndjson").lines()
    assert [json.loads(line) for line in lines][:2] == [
        {"status": "", "region": "us", "count": 1},
        {"status": "closed", "region": "eu", "count": 1},
    ]
    assert len(lines) == 6


def test_count_group_by_nulls_first_and_where(kv: Kvctl) -> None:
    got = json.loads(kv.ok("count", "orders", "--group-by", "qty", "--where", "id > 1", "-o", "json").out)
    assert got == [
        {"qty": None, "count": 1},
        {"qty": 1, "count": 1},
        {"qty": 5, "count": 1},
        {"qty": 7, "count": 1},
        {"qty": 2147483647, "count": 1},
    ]
    text = kv.ok("count", "orders", "--group-by", "status", "--prefix", "region=eu", "-o", "csv").out
    assert list(csv.reader(io.StringIO(text))) == [["status", "count"], ["closed", "1"], ["open", "1"]]
    tsv = kv.ok("count", "orders", "--group-by", "status", "--prefix", "region=eu", "-o", "tsv").out
    assert tsv.splitlines() == ["status\tcount", "closed\t1", "open\t1"]
    table = kv.ok("count", "orders", "--group-by", "status", "-o", "table").out
    assert "count" in table and "closed" in table
    assert kv.ok("count", "orders", "--group-by", "status", "--where", "id > 100", "-o", "json").out.strip() == "[]"
    assert kv.ok("count", "orders", "--where", "id > 1").out.strip() == "5"  # without --group-by: a bare count


def test_stats_whole_table(kv: Kvctl) -> None:
    got = json.loads(kv.ok("stats", "orders", "-o", "json").out)
    assert got == {
        "count": 6,
        "id": {"min": 1, "max": 6, "nulls": 0, "sum": 21, "avg": 3.5},
        "total": {"min": 1.0, "max": 10.5, "nulls": 1, "sum": 23.25, "avg": 4.65},
        "created": {"min": "2024-01-01T00:00:00+00:00", "max": "2024-03-01T00:00:00+00:00", "nulls": 3},
        "qty": {"min": 1, "max": 2147483647, "nulls": 1, "sum": 2147483663, "avg": 2147483663 / 5},
    }
    assert isinstance(got["qty"]["sum"], int)


def test_stats_group_by_and_columns(kv: Kvctl) -> None:
    lines = kv.ok("stats", "orders", "--group-by", "status", "--column", "total", "--column", "region").lines()
    first = json.loads(lines[0])
    assert first == {
        "status": "",
        "count": 1,
        "total": {"min": 1.0, "max": 1.0, "nulls": 0, "sum": 1.0, "avg": 1.0},
        "region": {"min": "us", "max": "us", "nulls": 0},
    }
    closed = json.loads(lines[1])
    assert closed["total"] == {"min": None, "max": None, "nulls": 1, "sum": None, "avg": None}
    text = kv.ok("stats", "orders", "--group-by", "region", "--column", "created", "-o", "csv").out
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0]) == ["region", "count", "created.min", "created.max", "created.nulls"]
    assert rows[1] == {
        "region": "eu",
        "count": "2",
        "created.min": "2024-01-01T00:00:00+00:00",
        "created.max": "2024-01-31T22:00:00+00:00",
        "created.nulls": "0",
    }
    empty = kv.ok("stats", "orders", "--where", "id > 100", "--column", "total", "-o", "json").out
    assert json.loads(empty) == {"count": 0, "total": {"min": None, "max": None, "nulls": 0, "sum": None, "avg": None}}


@pytest.mark.parametrize(
    "args",
    [
        ("count", "orders", "--group-by", "nope"),
        ("stats", "orders", "--column", "nope"),
        ("stats", "orders", "--group-by", "status", "--column", "status"),
        ("stats", "orders", "--group-by", "status,status"),
        ("count", "orders", "--group-by", "status", "--where", "status = 1"),
    ],
)
def test_bad_input(kv: Kvctl, args: tuple[str, ...]) -> None:
    assert_one_error(kv(*args), 2)

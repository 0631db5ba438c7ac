"""Scans ordered by a column without an index (spi/sorting.py; CLI.md, "Sorting without
an index"): the external merge sort of memory and RocksDB, PostgreSQL's sort in the
server, and ``kvctl scan --order-by`` with its stderr note."""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_support import ORDERS_FIELDS, PROVIDER_KINDS, Kvctl, assert_one_error, provider_url

import spi
from spi.sorting import StoreSort, explain_sorted, sorted_scan
from spi.types import sort_key

SPEC = spi.TableSpec(
    "t",
    [
        spi.Field("g", "string"),
        spi.Field("n", "long"),
        spi.Field("v", "double"),
        spi.Field("w", "double"),
        spi.Field("s", "string"),
        spi.Field("ts", "timestamp"),
        spi.Field("b", "bytes"),
    ],
    ["g", "n"],
    indexes=["w"],
)
VALUES = [None, -0.0, 0.0, 1.5, -2.0, math.nan, math.inf, 1.5, None, 7.0, -math.inf]
ROWS = [
    {
        "g": "ab"[i % 2],
        "n": 70 - i,
        "v": VALUES[i % len(VALUES)],
        "w": VALUES[i % len(VALUES)],  # the same values, indexed: the order sorted_scan must give
        "s": ["é", None, "a\x7fb"][i % 3],
        "ts": dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=i),
        "b": bytes([i % 4, 0]),
    }
    for i in range(70)
]


def expected_keys(rows: list[dict[str, Any]], descending: bool = False) -> list[tuple[str, int]]:
    """Keys in the contract's order by ``v``, worked out independently: nulls first,
    -0.0 equal to 0.0, NaN above every number, the key as tie-break."""
    order = sorted(rows, key=lambda r: (r["v"] is not None, sort_key(r["v"] or 0.0), r["g"], r["n"]))
    keys = [(r["g"], r["n"]) for r in order]
    return keys[::-1] if descending else keys


def keys(rows: Iterator[spi.Row]) -> list[tuple[str, int]]:
    return [(r["g"], r["n"]) for r in rows]


@pytest.fixture(params=["memory", *PROVIDER_KINDS])
def provider(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A provider whose table ``t`` holds ``ROWS`` (one row at version 2)."""
    url = "memory://" if request.param == "memory" else provider_url(request.param, tmp_path, request)
    with spi.connect(url) as p:
        p.admin.create(SPEC)
        handle = p.table("t")
        handle.load(ROWS)
        handle.update(("a", 70), {"s": "x"})
        yield p


def described(rows: Iterator[spi.Row]) -> list[str]:
    """Each row's version and values as text (NaN equals NaN)."""
    return [f"{r.version} {r.to_dict()!r}" for r in rows]


def test_sorted_scans_order_as_an_index_does(provider: Any) -> None:
    table = provider.table("t")
    for descending in (False, True):
        indexed = keys(table.scan(order_by="w", descending=descending))
        assert indexed == expected_keys(ROWS, descending)
        got = sorted_scan(table, order_by="v", descending=descending, run_rows=2)
        assert got.count == len(ROWS)
        assert keys(got) == indexed and got.next_token is None
    assert described(sorted_scan(table, order_by="v", run_rows=3)) == described(table.scan(order_by="w"))


def test_sort_spills_runs_and_merges_them_in_levels(provider: Any) -> None:
    table = provider.table("t")
    got = sorted_scan(table, order_by="v", run_rows=2)
    assert keys(got) == expected_keys(ROWS)
    if isinstance(table, StoreSort):  # PostgreSQL sorts in the server
        assert got.spilled == 0
        return
    assert got.spilled == 34  # the last run stays in memory; 32 (FAN_IN) were merged into one longer run
    assert sorted_scan(table, order_by="v", run_rows=70).spilled == 0  # one run: in memory
    top = sorted_scan(table, order_by="v", limit=3, run_rows=8)  # limit + 1 <= half a run: top-k, no files
    assert keys(top) == expected_keys(ROWS)[:3] and top.spilled == 0 and top.count == len(ROWS)


def test_limits_tokens_filters_and_projections(provider: Any) -> None:
    table = provider.table("t")
    where = spi.col("s").not_null()
    rng = spi.Range.prefix(("b",))
    for descending in (False, True):
        matching = [r for r in ROWS if r["s"] is not None and r["g"] == "b"]
        expected = expected_keys(matching, descending)
        pages, after = [], None
        while True:
            page = sorted_scan(
                table,
                rng,
                where=where,
                order_by="v",
                descending=descending,
                limit=9,
                after=after,
                columns=["s"],
                run_rows=4,
            )
            rows = list(page)
            assert page.count == len(matching) and all(set(r) == {"g", "n", "s"} for r in rows)
            pages.append(keys(iter(rows)))
            after = page.next_token
            if after is None:
                break
        assert [k for p in pages for k in p] == expected and all(len(p) == 9 for p in pages[:-1]) and len(pages) > 1
    nothing = sorted_scan(table, order_by="v", limit=0)
    assert list(nothing) == [] and nothing.count == len(ROWS) and nothing.next_token is not None
    assert keys(sorted_scan(table, order_by="v", after=nothing.next_token)) == expected_keys(ROWS)


def test_sorted_scan_in_a_transaction_and_bad_arguments(provider: Any) -> None:
    table = provider.table("t")
    with provider.transaction() as tx:
        assert keys(sorted_scan(tx.table("t"), order_by="v", limit=5, run_rows=2)) == expected_keys(ROWS)[:5]
    with pytest.raises(spi.InvalidFieldError, match="did you mean 'v'"):
        sorted_scan(table, order_by="vv")
    by_s = sorted_scan(table, order_by="s", limit=1)
    assert len(list(by_s)) == 1 and by_s.next_token is not None  # the token comes once the rows are read
    with pytest.raises(spi.InvalidFieldError, match="another order"):
        sorted_scan(table, order_by="v", after=by_s.next_token)
    with pytest.raises(spi.InvalidFieldError, match="neither a key column nor indexed"):
        table.scan(order_by="v")  # Table.scan keeps the contract (SPI.md)
    assert "sort: every matching row by v (nulls first), then key, descending" in explain_sorted(
        table, order_by="v", descending=True
    )


# ---------------------------------------------------------------- kvctl scan --order-by
TOTALS = [3.0, None, 1.5, 3.0, -1.0, None, 0.0, 2.0, 3.0, -0.0, 9.5, 1.5]
NOTE = "sorted {n} rows (no index on total; kvctl table alter orders --add-index total makes this a scan)"


@pytest.fixture(params=PROVIDER_KINDS)
def kv(request: pytest.FixtureRequest, tmp_path: Path) -> Kvctl:
    """kvctl with ``orders`` holding twelve rows; ``total`` has no index."""
    runner = Kvctl(provider_url(request.param, tmp_path, request))
    runner.ok("table", "create", "orders", *ORDERS_FIELDS)
    rows = [
        {"region": "eu" if i % 2 else "us", "id": i, "total": t, "status": "open" if i % 3 else "done"}
        for i, t in enumerate(TOTALS)
    ]
    runner.ok("put", "orders", "--file", "-", "--format", "ndjson", input="\n".join(map(json.dumps, rows)))
    return runner


def cli_keys(out: str) -> list[tuple[str, int]]:
    return [(r["region"], r["id"]) for r in map(json.loads, out.splitlines())]


def cli_expected(where: Any = lambda i: True, descending: bool = False) -> list[tuple[str, int]]:
    rows = [{"g": "eu" if i % 2 else "us", "n": i, "v": t} for i, t in enumerate(TOTALS) if where(i)]
    return expected_keys(rows, descending)


def test_scan_order_by_a_column_without_an_index(kv: Kvctl) -> None:
    first = kv.ok("scan", "orders", "--order-by", "total", "--limit", "5", "-o", "ndjson")
    assert cli_keys(first.out) == cli_expected()[:5]
    note, hint = first.err.splitlines()
    assert note == NOTE.format(n=12)  # every matching row, whatever --limit shows
    token = re.search(r"--after (\S+)", hint)
    assert hint.startswith("5 rows shown; more may remain") and token is not None
    rest = kv.ok("scan", "orders", "--order-by", "total", "--after", token[1], "--all", "-o", "ndjson")
    assert cli_keys(rest.out) == cli_expected()[5:] and rest.err.splitlines() == [NOTE.format(n=12)]
    where = ["--where", "status = 'open'", "--desc", "--all"]
    desc = kv.ok("scan", "orders", "--order-by", "total", *where, "-o", "ndjson")
    assert cli_keys(desc.out) == cli_expected(lambda i: i % 3 != 0, descending=True)
    assert desc.err.strip() == NOTE.format(n=8)
    csv = kv.ok("scan", "orders", "--order-by", "total", "--keys-only", "-o", "csv").out.splitlines()
    assert csv[0] == "region,id" and [tuple(line.split(",")) for line in csv[1:]] == [
        (g, str(n)) for g, n in cli_expected()
    ]
    assert "sort: every matching row by total" in kv.ok("scan", "orders", "--order-by", "total", "--explain").out
    assert_one_error(res := kv("scan", "orders", "--order-by", "totl"), 2)
    assert "did you mean 'total'" in res.err
    kv.ok("table", "alter", "orders", "--add-index", "total")
    indexed = kv.ok("scan", "orders", "--order-by", "total", "--all", "-o", "ndjson")
    assert cli_keys(indexed.out) == cli_expected() and indexed.err == ""

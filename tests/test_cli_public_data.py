"""Issue 26, the CLI on real public data (the CSV files of vega_datasets), on RocksDB
and PostgreSQL: ``table create --from`` infers each column's type, ``put --file``
loads (``--null NA``; the report of keys met more than once), and ``count
--group-by`` / ``stats --group-by`` agree with the same figures computed here from
the file as the csv module reads it. (``kvctl import`` is Spark's: tests/test_spark_cli.py.)"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest
from cli_support import PROVIDER_KINDS, Kvctl, provider_url
from public_data import csv_rows, vega_csv


@pytest.fixture(params=PROVIDER_KINDS)
def kv(request: pytest.FixtureRequest, tmp_path: Path) -> Kvctl:
    """kvctl on a fresh, empty store."""
    return Kvctl(provider_url(request.param, tmp_path, request))


def create_from(kv: Kvctl, table: str, path: Path, pk: str, *options: str) -> dict[str, str]:
    """``table create TABLE --from PATH --pk PK``: the inferred type of every column."""
    spec = json.loads(kv.ok("table", "create", table, "--from", str(path), "--pk", pk, *options).out)
    assert spec["primary_key"] == pk.split(",")
    return {f["name"]: f["type"] for f in spec["fields"]}


def number(text: str | None) -> float | None:
    """A CSV field as a number; empty (or null) as None."""
    return float(text) if text else None


def group_order(value: Any) -> tuple[bool, Any]:
    """How groups are ordered: as key values are, nulls first (strings by UTF-8 bytes)."""
    return (value is not None, value.encode() if isinstance(value, str) else value)


def expected_counts(rows: list[dict[str, Any]], column: str) -> list[dict[str, Any]]:
    """``count --group-by column`` computed over ``rows``."""
    counts = Counter(r[column] for r in rows)
    return [{column: value, "count": counts[value]} for value in sorted(counts, key=group_order)]


def check_stats(got: list[dict[str, Any]], rows: list[dict[str, Any]], by: str, column: str) -> None:
    """``stats --group-by by --column column`` against the figures computed over ``rows``
    (the column's values as numbers; sums and averages to floating-point rounding)."""
    groups: dict[Any, list[float | None]] = defaultdict(list)
    for r in rows:
        groups[r[by]].append(number(r[column]))
    assert [g[by] for g in got] == sorted(groups, key=group_order)
    for g in got:
        values = groups[g[by]]
        present = [v for v in values if v is not None]
        stats = g[column]
        assert g["count"] == len(values) and stats["nulls"] == len(values) - len(present), g
        assert (stats["min"], stats["max"]) == (min(present), max(present)), g
        assert math.isclose(stats["sum"], math.fsum(present), rel_tol=1e-9), g
        assert math.isclose(stats["avg"], math.fsum(present) / len(present), rel_tol=1e-9), g


def test_airports_with_na_as_null(kv: Kvctl) -> None:
    path = vega_csv("airports.csv")
    rows = csv_rows(path, null="NA")
    types = create_from(kv, "airports", path, "iata", "--null", "NA")
    assert types == {
        "iata": "string",
        "name": "string",
        "city": "string",
        "state": "string",
        "country": "string",
        "latitude": "double",
        "longitude": "double",
    }
    loaded = kv.ok("put", "airports", "--file", str(path), "--null", "NA")
    assert loaded.out.strip() == str(len(rows)) == "3376" and "replaced" not in loaded.err
    assert json.loads(kv.ok("get", "airports", "iata=ROR", "-o", "json").out)["state"] is None
    got = json.loads(kv.ok("count", "airports", "--group-by", "state", "-o", "json").out)
    assert got == expected_counts(rows, "state") and got[0] == {"state": None, "count": 12}
    got = json.loads(kv.ok("stats", "airports", "--group-by", "country", "--column", "latitude", "-o", "json").out)
    check_stats(got, rows, "country", "latitude")
    texans = [r for r in rows if r["state"] == "TX"]
    where = kv.ok(
        "stats", "airports", "--group-by", "city", "--column", "longitude", "--where", "state = 'TX'", "-o", "json"
    )
    check_stats(json.loads(where.out), texans, "city", "longitude")


def test_seattle_weather_dates_that_are_not_iso_stay_strings(kv: Kvctl) -> None:
    path = vega_csv("seattle-weather.csv")
    rows = csv_rows(path)
    types = create_from(kv, "weather", path, "date")
    assert types == {
        "date": "string",  # 2012/01/01 is not ISO 8601
        "precipitation": "double",
        "temp_max": "double",
        "temp_min": "double",
        "wind": "double",
        "weather": "string",
    }
    assert kv.ok("put", "weather", "--file", str(path)).out.strip() == str(len(rows))
    assert json.loads(kv.ok("count", "weather", "--group-by", "weather", "-o", "json").out) == expected_counts(
        rows, "weather"
    )
    for column in ("temp_max", "precipitation"):
        got = kv.ok("stats", "weather", "--group-by", "weather", "--column", column, "-o", "json")
        check_stats(json.loads(got.out), rows, "weather", column)


def test_stocks_by_a_two_column_key(kv: Kvctl) -> None:
    path = vega_csv("stocks.csv")
    rows = csv_rows(path)
    assert create_from(kv, "stocks", path, "symbol,date") == {"symbol": "string", "date": "string", "price": "double"}
    assert kv.ok("put", "stocks", "--file", str(path)).out.strip() == str(len(rows)) == "560"
    got = json.loads(kv.ok("count", "stocks", "--group-by", "symbol", "-o", "json").out)
    assert got == expected_counts(rows, "symbol")
    got = json.loads(kv.ok("stats", "stocks", "--group-by", "symbol", "--column", "price", "-o", "json").out)
    check_stats(got, rows, "symbol", "price")
    msft = [r for r in rows if r["symbol"] == "MSFT"]
    prefix = kv.ok("count", "stocks", "--prefix", "symbol=MSFT", "--where", "price > 30")
    assert prefix.out.strip() == str(sum((number(r["price"]) or 0) > 30 for r in msft))


def test_la_riots_repeated_keys_are_reported_and_the_last_row_kept(kv: Kvctl) -> None:
    path = vega_csv("la-riots.csv")
    rows = csv_rows(path)
    types = create_from(kv, "riots", path, "last_name")
    assert (types["age"], types["death_date"], types["latitude"], types["race"]) == (
        "long",  # one age is empty: it does not count
        "timestamp",
        "double",
        "string",
    )
    kept = list({r["last_name"]: r for r in rows}.values())  # a later row replaces an earlier one
    loaded = kv.ok("put", "riots", "--file", str(path))
    assert loaded.out.strip() == str(len(kept)) == "58"
    replaced = len(rows) - len(kept)
    assert f"{len(rows)} rows read, {len(kept)} distinct keys written ({replaced} replaced" in loaded.err, loaded.err
    assert json.loads(kv.ok("count", "riots", "--group-by", "race", "-o", "json").out) == expected_counts(kept, "race")
    got = json.loads(kv.ok("stats", "riots", "--group-by", "gender", "--column", "age", "-o", "json").out)
    check_stats(got, kept, "gender", "age")  # the empty age is null

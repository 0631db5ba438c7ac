"""``spi.diff`` and ``spi.checksum``: the canonical row hash (PostgreSQL's, computed in
the server, equals Python's byte for byte), and comparisons of real stores (memory,
RocksDB files, the test PostgreSQL) against a naive diff of their full scans."""

from __future__ import annotations

import datetime as dt
import math
import random
from pathlib import Path
from typing import Any

import pytest
from copy_support import ORDERS, order_key, order_row
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spi
from spi.checksum import Checksum, check_hashed, checksum_rows, hash_of, row_hasher, segment_rows
from spi.diff import Difference, TableDiff, compare, plan
from spi.types import values_equal

UTC = dt.UTC
TYPES = spi.TableSpec(
    "types",
    [
        spi.Field("k", "long"),
        spi.Field("i", "int"),
        spi.Field("l", "long"),
        spi.Field("f", "float"),
        spi.Field("d", "double"),
        spi.Field("s", "string"),
        spi.Field("b", "bytes"),
        spi.Field("t", "bool"),
        spi.Field("ts", "timestamp"),
    ],
    ["k"],
)
EXTREMES: list[dict[str, Any]] = [
    {"i": -(2**31), "l": -(2**63), "f": -3.4028234663852886e38, "d": -1.7976931348623157e308},
    {"i": 2**31 - 1, "l": 2**63 - 1, "f": 3.4028234663852886e38, "d": 1.7976931348623157e308},
    {"f": -0.0, "d": -0.0, "s": "", "b": b"", "t": False},
    {"f": math.nan, "d": math.nan, "s": "żółw 🐢 \u00e9\u0301 \U0010ffff", "b": b"\x00" * 3 + b"\xff", "t": True},
    {"f": math.inf, "d": -math.inf, "ts": dt.datetime(1, 1, 1, tzinfo=UTC)},
    {"f": 1e-45, "d": 5e-324, "ts": dt.datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)},
    {"ts": dt.datetime(1969, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC), "s": "x" * 5000, "b": bytes(range(256)) * 9},
    {"ts": dt.datetime(2024, 5, 1, 12, 0, 0, 1, tzinfo=dt.timezone(dt.timedelta(hours=2)))},
    {},  # every non-key column null
]


def naive_diff(src: Any, dst: Any, table: str, columns: list[str], versions: bool = False) -> list[dict[str, Any]]:
    """Every difference, from both tables read whole (what :func:`compare` must find)."""
    spec = src.admin.get_spec(table)
    left = {tuple(r[k] for k in spec.primary_key): r for r in src.table(table).scan()}
    right = {tuple(r[k] for k in spec.primary_key): r for r in dst.table(table).scan()}
    out = []
    for key in sorted(left.keys() | right.keys()):
        named = dict(zip(spec.primary_key, key))
        a, b = left.get(key), right.get(key)
        if a is None or b is None:
            out.append({"table": table, "key": named, "only": "src" if b is None else "dst"})
            continue
        changed = [c for c in columns if not values_equal(a[c], b[c])]
        if versions and a.version != b.version:
            changed.append("_version")
        if changed:
            out.append({"table": table, "key": named, "changed": changed})
    return out


def found(diff: TableDiff) -> list[dict[str, Any]]:
    """The differences as naive_diff lists them (without the rows of a change)."""
    return [{k: v for k, v in d.as_dict().items() if k not in ("src", "dst")} for d in diff]


def fill(p: Any, spec: spi.TableSpec, rows: list[dict[str, Any]]) -> None:
    p.admin.create(spec)
    p.table(spec.name).load(rows)


def typed_rows() -> list[dict[str, Any]]:
    return [{"k": n, **values} for n, values in enumerate(EXTREMES)]


# ---------------------------------------------------------------- the row hash


def test_postgres_hashes_every_type_in_the_server_as_python_does(pg_factory: Any) -> None:
    pg = pg_factory()
    fill(pg, TYPES, typed_rows())
    table = pg.table("types")
    rows = list(table.scan())
    for versions in (False, True):
        hasher = row_hasher(TYPES, check_hashed(TYPES, None), versions)
        for row in rows:  # row by row: a mismatch names the value
            one = spi.Range.singleton((row["k"],))
            assert table.checksum(one, versions=versions) == Checksum(1, hash_of(hasher(row))), dict(row)
        assert table.checksum(versions=versions) == checksum_rows(rows, hasher)
        assert table.segments(size=2, versions=versions) == segment_rows(TYPES, rows, hasher, 2)
    for column in TYPES.columns[1:]:
        hasher = row_hasher(TYPES, (column,), False)
        assert table.checksum(columns=[column]) == checksum_rows(rows, hasher), column
    with spi.connect("memory://") as memory:  # the ordered-store engine hashes its own row structs
        fill(memory, TYPES, typed_rows())
        for versions in (False, True):
            assert memory.table("types").checksum(versions=versions) == table.checksum(versions=versions)
            assert memory.table("types").segments(size=3, versions=versions) == table.segments(
                size=3, versions=versions
            )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.fixed_dictionaries(
            {},
            optional={
                "i": st.integers(-(2**31), 2**31 - 1),
                "l": st.integers(-(2**63), 2**63 - 1),
                "f": st.floats(width=32),
                "d": st.floats(),
                "s": st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")),
                "b": st.binary(),
                "t": st.booleans(),
                "ts": st.datetimes(timezones=st.just(UTC)),
            },
        ),
        min_size=1,
        max_size=8,
    )
)
def test_server_and_python_hashes_agree_on_random_rows(pg_factory: Any, values: list[dict[str, Any]]) -> None:
    pg = pg_factory()
    fill(pg, TYPES, [{"k": n, **v} for n, v in enumerate(values)])
    table = pg.table("types")
    hasher = row_hasher(TYPES, check_hashed(TYPES, None), True)
    assert table.checksum(versions=True) == checksum_rows(table.scan(), hasher)


def test_int_long_and_float_double_hash_by_value() -> None:
    narrow = spi.TableSpec("n", [spi.Field("k", "int"), spi.Field("x", "int"), spi.Field("y", "float")], ["k"])
    wide = spi.TableSpec("n", [spi.Field("k", "long"), spi.Field("x", "long"), spi.Field("y", "double")], ["k"])
    with spi.connect("memory://") as a, spi.connect("memory://") as b:
        rows = [{"k": n, "x": n * 1000, "y": [0.1, -0.0, math.nan, None][n % 4]} for n in range(20)]
        fill(a, narrow, rows)
        fill(b, wide, [dict(r) for r in a.table("n").scan()])  # the float32 values, as doubles
        assert a.table("n").checksum() == b.table("n").checksum()
        assert list(compare(a, b, "n")) == []


def test_checksum_arguments_are_checked() -> None:
    with spi.connect("memory://") as p:
        fill(p, TYPES, typed_rows())
        table = p.table("types")
        for bad in ({"columns": ["k"]}, {"columns": ["nope"]}, {"columns": ["s", "s"]}):
            with pytest.raises(spi.InvalidFieldError):
                table.checksum(**bad)
        with pytest.raises(spi.InvalidFieldError):
            table.segments(size=0)
        assert table.segments(spi.Range((100,))) == []
        assert table.checksum(spi.Range((100,))) == Checksum(0, 0)


# ---------------------------------------------------------------- comparisons


def edit(p: Any, n: int) -> None:
    """Known edits of every kind on ORDERS rows 0..n-1 (keys in key order: first and last)."""
    keys = sorted(order_key(i) for i in range(n))
    t = p.table("orders")
    t.delete(keys[0])  # the first key
    t.update(keys[-1], {"status": "changed"})  # the last key
    t.delete(order_key(10))
    t.insert({"region": "mid", "id": 5})
    t.update(order_key(11), {"total": 2.5, "status": None})
    row = order_row(13)
    t.update(order_key(13), {"ts": row["ts"] + dt.timedelta(microseconds=1)})
    t.upsert({"region": order_key(14)[0], "id": order_key(14)[1]})  # a new version, the same values


@pytest.mark.parametrize("kind", ["memory", "rocksdb"])
def test_known_edits_are_found_exactly(kind: str, tmp_path: Path, pg_factory: Any) -> None:
    n = 2500
    src = spi.connect("memory://" if kind == "memory" else f"rocksdb://{tmp_path}/db")
    pg = pg_factory()
    try:
        for p in (src, pg):
            fill(p, ORDERS, [order_row(i) for i in range(n)])
        assert list(compare(src, pg, "orders")) == []
        edit(pg, n)
        columns = list(check_hashed(ORDERS, None))
        for versions in (False, True):
            for a, b in ((src, pg), (pg, src)):
                diff = TableDiff(a, b, "orders", versions=versions, range_rows=400, narrow_rows=10)
                assert found(diff) == naive_diff(a, b, "orders", columns, versions)
                assert diff.stats.compared == a.table("orders").count()
        with_versions = found(compare(src, pg, "orders", versions=True))
        assert {"table": "orders", "key": dict(zip(("region", "id"), order_key(14))), "changed": ["_version"]} in (
            with_versions
        )
        assert len(with_versions) == len(found(compare(src, pg, "orders"))) + 1
    finally:
        src.close()


def test_random_edits_match_a_naive_diff(tmp_path: Path) -> None:
    rng = random.Random(37)
    with spi.connect("memory://") as src, spi.connect(f"rocksdb://{tmp_path}/db") as dst:
        for p in (src, dst):
            fill(p, ORDERS, [order_row(i) for i in range(3000)])
        t = dst.table("orders")
        for _ in range(40):
            i = rng.randrange(3000)
            action = rng.choice(["delete", "update", "insert"])
            if action == "delete":
                t.delete(order_key(i))
            elif action == "update":
                t.upsert({**order_row(i), "qty": rng.randrange(10)})
            else:
                t.upsert(order_row(3000 + rng.randrange(500)))
        columns = list(check_hashed(ORDERS, None))
        for size, narrow in ((10_000, 100), (300, 20), (7, 3), (40, 1)):
            diff = TableDiff(src, dst, "orders", range_rows=size, narrow_rows=narrow)
            assert found(diff) == naive_diff(src, dst, "orders", columns)


def test_where_and_columns_restrict_the_comparison(pg_factory: Any) -> None:
    with spi.connect("memory://") as src:
        pg = pg_factory()
        for p in (src, pg):
            fill(p, ORDERS, [order_row(i) for i in range(600)])
        pg.table("orders").update(order_key(6), {"status": "zzz", "qty": 1})  # status was "closed"
        pg.table("orders").update(order_key(7), {"qty": 1})
        got = found(compare(src, pg, "orders", where="status = 'closed'"))
        assert got == [{"table": "orders", "key": dict(zip(("region", "id"), order_key(6))), "only": "src"}]
        assert {tuple(d["changed"]) for d in found(compare(src, pg, "orders", columns=["qty"]))} == {("qty",)}
        assert found(compare(src, pg, "orders", columns=["paid"])) == []


def test_pg_to_pg_equal_tables_send_almost_no_rows_to_the_client(pg_factory: Any) -> None:
    a, b = pg_factory(), pg_factory()
    rows = [{"id": i, "g": i % 100, "pad": f"{i:012d}"} for i in range(20_000)]
    spec = spi.TableSpec("big", [spi.Field("id", "long"), spi.Field("g", "long"), spi.Field("pad", "string")], ["id"])
    for p in (a, b):
        fill(p, spec, rows)
    diff = compare(a, b, "big", versions=True)
    assert list(diff) == []
    assert diff.stats.compared == 20_000 and diff.stats.rows_read < 0.05 * 20_000
    b.table("big").update((12_345,), {"pad": "x"})
    diff = compare(a, b, "big")
    assert [d.changed for d in diff] == [("pad",)]
    assert diff.stats.rows_read <= 2 * 100  # one narrowed segment on each side


def test_specs_that_cannot_be_compared() -> None:
    base = [spi.Field("a", "string"), spi.Field("b", "long"), spi.Field("v", "double")]
    spec = spi.TableSpec("t", base, ["a", "b"])
    with pytest.raises(spi.IncompatibleSchemaError, match="key columns"):
        plan(spec, spi.TableSpec("t", base, ["b", "a"]))
    with pytest.raises(spi.IncompatibleSchemaError, match="'v' is double in the source and string"):
        plan(spec, spi.TableSpec("t", [*base[:2], spi.Field("v", "string")], ["a", "b"]))
    wider = spi.TableSpec("t", [*base, spi.Field("extra", "bool")], ["a", "b"])
    assert plan(spec, wider).left_out == {"extra": "dst"}
    assert plan(wider, spec).columns == ("v",)
    with pytest.raises(spi.InvalidFieldError, match="only in the destination"):
        plan(spec, wider, columns=["extra"])


def test_a_missing_table_names_its_side() -> None:
    with spi.connect("memory://") as a, spi.connect("memory://") as b:
        fill(a, ORDERS, [order_row(i) for i in range(5)])
        with pytest.raises(spi.TableNotFoundError, match="in the destination"):
            compare(a, b, "orders")
        with pytest.raises(spi.TableNotFoundError, match="in the source"):
            compare(b, a, "orders")
        one_sided = compare(b, a, "orders", missing_ok=True)
        assert [d.only for d in one_sided] == ["dst"] * 5
        assert one_sided.missing == "src" and one_sided.stats.only_dst == 5


def test_two_tables_of_one_store() -> None:
    with spi.connect("memory://") as p:
        fill(p, ORDERS, [order_row(i) for i in range(50)])
        p.admin.create(spi.TableSpec("copy", ORDERS.fields, ORDERS.primary_key))
        p.table("copy").load(p.table("orders").scan(), keep_versions=True)
        assert list(compare(p, p, "orders", "copy", versions=True)) == []
        p.table("copy").delete(order_key(1))
        assert [Difference("orders", dict(zip(("region", "id"), order_key(1))), "src")] == list(
            compare(p, p, "orders", "copy")
        )

"""``kvctl diff`` as a real process: RocksDB files, the test PostgreSQL and the 3-member
etcd cluster, copied with ``kvctl copy`` and then edited (CLI.md "Comparing stores")."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from cli_support import assert_one_error, provider_url, run_process
from copy_support import ORDERS, fill_real_data, order_key, order_row

import spi

KEY = ("region", "id")


@pytest.fixture
def pg_url(tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A fresh PostgreSQL schema."""
    return provider_url("postgres", tmp_path, request)


def kvctl(*args: str, cwd: Path | None = None) -> Any:
    """``kvctl ARGS`` as a process (stdout piped: ndjson by default)."""
    return run_process(*args, cwd=cwd)


def summary(err: str) -> list[str]:
    """The summary lines stderr ends with."""
    return [line for line in err.splitlines() if " rows compared, " in line]


def key(i: int) -> dict[str, Any]:
    return dict(zip(KEY, order_key(i)))


def test_copies_across_rocksdb_postgres_and_etcd_are_equal(tmp_path: Path, pg_url: str, etcd_factory: Any) -> None:
    rocks = f"rocksdb://{tmp_path}/a"
    etcd = etcd_factory().url
    fill_real_data(rocks, 400)
    for target in (pg_url, etcd):
        assert kvctl("copy", rocks, target, "--all").code == 0
    for a, b in ((rocks, pg_url), (pg_url, etcd), (etcd, rocks)):
        done = kvctl("diff", a, b, "--all", "--versions")
        assert done.code == 0 and done.out == "", done
        assert summary(done.err) == [
            "counters: 500 rows compared, 0 only in src, 0 only in dst, 0 changed",
            "empty: 0 rows compared, 0 only in src, 0 only in dst, 0 changed",
            "orders: 400 rows compared, 0 only in src, 0 only in dst, 0 changed",
        ]
        assert done.err.splitlines()[-3:] == summary(done.err)


def test_known_edits_ordered_by_key_with_limit_and_summary(tmp_path: Path, pg_url: str) -> None:
    rocks = f"rocksdb://{tmp_path}/a"
    with spi.connect(rocks) as src:
        src.admin.create(ORDERS)
        src.table("orders").load(order_row(i) for i in range(1500))
    assert kvctl("copy", rocks, pg_url, "orders").code == 0
    keys = sorted(order_key(i) for i in range(1500))
    first, last = dict(zip(KEY, keys[0])), dict(zip(KEY, keys[-1]))
    ts = order_row(13)["ts"]
    with spi.connect(pg_url) as pg:
        t = pg.table("orders")
        t.delete(keys[0])
        t.update(keys[-1], {"status": "last"})
        t.delete(order_key(10))
        t.insert({"region": "mid", "id": 5})
        t.update(order_key(11), {"total": 2.5})  # a double
        t.update(order_key(15), {"status": None})  # a string to null
        t.update(order_key(13), {"ts": ts + dt.timedelta(microseconds=1)})
        t.upsert(dict(zip(KEY, order_key(14))))  # only the version changes
    done = kvctl("diff", rocks, pg_url, "orders")
    assert done.code == 1, done
    lines = [json.loads(line) for line in done.out.splitlines()]
    expected = [
        {"only": "src", "key": first},
        {"only": "src", "key": key(10)},
        {"only": "dst", "key": {"region": "mid", "id": 5}},
        {"changed": ["status"], "key": last},
        {"changed": ["total"], "key": key(11)},
        {"changed": ["status"], "key": key(15)},
        {"changed": ["ts"], "key": key(13)},
    ]
    order = sorted(expected, key=lambda d: (d["key"]["region"].encode(), d["key"]["id"]))
    assert [{k: v for k, v in line.items() if k in ("only", "changed", "key")} for line in lines] == order
    assert all(line["table"] == "orders" for line in lines)
    changed_ts = next(line for line in lines if line.get("changed") == ["ts"])
    assert changed_ts["src"]["ts"] == ts.isoformat()
    assert changed_ts["dst"]["ts"] == (ts + dt.timedelta(microseconds=1)).isoformat()
    assert set(changed_ts["src"]) == set(ORDERS.columns)
    assert summary(done.err) == ["orders: 1500 rows compared, 2 only in src, 1 only in dst, 4 changed"]

    versions = kvctl("diff", rocks, pg_url, "orders", "--versions")
    assert len(versions.out.splitlines()) == 8
    bumped = next(d for d in map(json.loads, versions.out.splitlines()) if d["key"] == key(14))
    assert bumped["changed"] == ["_version"] and (bumped["src"]["_version"], bumped["dst"]["_version"]) == (1, 2)
    assert summary(versions.err) == ["orders: 1500 rows compared, 2 only in src, 1 only in dst, 5 changed"]

    limited = kvctl("diff", rocks, pg_url, "orders", "--limit", "2", "-o", "json")
    assert limited.code == 1 and [d["key"] for d in json.loads(limited.out)] == [d["key"] for d in order[:2]]
    assert "--limit 2 reached" in limited.err
    assert summary(limited.err) == summary(done.err)
    quiet = kvctl("diff", rocks, pg_url, "orders", "--summary")
    assert quiet.code == 1 and quiet.out == "" and summary(quiet.err) == summary(done.err)

    columns = kvctl("diff", rocks, pg_url, "orders", "--columns", "total,qty", "-o", "json")
    assert [d.get("changed") for d in json.loads(columns.out)] == [None, None, None, ["total"]]
    assert set(json.loads(columns.out)[3]["src"]) == {"region", "id", "total", "qty"}
    where = kvctl("diff", rocks, pg_url, "orders", "--where", "status = 'last' or id = 5")
    assert [json.loads(line)["key"] for line in where.out.splitlines()] == [{"region": "mid", "id": 5}, last]
    assert [json.loads(line).get("only") for line in where.out.splitlines()] == ["dst", "dst"]


def test_two_tables_of_one_store_and_the_same_table_twice(tmp_path: Path) -> None:
    rocks = f"rocksdb://{tmp_path}/a"
    with spi.connect(rocks) as p:
        for name in ("orders", "copy"):
            p.admin.create(spi.TableSpec(name, ORDERS.fields, ORDERS.primary_key))
            p.table(name).load(order_row(i) for i in range(200))
        p.table("copy").update(order_key(3), {"qty": 1})
    done = kvctl("diff", rocks, rocks, "orders:copy", "-o", "json")
    assert done.code == 1, done
    assert json.loads(done.out) == [
        {
            "table": "orders",
            "key": key(3),
            "changed": ["qty"],
            "src": _json(order_row(3)),
            "dst": {**_json(order_row(3)), "qty": 1},
        }
    ]
    assert summary(done.err) == ["orders: 200 rows compared, 0 only in src, 0 only in dst, 1 changed"]
    assert_one_error(kvctl("diff", rocks, rocks, "orders"), 2)
    assert_one_error(kvctl("diff", rocks, rocks, "--all"), 2)


def _json(row: dict[str, Any]) -> dict[str, Any]:
    """A row's values as kvctl prints them in JSON."""
    from spi.textvalues import to_json_value

    return {c: to_json_value(v) for c, v in row.items()}


def test_specs_missing_tables_and_left_out_columns(tmp_path: Path, pg_url: str) -> None:
    rocks = f"rocksdb://{tmp_path}/a"
    base = [spi.Field("id", "long"), spi.Field("n", "int"), spi.Field("x", "float")]
    with spi.connect(rocks) as a, spi.connect(pg_url) as b:
        a.admin.create(spi.TableSpec("t", [*base, spi.Field("only_here", "string")], ["id"]))
        b.admin.create(
            spi.TableSpec("t", [spi.Field("id", "long"), spi.Field("n", "long"), spi.Field("x", "double")], ["id"])
        )
        rows = [{"id": i, "n": i, "x": 0.1 * i, "only_here": "s"} for i in range(30)]
        a.table("t").load(rows)
        b.table("t").load({k: v for k, v in r.items() if k != "only_here"} for r in a.table("t").scan())
        a.admin.create(spi.TableSpec("bad", base, ["id"]))
        b.admin.create(spi.TableSpec("bad", [spi.Field("id", "long"), spi.Field("n", "string"), base[2]], ["id"]))
        a.admin.create(spi.TableSpec("lonely", base, ["id"]))
        a.table("lonely").load([{"id": 1}, {"id": 2}])
    equal = kvctl("diff", rocks, pg_url, "t")
    assert equal.code == 0, equal
    assert "t: column 'only_here' is only in the source table: left out" in equal.err
    bad = kvctl("diff", rocks, pg_url, "bad")
    assert_one_error(bad, 2)
    assert "'n' is int in the source and string in the destination" in bad.err
    missing = kvctl("diff", rocks, pg_url, "lonely")
    assert_one_error(missing, 1)
    assert "table 'lonely' does not exist in the destination" in missing.err
    assert_one_error(kvctl("diff", pg_url, rocks, "lonely"), 1)
    assert "in the source" in kvctl("diff", pg_url, rocks, "lonely").err
    everything = kvctl("diff", rocks, pg_url, "--all")
    assert_one_error(everything, 2)  # 'bad' cannot be compared: nothing is printed
    assert everything.out == ""


def test_all_counts_a_one_sided_table_as_only(tmp_path: Path) -> None:
    a, b = f"rocksdb://{tmp_path}/a", f"rocksdb://{tmp_path}/b"
    spec = spi.TableSpec("t", [spi.Field("id", "long")], ["id"])
    with spi.connect(a) as p, spi.connect(b) as q:
        p.admin.create(spec)
        p.table("t").load([{"id": 1}, {"id": 2}])
        q.admin.create(spi.TableSpec("u", spec.fields, ["id"]))
        q.table("u").load([{"id": 7}])
    done = kvctl("diff", a, b, "--all")
    assert done.code == 1
    assert [json.loads(line) for line in done.out.splitlines()] == [
        {"table": "t", "key": {"id": 1}, "only": "src"},
        {"table": "t", "key": {"id": 2}, "only": "src"},
        {"table": "u", "key": {"id": 7}, "only": "dst"},
    ]
    assert "t: no such table in the destination" in done.err and "u: no such table in the source" in done.err
    assert summary(done.err) == [
        "t: 2 rows compared, 2 only in src, 0 only in dst, 0 changed",
        "u: 0 rows compared, 0 only in src, 1 only in dst, 0 changed",
    ]


def test_profiles_name_the_stores(tmp_path: Path, pg_url: str) -> None:
    rocks = tmp_path / "data"
    with spi.connect(f"rocksdb://{rocks}") as p:
        p.admin.create(ORDERS)
        p.table("orders").load(order_row(i) for i in range(100))
    assert kvctl("copy", f"rocksdb://{rocks}", pg_url, "orders").code == 0
    (tmp_path / "kvctl.toml").write_text(
        f'[profiles.old]\nurl = "rocksdb:./data"\n[profiles.new]\nurl = "{pg_url}"\n', encoding="utf-8"
    )
    done = kvctl("diff", "old", "new", "orders", cwd=tmp_path)
    assert done.code == 0, done
    assert summary(done.err) == ["orders: 100 rows compared, 0 only in src, 0 only in dst, 0 changed"]
    unknown = kvctl("diff", "old", "newer", "orders", cwd=tmp_path)
    assert_one_error(unknown, 2)
    assert "'newer'" in unknown.err and "new" in unknown.err.replace("'newer'", "")  # the profiles are listed

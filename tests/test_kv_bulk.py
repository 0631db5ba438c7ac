"""The batch load path of the ordered-store engine (spi.kv.bulk) against the exact
per-row path: for any batch, it must accept exactly the rows validate_row accepts,
produce the same values, store the same bytes, and report the same first error."""

from __future__ import annotations

import datetime as dt
import enum
import math
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spi
from spi import Field, TableSpec, col
from spi.codec import encode_key
from spi.errors import KvError
from spi.keys import ResolvedRange, key_of
from spi.kv import KvTransaction, Layout
from spi.kv.bulk import RowBatch
from spi.primitives import ScanRequest
from spi.testing.fixtures import ALL_TYPES, all_types_row
from spi.validate import validate_row

LAYOUT = Layout(ALL_TYPES, list(ALL_TYPES.columns), 1)


class Level(enum.IntEnum):
    HIGH = 7


_ODD = [
    None,
    True,
    False,
    0,
    -1,
    2**31,
    -(2**31) - 1,
    2**63,
    -(2**63) - 1,
    Level.HIGH,
    1.0,
    -0.0,
    math.nan,
    math.inf,
    1e40,
    "",
    "a",
    "é" * 300,
    "x" * 1025,
    "nul\x00",
    "lone \ud800",
    b"",
    b"\x00",
    bytearray(b"ba"),
    memoryview(b"mv"),
    dt.datetime(2024, 1, 1),
    dt.datetime(2024, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=-5))),
    [1],
]


@st.composite
def batches(draw: Any) -> list[Any]:
    """Rows that are mostly valid, with odd values, missing and extra columns mixed in."""
    out: list[Any] = []
    for i in range(draw(st.integers(1, 8))):
        row: Any = all_types_row(draw(st.integers(0, 400)))
        row["k"] = i  # distinct keys: repeated keys take the generic path anyway
        if draw(st.integers(0, 4)) == 0:
            row[draw(st.sampled_from(ALL_TYPES.columns))] = draw(st.sampled_from(_ODD))
        if draw(st.integers(0, 15)) == 0:
            row.pop(draw(st.sampled_from(ALL_TYPES.columns)))
        if draw(st.integers(0, 20)) == 0:
            row["extra"] = 1
        if draw(st.integers(0, 40)) == 0:
            row = list(row.items())
        out.append(row)
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return type(a) is type(b) and a == b


def _exact(rows: list[Any]) -> list[dict[str, Any]] | tuple[type, str, int]:
    out = []
    for i, row in enumerate(rows):
        try:
            out.append(validate_row(ALL_TYPES, row))
        except KvError as exc:
            return type(exc), str(exc), i
    return out


def _bulk(rows: list[Any]) -> RowBatch | tuple[type, str, int]:
    preparer = LAYOUT.load_preparer()
    try:
        return preparer.prepare(preparer.take(iter(rows), len(rows), held=False))
    except KvError as exc:
        assert exc.row_index is not None
        return type(exc), str(exc), exc.row_index


@settings(max_examples=300, deadline=None)
@given(batches())
def test_batch_path_matches_the_exact_path(rows: list[Any]) -> None:
    exact, bulk = _exact(rows), _bulk(rows)
    if isinstance(exact, tuple):
        assert bulk == exact
        return
    assert isinstance(bulk, RowBatch)
    got = bulk.all_rows()
    assert len(got) == len(exact)
    for g, e in zip(got, exact):
        assert g.keys() == e.keys()
        assert all(_same(g[c], e[c]) for c in e), (g, e)
    for i, values in enumerate(exact):
        key = encode_key(ALL_TYPES.key_types, key_of(ALL_TYPES, values))
        assert bulk.keys[i] == LAYOUT.row_prefix + key
        if bulk.stored is not None:
            assert bulk.stored[i] == LAYOUT.encode_row(values, 1)
            expected = [LAYOUT.index_key(c, values[c], key) for c in ALL_TYPES.indexes]
            assert [entries[i] for entries in bulk.entries] == expected


def test_complete_valid_rows_are_encoded_in_one_batch() -> None:
    rows = [all_types_row(i) for i in range(60)]
    batch = _bulk(rows)
    assert isinstance(batch, RowBatch) and batch.stored is not None
    assert [batch.stored[i] for i in range(60)] == [LAYOUT.encode_row(validate_row(ALL_TYPES, r), 1) for r in rows]


def test_a_partial_row_sends_the_batch_to_the_exact_path() -> None:
    rows = [all_types_row(i) for i in range(5)]
    del rows[2]["s"]
    batch = _bulk(rows)
    assert isinstance(batch, RowBatch) and batch.stored is None and "s" not in batch.all_rows()[2]


def test_take_copies_rows_unless_held() -> None:
    preparer = LAYOUT.load_preparer()
    row = all_types_row(0)
    taken = preparer.take(iter([row, row]), 5, held=False)
    assert taken == [row, row] and taken[0] is not row and taken[0] is not taken[1]
    assert preparer.take(iter([row]), 5, held=True)[0] is row


def test_a_load_sees_a_schema_change_between_its_batches() -> None:
    p = spi.connect("memory://")
    p.admin.create(TableSpec("t", [Field("id", "long"), Field("v", "long")], ["id"]))
    wider = TableSpec("t", [Field("id", "long"), Field("v", "long"), Field("w", "long")], ["id"], indexes=["w"])

    def progress(written: int) -> None:
        if written == 10:
            p.admin.create_or_update(wider)  # batches prepared before this are re-checked

    assert p.table("t").load(({"id": i, "v": i} for i in range(30)), batch_size=10, progress=progress) == 30
    assert p.admin.verify("t") == []
    assert p.table("t").count(where=col("w").is_null()) == 30
    assert [r["v"] for r in p.table("t").scan()] == list(range(30))


@pytest.mark.parametrize("scheme", ["memory", "rocksdb"])
def test_cached_layouts_follow_committed_catalog_changes_only(scheme: str, tmp_path: Path) -> None:
    """One-off reads trust a cached layout until a catalog change commits: an alter
    rolled back leaves it, a committed alter or a drop is seen by the next call."""
    url = "memory://" if scheme == "memory" else f"rocksdb://{tmp_path}/db"
    spec = spi.TableSpec("t", [spi.Field("k", "long"), spi.Field("v", "string")], ["k"])
    wider = spi.TableSpec("t", [*spec.fields, spi.Field("w", "long")], ["k"])
    with spi.connect(url) as p:
        p.admin.create(spec)
        t = p.table("t")
        t.upsert({"k": 1, "v": "a"})
        assert dict(t.read((1,)) or {}) == {"k": 1, "v": "a"}
        with pytest.raises(RuntimeError), cast(KvTransaction, p.transaction()) as tx:
            tx.save_layout(Layout(wider, [*wider.columns], tx.layout("t").table_id))  # an alter, rolled back
            raise RuntimeError("roll back")
        assert t.spec == spec and dict(t.read((1,)) or {}) == {"k": 1, "v": "a"}
        p.admin.create_or_update(wider)
        assert t.spec == wider and dict(t.read((1,)) or {}) == {"k": 1, "v": "a", "w": None}
        p.admin.drop("t")
        with pytest.raises(spi.TableNotFoundError):
            t.read((1,))


@pytest.mark.parametrize("scheme", ["memory", "rocksdb"])
def test_filters_on_stored_arrays_see_timestamps_floats_and_added_columns(scheme: str, tmp_path: Path) -> None:
    """Key-order scans test filters on the stored arrays (timestamps as microseconds,
    columns added after a row was written read as null): the same rows as a plain filter."""
    url = "memory://" if scheme == "memory" else f"rocksdb://{tmp_path}/db"
    base = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)
    spec = TableSpec("t", [Field("k", "long"), Field("at", "timestamp"), Field("x", "double")], ["k"])
    wider = TableSpec("t", [*spec.fields, Field("note", "string")], ["k"])
    with spi.connect(url) as p:
        p.admin.create(spec)
        t = p.table("t")
        t.load({"k": i, "at": base + dt.timedelta(hours=i), "x": [1.5, math.nan, None, -0.0][i % 4]} for i in range(40))
        p.admin.create_or_update(wider)
        t.upsert({"k": 3, "note": "n"})
        rows = [r.to_dict() for r in t.scan()]
        cases = [
            (col("at") >= base + dt.timedelta(hours=30), lambda r: r["at"] >= base + dt.timedelta(hours=30)),
            (col("at").isin([base, base + dt.timedelta(hours=5)]), lambda r: r["k"] in (0, 5)),
            (col("x") > 0, lambda r: r["x"] is not None and (math.isnan(r["x"]) or r["x"] > 0)),
            (col("x") == 0.0, lambda r: r["x"] == 0.0),
            (col("note").is_null() & ~(col("k") < 38), lambda r: r["note"] is None and r["k"] >= 38),
            (col("note") == "n", lambda r: r["k"] == 3),
        ]
        for expr, expected in cases:
            assert [r["k"] for r in t.scan(where=expr)] == [r["k"] for r in rows if expected(r)], str(expr)
            assert t.count(where=expr) == sum(1 for r in rows if expected(r))


def test_engine_scans_with_limit_zero_read_nothing() -> None:
    """Every kind of engine scan (key order, index, index with a filter after it)
    gives no row for a limit of 0 (the public calls stop earlier; the engine must too)."""
    p = spi.connect("memory://")
    p.admin.create(spi.TableSpec("t", [spi.Field("k", "long"), spi.Field("g", "long")], ["k"], indexes=["g"]))
    p.table("t").load({"k": i, "g": i % 3} for i in range(10))
    with p.transaction() as tx:
        scanner = tx.table("t")._scanner
        for where in (None, col("g") == 1, (col("g") == 1) & (col("k") > 2)):
            request = ScanRequest(ResolvedRange.everything(), where, None, False, None, 0)
            assert list(scanner.stream(request, spi.Row)) == []
            assert scanner.row_list(request) == []

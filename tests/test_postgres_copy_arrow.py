"""PostgreSQL loads of Arrow rows (``kvctl put --file``'s path): the batches go to the
server as binary COPY data built from their Arrow buffers
(:mod:`providers.postgres.copy_arrow`). What the server stores must be exactly what
the same rows loaded as Python values store: every field type, its edge values and
nulls, read back from a real server; and a batch that cannot go in as new rows (a key
taken or repeated, an insert over a taken key) gets the answers of the row path."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_codec import VALUES

import spi
from providers.postgres import load
from providers.postgres.copy_arrow import copy_data, int8_field
from spi.arrow import arrow_schema, columns_to_batch
from spi.types import FieldType, values_equal
from spi.validate import validate_row
from spi.validated import ValidatedRows

UTC = dt.UTC
SPEC = spi.TableSpec(
    "typed",
    [spi.Field("k", "long"), *(spi.Field(f"c_{t.value}", t.value) for t in FieldType)],
    ["k"],
    indexes=["c_string"],
)
EDGES: dict[FieldType, list[Any]] = {
    FieldType.INT: [-(2**31), 2**31 - 1, 0, -1],
    FieldType.LONG: [-(2**63), 2**63 - 1, 0, -1],
    FieldType.FLOAT: [math.nan, math.inf, -math.inf, -0.0, 3.4028234663852886e38],
    FieldType.DOUBLE: [math.nan, math.inf, -math.inf, 5e-324, -1.5],
    FieldType.STRING: ["", "é€😀", 'a,b\n"c"', "\\N"],
    FieldType.BYTES: [b"", b"\x00", b"\xff\x00\x01", b"\\x00"],
    FieldType.BOOL: [True, False, True, False],
    FieldType.TIMESTAMP: [
        dt.datetime(1, 1, 1, tzinfo=UTC),
        dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        dt.datetime(2000, 1, 1, tzinfo=UTC),
        dt.datetime(1969, 12, 31, 23, 59, 59, 1, tzinfo=UTC),
    ],
}


def _validated(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [validate_row(SPEC, r) for r in rows]


def _arrow(rows: list[dict[str, Any]]) -> ValidatedRows:
    """The rows (validated) as an Arrow ValidatedRows, as ``put --file`` hands them over."""
    columns = {c: [r.get(c) for r in rows] for c in SPEC.columns}
    return ValidatedRows(SPEC, [columns_to_batch(columns, arrow_schema(SPEC))], arrow=True)


def _stored(t: Any) -> dict[int, dict[str, Any]]:
    return {r["k"]: dict(r) for r in t.scan()}


def _assert_same(stored: dict[str, Any], expected: dict[str, Any]) -> None:
    for c in SPEC.columns:
        assert values_equal(stored[c], expected.get(c)), (c, stored[c], expected.get(c))


@pytest.fixture
def p(pg_factory: Callable[..., Any]) -> Any:
    provider = pg_factory()
    provider.admin.create(SPEC)
    return provider


def _edge_rows() -> list[dict[str, Any]]:
    width = max(map(len, EDGES.values()))
    rows = [{"k": i, **{f"c_{t.value}": v[i % len(v)] for t, v in EDGES.items()}} for i in range(width)]
    return _validated([*rows, {"k": width}])  # the last row: every value column null


def test_edge_values_and_nulls_are_stored_as_the_row_path_stores_them(p: Any, monkeypatch: Any) -> None:
    encoded: list[int] = []

    def spied(batch: pa.RecordBatch, trailing: bytes, fields: int) -> memoryview | None:
        data = copy_data(batch, trailing, fields)
        encoded.append(-1 if data is None else batch.num_rows)
        return data

    monkeypatch.setattr(load, "copy_data", spied)
    rows = _edge_rows()
    assert p.table("typed").load(_arrow(rows)) == len(rows)
    assert encoded == [len(rows)]  # the rows went as Arrow's COPY data
    p.admin.create(SPEC.renamed("typed_rows"))
    p.table("typed_rows").load(rows)
    arrow, python = _stored(p.table("typed")), _stored(p.table("typed_rows"))
    assert arrow.keys() == python.keys() == {r["k"] for r in rows}
    for row in rows:
        _assert_same(arrow[row["k"]], row)
        _assert_same(arrow[row["k"]], python[row["k"]])
    assert {r.version for r in p.table("typed").scan()} == {1}


@st.composite
def typed_rows(draw: Any) -> list[dict[str, Any]]:
    keys = draw(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=20, unique=True))
    columns = [(f"c_{t.value}", st.none() | VALUES[t]) for t in FieldType]
    return _validated([{"k": k, **{c: draw(values) for c, values in columns}} for k in keys])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=typed_rows())
def test_random_rows_read_back_exactly(p: Any, rows: list[dict[str, Any]]) -> None:
    t = p.table("typed")
    t.delete_range()
    assert t.load(_arrow(rows)) == len(rows)
    stored = _stored(t)
    assert stored.keys() == {r["k"] for r in rows}
    for row in rows:
        _assert_same(stored[row["k"]], row)


def test_taken_and_repeated_keys_get_the_row_paths_answers(p: Any) -> None:
    t = p.table("typed")
    first = _validated([{"k": k, "c_int": k} for k in range(10)])
    t.load(_arrow(first), batch_size=4)
    again = _validated([{"k": k, "c_int": 100 + k} for k in range(5, 15)])
    assert t.load(_arrow(again), batch_size=4) == 10  # keys 5-9 taken: upserted, version 2
    versions = {r["k"]: (r.version, r["c_int"]) for r in t.scan()}
    assert versions == {k: (1, k) for k in range(5)} | {k: (2 if k < 10 else 1, 100 + k) for k in range(5, 15)}
    repeated = _validated([{"k": 20, "c_int": 1}, {"k": 21, "c_int": 2}, {"k": 20, "c_int": 3}])
    t.load(_arrow(repeated))  # a key twice in one batch: the later row wins
    assert t.read({"k": 20})["c_int"] == 3 and t.read({"k": 20}).version == 2
    with pytest.raises(spi.RowExistsError) as caught:
        t.load(_arrow(_validated([{"k": 30}, {"k": 3}])), mode="insert")
    assert caught.value.row_index == 1
    assert t.read({"k": 30}) is None  # nothing of the refused batch was written


def test_a_load_with_a_ttl_sets_each_rows_expiry(p: Any) -> None:
    t = p.table("typed")
    t.load(_arrow(_validated([{"k": 1}, {"k": 2}])), ttl=3600)
    expires = {r.expires_at for r in t.scan()}
    assert len(expires) == 1
    (at,) = expires
    assert at is not None and dt.timedelta(minutes=59) < at - dt.datetime.now(UTC) <= dt.timedelta(hours=1)


def test_a_type_without_an_encoding_is_left_to_the_row_path() -> None:
    batch = pa.record_batch([pa.array([1], pa.decimal128(5, 2))], names=["d"])
    assert copy_data(batch, int8_field(1), 2) is None

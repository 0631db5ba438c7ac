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
from spi.keys import key_of
from spi.kv import KvTransaction, Layout
from spi.kv.bulk import RowBatch
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

"""Aggregates (``table.aggregate``): counts per group and column statistics, compared
with the same computation done here over the rows a scan returns."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pytest

from spi import Range, col
from spi.aggregate import ColumnStats, Group
from spi.errors import InvalidFieldError
from spi.spec import TableSpec
from spi.testing.fixtures import ALL_TYPES, ORDERS, all_types_row


def _order(value: Any) -> tuple[Any, ...]:
    """Nulls first; strings by their UTF-8 bytes; NaN above every number."""
    if value is None:
        return (0,)
    if isinstance(value, str):
        return (1, value.encode())
    if isinstance(value, float) and math.isnan(value):
        return (2,)
    return (1, value)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    return bool(a == b)


def expected(spec: TableSpec, rows: list[Any], group_by: Sequence[str], columns: Sequence[str]) -> list[Group]:
    """The groups of ``rows`` computed plainly: a list of (values, rows) pairs."""
    groups: list[tuple[tuple[Any, ...], list[Any]]] = [] if group_by else [((), [])]
    for row in rows:
        values = tuple(row[c] for c in group_by)
        for have, members in groups:
            if all(_same(a, b) for a, b in zip(have, values)):
                members.append(row)
                break
        else:
            groups.append((values, [row]))
    groups.sort(key=lambda g: tuple(_order(v) for v in g[0]))
    out = []
    for values, members in groups:
        stats = {}
        for c in columns:
            present = sorted((r[c] for r in members if r[c] is not None), key=_order)
            nulls = len(members) - len(present)
            if not present:
                stats[c] = ColumnStats(None, None, nulls)
            elif spec.type_of(c).is_numeric:
                total = sum(present)
                stats[c] = ColumnStats(present[0], present[-1], nulls, total, total / len(present))
            else:
                stats[c] = ColumnStats(present[0], present[-1], nulls)
        out.append(Group(values, len(members), stats))
    return out


def assert_groups(got: list[Group], want: list[Group]) -> None:
    """Equal groups (sums and averages of floats within rounding, NaN equal to NaN)."""
    assert len(got) == len(want), ([g.values for g in got], [w.values for w in want])
    for g, w in zip(got, want):
        assert all(_same(a, b) for a, b in zip(g.values, w.values, strict=True)), (g.values, w.values)
        assert g.count == w.count, g.values
        assert list(g.stats) == list(w.stats)
        for c, s in g.stats.items():
            e = w.stats[c]
            assert _same(s.min, e.min) and _same(s.max, e.max) and s.nulls == e.nulls, (g.values, c, s, e)
            if isinstance(e.sum, int):
                assert type(s.sum) is int and s.sum == e.sum, (g.values, c, s, e)
            else:
                assert s.sum == pytest.approx(e.sum, rel=1e-9, nan_ok=True), (g.values, c, s, e)
            assert s.avg == pytest.approx(e.avg, rel=1e-9, nan_ok=True), (g.values, c, s, e)


class AggregateTests:
    """Counts per group and column statistics."""

    def test_count_by_group(self, provider: Any, orders: Any) -> None:
        rows = list(orders.scan())
        for group_by in (["status"], ["region", "status"], ["note"], ["id"]):
            assert_groups(orders.aggregate(group_by=group_by), expected(ORDERS, rows, group_by, []))
        whole = orders.aggregate()
        assert [(g.values, g.count, g.stats) for g in whole] == [((), len(rows), {})]

    def test_stats_by_group(self, provider: Any, orders: Any) -> None:
        rows = list(orders.scan())
        got = orders.aggregate(group_by=["region"], columns=["total", "id", "status"])
        assert_groups(got, expected(ORDERS, rows, ["region"], ["total", "id", "status"]))
        assert [g.values for g in got] == [("ap",), ("eu",), ("us",)]

    def test_range_and_where(self, provider: Any, orders: Any) -> None:
        cases: list[tuple[Any, Any]] = [
            (Range.prefix(("eu",)), None),
            (None, col("status") == "open"),
            (Range(("eu",), ("us",)), (col("total") > 10) | col("status").is_null()),
            (None, col("id") > 1000),
        ]
        for rng, where in cases:
            rows = list(orders.scan(rng, where=where))
            got = orders.aggregate(rng, where=where, group_by=["status"], columns=["total"])
            assert_groups(got, expected(ORDERS, rows, ["status"], ["total"]))
        none = orders.aggregate(where=col("id") > 1000, columns=["total"])
        assert none == [Group((), 0, {"total": ColumnStats(None, None, 0)})]

    def test_empty_table(self, provider: Any) -> None:
        provider.admin.create(ORDERS)
        t = provider.table("orders")
        assert t.aggregate(group_by=["status"], columns=["total"]) == []
        assert t.aggregate(columns=["total", "note"]) == [
            Group((), 0, {"total": ColumnStats(None, None, 0), "note": ColumnStats(None, None, 0)})
        ]

    def test_every_type(self, provider: Any) -> None:
        # Timestamps in other zones, NaN, -0.0, 1e300, integer bounds (an exact sum past
        # 64 bits), non-ASCII strings (ordered by their UTF-8 bytes), nulls in every column.
        provider.admin.create(ALL_TYPES)
        t = provider.table("alltypes")
        t.load([all_types_row(i) for i in range(40)])
        rows = list(t.scan())
        stats = ["i", "l", "f", "d", "s", "ts"]
        for group_by in ([], ["flag"], ["s"], ["ts"], ["f"], ["flag", "i"], ["b"]):
            assert_groups(t.aggregate(group_by=group_by, columns=stats), expected(ALL_TYPES, rows, group_by, stats))
        longs = t.aggregate(columns=["l"])[0].stats["l"]
        assert type(longs.sum) is int and longs.sum == sum(r["l"] for r in rows if r["l"] is not None)

    def test_in_a_transaction(self, provider: Any, orders: Any) -> None:
        with provider.transaction() as tx:
            table = tx.table("orders")
            table.upsert({"region": "zz", "id": 1, "status": "new", "total": 2.5})
            got = table.aggregate(where=col("region") == "zz", group_by=["status"], columns=["total"])
            assert got == [Group(("new",), 1, {"total": ColumnStats(2.5, 2.5, 0, 2.5, 2.5)})]

    def test_bad_arguments(self, provider: Any, orders: Any) -> None:
        provider.admin.create(ALL_TYPES)
        for kwargs in (
            {"group_by": ["nope"]},
            {"columns": ["nope"]},
            {"group_by": "status"},
            {"columns": "total"},
            {"group_by": ["status", "status"]},
            {"columns": ["total", "total"]},
            {"where": col("status") == 5},
        ):
            with pytest.raises(InvalidFieldError):
                orders.aggregate(**kwargs)
        for column in ("b", "flag"):
            with pytest.raises(InvalidFieldError, match=column):
                provider.table("alltypes").aggregate(columns=[column])

"""Aggregates computed in the server: one ``GROUP BY`` statement per call.

The groups come ordered as :mod:`spi.aggregate` orders them (each column ascending,
nulls first; strings by code point through their ``COLLATE "C"``, NaN above every
number as PostgreSQL sorts it). ``sum`` adds ``real`` columns as ``double precision``
(as Python adds their values) and ``int``/``long`` exactly (``numeric``); ``avg`` is
that sum divided by the non-null values, as the generic implementation computes it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as pg

from providers.postgres.scan_sql import live_rows
from providers.postgres.schema import value_converter
from spi.aggregate import ColumnStats, Group
from spi.filters import Expr
from spi.keys import ResolvedRange
from spi.spec import TableSpec
from spi.types import FieldType


def aggregate_select(
    table: sa.Table,
    spec: TableSpec,
    key_range: ResolvedRange,
    where: Expr | None,
    group_by: Sequence[str],
    columns: Sequence[str],
) -> sa.Select[Any]:
    """SELECT the group values, the row count, then per column min, max, nulls (and sum
    for numbers) of the live rows in range matching ``where``, one row per group."""
    groups = [table.c[c] for c in group_by]
    selected: list[Any] = [*groups, sa.func.count()]
    for c in columns:
        column = table.c[c]
        selected += [sa.func.min(column), sa.func.max(column), sa.func.count() - sa.func.count(column)]
        ftype = spec.type_of(c)
        if ftype.is_numeric:
            selected.append(sa.func.sum(sa.cast(column, pg.DOUBLE_PRECISION) if ftype is FieldType.FLOAT else column))
    stmt = sa.select(*selected).select_from(table).where(*live_rows(table, spec, key_range, where))
    if groups:
        stmt = stmt.group_by(*groups).order_by(*(g.asc().nulls_first() for g in groups))
    return stmt


def _converter(ftype: FieldType) -> Callable[[Any], Any]:
    convert = value_converter(ftype)
    if convert is None:
        return lambda v: v
    return lambda v: None if v is None else convert(v)


def read_groups(
    spec: TableSpec, rows: Sequence[Sequence[Any]], group_by: Sequence[str], columns: Sequence[str]
) -> list[Group]:
    """The :class:`~spi.aggregate.Group` of each row :func:`aggregate_select` returned."""
    keys = [_converter(spec.type_of(c)) for c in group_by]
    values = [(c, spec.type_of(c), _converter(spec.type_of(c))) for c in columns]
    groups = []
    for row in rows:
        at = len(group_by)
        count = int(row[at])
        at += 1
        stats: dict[str, ColumnStats] = {}
        for c, ftype, convert in values:
            low, high, nulls = convert(row[at]), convert(row[at + 1]), int(row[at + 2])
            at += 3
            if not ftype.is_numeric:
                stats[c] = ColumnStats(low, high, nulls)
                continue
            total = row[at]
            at += 1
            if total is None:
                stats[c] = ColumnStats(low, high, nulls)
                continue
            total = int(total) if ftype.is_integer else float(total)
            stats[c] = ColumnStats(low, high, nulls, total, total / (count - nulls))
        groups.append(Group(tuple(k(v) for k, v in zip(keys, row)), count, stats))
    return groups

"""Compiling scans to SQL: key ranges, filters, keyset positions and order.

Every value becomes a bound parameter typed like its column; identifiers come from
the :class:`sqlalchemy.Table` built from a validated spec and are always quoted.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa

from providers.postgres.schema import live, sql_type
from spi.codec import decode_key, decode_nullable
from spi.filters import And, Compare, Expr, In, IsNull, Like, Not, Or, like_prefix, string_successor
from spi.keys import ResolvedRange
from spi.spec import TableSpec

_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def unknown() -> Any:
    """A boolean SQL NULL: "unknown" in three-valued logic."""
    return sa.cast(sa.null(), sa.Boolean)


def _bind(table: sa.Table, column: str, value: Any) -> Any:
    return sa.literal(value, table.c[column].type)


def _key_tuple(table: sa.Table, spec: TableSpec, values: Sequence[Any]) -> tuple[Any, Any]:
    cols = [table.c[k] for k in spec.primary_key[: len(values)]]
    binds = [_bind(table, k, v) for k, v in zip(spec.primary_key, values)]
    if len(cols) == 1:
        return cols[0], binds[0]
    return sa.tuple_(*cols), sa.tuple_(*binds)


def range_condition(table: sa.Table, spec: TableSpec, r: ResolvedRange) -> list[Any]:
    """Conditions selecting the keys in ``r`` (row-value comparisons on key prefixes)."""
    out = []
    if r.start is not None:
        left, right = _key_tuple(table, spec, r.start)
        out.append(left >= right if r.start_inclusive else left > right)
    if r.end is not None:
        left, right = _key_tuple(table, spec, r.end)
        out.append(left <= right if r.end_inclusive else left < right)
    return out


def like_pattern(pattern: str) -> str:
    """``pattern`` with a dangling final backslash escaped (SPI matches it literally)."""
    i = 0
    while i < len(pattern):
        if pattern[i] == "\\":
            if i + 1 == len(pattern):
                return pattern + "\\"
            i += 2
        else:
            i += 1
    return pattern


def _like(table: sa.Table, expr: Like) -> Any:
    """LIKE with its literal prefix spelled as a range (``c >= 'SE' AND c < 'SF'``), so
    the key or an index serves it on every plan, generic plans of bound parameters
    included; same results: the columns compare by code point (COLLATE "C")."""
    column = table.c[expr.column]
    like = like_prefix(expr.pattern)
    if like.exact:
        return column == _bind(table, expr.column, like.prefix)
    match = column.like(_bind(table, expr.column, like_pattern(expr.pattern)))
    if not like.prefix:
        return match
    conds = [column >= _bind(table, expr.column, like.prefix)]
    successor = string_successor(like.prefix)
    if successor is not None:
        conds.append(column < _bind(table, expr.column, successor))
    return sa.and_(*conds) if like.pure else sa.and_(*conds, match)


def compile_where(table: sa.Table, expr: Expr) -> Any:
    """A SQL condition with the same three-valued result as :func:`spi.filters.evaluate`."""
    if isinstance(expr, Compare):
        if expr.value is None:
            return unknown()  # a comparison with null is never true
        return _OPS[expr.op](table.c[expr.column], _bind(table, expr.column, expr.value))
    if isinstance(expr, In):
        column = table.c[expr.column]
        values = [v for v in expr.values if v is not None]
        saw_null = len(values) < len(expr.values)
        if not values:
            # No value to match: unknown for a null column (or a null in the list), else false.
            return unknown() if saw_null else sa.and_(column.is_(None), unknown())
        cond = column.in_([_bind(table, expr.column, v) for v in values])
        return sa.or_(cond, unknown()) if saw_null else cond
    if isinstance(expr, IsNull):
        column = table.c[expr.column]
        return column.is_not(None) if expr.negated else column.is_(None)
    if isinstance(expr, Like):
        return _like(table, expr)
    if isinstance(expr, And):
        return sa.and_(*(compile_where(table, p) for p in expr.parts))
    if isinstance(expr, Or):
        return sa.or_(*(compile_where(table, p) for p in expr.parts))
    if isinstance(expr, Not):
        return sa.not_(compile_where(table, expr.part))
    raise TypeError(f"not a filter expression: {expr!r}")


def after_condition(table: sa.Table, spec: TableSpec, order_by: str | None, descending: bool, after: bytes) -> Any:
    """Rows strictly after the encoded sort position ``after`` in the scan's order.

    Nulls of ``order_by`` come first ascending (last descending), then values, with
    the key as tie-break.
    """
    if order_by is None:
        key, _ = decode_key(spec.key_types, after)
        left, right = _key_tuple(table, spec, key)
        return left < right if descending else left > right
    value, pos = decode_nullable(spec.type_of(order_by), after)
    key, _ = decode_key(spec.key_types, after, pos)
    column = table.c[order_by]
    left, right = _key_tuple(table, spec, key)
    key_after = left < right if descending else left > right
    if value is None:
        if descending:
            return sa.and_(column.is_(None), key_after)
        return sa.or_(column.is_not(None), sa.and_(column.is_(None), key_after))
    full_left = sa.tuple_(column, *(table.c[k] for k in spec.primary_key))
    full_right = sa.tuple_(_bind(table, order_by, value), *(_bind(table, k, v) for k, v in zip(spec.primary_key, key)))
    if descending:
        return sa.or_(full_left < full_right, column.is_(None))
    return full_left > full_right


def order_clauses(table: sa.Table, spec: TableSpec, order_by: str | None, descending: bool) -> list[Any]:
    """ORDER BY terms: ``order_by`` (nulls first ascending) then the key."""
    keys = [table.c[k].desc() if descending else table.c[k].asc() for k in spec.primary_key]
    if order_by is None:
        return keys
    column = table.c[order_by]
    first = column.desc().nulls_last() if descending else column.asc().nulls_first()
    return [first, *keys]


def live_rows(table: sa.Table, spec: TableSpec, key_range: ResolvedRange, where: Expr | None) -> list[Any]:
    """The conditions of the live rows in ``key_range`` matching ``where`` (what scans,
    counts and range writes select)."""
    conditions = [*range_condition(table, spec, key_range), live(table)]
    if where is not None:
        conditions.append(compile_where(table, where))
    return conditions


def scan_select(
    table: sa.Table,
    spec: TableSpec,
    key_range: ResolvedRange,
    where: Expr | None,
    *,
    order_by: str | None = None,
    descending: bool = False,
    after: bytes | None = None,
    limit: int | None = None,
    columns: Sequence[str] | None = None,
) -> sa.Select[Any]:
    """The SELECT for a scan of the live rows: ``columns`` (default: every column, the
    version and the expiry)."""
    conditions = live_rows(table, spec, key_range, where)
    if after is not None:
        conditions.append(after_condition(table, spec, order_by, descending, after))
    selected = [table] if columns is None else [table.c[c] for c in columns]
    stmt = sa.select(*selected).where(*conditions).order_by(*order_clauses(table, spec, order_by, descending))
    if limit is not None:
        stmt = stmt.limit(limit)
    return stmt


def count_select(table: sa.Table, spec: TableSpec, key_range: ResolvedRange, where: Expr | None) -> sa.Select[Any]:
    """SELECT count(*) of the live rows for a range and filter."""
    return sa.select(sa.func.count()).select_from(table).where(*live_rows(table, spec, key_range, where))


def key_histogram(table: sa.Table, spec: TableSpec) -> sa.Select[Any]:
    """The planner's statistics of ``table``'s first key column: its histogram (the
    ANALYZE sample without the most common values, cut into equal-frequency buckets;
    bounds ascending), the fraction of rows those most common values hold, the rows
    changed since that ANALYZE and the live rows now. No row when the table was never
    analyzed or the column has no histogram."""
    from sqlalchemy.dialects.postgresql import ARRAY

    first = spec.primary_key[0]
    element = sql_type(spec.type_of(first))
    if isinstance(element, sa.Text):
        element = sa.Text()  # the column's COLLATE "C" belongs to the column, not to an array of it
    stats_columns = ("schemaname", "tablename", "attname", "histogram_bounds", "most_common_freqs")
    stats = sa.table("pg_stats", *(sa.column(c) for c in stats_columns), schema="pg_catalog")
    activity_columns = ("schemaname", "relname", "n_mod_since_analyze", "n_live_tup")
    activity = sa.table("pg_stat_user_tables", *(sa.column(c) for c in activity_columns), schema="pg_catalog")
    freq = sa.func.unnest(stats.c.most_common_freqs).column_valued("kv_freq")
    common = sa.select(sa.func.coalesce(sa.func.sum(freq), 0)).scalar_subquery()
    joined = stats.join(
        activity, sa.and_(activity.c.schemaname == stats.c.schemaname, activity.c.relname == stats.c.tablename)
    )
    return (
        sa.select(
            sa.cast(sa.cast(stats.c.histogram_bounds, sa.Text), ARRAY(element)),
            common,
            activity.c.n_mod_since_analyze,
            activity.c.n_live_tup,
        )
        .select_from(joined)
        .where(
            stats.c.schemaname == sa.cast(sa.literal(str(table.schema)), sa.Text),
            stats.c.tablename == sa.cast(sa.literal(table.name), sa.Text),
            stats.c.attname == sa.cast(sa.literal(first), sa.Text),
            stats.c.histogram_bounds.is_not(None),
        )
    )

"""A small planner: range + where + order → what to read and what to filter after.

Used by providers that read an ordered store (memory, RocksDB). It picks one access
path: the primary key (a key range, narrowed by conditions on the first key column
when no explicit range is given) or one secondary index (equality, IN, or a value
range); every condition it does not serve exactly stays in the residual filter.

A string prefix (``like 'SE%'``, ``col(c).startswith('SE')``) is a value range
``['SE', 'SF')``: a LIKE pattern's literal prefix bounds the values it can match
(:func:`spi.filters.like_prefix`). A pattern that is only the prefix followed by
``%`` is served by the range alone; a pattern without wildcards is an equality;
any other pattern with a literal prefix reads the range and stays in the residual
filter.

Key-ordered scans use an index only for equality and IN (whose entries come in key
order per value and merge in bounded memory); a range or prefix condition on an
indexed column is used when the order does not matter (count, range deletes) or
when the scan is ordered by that column.

Nulls are index entries too (the first ones: null sorts before every value): ``c is
null`` on an indexed column reads the entries of the null value, as an equality
does, and ``c is not null`` is a range (every value), so counting a column's nulls,
or finding its least value, reads no row the answer does not need.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from spi.errors import InvalidFieldError
from spi.filters import And, Compare, Expr, In, IsNull, Like, conjuncts, like_prefix, string_successor, where_literal
from spi.keys import ResolvedRange
from spi.spec import TableSpec
from spi.textvalues import key_words
from spi.types import sort_key

_BOUND_OPS = ("<", "<=", ">", ">=")


@dataclass(frozen=True)
class ValueBounds:
    """An interval of non-null column values; None means unbounded on that side."""

    lo: Any = None
    lo_inclusive: bool = True
    hi: Any = None
    hi_inclusive: bool = True

    def describe(self, column: str) -> str:
        """Human-readable form for ``explain``."""
        parts = []
        if self.lo is not None:
            parts.append(f"{column} {'>=' if self.lo_inclusive else '>'} {where_literal(self.lo)}")
        if self.hi is not None:
            parts.append(f"{column} {'<=' if self.hi_inclusive else '<'} {where_literal(self.hi)}")
        return " and ".join(parts) or f"{column} is not null"


@dataclass(frozen=True)
class Plan:
    """How to run a scan.

    ``index`` None means read the primary key within ``key_range``. Otherwise read
    index ``index`` at ``index_points`` (sorted distinct values) or within
    ``index_bounds``; rows must still fall in ``key_range``. ``order_by`` None is key
    order. ``residual`` is evaluated on every row read. ``empty`` means no row can
    match.
    """

    key_range: ResolvedRange
    index: str | None = None
    index_points: tuple[Any, ...] | None = None
    index_bounds: ValueBounds | None = None
    order_by: str | None = None
    descending: bool = False
    residual: Expr | None = None
    empty: bool = False

    def describe(self, spec: TableSpec) -> str:
        """A one-paragraph account of the plan, for ``explain``."""
        lines = []
        if self.empty:
            lines.append("no row can match (contradictory conditions): nothing is read")
        elif self.index is None:
            lines.append(f"read primary key of {spec.name!r} in {_range_text(spec, self.key_range)}")
        else:
            if self.index_points == (None,):
                what = f"{self.index} is null"
            elif self.index_points is not None:
                what = f"{self.index} in ({', '.join(where_literal(v) for v in self.index_points)})"
            elif self.index_bounds is None:
                what = "every entry (nulls first)"
            else:
                what = self.index_bounds.describe(self.index)
            lines.append(f"read index {self.index!r} of {spec.name!r} for {what}")
            if self.key_range != ResolvedRange.everything():
                lines.append(f"keep keys in {_range_text(spec, self.key_range)}")
        order = "key" if self.order_by is None else f"{self.order_by}, then key"
        lines.append(f"order: {order} {'descending' if self.descending else 'ascending'}")
        lines.append(f"filter after reading: {self.residual if self.residual is not None else 'none'}")
        return "\n".join(lines)


def _range_text(spec: TableSpec, r: ResolvedRange) -> str:
    if r.start is None and r.end is None:
        return "the whole key range"
    lo = "-inf" if r.start is None else key_words(spec, r.start)
    hi = "+inf" if r.end is None else key_words(spec, r.end)
    return f"{'[' if r.start_inclusive else '('}{lo}, {hi}{']' if r.end_inclusive else ')'}"


def needs_sort(spec: TableSpec, order_by: str) -> bool:
    """True when neither the key nor an index reads ``order_by`` in order, so rows
    ordered by it must be sorted (:mod:`spi.sorting`); :class:`InvalidFieldError`
    (with a did-you-mean) for an unknown column."""
    spec.type_of(order_by)
    return not (spec.is_key(order_by) or spec.is_indexed(order_by))


def check_order_by(spec: TableSpec, order_by: str | None) -> str | None:
    """Validate ``order_by``; the first key column is plain key order (None)."""
    if order_by is None:
        return None
    if not needs_sort(spec, order_by):
        return None if order_by == spec.primary_key[0] else order_by
    raise InvalidFieldError(
        f"cannot order {spec.name!r} by {order_by!r}: it is neither a key column nor indexed; add an index on it",
        column=order_by,
    )


def plan_scan(
    spec: TableSpec,
    key_range: ResolvedRange,
    where: Expr | None,
    *,
    order_by: str | None = None,
    descending: bool = False,
    ordered: bool = True,
) -> Plan:
    """Plan a scan; ``where`` must already be bound, ``order_by`` checked.

    With ``ordered=False`` the caller does not need any order (count, deletes).
    """
    parts = conjuncts(where)
    if order_by is not None and spec.is_indexed(order_by) and not spec.is_key(order_by):
        return _index_plan(spec, key_range, parts, order_by, order_by, descending)
    if order_by is not None:
        # A key column other than the first: the provider merges per-prefix runs.
        return Plan(key_range, order_by=order_by, descending=descending, residual=_and(parts))
    first = spec.primary_key[0]
    everything = key_range == ResolvedRange.everything()
    first_points = _points(parts, first)
    if everything and first_points is not None and len(first_points) == 1:
        return _key_plan(spec, parts, first, ValueBounds(first_points[0], True, first_points[0], True), descending)
    for column in spec.indexes:
        if spec.is_key(column):
            continue
        if _points(parts, column) is not None or _null(parts, column):
            return _index_plan(spec, key_range, parts, column, None, descending)
    if everything:
        bounds = _bounds(parts, first)
        if bounds is not None:
            return _key_plan(spec, parts, first, bounds, descending)
    if not ordered:
        for column in spec.indexes:
            if not spec.is_key(column) and _bounds(parts, column) is not None:
                return _index_plan(spec, key_range, parts, column, None, descending)
    return Plan(key_range, descending=descending, residual=_and(parts))


def _and(parts: list[Expr]) -> Expr | None:
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else And(tuple(parts))


def _served(part: Expr, column: str) -> bool:
    """True if reading ``column``'s values (a key range, index points or bounds, none
    of them null) answers ``part`` exactly (``column is null`` is served apart)."""
    if isinstance(part, IsNull):
        return part.column == column and part.negated
    if isinstance(part, Compare):
        return part.column == column and part.value is not None and (part.op == "==" or part.op in _BOUND_OPS)
    if isinstance(part, In):
        return part.column == column
    if isinstance(part, Like) and part.column == column:
        like = like_prefix(part.pattern)
        return like.exact or like.pure
    return False


def _like_bounds(part: Like) -> ValueBounds | None:
    """The value interval a LIKE condition's matches lie in (None: no literal prefix):
    the strings starting with the prefix are ``[prefix, successor)``, unbounded above
    when there is no successor (a prefix of U+10FFFF characters only)."""
    like = like_prefix(part.pattern)
    if like.exact:
        return ValueBounds(like.prefix, True, like.prefix, True)
    return ValueBounds(like.prefix, True, string_successor(like.prefix), False) if like.prefix else None


def _points(parts: list[Expr], column: str) -> tuple[Any, ...] | None:
    """Distinct sorted values ``column`` must equal, if some condition pins it."""
    points: list[Any] | None = None
    for p in parts:
        if isinstance(p, Compare) and p.column == column and p.op == "==":
            found = [] if p.value is None else [p.value]
        elif isinstance(p, In) and p.column == column:
            found = [v for v in p.values if v is not None]
        elif isinstance(p, Like) and p.column == column and like_prefix(p.pattern).exact:
            found = [like_prefix(p.pattern).prefix]
        else:
            continue
        if points is None:
            points = found
        else:
            keys = {sort_key(v) for v in found}
            points = [v for v in points if sort_key(v) in keys]
    if points is None:
        return None
    unique = {sort_key(v): v for v in points}
    bounds = _bounds(parts, column)
    values = [v for _, v in sorted(unique.items())]
    if bounds is not None:
        values = [v for v in values if _within(v, bounds)]
    return tuple(values)


def _null(parts: list[Expr], column: str) -> bool:
    """True if one of ``parts`` is ``column is null``."""
    return any(isinstance(p, IsNull) and p.column == column and not p.negated for p in parts)


def _bounds(parts: list[Expr], column: str) -> ValueBounds | None:
    """Intersect the range and prefix conditions on ``column`` (``is not null``: every
    value); None if there are none."""
    b: ValueBounds | None = None
    for p in parts:
        if isinstance(p, IsNull) and p.column == column and p.negated:
            found = ValueBounds()
        elif isinstance(p, Compare) and p.column == column and p.op in _BOUND_OPS and p.value is not None:
            lower = p.op in (">", ">=")
            inclusive = p.op in (">=", "<=")
            found = ValueBounds(p.value, inclusive) if lower else ValueBounds(hi=p.value, hi_inclusive=inclusive)
        elif isinstance(p, Like) and p.column == column:
            like = _like_bounds(p)
            if like is None:
                continue
            found = like
        else:
            continue
        b = found if b is None else _intersect(b, found)
    return b


def _intersect(a: ValueBounds, b: ValueBounds) -> ValueBounds:
    lo, lo_inclusive = a.lo, a.lo_inclusive
    if b.lo is not None and (
        lo is None or sort_key(b.lo) > sort_key(lo) or (sort_key(b.lo) == sort_key(lo) and not b.lo_inclusive)
    ):
        lo, lo_inclusive = b.lo, b.lo_inclusive
    hi, hi_inclusive = a.hi, a.hi_inclusive
    if b.hi is not None and (
        hi is None or sort_key(b.hi) < sort_key(hi) or (sort_key(b.hi) == sort_key(hi) and not b.hi_inclusive)
    ):
        hi, hi_inclusive = b.hi, b.hi_inclusive
    return ValueBounds(lo, lo_inclusive, hi, hi_inclusive)


def _within(value: Any, b: ValueBounds) -> bool:
    k = sort_key(value)
    if b.lo is not None and (k < sort_key(b.lo) or (k == sort_key(b.lo) and not b.lo_inclusive)):
        return False
    return not (b.hi is not None and (k > sort_key(b.hi) or (k == sort_key(b.hi) and not b.hi_inclusive)))


def _bounds_empty(b: ValueBounds) -> bool:
    if b.lo is None or b.hi is None:
        return False
    lo, hi = sort_key(b.lo), sort_key(b.hi)
    return lo > hi or (lo == hi and not (b.lo_inclusive and b.hi_inclusive))


def _key_plan(spec: TableSpec, parts: list[Expr], column: str, b: ValueBounds, descending: bool) -> Plan:
    residual = _and([p for p in parts if not _served(p, column)])
    if _bounds_empty(b):
        return Plan(ResolvedRange.everything(), descending=descending, residual=residual, empty=True)
    key_range = ResolvedRange(
        None if b.lo is None else (b.lo,),
        b.lo_inclusive,
        None if b.hi is None else (b.hi,),
        b.hi_inclusive,
    )
    return Plan(key_range, descending=descending, residual=residual)


def _index_plan(
    spec: TableSpec,
    key_range: ResolvedRange,
    parts: list[Expr],
    column: str,
    order_by: str | None,
    descending: bool,
) -> Plan:
    points = _points(parts, column)
    residual = _and([p for p in parts if not _served(p, column)])
    if _null(parts, column):  # the null entries; with any condition on a value, none
        nothing = points is not None or _bounds(parts, column) is not None
        points = () if nothing else (None,)
        residual = _and(
            [p for p in parts if not _served(p, column) and not (isinstance(p, IsNull) and p.column == column)]
        )
    if points is not None:
        return Plan(
            key_range,
            column,
            index_points=points,
            order_by=order_by,
            descending=descending,
            residual=residual,
            empty=not points,
        )
    bounds = _bounds(parts, column)
    if bounds is None:
        # Ordered by the column with no condition on it: read the whole index, nulls included.
        return Plan(key_range, column, order_by=order_by, descending=descending, residual=_and(parts))
    return Plan(
        key_range,
        column,
        index_bounds=bounds,
        order_by=order_by,
        descending=descending,
        residual=residual,
        empty=_bounds_empty(bounds),
    )

"""Aggregates of a table's rows: counts per group and per-column statistics.

``table.aggregate(range, where=..., group_by=(...), columns=(...))`` returns one
:class:`Group` per distinct combination of the ``group_by`` columns' values among the
rows in range matching ``where`` (one group for all of them when ``group_by`` is
empty, even with no row), ordered as key values are: each column in the contract's
one total order, nulls first (strings by code point, which is their UTF-8 byte
order; NaN above every number). A group carries its row count and, for each of
``columns``, a :class:`ColumnStats`.

Statistics are taken over the non-null values: ``min``/``max`` (numbers, timestamps
and strings), ``nulls`` (rows where the column is null), and for numbers ``sum``
(an ``int`` for ``int``/``long`` columns, never overflowing; a ``float`` otherwise)
and ``avg`` (``sum`` divided by the non-null values, a ``float``). With no non-null
value ``min``, ``max``, ``sum`` and ``avg`` are None (as SQL's aggregates).

:class:`Aggregates` is the generic implementation every :class:`spi.table.TableBase`
has: one streamed scan, state per group (so memory grows with the groups, not the
rows). A provider may override ``_aggregate`` to compute in its store (PostgreSQL
runs one ``GROUP BY`` statement); :func:`aggregate_rows` is the computation over any
rows (the reference model uses it too).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from spi.errors import InvalidFieldError
from spi.filters import Expr, bind
from spi.keys import Range, resolve_range
from spi.primitives import ScanRequest
from spi.spec import TableSpec
from spi.types import FieldType, sort_key

if TYPE_CHECKING:
    from spi.row import Row

STAT_TYPES = frozenset(
    {FieldType.INT, FieldType.LONG, FieldType.FLOAT, FieldType.DOUBLE, FieldType.TIMESTAMP, FieldType.STRING}
)
"""The column types statistics are taken of (``sum``/``avg`` only for the numbers)."""


class ColumnStats(NamedTuple):
    """One column's statistics within a group (see the module docstring)."""

    min: Any
    max: Any
    nulls: int
    sum: int | float | None = None
    avg: float | None = None


@dataclass(frozen=True, slots=True)
class Group:
    """One group: its ``group_by`` values (in ``group_by`` order), its row count and
    the statistics of each requested column (in the requested order)."""

    values: tuple[Any, ...]
    count: int
    stats: dict[str, ColumnStats]


def check_aggregate(
    spec: TableSpec, group_by: Iterable[str], columns: Iterable[str]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The validated ``group_by`` and ``columns`` arguments of an aggregate:
    existing columns, each named once, statistics only of :data:`STAT_TYPES`."""
    checked = []
    for name, given in (("group_by", group_by), ("columns", columns)):
        if isinstance(given, str):
            raise InvalidFieldError(f"{name} must be a list of column names, not a string")
        names = tuple(given)
        for c in names:
            spec.type_of(c)  # an unknown column raises, naming it
        if len(set(names)) != len(names):
            raise InvalidFieldError(f"{name} names a column twice: {', '.join(names)}")
        checked.append(names)
    for c in checked[1]:
        if spec.type_of(c) not in STAT_TYPES:
            raise InvalidFieldError(
                f"column {c!r} is {spec.type_of(c)}: statistics are taken of numbers, timestamps and strings",
                column=c,
            )
    return checked[0], checked[1]


def group_order(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """The sort key of a group's values: nulls first, then the contract's order."""
    return tuple((0, 0) if v is None else (1, sort_key(v)) for v in values)


def _canonical(value: Any) -> Any:
    """A group value as a dict key: every NaN the same object (NaN != NaN)."""
    return math.nan if isinstance(value, float) and math.isnan(value) else value


class _Column:
    """The running statistics of one column in one group."""

    __slots__ = ("least", "most", "nulls", "numeric", "seen", "total")

    def __init__(self, numeric: bool) -> None:
        self.least: Any = None
        self.most: Any = None
        self.nulls = 0
        self.total: int | float = 0
        self.seen = 0
        self.numeric = numeric

    def add(self, value: Any) -> None:
        if value is None:
            self.nulls += 1
            return
        if self.seen == 0:
            self.least = self.most = value
        else:
            order = sort_key(value)
            if order < sort_key(self.least):
                self.least = value
            if order > sort_key(self.most):
                self.most = value
        self.seen += 1
        if self.numeric:
            self.total += value

    def result(self) -> ColumnStats:
        if not self.numeric or self.seen == 0:
            return ColumnStats(self.least, self.most, self.nulls)
        return ColumnStats(self.least, self.most, self.nulls, self.total, self.total / self.seen)


def aggregate_rows(
    spec: TableSpec, rows: Iterable[Mapping[str, Any]], group_by: tuple[str, ...], columns: tuple[str, ...]
) -> list[Group]:
    """The groups of ``rows`` (checked arguments, see :func:`check_aggregate`), ordered."""
    numeric = [spec.type_of(c).is_numeric for c in columns]
    groups: dict[tuple[Any, ...], tuple[list[int], list[_Column]]] = {}
    if not group_by:
        groups[()] = ([0], [_Column(n) for n in numeric])
    for row in rows:
        key = tuple(_canonical(row[c]) for c in group_by)
        state = groups.get(key)
        if state is None:
            state = groups[key] = ([0], [_Column(n) for n in numeric])
        state[0][0] += 1
        for c, acc in zip(columns, state[1]):
            acc.add(row[c])
    return [
        Group(key, counted[0], {c: acc.result() for c, acc in zip(columns, accs)})
        for key, (counted, accs) in sorted(groups.items(), key=lambda item: group_order(item[0]))
    ]


class Aggregates:
    """``aggregate`` for :class:`spi.table.TableBase`: the arguments checked here,
    the computation by ``_aggregate`` (by default over one streamed scan)."""

    if TYPE_CHECKING:
        spec: TableSpec

        def _scan_rows(self, request: ScanRequest) -> Iterator[Row]: ...

    def aggregate(
        self,
        range: Range | None = None,
        *,
        where: Expr | None = None,
        group_by: Iterable[str] = (),
        columns: Iterable[str] = (),
    ) -> list[Group]:
        """The groups of the rows in range matching ``where`` (see :mod:`spi.aggregate`)."""
        grouped, stats = check_aggregate(self.spec, group_by, columns)
        request = ScanRequest(resolve_range(self.spec, range), None if where is None else bind(where, self.spec))
        return self._aggregate(request, grouped, stats)

    def _aggregate(self, request: ScanRequest, group_by: tuple[str, ...], columns: tuple[str, ...]) -> list[Group]:
        """The groups of the rows ``request`` selects (checked arguments); providers
        may compute them in the store."""
        return aggregate_rows(self.spec, self._scan_rows(request), group_by, columns)

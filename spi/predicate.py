"""Filters compiled to Python: one generated expression per bound filter.

:func:`spi.filters.evaluate` walks the expression tree for every row; a scan that
filters many rows runs :func:`predicate_source`'s expression instead, with the same
three-valued logic (a comparison with null is unknown, ``and``/``or``/``not`` as in
SQL, only a true result keeps the row) and the same order (:func:`spi.types.sort_key`
for floats, NaN above every number). The caller says how a column's value is read
(``row['c']`` from a dict, ``r[3]`` from a stored array) and how a literal is stored
(a timestamp as microseconds in the ordered-store engine); literals and column names
go into the namespace, never into the source.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from spi.filters import And, Compare, Expr, In, IsNull, Like, Not, Or, like_regex
from spi.types import FieldType, sort_key

if TYPE_CHECKING:
    from spi.spec import TableSpec

_FLOATS = (FieldType.FLOAT, FieldType.DOUBLE)
_GROUP = 16
"""Parts of an and/or compiled as one conditional chain; longer chains are split."""


class PredicateBuilder:
    """Builds the source of one filter; :attr:`namespace` holds what it refers to."""

    def __init__(
        self,
        types: Mapping[str, FieldType],
        value_of: Callable[[str], str],
        stored: Callable[[str, Any], Any] = lambda column, value: value,
    ) -> None:
        self._types = types
        self._value_of = value_of
        self._stored = stored
        self._names = itertools.count()
        self.namespace: dict[str, Any] = {"sk": sort_key}

    def _const(self, value: Any) -> str:
        name = f"k{next(self._names)}"
        self.namespace[name] = value
        return name

    def _var(self) -> str:
        return f"x{next(self._names)}"

    def _key(self, column: str, source: str) -> str:
        return f"sk({source})" if self._types[column] in _FLOATS else source

    def _literal(self, column: str, value: Any) -> str:
        stored = self._stored(column, value)
        return self._const(sort_key(stored) if self._types[column] in _FLOATS else stored)

    def source(self, expr: Expr) -> str:
        """A Python expression that is True, False or None (unknown) for a row."""
        if isinstance(expr, Compare):
            if expr.value is None:
                return "None"
            v = self._var()
            right = self._literal(expr.column, expr.value)
            return f"(None if ({v} := {self._value_of(expr.column)}) is None else {self._key(expr.column, v)} {expr.op} {right})"
        if isinstance(expr, In):
            v = self._var()
            found = self._const(frozenset(sort_key(self._stored(expr.column, x)) for x in expr.values if x is not None))
            missing = "None" if None in expr.values else "False"
            key = f"sk({v})" if self._types[expr.column] in _FLOATS else v
            return (
                f"(None if ({v} := {self._value_of(expr.column)}) is None else True if {key} in {found} else {missing})"
            )
        if isinstance(expr, IsNull):
            return f"({self._value_of(expr.column)} is {'not ' if expr.negated else ''}None)"
        if isinstance(expr, Like):
            v = self._var()
            regex = self._const(like_regex(expr.pattern).fullmatch)
            return f"(None if ({v} := {self._value_of(expr.column)}) is None else {regex}({v}) is not None)"
        if isinstance(expr, Not):
            v = self._var()
            return f"(None if ({v} := {self.source(expr.part)}) is None else not {v})"
        if isinstance(expr, (And, Or)):
            parts = expr.parts
            if len(parts) > _GROUP:
                # Kleene and/or are associative: a long chain becomes a shallow tree
                # (the source of a flat chain nests as deep as the chain is long).
                kind = type(expr)
                parts = tuple(kind(parts[i : i + _GROUP]) for i in range(0, len(parts), _GROUP))
                return self.source(kind(parts))
            stop, other = ("False", "True") if isinstance(expr, And) else ("True", "False")
            names = [self._var() for _ in parts]
            # Short-circuit on the deciding value; otherwise unknown if any part was.
            tail = f"(None if {' or '.join(f'{n} is None' for n in names)} else {other})"
            for name, part in reversed(list(zip(names, parts))):
                tail = f"{stop} if ({name} := {self.source(part)}) is {stop} else {tail}"
            return f"({tail})"
        raise TypeError(f"not a filter expression: {expr!r}")


def compile_filter(expr: Expr, types: Mapping[str, FieldType]) -> Callable[[Mapping[str, Any]], bool]:
    """``keep(row)``: True when the bound ``expr`` is true for the row (a mapping of
    column → value): :func:`spi.filters.matches`, compiled."""
    columns: dict[str, str] = {}

    def value_of(column: str) -> str:
        if column not in columns:
            columns[column] = f"c{len(columns)}"
        return f"row[{columns[column]}]"

    builder = PredicateBuilder(types, value_of)
    body = builder.source(expr)
    namespace = {**builder.namespace, **{name: column for column, name in columns.items()}}
    exec(f"def keep(row):\n    return {body} is True\n", namespace)
    keep: Callable[[Mapping[str, Any]], bool] = namespace["keep"]
    return keep


@functools.lru_cache(maxsize=256)
def row_filter(expr: Expr, spec: TableSpec) -> Callable[[Mapping[str, Any]], bool]:
    """:func:`compile_filter` for a filter bound to ``spec``, compiled once per process."""
    return compile_filter(expr, {c: spec.type_of(c) for c in spec.columns})

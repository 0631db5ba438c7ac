"""Filter expressions in the reference model: checking and three-valued evaluation.

The expression nodes are :mod:`spi.filters`' classes; checking, comparison, LIKE
matching and SQL's three-valued logic (None is "unknown") are written here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spi.errors import InvalidFieldError
from spi.filters import And, Compare, Expr, In, IsNull, Like, Not, Or
from spi.spec import TableSpec
from spi.testing.reference.checks import check_column
from spi.testing.reference.order import compare_values
from spi.types import FieldType, validate_value

_TESTS = {
    "==": lambda c: c == 0,
    "!=": lambda c: c != 0,
    "<": lambda c: c < 0,
    "<=": lambda c: c <= 0,
    ">": lambda c: c > 0,
    ">=": lambda c: c >= 0,
}


def check_where(spec: TableSpec, expr: Expr | None) -> Expr | None:
    """``expr`` with its literals in their columns' canonical form.

    Raises :class:`InvalidFieldError` for an unknown column, a literal of the wrong
    type, or LIKE on a column that is not a string.
    """
    if expr is None:
        return None
    if isinstance(expr, Compare):
        if expr.op not in _TESTS:
            raise InvalidFieldError(f"unknown comparison {expr.op!r}")
        return Compare(expr.column, expr.op, _literal(spec, expr.column, expr.value))
    if isinstance(expr, In):
        return In(expr.column, tuple(_literal(spec, expr.column, v) for v in expr.values))
    if isinstance(expr, IsNull):
        check_column(spec, expr.column)
        return expr
    if isinstance(expr, Like):
        check_column(spec, expr.column)
        if spec.type_of(expr.column) is not FieldType.STRING or not isinstance(expr.pattern, str):
            raise InvalidFieldError(f"like needs a string column and pattern: {expr}", column=expr.column)
        return expr
    if isinstance(expr, And):
        return And(tuple(_checked(spec, p) for p in expr.parts))
    if isinstance(expr, Or):
        return Or(tuple(_checked(spec, p) for p in expr.parts))
    if isinstance(expr, Not):
        return Not(_checked(spec, expr.part))
    raise InvalidFieldError(f"not a filter expression: {expr!r}")


def _checked(spec: TableSpec, expr: Expr) -> Expr:
    checked = check_where(spec, expr)
    assert checked is not None
    return checked


def _literal(spec: TableSpec, column: str, value: Any) -> Any:
    check_column(spec, column)
    return None if value is None else validate_value(spec.type_of(column), value, column)


def truth(expr: Expr, row: Mapping[str, Any]) -> bool | None:
    """SQL's value of a checked expression for one row: True, False or None (unknown)."""
    if isinstance(expr, Compare):
        value = row[expr.column]
        if value is None or expr.value is None:
            return None
        return bool(_TESTS[expr.op](compare_values(value, expr.value)))
    if isinstance(expr, In):
        # A null column compares as unknown even with an empty list; otherwise x IN (a, b)
        # is x = a OR x = b: true on a match, else unknown if the list holds a null.
        if row[expr.column] is None:
            return None
        return _any(truth(Compare(expr.column, "==", v), row) for v in expr.values)
    if isinstance(expr, IsNull):
        return (row[expr.column] is None) != expr.negated
    if isinstance(expr, Like):
        value = row[expr.column]
        return None if value is None else like(value, expr.pattern)
    if isinstance(expr, And):
        return _not(_any(_not(truth(p, row)) for p in expr.parts))
    if isinstance(expr, Or):
        return _any(truth(p, row) for p in expr.parts)
    if isinstance(expr, Not):
        return _not(truth(expr.part, row))
    raise TypeError(f"not a filter expression: {expr!r}")


def _not(value: bool | None) -> bool | None:
    return None if value is None else not value


def _any(values: Any) -> bool | None:
    """Three-valued OR of an iterable: True if any is True, else None if any is None."""
    result: bool | None = False
    for v in values:
        if v is True:
            return True
        if v is None:
            result = None
    return result


def like(text: str, pattern: str) -> bool:
    """SQL LIKE, case-sensitive: ``%`` any run of characters, ``_`` one character,
    a backslash takes the next character literally (a final backslash is itself)."""
    # The set of text positions the pattern read so far can end at.
    ends = {0}
    for kind, ch in _like_tokens(pattern):
        if kind == "%":
            ends = set(range(min(ends), len(text) + 1)) if ends else set()
        else:
            ends = {i + 1 for i in ends if i < len(text) and (kind == "_" or text[i] == ch)}
    return len(text) in ends


def _like_tokens(pattern: str) -> list[tuple[str, str]]:
    """The pattern as (kind, character) pairs; kind is "%", "_" or "=" (literal)."""
    tokens = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            tokens.append(("=", pattern[i + 1]))
            i += 2
            continue
        tokens.append((ch, ch) if ch in "%_" else ("=", ch))
        i += 1
    return tokens

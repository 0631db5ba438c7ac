"""Filter expressions (``spi.col``) with SQL null semantics.

An expression is an immutable tree of :class:`Compare`, :class:`In`,
:class:`IsNull`, :class:`Like`, :class:`And`, :class:`Or` and :class:`Not` nodes.
Providers either compile it (PostgreSQL) or evaluate it in Python with
:func:`evaluate`; both give three-valued results, and only rows where the whole
expression is true are returned.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from spi.errors import InvalidFieldError
from spi.spec import TableSpec
from spi.types import FieldType, sort_key, validate_value

COMPARE_OPS = ("==", "!=", "<", "<=", ">", ">=")


class Expr:
    """Base class of filter expressions; combine with ``&``, ``|`` and ``~``."""

    def __and__(self, other: Expr) -> Expr:
        return And((self, _expr(other)))

    def __or__(self, other: Expr) -> Expr:
        return Or((self, _expr(other)))

    def __invert__(self) -> Expr:
        return Not(self)

    def __bool__(self) -> bool:
        raise TypeError("filter expressions have no truth value; combine them with &, | and ~")


def _expr(value: Any) -> Expr:
    if not isinstance(value, Expr):
        raise TypeError(f"cannot combine a filter with {type(value).__name__}")
    return value


@dataclass(frozen=True, eq=True)
class Compare(Expr):
    """``column <op> value``."""

    column: str
    op: str
    value: Any

    def __str__(self) -> str:
        return f"{self.column} {'=' if self.op == '==' else self.op} {where_literal(self.value)}"


@dataclass(frozen=True, eq=True)
class In(Expr):
    """``column IN (values...)``."""

    column: str
    values: tuple[Any, ...]

    def __str__(self) -> str:
        return f"{self.column} in ({', '.join(where_literal(v) for v in self.values)})"


@dataclass(frozen=True, eq=True)
class IsNull(Expr):
    """``column IS NULL`` (or ``IS NOT NULL`` when ``negated``)."""

    column: str
    negated: bool = False

    def __str__(self) -> str:
        return f"{self.column} is {'not ' if self.negated else ''}null"


@dataclass(frozen=True, eq=True)
class Like(Expr):
    """``column LIKE pattern`` with SQL ``%`` and ``_`` wildcards, case-sensitive.

    A backslash escapes the next character (as in PostgreSQL).
    """

    column: str
    pattern: str

    def __str__(self) -> str:
        return f"{self.column} like {where_literal(self.pattern)}"


@dataclass(frozen=True, eq=True)
class And(Expr):
    """All parts must be true."""

    parts: tuple[Expr, ...]

    def __str__(self) -> str:
        return " and ".join(_paren(p) for p in self.parts)


@dataclass(frozen=True, eq=True)
class Or(Expr):
    """At least one part must be true."""

    parts: tuple[Expr, ...]

    def __str__(self) -> str:
        return " or ".join(_paren(p) for p in self.parts)


@dataclass(frozen=True, eq=True)
class Not(Expr):
    """Negation (unknown stays unknown)."""

    part: Expr

    def __str__(self) -> str:
        return f"not {_paren(self.part)}"


def _paren(e: Expr) -> str:
    return f"({e})" if isinstance(e, (And, Or)) else str(e)


def where_literal(value: Any) -> str:
    """A value as a where-clause literal: quoted strings, ``null``, ``true``/``false``,
    quoted ISO 8601 timestamps, ``'b64:...'`` bytes, numbers."""
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        return "'b64:" + base64.b64encode(value).decode("ascii") + "'"
    if hasattr(value, "isoformat"):
        return f"'{value.isoformat()}'"
    return repr(value)


def escape_like(text: str) -> str:
    """Escape ``%``, ``_`` and backslash so ``text`` matches literally in LIKE."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class Column:
    """A column reference that builds expressions: ``col("a") == 1``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, value: object) -> Compare:  # type: ignore[override]
        return Compare(self.name, "==", value)

    def __ne__(self, value: object) -> Compare:  # type: ignore[override]
        return Compare(self.name, "!=", value)

    def __lt__(self, value: Any) -> Compare:
        return Compare(self.name, "<", value)

    def __le__(self, value: Any) -> Compare:
        return Compare(self.name, "<=", value)

    def __gt__(self, value: Any) -> Compare:
        return Compare(self.name, ">", value)

    def __ge__(self, value: Any) -> Compare:
        return Compare(self.name, ">=", value)

    __hash__ = None  # type: ignore[assignment]

    def isin(self, values: Iterable[Any]) -> In:
        """``column IN values``."""
        return In(self.name, tuple(values))

    def is_null(self) -> IsNull:
        """``column IS NULL``."""
        return IsNull(self.name)

    def not_null(self) -> IsNull:
        """``column IS NOT NULL``."""
        return IsNull(self.name, negated=True)

    def startswith(self, prefix: str) -> Like:
        """``column LIKE 'prefix%'`` (the prefix is matched literally)."""
        if not isinstance(prefix, str):
            raise InvalidFieldError(f"startswith needs a string, got {type(prefix).__name__}", column=self.name)
        return Like(self.name, escape_like(prefix) + "%")

    def like(self, pattern: str) -> Like:
        """``column LIKE pattern`` (SQL wildcards, case-sensitive)."""
        return Like(self.name, pattern)


def col(name: str) -> Column:
    """Start a filter expression on column ``name`` (key or not)."""
    return Column(name)


def bind(expr: Expr, spec: TableSpec) -> Expr:
    """Check columns and convert literals to the column types of ``spec``.

    Raises :class:`InvalidFieldError` for an unknown column or a mistyped literal;
    the result is what :func:`evaluate` and the SQL compiler consume.
    """
    if isinstance(expr, Compare):
        if expr.op not in COMPARE_OPS:
            raise InvalidFieldError(f"unknown comparison {expr.op!r}")
        return Compare(expr.column, expr.op, _literal(spec, expr.column, expr.value))
    if isinstance(expr, In):
        return In(expr.column, tuple(_literal(spec, expr.column, v) for v in expr.values))
    if isinstance(expr, IsNull):
        spec.type_of(expr.column)
        return expr
    if isinstance(expr, Like):
        if spec.type_of(expr.column) is not FieldType.STRING:
            raise InvalidFieldError(
                f"like/startswith needs a string column; {expr.column!r} is {spec.type_of(expr.column)}",
                column=expr.column,
            )
        if not isinstance(expr.pattern, str):
            raise InvalidFieldError("a like pattern must be a string", column=expr.column)
        return expr
    if isinstance(expr, And):
        return And(tuple(bind(p, spec) for p in expr.parts))
    if isinstance(expr, Or):
        return Or(tuple(bind(p, spec) for p in expr.parts))
    if isinstance(expr, Not):
        return Not(bind(expr.part, spec))
    raise InvalidFieldError(f"not a filter expression: {expr!r}")


def _literal(spec: TableSpec, column: str, value: Any) -> Any:
    ftype = spec.type_of(column)
    if value is None:
        return None
    return validate_value(ftype, value, column)


def evaluate(expr: Expr, row: Mapping[str, Any]) -> bool | None:
    """Three-valued evaluation of a bound expression over one row."""
    if isinstance(expr, Compare):
        left = row[expr.column]
        if left is None or expr.value is None:
            return None
        a, b = sort_key(left), sort_key(expr.value)
        op = expr.op
        if op == "==":
            return bool(a == b)
        if op == "!=":
            return bool(a != b)
        if op == "<":
            return bool(a < b)
        if op == "<=":
            return bool(a <= b)
        if op == ">":
            return bool(a > b)
        return bool(a >= b)
    if isinstance(expr, In):
        left = row[expr.column]
        if left is None:
            return None
        a = sort_key(left)
        saw_null = False
        for v in expr.values:
            if v is None:
                saw_null = True
            elif sort_key(v) == a:
                return True
        return None if saw_null else False
    if isinstance(expr, IsNull):
        return (row[expr.column] is not None) if expr.negated else (row[expr.column] is None)
    if isinstance(expr, Like):
        value = row[expr.column]
        if value is None:
            return None
        return like_regex(expr.pattern).fullmatch(value) is not None
    if isinstance(expr, And):
        result: bool | None = True
        for p in expr.parts:
            r = evaluate(p, row)
            if r is False:
                return False
            if r is None:
                result = None
        return result
    if isinstance(expr, Or):
        result = False
        for p in expr.parts:
            r = evaluate(p, row)
            if r is True:
                return True
            if r is None:
                result = None
        return result
    if isinstance(expr, Not):
        r = evaluate(expr.part, row)
        return None if r is None else not r
    raise TypeError(f"not a filter expression: {expr!r}")


def matches(expr: Expr | None, row: Mapping[str, Any]) -> bool:
    """True when ``expr`` is absent or evaluates to true for ``row``."""
    return expr is None or evaluate(expr, row) is True


@lru_cache(maxsize=256)
def like_regex(pattern: str) -> re.Pattern[str]:
    """Compile a SQL LIKE pattern (``%``, ``_``, backslash escape) to a regex."""
    out = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        i += 1
    return re.compile("".join(out), re.DOTALL)


_MAX_CHAR = 0x10FFFF
_SURROGATES = range(0xD800, 0xE000)


@dataclass(frozen=True)
class LikePrefix:
    """What a LIKE pattern says about where its matches sort.

    Every match starts with ``prefix`` (the literal text before the first wildcard,
    escapes resolved). ``exact``: the pattern has no wildcard, so it matches
    ``prefix`` alone (an equality). ``pure``: the pattern is the prefix followed
    only by ``%``, so "starts with ``prefix``" is the whole condition and the range
    of :func:`prefix_bounds` needs no filter after it.
    """

    prefix: str
    exact: bool
    pure: bool


def like_prefix(pattern: str) -> LikePrefix:
    """Split a LIKE pattern (``%``, ``_``, backslash escapes, as :func:`like_regex`
    reads them) into its literal prefix and what follows."""
    literal: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            literal.append(pattern[i + 1])
            i += 2
        elif ch in "%_":
            rest = pattern[i:]
            return LikePrefix("".join(literal), exact=False, pure=bool(literal) and rest == "%" * len(rest))
        else:
            literal.append(ch)  # a trailing lone backslash is literal too
            i += 1
    return LikePrefix("".join(literal), exact=True, pure=False)


def string_successor(prefix: str) -> str | None:
    """The smallest string greater than every string that starts with ``prefix``, in
    code point order (so in UTF-8 byte order too); None if there is none.

    Trailing U+10FFFF characters cannot be incremented and are dropped (every string
    starting with ``"a\U0010ffff"`` sorts before ``"b"``); surrogates, which no
    stored string holds, are skipped (U+D7FF is followed by U+E000).
    """
    stripped = prefix.rstrip(chr(_MAX_CHAR))
    if not stripped:
        return None
    nxt = ord(stripped[-1]) + 1
    if nxt in _SURROGATES:
        nxt = _SURROGATES.stop
    return stripped[:-1] + chr(nxt)


def conjuncts(expr: Expr | None) -> list[Expr]:
    """The top-level AND parts of an expression (flattened)."""
    if expr is None:
        return []
    if isinstance(expr, And):
        return [c for p in expr.parts for c in conjuncts(p)]
    return [expr]

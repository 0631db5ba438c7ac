"""``parse_where``: the CLI/TUI filter syntax, parsed with lark into :mod:`spi.filters`.

Grammar: comparisons ``= != <> < <= > >=``, ``[not] in (...)``, ``[not] between a
and b``, ``is [not] null``, ``[not] like 'pat'``, ``and``/``or``/``not`` and
parentheses; keywords are case-insensitive and never column names; strings are single-quoted with ``''``
as the escape; literals ``true``, ``false``, ``null``, numbers, and quoted ISO 8601
timestamps. Columns and literal types are checked against the spec at parse time.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from spi.errors import InvalidFieldError, WhereSyntaxError
from spi.filters import And, Compare, Expr, In, IsNull, Like, Not, Or
from spi.spec import TableSpec
from spi.textvalues import decode_base64, parse_timestamp
from spi.types import FieldType, validate_value

KEYWORDS = ("and", "or", "not", "in", "like", "between", "is", "null", "true", "false")
"""The where-clause keywords (any case): never read as column names."""

_GRAMMAR = r"""
?start: or_expr
?or_expr: and_expr (_OR and_expr)*
?and_expr: not_expr (_AND not_expr)*
?not_expr: _NOT not_expr -> negation
         | atom
?atom: "(" or_expr ")"
     | comparison
     | in_list
     | between
     | null_test
     | like
comparison: NAME OP literal
in_list: NAME NOT? _IN "(" literal ("," literal)* ")"
between: NAME NOT? _BETWEEN literal _AND literal
null_test: NAME _IS NOT? _NULL
like: NAME NOT? _LIKE STRING
?literal: STRING -> string
        | SIGNED_NUMBER -> number
        | _TRUE -> true
        | _FALSE -> false
        | _NULL -> null

OP: "<>" | "!=" | "<=" | ">=" | "=" | "<" | ">"
_OR: /or\b/i
_AND: /and\b/i
NOT: /not\b/i
_NOT: /not\b/i
_IN: /in\b/i
_BETWEEN: /between\b/i
_IS: /is\b/i
_NULL: /null\b/i
_LIKE: /like\b/i
_TRUE: /true\b/i
_FALSE: /false\b/i
NAME.-1: /(?!(?i:KEYWORDS)\b)[A-Za-z_][A-Za-z0-9_]*/
STRING: /'(?:[^']|'')*'/
%import common.SIGNED_NUMBER
%import common.WS
%ignore WS
"""


@lru_cache(maxsize=1)
def _parser() -> Any:
    from lark import Lark

    grammar = _GRAMMAR.replace("KEYWORDS", "|".join(KEYWORDS))
    # cache=True keeps the built parse tables in a file in the temp folder (keyed by
    # the grammar and lark's version): later processes skip ~25 ms of building them.
    return Lark(grammar, parser="lalr", maybe_placeholders=False, propagate_positions=True, cache=True)


def parse_where(text: str, spec: TableSpec) -> Expr:
    """Parse a where-clause into a filter expression checked against ``spec``.

    Raises :class:`WhereSyntaxError` (with the 1-based ``position``) for a syntax
    error and :class:`InvalidFieldError` for an unknown column or mistyped literal.
    """
    from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

    if not isinstance(text, str) or not text.strip():
        raise WhereSyntaxError("where: empty expression at position 1", position=1)
    try:
        tree = _parser().parse(text)
    except UnexpectedEOF:
        raise WhereSyntaxError(
            f"where: unexpected end of expression at position {len(text) + 1}", position=len(text) + 1
        ) from None
    except UnexpectedToken as exc:
        word = str(exc.token)
        if exc.token.type == "$END":
            pos, what, hint = len(text) + 1, "end of expression", ""
        else:
            pos, what, hint = (exc.token.start_pos or 0) + 1, repr(word), ""
            if word.lower() in KEYWORDS and spec.has_column(word):
                hint = f" ({word!r} is a keyword: a column of that name cannot be used in a where-clause)"
        raise WhereSyntaxError(f"where: unexpected {what} at position {pos}{hint}", position=pos) from None
    except UnexpectedCharacters as exc:
        pos = (exc.pos_in_stream or 0) + 1
        raise WhereSyntaxError(
            f"where: unexpected character {text[pos - 1]!r} at position {pos}", position=pos
        ) from None
    except UnexpectedInput as exc:  # pragma: no cover - other lark input errors
        pos = getattr(exc, "pos_in_stream", 0) + 1
        raise WhereSyntaxError(f"where: syntax error at position {pos}", position=pos) from None
    return _build(tree, spec)


def _build(node: Any, spec: TableSpec) -> Expr:
    kind = node.data
    ch = node.children
    if kind == "or_expr":
        return Or(tuple(_build(c, spec) for c in ch))
    if kind == "and_expr":
        return And(tuple(_build(c, spec) for c in ch))
    if kind == "negation":
        return Not(_build(ch[0], spec))
    column = _column(ch[0], spec)
    negated = len(ch) > 1 and getattr(ch[1], "type", None) == "NOT"
    rest = ch[2:] if negated else ch[1:]
    expr: Expr
    if kind == "comparison":
        op = {"=": "==", "<>": "!="}.get(str(rest[0]), str(rest[0]))
        expr = Compare(column, op, _literal(rest[1], column, spec))
        return expr
    if kind == "in_list":
        expr = In(column, tuple(_literal(v, column, spec) for v in rest))
    elif kind == "between":
        lo, hi = (_literal(v, column, spec) for v in rest)
        expr = And((Compare(column, ">=", lo), Compare(column, "<=", hi)))
    elif kind == "null_test":
        return IsNull(column, negated=negated)
    elif kind == "like":
        if spec.type_of(column) is not FieldType.STRING:
            raise InvalidFieldError(f"like needs a string column; {column!r} is {spec.type_of(column)}", column=column)
        expr = Like(column, _unquote(str(rest[0])))
    else:  # pragma: no cover - grammar and builder out of step
        raise AssertionError(kind)
    return Not(expr) if negated else expr


def _column(token: Any, spec: TableSpec) -> str:
    name = str(token)
    spec.type_of(name)
    return name


def _unquote(text: str) -> str:
    return text[1:-1].replace("''", "'")


def _literal(node: Any, column: str, spec: TableSpec) -> Any:
    ftype = spec.type_of(column)
    kind = node.data
    if kind == "null":
        return None
    value: Any
    if kind == "string":
        text = _unquote(str(node.children[0]))
        if ftype is FieldType.STRING:
            value = text
        elif ftype is FieldType.TIMESTAMP:
            value = parse_timestamp(text, column)
        elif ftype is FieldType.BYTES and text.startswith("b64:"):
            value = decode_base64(text[4:], column)
        else:
            raise _mistyped(column, ftype, f"'{text}'")
    elif kind == "number":
        raw = str(node.children[0])
        if ftype.is_integer and raw.lstrip("+-").isdigit():
            value = int(raw)
        elif ftype in (FieldType.FLOAT, FieldType.DOUBLE):
            value = float(raw)
        else:
            raise _mistyped(column, ftype, raw)
    else:
        if ftype is not FieldType.BOOL:
            raise _mistyped(column, ftype, kind)
        value = kind == "true"
    return validate_value(ftype, value, column)


def _mistyped(column: str, ftype: FieldType, shown: str) -> InvalidFieldError:
    hint = {
        FieldType.BYTES: " (write bytes as 'b64:<base64>')",
        FieldType.TIMESTAMP: " (write timestamps as quoted ISO 8601)",
        FieldType.STRING: " (quote strings with single quotes)",
    }.get(ftype, "")
    return InvalidFieldError(f"where: {shown} is not a {ftype} value for column {column!r}{hint}", column=column)
